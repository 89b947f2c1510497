"""GraphModel: a CUDA graph as plain Python data — nodes, edges, and what follows from them.

Every way accelgraph reads a graph (CUDA's DOT dumps, JSON snapshots, a live captured graph)
ends in a GraphModel, and every way it shows or compares one (render, diff) starts from it.
Nothing here touches CUDA. The derived views (topological order, levels, critical path...)
are computed once per model in O(V+E) and cached; call ``invalidate()`` after mutating
``nodes`` or ``edges`` in place.

Parameter conventions (``Node.params``): values are str/int/float/bool/None or tuples of those,
never lists or dicts, so the JSON form round-trips exactly. Keys that name pointers or handles
start with ``ptr_`` or ``handle_``: they change from run to run, and ``stable_params`` (hence
``node_signature`` and the structural diff) ignores them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from operator import attrgetter, eq, itemgetter
from typing import Any

from ..errors import AccelgraphError
from ..gcpause import cyclic_gc_paused

KINDS = (
    "kernel",
    "memcpy",
    "memset",
    "host",
    "event_record",
    "event_wait",
    "mem_alloc",
    "mem_free",
    "empty",
    "graph",
    "conditional",
    "ext_semas_signal",
    "ext_semas_wait",
    "batch_mem_op",
    "unknown",
)

# Prefixes of parameter keys whose values differ between runs (addresses, handles).
UNSTABLE_PARAM_PREFIXES = ("ptr_", "handle_")

JSON_FORMAT = "accelgraph-model"
JSON_VERSION = 1


class ModelLoadError(AccelgraphError, ValueError):
    """A file or document could not be turned into a GraphModel (the message says where/why)."""


@dataclass(slots=True)  # no per-node __dict__: 100,000-node dumps stay in memory
class Node:
    """One node of a CUDA graph.

    ``id`` is the name in the dump (``graph_0_node_3``) or ``n3`` for live graphs; ``kind`` is one
    of KINDS; ``name`` is the kernel name as written (possibly mangled) or a short label;
    ``child`` is the nested graph of a child-graph node or the body of a conditional node.
    """

    id: str
    kind: str
    name: str | None = None
    params: dict = field(default_factory=dict)
    child: GraphModel | None = None
    topo_id: int | None = None

    @property
    def display_name(self) -> str | None:
        """The demangled kernel name when known, else the name as written."""
        return self.params.get("demangled") or self.name


@dataclass
class _Index:
    """Adjacency and derived views of one GraphModel, built once (see GraphModel._ensure_index)."""

    fingerprint: tuple
    position: dict  # id -> index in nodes
    parents: list  # index -> list of parent indices (in edge order)
    children: list  # index -> list of child indices
    ends: tuple  # (sources, targets): each edge's two node indices, in edge order
    order: list | None = None  # topological order, as indices
    level: list | None = None  # index -> level number
    widths: list | None = None  # level number -> nodes on that level (see level_widths)
    chain_len: list | None = None  # index -> longest chain ending here (in nodes)
    chain_prev: list | None = None  # index -> predecessor on that chain, or -1
    acyclic: bool = True
    runs: dict = field(default_factory=dict)  # (max_period, alone) -> chain_runs result


@dataclass
class GraphModel:
    """A CUDA graph: its nodes, its dependency edges (from_id, to_id), and where it came from.

    ``source`` says how it was obtained: "dot-verbose", "dot-basic", "dot-generic" (DOT that is
    not a CUDA dump, parsed generically) or "live"; a model read back from JSON keeps the
    source it was saved with.
    """

    nodes: list[Node]
    edges: list[tuple[str, str]]
    source: str = ""
    _index: _Index | None = field(default=None, init=False, repr=False, compare=False)

    # ----------------------------------------------------------------- index and lookup

    def invalidate(self) -> None:
        """Forget cached derived views; needed only after mutating nodes/edges in place."""
        self._index = None

    def _ensure_index(self) -> _Index:
        # The fingerprint catches appends/removals; in-place replacement needs invalidate().
        fingerprint = (id(self.nodes), len(self.nodes), id(self.edges), len(self.edges))
        index = self._index
        if index is not None and index.fingerprint == fingerprint:
            return index
        with cyclic_gc_paused():  # 2 lists a node: collections would rescan every node
            position = self._positions()
            ends = self._edge_ends(position)
            parents, children = self._adjacency(ends)
        index = _Index(fingerprint, position, parents, children, ends)
        self._index = index
        return index

    def _positions(self) -> dict[str, int]:
        position = {node.id: i for i, node in enumerate(self.nodes)}
        if len(position) < len(self.nodes):
            seen: set[str] = set()
            for node in self.nodes:
                if node.id in seen:
                    raise ValueError(f"duplicate node id {node.id!r} in graph")
                seen.add(node.id)
        return position

    def _edge_ends(self, position: dict[str, int]) -> tuple[list[int], list[int]]:
        at = position.__getitem__
        try:
            return list(map(at, map(_source, self.edges))), list(map(at, map(_target, self.edges)))
        except KeyError:
            for src, dst in self.edges:  # the first edge at fault, for the message
                if src not in position or dst not in position:
                    missing = src if src not in position else dst
                    raise ValueError(f"edge {src} -> {dst} names unknown node {missing!r}") from None
            raise

    def _adjacency(self, ends: tuple[list[int], list[int]]) -> tuple[list[list[int]], list[list[int]]]:
        parents: list[list[int]] = [[] for _ in self.nodes]
        children: list[list[int]] = [[] for _ in self.nodes]
        for s, d in zip(*ends):
            children[s].append(d)
            parents[d].append(s)
        return parents, children

    def node(self, node_id: str) -> Node:
        """The node with this id (KeyError if there is none)."""
        return self.nodes[self._ensure_index().position[node_id]]

    def has_node(self, node_id: str) -> bool:
        """Whether a node with this id exists at this level (child graphs not searched)."""
        return node_id in self._ensure_index().position

    def parents(self, node_id: str) -> list[str]:
        """Ids of the nodes this node depends on, in edge order."""
        index = self._ensure_index()
        return [self.nodes[p].id for p in index.parents[index.position[node_id]]]

    def children(self, node_id: str) -> list[str]:
        """Ids of the nodes that depend on this node, in edge order."""
        index = self._ensure_index()
        return [self.nodes[c].id for c in index.children[index.position[node_id]]]

    def adjacency(self) -> tuple[dict[str, int], list[list[int]], list[list[int]]]:
        """``(position, parents, children)``: node id -> index in ``nodes``, and for each node
        index the indices of its parents and of its children, in edge order (one entry per
        edge). Built once and cached with the model's other views: read them, never change them.
        """
        index = self._ensure_index()
        return index.position, index.parents, index.children

    def edge_indices(self) -> tuple[list[int], list[int]]:
        """``(sources, targets)``: the two ends of every edge as indices into ``nodes``, in
        edge order. Cached with the adjacency: read them, never change them."""
        return self._ensure_index().ends

    def roots(self) -> list[str]:
        """Ids of nodes with no parents, in node order."""
        index = self._ensure_index()
        return [n.id for n, ps in zip(self.nodes, index.parents) if not ps]

    def sinks(self) -> list[str]:
        """Ids of nodes with no children, in node order."""
        index = self._ensure_index()
        return [n.id for n, cs in zip(self.nodes, index.children) if not cs]

    # ------------------------------------------------------------ order, levels, paths

    def _ensure_order(self) -> _Index:
        """Kahn's algorithm plus levels and longest chains, all in one O(V+E) pass."""
        index = self._index
        # The common case first, inline: per-node lookups (level_of) call this 100,000 times.
        if (
            index is not None
            and index.order is not None
            and index.fingerprint == (id(self.nodes), len(self.nodes), id(self.edges), len(self.edges))
        ):
            return index
        index = self._ensure_index()
        if index.order is not None:
            return index
        n = len(self.nodes)
        indegree = [len(ps) for ps in index.parents]
        # Ties are broken by node order (a FIFO over ready nodes), which for CUDA dumps is
        # creation order, so the order reads like the program that captured the graph.
        ready = [i for i in range(n) if indegree[i] == 0]
        children = index.children
        for i in ready:  # the list grows while it is read: a FIFO queue, and the order
            for c in children[i]:
                indegree[c] -= 1
                if indegree[c] == 0:
                    ready.append(c)
        order: list[int] = ready
        acyclic = len(order) == n
        if not acyclic:
            # Generic DOT can hold cycles; keep every node, the cyclic ones last in node order,
            # so the views below stay defined (edges closing a cycle are then simply ignored).
            placed = set(order)
            order.extend(i for i in range(n) if i not in placed)
        rank = [0] * n
        for r, i in enumerate(order):
            rank[i] = r
        level = [0] * n
        chain_len = [1] * n
        chain_prev = [-1] * n
        parents = index.parents
        for i in order:
            ps = parents[i]
            if len(ps) < 2:  # most nodes: what the loop below gives for one parent (or none)
                if ps and rank[ps[0]] < rank[i]:
                    p = ps[0]
                    level[i] = level[p] + 1
                    chain_len[i] = chain_len[p] + 1
                    chain_prev[i] = p
                continue
            best_level = -1
            best_len = 0
            best_prev = -1
            for p in ps:
                if rank[p] >= rank[i]:
                    continue  # back edge of a cycle
                best_level = max(best_level, level[p])
                # Prefer the earliest parent in order on ties, so the path is deterministic.
                if chain_len[p] > best_len or (chain_len[p] == best_len and rank[p] < rank[best_prev]):
                    best_len = chain_len[p]
                    best_prev = p
            level[i] = best_level + 1
            chain_len[i] = best_len + 1
            chain_prev[i] = best_prev
        index.order, index.level = order, level
        index.chain_len, index.chain_prev, index.acyclic = chain_len, chain_prev, acyclic
        return index

    def is_acyclic(self) -> bool:
        """True for every CUDA graph; generic DOT may contain cycles."""
        return self._ensure_order().acyclic

    def topological_order(self) -> list[str]:
        """Node ids, every node after all its parents; ties keep node order.

        On a cyclic (generic DOT) graph the nodes on or after a cycle come last, in node order.
        """
        index = self._ensure_order()
        return [self.nodes[i].id for i in index.order]

    def topological_indices(self) -> list[int]:
        """``topological_order()`` as indices into ``nodes`` (cached: read it, never change it)."""
        return self._ensure_order().order

    def level_of(self, node_id: str) -> int:
        """Level of a node: 0 for roots, else 1 + the highest level among its parents."""
        index = self._ensure_order()
        return index.level[index.position[node_id]]

    def levels(self) -> list[list[str]]:
        """Node ids grouped by level (earliest possible start), each group in topological order."""
        index = self._ensure_order()
        if not self.nodes:
            return []
        groups: list[list[str]] = [[] for _ in range(max(index.level) + 1)]
        for i in index.order:
            groups[index.level[i]].append(self.nodes[i].id)
        return groups

    def level_widths(self) -> list[int]:
        """Number of nodes on each level: how many could run at once if all were ready."""
        index = self._ensure_order()
        if index.widths is None:
            counts = Counter(index.level)  # every level from 0 to the highest holds a node
            index.widths = list(map(counts.__getitem__, range(len(counts))))
        return list(index.widths)

    def max_width(self) -> int:
        """The widest level (0 for an empty graph)."""
        return max(self.level_widths(), default=0)

    def critical_path(self) -> list[str]:
        """The longest dependency chain, as node ids from a root to a sink (counted in nodes).

        Among equally long chains, the one ending first in topological order wins; along the
        chain, the earliest parent wins. Child graphs count as one node.
        """
        index = self._ensure_order()
        if not self.nodes:
            return []
        end = max(index.order, key=lambda i: index.chain_len[i])  # first maximum in order
        path = []
        while end != -1:
            path.append(self.nodes[end].id)
            end = index.chain_prev[end]
        path.reverse()
        return path

    def critical_path_length(self) -> int:
        """``len(critical_path())``: nodes on the longest dependency chain (0 when empty)."""
        index = self._ensure_order()
        return max(index.chain_len, default=0)

    # ------------------------------------------------------------------- aggregates

    def kind_counts(self, recursive: bool = False) -> dict[str, int]:
        """Number of nodes per kind, in KINDS order, kinds with no node left out.

        ``recursive=True`` adds the nodes of child graphs and conditional bodies.
        """
        counts: Counter = Counter()
        for graph in self.walk() if recursive else (self,):
            counts.update(map(_kind, graph.nodes))
        return in_kinds_order(counts)

    def walk(self):
        """Yield this graph, then every nested child graph (depth first, in node order)."""
        stack = [self]
        while stack:
            graph = stack.pop()
            yield graph
            stack.extend(n.child for n in reversed(graph.nodes) if n.child is not None)

    def nesting_depth(self) -> int:
        """How many graphs deep the nesting goes: 1 for a graph with no child graph."""
        deepest = 0
        stack = [(self, 1)]
        while stack:
            graph, depth = stack.pop()
            deepest = max(deepest, depth)
            stack.extend((n.child, depth + 1) for n in graph.nodes if n.child is not None)
        return deepest

    def total_nodes(self) -> int:
        """Number of nodes including those of nested child graphs."""
        return sum(len(g.nodes) for g in self.walk())

    def bytes_allocated(self) -> int:
        """Sum of ``bytes`` over mem_alloc nodes, nested graphs included (0 when none/unknown)."""
        return sum(
            int(node.params.get("bytes") or 0)
            for graph in self.walk()
            for node in graph.nodes
            if node.kind == "mem_alloc"
        )

    # ------------------------------------------------------------------------ JSON

    def to_json(self) -> dict:
        """A JSON-ready dict: ``{"format": "accelgraph-model", "version": 1, ...}``.

        Tuples become lists; ``from_json`` turns lists back into tuples, so
        ``GraphModel.from_json(m.to_json()) == m`` for any model that follows the parameter
        conventions. Child graphs are nested under their node's ``"child"``.
        """
        document = {"format": JSON_FORMAT, "version": JSON_VERSION}
        document.update(_graph_to_json(self))
        return document

    @classmethod
    def from_json(cls, document: Any, where: str = "<json>") -> GraphModel:
        """Rebuild a model from ``to_json()`` output; ModelLoadError (naming ``where``) otherwise."""
        if not isinstance(document, dict) or document.get("format") != JSON_FORMAT:
            raise ModelLoadError(
                f'{where}: not an accelgraph model (expected a JSON object with "format": "{JSON_FORMAT}")'
            )
        version = document.get("version")
        if "version" not in document:
            raise ModelLoadError(f'{where}: accelgraph model without a "version" (this '
                                 f"accelgraph reads version {JSON_VERSION})")
        if version != JSON_VERSION or not _is_int(version):  # (true and 1.0 equal 1)
            raise ModelLoadError(
                f"{where}: accelgraph model version {version!r} is not supported "
                f"(this accelgraph reads version {JSON_VERSION})"
            )
        return _graph_from_json(document, where)


