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

Each line into a box comes in at a tee of its own on the box's top border (the box is made
wider than its text where its lines need the room), so lines from different boxes never share
a segment: they meet only where they cross, drawn "─│─". Following lines down from a box thus
reaches exactly the boxes it leads to; a join ("┼", "├", "┴") is always one box's lines forking.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

from rich.text import Text

from .text import printable

GAP = 2  # columns between boxes of a layer

Lines = list[tuple[str, str]]  # (text, style)


class Box:
    """A drawn box (lines of text in a border), or a dummy slot carrying a line (no lines)."""

    def __init__(self, key: Hashable, lines: Lines, focus: bool = False, lines_in: int = 0):
        self.key = key
        # as printed (control characters dropped), so the border fits what shows
        self.lines = [(printable(text), style) for text, style in lines]
        lines = self.lines
        self.focus = focus
        self.dummy = not lines
        # Odd widths put the centre on a whole column, so lines between boxes stay straight.
        # Lines in come in two columns apart at least, clear of the corners: a box that
        # ``lines_in`` lines come into is wider than its text where that needs it.
        room = 2 * lines_in + 5 if lines_in > 1 else 0
        self.width = 1 if self.dummy else max(max(len(t) for t, _ in lines) + 4, room) | 1
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
        self.ports: dict[tuple, int] = {}  # (source, target) -> the column the line comes in at
        self.merged: set[Hashable] = set()  # boxes too narrow for a column per line in
        # edges not drawn: each goes back up to a box drawn above or beside its source (a cycle)
        self.undrawn: list[tuple[Hashable, Hashable]] = []
        self.undrawn_edges = 0  # the caller's count of the graph's edges the picture lacks
        self.folded: dict[Hashable, Hashable] = {}  # slot -> the "+N more" box standing for it
        # a layer that does not fit the width even folded (its lines passing through, or the
        # tees of the "+N more" box, need more columns): nothing is drawn then, rather than
        # boxes and lines piled on one another
        self.too_wide = 0  # the columns the widest layer needs, when it is more than the width
        # boxes whose lines meet another box's lines other than by crossing them (a line
        # ending on another's, two lines in one column): the picture would read as joined
        self.ambiguous: set[Hashable] = set()
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
    undrawn = []
    for src, dst in edges:
        if layer[dst] <= layer[src]:
            # Lines run down only, so an edge back up (a cycle) has no line: the caller says so.
            undrawn.append((src, dst))
            continue
        previous = src
        for mid in range(layer[src] + 1, layer[dst]):
            dummy = ("dummy", src, dst, mid)
            rows[mid].append(dummy)
            links.append((previous, dummy))
            previous = dummy
        links.append((previous, dst))
    _order_rows(rows, links)

    layout = Layout()
    layout.undrawn = undrawn
    alias: dict[Hashable, Hashable] = {}  # hidden slot -> the "+N more" box of its layer
    ups: dict[Hashable, set] = {}
    for a, b in links:
        ups.setdefault(b, set()).add(a)
    for i, row in enumerate(rows):
        # The boxes of the layer above are fitted, so each slot's lines in (one a source,
        # folded sources counted once in their "+N more" box) are known.
        lines_in = {slot: {alias.get(a, a) for a in ups.get(slot, ())} for slot in row}
        row[:] = _fit_row(i, row, lines_of, levels, width, focus, layout.boxes, alias, lines_in)
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


def _box(slot, level, lines_of, focus, lines_in) -> Box:
    if isinstance(slot, tuple) and slot[:1] == ("dummy",):
        return Box(slot, [])
    return Box(slot, lines_of(slot, level), focus=slot == focus, lines_in=len(lines_in[slot]))


def _row_width(boxes: list[Box]) -> int:
    return sum(b.width for b in boxes) + GAP * (len(boxes) - 1)


