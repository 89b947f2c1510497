"""``accelgraph audit``: capture two (or ``steps``) consecutive steps of a scenario into
each graph and return the raw audit document: every kernel node's argument bytes with the
line that made it, and the C++ kernels' parameter types as read here (``model/audit.py``
compares each later step with the first). Showing a saved audit imports nothing of cuda/
(the capture protocol is imported by the recording alone).

The effect test: bytes inside a struct argument that differ between the steps may be a
value the kernel reads (frozen) or bytes no launch sets (padding, unused slots). The graph
is replayed from a fresh state's bytes (a second ``setup()``, copied over the captured
state's allocations, torch's generators set back; the graphs captured before it replayed
once each first), three times, and its outputs, after it and after the graphs that follow
it, must agree bit for bit (else nothing is tried, and the audit says so); then with every
later step's kernels given the first step's bytes in those places
(``cuGraphExecKernelNodeSetParams``), twice: outputs that change, the same way both times,
show the bytes are read. The search is ``model/audit.effect_search``; what is tried,
``model/audit.effect_candidates``."""

from __future__ import annotations

from ..model.audit import FORMAT, MAX_STEPS, STEPS, VERSION, AuditLoadError, recorded_types


def record_audit(scenario, params: dict, *, pool=None, error_mode=None,
                 steps: int = STEPS) -> dict:
    """The raw audit of every graph of ``scenario``: each captured as ``capture`` captures it
    (guard included), with ``steps`` calls of its step (as ``replay --unroll 2`` for two),
    and CUPTI's graph callbacks on, where they can be had, for the line that made each
    node. AccelgraphError for ``steps`` outside 2..MAX_STEPS."""
    from ..cuda import audit as cuda_audit
    from ..cuda.cupti import profile as cupti_profile
    from ..errors import AccelgraphError
    from . import protocol
    from .profile import raw_head

    if isinstance(steps, bool) or not isinstance(steps, int) or not STEPS <= steps <= MAX_STEPS:
        raise AccelgraphError(f"steps must be an int from {STEPS} to {MAX_STEPS}, not {steps!r}")
    origins = None
    off = cupti_profile.callbacks_unavailable()
    if off is None:
        origins = cupti_profile.NodeOrigins(str(scenario.path))
    result = protocol.capture(scenario, params, pool=pool, error_mode=error_mode,
                              unroll=steps, origins=origins)
    if origins is not None and origins.off is not None:  # enabling them failed
        off, origins = origins.off, None
    graphs = []
    for captured in result.graphs:
        handle = captured.graph.graph_handle
        try:
            nodes, ranges = cuda_audit.graph_arguments(handle, _node_id)
        except cuda_audit.ArgumentsUnreadable as exc:
            hint = ("; asking where a kernel's arguments lie needs CUDA 12.4 or newer, driver "
                    "and cuda.bindings" if isinstance(exc, cuda_audit.LayoutUnknown) else "")
            raise AccelgraphError(f"graph {captured.name!r}: its kernels' arguments cannot be "
                                  f"read ({exc}){hint}") from None
        stacks, codes = ({}, {}) if origins is None else cupti_profile.stacks_of(
            cupti_profile.node_ids(handle), origins)
        graphs.append({
            "name": captured.name,
            "nodes": nodes,
            # the C++ kernels' parameter types as read here: a saved audit is judged by them
            # wherever it is read, with a demangler or without
            "types": recorded_types(nodes, steps),
            "allocations": [list(r) for r in sorted(set(ranges.values()))],
            "origins": stacks,
            "codes": codes,
        })
    regions = result.snapshot.regions if result.snapshot is not None else []
    state = [{"paths": list(r.paths), "start": int(r.ptr), "size": int(r.size)}
             for r in regions]
    _effect_tests(result, graphs, state, steps)
    return {
        **raw_head(FORMAT, VERSION, scenario, params),
        "steps": steps,
        "origins_off": off,
        "origins_failed": origins.failed if origins is not None else None,
        "state": state,
        "graphs": graphs,
    }


