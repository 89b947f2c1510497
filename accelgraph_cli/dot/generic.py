"""DOT that is not a CUDA dump: nodes of kind "unknown", from our scanner or from pydot."""

from __future__ import annotations

import contextlib
import io
import re
import warnings

from ..gcpause import cyclic_gc_resumed
from ..model.graph_model import GraphModel, Node
from .errors import DotParseError
from .labels import _decode_label
from .scan import _QUOTED, _attributes, _Document, _unquote


def _build_generic_model(document: _Document) -> GraphModel:
    """DOT our scanner understood but that is not CUDA's: nodes of kind "unknown"."""
    nodes: list[Node] = []
    seen: set[str] = set()

    def add_node(node_id: str) -> None:
        if node_id not in seen:
            seen.add(node_id)
            raw = _attributes(document.node_attrs.get(node_id, "")).get("label")
            nodes.append(_generic_node(node_id, raw))

    edges = []
    for cluster in document.clusters.values():
        for node_id in cluster.node_ids:
            add_node(node_id)
    for cluster in document.clusters.values():
        for src, dst in cluster.edges:
            add_node(src)
            add_node(dst)
            edges.append((src, dst))
    if document.strict:
        edges = _merged(edges, document.directed)
    return GraphModel(nodes=nodes, edges=edges, source="dot-generic")


def _generic_node(node_id: str, raw_label: str | None) -> Node:
    label = " ".join(_decode_label(raw_label).split()) if raw_label else ""
    params = {"label": label} if label and label != node_id else {}
    return Node(id=node_id, kind="unknown", name=label or node_id, params=params)


_QUOTED_NAME = re.compile(_QUOTED)
_PYDOT_WHERE = re.compile(r"\(line:(\d+), col:(\d+)\)")
# pydot's grammar takes about twice as long per level of nested braces (a 10-level file about
# 3 s, 12 levels 7 s, 16 levels 96 s): deeper files are refused at once, not read for minutes
_PYDOT_MAX_DEPTH = 10
_BRACE = re.compile(r"[{}]")


def _brace_depth(text: str) -> int:
    """The deepest nesting of { } outside quoted strings."""
    depth = deepest = 0
    for brace in _BRACE.findall(_QUOTED_NAME.sub("", text)):
        depth += 1 if brace == "{" else -1
        deepest = max(deepest, depth)
    return deepest


def _parse_with_pydot(text: str, filename: str) -> GraphModel:
    """The fallback for DOT beyond CUDA's dialect: pydot (slow, complete) reads it.

    With the cyclic collector on, even inside ``show``'s pause: pyparsing leaves cyclic
    garbage at every statement (a 10,000-node file: 49 MB with it on, 1.5 GB paused).
    """
    with cyclic_gc_resumed():
        return _read_with_pydot(text, filename)


