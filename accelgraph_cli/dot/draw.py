"""Drawing a GraphModel with Graphviz (svg/png), kinds coloured; pydot writes the DOT.

Graphviz's `dot` program is optional: without it, --format svg/png fails with one line that
says how to install it. CUDA's own DOT (from debug_dump) is left as CUDA wrote it; this module
writes a fresh, styled DOT from the model for drawing.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess

from ..errors import AccelgraphError
from ..files import atomic_output
from ..model.graph_model import GraphModel

# Fill colours per node kind (light, so black labels stay readable in print).
KIND_COLOURS = {
    "kernel": "#cfe2ff",
    "memcpy": "#d1f2d1",
    "memset": "#e6f5c9",
    "host": "#ffe0b3",
    "event_record": "#f3d1f4",
    "event_wait": "#f3d1f4",
    "mem_alloc": "#fff3b0",
    "mem_free": "#fde2c8",
    "empty": "#eeeeee",
    "graph": "#d9d2f0",
    "conditional": "#f8d7da",
}

INSTALL_HINT = (
    "Graphviz's `dot` program is needed to draw svg/png and was not found on PATH: "
    "install Graphviz (Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz; "
    "in an accelgraph checkout, `make install` does it where it can), or {instead}"
)
DUMP_INSTEAD = "use --format dot or --format json"
"""What writes a graph without Graphviz, as `dump` (and the library's default) says it."""
SHOW_INSTEAD = "write the graph model with -o FILE.json (the suffix picks the format)"
"""... as `show` says it: it has no --format; -o's suffix picks what it writes."""


SLOW_DRAWING_NODES = 2000
"""Above this many nodes (nested graphs included) a drawing is announced as slow. Graphviz's
layout time grows much faster than the node count: on the 2-core development machine, the
first 1,000 nodes of the recorded 22,500-node fork/join dump drew in 0.75 s, 2,000 in 4.6 s,
4,000 in 68 s; the whole dump ran for over 2 minutes."""


def slow_drawing_warning(model: GraphModel, instead: str) -> str:
    """A one-line warning before drawing a graph that Graphviz will be slow on ("" when it
    will not be); ``instead`` says what writes the graph at once."""
    count = sum(len(graph.nodes) for graph in model.walk())
    if count <= SLOW_DRAWING_NODES:
        return ""
    return (f"warning: drawing {count:,} nodes with Graphviz may take many minutes (its time "
            f"grows much faster than the node count: 4,000 took 68 s where 2,000 took 5 s); "
            f"{instead}, and Ctrl-C stops the drawing")


def graphviz_available() -> bool:
    """True when Graphviz's `dot` is on PATH."""
    return shutil.which("dot") is not None


def require_graphviz(instead: str = DUMP_INSTEAD) -> str:
    """The path of `dot`, or AccelgraphError with the install hint ending in ``instead``."""
    path = shutil.which("dot")
    if path is None:
        raise AccelgraphError(INSTALL_HINT.format(instead=instead))
    return path


def styled_dot(model: GraphModel) -> str:
    """DOT text for drawing: one box per node (kind colour, name, launch dims or bytes)."""
    import pydot

    from ..render import graph as render

    graph = pydot.Dot("accelgraph", graph_type="digraph", rankdir="TB")
    graph.set_node_defaults(shape="box", style="filled,rounded", fontname="Helvetica",
                            fontsize="10")
    _add(graph, model, prefix="", pydot=pydot, render=render,
         with_graph=render.names_graphs(model))
    return graph.to_string()


def _add(graph, model, prefix, pydot, render, with_graph: bool) -> None:
    """Add ``model``'s nodes and edges, numbered as the listing and the terminal drawing
    number them (#3, g12#0) so that a box can be found in the listing or given to --focus;
    ``with_graph``: whether the numbers name their graph (always inside a child graph)."""
    node_name, node_detail = render.node_name, render.node_detail
    for node in model.nodes:
        number = render.short_id(node.id, with_graph)
        label_lines = [f"{number} {node.kind.upper()}"]
        name = node_name(node, 48)
        if name and name not in (node.kind, number):  # a generic DOT node's id is its name
            label_lines.append(name)
        detail = node_detail(node)
        if detail:
            label_lines.append(detail)
        graph.add_node(pydot.Node(
            _quote(prefix + node.id), label=_quote("\n".join(label_lines)),
            fillcolor=_quote(KIND_COLOURS.get(node.kind, "#ffffff")),
        ))
        if node.child is not None:
            sub = pydot.Cluster(_safe_id(prefix + node.id), label=_quote(f"child of {number}"),
                                style="dashed")
            _add(sub, node.child, prefix + node.id + "/", pydot, render, with_graph=True)
            graph.add_subgraph(sub)
    for a, b in model.edges:
        graph.add_edge(pydot.Edge(_quote(prefix + a), _quote(prefix + b)))


def _quote(text: str) -> str:
    """A DOT string literal; newlines become DOT's \\n line breaks."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _safe_id(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text)


def _graphviz_error(stderr: str) -> str:
    """The line of Graphviz's messages that says why it failed: its first "Error:" line,
    else the last that is not a warning (a large drawing's "Scaling by 0.3 to fit" or a
    warning comes before the reason), else the last."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.lower().startswith("error")]
    plain = [line for line in lines if not line.lower().startswith("warning")]
    return (errors[:1] or plain[-1:] or lines[-1:] or ["no message"])[0]


RENDER_TIMEOUT_S = 600
"""How long a Graphviz drawing may take before it is stopped (an error, exit code 2)."""


def render_image(model: GraphModel, path: str, fmt: str) -> str:
    """Draw ``model`` into ``path`` as ``fmt`` (svg or png) with Graphviz, atomically."""
    dot = require_graphviz()
    text = styled_dot(model)
    with atomic_output(path, suffix="." + fmt) as tmp:
        try:
            # UTF-8 whatever the locale (Graphviz reads its input as UTF-8 by default); a
            # name that is no text (a lone surrogate from JSON) drawn with a replacement
            proc = subprocess.run([dot, f"-T{fmt}", "-o", tmp],
                                  input=text.encode("utf-8", "replace"),
                                  capture_output=True, timeout=RENDER_TIMEOUT_S)
        except subprocess.TimeoutExpired:  # run() has killed it
            raise AccelgraphError(
                f"Graphviz did not finish drawing {path} in {RENDER_TIMEOUT_S} s "
                f"({len(model.nodes):,} top-level nodes): write it as JSON instead (show -o "
                f"FILE.json, dump --format json), or draw a part of it (show --focus NODE)"
            ) from None
        stderr = proc.stderr.decode("utf-8", "replace")
        if proc.returncode < 0:  # (on POSIX: killed by that signal, out of memory perhaps)
            raise AccelgraphError(f"Graphviz was stopped by {_signal_name(-proc.returncode)} "
                                  f"while drawing {path}")
        if proc.returncode != 0:
            raise AccelgraphError(f"Graphviz failed drawing {path}: {_graphviz_error(stderr)}")
        if not os.path.isfile(tmp) or not os.path.getsize(tmp):  # exit code 0, no drawing
            said = _graphviz_error(stderr) if stderr.strip() else "no message"
            raise AccelgraphError(f"Graphviz wrote nothing for {path} ({dot} exited 0: {said})")
    return path


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
