"""A layered box-and-line drawing for the terminal: boxes in layers, lines from each box's
bottom to the tops of the boxes it leads to.

The engine knows nothing of graphs' meaning: it takes box keys in topological order, the edges
between them, and a function giving a box's lines of text at a level of detail (0: the most;
each next level narrower). Each layer gets the most detail that fits the width on its own (a
wide layer does not cut the names of a narrow one); a layer that does not fit even at the last
level keeps what fits and folds the rest into one "+N more" box, which keeps every line into
and out of the boxes it stands for, so no line dangles and no box looks like a leaf that is not
one. Edges that skip layers pass through one-column "dummy" slots, which a fold keeps, so lines
never cross a box.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

from rich.text import Text

GAP = 2  # columns between boxes of a layer
_MORE_MIN = 12  # room kept for the "+N more" box

Lines = list[tuple[str, str]]  # (text, style)


class Box:
    """A drawn box (lines of text in a border), or a dummy slot carrying a line (no lines)."""

    def __init__(self, key: Hashable, lines: Lines, focus: bool = False):
        self.key = key
        self.lines = lines
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
UP, DOWN, LEFT, RIGHT = 1, 2, 4, 8
JOIN = {
    0: " ",
    UP: "│",
    DOWN: "│",
    UP | DOWN: "│",
    LEFT: "─",
    RIGHT: "─",
    LEFT | RIGHT: "─",
    DOWN | RIGHT: "┌",
    DOWN | LEFT: "┐",
    UP | RIGHT: "└",
    UP | LEFT: "┘",
    UP | DOWN | RIGHT: "├",
    UP | DOWN | LEFT: "┤",
    DOWN | LEFT | RIGHT: "┬",
    UP | LEFT | RIGHT: "┴",
    UP | DOWN | LEFT | RIGHT: "┼",
}


class Canvas:
    """A grid of characters with styles; lines join into box-drawing characters."""

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
            self.chars[y][x] = JOIN[self.bits[y][x]]

    def vline(self, x: int, y0: int, y1: int) -> None:
        for y in range(min(y0, y1), max(y0, y1) + 1):
            bits = (UP if y > min(y0, y1) else 0) | (DOWN if y < max(y0, y1) else 0)
            self.line_bits(x, y, bits)

    def hline(self, x0: int, x1: int, y: int) -> None:
        for x in range(min(x0, x1), max(x0, x1) + 1):
            bits = (LEFT if x > min(x0, x1) else 0) | (RIGHT if x < max(x0, x1) else 0)
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


class Layout:
    """Where everything went: boxes by slot, the links drawn, and the canvas rows (for tests)."""

    def __init__(self):
        self.boxes: dict[Hashable, Box] = {}
        self.links: list[tuple[Hashable, Hashable]] = []
        self.tops: dict[Hashable, int] = {}
        self.bottoms: dict[Hashable, int] = {}
        self.tracks: dict[Hashable, int] = {}  # source slot -> row of its horizontal line
        self.folded: dict[Hashable, Hashable] = {}  # slot -> the "+N more" box standing for it
        self.canvas: Canvas | None = None


def draw(order: Sequence[Hashable], edges: Sequence[tuple[Hashable, Hashable]],
         lines_of: Callable[[Hashable, int], Lines], levels: int, width: int,
         focus: Hashable | None = None) -> Layout:
    """Lay out and paint boxes ``order`` (topological) joined by ``edges`` within ``width``
    columns; ``lines_of(key, level)`` gives a box's text at detail ``level`` (0 to
    ``levels - 1``, narrower each). Returns the Layout (its canvas holds the picture)."""
    parents: dict[Hashable, list] = {k: [] for k in order}
    for src, dst in edges:
        parents[dst].append(src)
    layer: dict[Hashable, int] = {}
    for key in order:
        layer[key] = 1 + max((layer[p] for p in parents[key] if p in layer), default=-1)
    rows: list[list[Hashable]] = [[] for _ in range(1 + max(layer.values(), default=-1))]
    for key in order:
        rows[layer[key]].append(key)
    links: list[tuple[Hashable, Hashable]] = []
    for src, dst in edges:
        previous = src
        for mid in range(layer[src] + 1, layer[dst]):
            dummy = ("dummy", src, dst, mid)
            rows[mid].append(dummy)
            links.append((previous, dummy))
            previous = dummy
        links.append((previous, dst))
    _order_rows(rows, links)

    layout = Layout()
    alias: dict[Hashable, Hashable] = {}  # hidden slot -> the "+N more" box of its layer
    for i, row in enumerate(rows):
        row[:] = _fit_row(i, row, lines_of, levels, width, focus, layout.boxes, alias)
    layout.folded = alias
    seen = set()
    for a, b in links:
        link = (alias.get(a, a), alias.get(b, b))
        if link[0] != link[1] and link not in seen:
            seen.add(link)
            layout.links.append(link)
    _paint(layout, rows, width)
    return layout


def _order_rows(rows: list[list], links: list[tuple]) -> None:
    """Order each layer by the mean position of its parents (one sweep down)."""
    ups: dict[Hashable, list] = {}
    for a, b in links:
        ups.setdefault(b, []).append(a)
    position: dict[Hashable, int] = {}
    for row in rows:
        initial = {slot: i for i, slot in enumerate(row)}

        def weight(slot, initial=initial) -> float:
            above = [position[a] for a in ups.get(slot, ()) if a in position]
            return sum(above) / len(above) if above else initial[slot]

        row.sort(key=weight)
        for i, slot in enumerate(row):
            position[slot] = i


def _box(slot, level, lines_of, focus) -> Box:
    if isinstance(slot, tuple) and slot[:1] == ("dummy",):
        return Box(slot, [])
    return Box(slot, lines_of(slot, level), focus=slot == focus)


def _row_width(boxes: list[Box]) -> int:
    return sum(b.width for b in boxes) + GAP * (len(boxes) - 1)


def _fit_row(index, row, lines_of, levels, width, focus, boxes, alias) -> list:
    """The row's slots as drawn: the most detail that fits, else what fits and "+N more"."""
    for level in range(levels):
        built = [_box(slot, level, lines_of, focus) for slot in row]
        if _row_width(built) <= width:
            break
    else:
        # Dummies (one column each) always stay, so a line passing through goes on.
        used = sum(b.width + GAP for b in built if b.dummy) + _MORE_MIN
        kept, full = [], False
        for box in built:
            if not box.dummy:
                full = full or used + box.width + GAP > width
                if full:
                    continue
                used += box.width + GAP
            kept.append(box)
        hidden = [b for b in built if b not in kept]
        more = Box(("more", index), [(f"+{sum(not b.dummy for b in hidden)} more", "dim")])
        for box in hidden:
            alias[box.key] = more.key
        built = kept + [more]
    for box in built:
        boxes[box.key] = box
    return [box.key for box in built]


