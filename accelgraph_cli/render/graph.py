"""Rendering a GraphModel in the terminal with rich: summary, listing, and a box drawing.

Every function returns a rich renderable; the caller's Console decides width, colour and
NO_COLOR, so nothing here hard-codes a width or writes to stdout. Piped output (no colour,
no terminal) stays readable: styles only add colour, never meaning.
"""

from __future__ import annotations

import re

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.table import Table
from rich.text import Text

from ..model.demangle import demangler_name, is_mangled, short_kernel_name
from ..model.graph_model import KINDS, GraphModel, Node, Run, chain_runs
from .text import format_bytes

# One colour per kind, so a listing can be read by colour at a glance.
KIND_STYLES = {
    "kernel": "cyan",
    "memcpy": "magenta",
    "memset": "yellow",
    "host": "green",
    "event_record": "blue",
    "event_wait": "blue",
    "mem_alloc": "red",
    "mem_free": "red",
    "empty": "dim",
    "graph": "bold white",
    "conditional": "bold yellow",
    "ext_semas_signal": "bright_blue",
    "ext_semas_wait": "bright_blue",
    "batch_mem_op": "bright_magenta",
    "unknown": "white",
}

# Graphs up to this many boxes (after collapsing identical chains) are drawn whole.
DRAW_MAX_BOXES = 40

_CUDA_ID = re.compile(r"^graph_(\d+)_node_(\d+)$")


def kind_style(kind: str) -> str:
    """The rich style used for a node kind."""
    return KIND_STYLES.get(kind, "white")


def short_id(node_id: str, with_graph: bool = False) -> str:
    """'#3' for CUDA's 'graph_0_node_3' ('g0#3' with_graph, for nested graphs), else the id."""
    m = _CUDA_ID.match(node_id)
    if not m:
        return node_id
    return f"g{m.group(1)}#{m.group(2)}" if with_graph else f"#{m.group(2)}"


_SHORT_REF = re.compile(r"#?(\d+)")
_NESTED_REF = re.compile(r"g\d+#\d+")


def find_node(model: GraphModel, ref: str) -> tuple[GraphModel, str]:
    """The graph holding the node ``ref`` names, and its id. ``ref`` is a full id (at any
    nesting level), ``#3`` or ``3`` (node 3 of the top graph), or ``g10#0`` (node 0 of CUDA's
    graph 10, a nested one): the forms the listing prints. KeyError when none or several match.
    """
    graphs = list(model.walk())
    for graph in graphs:
        if graph.has_node(ref):
            return graph, ref
    hits: list[tuple[GraphModel, str]] = []
    if _SHORT_REF.fullmatch(ref):
        number = ref.lstrip("#")
        hits = [(model, n.id) for n in model.nodes if n.id.rsplit("_", 1)[-1] == number]
    elif _NESTED_REF.fullmatch(ref):
        hits = [(g, n.id) for g in graphs for n in g.nodes if short_id(n.id, with_graph=True) == ref]
    if len(hits) != 1:
        raise KeyError(ref)
    return hits[0]


def _dims(dims: tuple) -> str:
    if tuple(dims[1:]) == (1, 1):
        return str(dims[0])
    return "(" + ",".join(str(d) for d in dims) + ")"


def node_name(node: Node, max_len: int = 60) -> str:
    """What to call a node in one line: short demangled kernel name, or the kind's label."""
    if node.kind == "kernel" and node.name:
        return short_kernel_name(node.display_name, max_len=max_len)
    if node.kind == "unknown" and node.name:
        label = " ".join(node.name.split())
        return label if len(label) <= max_len else label[: max_len - 1] + "…"
    if node.child is not None:
        total = node.child.total_nodes()
        return f"{total} node{'s' if total != 1 else ''} inside"
    return node.name or ""


def node_detail(node: Node) -> str:
    """Launch dims ``<<<grid, block, shmem>>>`` for kernels, direction/size for memory ops."""
    p = node.params
    if node.kind == "kernel":
        if "grid" in p or "block" in p:
            grid = _dims(p["grid"]) if "grid" in p else "?"
            block = _dims(p["block"]) if "block" in p else "?"
            return f"<<<{grid}, {block}, {p.get('shared_mem', 0)}>>>"
        return ""
    pieces = []
    if node.kind == "memcpy" and "direction" in p:
        pieces.append(str(p["direction"]))
    if node.kind == "memset" and "value" in p:
        pieces.append(f"value {p['value']}")
    if isinstance(p.get("bytes"), int):
        pieces.append(format_bytes(p["bytes"]))
    return " · ".join(pieces)


