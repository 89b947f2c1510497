"""``accelgraph audit``: capture two consecutive steps of a scenario into each graph and
return the raw audit document, every kernel node's argument bytes with the line that made
it (``model/audit.py`` compares the two steps). Showing a saved audit imports nothing of
cuda/ (the capture protocol is imported by the recording alone).

The effect test: bytes inside a struct argument that differ between the two steps may be a
value the kernel reads (frozen) or bytes no launch sets (padding, unused slots). The graph
is replayed from a fresh state's bytes (a second ``setup()``, copied over the captured
state's allocations, torch's generators set back; the graphs captured before it replayed
once each first), three times, and its outputs must agree
bit for bit (else nothing is tried, and the audit says so); then with the second step's
kernels given the first step's bytes in those places (``cuGraphExecKernelNodeSetParams``),
twice: outputs that change, the same way both times, show the bytes are read. The search
is ``model/audit.effect_search``; what is tried, ``model/audit.effect_candidates``."""

from __future__ import annotations

from ..model.audit import FORMAT, STEPS, VERSION, AuditLoadError


def record_audit(scenario, params: dict, *, pool=None, error_mode=None) -> dict:
    """The raw audit of every graph of ``scenario``: each captured as ``capture`` captures it
    (guard included), with two calls of its step (as ``replay --unroll 2``), and CUPTI's
    graph callbacks on, where they can be had, for the line that made each node."""
    from ..cuda import audit as cuda_audit
    from ..cuda.cupti import profile as cupti_profile
    from ..errors import AccelgraphError
    from . import protocol
    from .profile import raw_head

    origins = None
    off = cupti_profile.callbacks_unavailable()
    if off is None:
        origins = cupti_profile.NodeOrigins(str(scenario.path))
    result = protocol.capture(scenario, params, pool=pool, error_mode=error_mode,
                              unroll=STEPS, origins=origins)
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
            "allocations": [list(r) for r in sorted(set(ranges.values()))],
            "origins": stacks,
            "codes": codes,
        })
    regions = result.snapshot.regions if result.snapshot is not None else []
    state = [{"paths": list(r.paths), "start": int(r.ptr), "size": int(r.size)}
             for r in regions]
    _effect_tests(result, graphs, state)
    return {
        **raw_head(FORMAT, VERSION, scenario, params),
        "steps": STEPS,
        "origins_off": off,
        "origins_failed": origins.failed if origins is not None else None,
        "state": state,
        "graphs": graphs,
    }


def _effect_tests(result, graphs: list[dict], state: list[dict]) -> None:
    """Each raw graph with units to try gets its "effects" (see the module's docstring, and
    ``model/audit.effect_candidates``): the units tried, those that changed the outputs, and
    a note (why nothing was tried, or that units change them only together) or None."""
    from ..errors import AccelgraphError
    from ..model.audit import effect_candidates

    wanted = {g["name"]: effect_candidates(g, state) for g in graphs}
    if not any(wanted.values()):
        return

    def untested(why: str) -> dict:
        return {"tested": [], "changed": [], "note": f"not tested: {why}"}

    if result.snapshot is None:
        for raw in graphs:
            if wanted[raw["name"]]:
                raw["effects"] = untested("the state was not saved at capture")
        return
    trials = None
    try:
        for raw in graphs:
            if not wanted[raw["name"]]:
                continue
            try:
                trials = trials or _Trials(result)
                raw["effects"] = trials.run(raw, wanted[raw["name"]])
            except (AccelgraphError, _Unstable) as exc:
                # setup() or outputs() raising, a second state unlike the first, a node CUDA
                # will not change, replays that differ: said for this graph, whose struct
                # bytes stay unjudged
                raw["effects"] = untested(str(exc))
    finally:
        if trials is not None:
            trials.close()


class _Unstable(Exception):
    """Replays from the same bytes computed different outputs."""


