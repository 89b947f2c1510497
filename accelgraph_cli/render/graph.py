"""Rendering a GraphModel in the terminal with rich: summary, listing, and a box drawing.

Every function returns a rich renderable; the caller's Console decides width, colour and
NO_COLOR, so nothing here hard-codes a width or writes to stdout. Piped output (no colour,
no terminal) stays readable: styles only add colour, never meaning.
"""

from __future__ import annotations

import re
import sys
from itertools import islice

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.table import Table
from rich.text import Text

from ..model.demangle import demangler_name, is_mangled, short_kernel_name
from ..model.graph_model import KINDS, GraphModel, Node, Run, chain_runs
from . import boxes
from .text import NameCuts, format_bytes, printable

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
    """'#3' for CUDA's 'graph_0_node_3' ('g0#3' with_graph, for nested graphs), else the id
    on one line (a line break in a DOT id would split the listing's row)."""
    m = _CUDA_ID.match(node_id)
    if not m:
        return printable(node_id)
    return f"g{m.group(1)}#{m.group(2)}" if with_graph else f"#{m.group(2)}"


def names_graphs(model: GraphModel) -> bool:
    """Whether the top graph's labels name their CUDA graph (``g3#0``), as a nested graph's
    always do: when its nodes come from several CUDA graphs (a file holding several
    top-level graphs), where ``#0`` alone would name one node of each."""
    prefix = None
    for node in model.nodes:
        if prefix is not None and node.id.startswith(prefix):
            continue  # the common case, without a regex match per node
        m = _CUDA_ID.match(node.id)
        if m is not None:
            if prefix is not None:
                return True
            prefix = f"graph_{m.group(1)}_node_"
    return False


def node_label(model: GraphModel, graph: GraphModel, node_id: str) -> str:
    """A node of ``graph`` (``model`` or a graph nested in it) as the listing and drawings of
    ``model`` label it."""
    return short_id(node_id, with_graph=graph is not model or names_graphs(model))


_SHORT_REF = re.compile(r"#?(\d+)")
_NESTED_REF = re.compile(r"[gG]\d+#\d+")


def find_nodes(model: GraphModel, ref: str) -> list[tuple[GraphModel, str]]:
    """Every (graph, node id) that ``ref`` names: a full id (at any nesting level), ``#3`` or
    ``3`` (node 3 of the top graph; one per CUDA graph in a file of several), or ``g10#0``
    (node 0 of CUDA's graph 10): the forms the listing prints."""
    graphs = list(model.walk())
    for graph in graphs:
        if graph.has_node(ref):
            return [(graph, ref)]
    if _SHORT_REF.fullmatch(ref):
        number = ref.lstrip("#")
        return [(model, n.id) for n in model.nodes if n.id.rsplit("_", 1)[-1] == number]
    if _NESTED_REF.fullmatch(ref):
        ref = "g" + ref[1:]  # (G10#0 as g10#0)
        return [(g, n.id) for g in graphs for n in g.nodes if short_id(n.id, with_graph=True) == ref]
    return []


