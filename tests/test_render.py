"""Rendering at a fixed width, checked on the text a user would read.

Console(width=100, force_terminal=False, no_color=True, record=True) is what a pipe gets:
plain text, so the assertions read the same words a user sees.
"""

from __future__ import annotations

import re

import pytest
from _paths import DUMPS, recorded, styles_of, text_of

from accelgraph_cli.dot.parse import load_model, parse_dot
from accelgraph_cli.model.graph_model import GraphModel, Node
from accelgraph_cli.render import graph as graph_render
from accelgraph_cli.render.graph import (
    find_node,
    node_detail,
    node_name,
    render_focus,
    render_graph,
    render_listing,
    render_summary,
    short_id,
)
from accelgraph_cli.render.text import format_bytes


def box_titles(text: str) -> list[str]:
    """The first line of every box in a drawing ("#3 memcpy"), top to bottom, left to right."""
    return re.findall(r"│ (#\d+(?:…#\d+)? \w+)", text)


def kernel(i: int, name: str = "cupy_add", **params) -> Node:
    base = {"grid": (4, 1, 1), "block": (256, 1, 1), "shared_mem": 0}
    base.update(params)
    return Node(f"graph_0_node_{i}", "kernel", name, base, topo_id=i)


def chain_model(n: int) -> GraphModel:
    nodes = [kernel(i) for i in range(n)]
    edges = [(f"graph_0_node_{i}", f"graph_0_node_{i + 1}") for i in range(n - 1)]
    return GraphModel(nodes, edges, source="dot-verbose")


def fork_join_model() -> GraphModel:
    nodes = [
        kernel(0, "init"),
        kernel(1, "left"),
        kernel(2, "right", grid=(8, 4, 4), block=(32, 4, 1), shared_mem=256),
        Node("graph_0_node_3", "memcpy", None, {"direction": "DtoH", "bytes": 2048}),
        kernel(4, "join"),
    ]
    edges = [
        ("graph_0_node_0", "graph_0_node_1"),
        ("graph_0_node_0", "graph_0_node_2"),
        ("graph_0_node_2", "graph_0_node_3"),
        ("graph_0_node_1", "graph_0_node_4"),
        ("graph_0_node_3", "graph_0_node_4"),
    ]
    return GraphModel(nodes, edges, source="dot-verbose")


def test_helpers():
    assert short_id("graph_3_node_17") == "#17" and short_id("n5") == "n5"
    assert format_bytes(512) == "512 B" and format_bytes(1536) == "1.5 KiB"
    # at each unit's boundary: the next unit starts at exactly 1024 of the last
    assert format_bytes(1023) == "1023 B" and format_bytes(1024) == "1.0 KiB"
    assert format_bytes((1 << 20) - 1) == "1024.0 KiB" and format_bytes(1 << 20) == "1.0 MiB"
    assert format_bytes(1 << 30) == "1.0 GiB" and format_bytes(1 << 40) == "1.0 TiB"
    assert format_bytes(1 << 50) == "1024.0 TiB" and format_bytes(0) == "0 B"
    assert format_bytes(4 << 20) == "4.0 MiB"
    assert node_detail(kernel(0, grid=(8, 4, 4), block=(32, 1, 1), shared_mem=64)) == (
        "<<<(8,4,4), 32, 64>>>"
    )
    assert node_detail(Node("m", "memcpy", None, {"direction": "HtoD", "bytes": 2048})) == ("HtoD · 2.0 KiB")


def test_summary_reports_the_numbers():
    text = text_of(render_summary(fork_join_model()))
    assert "Nodes          5  (kernel 4 · memcpy 1)" in text
    assert "Edges          5" in text
    assert "Levels         4  (max width 2)" in text
    assert "Critical path  4 nodes" in text
    assert "CUDA DOT dump (verbose)" in text


def test_summary_says_when_input_was_not_a_cuda_dump():
    model = GraphModel([Node("a", "unknown", "a")], [], source="dot-generic")
    assert "not a CUDA graph dump; parsed generically" in text_of(render_summary(model))


def test_listing_rows_in_level_order_with_dims_and_parents():
    lines = text_of(render_listing(fork_join_model())).splitlines()
    assert lines[0].split() == ["level", "node", "×", "kind", "name", "launch", "/", "size", "after"]
    assert lines[1].split() == ["0", "#0", "kernel", "init", "<<<4,", "256,", "0>>>", "—"]
    assert lines[2].split() == ["1", "#1", "kernel", "left", "<<<4,", "256,", "0>>>", "#0"]
    # Same level: the level number is not repeated.
    assert lines[3].split() == ["#2", "kernel", "right", "<<<(8,4,4),", "(32,4,1),", "256>>>", "#0"]
    assert lines[4].split() == ["2", "#3", "memcpy", "DtoH", "·", "2.0", "KiB", "#2"]
    assert lines[5].split() == ["3", "#4", "kernel", "join", "<<<4,", "256,", "0>>>", "#1,", "#3"]


