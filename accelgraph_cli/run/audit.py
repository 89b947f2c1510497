"""``accelgraph audit``: capture two consecutive steps of a scenario into each graph and
return the raw audit document, every kernel node's argument bytes with the line that made
it (``model/audit.py`` compares the two steps). Showing a saved audit imports nothing of
cuda/ (the capture protocol is imported by the recording alone)."""

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
    return {
        **raw_head(FORMAT, VERSION, scenario, params),
        "steps": STEPS,
        "origins_off": off,
        "origins_failed": origins.failed if origins is not None else None,
        "state": [{"paths": list(r.paths), "start": int(r.ptr), "size": int(r.size)}
                  for r in regions],
        "graphs": graphs,
    }


def _node_id(position: int) -> str:
    """The root graph's node ids, as the live model and CUDA's DOT name them."""
    return f"graph_0_node_{position}"


def read_audit(path: str):
    """A saved raw audit (as ``audit --out`` writes it), computed: an Audit. One clear error
    (AuditLoadError) for a missing, unreadable or malformed file."""
    from ..dot.load import read_json_document
    from ..model.audit import load_audit

    return load_audit(read_json_document(path, "audit", AuditLoadError), path)
