"""Per-node profiles: what each node of a replayed graph cost on the GPU, and which line of
the scenario made it.

The GPU side (``cuda/cupti/profile.py``) replays a graph with CUPTI's activity records on and
writes a *raw profile*: for every node that ran, the start and end of each of its runs (ns,
CUPTI's clock), and for every node the Python stack that was running when capture created it.
Everything here is computed from that document, so a profile recorded on a GPU can be read,
shown and checked anywhere (``accelgraph profile FILE.json``).

Two times per node:

- **span**: start to end of the node's run, as CUPTI records it. A kernel launched with a
  programmatic dependency starts before the node it depends on has finished and waits
  inside (``griddepcontrol.wait``): its span then includes that wait.
- **own**: the time the node added after its inputs were ready: its end minus the later of
  its start and its predecessors' ends (the nearest timed ones, through nodes that run
  nothing, such as empty or event nodes). Along a chain the own times add up to the replay's
  busy time, less any gaps; nodes that run side by side each count all of their own.

Each is the median over the replays. Runs belong to replays by the graph launch's
correlation id, so a record CUPTI dropped leaves one replay without that node's run and
shifts nothing (its span in that replay is unknown, and so is when the nodes after it had
their inputs ready: their own times leave that replay out too). The replay's **busy** time
is first start to last end; the **traced step** time is the replay's cost by CUDA events
around the traced loop of replays, and the **step** time the same loop with the records
off (records cost time, most on short kernels).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from ..errors import AccelgraphError
from .graph_model import GraphModel, ModelLoadError

FORMAT = "accelgraph-profile"
VERSION = 1
MAX_ITERS = 10_000  # replays a profile traces at most (every run of every node is kept)
_TIMESTAMP_MAX = 2**63  # CUPTI's timestamps are 64-bit nanoseconds


class ProfileLoadError(AccelgraphError, ValueError):
    """A profile document could not be read (the message says where and why)."""


@dataclass(frozen=True)
class Origin:
    """Where a node was made: the scenario's line (or the first line outside accelgraph and
    the array libraries), and the call that line went through, if any."""

    file: str
    line: int
    function: str
    code: str = ""
    via: str = ""  # the library function the line called (kernels.sgemm_bias_gelu)

    def where(self) -> str:
        return f"{os.path.basename(self.file)}:{self.line}"


@dataclass(frozen=True)
class NodeTime:
    node: str  # the model's node id (graph_0_node_3)
    kind: str
    name: str  # the kernel's name (demangled where known), else the node kind
    runs: int  # runs recorded (the replays, unless CUPTI dropped records)
    span_us: float  # median start to end
    own_us: float  # median time added after its inputs were ready
    origin: Origin | None = None


@dataclass
class GraphProfile:
    name: str
    iters: int  # replays asked for
    replays: int  # replays whose records came back (one graph launch each)
    step_us: float  # per replay, CUDA events, records off
    traced_step_us: float  # per replay, CUDA events, records on
    busy_us: float  # median first start to last end of a replay
    nodes: list[NodeTime]  # the nodes that ran, in topological order
    silent: list[str] = field(default_factory=list)  # node ids with no run recorded
    silent_kernels: list[str] = field(default_factory=list)  # those of them that are kernels
    dropped: int = 0  # records CUPTI dropped while this graph replayed
    unreadable: int = 0  # records without usable timestamps (left out)

    @property
    def own_total_us(self) -> float:
        return sum(n.own_us for n in self.nodes)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "iters": self.iters,
            "replays": self.replays,
            "step_us": round(self.step_us, 3),
            "traced_step_us": round(self.traced_step_us, 3),
            "busy_us": round(self.busy_us, 3),
            "dropped": self.dropped,
            "unreadable": self.unreadable,
            "nodes": [
                {
                    "node": n.node, "kind": n.kind, "name": n.name, "runs": n.runs,
                    "span_us": round(n.span_us, 3), "own_us": round(n.own_us, 3),
                    "share": round(n.own_us / self.busy_us, 4) if self.busy_us > 0 else None,
                    "origin": None if n.origin is None else {
                        "file": n.origin.file, "line": n.origin.line,
                        "function": n.origin.function, "code": n.origin.code,
                        "via": n.origin.via,
                    },
                }
                for n in self.nodes
            ],
            "silent": self.silent,
        }


@dataclass
class Profile:
    scenario: str
    params: dict
    device: str
    graphs: list[GraphProfile]
    origins_failed: str | None = None  # why some nodes may have none (a callback failed)

    def to_json(self) -> dict:
        return {"scenario": self.scenario, "params": self.params, "device": self.device,
                "origins_failed": self.origins_failed,
                "graphs": [g.to_json() for g in self.graphs]}


# -- origins ------------------------------------------------------------------------------

def pick_origin(stack: list, scenario: str, codes: dict | None = None) -> Origin | None:
    """The frame of ``stack`` that made the node. ``stack`` is innermost first, each frame
    ``[file, line, function, user]``, ``user`` true for code that is neither accelgraph's nor
    an installed library's nor Python's (decided where the stack was taken). The innermost
    frame in the scenario file wins, else the innermost user frame. ``via`` names the call
    that line made (the frame just inside it: ``kernels.sgemm_bias_gelu``), if any.
    ``codes``: "file:line" -> the line's source text."""
    if not stack:
        return None
    scenario = os.path.normpath(scenario) if scenario else ""
    chosen = next((i for i, frame in enumerate(stack)
                   if scenario and os.path.normpath(frame[0]) == scenario), None)
    if chosen is None:
        chosen = next((i for i, frame in enumerate(stack) if frame[3]), None)
    if chosen is None:
        return None
    path, line, function = stack[chosen][:3]
    via = ""
    if chosen > 0:
        inner_path, _line, inner_function = stack[chosen - 1][:3]
        module = os.path.splitext(os.path.basename(inner_path))[0]
        via = f"{module}.{inner_function}"
    code = (codes or {}).get(f"{path}:{line}", "")
    return Origin(file=path, line=int(line), function=function, code=code.strip(), via=via)


