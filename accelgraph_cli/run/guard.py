"""What a capture must prove before accelgraph trusts it, and what it says when it cannot.

Two failures a capture can hide, both of which once made ``replay`` report a large speedup and
"check: ok" for a graph that did nothing:

* **Stray work**: part of the step ran eagerly during capture, outside the graph (work on a
  side stream never joined to the capturing one, or a library that launches on a stream of
  its own). The snapshot (``snapshot.StateSnapshot``) sees it as state that changed during a
  capture, which runs nothing, and the execution watch (``cuda.cupti.watch``, where CUPTI is
  available) as work the device ran while capturing, whatever it wrote.
  :func:`stray_work_message` names what changed or ran, the scenario lines that launched work
  off the capturing stream, and the fix.
* **An empty graph**: nothing the step enqueued reached the capturing stream.
  :func:`empty_graph_message` lists the likely causes, naming torch when the file imports it.

Pure Python: the line tracer is given a function that reads the current stream, so this module
imports no CUDA library and is tested without a GPU.
"""

from __future__ import annotations

import ast
import collections
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

FIX_STRAY = (
    "launch on the current stream, or fork/join the side stream with events so the capture "
    "includes it (side.wait_event(origin.record()) before the side work, "
    "origin.wait_event(side.record()) after it)"
)
EXPECT_EMPTY_HINT = "if the step is meant to record nothing, set EXPECT_EMPTY = True in the scenario"


@contextmanager
def trace_off_stream_lines(path: str | os.PathLike, capture_stream: int,
                           current_streams: Callable[[], list[int]]) -> Iterator[list[int]]:
    """Record the lines of ``path`` that run while a current stream is not ``capture_stream``.

    ``current_streams()`` returns the handles of the streams that libraries in use would launch
    on now (CuPy's current stream; torch's when torch is loaded). Yields the list the lines go
    into, in first-run order. Line tracing is slow: this is for diagnosing a failed capture,
    not for every capture.
    """
    target = _same_file_key(path)
    lines: list[int] = []
    keys: dict[str, bool] = {}

    def in_scenario(filename: str) -> bool:
        hit = keys.get(filename)
        if hit is None:
            hit = keys[filename] = _same_file_key(filename) == target
        return hit

    def local(frame, event, arg):
        if event == "line" and any(s != capture_stream for s in current_streams()):
            if frame.f_lineno not in lines:
                lines.append(frame.f_lineno)
        return local

    def global_trace(frame, event, arg):
        return local if in_scenario(frame.f_code.co_filename) else None

    previous = sys.gettrace()
    sys.settrace(global_trace)
    try:
        yield lines
    finally:
        sys.settrace(previous)


def _same_file_key(path: str | os.PathLike) -> str:
    try:
        return str(Path(path).resolve())
    except OSError:
        return str(path)


def stream_lines(source: str, function: str) -> list[int]:
    """Lines of ``function`` (a top-level def) that mention a stream: ``with <...stream...>:``,
    ``.use()``, ``Stream(...)``, ``torch.cuda.stream(...)``. The static fallback when tracing
    found no line (a library's own stream is invisible to it)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found: list[int] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            for inner in ast.walk(node):
                text = ""
                if isinstance(inner, ast.With):
                    text = " ".join(ast.unparse(item.context_expr) for item in inner.items)
                elif isinstance(inner, ast.Call):
                    text = ast.unparse(inner.func)
                lowered = text.lower()
                if "stream" in lowered or lowered.endswith(".use"):
                    found.append(inner.lineno)
    return sorted(set(found))


def _first(items: list[str], limit: int) -> str:
    """The first ``limit`` items, joined, and how many more there are."""
    more = len(items) - limit
    return ", ".join(items[:limit]) + (f" and {more} more" if more > 0 else "")


def stray_work_message(graph_name: str, changed: list[str], where: list[str],
                       imports: frozenset[str] | set[str] = frozenset(), backend: str = "cupy",
                       executed: list[str] | tuple[str, ...] = ()) -> str:
    """One line: the capture of ``graph_name`` ran work outside the graph, seen as state that
    changed (``changed``: paths) and as work the device ran while capturing (``executed``:
    descriptions, as the execution watch gives them); where the work came from."""
    seen = []
    if changed:
        seen.append(f"{_first(changed, 4)} changed while capturing")
    if executed:
        counts = collections.Counter(executed)  # (in first-seen order)
        shown = _first([f"{item}{f' (x{n})' if n > 1 else ''}" for item, n in counts.items()], 3)
        seen.append(f"the GPU ran {len(executed)} operation(s) while capturing ({shown})")
    if where:
        source = f"work launched off the capturing stream at {', '.join(where[:4])}"
        if "torch" in imports and backend != "torch":
            source += " (torch launches on its own current stream, not CuPy's capturing one)"
    else:
        source = ("no line of the scenario launched on another stream, so a library it calls "
                  "launches on a stream of its own")
    return (
        f"capture of {graph_name!r} ran work outside the graph: {' and '.join(seen)}, "
        f"and a capture only records work; {source} ran eagerly and is missing from the graph; "
        f"fix: {FIX_STRAY}"
    )


def empty_graph_message(graph_name: str, imports: frozenset[str] | set[str], where: str = "",
                        backend: str = "cupy") -> str:
    """One line: the capture of ``graph_name`` recorded no node, with the likely causes."""
    causes = []
    if "torch" in imports and backend != "torch":
        causes.append(
            "this file imports torch but was captured on CuPy's stream, and torch launches on "
            "its own current stream, which this capture does not record"
        )
    causes.append("work launched on another stream (a `with stream:` block, or a library with "
                  "a stream of its own)")
    causes.append("a step that does only host (Python/NumPy) work")
    return (
        f"capture of {graph_name!r}{' (' + where + ')' if where else ''} recorded no work "
        f"(the graph is empty); likely causes: "
        + "; ".join(causes) + f"; {EXPECT_EMPTY_HINT}"
    )