# ---------------------------------------------------------------------- module helpers


def in_kinds_order(counts: Counter) -> dict[str, int]:
    """Node counts per kind (a Counter in order of first occurrence) as ``kind_counts`` gives
    them: KINDS order, kinds with no node left out, foreign kinds last."""
    ordered = {kind: counts[kind] for kind in KINDS if counts[kind]}
    ordered.update({k: v for k, v in counts.items() if k not in ordered})  # foreign kinds
    return ordered


def is_stable_param(key: str) -> bool:
    """False for pointer/handle keys (``ptr_*``, ``handle_*``) that differ from run to run."""
    return not key.startswith(UNSTABLE_PARAM_PREFIXES)


def stable_params(node: Node) -> dict:
    """The node's params without pointers/handles and without ``demangled`` (a name form)."""
    # is_stable_param inlined: this runs for every node of every graph shown or diffed
    return {
        k: v
        for k, v in node.params.items()
        if not k.startswith(UNSTABLE_PARAM_PREFIXES) and k != "demangled"
    }


def node_signature(node: Node) -> tuple:
    """A hashable summary of what a node does: (kind, name as written, stable params, child)
    (not the demangled name, which only a machine with a demangler adds).

    Two nodes with equal signatures do the same work with different addresses. For a child
    graph or conditional node, the nested graph's structure (its nodes' signatures in
    topological order and its edges as positions in that order) is part of the signature.
    """
    params = tuple(sorted(stable_params(node).items()))
    child = graph_signature(node.child) if node.child is not None else None
    return (node.kind, node.name, params, child)


