"""Rendering a GraphDiff in the terminal with rich: the changes first, long runs collapsed.

Order of the output: a one-line verdict with the counts; a table of the numbers that moved
(nodes per kind, edges, levels, max width, critical path) with deltas; then the changed
nodes (param: old -> new), the added nodes, the removed nodes, and the edges rewired
between matched nodes. Nodes that look the same are listed once with "× N" — 300 added
copies of one kernel are one line. Every list stops at ``limit`` lines with "… N more".

Like render.py, this returns renderables and leaves width and colour to the caller's
Console; markers (+ - ~) carry the meaning, colour only repeats it, so piped output reads
the same.
"""

from __future__ import annotations

from rich.console import Group
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from ..diff.structural import GraphDiff, NodeChange
from ..model.graph_model import GraphModel, Node, node_signature
from .graph import kind_style, names_graphs, node_detail, node_name, short_id
from .text import NameCuts, format_bytes

# Default number of lines per list (changed / added / removed / edges).
DEFAULT_LIMIT = 20

# How many node ids a collapsed line names before it elides the rest.
_IDS_SHOWN = 3

_ADDED_STYLE = "green"
_REMOVED_STYLE = "red"
_CHANGED_STYLE = "yellow"


def render_diff(
    diff: GraphDiff,
    limit: int | None = DEFAULT_LIMIT,
    label_a: str | None = None,
    label_b: str | None = None,
):
    """The whole diff as one renderable: verdict, numbers, then changed/added/removed/edges.

    ``limit`` caps each list (None: no cap); ``label_a``/``label_b`` name the inputs (file
    names, scenarios) in the heading. Identical graphs render as the verdict and the table.
    """
    parts: list = []
    if label_a or label_b:
        heading = Table.grid(padding=(0, 1))
        heading.add_column(style="bold", no_wrap=True)
        heading.add_column(overflow="fold")
        # Labels are file names or scenarios: Text, so "[red]x.dot" prints as itself.
        heading.add_row("A", Text(label_a or ""))
        heading.add_row("B", Text(label_b or ""))
        parts.append(_Unpadded(heading))  # the shorter label without trailing spaces
    parts.append(render_verdict(diff))
    parts.append(render_numbers(diff))
    parts.extend(_change_sections(diff, limit, depth=0))
    return Group(*parts)


def render_verdict(diff: GraphDiff, inline: bool = False) -> Text:
    """One line: "identical" with the sizes, or the counts of each kind of change; what
    --ignore left out on a line of its own, or, ``inline`` (inside a row), after the counts."""
    if diff.identical:
        text = Text("identical", style="bold green")
        nodes, edges = diff.stats_a.nodes, diff.stats_a.edges
        text.append(f": {nodes:,} node{'s' if nodes != 1 else ''} and {edges:,} "
                    f"edge{'s' if edges != 1 else ''} match" + _ignore_note(diff))
        return text
    text = Text("different", style="bold yellow")
    text.append(": ")
    pieces = [
        (f"+{len(diff.added):,} added", _ADDED_STYLE),
        (f"-{len(diff.removed):,} removed", _REMOVED_STYLE),
        (f"~{len(diff.changed):,} changed", _CHANGED_STYLE),
        (f"{diff.unchanged:,} unchanged", ""),
    ]
    for i, (piece, style) in enumerate(pieces):
        if i:
            text.append(" · ")
        text.append(piece, style=style)
    if diff.edges_added or diff.edges_removed:
        added, removed = len(diff.edges_added), len(diff.edges_removed)
        text.append(f" · edges +{added:,} -{removed:,}")  # detailed under "Edges between matched nodes"
    if diff.ignore:  # a line of its own: the counts above may fill the width
        text.append((" " if inline else "\n") + _ignore_note(diff).strip())
    return text


def _ignore_note(diff: GraphDiff) -> str:
    return f" (ignoring {', '.join(sorted(diff.ignore))})" if diff.ignore else ""


