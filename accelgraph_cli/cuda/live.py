"""GraphModel from a live cudaGraph_t, by walking it with the CUDA graph API.

An independent route to the same model the DOT parser builds from a verbose dump: the GPU tier
checks that both agree. Kernel names come from the driver API (cuGraphKernelNodeGetParams,
cuFuncGetName): the runtime's kernel-node query returns nothing usable for CuPy's kernels.
Node ids follow CUDA's DOT naming, ``graph_<G>_node_<K>``, with K the node's position in
cudaGraphGetNodes order and G numbering the root graph and its child graphs in visit order.
"""

from __future__ import annotations

import itertools

from ..model.graph_model import GraphModel, Node
from . import device as _cuda
from .nodes import graph_nodes, kernel_name, memcpy_bytes, memset_bytes, node_kind_name

_MEMCPY_DIRECTION = {0: "HtoH", 1: "HtoD", 2: "DtoH", 3: "DtoD", 4: "default"}


def model_from_graph(graph_handle: int) -> GraphModel:
    """Walk a cudaGraph_t (its child graphs and conditional bodies too) into a GraphModel."""
    return _walk(graph_handle, itertools.count())


def _walk(graph_handle, graph_ids) -> GraphModel:
    runtime, driver = _cuda.bindings()
    gid = next(graph_ids)
    nodes = graph_nodes(graph_handle)
    ids = {}
    model_nodes = []
    for position, handle in enumerate(nodes):
        node_id = f"graph_{gid}_node_{position}"
        ids[int(handle)] = node_id
        node_type = _cuda.check("cudaGraphNodeGetType", runtime.cudaGraphNodeGetType(handle))
        kind = node_kind_name(node_type)
        node = Node(id=node_id, kind=kind)
        describe = _DESCRIBE.get(kind)
        if describe is not None:
            describe(runtime, driver, handle, node)
        if kind == "graph":
            child = _cuda.check(
                "cudaGraphChildGraphNodeGetGraph", runtime.cudaGraphChildGraphNodeGetGraph(handle)
            )
            node.child = _walk(child, graph_ids)
        elif kind == "conditional":
            body = _conditional_body(runtime, handle)
            if body is not None:
                node.child = _walk(body, graph_ids)
        model_nodes.append(node)
    edges = []
    if nodes:
        edges = [(ids[a], ids[b]) for a, b, _ in graph_edges(graph_handle)]
    return GraphModel(nodes=model_nodes, edges=edges, source="live")


def graph_edges(graph_handle: int) -> list[tuple[int, int, int | None]]:
    """The edges of a cudaGraph_t as (from node, to node, type): the type a
    cudaGraphDependencyType (0 default, 1 programmatic), None where the bindings give no edge
    data. CUDA 13's cudaGraphGetEdges returns the data; CUDA 12's does not, and refuses
    (cudaErrorLossyQuery) a graph with an edge that is not a default one, such as those of
    kernels captured with programmatic dependencies: its cudaGraphGetEdges_v2 (12.3 and up)
    is then asked instead (where the driver has none, the error stands)."""
    runtime, _ = _cuda.bindings()
    get = runtime.cudaGraphGetEdges
    # (from, to, count) without edge data; (from, to, data, count) with it. Asking for the
    # count alone is never lossy.
    count = _cuda.check("cudaGraphGetEdges", get(graph_handle, 0))[-1]
    if not count:
        return []
    result = get(graph_handle, count)
    if (getattr(result[0], "name", "") == "cudaErrorLossyQuery"
            and hasattr(runtime, "cudaGraphGetEdges_v2")):
        # CUDA 12.3+, an edge that is not a default one: ask for the edges with their data
        # (only then: a driver before 12.3 has no cudaGraphGetEdges_v2)
        result = runtime.cudaGraphGetEdges_v2(graph_handle, count)
    found = _cuda.check("cudaGraphGetEdges", result)
    sources, targets = found[0][:count], found[1][:count]
    kinds = [int(data.type) for data in found[2][:count]] if len(found) == 4 else [None] * count
    return [(int(a), int(b), kind) for a, b, kind in zip(sources, targets, kinds)]


def child_graphs(handle) -> list:
    """The graphs inside one node: a child-graph node's graph, a conditional node's first
    body (where it can be read); [] for any other node."""
    runtime, _ = _cuda.bindings()
    kind = node_kind_name(_cuda.check("cudaGraphNodeGetType", runtime.cudaGraphNodeGetType(handle)))
    if kind == "graph":
        return [_cuda.check("cudaGraphChildGraphNodeGetGraph",
                            runtime.cudaGraphChildGraphNodeGetGraph(handle))]
    if kind == "conditional":
        body = _conditional_body(runtime, handle)
        return [] if body is None else [body]
    return []


def _conditional_body(runtime, handle):
    """The first body graph of a conditional node (the one the DOT parser nests), or None
    where it cannot be read: cudaGraphNodeGetParams, the only getter for it, needs a newer
    driver than 580 (cudaErrorCallRequiresNewerDriver on the H200) or newer bindings."""
    get = getattr(runtime, "cudaGraphNodeGetParams", None)
    if get is None:
        return None
    err, params = get(handle)
    if int(err) != 0:
        return None
    bodies = params.conditional.phGraph_out
    return bodies[0] if bodies else None


def _kernel(runtime, driver, handle, node: Node) -> None:
    params = _cuda.check(
        "cuGraphKernelNodeGetParams", driver.cuGraphKernelNodeGetParams(driver.CUgraphNode(int(handle)))
    )
    node.params["grid"] = (int(params.gridDimX), int(params.gridDimY), int(params.gridDimZ))
    node.params["block"] = (int(params.blockDimX), int(params.blockDimY), int(params.blockDimZ))
    node.params["shared_mem"] = int(params.sharedMemBytes)
    node.name = kernel_name(driver, params)


def _memcpy(runtime, driver, handle, node: Node) -> None:
    p = _cuda.check("cudaGraphMemcpyNodeGetParams", runtime.cudaGraphMemcpyNodeGetParams(handle))
    node.params["direction"] = _MEMCPY_DIRECTION.get(int(p.kind), str(int(p.kind)))
    node.params["bytes"] = memcpy_bytes(p)


def _memset(runtime, driver, handle, node: Node) -> None:
    p = _cuda.check("cudaGraphMemsetNodeGetParams", runtime.cudaGraphMemsetNodeGetParams(handle))
    node.params.update(
        value=int(p.value), element_size=int(p.elementSize), width=int(p.width),
        height=int(p.height), bytes=memset_bytes(p),
    )


def _mem_alloc(runtime, driver, handle, node: Node) -> None:
    p = _cuda.check("cudaGraphMemAllocNodeGetParams", runtime.cudaGraphMemAllocNodeGetParams(handle))
    node.params["bytes"] = int(p.bytesize)


_DESCRIBE = {"kernel": _kernel, "memcpy": _memcpy, "memset": _memset, "mem_alloc": _mem_alloc}