def graph_signature(model: GraphModel) -> tuple:
    """A hashable summary of a graph's structure that ignores node ids, pointers and handles."""
    order = model.topological_order()
    rank = {node_id: r for r, node_id in enumerate(order)}
    signatures = tuple(node_signature(model.node(node_id)) for node_id in order)
    edges = tuple(sorted((rank[a], rank[b]) for a, b in model.edges))
    return (signatures, edges)


def signature_codes(nodes: list[Node]) -> list[int]:
    """Per node a small int, equal for two nodes exactly when their ``node_signature`` is.

    What ``chain_runs`` compares along a chain, without building each node's sorted
    parameter tuple: nodes whose params have the same keys in the same order (every node a
    label template made) share one sorted list of stable keys, read by one itemgetter.
    """
    layouts: dict[tuple, tuple] = {}
    codes: dict[tuple, int] = {}
    out = []
    for node in nodes:
        params = node.params
        keys = tuple(params)
        layout = layouts.get(keys)
        if layout is None:
            stable = tuple(sorted(k for k in keys if is_stable_param(k) and k != "demangled"))
            # itemgetter of one key returns the value, not a 1-tuple: keys tell them apart
            layout = layouts[keys] = (stable, itemgetter(*stable) if stable else _no_values)
        if node.child is None:
            # (kind, name, stable keys, their values): equal exactly when the sorted
            # (key, value) pairs of node_signature are, since keys are unique in a dict
            key = (node.kind, node.name, layout[0], layout[1](params))
        else:
            key = (node_signature(node),)  # a 1-tuple never equals the 4-tuples above
        out.append(codes.setdefault(key, len(codes)))
    return out