def test_ten_thousand_kernel_chain_collapses_to_one_row():
    lines = text_of(render_listing(chain_model(10_000))).splitlines()
    assert len(lines) == 2  # header + one row
    assert lines[1].split() == [
        "0–9999",
        "#0…#9999",
        "×",
        "10,000",
        "kernel",
        "cupy_add",
        "<<<4,",
        "256,",
        "0>>>",
        "—",
    ]


def test_alternating_chain_collapses_to_one_row_with_its_block():
    model = chain_model(10_000)
    for node in model.nodes[1::2]:
        node.name = "cupy_multiply"
    lines = text_of(render_listing(model)).splitlines()
    assert len(lines) == 2
    assert lines[1].split()[:8] == ["0–9999", "#0…#9999", "2", "×", "5,000", "kernel", "cupy_add", "→"]
    assert "cupy_multiply" in lines[1]


def test_run_breaks_where_the_signature_changes():
    model = chain_model(12)
    model.nodes[5].params["grid"] = (8, 1, 1)
    rows = text_of(render_listing(model)).splitlines()[1:]
    assert [r.split()[1] for r in rows] == ["#0…#4", "#5", "#6…#11"]
    assert "× 5" in rows[0] and "× 6" in rows[2]


def test_listing_limit_adds_more_line():
    model = fork_join_model()
    lines = text_of(render_listing(model, limit=2)).splitlines()
    assert len(lines) == 4
    assert lines[-1].strip() == "… 3 more rows (--limit N)"
    assert text_of(render_listing(model, limit=4)).splitlines()[-1].strip() == (
        "… 1 more row (--limit N)")


def test_listing_limit_counts_the_rows_not_shown_nested_ones_included():
    # The rows past the limit are counted, not made: the count must match the rows made
    # without a limit, with the rows of child graphs and conditional bodies among them.
    for name in ("kinds_verbose.dot", "conditional_verbose.dot", "scenario_fork_join_verbose.dot"):
        model = load_model(recorded(name))
        assert len(list(model.walk())) > 1 or name.startswith("scenario")
        total = len(text_of(render_listing(model)).splitlines()) - 1  # less the header
        for limit in sorted({1, 2, total - 1}):
            lines = text_of(render_listing(model, limit=limit)).splitlines()
            assert len(lines) == 1 + limit + 1
            rest = total - limit
            assert lines[-1].strip() == f"… {rest:,} more row{'s' if rest != 1 else ''} (--limit N)"
        assert "more" not in text_of(render_listing(model, limit=total))


def test_listing_names_are_demangled_and_shortened():
    node = kernel(0, "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_")
    node.params["demangled"] = (
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >"
        "(int, at::native::FillFunctor<float>)"
    )
    text = text_of(render_listing(GraphModel([node], [])))
    assert "at::native::vectorized_elementwise_kernel<4, …>" in text
    assert "_ZN2at" not in text and "(int," not in text


def test_listing_respects_narrow_width():
    lines = text_of(render_listing(fork_join_model()), width=50).splitlines()
    # The name column keeps its words, and is never widened past them to a minimum it does
    # not need (which once cut the launch column for nothing); the launch column gives way
    # (cut with "…").
    assert lines == [
        "level  node  ×  kind    name   launch / s…  after",
        "    0  #0       kernel  init   <<<4, 256,…  —",
        "    1  #1       kernel  left   <<<4, 256,…  #0",
        "       #2       kernel  right  <<<(8,4,4)…  #0",
        "    2  #3       memcpy         DtoH · 2.0…  #2",
        "    3  #4       kernel  join   <<<4, 256,…  #1, #3",
    ]
    assert max(len(line) for line in lines) <= 50


def test_a_narrow_listing_cuts_names_before_levels_and_repeat_counts():
    from accelgraph_cli.dot.read import read_graph

    model = read_graph(str(recorded("chain1k_verbose.dot"))).model
    for width in (60, 54, 50):
        lines = text_of(render_listing(model, limit=1), width=width).splitlines()
        assert lines[1].split()[:4] == ["0–999", "#0…#999", "2", "×"], (width, lines)
        assert lines[1].split()[4] == "500", (width, lines)
        assert max(len(line) for line in lines) <= width


def test_a_narrow_listing_tells_apart_names_that_would_be_cut_alike():
    # mlp_decode, recorded: sgemm_splitk_reduce (#1) and sgemm_splitk_reduce_softmax (#3) were
    # both "sgemm_sp…" at 40 columns. A name that another is cut alike with loses its middle
    # instead; the others still lose their end.
    model = load_model(recorded("scenario_mlp_decode_verbose.dot"))
    lines = text_of(render_listing(model), width=40).splitlines()
    names = {line.split()[1]: line.split()[3] for line in lines if line.split()[1:2] in
             (["#0"], ["#1"], ["#2"], ["#3"])}
    assert len(names) == 4 and names["#1"] != names["#3"]
    assert names["#1"].endswith("ce") and names["#3"].endswith("ax")
    assert names["#0"] == names["#2"] == "sgemm_skinny_8"  # whole: the parents went first
    assert max(len(line) for line in lines) <= 40