def render_numbers(diff: GraphDiff) -> _Numbers:
    """Nodes (and per kind), edges, levels, max width, critical path: A, B and the delta."""
    sa, sb = diff.stats_a, diff.stats_b
    rows = [(Text("nodes"), f"{sa.nodes:,}", f"{sb.nodes:,}", _delta(sa.nodes, sb.nodes))]
    for kind, (count_a, count_b) in diff.kind_deltas().items():
        rows.append((Text("  " + kind, style=kind_style(kind)), f"{count_a:,}", f"{count_b:,}",
                     _delta(count_a, count_b)))
    for name, value_a, value_b in (
        ("edges", sa.edges, sb.edges),
        ("levels", sa.levels, sb.levels),
        ("max width", sa.max_width, sb.max_width),
        ("critical path", sa.critical_path, sb.critical_path),
    ):
        rows.append((Text(name), f"{value_a:,}", f"{value_b:,}", _delta(value_a, value_b)))
    return _Numbers(rows)


class _Numbers:
    """The numbers table, laid out for the console's width: label, then A, B and the delta,
    right-aligned, four columns apart. The numbers are never cut (a count read as "1,0…" is
    no count): in a narrow terminal the columns close up to two, then one, then the labels
    are shortened."""

    def __init__(self, rows: list[tuple]):
        self.rows = [tuple(cell if isinstance(cell, Text) else Text(cell) for cell in row)
                     for row in rows]

    def __rich_console__(self, console, options):
        width = options.max_width
        header = (Text(""), Text("A"), Text("B"), Text("Δ"))
        cells = [header, *self.rows]
        widths = [max(row[i].cell_len for row in cells) for i in range(4)]
        numbers = sum(widths[1:])
        gap = next((g for g in (4, 2) if widths[0] + numbers + 3 * g <= width), 1)
        label_width = max(min(widths[0], width - numbers - 3 * gap), 1)
        for index, row in enumerate(cells):
            line = Text()
            label = row[0].copy()
            label.truncate(label_width, overflow="ellipsis", pad=True)
            line.append_text(label)
            numbers = Text(style="bold") if index == 0 else Text()  # the header: A B Δ
            for cell, cell_width in zip(row[1:], widths[1:]):
                numbers.append(" " * (gap + cell_width - cell.cell_len))
                numbers.append_text(cell)
            line.append_text(numbers)
            line.rstrip()
            yield line


def _delta(a: int, b: int) -> Text:
    if a == b:
        return Text("")
    return Text(f"{b - a:+,}", style="bold " + (_ADDED_STYLE if b > a else _REMOVED_STYLE))


# ------------------------------------------------------------------ node listings


def _change_sections(diff: GraphDiff, limit: int | None, depth: int) -> list:
    # Ids as show labels them: a nested graph's with their CUDA graph (g12#0, not #0, which
    # names a node of the top graph), and the top graph's too when a file holds several.
    with_graph = depth > 0 or names_graphs(diff.a) or names_graphs(diff.b)
    parts: list = []
    names = NameCuts()  # the names the lists below show, filled as their rows are made
    if diff.changed:
        parts.append(_heading(f"Changed ({len(diff.changed):,})", _CHANGED_STYLE))
        parts.extend(_changed_rows(diff, limit, depth, with_graph, names))
    if diff.added:
        parts.append(_heading(f"Added ({len(diff.added):,})", _ADDED_STYLE))
        parts.append(_node_groups(diff.b, diff.added, "+", _ADDED_STYLE, limit, with_graph,
                                  names))
    if diff.removed:
        parts.append(_heading(f"Removed ({len(diff.removed):,})", _REMOVED_STYLE))
        parts.append(_node_groups(diff.a, diff.removed, "-", _REMOVED_STYLE, limit, with_graph,
                                  names))
    if diff.edges_added or diff.edges_removed:
        parts.append(
            _heading(
                f"Edges between matched nodes (+{len(diff.edges_added):,} -{len(diff.edges_removed):,})",
                "bold",
            )
        )
        parts.append(_edge_rows(diff, limit, with_graph))
    return parts


def _heading(title: str, style: str) -> Text:
    return Text("\n" + title, style="bold " + style if style != "bold" else "bold")


