"""Options are never silently ignored, and what `show`/`diff` print says what the input was.

Runs without a GPU, on the dumps recorded on the GPU (tests/data/dumps) and on small
synthetic DOT where only the structure matters.
"""

from __future__ import annotations

import gzip
import io
import json
import sys

import pytest
from _paths import DUMPS, SCENARIOS, requires_no_gpu

CHAIN = DUMPS / "chain_verbose.dot"
NESTED = DUMPS / "conditional_verbose.dot"  # the conditional's body is CUDA graph 12


def test_depth_without_focus_is_refused(cli):
    code, out, err = cli("show", CHAIN, "--depth", "1")
    assert (code, out) == (2, "")
    assert err == ("accelgraph: error: --depth applies to --focus NODE; without --focus the "
                   "whole graph is drawn\n")


def test_focus_with_json_is_refused(cli):
    code, out, err = cli("show", CHAIN, "--focus", "3", "--json")
    assert (code, out) == (2, "")
    assert err.startswith("accelgraph: error: --focus draws a neighbourhood in the terminal; "
                          "--json prints the whole model")


@pytest.mark.parametrize("ref", ["#3", "3", "graph_1_node_3"])
def test_focus_forms_of_a_top_node(cli, ref):
    code, out, err = cli("show", CHAIN, "--focus", ref, "--depth", "0")
    assert (code, err) == (0, "")
    boxes = [line for line in out.splitlines() if line.lstrip().startswith("│ #")]
    assert [b.split()[1:3] for b in boxes] == [["#3", "kernel"]]


def test_focus_on_a_nested_node(cli):
    # Its boxes are labelled as the listing labels them: "#0" is node 0 of the top graph.
    code, out, err = cli("show", NESTED, "--focus", "g12#0")
    assert (code, err) == (0, "")
    assert "│ g12#0 memset" in out and "│ #0" not in out


@pytest.mark.parametrize("ref", ["g10#1", "G10#1"])  # as typed in capitals too
def test_focus_on_a_node_of_a_child_graph_labels_its_boxes_with_the_graph(cli, ref):
    code, out, err = cli("show", DUMPS / "kinds_verbose.dot", "--focus", ref)
    assert (code, err) == (0, "")
    boxes = [line.split()[1:3] for line in out.splitlines() if line.lstrip().startswith("│ ") and
             "kernel" in line]
    assert boxes == [["g10#0", "kernel"], ["g10#1", "kernel"]]


@pytest.fixture
def two_graphs(tmp_path):
    """Two recorded dumps in one file: two top-level CUDA graphs (1 and 9) side by side."""
    first = (DUMPS / "chain_basic.dot").read_text().rstrip().removesuffix("}")
    second = (DUMPS / "kinds_basic.dot").read_text().split("\n", 1)[1]  # without "digraph dot {"
    path = tmp_path / "two.dot"
    path.write_text(first + second)
    return path


def test_a_file_of_several_graphs_labels_its_nodes_with_their_graph(cli, two_graphs):
    code, out, err = cli("show", two_graphs)
    assert (code, err) == (0, "")
    listing = out[out.index("level  node"):].splitlines()[1:]
    assert [row.split()[1 if row[:5].strip() else 0] for row in listing] == [
        "g1#0…g1#5", "g9#0", "g9#1", "g9#2", "g9#3", "g9#4", "g9#5", "g10#0", "g10#1"]
    assert "│ g9#0 kernel" in out and "│ #0" not in out
    # graph 9's first node is at level 0, printed again after graph 1's run over 0–5 (a bare
    # cell read as inside that range)
    assert [row.split()[0] for row in listing[:2]] == ["0–5", "0"]