def _paint(layout: Layout, rows: list[list], width: int) -> None:
    boxes, links = layout.boxes, layout.links
    ups: dict[Hashable, list[Box]] = {}
    downs: dict[Hashable, list[Box]] = {}
    for a, b in links:
        ups.setdefault(b, []).append(boxes[a])
        downs.setdefault(a, []).append(boxes[b])
    canvas_width = max((_row_width([boxes[s] for s in row]) for row in rows), default=1)
    canvas_width = min(width, canvas_width | 1)
    for row in rows:
        _place_row([boxes[s] for s in row], ups, canvas_width)
    # A source whose every target lies straight below it draws no horizontal line, so it
    # needs no track row of its own: its line crosses the channel on the first one.
    straight = {s for s, targets in downs.items()
                if all(t.center == boxes[s].center for t in targets)}
    y = 0
    layer_y = []
    for i, row in enumerate(rows):
        height = max((boxes[s].height for s in row), default=1)
        layer_y.append((y, height))
        y += height
        if i < len(rows) - 1:
            y += max(sum(1 for s in row if s in downs and s not in straight), 1)
    canvas = Canvas(max(canvas_width, 1), max(y, 1))
    layout.canvas = canvas
    for i, row in enumerate(rows):
        top, _ = layer_y[i]
        for slot in row:
            layout.tops[slot] = top
            layout.bottoms[slot] = top + boxes[slot].height - 1
            _paint_box(canvas, boxes[slot], top)
    spans: list[tuple[int, int, int, set[int]]] = []  # each horizontal line: row, ends, joins
    for i, row in enumerate(rows[:-1]):
        top, height = layer_y[i]
        sources = [s for s in row if s in downs and s not in straight]
        sources += [s for s in row if s in straight]
        for t, src in enumerate(sources):
            track = top + height + (0 if src in straight else t)
            layout.tracks[src] = track
            box = boxes[src]
            canvas.vline(box.center, layout.bottoms[src], track)
            xs = [box.center] + [b.center for b in downs[src]]
            canvas.hline(min(xs), max(xs), track)
            for target in downs[src]:
                canvas.vline(target.center, track, layout.tops[target.key])
            if src not in straight:
                spans.append((track, min(xs), max(xs), set(xs)))
    _mark_crossings(canvas, spans)
    # Box borders touched by lines get a tee.
    for row in rows:
        for slot in row:
            box = boxes[slot]
            if box.dummy:
                continue
            if slot in ups:
                canvas.chars[layout.tops[slot]][box.center] = "┴"
            if slot in downs:
                canvas.chars[layout.bottoms[slot]][box.center] = "┬"