def _effect_tests(result, graphs: list[dict], state: list[dict], steps: int = STEPS) -> None:
    """Each raw graph with units to try gets its "effects" (see the module's docstring, and
    ``model/audit.effect_candidates``): the units tried, those that changed the outputs, and
    a note (why nothing was tried, or that units change them only together) or None. A
    failure is said for its graph; one that leaves a graph with other bytes than its own
    stops the trials of the graphs after it, which replay it first."""
    from ..model.audit import effect_candidates

    wanted = {g["name"]: effect_candidates(g, state, steps) for g in graphs}
    if not any(wanted.values()):
        return

    def untested(why: str) -> dict:
        return {"tested": [], "changed": [], "note": f"not tested: {why}"}

    why = None
    if result.snapshot is None:
        why = "the state was not saved at capture"
    elif getattr(result.scenario, "outputs_fn", None) is None:
        why = "the scenario has no outputs() to compare"
    trials = None
    try:
        for raw in graphs:
            if not wanted[raw["name"]]:
                continue
            if why is not None:
                raw["effects"] = untested(why)
                continue
            if trials is None:
                try:
                    trials = _Trials(result)
                except Exception as exc:  # noqa: BLE001 - setup() or outputs() raising
                    why = f"a second state could not be made ({str(exc) or type(exc).__name__})"
                    raw["effects"] = untested(why)
                    continue
            try:
                raw["effects"] = trials.run(raw, wanted[raw["name"]], steps)
            except _Stuck as exc:
                raw["effects"] = untested(str(exc))
                why = (f"graph {raw['name']!r}, replayed before it, could not be given its "
                       f"own arguments back")
            except Exception as exc:  # noqa: BLE001 - said for this graph, the audit kept
                # setup() or outputs() raising, a node CUDA will not change, replays that
                # differ: its struct bytes stay unjudged, the recorded arguments are kept
                raw["effects"] = untested(str(exc) or type(exc).__name__)
    finally:
        if trials is not None:
            trials.close()


class _Unstable(Exception):
    """Replays from the same bytes computed different outputs."""


class _Stuck(Exception):
    """A graph's kernels could not be given their own argument bytes back."""