def test_focus_on_a_number_several_graphs_have_names_them(cli, two_graphs):
    code, out, err = cli("show", two_graphs, "--focus", "0")
    assert (code, out) == (2, "")
    assert err == ("accelgraph: error: --focus '0': 2 nodes match (g1#0, g9#0); give one of them "
                   "as the listing shows it\n")
    code, out, err = cli("show", two_graphs, "--focus", "g9#1", "--depth", "0")
    assert (code, err) == (0, "")
    assert "│ g9#1 event_record" in out
    code, out, err = cli("show", two_graphs, "--focus", "99")
    assert err == ("accelgraph: error: --focus '99': no such node; name one as the listing shows it "
                   "(here g1#0 … g9#5) or by its full id (such as graph_9_node_5)\n")


def test_bad_focus_prints_nothing_on_stdout(cli):
    code, out, err = cli("show", CHAIN, "--focus", "#99")
    assert (code, out) == (2, "")
    assert err == ("accelgraph: error: --focus '#99': no such node; name one as the listing "
                   "shows it (here #0 … #5) or by its full id (such as graph_1_node_5)\n")


def test_a_bad_nested_focus_is_answered_with_a_node_of_that_graph(cli):
    # g10 holds g10#0 and g10#1: the example must not point at the top graph's #5
    code, out, err = cli("show", DUMPS / "kinds_verbose.dot", "--focus", "g10#5")
    assert (code, out) == (2, "")
    assert err == ("accelgraph: error: --focus 'g10#5': no such node; name one as the "
                   "listing shows it (here g10#0 … g10#1) or by its full id (such as "
                   "graph_10_node_1)\n")


def test_show_reads_stdin(cli, monkeypatch):
    data = CHAIN.read_bytes()
    for raw in (data, gzip.compress(data)):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
        code, out, err = cli("show", "-")
        assert (code, err) == (0, "")
        assert out.splitlines()[1].split() == ["Nodes", "6", "(kernel", "6)"]


def test_show_of_a_json_model_says_so(cli, tmp_path):
    code, out, _ = cli("show", CHAIN, "--json")
    saved = tmp_path / "model.json"
    saved.write_text(out)
    code, out, err = cli("show", saved)
    assert (code, err) == (0, "")
    assert out.splitlines()[0].rstrip() == (
        "Source         accelgraph JSON model, saved from a CUDA DOT dump (verbose)")


def test_undirected_dot_is_named(cli, tmp_path):
    path = tmp_path / "u.dot"
    path.write_text("graph g { a -- b; b -- c; }\n")
    code, out, err = cli("show", path)
    assert code == 0
    assert ("note: " + str(path) + " is an undirected graph (graph { a -- b }); each edge is "
            "drawn pointing from the node written first") in err
    assert "Edges          2" in out


def test_empty_graph_prints_a_clear_line(cli, tmp_path):
    path = tmp_path / "empty.dot"
    path.write_text("digraph g { }\n")
    code, out, err = cli("show", path)
    assert code == 0
    assert out.splitlines()[-1] == "The graph has no nodes."
    assert "level  node" not in out


def test_one_node_inside_is_singular(cli):
    code, out, _ = cli("show", NESTED)
    assert code == 0
    assert "Nested graphs  1  (1 node inside)" in out


def test_show_out_counts_the_nodes_of_nested_graphs_too(cli, tmp_path):
    target = tmp_path / "k.json"
    code, out, err = cli("show", DUMPS / "kinds_verbose.dot", "--out", target)
    assert code == 0
    model = json.loads(target.read_text())

    def count(graph):
        return sum(1 + (count(n["child"]) if n.get("child") else 0) for n in graph["nodes"])

    total, top = count(model), len(model["nodes"])
    assert total > top  # the recorded dump has a child graph
    assert err == f"wrote {target} ({total} nodes, {total - top} of them in nested graphs)\n"


