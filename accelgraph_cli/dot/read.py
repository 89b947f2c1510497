"""Reading a graph the way `show` and `diff` take it: a path or `-` (stdin), and what it was.

``load_model`` (dot/load.py, imported here from dot/parse.py) turns bytes into a GraphModel;
this module adds what a reader of the output needs to be told: that the file held a saved JSON
model rather than a dump, or that its DOT was undirected (``graph { a -- b }``), which
accelgraph draws in the order written.
"""

from __future__ import annotations

import gzip
import re
import sys
import zlib
from dataclasses import dataclass

from ..model.graph_model import GraphModel
from .parse import DotParseError, load_model, load_model_bytes

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
    """Read ``path`` (``-``: standard input) as load_model does; ModelLoadError otherwise."""
    if path == STDIN:
        name = "<stdin>"
        data = sys.stdin.buffer.read()
        if data.startswith(b"\x1f\x8b"):
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError, zlib.error) as problem:
                raise DotParseError(f"{name}: damaged gzip data ({problem})") from None
        model = load_model_bytes(data, filename=name)
        head = data[:_HEAD_BYTES]
    else:
        name = path
        model = load_model(path)
        head = _head(path)
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    saved_model = text.lstrip().startswith(("{", "["))
    undirected = not saved_model and _UNDIRECTED.match(text) is not None
    return LoadedGraph(model, name, saved_model, undirected)


def _head(path: str) -> bytes:
    with open(path, "rb") as handle:
        head = handle.read(_HEAD_BYTES)
    if head.startswith(b"\x1f\x8b"):
        with gzip.open(path, "rb") as handle:
            head = handle.read(_HEAD_BYTES)
    return head
