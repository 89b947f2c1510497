"""The terminal drawing is connected: every line drawn runs from a box's bottom tee to the top
tee of a box it leads to, every edge of the graph is drawn (through dummies, or into the "+N
more" box standing for folded boxes), and no line dangles or crosses a box. Checked on every
recorded dump small enough to draw, at several widths, and on the diff's narrow output."""

from __future__ import annotations

import pytest
from _paths import DUMPS

from accelgraph_cli.dot.parse import load_model
from accelgraph_cli.model.graph_model import GraphModel, Node, chain_runs
from accelgraph_cli.render.boxes import DOWN, LEFT, RIGHT, UP
from accelgraph_cli.render.graph import DRAW_MAX_BOXES, GraphDrawing, _run_edges, render_focus

DRAWN = sorted(p for p in DUMPS.glob("*.dot")
               if len(chain_runs(load_model(p))) <= DRAW_MAX_BOXES)
WIDTHS = [40, 60, 80, 120]


def path_cells(layout, a, b):
    """The cells of the line from slot a down to slot b, each with the bits it must have:
    down from a's bottom (its tee) to a's track row, along the track, down to b's top."""
    src, dst = layout.boxes[a], layout.boxes[b]
    track = layout.tracks[a]
    cells = {}

    def add(x, y, bits):
        cells[(x, y)] = cells.get((x, y), 0) | bits

    for y in range(layout.bottoms[a], track):
        add(src.center, y, DOWN if y == layout.bottoms[a] else UP | DOWN)
    add(src.center, track, UP if track > layout.bottoms[a] else 0)
    lo, hi = sorted((src.center, dst.center))
    for x in range(lo, hi + 1):
        add(x, track, (LEFT if x > lo else 0) | (RIGHT if x < hi else 0))
    add(dst.center, track, DOWN if layout.tops[b] > track else 0)
    for y in range(track + 1, layout.tops[b] + 1):
        add(dst.center, y, UP if y == layout.tops[b] else UP | DOWN)
    return cells


def check_layout(layout, drawing, edges=True):
    canvas = layout.canvas
    covered = set()
    for a, b in layout.links:
        src, dst = layout.boxes[a], layout.boxes[b]
        if not src.dummy:
            assert canvas.chars[layout.bottoms[a]][src.center] == "┬", (a, b)
        if not dst.dummy:
            assert canvas.chars[layout.tops[b]][dst.center] == "┴", (a, b)
        for (x, y), bits in path_cells(layout, a, b).items():
            assert canvas.bits[y][x] & bits == bits, ((x, y), a, b)
            assert canvas.bits[y][x], ((x, y), a, b)
            covered.add((x, y))
    for y, row in enumerate(canvas.bits):
        for x, bits in enumerate(row):
            if bits:
                assert (x, y) in covered, f"a line at column {x}, row {y} belongs to no edge"
                assert canvas.chars[y][x] in "│─┌┐└┘├┤┬┴┼", f"a line crosses a box at {x},{y}"
    # Every edge of the drawn graph is a chain of links (dummies between) or ends in the
    # "+N more" box that stands for a folded box.
    downs = {}
    for a, b in layout.links:
        downs.setdefault(a, set()).add(b)
    # Along a source's horizontal line, a column where it joins nothing (neither the source
    # nor a target) that another line crosses is drawn as the crossing line alone, and a
    # column where it joins shows the join: a "┼" always means joined.
    for a, targets in downs.items():
        joins = {layout.boxes[a].center} | {layout.boxes[b].center for b in targets}
        y = layout.tracks[a]
        for x in range(min(joins) + 1, max(joins)):
            if x not in joins and canvas.bits[y][x] & (UP | DOWN):
                assert canvas.chars[y][x] == "│", f"a crossing drawn as a join at {x},{y}"
            elif x in joins:
                assert canvas.chars[y][x] in "┬┴┼├┤", f"a join not drawn at {x},{y}"

    def reaches(a, b):
        stack, seen = [layout.folded.get(a, a)], set()
        goal = layout.folded.get(b, b)
        while stack:
            slot = stack.pop()
            if slot == goal:
                return True
            for nxt in downs.get(slot, ()):
                if nxt not in seen and (nxt == goal or isinstance(nxt, tuple)):
                    seen.add(nxt)
                    stack.append(nxt)
        return False

    for a, b in drawing_edges(drawing) if edges else ():
        if layout.folded.get(a, a) != layout.folded.get(b, b):
            assert reaches(a, b), f"edge {a} -> {b} is not drawn"


def drawing_edges(drawing):
    model = drawing.model
    runs = chain_runs(model)
    box_of = {node_id: run.ids[0] for run in runs for node_id in run.ids}
    return {(box_of[a], box_of[b]) for a, b in model.edges if box_of[a] != box_of[b]}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", DRAWN, ids=[p.name for p in DRAWN])