class _NodeRows:
    """Rows of marker, count, kind, what, ids, fitted to the console's width at render time.

    Marker, count and kind carry the meaning and always keep their full width (memset and
    memcpy must not both become "me…" on a narrow terminal); the name is shortened first,
    with an ellipsis (text.NameCuts), down to _NAME_LEAST characters; then the ids go, before
    what follows the name in the row (a change ``grid 4 -> 16``, a launch or a size) is cut,
    as the README says."""

    _NAME_LEAST = 8  # characters of a name kept before what follows it is cut

    def __init__(self, names: NameCuts):
        self.rows: list[tuple] = []
        self.name_lengths: list[int] = []
        # every row's name, of this table and of the diff's other lists (shared): names cut
        # alike are told apart (a kernel removed and its look-alike added)
        self.names = names
        self.least: list[int] = []  # cells of each row's "what" the ids must leave room for

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def add_row(self, marker="", count="", kind="", what="", ids="", name_len: int = 0,
                whole: bool = True) -> None:
        """``name_len``: the cells of ``what`` that are the node's name (shortened first).
        ``whole``: the ids give way before ``what`` (its name shortened) is cut; False for a
        row whose end may be cut (a child graph's verdict, detailed below it)."""
        cells = tuple(cell if isinstance(cell, Text) else Text(str(cell))
                      for cell in (marker, count, kind, what, ids))
        self.rows.append(cells)
        self.name_lengths.append(name_len)
        self.names.add(cells[3].plain[:name_len])
        what = cells[3]
        # cells _fitted can take off: the name down to _NAME_LEAST characters and an ellipsis
        shortened = max(0, what[:name_len].cell_len - what[:self._NAME_LEAST].cell_len - 1)
        self.least.append(what.cell_len - shortened if whole else 12)

    def _fitted(self, what: Text, name_len: int, width: int) -> Text:
        """``what`` in ``width`` cells: the name (its first ``name_len`` characters)
        shortened first (text.NameCuts: at its end, or in its middle where another row's name
        would be cut to the same start), then the end cut."""
        if what.cell_len <= width or name_len <= self._NAME_LEAST:
            return what.copy()
        rest = what[name_len:]
        keep = name_len - 1
        # characters, not cells, are cut: shrink until the cells fit (wide characters count 2)
        name = what[:name_len]
        while keep > self._NAME_LEAST and self.names.cut(name, keep + 1).cell_len + \
                rest.cell_len > width:
            keep -= 1
        return Text.assemble(self.names.cut(name, keep + 1), rest)

    def __rich_console__(self, console, options):
        width = options.max_width
        count_w = max((r[1].cell_len for r in self.rows), default=0)
        kind_w = max((r[2].cell_len for r in self.rows), default=0)
        what_w = max((r[3].cell_len for r in self.rows), default=0)
        ids_w = max((r[4].cell_len for r in self.rows), default=0)
        room = width - (1 + 1 + count_w + 1 + kind_w + 1)
        if ids_w and room - ids_w - 1 < min(what_w, max(self.least, default=0)):
            ids_w = 0  # too narrow: the ids give way before a change or a launch is cut
        what_w = max(min(what_w, room - (ids_w + 1 if ids_w else 0)), 1)
        for (marker, count, kind, what, ids), name_len in zip(self.rows, self.name_lengths):
            line = Text()
            line.append_text(marker)
            line.append(" " + " " * (count_w - count.cell_len))
            line.append_text(count)
            line.append(" ")
            line.append_text(kind)
            line.append(" " * (kind_w - kind.cell_len + 1))
            what = self._fitted(what, name_len, what_w)
            what.truncate(what_w, overflow="ellipsis", pad=bool(ids_w))
            line.append_text(what)
            if ids_w:
                line.append(" ")
                line.append_text(ids)
            line.rstrip()
            line.truncate(width, overflow="ellipsis")
            yield line


def _listing_table(names: NameCuts) -> _NodeRows:
    return _NodeRows(names)


