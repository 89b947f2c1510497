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

The work is split by job: load.py reads files (gzip, JSON or DOT), layout.py reads CUDA's exact
layout in one pass, scan.py is the general DOT scanner behind everything else, labels.py parses
one node label, templates.py reuses that once per label shape, cuda.py and generic.py build the
models. This module is the entry point and keeps the names other code imports from it.
"""

from __future__ import annotations

from ..model.demangle import demangle_many
from ..model.graph_model import GraphModel
from .cuda import _build_cuda_model, _is_cuda_dump
from .errors import DotParseError, _BrokenDotError
from .generic import _build_generic_model, _parse_with_pydot
from .labels import _node_from_label as _node_from_label  # re-exported: the tests compare paths
from .layout import _read_cuda_layout
from .load import decode_text, load_model, load_model_bytes
from .scan import _COMMENT, _CUDA_HINT, _DOT_START, _keep_strings_drop_comments, _line_of, _scan
from .scan import _LABEL_ATTR as _LABEL_ATTR  # re-exported with _unquote, for the same tests
from .scan import _unquote as _unquote

# The names the CLI, the bench and the tests import from here (load_model lives in load.py).
__all__ = ["DotParseError", "decode_text", "is_generic", "load_model", "load_model_bytes", "parse_dot"]

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
    if text.startswith("\ufeff"):  # text read without utf-8-sig; load_model drops it itself
        text = text[1:]
    if ("/" in text and ("/*" in text or "//" in text)) or "#" in text:  # one char is 10x faster
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
    graphs = list(model.walk())
    # A set first: 100,000 kernels of a chain have a handful of names.
    names = demangle_many({n.name for g in graphs for n in g.nodes if n.kind == "kernel" and n.name})
    if names:
        for graph in graphs:
            for node in graph.nodes:
                if node.kind == "kernel" and node.name in names:
                    node.params["demangled"] = names[node.name]