_source, _target = itemgetter(0), itemgetter(1)
_kind = attrgetter("kind")


def _no_values(_params: dict) -> tuple:
    return ()


def to_jsonable(value: Any) -> Any:
    """A parameter value as JSON holds it: tuples (grid, block) become lists."""
    if isinstance(value, tuple):
        return [to_jsonable(v) for v in value]
    return value


def _from_jsonable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_from_jsonable(v) for v in value)
    return value


def _graph_to_json(model: GraphModel) -> dict:
    nodes = []
    for node in model.nodes:
        entry: dict[str, Any] = {"id": node.id, "kind": node.kind}
        if node.name is not None:
            entry["name"] = node.name
        if node.topo_id is not None:
            entry["topo_id"] = node.topo_id
        if node.params:
            entry["params"] = {k: to_jsonable(v) for k, v in node.params.items()}
        if node.child is not None:
            entry["child"] = _graph_to_json(node.child)
        nodes.append(entry)
    return {
        "source": model.source,
        "nodes": nodes,
        "edges": [[a, b] for a, b in model.edges],
    }


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_count(value: Any) -> bool:
    """An integer of 0 or more (not a bool): a size or a count as CUDA writes one."""
    return _is_int(value) and value >= 0


def _is_dims(value: Any) -> bool:
    """A grid or block as CUDA has them: one to three sizes, each 1 to 2**31 - 1."""
    return (isinstance(value, list) and 1 <= len(value) <= 3
            and all(_is_int(v) and 1 <= v < 1 << 31 for v in value))


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float))