def test_between_40_and_50_columns_names_still_read_and_the_launch_column_goes_first():
    # At 44 to 47 columns the launch column stayed, cut to 8 cells, and every kernel of
    # mlp_decode read "sgemm…"; at 50, sgemm_splitk_reduce_softmax was cut to
    # "sgemm_splitk_reduc…", which reads as sgemm_splitk_reduce shown beside it.
    model = load_model(recorded("scenario_mlp_decode_verbose.dot"))
    for width in range(44, 51):
        lines = text_of(render_listing(model), width=width).splitlines()
        assert "launch" not in lines[0], (width, lines)
        names = [line.split()[3] for line in lines[1:5]]
        assert names[0] == names[2] and names[0].startswith("sgemm_skinny"), (width, names)
        assert len(set(names)) == 3 and all(len(name) >= 12 for name in names), (width, names)
        assert names[3] != "sgemm_splitk_reduc…", (width, names)


def test_kinds_are_not_cut_alike_while_the_launch_or_parents_column_could_go():
    # the first round of narrowing cut the kind column to 6: event_record and event_wait both
    # read "event…" at 45 to 61 columns (recorded kinds dump)
    model = load_model(recorded("kinds_verbose.dot"))
    for width in range(45, 66):
        lines = text_of(render_listing(model), width=width).splitlines()
        kinds = [line.split()[2] for line in lines if line.split()[1:2] in (["#1"], ["#2"])]
        assert kinds == ["event_record", "event_wait"], (width, lines)


def test_name_cuts_cut_the_end_unless_another_name_would_read_the_same():
    from rich.text import Text

    from accelgraph_cli.render.text import NameCuts

    def cut_name(text, width, names=()):
        return NameCuts(names).cut(text, width)

    assert cut_name("sgemm_skinny_8", 20) == "sgemm_skinny_8"
    assert cut_name("cupy_multiply__float32_float32", 12) == "cupy_multip…"
    look_alikes = ["sgemm_skinny_8", "sgemm_skinny_16"]
    assert cut_name("sgemm_skinny_8", 10, look_alikes) == "sgemm_…y_8"
    assert cut_name("sgemm_skinny_16", 10, look_alikes) == "sgemm_…_16"
    # a name that fits, or is the same, or starts otherwise, is no look-alike
    assert cut_name("sgemm_skinny_8", 10, ["sgemm_s", "sgemm_skinny_8", "other_kernel"]) == \
        "sgemm_ski…"
    cut = cut_name(Text("sgemm_skinny_16", style="bold"), 10, look_alikes)
    assert isinstance(cut, Text) and cut.plain == "sgemm_…_16"
    # look-alikes that differ before an end they share keep as much end as tells them apart
    nvjet = ["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_TNT_4x1_v_bz_bias_TNT",
             "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_TNT_4x1_v_bz_splitK_bias_TNT"]
    assert [cut_name(name, 21, nvjet) for name in nvjet] == [
        "nvjet_sm90…z_bias_TNT", "nvjet_sm90…K_bias_TNT"]
    # where the width leaves no end long enough, the shortest end, as before
    assert [cut_name(name, 9, nvjet) for name in nvjet] == ["nvjet_…NT", "nvjet_…NT"]


def test_look_alikes_of_different_starts_are_kept_apart_and_one_alone_does_not_hold_back_others():
    # The twelve GEMM kernels of the recorded torch_buckets dumps cut to 28 columns: keeping
    # more end for one group of look-alikes made its cut forms read like another group's
    # (…64x16… and …64x8… both "nvjet_sm90_tst_64…z_bias_TNT"), and one name nothing told
    # apart kept its whole group at the shortest end.
    from accelgraph_cli.render.text import NameCuts

    names = sorted({node.display_name for path in DUMPS.glob("scenario_torch_buckets_*_verbose.dot")
                    for node in load_model(path).nodes if (node.display_name or "").startswith("nvjet")})
    assert len(names) >= 10
    cuts = NameCuts(names)
    forms = [cuts.cut(name, 28) for name in names]
    assert len(set(forms)) == len(names), forms
    assert all(len(form) <= 28 for form in forms)


def test_recorded_cublas_kernels_that_share_an_end_read_apart_in_a_narrow_listing():
    # torch's nvjet GEMMs, recorded: #0 and #2 both read "nvjet_sm90_ts…as_TNT" at 80 columns
    model = load_model(recorded("scenario_torch_buckets_batch8_verbose.dot"))
    lines = text_of(render_listing(model), width=80).splitlines()
    names = {line.split()[1]: line.split()[3] for line in lines if line.split()[1:2] in
             (["#0"], ["#2"])}
    assert len(set(names.values())) == 2, names
    assert all("…" in name for name in names.values())


def test_the_more_rows_hint_is_a_line_of_its_own_that_no_column_cuts():
    from accelgraph_cli.dot.read import read_graph

    model = read_graph(str(recorded("forkjoin_wide_verbose.dot.gz"))).model
    lines = text_of(render_listing(model, limit=3), width=80).splitlines()
    assert len(lines) == 5 and lines[-1].startswith("… ") and lines[-1].endswith(
        " more rows (--limit N)")


