"""Parsing the DOT that CUDA writes (cudaGraphDebugDotPrint) into a GraphModel, fast.

CUDA's writer is one fixed program, so its output is parsed with a handful of regexes over
the whole text instead of a general DOT grammar: a 10,000-node verbose dump (4.5 MB) parses
in a fraction of a second, where pydot needs minutes. Both forms are read:

* basic (flags 0): ``"graph_0_node_3"[...shape=...label="3\\nname\\n"]`` — kind from the
  shape/label, kernel names but no launch dimensions;
* verbose (flags 1): record labels ``{KERNEL | {ID | 3 (topoId: 2) | name\\<\\<\\<grid,block,
  shmem\\>\\>\\>} | ...}`` with every parameter CUDA knows.

Each ``subgraph cluster_N`` is one CUDA graph; a child-graph (or conditional) node gets the
cluster of its nested graph as ``Node.child``. DOT that is not CUDA's is parsed generically
with pydot (source "dot-generic": every node of kind "unknown"). Anything else — empty,
truncated, binary, not DOT — raises DotParseError naming the file and line.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import io
import json
import operator
import os
import re
import string
import warnings
import zlib
from dataclasses import dataclass, field

from ..model.demangle import demangle_many
from ..model.graph_model import GraphModel, ModelLoadError, Node, is_stable_param


class DotParseError(ModelLoadError):
    """The text is not a DOT graph this module can read; the message names file and line."""

    def __init__(self, message: str):
        # One line, whatever a damaged file put into the names quoted in the message.
        super().__init__(message.replace("\r", "\\r").replace("\n", "\\n"))


class _BrokenDotError(DotParseError):
    """Damage no DOT reader gets past (unbalanced braces or quotes, several graphs): reported
    as is, without trying pydot."""


_GZIP_MAGIC = b"\x1f\x8b"

# How many bytes to sniff for NUL before reading a whole file: binary files are refused
# before megabytes of them are decoded.
_SNIFF_BYTES = 64 * 1024

# A JSON document's first character (after what lstrip("\ufeff \t\r\n") would drop), found
# without copying the text.
_JSON_START = re.compile(r"[\ufeff \t\r\n]*[{\[]")


# --------------------------------------------------------------------------- loading


def load_model(path: str | os.PathLike) -> GraphModel:
    """Read a graph from a CUDA DOT dump (.dot/.gv, or any DOT) or an accelgraph JSON model.

    The format is recognised from the content (a JSON object vs DOT text, gzipped or not),
    not the suffix.
    Raises ModelLoadError (DotParseError for DOT problems) with a one-line message naming
    the file: missing, unreadable, binary, not UTF-8, malformed.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as handle:
            head = handle.read(_SNIFF_BYTES)
            if head.startswith(_GZIP_MAGIC):
                # make fixtures stores big dumps gzipped; read them as they are.
                handle.seek(0)
                data = _gunzip(handle, name)
            elif b"\x00" in head:
                raise DotParseError(f"{name}: binary file (NUL bytes), not a DOT or JSON graph")
            else:
                handle.seek(0)
                data = handle.read()  # not head + the rest: that is a second copy
    except FileNotFoundError:
        raise ModelLoadError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise ModelLoadError(f"{name}: is a directory, not a graph file") from None
    except OSError as problem:
        raise ModelLoadError(f"{name}: cannot read: {problem.strerror or problem}") from None
    text = decode_text(data, name)
    del data  # a 100,000-node dump is 45 MB of bytes, not to be kept while the model grows
    return _model_from_text(text, name)


def _gunzip(handle, name: str) -> bytes:
    try:
        with gzip.GzipFile(fileobj=handle, mode="rb") as unzipped:
            return unzipped.read()
    except (OSError, EOFError, zlib.error) as problem:
        raise DotParseError(f"{name}: damaged gzip file ({problem})") from None


def load_model_bytes(data: bytes, filename: str = "<bytes>") -> GraphModel:
    """``load_model`` for bytes already in memory (stdin, tests): JSON model or DOT text."""
    return _model_from_text(decode_text(data, filename), filename)


def _model_from_text(text: str, filename: str) -> GraphModel:
    if _JSON_START.match(text):
        return _load_json(text, filename)
    return parse_dot(text, filename=filename)


def decode_text(data: bytes, filename: str = "<bytes>") -> str:
    """UTF-8 text of a file's bytes, or DotParseError for binary / non-UTF-8 content."""
    if b"\x00" in data:
        raise DotParseError(f"{filename}: binary file (NUL bytes), not a DOT or JSON graph")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as problem:
        line = data.count(b"\n", 0, problem.start) + 1
        raise DotParseError(
            f"{filename}:{line}: not UTF-8 text (byte 0x{data[problem.start]:02x}); not a DOT or JSON graph"
        ) from None


def _load_json(text: str, filename: str) -> GraphModel:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as problem:
        raise ModelLoadError(f"{filename}:{problem.lineno}: invalid JSON: {problem.msg}") from None
    except RecursionError:
        raise ModelLoadError(f"{filename}: invalid JSON: nested too deeply") from None
    return GraphModel.from_json(document, where=filename)


# ---------------------------------------------------------------------------- tokens