# ---------------------------------------------------------------------------- summary


def render_summary(model: GraphModel, saved_model: bool = False):
    """Key numbers of a graph: nodes per kind, edges, levels, max width, critical path, bytes.

    ``saved_model``: the graph was read from an accelgraph JSON model (the Source line says
    so, and what the model was made from)."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    counts = model.kind_counts()
    kinds = Text()
    for i, (kind, count) in enumerate(counts.items()):
        if i:
            kinds.append(" · ")
        kinds.append(f"{kind} {count:,}", style=kind_style(kind))
    widths = model.level_widths()
    table.add_row("Source", _source_text(model, saved_model))
    table.add_row("Nodes", Text(f"{len(model.nodes):,}  (") + kinds + Text(")") if counts else Text("0"))
    table.add_row("Edges", f"{len(model.edges):,}")
    table.add_row("Levels", f"{len(widths):,}  (max width {max(widths, default=0):,})")
    table.add_row("Critical path", f"{len(model.critical_path()):,} nodes")
    nested = [g for g in model.walk()][1:]
    if nested:
        inner = sum(len(g.nodes) for g in nested)
        table.add_row("Nested graphs", f"{len(nested):,}  ({inner:,} node{'s' if inner != 1 else ''} inside)")
    alloc_nodes = sum(1 for g in model.walk() for n in g.nodes if n.kind == "mem_alloc")
    if alloc_nodes:
        table.add_row(
            "Allocated",
            f"{format_bytes(model.bytes_allocated())}  in {alloc_nodes:,} mem_alloc "
            f"node{'s' if alloc_nodes != 1 else ''}",
        )
    if not model.is_acyclic():
        table.add_row("Warning", Text("the graph has a cycle (not a CUDA graph)", style="red"))
    note = _demangler_note(model)
    if note:
        table.add_row("Names", Text(note, style="dim"))
    return table


def _source_text(model: GraphModel, saved_model: bool = False) -> Text:
    descriptions = {
        "dot-verbose": "CUDA DOT dump (verbose)",
        "dot-basic": "CUDA DOT dump (basic: no launch dimensions or sizes)",
        "json": "accelgraph JSON model",
        "live": "live captured graph",
    }
    if saved_model:
        made_from = descriptions.get(model.source, model.source)
        if model.source == "dot-generic":
            made_from = "DOT that is not a CUDA graph dump"
        return Text("accelgraph JSON model" + (f", saved from a {made_from}" if made_from else ""))
    if model.source == "dot-generic":
        return Text("not a CUDA graph dump; parsed generically", style="yellow")
    return Text(descriptions.get(model.source, model.source or "unknown"))


def _demangler_note(model: GraphModel) -> str | None:
    mangled = any(
        n.kind == "kernel" and is_mangled(n.name) and "demangled" not in n.params
        for g in model.walk()
        for n in g.nodes
    )
    if mangled and demangler_name() is None:
        return "no C++ demangler found (install binutils for c++filt): names shown as written"
    return None


# ---------------------------------------------------------------------------- listing


def render_listing(model: GraphModel, limit: int | None = None):
    """Nodes in topological order grouped by level, identical chains collapsed to one row.

    Columns: level, node id, × (repeats), kind (coloured), name (demangled, shortened),
    launch dims or bytes, parents. A block of nodes repeating along a simple chain prints
    once with "× N" (see model.chain_runs): a 10,000-kernel chain is one row.
    Nested graphs are listed under their node, indented. ``limit`` caps the rows, ending with
    "… N more". Column widths are fitted to the console at render time: the name column
    gives way first, then the parents, then the launch column.
    """
    rows = list(_listing_rows(model, depth=0))
    shown = rows if limit is None or len(rows) <= limit else rows[: max(limit, 0)]
    if len(shown) < len(rows):
        more = Text(f"… {len(rows) - len(shown):,} more", style="dim")
        shown.append(("", "", "", "", more, "", ""))
    return _Listing(shown)


_HEADERS = ("level", "node", "×", "kind", "name", "launch / size", "after")


class _Listing:
    """The listing table, sized when the console says how wide it is."""

    def __init__(self, rows: list[tuple]):
        self.rows = rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        natural = [
            max(
                [len(header)]
                + [
                    Text(str(row[c])).cell_len if not isinstance(row[c], Text) else row[c].cell_len
                    for row in self.rows
                ]
            )
            for c, header in enumerate(_HEADERS)
        ]
        widths = list(natural)
        budget = options.max_width - 2 * (len(widths) - 1)  # padding: two spaces between
        # Give way in this order, down to these minimum widths.
        for column, minimum in ((4, 16), (6, 8), (5, 12), (4, 8), (1, 8), (3, 6)):
            excess = sum(widths) - budget
            if excess <= 0:
                break
            widths[column] = max(minimum, widths[column] - excess)
        table = Table(box=None, pad_edge=False, show_edge=False, padding=(0, 1), header_style="bold")
        for c, header in enumerate(_HEADERS):
            table.add_column(
                header,
                justify="right" if c in (0, 2) else "left",
                no_wrap=True,
                overflow="ellipsis",
                width=widths[c],
                style="dim" if c in (0, 6) else None,
            )
        for row in self.rows:
            table.add_row(*row)
        yield table


def run_labels(model: GraphModel, run: Run, max_len: int = 60) -> tuple[str, str, str]:
    """(kind, name, detail) describing a Run's block in one line: "cupy_add → cupy_mul".

    A block of several nodes shows its names joined by arrows; kind and detail are shown
    when every node of the block shares them. The repeat count is ``run.repeats``.
    """
    block = [model.node(i) for i in run.block]
    kinds = list(dict.fromkeys(n.kind for n in block))
    kind = kinds[0] if len(kinds) == 1 else "/".join(kinds)
    each = max(8, max_len // len(block) - 3) if len(block) > 1 else max_len
    names = (
        [node_name(n, max_len=each) or n.kind for n in block]
        if len(block) > 1
        else [node_name(block[0], max_len=max_len)]
    )
    name = " → ".join(names)
    details = {node_detail(n) for n in block}
    detail = details.pop() if len(details) == 1 else ""
    return kind, name, detail


def _listing_rows(model: GraphModel, depth: int):
    indent = "  " * depth
    nested = depth > 0
    runs = chain_runs(model)
    levels = {node_id: model.level_of(node_id) for node_id in model.topological_order()}
    runs.sort(key=lambda run: levels[run.ids[0]])  # stable: topological within a level
    previous_level = None
    for run in runs:
        first_id, last_id = run.ids[0], run.ids[-1]
        start, end = levels[first_id], levels[last_id]
        level_text = str(start) if start == end else f"{start}–{end}"
        if start == previous_level or nested:
            level_text = ""  # grouped under the level printed above; nested: not our levels
        previous_level = start
        ids = short_id(first_id, nested)
        if len(run.ids) > 1:
            ids += "…" + short_id(last_id, nested)
        kind, label, detail = run_labels(model, run)
        name = Text(indent + ("└ " if nested else "") + label)
        count = Text(f"× {run.repeats:,}", style="bold") if len(run.ids) > 1 else ""
        parents = model.parents(first_id)
        after = ", ".join(short_id(p, nested) for p in parents[:3])
        if len(parents) > 3:
            after += f" +{len(parents) - 3}"
        # Every cell is Text: ids, names and details come from the dump, never markup.
        yield (
            Text(level_text),
            Text(indent + ids),
            count,
            Text(kind, style=kind_style(kind)),
            name,
            Text(detail),
            Text(after or "—"),
        )
        first = model.node(first_id)
        if first.child is not None and len(run.ids) == 1:
            yield from _listing_rows(first.child, depth + 1)


# ---------------------------------------------------------------------------- drawing


def render_focus(model: GraphModel, node_id: str, depth: int = 2):
    """A box-and-arrow drawing of a node's neighbourhood: ``depth`` levels up and down.

    Ancestors reachable within ``depth`` edges above, descendants within ``depth`` below,
    drawn in layers with fork/join lines; the focused node is highlighted. Identical chains
    are collapsed into one box "× N". Raises KeyError for an unknown node id.
    """
    model.node(node_id)  # KeyError early, with the id
    keep = {node_id}
    for step in (model.parents, model.children):
        frontier = [node_id]
        for _ in range(max(depth, 0)):
            nxt = []
            for current in frontier:
                for other in step(current):
                    if other not in keep:
                        keep.add(other)
                        nxt.append(other)
            frontier = nxt
    return GraphDrawing(model, keep, focus=node_id)


def render_graph(model: GraphModel, max_boxes: int = DRAW_MAX_BOXES):
    """The whole graph as a box drawing when it has at most ``max_boxes`` boxes (after
    collapsing identical chains); otherwise a one-line note suggesting a focused view."""
    boxes = len(chain_runs(model))
    if boxes > max_boxes:
        return Text(
            f"{boxes:,} boxes are too many to draw; draw one node's neighbourhood instead "
            "(render_focus / --focus NODE)",
            style="dim",
        )
    return GraphDrawing(model, {n.id for n in model.nodes}, focus=None)


class _Box:
    """A drawn box: one node, or a collapsed run of identical chained nodes, or a dummy."""

    def __init__(self, key: str, lines: list[tuple[str, str]], focus: bool = False):
        self.key = key
        self.lines = lines  # (text, style)
        self.focus = focus
        self.dummy = not lines
        # Odd widths put the centre on a whole column, so lines between boxes stay straight.
        self.width = 1 if self.dummy else (max(len(t) for t, _ in lines) + 4) | 1
        self.height = 1 if self.dummy else len(lines) + 2
        self.x = 0

    @property
    def center(self) -> int:
        return self.x + self.width // 2


# Direction bits for line drawing on the canvas; joined into box-drawing characters.
_UP, _DOWN, _LEFT, _RIGHT = 1, 2, 4, 8
_JOIN = {
    0: " ",
    _UP: "│",
    _DOWN: "│",
    _UP | _DOWN: "│",
    _LEFT: "─",
    _RIGHT: "─",
    _LEFT | _RIGHT: "─",
    _DOWN | _RIGHT: "┌",
    _DOWN | _LEFT: "┐",
    _UP | _RIGHT: "└",
    _UP | _LEFT: "┘",
    _UP | _DOWN | _RIGHT: "├",
    _UP | _DOWN | _LEFT: "┤",
    _DOWN | _LEFT | _RIGHT: "┬",
    _UP | _LEFT | _RIGHT: "┴",
    _UP | _DOWN | _LEFT | _RIGHT: "┼",
}


class _Canvas:
    def __init__(self, width: int, height: int):
        self.width = width
        self.chars = [[" "] * width for _ in range(height)]
        self.styles: list[list[str | None]] = [[None] * width for _ in range(height)]
        self.bits = [[0] * width for _ in range(height)]

    def text(self, x: int, y: int, text: str, style: str | None = None) -> None:
        for i, ch in enumerate(text):
            if 0 <= x + i < self.width:
                self.chars[y][x + i] = ch
                self.styles[y][x + i] = style

    def line_bits(self, x: int, y: int, bits: int) -> None:
        if 0 <= x < self.width:
            self.bits[y][x] |= bits
            self.chars[y][x] = _JOIN[self.bits[y][x]]

    def vline(self, x: int, y0: int, y1: int) -> None:
        for y in range(min(y0, y1), max(y0, y1) + 1):
            bits = (_UP if y > min(y0, y1) else 0) | (_DOWN if y < max(y0, y1) else 0)
            self.line_bits(x, y, bits)

    def hline(self, x0: int, x1: int, y: int) -> None:
        for x in range(min(x0, x1), max(x0, x1) + 1):
            bits = (_LEFT if x > min(x0, x1) else 0) | (_RIGHT if x < max(x0, x1) else 0)
            self.line_bits(x, y, bits)

    def rows(self) -> list[Text]:
        out = []
        for chars, styles in zip(self.chars, self.styles):
            line = Text()
            run_start, current = 0, styles[0] if styles else None
            for i in range(1, len(chars) + 1):
                if i == len(chars) or styles[i] != current:
                    line.append("".join(chars[run_start:i]), style=current)
                    if i < len(chars):
                        run_start, current = i, styles[i]
            line.rstrip()
            out.append(line)
        return out


class GraphDrawing:
    """A layered box drawing of (part of) a graph, laid out at render time for the width the
    console offers: names shrink first, then layers too wide become a "+N more" box."""

    def __init__(self, model: GraphModel, node_ids: set, focus: str | None):
        self.model = model
        self.node_ids = node_ids
        self.focus = focus

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        for name_len in (36, 28, 20, 14, 10):
            drawing = self._draw(width, name_len)
            if drawing is not None:
                yield from drawing
                return
        yield from self._draw(width, 10, squeeze=True) or [Text("(too narrow to draw)")]

    # Layout: boxes = runs restricted to the kept nodes; layer = longest path from the top
    # among kept boxes; dummy boxes carry edges that skip layers.
    def _boxes(self, name_len: int):
        model = self.model
        if len(self.node_ids) < len(model.nodes):
            # A neighbourhood: collapse runs within the kept nodes only.
            model = GraphModel(
                [n for n in model.nodes if n.id in self.node_ids],
                [(a, b) for a, b in model.edges if a in self.node_ids and b in self.node_ids],
            )
        alone = frozenset([self.focus]) if self.focus else frozenset()
        box_of = {}
        boxes = {}
        for run in chain_runs(model, alone=alone):
            first_id, last_id = run.ids[0], run.ids[-1]
            ids = short_id(first_id)
            if len(run.ids) > 1:
                ids += "…" + short_id(last_id)
            kind, name, detail = run_labels(model, run, max_len=name_len)
            count = f" × {run.repeats:,}" if len(run.ids) > 1 else ""
            lines = [(f"{ids} {kind}{count}", kind_style(kind))]
            if name:
                lines.append((name, ""))
            if detail and len(detail) <= name_len + 10:
                lines.append((detail, "dim"))
            boxes[first_id] = _Box(first_id, lines, focus=self.focus in run.ids)
            for node_id in run.ids:
                box_of[node_id] = first_id
        rank = {key: r for r, key in enumerate(boxes)}
        edges = {(box_of[a], box_of[b]) for a, b in model.edges if box_of[a] != box_of[b]}
        return boxes, sorted(edges, key=lambda e: (rank[e[0]], rank[e[1]]))

    def _draw(self, width: int, name_len: int, squeeze: bool = False):
        boxes, edges = self._boxes(name_len)
        order = list(boxes)  # topological (chain_runs order)
        parents: dict[str, list[str]] = {k: [] for k in order}
        for src, dst in edges:
            parents[dst].append(src)
        layer = {}
        for key in order:
            layer[key] = 1 + max((layer[p] for p in parents[key] if p in layer), default=-1)
        n_layers = 1 + max(layer.values(), default=-1)
        layers: list[list[_Box]] = [[] for _ in range(n_layers)]
        for key in order:
            layers[layer[key]].append(boxes[key])
        # Dummy boxes for edges that skip layers, so lines never cross a box.
        links: list[tuple[_Box, _Box]] = []
        for src, dst in edges:
            previous = boxes[src]
            for mid in range(layer[src] + 1, layer[dst]):
                dummy = _Box(f"{src}->{dst}@{mid}", [])
                layers[mid].append(dummy)
                links.append((previous, dummy))
                previous = dummy
            links.append((previous, boxes[dst]))
        # Order each layer by the mean position of its parents (one sweep down).
        position = {}
        ups_of: dict[int, list[_Box]] = {}
        for a, b in links:
            ups_of.setdefault(id(b), []).append(a)
        for row in layers:
            initial = {id(box): i for i, box in enumerate(row)}

            def weight(box: _Box, initial: dict = initial) -> float:
                ups = [position[id(a)] for a in ups_of.get(id(box), ()) if id(a) in position]
                return sum(ups) / len(ups) if ups else initial[id(box)]

            row.sort(key=weight)
            for i, box in enumerate(row):
                position[id(box)] = i
        gap = 2
        for row in layers:
            total = sum(b.width for b in row) + gap * (len(row) - 1)
            if total > width:
                if not squeeze:
                    return None
                # Keep what fits; the rest becomes one "+N more" box.
                kept, used = [], 0
                for b in row:
                    if used + b.width + gap + 12 > width:
                        break
                    kept.append(b)
                    used += b.width + gap
                hidden = [b for b in row if b not in kept]
                more = _Box("more", [(f"+{sum(not b.dummy for b in hidden)} more", "dim")])
                row[:] = kept + [more]
                links[:] = [(a, b) for a, b in links if a not in hidden and b not in hidden]
        canvas_width = max((sum(b.width for b in r) + gap * (len(r) - 1) for r in layers), default=1)
        canvas_width = min(width, canvas_width | 1)
        for row in layers:
            self._place_row(row, ups_of, canvas_width, gap)
        # Vertical space: box rows plus, between layers, one track row per fork source.
        out_links: dict[int, list[_Box]] = {}
        for a, b in links:
            out_links.setdefault(id(a), []).append(b)
        y = 0
        tops, bottoms = {}, {}
        layer_y = []
        for i, row in enumerate(layers):
            height = max((b.height for b in row), default=1)
            layer_y.append((y, height))
            y += height
            if i < len(layers) - 1:
                sources = [b for b in row if id(b) in out_links]
                y += max(len(sources), 1)
        canvas = _Canvas(max(canvas_width, 1), max(y, 1))
        for i, row in enumerate(layers):
            top, height = layer_y[i]
            for b in row:
                tops[id(b)] = top
                bottoms[id(b)] = top + (b.height - 1)
                self._paint_box(canvas, b, top)
        for i, row in enumerate(layers[:-1]):
            top, height = layer_y[i]
            track = top + height
            sources = [b for b in row if id(b) in out_links]
            for t, src in enumerate(sources):
                y_track = track + t
                targets = out_links[id(src)]
                canvas.vline(src.center, bottoms[id(src)], y_track)
                xs = [src.center] + [b.center for b in targets]
                canvas.hline(min(xs), max(xs), y_track)
                for b in targets:
                    canvas.vline(b.center, y_track, tops[id(b)])
            # Box borders touched by lines get a tee.
        for row in layers:
            for b in row:
                if b.dummy:
                    continue
                if any(tgt is b for a, tgt in links):
                    canvas.chars[tops[id(b)]][b.center] = "┴"
                if id(b) in out_links:
                    canvas.chars[bottoms[id(b)]][b.center] = "┬"
        return canvas.rows()

    @staticmethod
    def _place_row(row: list[_Box], ups_of: dict, canvas_width: int, gap: int) -> None:
        """Put each box under the median centre of its parents, then push apart to the gap."""
        total = sum(b.width for b in row) + gap * (len(row) - 1)
        x = max((canvas_width - total) // 2, 0)
        wanted = []
        for b in row:
            ups = ups_of.get(id(b), ())
            if ups:
                centres = sorted(a.center for a in ups)
                centre = centres[(len(centres) - 1) // 2]  # median: straight under a parent
                wanted.append(centre - b.width // 2)
            else:
                wanted.append(x)
            x += b.width + gap
        left = 0
        for b, want in zip(row, wanted):
            b.x = max(want, left)
            left = b.x + b.width + gap
        right = canvas_width
        for b in reversed(row):
            b.x = max(min(b.x, right - b.width), 0)
            right = b.x - gap

    @staticmethod
    def _paint_box(canvas: _Canvas, box: _Box, top: int) -> None:
        if box.dummy:
            canvas.vline(box.center, top, top)
            canvas.line_bits(box.center, top, _UP | _DOWN)
            return
        w = box.width
        border = "bold" if box.focus else None
        canvas.text(box.x, top, "┌" + "─" * (w - 2) + "┐", border)
        for i, (text, style) in enumerate(box.lines):
            canvas.text(box.x, top + 1 + i, "│", border)
            label = text.ljust(w - 4)
            canvas.text(
                box.x + 2,
                top + 1 + i,
                label,
                (style + " reverse").strip() if box.focus and i == 0 else style or None,
            )
            canvas.text(box.x + w - 1, top + 1 + i, "│", border)
        canvas.text(box.x, top + box.height - 1, "└" + "─" * (w - 2) + "┘", border)


def render_graph_or_listing(model: GraphModel, limit: int | None = None):
    """The drawing for a small graph followed by the listing; the listing alone when large;
    one line for a graph with no nodes."""
    if not model.nodes:
        return Text("The graph has no nodes.")
    if len(chain_runs(model)) <= DRAW_MAX_BOXES:
        return Group(render_graph(model), Text(), render_listing(model, limit=limit))
    return render_listing(model, limit=limit)


__all__ = [
    "DRAW_MAX_BOXES",
    "KINDS",
    "KIND_STYLES",
    "GraphDrawing",
    "kind_style",
    "node_detail",
    "node_name",
    "find_node",
    "render_focus",
    "render_graph",
    "render_graph_or_listing",
    "render_listing",
    "render_summary",
    "short_id",
]