def test_focus_draws_fork_and_join():
    text = text_of(render_focus(fork_join_model(), "graph_0_node_2", depth=1))
    # The focused node, its parent and its child are drawn; the other branch is not.
    assert "#2 kernel" in text and "#0 kernel" in text and "#3 memcpy" in text
    assert "#1 kernel" not in text and "#4 kernel" not in text
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if "#0 kernel" in line)
    mid = next(i for i, line in enumerate(lines) if "#2 kernel" in line)
    low = next(i for i, line in enumerate(lines) if "#3 memcpy" in line)
    assert top < mid < low  # parents above children


def test_whole_small_graph_drawing_has_boxes_and_join_lines():
    text = text_of(render_graph(fork_join_model()))
    for label in ("#0 kernel", "#1 kernel", "#2 kernel", "#3 memcpy", "#4 kernel"):
        assert label in text
    assert box_titles(text) == ["#0 kernel", "#1 kernel", "#2 kernel", "#3 memcpy", "#4 kernel"]
    assert "<<<(8,4,4), (32,4,1), 256>>>" in text and "DtoH · 2.0 KiB" in text
    assert "┴" in text and "┬" in text
    lines = text.splitlines()
    row_of = {
        label: next(i for i, line in enumerate(lines) if label in line)
        for label in ("#1", "#2", "#4")
    }
    assert row_of["#1"] == row_of["#2"] < row_of["#4"]  # the fork is side by side
    assert all(len(line) <= 100 for line in lines)


def test_drawing_a_ten_thousand_chain_is_one_box():
    text = text_of(render_graph(chain_model(10_000)))
    assert text.count("┌") == 1 and "#0…#9999 kernel × 10,000" in text and "cupy_add" in text


def test_focus_inside_a_long_chain_splits_the_run():
    text = text_of(render_focus(chain_model(10_000), "graph_0_node_500", depth=3))
    assert "#497…#499 kernel" in text and "#500 kernel" in text and "#501…#503 kernel" in text


def test_drawing_too_wide_becomes_more_box():
    wide = GraphModel(
        [kernel(0, "root")] + [kernel(i, f"branch_kernel_{i}") for i in range(1, 30)],
        [("graph_0_node_0", f"graph_0_node_{i}") for i in range(1, 30)],
    )
    text = text_of(render_graph(wide), width=100)
    # Five branches fit beside each other at 100 columns; the other 24 are one "more" box.
    assert box_titles(text) == ["#0 kernel", "#1 kernel", "#2 kernel", "#3 kernel", "#4 kernel",
                                "#5 kernel"]
    assert "│ +24 more  │" in text and text.count("more") == 1
    assert all(len(line) <= 100 for line in text.splitlines())


def test_drawing_box_limit_is_inclusive():
    from accelgraph_cli.render.graph import DRAW_MAX_BOXES, render_graph_or_listing

    def distinct_chain(n: int) -> GraphModel:
        # Every kernel named differently, so no run collapses: n nodes are n boxes.
        nodes = [kernel(i, f"k{i}") for i in range(n)]
        edges = [(f"graph_0_node_{i}", f"graph_0_node_{i + 1}") for i in range(n - 1)]
        return GraphModel(nodes, edges, source="dot-verbose")

    assert DRAW_MAX_BOXES == 40
    at_limit = text_of(render_graph(distinct_chain(40)), width=100)
    assert box_titles(at_limit) == [f"#{i} kernel" for i in range(40)]
    over = text_of(render_graph(distinct_chain(41)), width=200)
    assert over == (
        "41 boxes are too many to draw; draw one node's neighbourhood instead "
        "(render_focus / --focus NODE)"
    )
    assert len(box_titles(text_of(render_graph_or_listing(distinct_chain(40)), width=100))) == 40
    over_listed = text_of(render_graph_or_listing(distinct_chain(41)), width=100)
    assert "┌" not in over_listed
    # the listing alone says why there is no drawing, and how to draw a part of the graph
    assert over_listed.splitlines()[0] == (
        "Not drawn: 41 boxes (40 at most); show --focus NODE draws a neighbourhood.")
    # a caller's own limit is inclusive too
    assert len(box_titles(text_of(render_graph(distinct_chain(3), max_boxes=3)))) == 3
    assert text_of(render_graph(distinct_chain(3), max_boxes=2), width=200).startswith("3 boxes")


# ---------------------------------------------------------------- on recorded dumps




def test_recorded_chain10k_lists_as_one_row():
    # fixtures.chain alternates x += 0.5 and x *= 1.0001: one block of two, 5,000 times.
    model = load_model(recorded("chain10k_verbose.dot"))
    lines = text_of(render_listing(model)).splitlines()
    assert len(lines) == 2
    # both names of the repeated pair, the second cut to the column width
    assert "× 5,000" in lines[1] and "cupy_add" in lines[1] and "→ cupy_multi" in lines[1]
    assert text_of(render_graph(model)).count("┌") == 1