class _Trials:
    """Replays of a captured graph from a fresh state's bytes, its outputs compared bit for
    bit, with the second step's kernels given some of the first step's bytes or not."""

    def __init__(self, result) -> None:
        from ..cuda import device as _cuda
        from ..cuda.snapshot import is_device_array
        from . import protocol
        from .statewalk import find_arrays

        self.result, self._protocol, self._cuda = result, protocol, _cuda
        backend = result.backend
        with backend.use(result.streams):
            self.fresh = result.scenario.make_state(result.params)
            # as the check asks them of its fresh state before walking it
            result.scenario.graph_steps(self.fresh)
            protocol._outputs_to_flip(result.scenario, self.fresh)
            _cuda.require_cuda().cuda.runtime.deviceSynchronize()
        self.arrays = find_arrays(self.fresh, is_device_array)
        # as the check: torch's default generator too, where the state holds none of its own
        self.rng = (backend.rng_state(protocol._generators(backend, result.state))
                    if backend.has_generators else None)

    def close(self) -> None:
        self.fresh = self.arrays = None

    def outputs(self, name: str) -> dict:
        """The outputs after one replay of graph ``name`` from the fresh state's bytes, the
        graphs captured before it replayed once each first, in order, as the scenario runs
        them (a decode step reads what its prefill leaves)."""
        result, backend = self.result, self.result.backend
        with backend.use(result.streams):
            self._cuda.require_cuda().cuda.runtime.deviceSynchronize()
            result.snapshot.restore_from(self.arrays)
            if result.host_save is not None:
                result.host_save.restore()
            if self.rng is not None:
                backend.set_rng_state(self.rng, self._protocol._generators(backend, result.state))
            for captured in result.graphs:
                captured.graph.replay()
                if captured.name == name:
                    break
            result.stream.synchronize()
            return {key: backend.copy(value)
                    for key, value in result.scenario.outputs(result.state).items()}

    def same(self, a: dict, b: dict) -> bool:
        backend = self.result.backend
        return a.keys() == b.keys() and not any(
            self._protocol._compare(backend, key, a[key], b[key], 0.0, 0.0) for key in a)

    def run(self, raw: dict, candidates: dict[int, list[tuple[int, int, int]]]) -> dict:
        """The effect test of the graph ``raw`` describes, for the units of the first
        step's nodes in ``candidates`` (position -> [(argument, at, size)]; each node's
        twin in the second step is a step's nodes further on). _Unstable where replays
        from the same bytes differ."""
        from ..cuda.audit import Substitution
        from ..model.audit import STEPS, effect_search

        name, nodes = raw["name"], raw["nodes"]
        half = len(nodes) // STEPS

        def given(p: int, chosen: list) -> list[bytes]:
            """The second step's arguments with the ``chosen`` units of the first's."""
            args = [bytearray.fromhex(a["hex"]) for a in nodes[p + half]["args"]]
            for argument, at, size in chosen:
                args[argument][at:at + size] = \
                    bytes.fromhex(nodes[p]["args"][argument]["hex"])[at:at + size]
            return [bytes(a) for a in args]

        graph = self.result.graph(name).graph
        base = self.outputs(name)
        if not base:
            return {"tested": [], "changed": [],
                    "note": "not tested: outputs() gave nothing to compare"}
        for _ in range(2):
            if not self.same(base, self.outputs(name)):
                raise _Unstable("replays from the same bytes computed different outputs")
        swap = Substitution(graph.graph_handle, graph.exec_handle)

        def differs(chosen: dict[int, list]) -> bool:
            try:
                for p, units in chosen.items():
                    swap.give(p + half, given(p, units))
                once = self.outputs(name)
                if self.same(base, once):
                    return False
                if not self.same(once, self.outputs(name)):
                    raise _Unstable("replays with the first step's bytes computed different "
                                    "outputs each time")
                return True
            finally:
                swap.undo()

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