def _fit_row(index, row, lines_of, levels, width, focus, boxes, alias, lines_in) -> list:
    """The row's slots as drawn: the most detail that fits, else what fits and "+N more"."""
    for level in range(levels):
        built = [_box(slot, level, lines_of, focus, lines_in) for slot in row]
        if _row_width(built) <= width:
            break
    else:
        # Dummies (one column each) always stay, so a line passing through goes on. Keep the
        # most boxes, left to right, that fit beside a "+N more" box wide enough for its lines;
        # the focused box first of all (folded away, the drawing would lose what it is for:
        # if it cannot stay, the row is too wide and the drawing says so).
        real = [b for b in built if not b.dummy]
        wanted = sorted(real, key=lambda b: b.key != focus)  # stable: the focus, then in order
        least = 1 if focus in {b.key for b in real} else 0
        for keep in range(len(real), least - 1, -1):
            shown = set(map(id, wanted[:keep]))
            hidden = [b for b in real if id(b) not in shown]
            sources = set().union(*(lines_in[b.key] for b in hidden))
            more = Box(("more", index), [(f"+{len(hidden)} more", "dim")],
                       lines_in=len(sources))
            kept = [b for b in built if b.dummy or id(b) in shown]
            if _row_width(kept + [more]) <= width:
                break
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
    if canvas_width > width:
        layout.too_wide = canvas_width
        layout.canvas = Canvas(1, 1)
        return
    canvas_width = min(width, canvas_width | 1)
    for row in rows:
        _place_row([boxes[s] for s in row], ups, canvas_width)
    # Then from the bottom up, a box that is the only parent of each box below it moves over
    # them (a branch of a fork stays a straight line where the row below is the wider one).
    for row in reversed(rows[:-1]):
        _place_over([boxes[s] for s in row], downs, ups, canvas_width)
    # Each line into a box gets its own column on the box's top border (its own tee), so
    # lines from different boxes never share a segment: they meet only where they cross.
    ports = layout.ports
    for i, row in enumerate(rows[1:], 1):
        drops = [boxes[s].center for s in rows[i - 1] if s in downs]
        for slot in row:
            if slot in ups:
                ports.update(_ports(boxes[slot], ups[slot], drops, layout.merged))
    # A source whose one line runs straight down into its tee needs no track row of its
    # own: its line crosses the channel on the first one.
    straight = {s for s, targets in downs.items()
                if len(targets) == 1 and ports[(s, targets[0].key)] == boxes[s].center}
    channels = []
    for row in rows[:-1]:
        tracked = [s for s in row if s in downs and s not in straight]
        channels.append(_order_tracks(tracked, boxes, downs, ports))
    y = 0
    layer_y = []
    for i, row in enumerate(rows):
        height = max((boxes[s].height for s in row), default=1)
        layer_y.append((y, height))
        y += height
        if i < len(rows) - 1:
            y += max(len(channels[i]), 1)
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
        rank = {s: t for t, s in enumerate(channels[i])}
        for src in row:
            if src not in downs:
                continue
            track = top + height + rank.get(src, 0)
            layout.tracks[src] = track
            box = boxes[src]
            canvas.vline(box.center, layout.bottoms[src], track)
            xs = [box.center] + [ports[(src, b.key)] for b in downs[src]]
            canvas.hline(min(xs), max(xs), track)
            for target in downs[src]:
                canvas.vline(ports[(src, target.key)], track, layout.tops[target.key])
            if src not in straight:
                spans.append((track, min(xs), max(xs), set(xs)))
    _mark_crossings(canvas, spans)
    # Box borders touched by lines get a tee.
    for (_, dst), x in ports.items():
        if not boxes[dst].dummy:
            canvas.chars[layout.tops[dst]][x] = "┴"
    for slot in downs:
        box = boxes[slot]
        if not box.dummy:
            canvas.chars[layout.bottoms[slot]][box.center] = "┬"
    layout.ambiguous = _meeting_lines(layout, downs)