def test_a_file_name_with_a_line_break_stays_on_one_line(cli, tmp_path):
    # "wrote o" and "ut.json (6 nodes)" were two lines of stderr; error lines already wrote
    # the break as \\n.
    target = tmp_path / "o\nut.json"
    code, out, err = cli("show", CHAIN, "--out", target)
    assert code == 0
    assert err == f"wrote {tmp_path}/o\\nut.json (6 nodes)\n"
    assert json.loads(target.read_text())["nodes"]
    odd = tmp_path / "new\rline.dot"
    odd.write_bytes(CHAIN.read_bytes())
    code, out, err = cli("diff", odd, CHAIN)
    assert (code, err) == (0, "")
    assert f"{tmp_path}/new\\rline.dot" in out and "\r" not in out
    code, out, err = cli("diff", CHAIN, tmp_path / "o\nut.json")
    assert (code, err) == (0, "")
    assert f"{tmp_path}/o\\nut.json" in out
    generic = tmp_path / "two\nlines.dot"
    generic.write_text("digraph { a -> b }\n")
    code, out, err = cli("show", generic)
    assert code == 0
    assert err.splitlines() == [f"note: {tmp_path}/two\\nlines.dot is not a CUDA graph dump; "
                                "parsed generically (node kinds unknown)"]
    undirected = tmp_path / "un\ndirected.dot"
    undirected.write_text("graph { a -- b }\n")
    code, out, err = cli("show", undirected)
    assert code == 0
    assert err.splitlines()[1] == (f"note: {tmp_path}/un\\ndirected.dot is an undirected graph "
                                   "(graph { a -- b }); each edge is drawn pointing from the node "
                                   "written first")


@pytest.mark.parametrize("brk, shown", [("\u2028", "\\u2028"), ("\u2029", "\\u2029"),
                                        ("\x85", "\\x85"), ("\r\n", "\\r\\n")])
def test_unicode_line_breaks_in_a_file_name_are_written_as_escapes(cli, tmp_path, brk, shown):
    target = tmp_path / f"o{brk}ut.json"
    code, out, err = cli("show", CHAIN, "--out", target)
    assert code == 0
    assert err == f"wrote {tmp_path}/o{shown}ut.json (6 nodes)\n"
    code, out, err = cli("show", tmp_path / f"no{brk}such.dot")
    assert (code, out) == (2, "")
    assert err == f"accelgraph: error: {tmp_path}/no{shown}such.dot: no such file\n"


def test_show_out_json_and_svg(cli, tmp_path):
    target = tmp_path / "pic" / "g.json"
    code, out, err = cli("show", CHAIN, "--out", target)
    assert code == 0
    assert err == f"wrote {target} (6 nodes)\n"
    assert [n["kind"] for n in json.loads(target.read_text())["nodes"]] == ["kernel"] * 6
    from accelgraph_cli.dot.draw import graphviz_available

    if graphviz_available():
        svg = tmp_path / "g.svg"
        code, _, err = cli("show", CHAIN, "--out", svg)
        assert code == 0 and svg.read_text().lstrip().startswith(("<?xml", "<svg"))
        assert svg.read_text().count('class="node"') == 6


def test_show_out_without_graphviz_or_with_a_bad_suffix(cli, tmp_path, monkeypatch):
    code, out, err = cli("show", CHAIN, "--out", tmp_path / "g.txt")
    assert (code, out) == (2, "")
    assert "--out" in err and "name a .svg, .png, .json or .json.gz file" in err
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name: None)
    code, out, err = cli("show", CHAIN, "--out", tmp_path / "g.png")
    assert (code, out) == (2, "")
    assert "Graphviz's `dot` program is needed" in err
    assert not (tmp_path / "g.png").exists()
    assert "--format" not in err  # show has none: its -o suffix picks the format
    assert err.rstrip().endswith("or write the graph model with -o FILE.json (the suffix picks "
                                 "the format)")
    code, out, err = cli("show", CHAIN, "--out", tmp_path / "g.json")  # what it suggests works
    assert code == 0 and (tmp_path / "g.json").is_file()


def test_dump_without_graphviz_suggests_its_other_formats(cli, tmp_path, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name: None)
    code, out, err = cli("dump", "saxpy", "--format", "svg", "--out", tmp_path / "g.svg")
    assert code == 2 and "or use --format dot or --format json" in err