def test_recorded_chain10k_keeps_both_names_of_its_block_on_a_narrow_terminal():
    model = load_model(recorded("chain10k_verbose.dot"))
    row = text_of(render_listing(model), width=82).splitlines()[1]
    assert "2 × 5,000" in row and "cupy_add" in row and "→ cupy_mul" in row, row
    assert len(row) <= 82


def test_recorded_forkjoin_draws_three_branches_side_by_side():
    model = load_model(recorded("forkjoin_verbose.dot"))
    lines = text_of(render_graph(model)).splitlines()
    titles = [line for line in lines if line.count(" kernel") == 3]
    assert len(titles) == 2  # the three multiplies, then the three square roots
    summary = text_of(render_summary(model))
    assert "Levels         5  (max width 3)" in summary


# ------------------------------------------------------------ summaries, whole text


@pytest.mark.parametrize(
    "name, expected",
    [
        ("kinds_verbose.dot", """\
Source         CUDA DOT dump (verbose)
Nodes          6  (kernel 2 · event_record 1 · event_wait 1 · empty 1 · graph 1)
Edges          5
Levels         6  (max width 1)
Critical path  6 nodes
Nested graphs  1  (2 nodes inside)
"""),
        ("chain_basic.dot", """\
Source         CUDA DOT dump (basic: no launch dimensions or sizes)
Nodes          6  (kernel 6)
Edges          5
Levels         6  (max width 1)
Critical path  6 nodes
"""),
    ],
)
def test_summary_of_a_recorded_dump_word_for_word(name, expected):
    assert text_of(render_summary(load_model(recorded(name)))) + "\n" == expected


@pytest.mark.parametrize(
    "name, allocated",
    [
        ("asyncalloc_basic.dot", "Allocated      size unknown (basic dump)  in 2 mem_alloc nodes"),
        ("asyncalloc_verbose.dot", "Allocated      8.0 MiB  in 2 mem_alloc nodes"),
    ],
)
def test_summary_of_a_graph_with_allocations_ends_with_what_they_hold(name, allocated):
    lines = text_of(render_summary(load_model(recorded(name)))).splitlines()
    assert lines[1] == "Nodes          7  (kernel 2 · memcpy 1 · mem_alloc 2 · mem_free 2)"
    assert lines[-1] == allocated


def test_summary_of_a_cycle_warns_on_its_last_line():
    lines = text_of(render_summary(parse_dot("digraph G { a -> b; b -> a; b -> c }"))).splitlines()
    assert lines[-1] == "Warning        the graph has a cycle (not a CUDA graph)"


def test_summary_of_generic_dot_and_of_a_saved_model():
    generic = parse_dot("digraph G { a -> b; b -> c; a -> c }")
    assert text_of(render_summary(generic)) + "\n" == """\
Source         not a CUDA graph dump; parsed generically
Nodes          3  (unknown 3)
Edges          3
Levels         3  (max width 1)
Critical path  3 nodes
"""
    saved = load_model(recorded("chain_basic.dot"))
    assert text_of(render_summary(saved, saved_model=True)) + "\n" == """\
Source         accelgraph JSON model, saved from a CUDA DOT dump (basic: no launch dimensions or
               sizes)
Nodes          6  (kernel 6)
Edges          5
Levels         6  (max width 1)
Critical path  6 nodes
"""


def test_a_narrow_after_column_keeps_the_count_of_parents():
    # The demo's axpby run follows #0 and the four bias_gelu: five parents. At 80 columns
    # the column fits two ids, and the count of the rest stays ("#0, #3, #…" lost it).
    lines = text_of(render_listing(load_model(recorded("scenario_fork_join_verbose.dot"))),
                    width=80).splitlines()
    assert lines[-1].endswith("  #0, #3 +3"), lines[-1]
    wide = text_of(render_listing(load_model(recorded("scenario_fork_join_verbose.dot"))),
                   width=120).splitlines()
    assert wide[-1].endswith("  #0, #3, #6 +2"), wide[-1]


def test_straight_lines_take_no_rows_of_their_own():
    # The demo graph: four branches each straight down from an sgemm's split-K reduction to
    # its bias_gelu, and an edge past them on the right: one row between the two layers, not
    # one per line.
    lines = text_of(render_graph(load_model(recorded("scenario_fork_join_verbose.dot"))),
                    width=80).splitlines()
    sgemm = max(i for i, line in enumerate(lines) if "sgemm_spl" in line)
    gelu = min(i for i, line in enumerate(lines) if "bias_gelu" in line)
    assert gelu - sgemm == 5  # sgemm's bottom border, one row of lines, gelu's top border, title