def _describe(node: Node) -> str:
    name = node_name(node)
    detail = node_detail(node)
    return f"{name} {detail}".strip() if name else detail


def _identity(node: Node) -> object:
    """What makes two nodes the same for grouping: their signature (its repr where a
    parameter of a saved model is not hashable)."""
    signature = node_signature(node)
    try:
        hash(signature)
    except TypeError:
        return repr(signature)
    return signature


def _ids_text(ids: list[str], with_graph: bool) -> str:
    shorts = [short_id(i, with_graph) for i in ids]
    if len(shorts) <= _IDS_SHOWN:
        return ", ".join(shorts)
    return f"{shorts[0]}, {shorts[1]} … {shorts[-1]}"


def _node_groups(model: GraphModel, node_ids: list[str], marker: str, style: str, limit,
                 with_graph: bool, names: NameCuts):
    """Identical nodes grouped (the same signature: kind, full name, every parameter the diff
    compares, child graph), first seen first. Nodes that only print alike (a name cut short,
    a parameter the row does not show) stay on rows of their own."""
    groups: dict[object, list[str]] = {}
    for node_id in node_ids:
        groups.setdefault(_identity(model.node(node_id)), []).append(node_id)
    table = _listing_table(names)
    items = list(groups.items())
    shown = _cap(items, limit)
    for _, ids in shown:
        node = model.node(ids[0])
        kind, description = node.kind, _describe(node)
        table.add_row(
            Text(marker, style=style),
            f"{len(ids):,} ×" if len(ids) > 1 else "",
            Text(kind, style=kind_style(kind)),
            Text(description),
            Text(_ids_text(ids, with_graph), style="dim"),
            name_len=len(node_name(node) or ""),
        )
    _more_row(table, len(items) - len(shown), columns=5)
    return table


def _changed_rows(diff: GraphDiff, limit: int | None, depth: int, with_graph: bool,
                  names: NameCuts) -> list:
    """Changed nodes grouped by identical change; nested child-graph diffs indented below."""
    groups: dict[tuple, list[NodeChange]] = {}
    for change in diff.changed:
        key = (
            change.kind,
            change.name,
            tuple(sorted((k, repr(v)) for k, v in change.params.items())),
            id(change) if change.child is not None else None,  # child diffs stay separate
        )
        groups.setdefault(key, []).append(change)
    items = list(groups.values())
    shown = _cap(items, limit)
    out: list = []
    table = _listing_table(names)
    for changes in shown:
        first = changes[0]
        node = diff.a.node(first.a_id)
        what = Text(node_name(node) or "")
        # a kernel's long name gives way to its change; a child graph's "6 nodes inside" is
        # short, and its verdict is cut at the end as before
        name_len = len(what.plain) if first.child is None else 0
        for key, (old, new) in sorted(first.params.items()):
            what.append(f"  {key} ")
            what.append(_value_text(key, old), style=_REMOVED_STYLE)
            what.append(" -> ")
            what.append(_value_text(key, new), style=_ADDED_STYLE)
        if first.child is not None:
            what.append("  child graph: ")
            what.append_text(render_verdict(first.child, inline=True))
            whole = False  # its verdict may be cut: the nested section below details it
        else:
            whole = True
        ids = [f"{short_id(c.a_id, with_graph)}->{short_id(c.b_id, with_graph)}" for c in changes]
        table.add_row(
            Text("~", style=_CHANGED_STYLE),
            f"{len(changes):,} ×" if len(changes) > 1 else "",
            Text(first.kind, style=kind_style(first.kind)),
            what,
            Text(", ".join(ids) if len(ids) <= _IDS_SHOWN else f"{ids[0]}, {ids[1]} … {ids[-1]}",
                 style="dim"),
            name_len=name_len,
            whole=whole,
        )
        if first.child is not None and depth < 3:
            # Flush what is listed so far, then the nested diff indented under its node.
            out.append(table)
            nested = _change_sections(first.child, limit, depth + 1)
            out.append(_Unpadded(Group(*nested), indent=4))
            table = _listing_table(names)
    _more_row(table, len(items) - len(shown), columns=5)
    if table.row_count:
        out.append(table)
    return out


