"""The general DOT scanner: statements per cluster, for any DOT text, with errors by line.

CUDA dumps in their exact layout are read by layout.py instead; this scanner is the reference
it is checked against, and reads everything else (damaged dumps get messages naming a line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import DotParseError, _BrokenDotError

# ---------------------------------------------------------------------------- tokens

# A DOT double-quoted string, written as an unrolled loop so re does not backtrack per char
# (_OPEN_QUOTED: up to its closing quote, which _QUOTED adds). A backslash escapes any
# character, a line break too (DOT's line continuation, as Graphviz writes long strings).
_OPEN_QUOTED = r'"[^"\\]*(?:\\[\s\S][^"\\]*)*'
_QUOTED = _OPEN_QUOTED + '"'
_ID = rf"(?:{_QUOTED}|[^\W\d]\w*|-?(?:\.\d+|\d+(?:\.\d*)?))"
_ATTR_LIST = rf'\[(?:[^\]"]*(?:{_QUOTED}[^\]"]*)*)\]'
_STATEMENT = re.compile(
    rf"""
    \s*(?:
        (?P<edge>(?P<src>{_ID})\s*->\s*(?P<dst>{_ID})\s*(?P<eattrs>{_ATTR_LIST}\s*)*)
      | (?P<node>(?P<nid>{_ID})\s*(?P<attrs>(?:{_ATTR_LIST}\s*)+))
      | (?P<open>(?i:(?:strict\s+)?(?:di)?graph|subgraph)\s*(?P<gname>{_ID})?\s*\{{|\{{)
      | (?P<close>\}})
      | (?P<assign>{_ID}\s*=\s*{_ID})
      | (?P<semi>[;,])
      | (?P<bare>{_ID})
      | (?P<chain>->\s*(?P<next>{_ID})\s*(?P<cattrs>{_ATTR_LIST}\s*)*)
    )
    """,
    re.VERBOSE,
)
_ATTR = re.compile(rf"({_ID})\s*=\s*({_ID})")
_QUOTED_ONLY = re.compile(_QUOTED)
_LABEL_ATTR = re.compile(rf"\blabel\s*=\s*({_ID})")
_SHAPE_ATTR = re.compile(rf"\bshape\s*=\s*({_ID})")
# keywords that open a default-attribute statement, not a node (read in any case, unquoted:
# a quoted "node" is a node)
_DEFAULT_KEYWORDS = ("graph", "node", "edge")
_WHITESPACE_TAIL = re.compile(r"\s*")
_COMMENT = re.compile(rf"({_QUOTED})|/\*.*?\*/|//[^\n]*|^#[^\n]*", re.DOTALL | re.MULTILINE)
_DOT_START = re.compile(r"(?:strict\s+)?(?:di)?graph\b|/[/*]|#", re.IGNORECASE)
# Text that only a CUDA dump contains: a damaged one gets our error, not a pydot attempt.
_CUDA_HINT = re.compile(r'"graph_\d+_node_\d+"')
_DOT_KEYWORDS = frozenset(("node", "edge", "graph", "digraph", "subgraph", "strict"))


def _keep_strings_drop_comments(m: re.Match) -> str:
    if m.group(1) is not None:
        return m.group(1)
    return "\n" * m.group(0).count("\n")


_CUDA_NODE_ID = re.compile(r"graph_(\d+)_node_(\d+)$")


_ESCAPED = re.compile(r"\\(\r?\n|[\s\S])")


def _unescaped(m: re.Match) -> str:
    """One escape of a DOT string: a line break continued goes, a quote is the quote, every
    other pair is kept for the label language."""
    after = m.group(1)
    return "" if after[-1] == "\n" else '"' if after == '"' else m.group(0)


def _unquote(token: str) -> str:
    if token.startswith('"'):
        # DOT escapes only the quote itself, and drops a backslash before a line break (a
        # string continued on the next line); every other backslash is kept for the label
        # language (\n, \{, \<) and decoded where labels are read.
        inner = token[1:-1]
        if "\\\n" in inner or "\\\r\n" in inner:
            # read in pairs, as Graphviz's reader does: a backslash escapes the character
            # after it, so "\\\\" then a line break is a kept backslash pair and a line break
            return _ESCAPED.sub(_unescaped, inner)
        return inner.replace('\\"', '"')
    return token


def _brief(name: str) -> str:
    """A node name as quoted in an error message: one line, at most 60 characters."""
    return repr(name if len(name) <= 60 else name[:57] + "...")


# A DOT string, from its opening quote to its closing one (group 1, empty where the text
# ends first).
_DOT_STRING = re.compile(_OPEN_QUOTED + '("?)', re.S)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


@dataclass
class _Cluster:
    """One ``subgraph cluster_N`` as read: its node ids in order, its edges, its parent."""

    name: str
    parent: str | None
    node_ids: list = field(default_factory=list)
    edges: list = field(default_factory=list)
    label: str | None = None  # CUDA labels each cluster "graph_N"; child nodes name it


@dataclass
class _Document:
    """The statements of a DOT text, with the cluster each statement was found in."""

    clusters: dict  # cluster name -> _Cluster ("" = the top level)
    node_attrs: dict  # node id -> attribute string(s) as written
    node_cluster: dict  # node id -> cluster name
    graph_name: str | None
    node_offset: dict  # node id -> offset of its statement in the text (for error lines)
    text: str
    strict: bool = False  # "strict digraph": duplicate edges are one edge
    directed: bool = True  # "digraph", not "graph"

    def line_of(self, node_id: str) -> int:
        """Line of a node's statement, for error messages."""
        return _line_of(self.text, self.node_offset.get(node_id, 0))


def _scan(text: str, filename: str) -> _Document:
    """Split DOT text into node/edge statements per cluster; DotParseError on malformed text."""
    return _Scanner(text, filename).run()


class _Scanner:
    """The state of one _scan: the open scopes and what was read so far, one method per
    statement type."""

    def __init__(self, text: str, filename: str):
        self.text, self.filename = text, filename
        self.top = _Cluster("", None)
        self.clusters = {"": self.top}
        self.node_attrs: dict[str, str] = {}
        self.node_cluster: dict[str, str] = {}
        self.node_offset: dict[str, int] = {}
        # per open graph/subgraph scope, the cluster its statements belong to ("": the graph)
        self.stack: list[str] = []
        # per level of the stack: whether it is a plain subgraph (whose label is its own, not
        # the enclosing cluster's)
        self.plain: list[bool] = []
        self.graph_name = None
        self.strict, self.directed = False, True
        self.anonymous = 0
        # Where the last edge statement without attributes ended, and its head: "-> c" right
        # there goes on from it (an edge chain "a -> b -> c"; CUDA writes one edge a line).
        self.chain_end, self.chain_head = -1, ""

    def run(self) -> _Document:
        text = self.text
        pos, end = 0, len(text)
        match = _STATEMENT.match
        handlers = {
            "edge": self._edge,
            "node": self._node,
            "open": self._open,
            "close": self._close,
            "assign": self._assign,
            "bare": self._bare,
            "chain": self._chain,
        }
        while True:
            m = match(text, pos)
            if m is None or m.end() == pos:
                tail = _WHITESPACE_TAIL.match(text, pos).end()
                if tail == end:
                    break
                self._unexpected(tail)
            pos = m.end()
            kind = m.lastgroup
            if kind is None:  # an alternation inside a group matched; find the statement type
                kind = next(
                    k
                    for k in ("edge", "node", "open", "close", "assign", "semi", "bare", "chain")
                    if m.group(k) is not None
                )
            handler = handlers.get(kind)
            if handler is not None:
                handler(m)
        if self.graph_name is None:
            raise DotParseError(f"{self.filename}:1: no 'digraph {{ ... }}' found (not a DOT graph)")
        if self.stack:
            raise _BrokenDotError(
                f"{self.filename}:{_line_of(text, end)}: {len(self.stack)} unclosed '{{' at end of file "
                "(file truncated?)"
            )
        return _Document(
            self.clusters, self.node_attrs, self.node_cluster, self.graph_name, self.node_offset, text,
            self.strict, self.directed,
        )

    def _where(self, m: re.Match) -> str:
        # The statement's own line: a match starts with the whitespace (line breaks) before it.
        return f"{self.filename}:{_line_of(self.text, _WHITESPACE_TAIL.match(self.text, m.start()).end())}"

    def _unexpected(self, tail: int) -> None:
        text = self.text
        snippet = text[tail : tail + 40].split("\n")[0]
        opened = next((m.start() for m in _DOT_STRING.finditer(text, tail) if not m.group(1)),
                      None)
        # a quote no quote closes (an escaped one does not), unless an HTML label (<...>,
        # which CUDA never writes and which may hold quotes of its own) comes before it: then
        # the quotes are paired wrongly here, and this is DOT for the general parser
        if opened is not None and "<" not in text[tail:opened]:
            raise _BrokenDotError(
                f"{self.filename}:{_line_of(text, opened)}: unterminated string (file truncated?)"
            )
        if self.stack and "}" not in text[tail:]:
            # A statement left unfinished with a graph still open and nothing after it that
            # could close one: the file stops there ("a -> ", 'a [style='), it is not foreign DOT.
            raise _BrokenDotError(
                f"{self.filename}:{_line_of(text, tail)}: the file ends inside a statement, "
                f"after {snippet!r} (file truncated?)"
            )
        raise DotParseError(
            f"{self.filename}:{_line_of(text, tail)}: unexpected text {snippet!r} "
            "(not the DOT that CUDA writes)"
        )

    def _add_node(self, node_id: str, attrs: str) -> None:
        scope = _current_cluster(self.stack)
        self.clusters[scope].node_ids.append(node_id)
        self.node_cluster[node_id] = scope
        self.node_attrs[node_id] = attrs

    def _edge(self, m: re.Match) -> None:
        if not self.stack:
            raise DotParseError(f"{self._where(m)}: edge outside a graph")
        if not self.directed:  # as Graphviz: an undirected graph's edges are written '--'
            # (no reader gets past this: not handed on to pydot)
            raise _BrokenDotError(f"{self._where(m)}: not valid DOT: '->' in a graph (edges of a "
                                "digraph are written '->', of an undirected graph '--')")
        src, dst = m.group("src"), m.group("dst")
        if src.lower() in _DOT_KEYWORDS or dst.lower() in _DOT_KEYWORDS:
            raise DotParseError(f"{self._where(m)}: edge to a subgraph (not the DOT that CUDA writes)")
        self.clusters[_current_cluster(self.stack)].edges.append((_unquote(src), _unquote(dst)))
        if m.group("eattrs") is None:
            self.chain_end, self.chain_head = m.end(), dst

    def _chain(self, m: re.Match) -> None:
        """``-> c`` right after an edge ``a -> b``: the edge b -> c of a chain."""
        head = m.group("next")
        start = _WHITESPACE_TAIL.match(self.text, m.start()).end()
        if _WHITESPACE_TAIL.match(self.text, self.chain_end).end() != start or head.lower() in _DOT_KEYWORDS:
            raise DotParseError(f"{self._where(m)}: unexpected '->' (not the DOT that CUDA writes)")
        self.clusters[_current_cluster(self.stack)].edges.append(
            (_unquote(self.chain_head), _unquote(head))
        )
        if m.group("cattrs") is None:
            self.chain_end, self.chain_head = m.end(), head

    def _node(self, m: re.Match) -> None:
        if not self.stack:
            raise DotParseError(f"{self._where(m)}: node outside a graph")
        raw = m.group("nid")
        node_id = _unquote(raw)
        if raw.lower() in _DEFAULT_KEYWORDS:
            # default-attribute statements carry no node; `graph [label=...]` labels the
            # graph or cluster it is in, as `label=...` does (Graphviz's tools write it so)
            if raw.lower() == "graph" and not (self.plain and self.plain[-1]):
                label = _attributes(m.group("attrs")).get("label")
                if label is not None:
                    self.clusters[_current_cluster(self.stack)].label = label
            return
        attrs = m.group("attrs")
        if ("<" in attrs or "+" in attrs) and not _CUDA_NODE_ID.match(node_id):
            # an HTML string (label=<...>) or strings joined with '+': DOT that _ATTR cannot
            # read (the label was lost without a word), and CUDA never writes; pydot reads it
            bare = _QUOTED_ONLY.sub("", attrs)
            if "<" in bare or "+" in bare:
                raise DotParseError(f"{self._where(m)}: an HTML string or a '+' in an attribute "
                                    "list (not the DOT that CUDA writes)")
        if node_id not in self.node_attrs:
            self._add_node(node_id, attrs)
            self.node_offset[node_id] = m.start("node")
        else:
            self.node_attrs[node_id] += attrs

    def _open(self, m: re.Match) -> None:
        stack = self.stack
        name = _unquote(m.group("gname")) if m.group("gname") else ""
        opener = m.group("open")
        # (DOT's keywords are read in any case; "{ ... }" is an anonymous subgraph)
        if opener == "{" or opener[:8].lower() == "subgraph":
            if not stack:
                raise DotParseError(f"{self._where(m)}: subgraph outside a graph")
            if not name:
                self.anonymous += 1
                name = f"\x00anon{self.anonymous}"
            parent = _current_cluster(stack)
            if name.startswith("cluster") and name not in self.clusters:
                self.clusters[name] = _Cluster(name, parent)
            # each level holds the cluster its statements belong to: its own name for a
            # cluster, the enclosing one's for a plain subgraph (which is invisible)
            stack.append(name if name.startswith("cluster") else parent)
            self.plain.append(not name.startswith("cluster"))
            return
        if stack:
            raise DotParseError(f"{self._where(m)}: a graph inside a graph")
        if self.graph_name is not None or self.top.node_ids or len(self.clusters) > 1:
            raise _BrokenDotError(f"{self._where(m)}: more than one graph in the file")
        self.graph_name = name
        keyword = opener.lower()
        # the keywords only: a graph named "mydigraph" is no digraph
        head = keyword.split(None, 2)
        self.strict = head[0] == "strict"
        self.directed = head[1 if self.strict else 0].startswith("digraph")
        stack.append("")
        self.plain.append(False)

    def _close(self, m: re.Match) -> None:
        if not self.stack:
            raise _BrokenDotError(f"{self._where(m)}: unbalanced '}}'")
        self.stack.pop()
        self.plain.pop()

    def _outside(self, m: re.Match, kind: str) -> None:
        if not self.stack:
            raise DotParseError(
                f"{self._where(m)}: unexpected text {m.group(kind)[:40]!r} (not a DOT graph)"
            )

    def _assign(self, m: re.Match) -> None:
        self._outside(m, "assign")
        key, value = _ATTR.match(m.group("assign")).groups()
        if _unquote(key) == "label" and not (self.plain and self.plain[-1]):
            # (a plain subgraph's label is its own, not the enclosing cluster's)
            self.clusters[_current_cluster(self.stack)].label = _unquote(value)

    def _bare(self, m: re.Match) -> None:
        self._outside(m, "bare")
        raw = m.group("bare")
        node_id = _unquote(raw)
        if node_id not in self.node_attrs and raw.lower() not in _DEFAULT_KEYWORDS:
            self._add_node(node_id, "")


def _current_cluster(stack: list[str]) -> str:
    # Statements belong to the innermost enclosing *cluster* (plain subgraphs are invisible):
    # the name each level of the stack holds (see _Document._open), so a file nested n
    # levels deep is read in time linear in n, not quadratic.
    return stack[-1] if stack else ""


def _attributes(raw: str) -> dict[str, str]:
    return {_unquote(k): _unquote(v) for k, v in _ATTR.findall(raw)}
