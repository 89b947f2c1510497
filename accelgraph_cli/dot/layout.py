"""The one-pass reader of CUDA's exact layout (the common case), with the general path as fallback."""

from __future__ import annotations

import re
from operator import attrgetter

from ..gcpause import cyclic_gc_paused
from ..model.graph_model import GraphModel
from .cuda import _finish_cuda_model
from .errors import DotParseError
from .templates import _LabelTemplates, _NodeReader

# The statements of cudaGraphDebugDotPrint exactly as it writes them (see the notes on CUDA's
# dialect in labels.py), one alternative each: the head of a node statement up to its label,
# the first of a cluster's edges, the opening of a cluster with its label, a closing brace. A
# text made of nothing else is read by _read_cuda_layout in one pass; any other text goes the
# general way (_scan). Nodes of a shape seen before are read by that shape's _NodeReader.
_CUDA_STATEMENT = re.compile(
    r"""
    \s*(?:
        "(graph_\d+_node_\d+)"\[(style="\w*"\x20?shape="(\w+)"\x20?label=")
      | (?="graph_\d+_node_\d+"\x20->)()
      | subgraph\x20(cluster_\d+)\x20\{\s*label="(graph_\d+)"\x20graph\[style="dashed"\];
      | \}
    )
    """,
    re.VERBOSE | re.ASCII,
)
_NODE, _EDGES, _CLUSTER = 2, 4, 6  # Match.lastindex of each statement; None: a brace
# What follows an edge statement's target up to the next edge's source (or the cluster's
# closing brace): see _edge_ends.
_CUDA_EDGE_TAIL = re.compile(r"(?:\x20\[headlabel=\d+\])?;\s*", re.ASCII)
_CUDA_HEADER = re.compile(r"\s*digraph\x20dot\x20\{", re.ASCII)
_TRAILING_SPACE = re.compile(r"\s*\Z")
# The statement, edge and header regexes and the node readers' are ASCII-only (\d is [0-9],
# \s ASCII space), so sre tests those classes without Unicode tables. Text they refuse
# (other digits or spaces) is read by the general path, which gives the same model.
# How many node readers (shapes of statement) to try before the statement regex.
_READERS = 6


def _read_cuda_layout(text: str) -> GraphModel | None:
    """The model of a dump in exactly CUDA's layout, read in one pass; None for any other text.

    Gives what _scan + _build_cuda_model give (the tests compare both on every recorded dump)
    several times faster, and builds each node as its statement is read, so the labels never
    all exist at once. Anything unusual (another statement form, a nested cluster, a repeated
    node, a quote or a trailing backslash in a label, a label this cannot read) returns None,
    and the general path then parses the text and words any error with its line.
    """
    # Without the cyclic collector while the nodes are built: they hold no cycles, and its
    # passes over the growing heap cost a fifth of the time on a 100,000-node dump.
    try:
        with cyclic_gc_paused():
            return _Layout(text).read()
    except (ValueError, KeyError, DotParseError):
        return None


