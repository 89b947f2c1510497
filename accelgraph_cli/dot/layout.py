"""The one-pass reader of CUDA's exact layout (the common case), with the general path as fallback."""

from __future__ import annotations

import re

from ..model.graph_model import GraphModel
from .cuda import _join_cuda_graphs
from .errors import DotParseError
from .templates import _LabelTemplates

# The statements of cudaGraphDebugDotPrint exactly as it writes them (see the notes on
# CUDA's dialect in labels.py), one alternative each: the head of a node statement up to its label,
# a run of edges, the opening of a cluster with its label, a closing brace. A text made of nothing
# else is read by _read_cuda_layout in one pass; any other text goes the general way (_scan).
# A label runs to the first '"];' (str.find, far faster than a regex over 400 characters).
_CUDA_STATEMENT = re.compile(
    r"""
    \s*(?:
        "(graph_\d+_node_\d+)"\[style="\w*"\x20?shape="(\w+)"\x20?label="
      | ((?:"graph_\d+_node_\d+"\x20->\x20"graph_\d+_node_\d+"(?:\x20\[headlabel=\d+\])?;\s*)+)
      | subgraph\x20(cluster_\d+)\x20\{\s*label="(graph_\d+)"\x20graph\[style="dashed"\];
      | \}
    )
    """,
    re.VERBOSE,
)
# One edge of the run of edges that the second alternative above matched.
_CUDA_EDGE = re.compile(r'"(graph_\d+_node_\d+)"\x20->\x20"(graph_\d+_node_\d+)"')
_CUDA_HEADER = re.compile(r"\s*digraph\x20dot\x20\{")
_TRAILING_SPACE = re.compile(r"\s*\Z")
_NODE, _EDGES, _CLUSTER = 2, 3, 5  # Match.lastindex of each statement; None: a brace


def _read_cuda_layout(text: str) -> GraphModel | None:
    """The model of a dump in exactly CUDA's layout, read in one pass; None for any other text.

    Gives what _scan + _build_cuda_model give (the tests compare both on every recorded dump)
    several times faster, and builds each node as its statement is read, so the labels never
    all exist at once. Anything unusual (another statement form, a nested cluster, a repeated
    node, a quote or a trailing backslash in a label, a label this cannot read) returns None,
    and the general path then parses the text and words any error with its line.
    """
    head = _CUDA_HEADER.match(text)
    if head is None:
        return None
    templates = _LabelTemplates()
    graphs: dict[str, GraphModel] = {}
    edges: dict[str, list] = {}
    labels: dict[str, str] = {}
    node_cluster: dict[str, str] = {}
    nodes = cluster_edges = None  # those of the cluster being read
    cluster = None
    pos = head.end()
    match = _CUDA_STATEMENT.match
    find = text.find
    try:
        while (m := match(text, pos)) is not None:
            what = m.lastindex
            if what == _NODE:
                start = m.end()
                end = find('"];', start)
                node_id, shape = m.group(1, 2)
                if end < 0 or cluster is None or node_id in node_cluster:
                    return None
                label = text[start:end]
                # The regex of _scan ends a label at the first unescaped quote and refuses a
                # backslash before a line break; leave every such label to it.
                if '"' in label or "\\\n" in label or label.endswith("\\"):
                    return None
                node_cluster[node_id] = cluster
                nodes.append(templates.node(node_id, label, shape))
                pos = end + 3
                continue
            pos = m.end()
            if what == _EDGES:  # all edges of a cluster at once: one findall, no loop
                if cluster is None:
                    return None
                cluster_edges += _CUDA_EDGE.findall(text, m.start(3), pos)
            elif what == _CLUSTER:
                name, label = m.group(4, 5)
                if cluster is not None or name in graphs:
                    return None  # nested or repeated: the general path decides
                cluster, nodes, cluster_edges = name, [], []
                graphs[name] = GraphModel(nodes=nodes, edges=[], source="")
                edges[name], labels[name] = cluster_edges, label
            elif cluster is not None:
                cluster = None
            else:  # the digraph's own brace: only whitespace may follow
                if _TRAILING_SPACE.match(text, pos) is None or not node_cluster:
                    return None
                return _join_cuda_graphs(graphs, edges, labels, node_cluster, lambda _: 0, "")
    except (ValueError, DotParseError):
        return None
    return None