# -- the computation ----------------------------------------------------------------------

def _timed_parents(model: GraphModel, timed: set[str]) -> dict[str, set[str]]:
    """For each node, its nearest timed ancestors: its parents, with every untimed parent
    replaced by that parent's own nearest timed ancestors."""
    nearest: dict[str, set[str]] = {}
    for node_id in model.topological_order():
        found: set[str] = set()
        for parent in model.parents(node_id):
            if parent in timed:
                found.add(parent)
            else:
                found |= nearest.get(parent, set())
        nearest[node_id] = found
    return nearest


def graph_profile(raw: dict, scenario: str = "") -> GraphProfile:
    """The profile of one graph from its raw document (see the module's docstring)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ProfileLoadError("each graph must be an object with a 'name'")
    where = f"graph {raw['name']!r}"
    try:
        model = GraphModel.from_json(raw["model"], where=f"{where}: model")
    except (KeyError, ModelLoadError) as exc:
        raise ProfileLoadError(f"{where}: no readable graph model ({exc})") from None
    if not model.is_acyclic():
        raise ProfileLoadError(f"{where}: the graph model has a cycle (a CUDA graph has none)")
    iters = _count(raw, "iters", where, most=MAX_ITERS)
    replays = _count(raw, "replays", where, most=iters)
    spans = raw.get("spans")
    if not isinstance(spans, dict):
        raise ProfileLoadError(f"{where}: 'spans' must map node ids to lists of runs")
    by_node: dict[str, list] = {}
    for node_id, runs in spans.items():
        if not model.has_node(node_id):
            raise ProfileLoadError(f"{where}: spans name {node_id!r}, which is not in the graph")
        if not isinstance(runs, list) or len(runs) != replays or not all(
            run is None or (isinstance(run, list) and len(run) == 2 and all(_is_int(v) for v in run)
                            and 0 <= run[0] <= run[1] < _TIMESTAMP_MAX)
            for run in runs
        ):
            raise ProfileLoadError(f"{where}: spans of {node_id!r} must be {replays} runs (one a "
                                   "replay), each null or a [start, end] pair of integers with "
                                   "0 <= start <= end < 2**63")
        if any(run is not None for run in runs):
            by_node[node_id] = runs
    nearest = _timed_parents(model, set(by_node))
    origins, codes = _checked_origins(raw, where)
    order = [n for n in model.topological_order() if n in by_node]
    busy = []
    for k in range(replays):
        ran = [by_node[n][k] for n in order if by_node[n][k] is not None]
        if ran:
            busy.append((max(e for _s, e in ran) - min(s for s, _e in ran)) / 1e3)
    nodes = []
    for node_id in order:
        runs = by_node[node_id]
        own, span = [], []
        for k, run in enumerate(runs):
            if run is None:
                continue
            start, end = run
            span.append((end - start) / 1e3)
            before = [by_node[p][k] for p in nearest[node_id]]
            if any(b is None for b in before):
                continue  # an input's run was not recorded: when it was ready is not known
            ready = max((b[1] for b in before), default=start)
            own.append(max(0, end - max(start, ready)) / 1e3)
        node = model.node(node_id)
        stack = (origins.get(node_id) or {}).get("stack") or []
        nodes.append(NodeTime(
            node=node_id, kind=node.kind, name=str(node.display_name or node.kind),
            runs=len(span), span_us=median(span), own_us=median(own) if own else 0.0,
            origin=pick_origin(stack, scenario, codes),
        ))
    silent = [n.id for n in model.nodes if n.id not in by_node]
    silent_kernels = [n.id for n in model.nodes if n.id not in by_node and n.kind == "kernel"]
    return GraphProfile(
        name=raw["name"], iters=iters, replays=replays,
        step_us=_number(raw, "step_us", where), traced_step_us=_number(raw, "traced_step_us", where),
        busy_us=median(busy) if busy else 0.0, nodes=nodes, silent=silent,
        silent_kernels=silent_kernels,
        dropped=_count(raw, "dropped", where, default=0),
        unreadable=_count(raw, "unreadable", where, default=0),
    )


def document_head(document: Any, where: str, kind: tuple[str, int | tuple[int, ...], str],
                  error: type[AccelgraphError]) -> tuple[list, str, dict]:
    """The graphs, scenario and params of a raw document that ``profile --out`` or ``audit
    --out`` writes, its format and version checked; ``kind`` is (format, version or the
    versions read, noun)."""
    fmt, version, noun = kind
    if not isinstance(document, dict) or document.get("format") != fmt:
        raise error(f"{where}: not an accelgraph {noun} (no \"format\": \"{fmt}\")")
    versions = version if isinstance(version, tuple) else (version,)
    found = document.get("version")
    if not _is_int(found) or found not in versions:  # True == 1 in Python: not a version
        raise error(f"{where}: {noun} version {found!r}; this accelgraph reads version "
                    f"{' or '.join(map(str, versions))}")
    graphs = document.get("graphs")
    if not isinstance(graphs, list) or not graphs:
        raise error(f"{where}: 'graphs' must be a non-empty list")
    scenario = document.get("scenario", "")
    if not isinstance(scenario, str):
        raise error(f"{where}: 'scenario' must be the scenario file's path")
    params = document.get("params", {})
    if not isinstance(params, dict):
        raise error(f"{where}: 'params' must map parameter names to values")
    return graphs, scenario, params


def check_unique_names(names: list[str], where: str, error: type[AccelgraphError]) -> None:
    """One graph a name, in a saved profile or audit."""
    if len(set(names)) < len(names):
        raise error(f"{where}: two graphs are called "
                    f"{next(n for n in names if names.count(n) > 1)!r}")


def load_profile(document: Any, where: str = "<profile>") -> Profile:
    """A Profile from a raw profile document (as ``profile --out`` writes it)."""
    graphs, scenario, params = document_head(document, where, (FORMAT, VERSION, "profile"),
                                             ProfileLoadError)
    try:
        profiles = [graph_profile(g, scenario) for g in graphs]
    except ProfileLoadError as exc:
        raise ProfileLoadError(f"{where}: {exc}") from None
    check_unique_names([g.name for g in profiles], where, ProfileLoadError)
    failed = document.get("origins_failed")
    return Profile(scenario=scenario, params=params, device=str(document.get("device") or ""),
                   graphs=profiles, origins_failed=None if failed is None else str(failed))


def _checked_origins(raw: dict, where: str) -> tuple[dict, dict]:
    """The document's origins (node id -> {"stack": [[file, line, function, user], ...]})
    and codes ("file:line" -> text), checked."""
    origins = raw.get("origins", {})
    if not isinstance(origins, dict):
        raise ProfileLoadError(f"{where}: 'origins' must map node ids to their stacks")
    for node_id, entry in origins.items():
        stack = entry.get("stack") if isinstance(entry, dict) else None
        if not isinstance(stack, list) or not all(
            isinstance(f, list) and len(f) == 4 and isinstance(f[0], str) and _is_int(f[1])
            and 0 <= f[1] < 2**31 and isinstance(f[2], str) and isinstance(f[3], bool)
            for f in stack
        ):
            raise ProfileLoadError(f"{where}: the stack of {node_id!r} must be a list of "
                                   "[file, line, function, user] frames (a line from 0 to "
                                   "2**31)")
    codes = raw.get("codes", {})
    if not isinstance(codes, dict) or not all(isinstance(v, str) for v in codes.values()):
        raise ProfileLoadError(f"{where}: 'codes' must map \"file:line\" to source text")
    return origins, codes


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    """A value as an error quotes it: its repr, cut after 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