def _meeting_lines(layout: Layout, downs: dict[Hashable, list[Box]]) -> set[Hashable]:
    """The boxes whose lines meet another box's lines anywhere but at a clean crossing.

    Each cell a line passes through is owned by the box the line starts from (a dummy's by
    the box its edge comes from). A cell may hold one owner's line, or two owners' when one
    runs straight across (left and right) and the other straight down (up and down): that
    is drawn and read as a crossing. Anything else — a line ending on another's, two lines
    sharing a column, a third line through a crossing — reads as the lines joined, so a
    reader following one box's lines down would reach another's targets."""
    boxes, ports, tops, bottoms, tracks = (layout.boxes, layout.ports, layout.tops,
                                           layout.bottoms, layout.tracks)
    cells: dict[tuple[int, int], dict[Hashable, int]] = {}

    def add(x: int, y: int, owner: Hashable, bits: int) -> None:
        mine = cells.setdefault((x, y), {})
        mine[owner] = mine.get(owner, 0) | bits

    for src, targets in downs.items():
        owner = src[1] if boxes[src].dummy and isinstance(src, tuple) else src
        center, bottom, track = boxes[src].center, bottoms[src], tracks[src]
        for y in range(bottom + 1, track):
            add(center, y, owner, UP | DOWN)
        xs = [center] + [ports[(src, b.key)] for b in targets]
        lo, hi = min(xs), max(xs)
        add(center, track, owner, UP if track > bottom else 0)
        for x in range(lo, hi + 1):
            add(x, track, owner, (LEFT if x > lo else 0) | (RIGHT if x < hi else 0))
        for b in targets:
            x = ports[(src, b.key)]
            add(x, track, owner, DOWN)
            for y in range(track + 1, tops[b.key]):
                add(x, y, owner, UP | DOWN)
            if boxes[b.key].dummy:  # the dummy's cell carries the line on
                add(x, tops[b.key], owner, UP | DOWN)
    across, down = LEFT | RIGHT, UP | DOWN
    meeting: set[Hashable] = set()
    for owners in cells.values():
        if len(owners) == 1:
            continue
        if len(owners) == 2 and sorted(owners.values()) == sorted((across, down)):
            continue
        meeting.update(owners)
    return meeting


def _port_room(box: Box) -> tuple[int, int]:
    """The first and last column of ``box``'s top border a line may come in at (a dummy:
    its one column), leaving the corners and the column next to them free."""
    if box.dummy or box.width < 5:
        return box.center, box.center
    return box.x + 2, box.x + box.width - 3