def _read_with_pydot(text: str, filename: str) -> GraphModel:
    depth = _brace_depth(text)
    if depth > _PYDOT_MAX_DEPTH + 1:  # the graph's own braces are one level
        raise DotParseError(
            f"{filename}: not read: nested {depth - 1} levels deep, and DOT that is not CUDA's "
            f"is read by pydot, which slows down about twice per level past "
            f"{_PYDOT_MAX_DEPTH}; flatten the nesting")
    messages = io.StringIO()
    with warnings.catch_warnings():
        # pydot still calls pyparsing's deprecated camelCase API; not the user's concern.
        warnings.simplefilter("ignore", DeprecationWarning)
        import pydot  # imported here: slow to import, and never needed for CUDA dumps

        try:
            # pydot prints parse errors instead of raising; capture them for our message.
            with contextlib.redirect_stdout(messages):
                graphs = _pydot_graphs(text)
        except RecursionError:  # pyparsing recurses once per level of { } or [ ]
            graphs = None
            reason = "nested too deeply (braces or brackets inside one another)"
        except Exception as problem:  # noqa: BLE001 - pyparsing/pydot raise assorted types
            graphs = None
            reason = str(problem).splitlines()[0] if str(problem) else type(problem).__name__
        else:
            printed = [line.strip() for line in messages.getvalue().splitlines() if line.strip()]
            reason = printed[-1] if printed else "no graph found"
    if not graphs:
        where = _PYDOT_WHERE.search(reason)
        line = f":{where.group(1)}" if where else ""
        reason = re.sub(r"\s*\(at char \d+\),?", "", _PYDOT_WHERE.sub("", reason)).strip()
        raise DotParseError(f"{filename}{line}: not valid DOT: {reason[:160]}")
    if len(graphs) > 1:  # as the scanner refuses CUDA-like files of several graphs
        raise DotParseError(f"{filename}: more than one graph in the file ({len(graphs)} graphs)")
    graph = graphs[0]
    directed = graph.get_type() == "digraph"
    wrong = _wrong_edge_operator(text, directed)
    if wrong is not None:  # pydot takes either operator in either kind; Graphviz does not
        op, line = wrong
        raise DotParseError(
            f"{filename}:{line}: not valid DOT: '{op}' in a {'digraph' if directed else 'graph'}"
            f" (edges of a digraph are written '->', of an undirected graph '--')")
    nodes: list[Node] = []
    seen: dict[str, int] = {}  # name -> its place in nodes
    edges: list[tuple[str, str]] = []

    def clean(name: str) -> str:
        name = str(name)
        quoted = _QUOTED_NAME.match(name)  # "a b" or "a b":port
        if quoted:
            return _unquote(quoted.group(0))
        return name.split(":")[0]  # drop a port

    # where in the file each node's label was given: the path of statement numbers (pydot's
    # "sequence", counted anew inside each subgraph) down to its statement
    labelled_at: dict[str, tuple] = {}

    def add(name: str, label: str | None = None, at: tuple = ()) -> None:
        place = seen.get(name)
        if place is None:
            seen[name] = len(nodes)
            nodes.append(_generic_node(name, label))
        elif label is None or at < labelled_at.get(name, ()):
            return
        else:
            # the label of the statement written last wins, as in Graphviz (and the
            # scanner), wherever the subgraphs put it (they are read after their graph's
            # own statements)
            nodes[place] = _generic_node(name, label)
        if label is not None:
            labelled_at[name] = at

    # An edge to or from a subgraph ("{a -> b} -> c", "x -> subgraph s {...}") is an edge to
    # or from every node in it, as Graphviz reads it; pydot hands the subgraph over as its
    # dict, the same object each time it is named (a chain names it twice).
    members_of: dict[int, list[str]] = {}

    def endpoints(end, at: tuple) -> list[str]:
        if isinstance(end, str):
            return [clean(end)]
        if id(end) not in members_of:
            members_of[id(end)] = visit(pydot.Subgraph(obj_dict=end), at)
        return members_of[id(end)]

    def place_of(item, path: tuple) -> tuple:
        return (*path, item.obj_dict.get("sequence") or 0)

    def visit(g, path: tuple = ()) -> list[str]:
        """Read the nodes and edges of ``g`` and its subgraphs; its nodes, in order.
        ``path``: where ``g`` is in the file (see labelled_at)."""
        members: dict[str, None] = {}
        for node in g.get_nodes():
            raw = str(node.get_name())
            if raw.lower() in ("node", "edge", "graph"):
                continue  # default attributes, no node (a quoted "node" is a node)
            name = clean(raw)
            label = node.get_attributes().get("label")
            if isinstance(label, str) and label.startswith('"') and label.endswith('"'):
                label = _unquote(label)  # as the fast path reads it
            elif isinstance(label, str) and label.startswith("<") and label.endswith(">"):
                label = label[1:-1]  # an HTML string: its text, markup and all
            add(name, label, place_of(node, path))
            members[name] = None
        for edge in g.get_edges():
            ends = []
            for end in (edge.get_source(), edge.get_destination()):
                # nodes in the order written: x, then a and b
                ends.append(endpoints(end, place_of(edge, path)))
                for name in ends[-1]:
                    add(name)
                    members[name] = None
            edges.extend((src, dst) for src in ends[0] for dst in ends[1])
        for sub in g.get_subgraphs():
            members.update(dict.fromkeys(visit(sub, place_of(sub, path))))
        return list(members)

    visit(graph)
    if graph.get_strict():
        edges = _merged(edges, directed=directed)
    return GraphModel(nodes=nodes, edges=edges, source="dot-generic")


# What can hold "--" or "->" without being an edge operator: a quoted string, an HTML
# string (<...>, nested), a comment (/* */, //, and # to the end of its line, as pydot reads
# them).
_NOT_CODE = re.compile(r'"(?:[^"\\]|\\.)*"|/\*.*?\*/|//[^\n]*|#[^\n]*|(?P<html><)|(?P<op>--|->)',
                       re.S)


def _wrong_edge_operator(text: str, directed: bool) -> tuple[str, int] | None:
    """The first edge operator of the other kind of graph ('--' in a digraph, '->' in a
    graph) outside strings and comments, with its line; None where there is none."""
    wrong = "--" if directed else "->"
    at = 0
    while True:
        m = _NOT_CODE.search(text, at)
        if m is None:
            return None
        if m.group("op") is not None:
            if m.group("op") == wrong:
                return wrong, text.count("\n", 0, m.start()) + 1
            at = m.end()
        elif m.group("html") is not None:  # an HTML string: to its matching '>'
            depth, i = 0, m.start()
            while i < len(text):
                depth += {"<": 1, ">": -1}.get(text[i], 0)
                i += 1
                if depth == 0:
                    break
            at = i
        else:
            at = m.end()


def _pydot_graphs(text: str):
    """pydot's graphs of ``text``, which must be graphs and nothing else: pydot's own
    ``graph_from_dot_data`` stops at the last graph it can read and drops the rest without a
    word (``digraph { a -> b } c -> d;`` was a graph of two nodes), where Graphviz refuses the
    file. Its grammar (pydot 4's ``GraphParser.parser``, the one ``graph_from_dot_data``
    uses), asked to read all the text, raises on the first word after it."""
    import pydot.dot_parser as dot_parser

    return list(dot_parser.GraphParser.parser.parse_string(_trailing_semicolons_dropped(text),
                                                           parse_all=True))


_TRAILING_SEMICOLONS = re.compile(r"\}([\s;]*)\Z")


def _trailing_semicolons_dropped(text: str) -> str:
    """``text`` with the semicolons after its last ``}`` made spaces: Graphviz reads
    ``digraph { a -> b } ; ;``, pydot's grammar takes one ``;`` there (its offsets, and so
    the lines its messages name, are unchanged)."""
    found = _TRAILING_SEMICOLONS.search(text)
    if found is None or ";" not in found.group(1):
        return text
    return text[:found.start(1)] + found.group(1).replace(";", " ")


def _merged(edges: list[tuple[str, str]], directed: bool) -> list[tuple[str, str]]:
    """The edges of a strict graph: each (in an undirected one, each pair of nodes) once."""
    kept: dict = {}
    for edge in edges:
        kept.setdefault(edge if directed else frozenset(edge), edge)
    return list(kept.values())
