"""The nodes of a captured cudaGraph_t, read through cuda.bindings: their kinds and counts.

The raw walk that capture (node counts per kind), the live model (cuda/live.py) and the
argument audit (cuda/audit.py) share, with the readings of one node they both make.
"""

from __future__ import annotations

from . import device as _cuda

_KIND_BY_TYPE = {
    "Kernel": "kernel",
    "Memcpy": "memcpy",
    "Memset": "memset",
    "Host": "host",
    "Graph": "graph",
    "Empty": "empty",
    "WaitEvent": "event_wait",
    "EventRecord": "event_record",
    "ExtSemasSignal": "ext_semas_signal",
    "ExtSemasWait": "ext_semas_wait",
    "MemAlloc": "mem_alloc",
    "MemFree": "mem_free",
    "BatchMemOp": "batch_mem_op",
    "Conditional": "conditional",
}


def node_kind_name(node_type) -> str:
    """accelgraph's kind name for a cudaGraphNodeType enum member."""
    name = getattr(node_type, "name", str(node_type))
    return _KIND_BY_TYPE.get(name.replace("cudaGraphNodeType", ""), "unknown")


def graph_nodes(graph_handle: int) -> list:
    """The nodes of a cudaGraph_t, in CUDA's order."""
    runtime, _ = _cuda.bindings()
    _, count = _cuda.check("cudaGraphGetNodes", runtime.cudaGraphGetNodes(graph_handle, 0))
    if not count:
        return []
    nodes, count = _cuda.check("cudaGraphGetNodes", runtime.cudaGraphGetNodes(graph_handle, count))
    return list(nodes[:count])


def node_kinds(graph_handle: int) -> dict[str, int]:
    """Counts of nodes per kind in a cudaGraph_t (top level; child graphs count as one node)."""
    runtime, _ = _cuda.bindings()
    counts: dict[str, int] = {}
    for node in graph_nodes(graph_handle):
        kind = node_kind_name(_cuda.check("cudaGraphNodeGetType", runtime.cudaGraphNodeGetType(node)))
        counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items()))


def kernel_name(driver, params) -> str | None:
    """A kernel node's function name from its driver parameters: through the CUfunction,
    else the CUkernel (a library-loaded kernel has only that); None where neither names it."""
    name = None
    if int(params.func):
        err, raw = driver.cuFuncGetName(params.func)
        name = raw if int(err) == 0 else None
    if name is None and int(getattr(params, "kern", 0) or 0):
        err, raw = driver.cuKernelGetName(params.kern)
        name = raw if int(err) == 0 else None
    return name.decode(errors="replace") if isinstance(name, bytes) else name


def memcpy_bytes(params) -> int:
    """The bytes a copy node moves (its extent; a 1-D copy has height and depth 0)."""
    extent = params.extent
    return int(extent.width) * max(1, int(extent.height)) * max(1, int(extent.depth))


def memset_bytes(params) -> int:
    """The bytes a memset node writes."""
    return int(params.elementSize) * int(params.width) * max(1, int(params.height))