# Parameters that accelgraph computes with, and what they must be (the rest only print).
_PARAM_TYPES = {
    "bytes": (is_count, "an integer of 0 or more"),
    "shared_mem": (is_count, "an integer of 0 or more"),
    "grid": (_is_dims, "a list of one to three sizes from 1 to 2**31 - 1"),
    "block": (_is_dims, "a list of one to three sizes from 1 to 2**31 - 1"),
    "demangled": (lambda v: isinstance(v, str), "a string"),
}
CHECKED_PARAMS = tuple(_PARAM_TYPES)
"""The parameters whose values param_problem checks (the DOT reader sets aside what fails)."""


def param_problem(key: str, value: Any) -> str | None:
    """What a parameter read from JSON must be, when it is not (None: it is fine). The DOT
    reader asks too (of ``to_jsonable(value)``), so what it reads is what JSON reads back."""
    check = _PARAM_TYPES.get(key)
    if check is not None:
        return None if check[0](value) else check[1]
    if _is_scalar(value) or (isinstance(value, list) and all(map(_is_scalar, value))):
        return None
    return "a string, number, true, false, null or a list of those"


def _graph_from_json(document: dict, where: str) -> GraphModel:
    def bad(what: str) -> ModelLoadError:
        return ModelLoadError(f"{where}: malformed accelgraph model: {what}")

    raw_nodes, raw_edges = document.get("nodes"), document.get("edges")
    if not isinstance(raw_nodes, list) or not isinstance(raw_edges, list):
        raise bad('"nodes" and "edges" must be lists')
    source = document.get("source", "")
    if not isinstance(source, str):
        raise bad('"source" must be a string')
    nodes = []
    for i, entry in enumerate(raw_nodes):
        if not isinstance(entry, dict):
            raise bad(f"node #{i} is not an object")
        node_id, kind = entry.get("id"), entry.get("kind")
        if not isinstance(node_id, str) or not isinstance(kind, str):
            raise bad(f'node #{i} needs string "id" and "kind"')
        name, topo_id, params = entry.get("name"), entry.get("topo_id"), entry.get("params", {})
        if name is not None and not isinstance(name, str):
            raise bad(f'node {node_id}: "name" must be a string')
        if topo_id is not None and (not isinstance(topo_id, int) or isinstance(topo_id, bool)):
            raise bad(f'node {node_id}: "topo_id" must be an integer')
        if not isinstance(params, dict):
            raise bad(f'node {node_id}: "params" must be an object')
        for key, value in params.items():
            problem = param_problem(key, value)
            if problem:
                raise bad(f'node {node_id}: parameter "{key}" must be {problem}')
        child = entry.get("child")
        if child is not None:
            if not isinstance(child, dict):
                raise bad(f'node {node_id}: "child" must be an object')
            child = _graph_from_json(child, where)
        nodes.append(
            Node(
                id=node_id,
                kind=kind,
                name=name,
                params={k: _from_jsonable(v) for k, v in params.items()},
                child=child,
                topo_id=topo_id,
            )
        )
    edges = []
    for i, edge in enumerate(raw_edges):
        if not isinstance(edge, list) or len(edge) != 2 or not all(isinstance(end, str) for end in edge):
            raise bad(f"edge #{i} is not a [from_id, to_id] pair of strings")
        edges.append((edge[0], edge[1]))
    model = GraphModel(nodes=nodes, edges=edges, source=source)
    try:
        model._ensure_index()
    except ValueError as problem:
        raise bad(str(problem)) from None
    return model