def _ports(box: Box, sources: list[Box], drops: list[int], merged: set) -> dict:
    """The column of ``box``'s top border each line from ``sources`` comes in at: one each,
    two columns apart at least (a line between two crossing lines is then always seen to
    cross), in the order of the sources' columns, so lines into the box do not cross near
    it. One line comes in at the centre; several spread towards the side each comes from,
    straight under its source where that is over the box. A column under or beside another
    box's line down (``drops``, the centres of the layer above that have lines) is avoided:
    the two lines would run in one column or side by side. Should the box have too few
    columns for its lines (only a dummy, which has one line, or a box wider than any
    drawing could be), lines share columns and the box is noted in ``merged``."""
    sources = sorted(sources, key=lambda b: b.center)
    lo, hi = _port_room(box)
    columns = list(range(lo, hi + 1))
    k = len(sources)
    if k == 1:
        ideal = [box.center]
    else:
        ideal = [min(max(s.center, lo), hi) for s in sources]
    if (hi - lo) // 2 + 1 < k:
        # Last resort: too few columns, so lines are spread over those there are and merge.
        merged.add(box.key)
        slots = list(range(lo, hi + 1, 2)) or [box.center]
        return {(s.key, box.key): slots[i * len(slots) // k] for i, s in enumerate(sources)}
    drop_set = set(drops)

    def cost(i: int, x: int) -> int:
        own = sources[i].center
        beside = sum(100 for d in (x - 1, x + 1) if d in drop_set and d != own)
        return abs(x - ideal[i]) + (1000 if x in drop_set and x != own else 0) + beside

    # Dynamic programming over the sources left to right: best[c] is the least cost of
    # placing sources 0..i with source i at columns[c]; each next one two columns on or more.
    n = len(columns)
    best = [cost(0, x) for x in columns]
    back: list[list[int]] = []
    for i in range(1, k):
        prefix, arg = [], []
        low, where = None, -1
        for c in range(n):
            if low is None or best[c] < low:
                low, where = best[c], c
            prefix.append(low)
            arg.append(where)
        new = [10**9] * n
        choice = [-1] * n
        for c in range(2, n):
            if prefix[c - 2] < 10**9:
                new[c] = prefix[c - 2] + cost(i, columns[c])
                choice[c] = arg[c - 2]
        back.append(choice)
        best = new
    c = min(range(n), key=lambda j: best[j])
    picked = [c]
    for choice in reversed(back):
        c = choice[c]
        picked.append(c)
    picked.reverse()
    return {(s.key, box.key): columns[c] for s, c in zip(sources, picked)}


def _order_tracks(tracked: list, boxes: dict, downs: dict, ports: dict) -> list:
    """The order, top to bottom, of the track rows of the channel below a layer: the fewest
    crossings a local search finds, never one line's tee column running into another's line
    down (``_above``), and as rarely as it can two lines side by side through a track that
    crosses both ("─││─", which still reads, but less plainly than "─│─")."""
    if len(tracked) < 2:
        return list(tracked)
    info = {}
    for s in tracked:
        cols = [ports[(s, b.key)] for b in downs[s]]
        centre = boxes[s].center
        info[s] = (centre, cols, min(cols + [centre]), max(cols + [centre]))
    cost = {(a, b): _above(info[a], info[b]) for a in tracked for b in tracked if a != b}
    # Pairs (x, y) where a line down from x's track runs beside y's line down to its track:
    # with x above y, each track between that crosses both columns draws them side by side.
    beside = [(x, y, min(p, info[y][0]), max(p, info[y][0])) for x in tracked for y in tracked
              if x != y for p in info[x][1] if abs(p - info[y][0]) == 1]

    def spans(c, lo, hi) -> int:
        return _BESIDE * int(info[c][2] < lo and hi < info[c][3])

    # Start from an order that keeps every such rule where the rules allow (a topological
    # order of "must be above", left to right otherwise), then swap neighbours while that
    # lowers the cost.
    must: dict = {s: set() for s in tracked}
    for (a, b), c in cost.items():
        if c >= _HARD and cost[(b, a)] < _HARD:
            must[a].add(b)  # b must be above a
    order, done = [], set()
    while len(order) < len(tracked):
        ready = [s for s in tracked if s not in done and must[s] <= done]
        pick = ready[0] if ready else next(s for s in tracked if s not in done)
        order.append(pick)
        done.add(pick)
    for _ in range(len(order)):
        changed = False
        at = {s: i for i, s in enumerate(order)}
        for i in range(len(order) - 1):
            a, b = order[i], order[i + 1]
            delta = cost[(b, a)] - cost[(a, b)]
            for x, y, lo, hi in beside:
                if x == a and at[y] > i + 1:
                    delta -= spans(b, lo, hi)  # b leaves the rows between x and y
                elif y == a and at[x] < i:
                    delta += spans(b, lo, hi)  # b comes between
                elif x == b and at[y] > i + 1:
                    delta += spans(a, lo, hi)
                elif y == b and at[x] < i:
                    delta -= spans(a, lo, hi)
            if delta < 0:
                order[i], order[i + 1] = b, a
                at[a], at[b] = i + 1, i
                changed = True
        if not changed:
            break
    return order


_HARD = 10**6
_BESIDE = 50  # the cost of two lines side by side through a track, against 1 a crossing


def _above(a: tuple, b: tuple) -> int:
    """The cost of line ``a``'s track row above ``b``'s: the crossings it makes (b's line
    down through a's track; a's lines down through b's track), or _HARD where one of a's
    lines down would run in b's column while b's still comes down to its track."""
    a_centre, a_cols, a_lo, a_hi = a
    b_centre, b_cols, b_lo, b_hi = b
    if b_centre in a_cols:
        return _HARD
    crossings = int(a_lo < b_centre < a_hi)
    crossings += sum(1 for x in a_cols if b_lo < x < b_hi)
    return crossings


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
    _push_apart(row, wanted, canvas_width)


def _push_apart(row: list[Box], wanted: list[int], canvas_width: int) -> None:
    """Each box at its wanted x or right of the one before it (a gap between), then pulled
    back left where the row would pass the canvas's right edge."""
    left = 0
    for b, want in zip(row, wanted):
        b.x = max(want, left)
        left = b.x + b.width + GAP
    right = canvas_width
    for b in reversed(row):
        b.x = max(min(b.x, right - b.width), 0)
        right = b.x - GAP


def _place_over(row: list[Box], downs: dict, ups: dict, canvas_width: int) -> None:
    """Move each box that is the only parent of all its children over the median centre of
    them, keeping the row's order and gaps (the others stay where they are)."""
    wanted = []
    for b in row:
        below = downs.get(b.key, ())
        if below and all(len(ups.get(c.key, ())) == 1 for c in below):
            centres = sorted(c.center for c in below)
            wanted.append(centres[(len(centres) - 1) // 2] - b.width // 2)
        else:
            wanted.append(b.x)
    _push_apart(row, wanted, canvas_width)


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