# A DOT double-quoted string, written as an unrolled loop so re does not backtrack per char.
_QUOTED = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_ID = rf"(?:{_QUOTED}|[^\W\d]\w*|-?(?:\.\d+|\d+(?:\.\d*)?))"
_ATTR_LIST = rf'\[(?:[^\]"]*(?:{_QUOTED}[^\]"]*)*)\]'
_STATEMENT = re.compile(
    rf"""
    \s*(?:
        (?P<edge>(?P<src>{_ID})\s*->\s*(?P<dst>{_ID})\s*(?P<eattrs>{_ATTR_LIST}\s*)*)
      | (?P<node>(?P<nid>{_ID})\s*(?P<attrs>(?:{_ATTR_LIST}\s*)+))
      | (?P<open>(?:(?:strict\s+)?(?:di)?graph|subgraph)\s*(?P<gname>{_ID})?\s*\{{)
      | (?P<close>\}})
      | (?P<assign>{_ID}\s*=\s*{_ID})
      | (?P<semi>[;,])
      | (?P<bare>{_ID})
    )
    """,
    re.VERBOSE,
)
_ATTR = re.compile(rf"({_ID})\s*=\s*({_ID})")
_LABEL_ATTR = re.compile(rf"\blabel\s*=\s*({_ID})")
_SHAPE_ATTR = re.compile(rf"\bshape\s*=\s*({_ID})")
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


def _unquote(token: str) -> str:
    if token.startswith('"'):
        # DOT escapes only the quote itself; every other backslash is kept for the label
        # language (\n, \{, \<) and decoded where labels are read.
        return token[1:-1].replace('\\"', '"')
    return token


def _brief(name: str) -> str:
    """A node name as quoted in an error message: one line, at most 60 characters."""
    return repr(name if len(name) <= 60 else name[:57] + "...")


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

    def line_of(self, node_id: str) -> int:
        """Line of a node's statement, for error messages."""
        return _line_of(self.text, self.node_offset.get(node_id, 0))


def _scan(text: str, filename: str) -> _Document:
    """Split DOT text into node/edge statements per cluster; DotParseError on malformed text."""
    top = _Cluster("", None)
    clusters = {"": top}
    node_attrs: dict[str, str] = {}
    node_cluster: dict[str, str] = {}
    node_offset: dict[str, int] = {}
    stack: list[str] = []  # names of open graph/subgraph scopes ("" for anonymous)
    graph_name = None
    anonymous = 0
    pos, end = 0, len(text)
    match = _STATEMENT.match
    while True:
        m = match(text, pos)
        if m is None or m.end() == pos:
            tail = _WHITESPACE_TAIL.match(text, pos).end()
            if tail == end:
                break
            snippet = text[tail : tail + 40].split("\n")[0]
            if text.count('"', tail) % 2:
                raise _BrokenDotError(
                    f"{filename}:{_line_of(text, tail)}: unterminated string (file truncated?)"
                )
            raise DotParseError(
                f"{filename}:{_line_of(text, tail)}: unexpected text {snippet!r} "
                "(not the DOT that CUDA writes)"
            )
        pos = m.end()
        kind = m.lastgroup
        if kind is None:  # an alternation inside a group matched; find the statement type
            kind = next(
                k
                for k in ("edge", "node", "open", "close", "assign", "semi", "bare")
                if m.group(k) is not None
            )
        if kind == "edge":
            if not stack:
                raise DotParseError(f"{filename}:{_line_of(text, m.start())}: edge outside a graph")
            src, dst = m.group("src"), m.group("dst")
            if src.lower() in _DOT_KEYWORDS or dst.lower() in _DOT_KEYWORDS:
                raise DotParseError(
                    f"{filename}:{_line_of(text, m.start())}: edge to a subgraph "
                    "(not the DOT that CUDA writes)"
                )
            scope = _current_cluster(stack)
            clusters[scope].edges.append((_unquote(src), _unquote(dst)))
        elif kind == "node":
            if not stack:
                raise DotParseError(f"{filename}:{_line_of(text, m.start())}: node outside a graph")
            node_id = _unquote(m.group("nid"))
            if node_id in ("graph", "node", "edge"):
                continue  # default-attribute statements carry no node
            scope = _current_cluster(stack)
            if node_id not in node_attrs:
                clusters[scope].node_ids.append(node_id)
                node_cluster[node_id] = scope
                node_attrs[node_id] = m.group("attrs")
                node_offset[node_id] = m.start("node")
            else:
                node_attrs[node_id] += m.group("attrs")
        elif kind == "open":
            opener = m.group("open")
            name = _unquote(m.group("gname")) if m.group("gname") else ""
            if opener.startswith("subgraph"):
                if not stack:
                    raise DotParseError(f"{filename}:{_line_of(text, m.start())}: subgraph outside a graph")
                if not name:
                    anonymous += 1
                    name = f"\x00anon{anonymous}"
                parent = _current_cluster(stack)
                if name.startswith("cluster") and name not in clusters:
                    clusters[name] = _Cluster(name, parent)
                stack.append(name if name.startswith("cluster") else "\x00" + name)
            else:
                if stack:
                    raise DotParseError(f"{filename}:{_line_of(text, m.start())}: a graph inside a graph")
                if graph_name is not None or top.node_ids or len(clusters) > 1:
                    raise _BrokenDotError(
                        f"{filename}:{_line_of(text, m.start())}: more than one graph in the file"
                    )
                graph_name = name
                stack.append("")
        elif kind == "close":
            if not stack:
                raise _BrokenDotError(f"{filename}:{_line_of(text, m.start())}: unbalanced '}}'")
            stack.pop()
        elif kind in ("assign", "bare"):
            if not stack:
                raise DotParseError(
                    f"{filename}:{_line_of(text, m.start())}: unexpected text "
                    f"{m.group(kind)[:40]!r} (not a DOT graph)"
                )
            if kind == "assign":
                key, value = _ATTR.match(m.group("assign")).groups()
                if _unquote(key) == "label":
                    clusters[_current_cluster(stack)].label = _unquote(value)
            else:
                node_id = _unquote(m.group("bare"))
                if node_id not in node_attrs and node_id not in ("graph", "node", "edge"):
                    scope = _current_cluster(stack)
                    clusters[scope].node_ids.append(node_id)
                    node_cluster[node_id] = scope
                    node_attrs[node_id] = ""
    if graph_name is None:
        raise DotParseError(f"{filename}:1: no 'digraph {{ ... }}' found (not a DOT graph)")
    if stack:
        raise _BrokenDotError(
            f"{filename}:{_line_of(text, end)}: {len(stack)} unclosed '{{' at end of file (file truncated?)"
        )
    return _Document(clusters, node_attrs, node_cluster, graph_name, node_offset, text)