class _Unpadded:
    """A renderable, indented by ``indent`` spaces, its lines without trailing spaces (rich's
    Padding and a table grid fill every line, blank ones too, to the full width)."""

    def __init__(self, renderable, indent: int = 0):
        self.renderable, self.indent = renderable, indent

    def __rich_console__(self, console, options):
        inner = options.update_width(max(1, options.max_width - self.indent))
        for line in console.render_lines(self.renderable, inner, pad=False):
            while line and not line[-1].text.strip():
                line.pop()  # trailing blanks
            if line and line[-1].text != line[-1].text.rstrip():
                last = line[-1]
                line[-1] = Segment(last.text.rstrip(), last.style, last.control)
            if line:
                if self.indent:
                    yield Segment(" " * self.indent)
                yield from line
            yield Segment.line()


def _edge_rows(diff: GraphDiff, limit: int | None, with_graph: bool) -> Group:
    rows = [("+", _ADDED_STYLE, diff.b, edge) for edge in diff.edges_added]
    rows += [("-", _REMOVED_STYLE, diff.a, edge) for edge in diff.edges_removed]
    shown = _cap(rows, limit)
    lines: list = [_EdgeLine(marker, style, model, edge, "B" if model is diff.b else "A",
                             with_graph) for marker, style, model, edge in shown]
    hidden = len(rows) - len(shown)
    if hidden > 0:
        lines.append(Text.assemble("  ", _more_text(hidden)))
    return Group(*lines)


class _EdgeLine:
    """One edge, fitted to the terminal's width at render time: the marker, both ends' ids
    and kinds and which graph's ids these are stay; the kernel names are shortened as far as
    needed (to nothing), and only then is the line cut."""

    _NAME_LENGTHS = (40, 28, 20, 14, 10, 6, 0)

    def __init__(self, marker: str, style: str, model: GraphModel, edge: tuple, side: str,
                 with_graph: bool = False):
        self.marker, self.style, self.model, self.edge, self.side = marker, style, model, edge, side
        self.with_graph = with_graph

    def _line(self, name_len: int) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(self.marker, style=self.style)
        text.append(" ")
        text.append_text(_edge_end(self.model, self.edge[0], name_len, self.with_graph))
        text.append(" -> ")
        text.append_text(_edge_end(self.model, self.edge[1], name_len, self.with_graph))
        text.append(f"  (ids of {self.side})", style="dim")
        return text

    def __rich_console__(self, console, options):
        for name_len in self._NAME_LENGTHS:
            line = self._line(name_len)
            if line.cell_len <= options.max_width:
                break
        yield line


def _edge_end(model: GraphModel, node_id: str, name_len: int = 40,
              with_graph: bool = False) -> Text:
    node = model.node(node_id)
    text = Text(short_id(node_id, with_graph) + " ", style="bold")
    text.append(node.kind, style=kind_style(node.kind))
    name = node_name(node, max_len=name_len) if name_len else ""
    if name:
        text.append(" " + name)
    return text


def _cap(items: list, limit: int | None) -> list:
    if limit is None or len(items) <= limit:
        return items
    return items[: max(limit, 0)]


def _more_row(table: Table, hidden: int, columns: int) -> None:
    if hidden > 0:
        cells = [""] * columns
        cells[min(3, columns - 1)] = _more_text(hidden)
        table.add_row(*cells)


def _more_text(hidden: int) -> Text:
    """What stands for the lines a list leaves out at its limit."""
    return Text(f"… {hidden:,} more", style="dim")


def _value_text(key: str, value) -> str:
    """A parameter value as a user reads it: dims "(8,4,4)" or "8", sizes in bytes and KiB."""
    if isinstance(value, tuple):
        if len(value) == 3 and value[1:] == (1, 1):
            return str(value[0])
        return "(" + ",".join(str(v) for v in value) + ")"
    if key == "bytes" and isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,} B" if value < 1024 else f"{value:,} B ({format_bytes(value)})"
    return str(value)