def test_bare_accelgraph_prints_help(cli):
    code, out, err = cli()
    assert (code, err) == (0, "")
    assert out.startswith("Usage: accelgraph [OPTIONS] COMMAND [ARGS]...")


def test_top_level_help_says_what_needs_a_gpu_in_whole_lines(cli):
    code, out, err = cli("--help")
    assert (code, err) == (0, "")
    commands = out.split("Commands:\n", 1)[1].splitlines()
    listed = {line.split()[0]: line for line in commands if line.strip()}
    assert sorted(listed) == ["audit", "capture", "diff", "dump", "profile", "replay",
                              "scenarios", "show", "smoke"]
    for verb, line in listed.items():
        assert not line.endswith("..."), line  # a summary cut short by click
        assert ("(GPU)" in line) == (verb in ("capture", "replay", "profile", "audit", "dump",
                                              "smoke")), line
    assert ("smoke --list, scenarios, show and diff of saved dumps, profile of a saved "
            "profile and audit of a saved audit") in " ".join(out.split())


@pytest.mark.parametrize("verb", ["capture", "replay", "dump"])
def test_gpu_verbs_help_says_they_need_a_gpu(cli, verb):
    code, out, err = cli(verb, "--help")
    assert code == 0
    assert "Needs a CUDA GPU (exit 3 without one" in " ".join(out.split())


@pytest.mark.parametrize("verb", ["capture", "replay", "show", "dump", "scenarios", "smoke", "diff"])
def test_help_has_no_type_placeholders(cli, verb):
    code, out, err = cli(verb, "--help")
    assert code == 0
    assert "<bool>" not in out and "{" not in out.splitlines()[0]
    usage = out.splitlines()[0]
    assert usage.startswith(f"Usage: accelgraph {verb} [OPTIONS]")
    # Arguments are named as the usage line names them, with no Python type after them
    # (newer typer writes `SCENARIO <str>`, `PATHS <list[str]>`).
    section = out.split("Arguments:\n", 1)[1].split("\n\n", 1)[0] if "Arguments:" in out else ""
    assert "<" not in section, section


@pytest.mark.parametrize("args, option, choices", [
    (["capture", "saxpy", "--pool", "bogus"], "'--pool'", "'private', 'shared', 'async'"),
    (["replay", "saxpy", "--error-mode", "strict"], "'--error-mode'",
     "'default', 'global', 'thread_local', 'relaxed'"),
    (["dump", "saxpy", "-o", "g.dot", "--format", "gif"], "'--format' / '-f'",
     "'dot', 'json', 'svg', 'png'"),
])
def test_a_bad_choice_is_one_plain_line(cli, args, option, choices):
    code, out, err = cli(*args)
    assert (code, out) == (2, "")
    assert err == (f"accelgraph: error: Invalid value for {option}: {args[-1]!r} is not one of "
                   f"{choices}. (see accelgraph {args[0]} --help)\n")


@pytest.mark.parametrize("options, message", [
    (["--graph", "foo"], "--graph applies to scenarios (captured first)"),
    (["--pool", "shared"], "--pool applies to scenarios (captured first)"),
    (["--error-mode", "relaxed", "--graph", "x"], "--graph/--error-mode apply to scenarios"),
    (["--param", "n=1"], "--param applies to scenarios (captured first)"),
])
def test_diff_of_saved_graphs_refuses_scenario_options(cli, options, message):
    code, out, err = cli("diff", CHAIN, DUMPS / "chain_basic.dot", *options)
    assert (code, out) == (2, "")
    assert err.startswith(f"accelgraph: error: {message}")