def _current_cluster(stack: list[str]) -> str:
    # Statements belong to the innermost enclosing *cluster* (plain subgraphs are invisible).
    for name in reversed(stack):
        if not name.startswith("\x00"):
            return name
    return ""


def _attributes(raw: str) -> dict[str, str]:
    return {_unquote(k): _unquote(v) for k, v in _ATTR.findall(raw)}


# ------------------------------------------------------------------------ entry point


def parse_dot(text: str, filename: str = "<string>", demangle: bool = True) -> GraphModel:
    """Parse DOT text: CUDA's dialect fast and in full, any other DOT generically.

    ``source`` of the result is "dot-verbose" or "dot-basic" for CUDA dumps and "dot-generic"
    otherwise (see ``is_generic``). With ``demangle``, kernel nodes whose name is mangled get
    ``params["demangled"]`` (one c++filt run for all names). Raises DotParseError.
    """
    if not isinstance(text, str):
        raise DotParseError(f"{filename}: expected text, got {type(text).__name__}")
    if not text or text.isspace():  # not text.strip(): that copies a 45 MB dump
        raise DotParseError(f"{filename}: empty file, not a DOT graph")
    if "\x00" in text:
        raise DotParseError(f"{filename}: binary content (NUL bytes), not a DOT graph")
    stripped = text.lstrip("\ufeff \t\r\n")
    if not _DOT_START.match(stripped):
        raise DotParseError(
            f"{filename}:{_line_of(text, len(text) - len(stripped))}: not a DOT graph "
            "(expected 'digraph ...')"
        )
    if "/*" in text or "//" in text or "#" in text:
        # CUDA writes no comments; strip them (outside strings) for generic DOT, keeping
        # line numbers right for error messages.
        text = _COMMENT.sub(_keep_strings_drop_comments, text)
    model = _read_cuda_layout(text)
    if model is not None:
        if demangle:
            _attach_demangled(model)
        return model
    try:
        document = _scan(text, filename)
    except _BrokenDotError:
        raise
    except DotParseError:
        if _CUDA_HINT.search(text):
            raise  # a damaged CUDA dump: our message (with its line) is the useful one
        # DOT beyond what CUDA writes (edge chains, ports, HTML labels...): pydot reads it.
        model = _parse_with_pydot(text, filename)
    else:
        if _is_cuda_dump(document):
            model = _build_cuda_model(document, filename)
        else:
            model = _build_generic_model(document)
    if demangle:
        _attach_demangled(model)
    return model


def is_generic(model: GraphModel) -> bool:
    """True when the model came from DOT that is not a CUDA graph dump (parsed generically)."""
    return model.source == "dot-generic"


def _attach_demangled(model: GraphModel) -> None:
    kernels = [n for g in model.walk() for n in g.nodes if n.kind == "kernel" and n.name]
    names = demangle_many(n.name for n in kernels)
    for node in kernels:
        if node.name in names:
            node.params["demangled"] = names[node.name]


# ------------------------------------------------------------------ CUDA's dialect
#
# What cudaGraphDebugDotPrint writes (CUDA 13, read from dumps recorded on an H200):
# * one ``subgraph cluster_N { label="graph_N" ... }`` per CUDA graph, all at the top level;
#   a child-graph node's label names its graph ("1\ngraph_21\n") — no edge leads into the
#   child's cluster;
# * basic (flags 0): line labels "K\nWORD\n(detail)\n". Kernels are octagons labelled with
#   their name; MEMSET details "(value,bytes)", MEMCPY "(DtoD,bytes)" ("UtoU": default);
# * verbose (flags 1): kernels, memsets, memcpys and batch mem ops get record labels
#   "{KERNEL | {ID | K (topoId: T) | name\<\<\<grid,block,shmem\>\>\>} | {{keys} | {values}}
#   | ...}"; EMPTY, HOST, EVENT_* and child-graph nodes keep the line form, with
#   "K (topoId: T)" first and "key: value" lines after. Edges carry [headlabel=i], the
#   position of the dependency, which the model does not need.


def _is_cuda_dump(document: _Document) -> bool:
    """CUDA's writer puts every node, named graph_N_node_K, inside a cluster_N."""
    if not document.node_cluster:
        return document.graph_name == "dot" and len(document.clusters) > 1
    return all(cluster and _CUDA_NODE_ID.match(node_id) for node_id, cluster in document.node_cluster.items())