class _Trials:
    """Replays of a captured graph from a fresh state's bytes, its outputs compared bit for
    bit, with the later steps' kernels given some of the first step's bytes or not."""

    def __init__(self, result) -> None:
        from ..cuda.snapshot import is_device_array
        from . import protocol
        from .statewalk import find_arrays

        self.result, self._protocol = result, protocol
        backend = result.backend
        with backend.use(result.streams):
            self.fresh, _steps = protocol.fresh_state(result)
        self.arrays = find_arrays(self.fresh, is_device_array)
        # as the check: where the fresh state draws random numbers (torch's default
        # generator too, where the state holds none of its own)
        self.rng = (backend.rng_state(protocol._generators(backend, self.fresh))
                    if backend.has_generators else None)

    def close(self) -> None:
        self.fresh = self.arrays = None

    def outputs(self, name: str) -> list[dict]:
        """The outputs after one replay of graph ``name`` from the fresh state's bytes, the
        graphs captured before it replayed once each first, in order, as the scenario runs
        them (a decode step reads what its prefill leaves); and where graphs follow it, the
        outputs once they have replayed too (a value it writes may show only in theirs)."""
        result, backend = self.result, self.result.backend
        found = []
        with backend.use(result.streams):
            self._protocol.start_from(result, self.arrays)
            if self.rng is not None:
                backend.set_rng_state(self.rng, self._protocol._generators(backend, result.state))
            last = len(result.graphs) - 1
            for index, captured in enumerate(result.graphs):
                captured.graph.replay()
                if captured.name == name or (found and index == last):
                    result.stream.synchronize()
                    found.append({key: backend.copy(value) for key, value
                                  in result.scenario.outputs(result.state).items()})
        return found

    def same(self, a: list[dict], b: list[dict]) -> bool:
        backend = self.result.backend
        return len(a) == len(b) and all(
            x.keys() == y.keys() and not any(
                self._protocol._compare(backend, key, x[key], y[key], 0.0, 0.0) for key in x)
            for x, y in zip(a, b))

    def run(self, raw: dict, candidates: dict[int, list[tuple[int, int, int]]],
            steps: int = STEPS) -> dict:
        """The effect test of the graph ``raw`` describes, of ``steps`` steps, for the units
        of the first step's nodes in ``candidates`` (position -> [(argument, at, size)];
        each node's twin in a later step is that many steps' nodes further on), every later
        step given the first step's bytes. _Unstable where replays from the same bytes
        differ; _Stuck where the graph cannot get its own bytes back."""
        from ..cuda.audit import Substitution
        from ..model.audit import effect_search
        from .protocol import _elements

        name, nodes = raw["name"], raw["nodes"]
        per = len(nodes) // steps

        def given(p: int, twin: int, chosen: list) -> list[bytes]:
            """The arguments of the first step's node ``p``'s twin at position ``twin`` with
            the ``chosen`` units of the first's."""
            args = [bytearray.fromhex(a["hex"]) for a in nodes[twin]["args"]]
            for argument, at, size in chosen:
                args[argument][at:at + size] = \
                    bytes.fromhex(nodes[p]["args"][argument]["hex"])[at:at + size]
            return [bytes(a) for a in args]

        graph = self.result.graph(name).graph
        base = self.outputs(name)
        if not any(_elements(v) for outputs in base for v in outputs.values()):
            return {"tested": [], "changed": [],
                    "note": "not tested: outputs() gave no element to compare"}
        for _ in range(2):
            if not self.same(base, self.outputs(name)):
                raise _Unstable("replays from the same bytes computed different outputs")
        swap = Substitution(graph.graph_handle, graph.exec_handle)

        def replayed(chosen: dict[int, list]) -> bool:
            for p, units in chosen.items():
                for twin in range(p + per, len(nodes), per):
                    swap.give(twin, given(p, twin, units))
            once = self.outputs(name)
            if self.same(base, once):
                return False
            if not self.same(once, self.outputs(name)):
                raise _Unstable("replays with the first step's bytes computed different "
                                "outputs each time")
            return True

        def put_back(after: BaseException | None) -> None:
            """The graph's own bytes back, after a trial (``after``: what stopped it, or
            None). Where they cannot be, the trials after it, which replay the graph first,
            cannot run either: _Stuck, naming what stopped the trial too; an interrupt goes
            on as it is."""
            try:
                swap.undo()
            except Exception as stuck:
                if after is not None and not isinstance(after, Exception):
                    return
                cause = "" if after is None else f" after {after or type(after).__name__}"
                raise _Stuck(f"its kernels could not be given their own arguments back "
                             f"({stuck}){cause}") from after

        def differs(chosen: dict[int, list]) -> bool:
            try:
                changed = replayed(chosen)
            except BaseException as exc:  # (replays that differ, a node CUDA will not change)
                put_back(exc)
                raise
            put_back(None)
            return changed

        changed, note = effect_search(candidates, differs)

        def key(p: int, unit: tuple) -> list:
            return [nodes[p]["id"], unit[0], unit[1]]

        return {"tested": [key(p, u) for p, units in sorted(candidates.items()) for u in units],
                "changed": [key(p, u) for p, u in changed], "note": note}


def _node_id(position: int) -> str:
    """The root graph's node ids, as the live model and CUDA's DOT name them."""
    return f"graph_0_node_{position}"


def read_audit(path: str):
    """A saved raw audit (as ``audit --out`` writes it), computed: an Audit. One clear error
    (AuditLoadError) for a missing, unreadable or malformed file."""
    from ..dot.load import read_json_document
    from ..model.audit import load_audit

    return load_audit(read_json_document(path, "audit", AuditLoadError), path)