@pytest.mark.parametrize("options, message", [
    (["--a-param", "n=abc"], "--a-param n='abc': n expects an int"),
    (["--b-param", "q=1"], "--b-param 'q=1': unknown key 'q'"),
    (["--param", "n=abc"], "--param n='abc': n expects an int"),
])
def test_diff_names_the_option_a_bad_scenario_param_came_from(cli, no_capture, options,
                                                               message):
    # Checked for both sides before either is captured: a bad --b-param is bad input (2),
    # also where side A would need a GPU to capture first.
    code, out, err = cli("diff", "saxpy", "saxpy", *options)
    assert (code, out) == (2, ""), err
    assert err.startswith(f"accelgraph: error: {message}")


@pytest.mark.parametrize("sides", [["saxpy", "chain"], ["chain", "saxpy"]])
def test_diff_refuses_a_side_param_for_a_saved_graph_before_capturing_the_other(cli, no_capture,
                                                                              sides):
    a, b = [str(CHAIN) if side == "chain" else side for side in sides]
    option = "--b-param" if sides[1] == "chain" else "--a-param"
    code, out, err = cli("diff", a, b, option, "n=1")
    assert (code, out) == (2, ""), err
    assert err == f"accelgraph: error: {option} applies to a scenario, not {CHAIN}, a saved graph\n"