# Escapes of the record-label language, mapped to plain text; braces and bars that are text
# (launch dims "\{8,4,4\}") become private placeholders so structure is found by splitting.
_ESCAPES = (
    ("\\{", "\x01"),
    ("\\}", "\x02"),
    ("\\|", "\x03"),
    ("\\<", "<"),
    ("\\>", ">"),
    ("\\n", "\n"),
    ("\\l", "\n"),
    ("\\r", "\n"),
)
_RECORD_SPLIT = re.compile(r"([{}|])")
_ID_TOPO = re.compile(r"^(\d+)(?:\s*\(topoId:\s*(\d+)\))?$")
_LAUNCH = re.compile(r"^(?P<name>.*?)<<<(?P<dims>.*)>>>$", re.DOTALL)
_DIM = re.compile(r"\x01[^\x02]*\x02|[^,\x01]+")
_CHILD_GRAPH_REF = re.compile(r"^graph_\d+$")
_BASIC_DETAIL = re.compile(r"^\((.*)\)$")
_KEY_VALUE_LINE = re.compile(r"^([A-Za-z_][\w ]*?)\s*:\s*(.*)$")
_LONG_HEX = re.compile(r"^0x[0-9a-fA-F]{9,}$")
_SHORT_HEX = re.compile(r"^0x[0-9a-fA-F]{1,8}$")
_INT = re.compile(r"^-?\d+$")
_FLOAT = re.compile(r"^-?\d+\.\d*(?:e[-+]?\d+)?$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

# CUDA's word for a node type (upper case, words joined by "_") -> model kind.
_RECORD_KINDS = {
    "KERNEL": "kernel",
    "MEMCPY": "memcpy",
    "MEMSET": "memset",
    "HOST": "host",
    "EVENT_RECORD": "event_record",
    "RECORD_EVENT": "event_record",
    "EVENT_WAIT": "event_wait",
    "WAIT_EVENT": "event_wait",
    "MEM_ALLOC": "mem_alloc",
    "MEM_FREE": "mem_free",
    "EMPTY": "empty",
    "CHILD_GRAPH": "graph",
    "GRAPH": "graph",
    "CONDITIONAL": "conditional",
    "EXT_SEMAS_SIGNAL": "ext_semas_signal",
    "EXTERNAL_SEMAPHORE_SIGNAL": "ext_semas_signal",
    "EXT_SEMAS_WAIT": "ext_semas_wait",
    "EXTERNAL_SEMAPHORE_WAIT": "ext_semas_wait",
    "BATCH_MEM_OP": "batch_mem_op",
    "BATCH_MEMOP": "batch_mem_op",
}

# Memcpy directions as CUDA prints them (verbose "DtoD (DEVICE to DEVICE)", basic "DtoD").
_MEMCPY_DIRECTIONS = {
    "HtoH": "HtoH",
    "HtoD": "HtoD",
    "DtoH": "DtoH",
    "DtoD": "DtoD",
    "default": "default",
    "UtoU": "default",  # basic form of cudaMemcpyDefault (unified addressing)
}

# CUDA's field paths (snake_case, joined by "_") -> our parameter names. Pointers and
# handles are then prefixed ptr_/handle_ by _param_key.
_RENAMES = {
    "node_handle": "node",
    "func_handle": "func",
    "src_ptr_ptr": "src",
    "dst_ptr_ptr": "dst",
    "src_ptr_pitch": "src_pitch",
    "src_ptr_xsize": "src_xsize",
    "src_ptr_ysize": "src_ysize",
    "dst_ptr_pitch": "dst_pitch",
    "dst_ptr_xsize": "dst_xsize",
    "dst_ptr_ysize": "dst_ysize",
    "access_policy_window_base_ptr": "access_policy_window_base",
}
_HANDLE_KEYS = ("node", "func", "event", "graph", "stream", "exec", "handle")


def _kind_of_word(word: str) -> str | None:
    return _RECORD_KINDS.get("_".join(word.upper().replace("_", " ").split()))


def _decode_label(label: str) -> str:
    for escaped, plain in _ESCAPES:
        if escaped in label:
            label = label.replace(escaped, plain)
    return label


def _value(text: str):
    """A field's text as a value: int/float when numeric (short hex too), else the text."""
    text = text.strip().replace("\x01", "{").replace("\x02", "}").replace("\x03", "|")
    if _INT.match(text):
        return int(text)
    if _SHORT_HEX.match(text):
        return int(text, 16)  # flags and small values ("0x00000005"), not addresses
    if _FLOAT.match(text):
        return float(text)
    return text


@functools.lru_cache(maxsize=4096)
def _param_key(path: tuple, unstable: bool) -> str:
    """snake_case key for a CUDA field path; addresses/handles get ptr_/handle_ prefixes.

    Cached: a dump repeats the same few dozen field names on every node.
    """
    name = "_".join(_CAMEL.sub("_", part.strip()).lower() for part in path if part.strip())
    name = re.sub(r"[^a-z0-9]+", "_", name).strip("_")
    name = _RENAMES.get(name, name)
    if "handle" in name:
        return "handle_" + name.replace("_handle", "").replace("handle_", "").strip("_")
    if unstable:
        return ("handle_" if name in _HANDLE_KEYS else "ptr_") + name
    return name


def _add_field(params: dict, path: tuple, raw: str) -> None:
    value = _value(raw)
    unstable = isinstance(value, str) and bool(_LONG_HEX.match(value))
    params[_param_key(path, unstable)] = value


@dataclass
class _Label:
    """What one node label says, before kind-specific normalisation."""

    kind: str
    name: str | None = None
    topo_id: int | None = None
    params: dict = field(default_factory=dict)


def _parse_label(label: str, shape: str) -> _Label:
    """Parse one node label (record or line form) of either dump flavour."""
    text = _decode_label(label).strip()
    if text.startswith("{"):
        return _parse_record_label(text)
    return _parse_line_label(text, shape)


def _parse_line_label(text: str, shape: str) -> _Label:
    """Line labels: the index (and topoId), the type word, then "(detail)" or "key: value"
    lines. Used by basic dumps and by verbose EMPTY/HOST/EVENT/child-graph nodes."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    topo_id = None
    if lines:
        head = _ID_TOPO.match(lines[0])
        if head:
            topo_id = int(head.group(2)) if head.group(2) else None
            lines = lines[1:]
    word = lines[0] if lines else ""
    rest = lines[1:]
    params: dict = {}
    name = None
    if shape == "octagon" and word:
        kind, name = "kernel", word  # CUDA draws kernels, and only kernels, as octagons
        launch = _LAUNCH.match(word)
        if launch:
            name = launch.group("name").strip()
            params.update(_launch_params(launch.group("dims")))
    elif _kind_of_word(word):
        kind = _kind_of_word(word)
    elif _CHILD_GRAPH_REF.match(word):
        kind = "graph"
        params["handle_child_graph"] = word  # names the cluster labelled "graph_N"
    else:
        kind = "unknown"
        if word:
            params["cuda_type"] = word
    for line in rest:
        detail = _BASIC_DETAIL.match(line)
        if detail:
            _basic_detail(kind, detail.group(1), params)
            continue
        pair = _KEY_VALUE_LINE.match(line)
        if pair:
            _add_field(params, (pair.group(1),), pair.group(2))
    return _Label(kind, name, topo_id, params)


def _basic_detail(kind: str, detail: str, params: dict) -> None:
    """The "(…)" line of basic labels: MEMSET (value,bytes), MEMCPY (direction,bytes)."""
    parts = [p.strip() for p in detail.split(",")]
    if kind == "memset" and len(parts) == 2 and all(_INT.match(p) for p in parts):
        params["value"], params["bytes"] = int(parts[0]), int(parts[1])
    elif kind == "memcpy" and len(parts) == 2 and _INT.match(parts[1]):
        params["direction"] = _MEMCPY_DIRECTIONS.get(parts[0], parts[0])
        params["bytes"] = int(parts[1])
    elif kind == "mem_alloc" and len(parts) == 1 and _INT.match(parts[0]):
        params["bytes"] = int(parts[0])
    else:
        params["detail"] = detail


def _record_tree(text: str) -> list:
    """Nested lists of the fields of a record label ("{a | {b | c}}" -> [["a", ["b", "c"]]])."""
    root: list = []
    stack = [root]
    pending: list[str] = []  # text of the field being read
    had_group = False  # the field being read is a {...} group (no text leaf to add)
    for token in _RECORD_SPLIT.split(text):
        if token == "{":
            stack.append([])
            pending, had_group = [], False
        elif token in ("|", "}"):
            leaf = "".join(pending).strip()
            if leaf or not had_group:
                stack[-1].append(leaf)
            pending, had_group = [], False
            if token == "}":
                if len(stack) == 1:
                    raise ValueError("unbalanced '}' in record label")
                group = stack.pop()
                stack[-1].append(group)
                had_group = True
        else:
            pending.append(token)
    if len(stack) != 1:
        raise ValueError("unclosed '{' in record label")
    return root


def _leaves(item) -> bool:
    return isinstance(item, list) and all(isinstance(x, str) for x in item)


def _key_paths(item, prefix: tuple) -> list[tuple]:
    """Keys of a table header: "a" -> [(a,)], [a, b] -> [(a,), (b,)], [n, [a, b]] -> [(n, a),
    (n, b)] (a named group of keys)."""
    if isinstance(item, str):
        return [prefix + (item,)]
    if len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], list):
        return _key_paths(item[1], prefix + (item[0],))
    paths = []
    for sub in item:
        paths.extend(_key_paths(sub, prefix))
    return paths


def _record_fields(item, prefix: tuple, out: _Label) -> None:
    """Walk one field of a record and collect (path -> value) pairs into ``out.params``."""
    if isinstance(item, str) or not item:
        return
    if _leaves(item) and item[0] == "ID":
        _record_header(item[1:], out)
        return
    if len(item) == 2 and _leaves(item):
        _record_value(prefix + (item[0],), item[1], out)
        return
    if len(item) >= 2 and _leaves(item[-1]):
        values = item[-1]
        head = item[:-1]
        keys = None
        # {name | {k1 | k2} | {v1 | v2}}: a named table.
        if len(head) == 2 and isinstance(head[0], str) and _leaves(head[1]):
            keys = [prefix + (head[0], k) for k in head[1]]
        # {{src | dst} | {k1 | k2 | k1 | k2} | {v...}}: one group of keys per name.
        elif len(head) == 2 and _leaves(head[0]) and _leaves(head[1]) and head[0]:
            per = len(head[1]) // len(head[0])
            if per * len(head[0]) == len(head[1]):
                keys = [prefix + (head[0][i // per], k) for i, k in enumerate(head[1])]
        if keys is None or len(keys) != len(values):
            keys = _key_paths(head, prefix)
        if len(keys) == len(values):
            for key, value in zip(keys, values):
                _record_value(key, value, out)
            return
    if len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], list):
        # {srcPos | {{x | 0} | {y | 0}}}: a named sub-record.
        for sub in item[1]:
            _record_fields(sub, prefix + (item[0],), out)
        return
    for sub in item:
        _record_fields(sub, prefix, out)


def _record_value(path: tuple, raw: str, out: _Label) -> None:
    if path == ("ID",):
        head = _ID_TOPO.match(raw.strip())
        if head:
            out.topo_id = int(head.group(2)) if head.group(2) else out.topo_id
            return
    _add_field(out.params, path, raw)


def _record_header(cells: list[str], out: _Label) -> None:
    """{ID | K (topoId: T) | name<<<grid,block,shmem>>>}: the kernel header."""
    for cell in cells:
        head = _ID_TOPO.match(cell)
        if head:
            out.topo_id = int(head.group(2)) if head.group(2) else out.topo_id
            continue
        launch = _LAUNCH.match(cell)
        if launch:
            out.name = launch.group("name").strip()
            out.params.update(_launch_params(launch.group("dims")))
        elif cell:
            out.name = cell


def _parse_record_label(text: str) -> _Label:
    tree = _record_tree(text)
    fields = tree[0] if len(tree) == 1 and isinstance(tree[0], list) else tree
    word = fields[0] if fields and isinstance(fields[0], str) else ""
    kind = _kind_of_word(word) or "unknown"
    out = _Label(kind)
    if kind == "unknown":
        out.params["cuda_type"] = " ".join(word.split())
    for item in fields[1:]:
        _record_fields(item, (), out)
    if kind != "kernel":
        out.name = None
    if kind == "conditional":
        _conditional_bodies(out.params)
    return out


def _conditional_bodies(params: dict) -> None:
    """A conditional node names its body graphs in rows like "{True|graph_12}" (IF; "False"
    for the else branch). Graph numbers differ between captures, so the references become
    handles: handle_body_<row> for each, and handle_child_graph for the first, which
    _attach_children makes the node's child."""
    bodies = [(key, value) for key, value in params.items()
              if isinstance(value, str) and _CHILD_GRAPH_REF.match(value)]
    for key, value in bodies:
        del params[key]
        params[f"handle_body_{key}"] = value
    if bodies:
        params["handle_child_graph"] = bodies[0][1]


def _dims(text: str) -> tuple[int, int, int] | None:
    """'{8,4,4}' or '8' or '{32,4}' -> a 3-tuple, missing components 1."""
    text = text.strip()
    if text.startswith("\x01") and text.endswith("\x02"):
        text = text[1:-1]
    try:
        parts = [int(p) for p in text.split(",")]
    except ValueError:
        return None
    if not 1 <= len(parts) <= 3:
        return None
    return tuple(parts + [1] * (3 - len(parts)))  # type: ignore[return-value]


def _launch_params(launch: str) -> dict:
    """'grid,block,shmem' (grid/block possibly '{x,y,z}') -> grid, block, shared_mem."""
    pieces = _DIM.findall(launch)
    params: dict = {}
    if len(pieces) >= 1 and (grid := _dims(pieces[0])):
        params["grid"] = grid
    if len(pieces) >= 2 and (block := _dims(pieces[1])):
        params["block"] = block
    if len(pieces) >= 3 and _INT.match(pieces[2].strip()):
        params["shared_mem"] = int(pieces[2])
    return params


def _normalise(kind: str, params: dict) -> None:
    """Derive the model's fixed keys (direction, bytes) from CUDA's fields."""
    if kind == "memcpy":
        raw_kind = params.pop("kind", None)
        if isinstance(raw_kind, str):
            # "DtoD (DEVICE to DEVICE)": the requested kind, then the memory types CUDA saw.
            word, _, types = raw_kind.partition("(")
            params["direction"] = _MEMCPY_DIRECTIONS.get(word.strip(), word.strip())
            if types.rstrip(")").strip():
                params["memory_types"] = types.rstrip(")").strip()
        if "bytes" not in params:
            extent = [params.get(f"extent_{d}") for d in ("width", "height", "depth")]
            if all(isinstance(e, int) for e in extent):
                params["bytes"] = extent[0] * extent[1] * extent[2]
    elif kind == "memset":
        if "bytes" not in params:
            sizes = [params.get(k) for k in ("element_size", "width", "height")]
            if all(isinstance(x, int) for x in sizes):
                params["bytes"] = sizes[0] * sizes[1] * sizes[2]
    elif kind == "mem_alloc" and "bytes" not in params:
        for key in ("bytesize", "byte_size", "size", "bytes_size"):
            if isinstance(params.get(key), int):
                params["bytes"] = params[key]
                break


# Every run of digits (and every hex literal) in a label; what is left is its *template*.
_NUMBER_TOKEN = re.compile(r"(0x[0-9A-Fa-f]+|-?\d+(?:\.\d+)?)")
_SENTINEL = re.compile(r"0x5E471E[0-9A-F]{10}|0x5E[0-9A-F]{6}|-?7350\d{7}(?:\.25)?")


def _sentinel(index: int, token: str) -> str:
    """A unique stand-in for the index-th number of a label, of the same lexical class."""
    if token.startswith("0x"):
        return f"0x5E471E{index:010X}" if len(token) > 10 else f"0x5E{index:06X}"
    sign = "-" if token.startswith("-") else ""
    return f"{sign}7350{index:07d}" + (".25" if "." in token else "")


def _token_value(token: str):
    """What _value makes of a label consisting of this one number token."""
    if token.startswith("0x"):
        return token if len(token) > 10 else int(token, 16)
    return float(token) if "." in token else int(token)


_CONST, _TOKEN, _FORMAT, _TUPLE = range(4)


def _field_value(how: int, arg, tokens) -> object:
    """One parameter of a label from its numbers, as a recipe field says."""
    if how == _TOKEN:
        return _token_value(tokens[arg])
    if how == _CONST:
        return arg
    if how == _FORMAT:
        return arg.format(*tokens)
    return tuple(int(tokens[i]) if isinstance(i, int) else i[0] for i in arg)


def _format_fields(text: str) -> list[int]:
    """The token indices a recipe's format string ("cupy_add__float{2}") uses."""
    return [int(name) for _, name, _, _ in string.Formatter().parse(text) if name]


class _Recipe:
    """How the labels of one template become a node: kind, name, topoId and fields.

    ``fields`` holds (key, how, arg) in label order: ``_TOKEN`` (the arg-th number),
    ``_CONST`` (arg itself), ``_FORMAT`` (arg.format(*numbers)), ``_TUPLE`` (launch dims).
    The name and the stable fields (everything but ptr_/handle_) depend on a few numbers that
    repeat from node to node (grid, block, sizes), so they are computed once per distinct
    combination of those numbers and copied; only pointers and handles are read per node.
    """

    # Distinct combinations kept per template; past that, each node is computed in full.
    MEMO_MAX = 4096

    def __init__(self, kind: str, name: str | None, topo: int | None, fields: tuple):
        self.kind, self.name, self.topo, self.fields = kind, name, topo, fields
        per_node = [f for f in fields if not is_stable_param(f[0])]
        self.per_node_tokens = tuple((key, arg) for key, how, arg in per_node if how == _TOKEN)
        self.per_node = tuple(f for f in per_node if f[1] != _TOKEN)
        self.last_tokens: list = [None] * len(self.per_node_tokens)
        used: set[int] = set(_format_fields(name)) if name is not None else set()
        for key, how, arg in fields:
            if not is_stable_param(key):
                continue
            if how == _TOKEN:
                used.add(arg)
            elif how == _FORMAT:
                used.update(_format_fields(arg))
            elif how == _TUPLE:
                used.update(i for i in arg if isinstance(i, int))
        self.numbers_used = operator.itemgetter(*sorted(used)) if used else lambda _tokens: ()
        self.memo: dict = {}

    def fill(self, tokens) -> tuple[dict, str | None]:
        """A new params dict and the name for a label with these number tokens."""
        numbers = self.numbers_used(tokens)
        shared = self.memo.get(numbers)
        if shared is None:
            shared = self._shared(tokens)
            if len(self.memo) < self.MEMO_MAX:
                self.memo[numbers] = shared
        params = shared[0].copy()
        last = self.last_tokens
        for slot, (key, index) in enumerate(self.per_node_tokens):
            token = tokens[index]
            if token == last[slot]:
                token = last[slot]  # one string for an address that repeats (a kernel's function)
            else:
                last[slot] = token
            # _token_value inlined for the usual case, an address: kept as written
            params[key] = token if len(token) > 10 and token.startswith("0x") else _token_value(token)
        for key, how, arg in self.per_node:
            params[key] = _field_value(how, arg, tokens)
        return params, shared[1]

    def _shared(self, tokens) -> tuple[dict, str | None]:
        # Pointer/handle keys hold their place (None) so that filling them per node keeps
        # the key order of the label; _normalise reads and derives stable keys only.
        params = {
            key: _field_value(how, arg, tokens) if is_stable_param(key) else None
            for key, how, arg in self.fields
        }
        _normalise(self.kind, params)
        return params, self.name.format(*tokens) if self.name is not None else None


class _LabelTemplates:
    """Labels parsed once per *template*, then filled in per node.

    A 10,000-node dump repeats a few label shapes that differ only in numbers (ids, handles,
    topoIds). Each distinct template (shape + the label with its numbers cut out) is parsed
    once, with every number replaced by a unique sentinel; where the sentinels land in the
    parsed label is kept as a recipe. Later labels of that template pour their numbers into
    the recipe. The tests check that this gives exactly what parsing each label directly
    gives, on every recorded dump.
    """

    # How many recently used templates to try before tokenizing a label from scratch:
    # consecutive nodes mostly share a template (a chain alternates a few kernels).
    RECENT = 4

    def __init__(self):
        self.recipes: dict[tuple, _Recipe | None] = {}
        self.recent: dict[str, list[tuple[re.Pattern, _Recipe]]] = {}

    def node(self, node_id: str, label: str, shape: str) -> Node:
        """The Node for one label, via its template's recipe when it has one."""
        recipe = tokens = None
        recent = self.recent.get(shape)
        if recent is None:
            recent = self.recent[shape] = []
        for matcher, known in recent:
            m = matcher.fullmatch(label)
            if m is not None:
                recipe, tokens = known, m.groups()
                break
        if tokens is None:
            parts = _NUMBER_TOKEN.split(label)
            tokens = parts[1::2]
            template = tuple(parts[0::2])
            recipe = self.recipes.get((shape, template), False)
            if recipe is False:
                recipe = self.recipes[(shape, template)] = self._recipe(parts, shape)
                self._remember(recent, template, recipe)
        if recipe is None:  # a shape the recipe cannot express: parse directly
            return _node_from_label(node_id, label, shape)
        params, name = recipe.fill(tokens)
        topo = recipe.topo
        return Node(node_id, recipe.kind, name, params, None, int(tokens[topo]) if topo is not None else None)

    def _remember(self, recent: list, template: tuple, recipe: _Recipe | None) -> None:
        # A matcher is the template with a number group in each gap. Only for templates whose
        # numbers are all separated by text, so that matching splits a label exactly as
        # _NUMBER_TOKEN.split does.
        if recipe is None or any(not part for part in template[1:-1]):
            return
        group = "(" + _NUMBER_TOKEN.pattern[1:-1] + ")"
        matcher = re.compile(group.join(re.escape(part) for part in template))
        recent.insert(0, (matcher, recipe))
        del recent[self.RECENT :]

    @staticmethod
    def _recipe(parts: list[str], shape: str):
        marked = list(parts)
        sentinels: dict = {}
        for i in range(1, len(parts), 2):
            marked[i] = _sentinel(i // 2, parts[i])
            sentinels[_token_value(marked[i])] = i // 2
        try:
            parsed = _parse_label("".join(marked), shape)
        except Exception:  # noqa: BLE001 - any surprise here just means: parse directly
            return None

        def formatted(text: str) -> str:
            out = []
            pieces = _SENTINEL.split(text)
            found = _SENTINEL.findall(text)
            for k, piece in enumerate(pieces):
                out.append(piece.replace("{", "{{").replace("}", "}}"))
                if k < len(found):
                    out.append(f"{{{sentinels[_token_value(found[k])]}}}")
            return "".join(out)

        try:
            fields = []
            for key, value in parsed.params.items():
                if _SENTINEL.search(key):
                    return None  # a number inside a field name ("paramArray[0]")
                if isinstance(value, tuple):
                    fields.append((key, _TUPLE, tuple(sentinels.get(v, (v,)) for v in value)))
                elif isinstance(value, bool) or not isinstance(value, (int, float, str)):
                    fields.append((key, _CONST, value))
                elif value in sentinels:
                    fields.append((key, _TOKEN, sentinels[value]))
                elif isinstance(value, str) and _SENTINEL.search(value):
                    fields.append((key, _FORMAT, formatted(value)))
                elif isinstance(value, (int, float)):
                    return None  # a number that is no token: computed, so not expressible
                else:
                    fields.append((key, _CONST, value))
            topo = None
            if parsed.topo_id is not None:
                topo = sentinels[parsed.topo_id]
            name = formatted(parsed.name) if parsed.name is not None else None
        except (KeyError, TypeError, ValueError):
            return None
        return _Recipe(parsed.kind, name, topo, tuple(fields))


def _node_from_label(node_id: str, label: str, shape: str) -> Node:
    """Parse one label directly (the reference path; see _LabelTemplates)."""
    parsed = _parse_label(label, shape)
    _normalise(parsed.kind, parsed.params)
    return Node(node_id, parsed.kind, parsed.name, parsed.params, topo_id=parsed.topo_id)


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
    verbose = any(node.topo_id is not None for graph in graphs.values() for node in graph.nodes)
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


# The statements of cudaGraphDebugDotPrint exactly as it writes them (see the notes on
# CUDA's dialect above), one alternative each: the head of a node statement up to its label,
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


# ------------------------------------------------------------------------ generic DOT


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
    return GraphModel(nodes=nodes, edges=edges, source="dot-generic")


def _generic_node(node_id: str, raw_label: str | None) -> Node:
    label = " ".join(_decode_label(raw_label).split()) if raw_label else ""
    params = {"label": label} if label and label != node_id else {}
    return Node(id=node_id, kind="unknown", name=label or node_id, params=params)


_PYDOT_WHERE = re.compile(r"\(line:(\d+), col:(\d+)\)")


def _parse_with_pydot(text: str, filename: str) -> GraphModel:
    """The fallback for DOT beyond CUDA's dialect: pydot (slow, complete) reads it."""
    messages = io.StringIO()
    with warnings.catch_warnings():
        # pydot still calls pyparsing's deprecated camelCase API; not the user's concern.
        warnings.simplefilter("ignore", DeprecationWarning)
        import pydot  # imported here: slow to import, and never needed for CUDA dumps

        try:
            # pydot prints parse errors instead of raising; capture them for our message.
            with contextlib.redirect_stdout(messages):
                graphs = pydot.graph_from_dot_data(text)
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
    graph = graphs[0]
    nodes: list[Node] = []
    seen: set[str] = set()
    edges: list[tuple[str, str]] = []

    def clean(name: str) -> str:
        name = str(name)
        if name.startswith('"') and name.endswith('"') and len(name) >= 2:
            return name[1:-1].replace('\\"', '"')
        return name.split(":")[0]  # drop a port

    def add(name: str, label: str | None = None) -> None:
        if name not in seen and name not in ("node", "edge", "graph"):
            seen.add(name)
            nodes.append(_generic_node(name, label))

    def endpoints(end) -> list[str]:
        if isinstance(end, str):
            return [clean(end)]
        # An edge to "{a b}": pydot hands over the anonymous subgraph as a dict.
        return [clean(n) for n in getattr(end, "get", lambda k, d=None: d)("nodes", {}) or {}]

    def visit(g) -> None:
        for node in g.get_nodes():
            label = node.get_attributes().get("label")
            if isinstance(label, str) and label.startswith('"') and label.endswith('"'):
                label = label[1:-1]
            add(clean(node.get_name()), label)
        for edge in g.get_edges():
            for src in endpoints(edge.get_source()):
                for dst in endpoints(edge.get_destination()):
                    add(src)
                    add(dst)
                    edges.append((src, dst))
        for sub in g.get_subgraphs():
            visit(sub)

    visit(graph)
    return GraphModel(nodes=nodes, edges=edges, source="dot-generic")