def find_node(model: GraphModel, ref: str) -> tuple[GraphModel, str]:
    """The graph holding the node ``ref`` names, and its id (see find_nodes); KeyError when
    none or several match."""
    hits = find_nodes(model, ref)
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
        return printable(short_kernel_name(node.display_name, max_len=max_len))
    if node.kind == "unknown" and node.name:
        label = " ".join(node.name.split())
        return label if len(label) <= max_len else label[: max_len - 1] + "…"
    if node.child is not None:
        total = node.child.total_nodes()
        inside = f"{total} node{'s' if total != 1 else ''} inside"
        conditional = node.params.get("conditional_type")  # WHILE / IF / SWITCH (verbose dumps)
        return f"{conditional}, {inside}" if conditional else inside
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
    path = len(model.critical_path())
    table.add_row("Critical path", f"{path:,} node{'s' if path != 1 else ''}")
    nested = [g for g in model.walk()][1:]
    if nested:
        inner = sum(len(g.nodes) for g in nested)
        table.add_row("Nested graphs", f"{len(nested):,}  ({inner:,} node{'s' if inner != 1 else ''} inside)")
    alloc_nodes = sum(1 for g in model.walk() for n in g.nodes if n.kind == "mem_alloc")
    if alloc_nodes:
        sized = any("bytes" in n.params for g in model.walk() for n in g.nodes if n.kind == "mem_alloc")
        # A basic dump does not carry allocation sizes: 0 B would be a wrong number.
        amount = format_bytes(model.bytes_allocated()) if sized else "size unknown (basic dump)"
        table.add_row(
            "Allocated",
            f"{amount}  in {alloc_nodes:,} mem_alloc node{'s' if alloc_nodes != 1 else ''}",
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
    "… N more rows (--limit N)". Column widths are fitted to the console at render time: the name column
    gives way first, then the parents, then the launch column.
    """
    # Only the rows shown are made: a 50,000-node fork/join has some 40,000 rows, and the
    # rest are only counted.
    rows = _listing_rows(model, depth=0, with_graph=names_graphs(model))
    # (a --limit past what islice takes means no limit at all)
    shown = list(rows if limit is None else islice(rows, min(max(limit, 0), sys.maxsize)))
    hidden = 0 if limit is None else _listing_row_count(model) - len(shown)
    more = None
    if hidden > 0:
        # rows, not nodes (a row may stand for thousands), and how to see them; a line of
        # its own under the table, so no column's width cuts it short
        more = Text(f"… {hidden:,} more row{'s' if hidden != 1 else ''} (--limit N)", style="dim")
    return _Listing(shown, more)


def _listing_row_count(model: GraphModel) -> int:
    """How many rows _listing_rows yields for this graph, nested graphs included."""
    count = 0
    for run in chain_runs(model):
        count += 1
        if len(run.ids) == 1:
            child = model.node(run.ids[0]).child
            if child is not None:
                count += _listing_row_count(child)
    return count


_HEADERS = ("level", "node", "×", "kind", "name", "launch / size", "after")


class _Listing:
    """The listing table, sized when the console says how wide it is."""

    def __init__(self, rows: list[tuple], more: Text | None = None):
        self.rows = rows
        self.more = more  # the "… N more rows" line under the table, if rows were left out

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
        # Still too wide once the columns have given way (a terminal of fewer than 50 to 65
        # columns, by the graph): the launch column, then the parents, then the names, then
        # the kinds are left out whole, rather than every column cut to a character or two
        # (levels, node ids and repeat counts cut short would mislead); a line under the
        # table says so.
        shown = list(range(len(_HEADERS)))
        if self.rows and not any(str(row[5]).strip() for row in self.rows):
            # a basic dump has no launch dimensions or sizes: an empty column would keep
            # cells the names need (the summary says the dump is basic)
            shown.remove(5)
        # The launch and parents columns go before the name column is cut below what still
        # reads (12 characters: "sgemm_s…uce") or a kind is cut; only then are names and
        # kinds cut further, and then left out, the names first.
        widths, excess = _fitted_widths(natural, shown, options.max_width, _READABLE)
        for column in (5, 6):
            if excess <= 0:
                break
            if column in shown:  # (no launch column: nothing to leave out)
                shown.remove(column)
                widths, excess = _fitted_widths(natural, shown, options.max_width, _READABLE)
        if excess > 0:
            widths, excess = _fitted_widths(natural, shown, options.max_width)
        for column in (4, 3):
            if excess <= 0:
                break
            shown.remove(column)
            widths, excess = _fitted_widths(natural, shown, options.max_width)
        table = Table(box=None, pad_edge=False, show_edge=False, padding=(0, 1), header_style="bold")
        for c in shown:
            table.add_column(
                _HEADERS[c],
                justify="right" if c in (0, 2) else "left",
                no_wrap=True,
                overflow="ellipsis",
                width=widths[c],
                style="dim" if c in (0, 6) else None,
            )
        names = NameCuts(str(row[4]) for row in self.rows if not isinstance(row[4], _BlockName))
        for row in self.rows:
            table.add_row(*(row[c].fitted(widths[c]) if isinstance(row[c], (_BlockName, _Parents))
                            else names.cut(row[c], widths[c]) if c == 4
                            else row[c] for c in shown))
        yield table
        left_out = [_HEADERS[c] for c in range(len(_HEADERS))
                    if c not in shown and (c != 5 or any(str(row[5]).strip() for row in self.rows))]
        if left_out:
            listed = (" and ".join(left_out) if len(left_out) < 3 else
                      ", ".join(left_out[:-1]) + " and " + left_out[-1])
            yield Text(f"({listed} left out at {options.max_width} columns)", style="dim")
        if self.more is not None:
            yield self.more


# Column (index into _HEADERS), narrowest width, in the order the columns give way: the names
# and parents further in a second round, so that the level and the repeat count, numbers a
# cut would falsify, are cut last. _READABLE cuts no name column below 12 characters, where
# a name still reads, and no kind (event_record and event_wait must not both read "event…").
_GIVE_WAY = ((4, 16), (6, 8), (5, 12), (4, 8), (1, 8), (3, 6), (5, 8), (4, 4), (6, 4))
_READABLE = ((4, 16), (6, 8), (5, 12), (4, 12), (1, 8), (5, 8), (6, 4))


def _fitted_widths(natural: list[int], shown: list[int], max_width: int,
                   steps: tuple = _GIVE_WAY) -> tuple[list[int], int]:
    """The listing's column widths for the columns ``shown`` in ``max_width`` cells, and by how
    much they still exceed it (0 or less: they fit)."""
    widths = list(natural)
    budget = max_width - 2 * (len(shown) - 1)  # padding: two spaces between
    # Give way in the order of ``steps``, down to their minimum widths (a column already
    # narrower stays as it is).
    excess = sum(widths[c] for c in shown) - budget
    for column, minimum in steps:
        if excess <= 0:
            break
        if column in shown:
            widths[column] = max(min(minimum, widths[column]), widths[column] - excess)
            excess = sum(widths[c] for c in shown) - budget
    return widths, excess


class _Parents(Text):
    """The "after" cell: where the column is too narrow for "#0, #2, #4 +2", fewer ids and a
    larger count ("#0 +4"), never an id cut in half with the count lost ("#0, #2, #…")."""

    def __init__(self, ids: list[str], total: int):
        self.ids, self.total = ids[:3], total  # the first three ids, of ``total``
        super().__init__(self._joined(len(self.ids)) if total else "—")

    def _joined(self, shown: int) -> str:
        text = ", ".join(self.ids[:shown])
        return text + (f" +{self.total - shown}" if self.total > shown else "")

    def fitted(self, width: int) -> Text:
        for shown in range(len(self.ids), 0, -1):
            text = self._joined(shown)
            if len(text) <= width:
                return self if shown == len(self.ids) else Text(text)
        return self


class _BlockName(Text):
    """The name cell of a repeated block ("cupy_add → cupy_multiply"): where the column is too
    narrow, each name is shortened in turn, so the row never reads as a run of the first
    kernel alone ("cupy_add__float32_fl…" beside "× 5,000")."""

    def __init__(self, prefix: str, names: list[str]):
        super().__init__(prefix + " → ".join(names))
        self.prefix, self.names = prefix, names

    def fitted(self, width: int) -> Text:
        if self.cell_len <= width:
            return self
        arrows = 3 * (len(self.names) - 1)
        each = max(2, (width - len(self.prefix) - arrows) // len(self.names))
        return Text(self.prefix + " → ".join(
            name if len(name) <= each else name[: each - 1] + "…" for name in self.names
        ))


def run_labels(model: GraphModel, run: Run, max_len: int = 60) -> tuple[str, str, str]:
    """(kind, name, detail) describing a Run's block in one line: "cupy_add → cupy_mul".

    A block of several nodes shows its names joined by arrows; kind and detail are shown
    when every node of the block shares them. The repeat count is ``run.repeats``.
    """
    block = [model.node(i) for i in run.block]
    kinds = list(dict.fromkeys(n.kind for n in block))
    kind = kinds[0] if len(kinds) == 1 else "/".join(kinds)
    details = {node_detail(n) for n in block}
    detail = details.pop() if len(details) == 1 else ""
    return kind, " → ".join(_block_names(block, max_len)), detail


def _block_names(block: list[Node], max_len: int) -> list[str]:
    """The name of each node of a Run's block, shortened to share ``max_len`` between them."""
    if len(block) == 1:
        return [node_name(block[0], max_len=max_len)]
    each = max(8, max_len // len(block) - 3)
    return [node_name(n, max_len=each) or n.kind for n in block]


def _listing_rows(model: GraphModel, depth: int, with_graph: bool):
    """The rows of the listing; ``with_graph``: ids name their CUDA graph (g10#0)."""
    indent = "  " * depth
    nested = depth > 0
    runs = chain_runs(model)
    level_of = model.level_of
    runs.sort(key=lambda run: level_of(run.ids[0]))  # stable: topological within a level
    previous_level = None
    for run in runs:
        first_id, last_id = run.ids[0], run.ids[-1]
        start, end = level_of(first_id), level_of(last_id)
        level_text = str(start) if start == end else f"{start}–{end}"
        if start == previous_level or nested:
            level_text = ""  # grouped under the level printed above; nested: not our levels
        # after a run over several levels ("0–5") the next row's level is printed again,
        # also where it is the same start (under "0–5" a bare row read as inside the range)
        previous_level = start if start == end else None
        ids = short_id(first_id, with_graph)
        if len(run.ids) > 1:
            ids += "…" + short_id(last_id, with_graph)
        kind, label, detail = run_labels(model, run)
        prefix = indent + ("└ " if nested else "")
        if len(run.block) > 1:
            name = _BlockName(prefix, _block_names([model.node(i) for i in run.block], 60))
        else:
            name = Text(prefix + label)
        count = Text(_times(run), style="bold") if len(run.ids) > 1 else ""
        parents = model.parents(first_id)
        after = _Parents([short_id(p, with_graph) for p in parents[:3]], len(parents))
        # Every cell is Text: ids, names and details come from the dump, never markup.
        yield (
            Text(level_text),
            Text(indent + ids),
            count,
            Text(kind, style=kind_style(kind)),
            name,
            Text(detail),
            after,
        )
        # A run repeats look-alike nodes (a child graph's structure is part of the signature
        # that made the run): the graphs of its first block are listed under the row.
        for node_id in run.block:
            child = model.node(node_id).child
            if child is not None:
                yield from _listing_rows(child, depth + 1, with_graph=True)


def _times(run) -> str:
    """How many nodes a collapsed run stands for: "× 5,000" for one node repeated, "2 × 5,000"
    for a block of two repeated (10,000 nodes, not 5,000)."""
    block = len(run.block)
    return f"{block} × {run.repeats:,}" if block > 1 else f"× {run.repeats:,}"


# ---------------------------------------------------------------------------- drawing


def render_focus(model: GraphModel, node_id: str, depth: int = 2, nested: bool = False):
    """A box-and-arrow drawing of a node's neighbourhood: ``depth`` levels up and down.

    Ancestors reachable within ``depth`` edges above, descendants within ``depth`` below,
    drawn in layers with fork/join lines; the focused node is highlighted. Identical chains
    are collapsed into one box "× N". ``nested``: ``model`` is a graph nested in the one
    shown, whose boxes are labelled as the listing labels them (g10#0). Raises KeyError for
    an unknown node id.
    """
    model.node(node_id)  # KeyError early, with the id
    keep = {node_id}
    for step in (model.parents, model.children):
        # each way searched on its own: in a graph with a cycle (generic DOT) a node reached
        # going up is still gone through going down
        seen = {node_id}
        frontier = [node_id]
        for _ in range(max(depth, 0)):
            if not frontier:  # nothing further that way: a --depth past the graph's own ends
                break
            nxt = []
            for current in frontier:
                for other in step(current):
                    if other not in seen:
                        seen.add(other)
                        nxt.append(other)
            frontier = nxt
        keep |= seen
    return GraphDrawing(model, keep, focus=node_id, with_graph=nested or names_graphs(model))


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
    return GraphDrawing(model, None, focus=None, with_graph=names_graphs(model))


# What a box shows, most first: (name length, launch/size line). Whole names go before the
# launch line does, and the launch line before names are cut short.
_DETAIL_LEVELS = ((36, True), (28, True), (20, True), (36, False), (28, False), (20, False),
                  (14, False), (10, False))


class GraphDrawing:
    """A layered box drawing of (part of) a graph, laid out at render time for the width the
    console offers (render/boxes.py): each layer gets the longest names that fit, and a layer
    too wide even so folds the rest into a "+N more" box that keeps their lines."""

    def __init__(self, model: GraphModel, node_ids: set | None, focus: str | None,
                 with_graph: bool = False):
        """Draw the nodes ``node_ids`` of ``model`` (None: all of them), ``focus`` highlighted;
        ``with_graph``: label them with their CUDA graph (g10#0), not #0."""
        self.model = model
        self.node_ids = node_ids
        self.focus = focus
        self.with_graph = with_graph

    def layout(self, width: int) -> boxes.Layout:
        """The drawing laid out for ``width`` columns (boxes, links, canvas)."""
        model = self.model
        if self.node_ids is not None and len(self.node_ids) < len(model.nodes):
            # A neighbourhood: collapse runs within the kept nodes only.
            model = GraphModel(
                [n for n in model.nodes if n.id in self.node_ids],
                [(a, b) for a, b in model.edges if a in self.node_ids and b in self.node_ids],
            )
        alone = frozenset([self.focus]) if self.focus else frozenset()
        runs = {run.ids[0]: run for run in chain_runs(model, alone=alone)}
        rank = {key: r for r, key in enumerate(runs)}
        edges = sorted(_run_edges(model, runs), key=lambda e: (rank[e[0]], rank[e[1]]))
        focus_box = self.focus if self.focus and self.focus in runs else None  # alone in its run

        def lines_of(key: str, level: int) -> boxes.Lines:
            name_len, with_detail = _DETAIL_LEVELS[level]
            run = runs[key]
            ids = short_id(run.ids[0], self.with_graph)
            if len(run.ids) > 1:
                ids += "…" + short_id(run.ids[-1], self.with_graph)
            kind, name, detail = run_labels(model, run, max_len=name_len)
            count = " " + _times(run) if len(run.ids) > 1 else ""
            # the focused box says so in words too: its bold border and reversed title are
            # lost in a pipe or with NO_COLOR
            mark = "  ◀ focus" if key == focus_box else ""
            lines = [(f"{ids} {kind}{count}{mark}", kind_style(kind))]
            if name:
                lines.append((name, ""))
            if detail and with_detail and len(detail) <= name_len + 10:
                lines.append((detail, "dim"))
            return lines

        layout = boxes.draw(list(runs), edges, lines_of, len(_DETAIL_LEVELS), width,
                            focus=focus_box)
        layout.undrawn_edges = len(layout.undrawn) + _edges_within_runs(model, runs)
        return layout

    def readable_layout(self, width: int) -> boxes.Layout:
        """The layout at ``width`` columns, or, where some box's lines would meet another's
        (``Layout.ambiguous``: the picture would read as edges that do not exist), the first
        of a few narrower widths at which none do; failing those, the one at ``width``."""
        layout = self.layout(width)
        if not layout.ambiguous or layout.too_wide:
            return layout
        for narrower in range(width - 6, max(width // 2, 30) - 1, -6):
            other = self.layout(narrower)
            if other.too_wide:
                break
            if not other.ambiguous:
                return other
        return layout

    def _instead(self, wider: bool = True) -> str:
        """What draws it (or part of it) when this drawing cannot be drawn."""
        instead = "a smaller --depth draws less of it" if self.focus else \
            "show --focus NODE draws a node's neighbourhood"
        return f"a wider terminal, or {instead}" if wider else instead

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        layout = self.readable_layout(options.max_width)
        if layout.too_wide:
            yield Text(f"Not drawn: one layer needs {layout.too_wide:,} columns, more than the "
                       f"{options.max_width:,} here (the lines passing through it, or into its "
                       f"'+N more' box); {self._instead()}.",
                       style="dim")
            return
        if layout.ambiguous:
            yield Text(f"Not drawn: the lines of {len(layout.ambiguous):,} boxes would run into "
                       f"other boxes' lines (at this width and the narrower ones tried) and read "
                       f"as edges that do not exist; {self._instead(wider=False)}.",
                       style="dim")
            return
        hidden = layout.undrawn_edges
        if hidden:
            # Lines run down only: an edge back up a cycle (generic DOT) has none. Say so, so
            # that no edge is missing from the picture unnoticed.
            edges = "1 edge is" if hidden == 1 else f"{hidden:,} edges are"
            them = "it" if hidden == 1 else "them"
            yield Text(f"{edges} not drawn (back up a cycle); the listing has {them}.",
                       style="dim")
        yield from layout.canvas.rows()


def _edges_within_runs(model: GraphModel, runs: dict) -> int:
    """The edges of ``model`` that a box of ``runs`` hides: from a node of a run to one of the
    same run that is not the next in its chain (a self-loop, a cycle back into the run)."""
    run_of = {node_id: first for first, run in runs.items() for node_id in run.ids}
    chained = {pair for run in runs.values() for pair in zip(run.ids, run.ids[1:])}
    return sum(1 for a, b in model.edges
               if a in run_of and run_of[a] == run_of.get(b) and (a, b) not in chained)


def _run_edges(model: GraphModel, runs: dict) -> set[tuple[str, str]]:
    """The edges between runs (first id -> first id) of ``runs``, chain_runs of ``model`` by
    first id. Only a run's last node has edges out of its run: every other node of it has one
    edge, to the next node, and every edge out of a run ends at the first node of a run."""
    position, _, children = model.adjacency()
    nodes = model.nodes
    between = set()
    for first, run in runs.items():
        for c in children[position[run.ids[-1]]]:
            other = nodes[c].id
            if other != first:  # a cycle back into its own run (generic DOT) is no edge
                between.add((first, other))
    return between


def render_graph_or_listing(model: GraphModel, limit: int | None = None):
    """The drawing for a small graph followed by the listing; the listing alone when large;
    one line for a graph with no nodes."""
    if not model.nodes:
        return Text("The graph has no nodes.")
    boxes = len(chain_runs(model))
    if boxes <= DRAW_MAX_BOXES:
        return Group(render_graph(model), Text(), render_listing(model, limit=limit))
    # Say why there is no drawing, and how to get one, rather than leave the reader to guess.
    note = Text(f"Not drawn: {boxes:,} boxes ({DRAW_MAX_BOXES} at most); show --focus NODE draws "
                "a neighbourhood.", style="dim")
    return Group(note, Text(), render_listing(model, limit=limit))


__all__ = [
    "DRAW_MAX_BOXES",
    "KINDS",
    "KIND_STYLES",
    "GraphDrawing",
    "kind_style",
    "node_detail",
    "node_name",
    "find_node",
    "find_nodes",
    "names_graphs",
    "node_label",
    "render_focus",
    "render_graph",
    "render_graph_or_listing",
    "render_listing",
    "render_summary",
    "short_id",
]