@pytest.mark.parametrize("bad", ["missing", "empty", "truncated"])
@pytest.mark.parametrize("scenario_first", [True, False])
def test_diff_reads_a_saved_side_before_capturing_the_other(cli, no_capture, tmp_path, bad,
                                                            scenario_first):
    # A bad file is bad input (2) on either side: as B after a scenario, it was only read
    # once A had been captured, and without a GPU the verdict was "no GPU" (3).
    path = tmp_path / f"{bad}.dot"
    if bad == "empty":
        path.write_text("")
    elif bad == "truncated":
        text = CHAIN.read_text()
        path.write_text(text[: len(text) // 2])
    code, out, err = cli("diff", *(["saxpy", path] if scenario_first else [path, "saxpy"]))
    assert (code, out) == (2, ""), err
    assert err.startswith(f"accelgraph: error: {path}") and err.count("\n") == 1


@requires_no_gpu
@pytest.mark.parametrize("sides", [["saxpy", "chain"], ["chain", "saxpy"]])
def test_diff_param_goes_to_the_side_that_is_a_scenario(cli, sides):
    # "--param for both": with one side saved, it sets the scenario side's parameters (it was
    # refused, though --pool and --error-mode were taken); checked, then the GPU is asked for.
    a, b = [str(CHAIN) if side == "chain" else side for side in sides]
    assert cli("diff", a, b, "--param", "n=4096")[0] == 3
    code, out, err = cli("diff", a, b, "--param", "n=abc")
    assert (code, out) == (2, "") and err.startswith("accelgraph: error: --param n='abc'")


@pytest.mark.parametrize("value", ["nonsense", "Grid", "grid,nonsense"])
def test_diff_refuses_unknown_ignore_names_with_the_choices(cli, value):
    code, out, err = cli("diff", CHAIN, DUMPS / "chain_basic.dot", "--ignore", value)
    assert (code, out) == (2, "")
    bad = value.split(",")[-1]
    assert err.startswith(f"accelgraph: error: --ignore {bad}: no node of either graph has that "
                          "parameter; parameters here: ")
    assert ", block, cooperative, grid, priority, shared_mem" in err


@pytest.mark.parametrize("value", ["handle_node", "grid,ptr_src"])
def test_diff_says_pointers_and_handles_are_never_compared(cli, value):
    # every verbose node carries handle_node: "no node has that parameter" would be false
    code, out, err = cli("diff", CHAIN, DUMPS / "chain_verbose.dot", "--ignore", value)
    assert (code, out) == (2, "")
    bad = value.split(",")[-1]
    assert err == (f"accelgraph: error: --ignore {bad}: pointers and handles (ptr_*, handle_*) "
                   "differ from one capture to the next and are never compared, so there is "
                   "nothing to ignore\n")


def test_diff_accepts_a_parameter_the_graphs_carry(cli):
    code, out, err = cli("diff", CHAIN, DUMPS / "chain_basic.dot", "--ignore", "grid")
    assert (code, err) == (0, "")
    assert "identical: 6 nodes and 5 edges match (ignoring grid)" in out


def test_basic_dump_mem_alloc_size_is_unknown_not_zero(cli):
    code, out, _ = cli("show", DUMPS / "asyncalloc_basic.dot")
    assert code == 0
    assert "Allocated      size unknown (basic dump)  in 2 mem_alloc nodes" in out
    code, out, _ = cli("show", DUMPS / "asyncalloc_verbose.dot")
    assert "Allocated      8.0 MiB  in 2 mem_alloc nodes" in out


def test_conditional_nodes_show_their_type(cli):
    code, out, _ = cli("show", NESTED)
    assert code == 0
    assert "    1  #1          conditional  IF, 1 node inside" in out


def test_diff_reads_one_side_from_standard_input(cli, monkeypatch):
    import io
    import sys

    data = (DUMPS / "chain_basic.dot").read_bytes()
    for args in (("-", CHAIN), (CHAIN, "-")):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        code, out, err = cli("diff", *args)
        assert (code, err) == (0, "")  # basic vs verbose dump of one graph
        assert "<stdin>" in out and "identical" in out


def test_diff_refuses_standard_input_for_both_sides(cli):
    code, out, err = cli("diff", "-", "-")
    assert code == 2 and out == ""
    assert err.strip() == ("accelgraph: error: A and B are both - (standard input); give a "
                           "file for one of them")


def test_diff_of_one_regular_file_named_twice_is_read_twice(cli, tmp_path):
    link = tmp_path / "again.dot"
    link.symlink_to(CHAIN)
    code, out, err = cli("diff", CHAIN, link)
    assert (code, err) == (0, "")
    assert "identical" in out


def test_show_of_a_model_with_a_parameter_of_the_wrong_type_is_bad_input(cli, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"format":"accelgraph-model","version":1,"nodes":[{"id":"a","kind":"mem_alloc",'
                    '"params":{"bytes":"x"}}],"edges":[]}')
    code, out, err = cli("show", path)
    assert (code, out) == (2, "")  # was 70: "internal error: ValueError: invalid literal for int()"
    assert err.strip() == (f'accelgraph: error: {path}: malformed accelgraph model: node a: '
                           'parameter "bytes" must be an integer of 0 or more')


@pytest.mark.parametrize("out, fmt, words", [
    ("-", "dot", "--out -: dump writes files, not standard output"),
    ("g.svg.gz", "svg", "only DOT and JSON are written gzipped"),
    ("g.png.gz", "dot", "only DOT and JSON are written gzipped; name a .dot.gz or .json.gz"),
    ("g.tar.gz", "dot", "only DOT and JSON are written gzipped"),
    ("g.dot.gz", "json", "the suffix names dot but --format is json"),
    ("g.JSON.GZ", "dot", "the suffix names json but --format is dot"),
])
def test_dump_refuses_an_output_it_cannot_write_before_capture(cli, out, fmt, words):
    code, out_text, err = cli("dump", "saxpy", "-o", out, "-f", fmt)
    assert (code, out_text) == (2, ""), err
    assert words in err


@pytest.fixture
def no_capture(monkeypatch):
    """Fail the test if anything is captured: what is refused must be refused before that."""
    from accelgraph_cli.run import protocol

    def capture(*args, **kwargs):
        raise AssertionError("captured before the options were checked")

    monkeypatch.setattr(protocol, "capture", capture)


@pytest.mark.parametrize("args", [
    ["dump", "saxpy", "-o", "g.dot", "--graph", "nosuch"],
    ["diff", "saxpy", "saxpy", "--graph", "nosuch"],
], ids=" ".join)
def test_a_graph_name_a_one_graph_scenario_does_not_have_is_refused(cli, no_capture, args):
    code, out, err = cli(*args)
    assert (code, out) == (2, ""), err
    assert "--graph 'nosuch': no such graph; saxpy.py has one graph, step" in err


def test_dump_from_the_record_refuses_a_graph_name_before_capture(cli, tmp_path, no_capture):
    (tmp_path / ".accelgraph").mkdir()
    (tmp_path / ".accelgraph" / "last_capture.json").write_text('{"scenario": "saxpy"}')
    code, out, err = cli("dump", "-o", "g.dot", "--graph", "nosuch")
    assert code == 2 and "no such graph; saxpy.py has one graph, step" in err


@pytest.mark.parametrize("out, name, expected", [
    ("graph.dot", "batch8", "graph_batch8.dot"),
    ("graph.dot.gz", "batch8", "graph_batch8.dot.gz"),
    ("dir/Graph.JSON.GZ", "a b", "dir/Graph_a_b.JSON.GZ"),
    ("graph.gz", "x", "graph_x.gz"),
])
def test_each_graph_of_a_dump_gets_its_name_before_the_suffixes(out, name, expected):
    from accelgraph_cli.cli.app import _per_graph_path

    assert _per_graph_path(out, name, 2) == expected


@pytest.mark.parametrize("args, words", [
    (["diff", CHAIN, CHAIN, "--json", "--limit", "1"], "--limit shortens the lists in the terminal"),
    (["dump", "saxpy", "-o", "g.dot", "--no-render", "--limit", "5"],
     "--limit shortens the rendering in the terminal; --no-render renders nothing"),
    (["show", CHAIN, "--focus", "3", "--limit", "2"],
     "--limit shortens the listing of the whole graph; --focus draws one node's neighbourhood"),
], ids=lambda v: " ".join(map(str, v)) if isinstance(v, list) else "")
def test_a_limit_that_nothing_would_use_is_refused(cli, args, words):
    code, out, err = cli(*args)
    assert (code, out) == (2, ""), err
    assert words in err


def test_show_json_refuses_limit_it_would_ignore(cli):
    code, out, err = cli("show", CHAIN, "--json", "--limit", "1")
    assert (code, out) == (2, "")
    assert "--limit shortens the listing in the terminal; --json prints the whole model" in err
    code, out, err = cli("show", CHAIN, "--json")  # the default limit is no objection
    assert code == 0 and json.loads(out)["nodes"]


@pytest.mark.parametrize("given", [["--rtol", "0.1"], ["--atol", "1e-6"], ["--check-steps", "3"],
                                   ["--rtol", "0", "--check-steps", "2"]])
def test_replay_refuses_check_settings_with_no_check(cli, given):
    # Refused before anything else (the scenario, the GPU), naming what was given, even
    # where the value equals the default.
    code, out, err = cli("replay", "saxpy", "--no-check", *given)
    assert (code, out) == (2, ""), err
    named = [arg for arg in given if arg.startswith("--")]
    head = err.split(" set", 1)[0]
    assert all(name in head for name in named) and "--no-check turns the check off" in err


@requires_no_gpu
def test_focus_without_a_limit_and_no_check_alone_are_no_objection(cli):
    code, out, err = cli("show", CHAIN, "--focus", "3")
    assert code == 0, err
    code, out, err = cli("replay", "saxpy", "--no-check")
    assert code == 3, err  # on to the GPU, which this machine lacks


@pytest.mark.parametrize("args", [["smoke", "--junit", "a.py", "b.py"],
                                  ["dump", "b.py", "--out", "a.py"]])
def test_no_output_is_written_over_a_python_file(cli, tmp_path, monkeypatch, args):
    # `smoke --junit a.py b.py` (the option's value forgotten) replaced the scenario a.py
    # with a JUnit report; `dump -o x.py` would have written DOT over it.
    monkeypatch.chdir(tmp_path)
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text((SCENARIOS / "saxpy.py").read_text())
    before = (tmp_path / "a.py").read_bytes()
    code, out, err = cli(*args)
    assert (code, out) == (2, "")
    assert err.startswith("accelgraph: error: cannot write a.py: accelgraph writes no Python file")
    assert (tmp_path / "a.py").read_bytes() == before


@pytest.mark.parametrize("args", [["smoke", "saxpy", "--junit", ""],
                                  ["smoke", "saxpy", "--baseline", ""],
                                  ["smoke", "saxpy", "--baseline", "", "--update-baseline"],
                                  ["capture", "saxpy", "--out", ""],
                                  ["dump", "saxpy", "--out", ""],
                                  ["show", str(DUMPS / "chain_basic.dot"), "--out", ""]])
def test_an_empty_file_or_folder_name_is_refused(cli, args):
    # `--junit "$REPORT"` with the variable unset: taken as not given, no report was written
    # (and --baseline '' skipped the drift check) without a word. dump needs --out, so
    # "leave the option out" is no advice there; show said "name a .svg, .png, ... file".
    code, out, err = cli(*args)
    assert (code, out) == (2, "")
    option = args[args.index("") - 1]
    what = "folder" if option == "--baseline" or args[0] == "capture" else "file"
    advice = "" if args[0] == "dump" else ", or leave the option out"
    assert err == (f"accelgraph: error: {option} was given an empty name (an unset variable?); "
                   f"name a {what}{advice}\n")


def test_a_link_to_a_python_file_is_not_written_through(cli, tmp_path, monkeypatch):
    # The link's target is what gets replaced: report.xml -> a.py would put the report
    # into the scenario.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text((SCENARIOS / "saxpy.py").read_text())
    before = (tmp_path / "a.py").read_bytes()
    (tmp_path / "report.xml").symlink_to("a.py")
    code, out, err = cli("smoke", "a.py", "--junit", "report.xml")
    assert (code, out) == (2, "")
    assert err.startswith("accelgraph: error: cannot write report.xml: accelgraph writes no "
                          "Python file")
    assert (tmp_path / "a.py").read_bytes() == before


@pytest.mark.parametrize("args, message", [
    (["smoke", ""], "an empty path: name scenario files, folders of them or bundled "
                    "scenarios (`accelgraph smoke` with no path runs them all)"),
    (["smoke", "--list", "saxpy", ""], "an empty path: name scenario files, folders of them "
                                       "or bundled scenarios (`accelgraph smoke` with no path "
                                       "runs them all)"),
    (["capture", ""], "an empty scenario name: name a scenario file or a bundled scenario ("),
    (["replay", " "], "an empty scenario name: name a scenario file or a bundled scenario ("),
    (["dump", "", "--out", "g.dot"], "an empty scenario name: name a scenario file or a "
                                     "bundled scenario ("),
    (["show", ""], "an empty file name: name a DOT dump or a .json model"),
    (["diff", "", "saxpy"], "A is an empty name: give a saved graph (a DOT dump or a .json "
                            "model), a scenario, or - for standard input"),
    (["diff", "saxpy", ""], "B is an empty name: give a saved graph (a DOT dump or a .json "
                            "model), a scenario, or - for standard input"),
])
def test_an_empty_input_name_is_refused_not_taken_for_this_folder(cli, tmp_path, monkeypatch,
                                                                  args, message):
    # Path("") is ".": `smoke "$DIR"` with the variable unset imported every .py here, and
    # capture said ".: is a directory", a name nobody gave.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "stray.py").write_text("raise SystemExit('imported')\n")
    code, out, err = cli(*args)
    assert (code, out) == (2, "")
    assert err.startswith(f"accelgraph: error: {message}") and err.count("\n") == 1, err


def test_a_line_break_in_a_file_name_keeps_the_error_one_line(cli, tmp_path):
    code, out, err = cli("show", str(tmp_path / "new\nline.dot"))
    assert (code, out) == (2, "")
    assert err == f"accelgraph: error: {tmp_path}/new\\nline.dot: no such file\n"
