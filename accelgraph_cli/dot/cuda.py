"""CUDA models from scanned DOT: one graph per cluster, child graphs nested."""

from __future__ import annotations

from ..model.graph_model import GraphModel
from .errors import DotParseError
from .scan import _CUDA_NODE_ID, _LABEL_ATTR, _SHAPE_ATTR, _brief, _Document, _unquote
from .templates import _LabelTemplates


def _is_cuda_dump(document: _Document) -> bool:
    """CUDA's writer puts every node, named graph_N_node_K, inside a cluster_N."""
    if not document.node_cluster:
        return document.graph_name == "dot" and len(document.clusters) > 1
    return all(cluster and _CUDA_NODE_ID.match(node_id) for node_id, cluster in document.node_cluster.items())


def _build_cuda_model(document: _Document, filename: str) -> GraphModel:
    """One GraphModel per cluster; child-graph nodes get the cluster their label names."""
    templates = _LabelTemplates()
    graphs: dict[str, GraphModel] = {}
    for cluster_name, cluster in document.clusters.items():
        if not cluster_name:
            continue
        nodes = []
        for node_id in cluster.node_ids:
            raw = document.node_attrs[node_id]
            label = _LABEL_ATTR.search(raw)
            shape = _SHAPE_ATTR.search(raw)
            try:
                node = templates.node(
                    node_id,
                    _unquote(label.group(1)) if label else "",
                    _unquote(shape.group(1)) if shape else "",
                )
            except ValueError as problem:
                raise DotParseError(
                    f"{filename}:{document.line_of(node_id)}: node {_brief(node_id)}: {problem} "
                    "(file damaged?)"
                ) from None
            nodes.append(node)
        graphs[cluster_name] = GraphModel(nodes=nodes, edges=[], source="")
    edges = {name: cluster.edges for name, cluster in document.clusters.items()}
    labels = {name: c.label for name, c in document.clusters.items() if name and c.label}
    return _join_cuda_graphs(graphs, edges, labels, document.node_cluster, document.line_of, filename)


def _join_cuda_graphs(graphs, edges, labels, node_cluster, line_of, filename) -> GraphModel:
    """Put each cluster's edges into its graph and nest child graphs; the top graph.

    ``edges`` maps cluster name -> [(src, dst)] as read, ``labels`` cluster name -> its
    "graph_N" label, ``node_cluster`` node id -> cluster name; ``line_of(node_id)`` is the line
    of a node's statement, for messages.
    """
    for cluster_edges in edges.values():
        for src, dst in cluster_edges:
            src_cluster = node_cluster.get(src)
            dst_cluster = node_cluster.get(dst)
            if src_cluster is None or dst_cluster is None:
                missing = src if src_cluster is None else dst
                raise DotParseError(
                    f"{filename}: edge {_brief(src)} -> {_brief(dst)} names a node never "
                    f"declared: {_brief(missing)}"
                )
            if src_cluster != dst_cluster:
                raise DotParseError(
                    f"{filename}:{line_of(src)}: edge {_brief(src)} -> {_brief(dst)} joins two "
                    "graphs (not what CUDA writes)"
                )
            graphs[src_cluster].edges.append((src, dst))
    return _finish_cuda_model(graphs, labels)


def _finish_cuda_model(graphs: dict[str, GraphModel], labels: dict[str, str]) -> GraphModel:
    """The top graph, once every cluster's graph has its nodes and edges: child graphs
    nested, the source ("dot-verbose" when any node has a topoId) set on every graph."""
    verbose = any(node.topo_id is not None for graph in graphs.values() for node in graph.nodes)
    roots = _attach_children(labels, graphs)
    source = "dot-verbose" if verbose else "dot-basic"
    if len(roots) == 1:
        model = graphs[roots[0]]
    else:  # several unrelated top-level graphs in one file: keep them side by side
        model = GraphModel(nodes=[], edges=[], source=source)
        for name in roots:
            model.nodes.extend(graphs[name].nodes)
            model.edges.extend(graphs[name].edges)
    for graph in model.walk():
        graph.source = source
    return model


def _attach_children(labels: dict[str, str], graphs: dict[str, GraphModel]) -> list[str]:
    """Give each child-graph node the cluster its label names; returns the root clusters.

    ``labels`` maps cluster name -> its "graph_N" label. Walks down from clusters no node
    names, attaching each cluster at most once, so even a damaged file cannot make a graph
    its own descendant.
    """
    if len(graphs) == 1:
        return list(graphs)  # nothing to nest (a node naming its own graph is not attached)
    by_label = {label: name for name, label in labels.items()}
    named = set()
    for graph in graphs.values():
        for node in graph.nodes:
            for key, ref in node.params.items():
                # the child graph, and every body of a conditional node (the model nests the
                # first; an else branch is named here so that it is not taken for a root)
                if (key == "handle_child_graph" or key.startswith("handle_body_")) and ref in by_label:
                    named.add(by_label[ref])
    roots = [name for name in graphs if name not in named] or list(graphs)[:1]
    placed = set(roots)
    stack = list(roots)
    while stack:
        for node in graphs[stack.pop()].nodes:
            target = by_label.get(node.params.get("handle_child_graph"))
            if target is not None and target not in placed:
                placed.add(target)
                node.child = graphs[target]
                stack.append(target)
    return roots