def _count(raw: dict, key: str, where: str, default: int | None = None,
           most: int = 2**63) -> int:
    value = raw.get(key, default)
    if not _is_int(value) or not 0 <= value <= most:
        raise ProfileLoadError(f"{where}: {key!r} must be a count from 0 to {most:,}, not "
                               f"{_shown(value)}")
    return value


def _number(raw: dict, key: str, where: str) -> float:
    value = raw.get(key)
    try:
        number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
            else math.nan
    except OverflowError:  # an integer past a double's range
        number = math.inf
    if not (math.isfinite(number) and number >= 0):
        raise ProfileLoadError(f"{where}: {key!r} must be a time in µs, not {_shown(value)}")
    return number


# -- two profiles side by side ------------------------------------------------------------

class ProfileCompareError(AccelgraphError, ValueError):
    """Two profiles whose graphs are not the same shape (the message says where)."""


@dataclass(frozen=True)
class NodeTimeChange:
    """One node in two profiles of graphs of the same shape (matched by id and kind)."""

    node: str
    kind: str
    before: NodeTime
    after: NodeTime

    @property
    def change_us(self) -> float:
        return self.after.own_us - self.before.own_us


@dataclass
class GraphChange:
    name: str
    before: GraphProfile
    after: GraphProfile
    nodes: list[NodeTimeChange]

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "step_us": [round(self.before.step_us, 3), round(self.after.step_us, 3)],
            "busy_us": [round(self.before.busy_us, 3), round(self.after.busy_us, 3)],
            "nodes": [
                {"node": c.node, "kind": c.kind, "name": [c.before.name, c.after.name],
                 "own_us": [round(c.before.own_us, 3), round(c.after.own_us, 3)],
                 "span_us": [round(c.before.span_us, 3), round(c.after.span_us, 3)]}
                for c in self.nodes
            ],
        }