def test_every_edge_drawn_reaches_both_boxes(path, width):
    model = load_model(path)
    drawing = GraphDrawing(model, {n.id for n in model.nodes}, focus=None)
    layout = drawing.layout(width)
    check_layout(layout, drawing)
    boxes = [b for b in layout.boxes.values() if not b.dummy]
    shown = sum(1 for b in boxes if not str(b.lines[0][0]).startswith("+"))
    folded = sum(int(b.lines[0][0].split()[0][1:]) for b in boxes if b.lines[0][0].startswith("+"))
    assert shown + folded == len(chain_runs(model))


def test_the_recorded_demo_graph_is_drawn_whole_at_80_columns():
    model = load_model(DUMPS / "scenario_fork_join_verbose.dot")
    layout = GraphDrawing(model, {n.id for n in model.nodes}, focus=None).layout(80)
    names = [b.lines[1][0] for b in layout.boxes.values() if not b.dummy]
    assert not layout.folded
    assert names == ["layernorm_rows"] + ["sgemm_tiled"] * 4 + ["bias_gelu"] * 4 + ["axpby"]


def test_focus_drawing_is_connected():
    model = load_model(DUMPS / "scenario_fork_join_verbose.dot")
    for width in WIDTHS:
        drawing = render_focus(model, model.nodes[0].id, depth=2)
        check_layout(drawing.layout(width), drawing, edges=False)


@pytest.mark.parametrize("width", [40, 60])
def test_diff_on_a_narrow_terminal_keeps_markers_counts_and_kinds(cli, monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, err = cli("diff", DUMPS / "memops_verbose.dot", DUMPS / "kinds_verbose.dot")
    assert code == 1, err
    removed = out.split("Removed (5)\n")[1].splitlines()
    assert [line.split()[:2] for line in removed] == [
        ["-", "memset"], ["-", "memcpy"], ["-", "memcpy"], ["-", "host"], ["-", "kernel"]]
    assert [line.split()[-1] for line in removed] == ["#0", "#1", "#2", "#3", "#4"]
    assert all(len(line) <= width for line in out.splitlines())
    assert "different: +6 added · -5 removed" in " ".join(out.split())


def reference_run_edges(model, runs):
    """The edges between runs, from every edge of the graph: what _run_edges must give."""
    box_of = {node_id: first for first, run in runs.items() for node_id in run.ids}
    return {(box_of[a], box_of[b]) for a, b in model.edges if box_of[a] != box_of[b]}


@pytest.mark.parametrize("path", sorted(DUMPS.glob("*.dot*")), ids=lambda p: p.name)
def test_edges_between_boxes_come_from_the_last_node_of_each_run(path):
    # _run_edges reads only each run's last node: checked against every edge of the graph,
    # for the whole graph and for a node kept alone (as --focus keeps it).
    for graph in load_model(path).walk():
        for alone in (frozenset(), frozenset([graph.nodes[len(graph.nodes) // 2].id])):
            runs = {run.ids[0]: run for run in chain_runs(graph, alone=alone)}
            assert _run_edges(graph, runs) == reference_run_edges(graph, runs)


def test_edges_between_boxes_of_a_graph_with_cycles():
    nodes = [Node(f"n{i}", "unknown", "k") for i in range(6)]
    edges = [("n0", "n1"), ("n1", "n2"), ("n2", "n0"), ("n2", "n3"), ("n3", "n4"), ("n4", "n4"),
             ("n4", "n5"), ("n5", "n3")]
    model = GraphModel(nodes, edges, source="dot-generic")
    runs = {run.ids[0]: run for run in chain_runs(model)}
    assert _run_edges(model, runs) == reference_run_edges(model, runs)


def test_lines_that_cross_are_not_drawn_joined():
    # a -> d, e; b -> c, f; g -> d. a's line crosses b's on its way to d, and b's crosses
    # a's and g's: drawn "─│─", each line keeps its own joins ("┴", "├", "┘").
    from accelgraph_cli.render.boxes import draw

    layout = draw(list("abcdefg"), [("a", "d"), ("a", "e"), ("b", "c"), ("b", "f"), ("g", "d")],
                  lambda key, level: [(f"box {key}", "")], 1, 100)
    check_layout(layout, None, edges=False)
    assert [row.plain for row in layout.canvas.rows()] == [
        "      ┌───────┐  ┌───────┐  ┌───────┐",
        "      │ box a │  │ box b │  │ box g │",
        "      └───┬───┘  └───┬───┘  └───┬───┘",
        "     ┌────┴──────────│─────┐    │",
        "     │          ┌────┴─────│────│─────┐",
        "     │          │          ├────┘     │",
        " ┌───┴───┐  ┌───┴───┐  ┌───┴───┐  ┌───┴───┐",
        " │ box e │  │ box c │  │ box d │  │ box f │",
        " └───────┘  └───────┘  └───────┘  └───────┘",
    ]