def test_drawing_of_a_recorded_fork_join_box_for_box():
    # Boxes, their borders and widths, where lines leave and come in (a tee for each line into
    # the run of three adds, each on the side its line comes from), and the run of three adds;
    # each multiply straight over its sqrt (the row above moved over the wider row below).
    model = load_model(recorded("forkjoin_basic.dot"))
    assert text_of(render_graph(model), width=100) + "\n" == """\
   ┌───────────────────────┐        ┌───────────────────────┐        ┌───────────────────────┐
   │ #0 kernel             │        │ #2 kernel             │        │ #4 kernel             │
   │ cupy_multiply__floa…  │        │ cupy_multiply__floa…  │        │ cupy_multiply__floa…  │
   └───────────┬───────────┘        └───────────┬───────────┘        └───────────┬───────────┘
               │                                │                                │
┌──────────────┴──────────────┐  ┌──────────────┴──────────────┐  ┌──────────────┴──────────────┐
│ #1 kernel                   │  │ #3 kernel                   │  │ #5 kernel                   │
│ cupy_sqrt__float32_float32  │  │ cupy_sqrt__float32_float32  │  │ cupy_sqrt__float32_float32  │
└──────────────┬──────────────┘  └──────────────┬──────────────┘  └──────────────┬──────────────┘
               └────────────────┐               │                                │
                                │               │               ┌────────────────┘
                              ┌─┴───────────────┴───────────────┴─┐
                              │ #6…#8 kernel × 3                  │
                              │ cupy_add__float32_float32_float32 │
                              └───────────────────────────────────┘
"""


def test_focus_drawing_of_a_node_and_its_child():
    model = load_model(recorded("forkjoin_basic.dot"))
    assert text_of(render_focus(model, model.nodes[2].id, 1), width=100) + "\n" == """\
┌───────────────────────────────────────┐
│ #2 kernel  ◀ focus                    │
│ cupy_multiply__float32_float_float32  │
└───────────────────┬───────────────────┘
                    │
     ┌──────────────┴──────────────┐
     │ #3 kernel                   │
     │ cupy_sqrt__float32_float32  │
     └─────────────────────────────┘
"""


def test_summary_of_a_single_node_says_node():
    model = GraphModel([Node("a", "unknown", "a")], [], source="dot-generic")
    assert text_of(render_summary(model)).splitlines()[-1] == "Critical path  1 node"


def test_listing_and_summary_colours():
    assert styles_of(render_listing(chain_model(4))) == [
        ("levelnode   ×kind  name    launch / size  after", "bold"), ("  0–3", "dim"), ("× 4", "bold"),
        ("kernel", "cyan"), ("—    ", "dim"),
    ]
    assert styles_of(render_listing(fork_join_model()))[4:] == [
        ("    1", "dim"), ("kernel", "cyan"), ("#0    ", "dim"), ("kernel", "cyan"), ("#0    ", "dim"),
        ("    2", "dim"), ("memcpy", "magenta"), ("#2    ", "dim"),
        ("    3", "dim"), ("kernel", "cyan"), ("#1, #3", "dim"),
    ]
    cycle = parse_dot("digraph G { a -> b; b -> a; b -> c }")
    assert styles_of(render_summary(cycle)) == [
        ("Source       ", "bold"), ("not a CUDA graph dump; parsed generically", "yellow"),
        ("Nodes        ", "bold"), ("unknown 3", "white"), ("Edges        ", "bold"),
        ("Levels       ", "bold"), ("Critical path", "bold"),
        ("Warning      ", "bold"), ("the graph has a cycle (not a CUDA graph) ", "red"),
    ]


def test_focus_drawing_colours():
    # The focused box's title is reversed and says "◀ focus" (seen with no colour), its
    # border bold; launch lines are dim.
    assert styles_of(render_focus(fork_join_model(), "graph_0_node_2", 1)) == [
        ("#0 kernel      ", "cyan"), ("<<<4, 256, 0>>>", "dim"),
        ("┌───────────────┴───────────────┐", "bold"),
        ("│", "bold"), ("#2 kernel  ◀ focus           ", "reverse cyan"),
        *[("│", "bold")] * 4, ("<<<(8,4,4), (32,4,1), 256>>> ", "dim"), ("│", "bold"),
        ("└───────────────┬───────────────┘", "bold"),
        ("#3 memcpy      ", "magenta"), ("DtoH · 2.0 KiB ", "dim"),
    ]


def test_summary_of_a_live_graph_with_one_allocation_and_no_demangler(monkeypatch):
    monkeypatch.setattr(graph_render, "demangler_name", lambda: None)
    model = GraphModel(
        [kernel(0, "_Z6scale2Pf"), Node("graph_0_node_1", "mem_alloc", None, {"bytes": 4096})],
        [("graph_0_node_0", "graph_0_node_1")],
        source="live",
    )
    assert text_of(render_summary(model)) + "\n" == """\
Source         live captured graph
Nodes          2  (kernel 1 · mem_alloc 1)
Edges          1
Levels         2  (max width 1)
Critical path  2 nodes
Allocated      4.0 KiB  in 1 mem_alloc node
Names          no C++ demangler found (install binutils for c++filt): names shown as written
"""
    assert styles_of(render_summary(model))[-2:] == [
        ("Names        ", "bold"),
        ("no C++ demangler found (install binutils for c++filt): names shown as written", "dim"),
    ]
    demangled = GraphModel([kernel(0, "_Z6scale2Pf", demangled="scale2(float*)")], [], source="live")
    assert "Names" not in text_of(render_summary(demangled))


