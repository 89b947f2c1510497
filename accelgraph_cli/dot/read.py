"""Reading a graph the way `show` and `diff` take it: a path or `-` (stdin), and what it was.

``load_model`` (dot/load.py, imported here from dot/parse.py) turns bytes into a GraphModel;
this module adds what a reader of the output needs to be told: that the file held a saved JSON
model rather than a dump, or that its DOT was undirected (``graph { a -- b }``), which
accelgraph draws in the order written.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from ..model.graph_model import GraphModel, ModelLoadError
from .load import decode_text, model_from_text, read_file_bytes, read_stream_bytes

STDIN = "-"

# DOT keywords are case-insensitive; comments before the keyword are rare but legal.
_UNDIRECTED = re.compile(r"^(?:\s|//[^\n]*\n|/\*.*?\*/|#[^\n]*\n)*(?:strict\s+)?graph\b",
                         re.IGNORECASE | re.DOTALL)
_HEAD_BYTES = 4096


@dataclass
class LoadedGraph:
    """A graph read from a file or stdin, with what the file was."""

    model: GraphModel
    name: str  # the path, or "<stdin>"
    saved_model: bool  # an accelgraph JSON model, not a dump
    undirected: bool  # DOT written as `graph { a -- b }`


def _read_stdin(name: str) -> bytes:
    """Standard input's bytes; ModelLoadError when there is none to read (started with
    ``<&-``) or it cannot be read (opened write-only: ``0>file``)."""
    stdin = sys.stdin
    if stdin is None:
        raise ModelLoadError(f"{name}: cannot read standard input: it is closed")
    try:
        return read_stream_bytes(stdin.buffer, name)
    except OSError as exc:
        raise ModelLoadError(f"{name}: cannot read standard input: "
                             f"{exc.strerror or type(exc).__name__}") from None


def read_graph(path: str) -> LoadedGraph:
    """Read ``path`` (``-``: standard input) as load_model does; ModelLoadError otherwise.

    The input is read once, so a pipe or FIFO works as a file does."""
    if path == STDIN:
        name = "<stdin>"
        data = _read_stdin(name)
    else:
        name = path
        data = read_file_bytes(path)
    head = data[:_HEAD_BYTES]
    text = decode_text(data, name)
    del data  # as load_model does: the model is built without the bytes held
    model = model_from_text(text, name)
    del text
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    saved_model = text.lstrip().startswith(("{", "["))
    undirected = not saved_model and _UNDIRECTED.match(text) is not None
    return LoadedGraph(model, name, saved_model, undirected)