def compare(before: Profile, after: Profile) -> list[GraphChange]:
    """Each graph of ``after`` beside the graph of the same name in ``before``, node by node.

    The graphs must have the same names and the same nodes that ran (ids and kinds; a
    kernel's name may change, as a new version of it is what such a comparison is for):
    where they do not, one ProfileCompareError says what is in each profile only (the first
    few node ids, in graph order), or which node changed kind."""
    by_name = {g.name: g for g in before.graphs}
    names_before, names_after = set(by_name), {g.name for g in after.graphs}
    if names_before != names_after:
        raise ProfileCompareError(
            "the two profiles have different graphs: "
            + _one_side(names_before - names_after, names_after - names_before))
    changes = []
    for graph in after.graphs:
        old = by_name[graph.name]
        old_nodes = {n.node: n for n in old.nodes}
        new_ids = [n.node for n in graph.nodes]
        if set(old_nodes) != set(new_ids):
            raise ProfileCompareError(
                f"graph {graph.name!r}: the nodes that ran differ: "
                + _one_side(set(old_nodes) - set(new_ids), set(new_ids) - set(old_nodes))
                + " (graphs of another shape, or a node with no run recorded in one)")
        rows = []
        for node in graph.nodes:
            was = old_nodes[node.node]
            if was.kind != node.kind:
                raise ProfileCompareError(
                    f"graph {graph.name!r}: {node.node} is a {was.kind} node before and a "
                    f"{node.kind} node after: graphs of another shape")
            rows.append(NodeTimeChange(node.node, node.kind, was, node))
        changes.append(GraphChange(graph.name, old, graph, rows))
    return changes


def _natural(name: str) -> list:
    """A sort key that puts graph_0_node_4 before graph_0_node_10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _one_side(before_only: set, after_only: set) -> str:
    parts = []
    for label, names in (("before only", before_only), ("after only", after_only)):
        if names:
            listed = sorted(names, key=_natural)
            parts.append(f"{label}: {', '.join(listed[:4])}{' …' if len(listed) > 4 else ''}")
    return "; ".join(parts)