def test_summary_source_of_an_unknown_origin_and_of_a_saved_generic_model():
    unknown = GraphModel([Node("a", "unknown", "a")], [], source=None)
    assert text_of(render_summary(unknown)).splitlines()[0] == "Source         unknown"
    generic = GraphModel([Node("a", "unknown", "a")], [], source="dot-generic")
    assert text_of(render_summary(generic, saved_model=True)).splitlines()[0] == (
        "Source         accelgraph JSON model, saved from a DOT that is not a CUDA graph dump"
    )


def nested_model() -> GraphModel:
    inner = GraphModel([Node("graph_1_node_0", "kernel", "inner_k", {}), Node("graph_1_node_1", "empty")],
                       [("graph_1_node_0", "graph_1_node_1")])
    single = GraphModel([Node("graph_2_node_0", "memset", None, {"bytes": 64})], [])
    return GraphModel(
        [Node("graph_0_node_0", "graph", None, {}, child=inner),
         Node("graph_0_node_1", "graph", None, {}, child=single)],
        [("graph_0_node_0", "graph_0_node_1")],
        source="dot-verbose",
    )


def test_find_node_by_full_id_short_id_and_nested_reference():
    model = nested_model()
    inner, single = model.nodes[0].child, model.nodes[1].child
    assert find_node(model, "graph_1_node_1") == (inner, "graph_1_node_1")
    assert find_node(model, "#1") == (model, "graph_0_node_1")
    assert find_node(model, "1") == (model, "graph_0_node_1")
    assert find_node(model, "g1#0") == (inner, "graph_1_node_0")
    assert find_node(model, "g2#0") == (single, "graph_2_node_0")
    for missing in ("g3#0", "#7", "inner_k"):
        with pytest.raises(KeyError):
            find_node(model, missing)
    assert short_id("graph_12_node_3", with_graph=True) == "g12#3"


def test_node_names_and_details_of_every_shape():
    model = nested_model()
    assert [node_name(n) for n in model.nodes] == ["2 nodes inside", "1 node inside"]
    assert node_name(Node("a", "unknown", "a  label\n  on  lines")) == "a label on lines"
    assert node_name(Node("a", "unknown", "x" * 70), max_len=10) == "xxxxxxxxx…"
    assert node_name(Node("a", "memcpy", "copy  " + "y" * 70), max_len=10) == "copy  " + "y" * 70
    assert node_detail(Node("k", "kernel", "k", {"block": (32, 1, 1)})) == "<<<?, 32, 0>>>"
    assert node_detail(Node("k", "kernel", "k", {"grid": (2, 1, 1)})) == "<<<2, ?, 0>>>"
    assert node_detail(Node("m", "memset", None, {"bytes": 64})) == "64 B"
    assert node_detail(Node("m", "memset", None, {"value": 0, "bytes": 64})) == "value 0 · 64 B"


def test_summary_of_an_empty_graph():
    assert text_of(render_summary(GraphModel([], []))) + "\n" == """\
Source         unknown
Nodes          0
Edges          0
Levels         0  (max width 0)
Critical path  0 nodes
"""


def test_a_block_of_two_kinds_is_listed_with_both():
    nodes, edges = [], []
    for i in range(8):
        if i % 2:
            nodes.append(Node(f"graph_0_node_{i}", "memcpy", None, {"direction": "DtoD", "bytes": 64}))
        else:
            nodes.append(kernel(i, "k"))
        if i:
            edges.append((f"graph_0_node_{i - 1}", f"graph_0_node_{i}"))
    assert text_of(render_listing(GraphModel(nodes, edges))).splitlines()[1] == (
        "  0–7  #0…#7  2 × 4  kernel/memcpy  k → memcpy  —"  # (no launch or size: no column)
    )


def test_a_basic_dump_lists_no_empty_launch_column_and_gives_its_cells_to_the_names(
        cli, monkeypatch):
    from _paths import recorded

    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = cli("show", recorded("forkjoin_wide_basic.dot.gz"))
    assert code == 0, err
    header = next(line for line in out.splitlines() if line.lstrip().startswith("level"))
    assert "launch / size" not in header and "left out" not in out
    assert "cupy_multiply__float32_fl…" in out  # cut at 16 cells while the empty column stood
    monkeypatch.setenv("COLUMNS", "40")  # too narrow even so: after is left out, and said so
    code, out, err = cli("show", recorded("forkjoin_wide_basic.dot.gz"))
    assert code == 0, err
    assert "(after left out at 40 columns)" in out


def test_drawing_counts_a_run_of_two():
    model = GraphModel([kernel(0, "k"), kernel(1, "k")], [("graph_0_node_0", "graph_0_node_1")])
    assert text_of(render_graph(model)).splitlines()[1] == "│ #0…#1 kernel × 2  │"


