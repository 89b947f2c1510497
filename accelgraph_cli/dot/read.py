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

from ..model.graph_model import GraphModel
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


def read_graph(path: str) -> LoadedGraph:
    """Read ``path`` (``-``: standard input) as load_model does; ModelLoadError otherwise.

    The input is read once, so a pipe or FIFO works as a file does."""
    if path == STDIN:
        name = "<stdin>"
        data = read_stream_bytes(sys.stdin.buffer, name)
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