def _place_row(row: list[Box], ups: dict, canvas_width: int) -> None:
    """Put each box under the median centre of its parents, then push apart to the gap."""
    x = max((canvas_width - _row_width(row)) // 2, 0)
    wanted = []
    for b in row:
        above = ups.get(b.key, ())
        if above:
            centres = sorted(a.center for a in above)
            centre = centres[(len(centres) - 1) // 2]  # median: straight under a parent
            wanted.append(centre - b.width // 2)
        else:
            wanted.append(x)
        x += b.width + GAP
    left = 0
    for b, want in zip(row, wanted):
        b.x = max(want, left)
        left = b.x + b.width + GAP
    right = canvas_width
    for b in reversed(row):
        b.x = max(min(b.x, right - b.width), 0)
        right = b.x - GAP


def _mark_crossings(canvas: Canvas, spans: list[tuple[int, int, int, set[int]]]) -> None:
    """Where another line's vertical passes through a source's horizontal line at a column
    where that line joins nothing (neither its source nor one of its targets), draw the
    vertical alone ("─│─"): a "┼" there would read as the two lines joined. The bits stay as
    they are (both lines do pass through the cell)."""
    for y, lo, hi, joins in spans:
        bits = canvas.bits[y]
        for x in range(lo + 1, hi):
            if x not in joins and bits[x] & (UP | DOWN):
                canvas.chars[y][x] = JOIN[UP | DOWN]


def _paint_box(canvas: Canvas, box: Box, top: int) -> None:
    if box.dummy:
        canvas.line_bits(box.center, top, UP | DOWN)
        return
    w = box.width
    border = "bold" if box.focus else None
    canvas.text(box.x, top, "┌" + "─" * (w - 2) + "┐", border)
    for i, (text, style) in enumerate(box.lines):
        canvas.text(box.x, top + 1 + i, "│", border)
        canvas.text(
            box.x + 2,
            top + 1 + i,
            text.ljust(w - 4),
            (style + " reverse").strip() if box.focus and i == 0 else style or None,
        )
        canvas.text(box.x + w - 1, top + 1 + i, "│", border)
    canvas.text(box.x, top + box.height - 1, "└" + "─" * (w - 2) + "┘", border)