@dataclass(frozen=True)
class Run:
    """Consecutive nodes of a simple chain that repeat one block of ``period`` nodes.

    ``ids`` holds every node of the run in chain order; a lone node is a Run of one.
    """

    ids: tuple
    period: int = 1

    @property
    def repeats(self) -> int:
        """How many times the block repeats (len(ids) // period)."""
        return len(self.ids) // self.period

    @property
    def block(self) -> tuple:
        """The ids of the first block: one of each distinct node in the run."""
        return self.ids[: self.period]


def chain_runs(model: GraphModel, max_period: int = 8, alone: frozenset = frozenset()) -> list[Run]:
    """Every node in exactly one Run: repeated blocks of simple chains, collapsed.

    A simple chain links u -> v where that is u's only out-edge and v's only in-edge. Along
    each maximal simple chain, a block of 1..``max_period`` nodes whose ``node_signature``
    sequence repeats back to back at least twice becomes one Run (the period covering the
    most nodes wins, then the shorter): a 10,000-kernel chain of one kernel is one Run of
    period 1, an add/multiply alternation one Run of period 2. Nodes in ``alone`` always get
    a Run of their own. Runs come in topological order of their first node. O(V·max_period),
    once per model and arguments: the result is cached with the model's other derived views
    (a renderer asks several times), so call ``invalidate()`` after changing nodes in place.
    """
    index = model._ensure_order()
    cached = index.runs.get((max_period, alone))
    if cached is not None:
        return list(cached)
    parents, children = index.parents, index.children
    kept = {index.position[node_id] for node_id in alone if node_id in index.position}
    # Segments as lists of node indices; segment_of[i]: the segment node i ends (-1: none yet).
    segments: list[list[int]] = []
    segment_of = [-1] * len(model.nodes)
    for i in index.order:
        ps = parents[i]
        if len(ps) == 1 and not (kept and i in kept):
            p = ps[0]
            s = segment_of[p]
            if s >= 0 and len(children[p]) == 1 and p not in kept:
                segments[s].append(i)
                segment_of[i] = s
                continue
        segment_of[i] = len(segments)
        segments.append([i])
    ids = [node.id for node in model.nodes]
    sig = signature_codes(model.nodes)
    runs: list[Run] = []
    for segment in segments:
        if len(segment) == 1:
            runs.append(Run((ids[segment[0]],), 1))
        else:
            runs += _segment_runs([ids[i] for i in segment], [sig[i] for i in segment], max_period)
    index.runs[(max_period, alone)] = tuple(runs)
    return runs


def _segment_runs(ids: list[str], codes: list[int], max_period: int) -> list[Run]:
    """The Runs of one simple chain: ``ids`` in chain order, ``codes`` their signatures."""
    n = len(ids)
    # twins[period][t]: whether the node ``period`` places after t has t's signature. A block
    # at i repeats back to back as long as that holds from i on: list.index finds the end in C.
    twins = [[]] + [list(map(eq, codes[period:], codes)) for period in range(1, min(max_period, n // 2) + 1)]
    runs = []
    i = 0
    while i < n:
        best_cover, best_period = 0, 1
        for period in range(1, min(max_period, (n - i) // 2) + 1):
            same = twins[period]
            try:
                length = same.index(False, i) - i
            except ValueError:
                length = len(same) - i
            repeats = 1 + length // period
            if repeats >= 2 and repeats * period > best_cover:
                best_cover, best_period = repeats * period, period
        if best_cover:
            runs.append(Run(tuple(ids[i : i + best_cover]), best_period))
            i += best_cover
        else:
            runs.append(Run((ids[i],), 1))
            i += 1
    return runs