def test_a_tab_or_line_break_in_a_name_prints_as_a_space_and_keeps_the_box_closed():
    from accelgraph_cli.model.graph_model import GraphModel, Node
    from accelgraph_cli.render.text import printable

    assert printable("a\tb\nc\x1bd") == "a b cd"
    model = GraphModel([Node("n0", "kernel", "left\tside\nand more"), Node("n1", "kernel", "x")],
                       [("n0", "n1")])
    text = text_of(render_graph(model), width=100)
    assert "\t" not in text
    box = [line for line in text.splitlines() if line.strip()][:4]
    assert box[0].startswith("┌") and box[3].startswith("└"), box  # two lines of text, closed
    assert len({len(line.rstrip()) for line in box}) == 1, box


def test_a_narrow_terminal_leaves_columns_out_whole_rather_than_cutting_ids_and_counts():
    # Below about 50 columns every column gave way to a character or two ("#6……", "×…"): the
    # launch column, then the parents, are now left out whole, and a line says so.
    model = load_model(recorded("forkjoin_verbose.dot"))
    wide = text_of(render_listing(model), width=100)
    assert "launch / size" in wide and "left out" not in wide
    for width, left_out in ((48, "launch / size"), (30, "name, launch / size and after")):
        lines = text_of(render_listing(model), width=width).splitlines()
        header = lines[0].split()
        assert header[:4] == ["level", "node", "×", "kind"] and "launch" not in header
        assert any(line.split()[:4] == ["2–4", "#6…#8", "×", "3"] for line in lines)
        note = " ".join(line for line in lines if not line.startswith((" ", "level")))
        assert note == f"({left_out} left out at {width} columns)"
        assert all(len(line) <= width for line in lines)
    assert "after" in text_of(render_listing(model), width=48).splitlines()[0]
    # the parents go before a name is cut below 12 characters ("cupy_m…" at 44 columns)
    narrow = text_of(render_listing(model), width=44).splitlines()
    assert "after" not in narrow[0] and narrow[1].split()[3] == "cupy_multiply__f…"
    # Where the names and kinds still do not fit, they are left out too, rather than the
    # level and the repeat count cut ("0–9999  #0…#9999  2 × 5,0…  kernel  c……" at 39).
    chain = load_model(recorded("chain10k_verbose.dot.gz"))
    for width, kept in ((39, ["0–9999", "#0…#9999", "2", "×", "5,000", "kernel"]),
                        (30, ["0–9999", "#0…#9999", "2", "×", "5,000"])):
        lines = text_of(render_listing(chain), width=width).splitlines()
        assert lines[1].split() == kept, (width, lines)
        assert all(len(line) <= width for line in lines)


def test_a_run_of_look_alike_child_graph_nodes_lists_their_graph():
    # Three chained child-graph nodes holding look-alike graphs collapse into one row; the
    # nested kernels were then listed nowhere though the summary counted them.
    def inner(k):
        nodes = [Node(f"graph_{k}_node_{i}", "kernel", "cupy_add", {"grid": (2, 1, 1)})
                 for i in range(2)]
        return GraphModel(nodes, [(nodes[0].id, nodes[1].id)], source="dot-verbose")

    outer = [Node(f"graph_1_node_{i}", "graph", None, {}, child=inner(10 + i)) for i in range(3)]
    model = GraphModel(outer, [(outer[0].id, outer[1].id), (outer[1].id, outer[2].id)],
                       source="dot-verbose")
    rows = text_of(render_listing(model)).splitlines()[1:]
    assert [row.split()[:4] for row in rows] == [
        ["0–2", "#0…#2", "×", "3"],
        ["g10#0…g10#1", "×", "2", "kernel"],
    ]


def test_a_run_of_blocks_with_child_graphs_lists_each_graph_of_the_block():
    # A block of [kernel, graph X, graph Y] repeated: X's and Y's nodes are both listed.
    def inner(k, name):
        nodes = [Node(f"graph_{k}_node_{i}", "kernel", name, {}) for i in range(2)]
        return GraphModel(nodes, [(nodes[0].id, nodes[1].id)], source="dot-verbose")

    outer = []
    for r in range(3):
        outer += [Node(f"graph_1_node_{3 * r}", "kernel", "k", {}),
                  Node(f"graph_1_node_{3 * r + 1}", "graph", None, {}, child=inner(10 + 2 * r, "x")),
                  Node(f"graph_1_node_{3 * r + 2}", "graph", None, {}, child=inner(11 + 2 * r, "y"))]
    model = GraphModel(outer, list(zip([n.id for n in outer], [n.id for n in outer[1:]])),
                       source="dot-verbose")
    rows = text_of(render_listing(model)).splitlines()[1:]
    assert rows[0].split()[:5] == ["0–8", "#0…#8", "3", "×", "3"]
    assert [row.split()[:3] for row in rows[1:]] == [["g10#0…g10#1", "×", "2"],
                                                      ["g11#0…g11#1", "×", "2"]]
    assert "└ x" in rows[1] and "└ y" in rows[2]