class _Layout:
    """One _read_cuda_layout: the clusters read so far and the node readers learned."""

    def __init__(self, text: str):
        self.text = text
        self.templates = _LabelTemplates()
        self.graphs: dict[str, GraphModel] = {}
        self.labels: dict[str, str] = {}
        self.all_ids: set[str] = set()
        self.readers: list[_NodeReader] = []  # most recently used first

    def read(self) -> GraphModel | None:
        text = self.text
        head = _CUDA_HEADER.match(text)
        if head is None:
            return None
        pos = head.end()
        match = _CUDA_STATEMENT.match
        cluster = nodes = found = None  # the cluster being read, its nodes, its edges as read
        reader = None  # the reader of the last node
        while True:
            if cluster is not None and self.readers:
                # The next node is most likely of the shape that followed the last one before.
                expected = reader.next if reader is not None else None
                m = expected.match(text, pos) if expected is not None else None
                if m is None:
                    m, expected = self._match_reader(pos)
                if m is not None:
                    nodes.append(expected.node(m.groups()))
                    if reader is not None:
                        reader.next = expected
                    reader = expected
                    pos = m.end()
                    continue
            m = match(text, pos)
            if m is None:
                return None
            what = m.lastindex
            if what == _NODE:
                if cluster is None:
                    return None
                node, pos, learned = self._first_node(m)
                if node is None:
                    return None
                nodes.append(node)
                if reader is not None and learned is not None:
                    reader.next = learned
                reader = learned
                if learned is not None and learned not in self.readers:
                    self.readers.insert(0, learned)
                    del self.readers[_READERS:]
                continue
            pos = m.end()
            reader = None
            if what == _EDGES:
                if cluster is None:
                    return None
                brace = text.find("}", pos)
                if brace < 0:
                    return None
                ends = _edge_ends(text[pos:brace])
                if ends is None:
                    return None
                found.append(ends)
                pos = brace
            elif what == _CLUSTER:
                name, label = m.group(5, 6)
                if cluster is not None or name in self.graphs:
                    return None  # nested or repeated: the general path decides
                cluster, nodes, found = name, [], []
                self.graphs[name] = GraphModel(nodes=nodes, edges=[], source="")
                self.labels[name] = label
            elif cluster is not None:
                if not self._close(cluster, nodes, found):
                    return None
                cluster = None
            else:  # the digraph's own brace: only whitespace may follow
                if _TRAILING_SPACE.match(text, pos) is None or not self.all_ids:
                    return None
                return _finish_cuda_model(self.graphs, self.labels)

    def _match_reader(self, pos: int):
        for reader in self.readers:
            m = reader.match(self.text, pos)
            if m is not None:
                return m, reader
        return None, None

    def _first_node(self, m: re.Match):
        """A node statement no reader took: its node, where reading goes on, and the reader
        for statements of its shape (None if there is none)."""
        text = self.text
        start = m.end()
        end = text.find('"];', start)
        if end < 0:
            return None, 0, None
        label = text[start:end]
        # The regex of _scan ends a label at the first unescaped quote, and _unquote drops a
        # backslash before a line break (a string continued); leave every such label to it.
        if '"' in label or "\\\n" in label or "\\\r\n" in label or label.endswith("\\"):
            return None, 0, None
        node_id, header, shape = m.group(1, 2, 3)
        node = self.templates.node(node_id, label, shape)
        return node, end + 3, self.templates.reader(header, label, shape)

    def _close(self, name: str, nodes: list, found: list) -> bool:
        """The end of a cluster: its edges, with the node ids' own strings; False if a node
        repeats or an edge is not between two nodes of this cluster."""
        node_ids = list(map(_node_id, nodes))
        ids = dict(zip(node_ids, node_ids))
        if len(ids) != len(nodes) or not self.all_ids.isdisjoint(ids):
            return False
        self.all_ids.update(ids)
        edges = self.graphs[name].edges
        at = ids.__getitem__  # KeyError for an end not in this cluster: the general path decides
        for sources, targets in found:
            edges += zip(map(at, sources), map(at, targets))
        return True


_node_id = attrgetter("id")


def _edge_ends(block: str) -> tuple[list[str], list[str]] | None:
    """The sources and targets of a cluster's run of edge statements exactly as CUDA writes
    them (``"graph_0_node_1" -> "graph_0_node_2" [headlabel=0];`` with any whitespace after
    each), None for any other text. Split at the quotes in one call instead of matching
    statement by statement; the ends are checked against the cluster's node ids after."""
    parts = block.split('"')  # "", source, " -> ", target, tail, source, " -> "...
    if len(parts) % 4 != 1 or parts[0] or set(parts[2::4]) != {"\x20->\x20"}:
        return None
    if not all(map(_CUDA_EDGE_TAIL.fullmatch, set(parts[4::4]))):
        return None
    return parts[1::4], parts[3::4]
