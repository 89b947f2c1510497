"""Parsing: CUDA's DOT dumps recorded on a GPU, generic DOT, JSON snapshots, and bad input.

Everything about CUDA's dialect is tested on the dumps that `make fixtures` recorded on a
GPU (tests/data/dumps/); they fail, saying what to restore, where a recording is absent. The
inputs written here by hand are deliberately *not* CUDA output: generic DOT, JSON, garbage.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from _paths import DUMPS, MANIFEST, missing_recording, recorded

from accelgraph_cli.dot.parse import (
    DotParseError,
    is_generic,
    load_model,
    load_model_bytes,
    parse_dot,
)
from accelgraph_cli.model.graph_model import GraphModel, ModelLoadError, Node

# ------------------------------------------------------------------------ bad input


def test_error_classes():
    assert issubclass(DotParseError, ModelLoadError)
    assert issubclass(ModelLoadError, ValueError)


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "empty file"),
        (b"  \n\t\n", "empty file"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00", "binary file"),
        (b"digraph dot {\n\xff\xfe}\n", "x.dot:2: not UTF-8"),
        (b"hello world\n", "not a DOT graph"),
        (b"\n\nprint('hi')\n", "x.dot:3: not a DOT graph"),
        (b"digraph G {\n  a -> b;\n", "unclosed"),
        (b'digraph G {\n  a [label="open\n}\n', "x.dot:2: unterminated string"),
        (b"digraph G { a -> }", "not valid DOT"),
        (b"digraph G { } digraph H { }", "more than one graph"),
    ],
)
def test_bad_input_raises_dot_parse_error_naming_file_and_line(data, message):
    with pytest.raises(DotParseError) as caught:
        load_model_bytes(data, filename="x.dot")
    text = str(caught.value)
    assert message in text and text.startswith("x.dot")
    assert "\n" not in text


def test_load_model_file_errors(tmp_path):
    with pytest.raises(ModelLoadError, match="no such file"):
        load_model(tmp_path / "missing.dot")
    # a bytes path, as os functions take: read, and named as text (not b'...') in errors
    with pytest.raises(ModelLoadError) as caught:
        load_model(bytes(tmp_path / "missing.dot"))
    assert str(caught.value) == f"{tmp_path / 'missing.dot'}: no such file"
    assert len(load_model(bytes(DUMPS / "chain_basic.dot")).nodes) == 6
    with pytest.raises(ModelLoadError, match="is a directory"):
        load_model(tmp_path)
    binary = tmp_path / "blob.dot"
    binary.write_bytes(b"digraph dot {" + bytes(range(256)) * 400)
    with pytest.raises(DotParseError, match="blob.dot: binary file"):
        load_model(binary)


def test_parse_dot_rejects_non_text():
    with pytest.raises(DotParseError, match="expected text"):
        parse_dot(b"digraph {}")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- JSON


def test_json_snapshot_round_trips_through_a_file(tmp_path):
    inner = GraphModel([Node("i0", "empty")], [])
    model = GraphModel(
        [
            Node("n0", "kernel", "k", {"grid": (2, 1, 1), "block": (64, 1, 1), "shared_mem": 0}),
            Node("n1", "graph", None, {}, child=inner),
        ],
        [("n0", "n1")],
        source="live",
    )
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(model.to_json()))
    assert load_model(path) == model


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"nodes": []}', "snap.json: not an accelgraph model"),
        ("[1, 2]", "snap.json: not an accelgraph model"),
        ('{"format": "accelgraph-model",\n "version": 1,\n "nodes": [,]}', "snap.json:3: invalid JSON"),
        # a .json file is read as JSON whatever it starts with: a scalar is no model, not
        # "no DOT graph"
        ("42", "snap.json: not an accelgraph model"),
        ("null\n", "snap.json: not an accelgraph model"),
        ('"digraph"', "snap.json: not an accelgraph model"),
        ("digraph { a -> b }", "snap.json:1: invalid JSON: .*; it looks like DOT: name it .dot"),
        ('{"format": "accelgraph-model"}', 'snap.json: accelgraph model without a "version"'),
    ],
)
def test_json_of_the_wrong_shape(tmp_path, text, message):
    path = tmp_path / "snap.json"
    path.write_text(text)
    with pytest.raises(ModelLoadError, match=message):
        load_model(path)
    gzipped = tmp_path / "snap.json.gz"  # the name with .gz after it says the same
    gzipped.write_bytes(gzip.compress(text.encode()))
    with pytest.raises(ModelLoadError, match=message.replace("snap.json", "snap.json.gz")):
        load_model(gzipped)


def test_a_scalar_in_a_file_not_named_json_is_still_no_dot_graph(tmp_path):
    path = tmp_path / "snap.dot"
    path.write_text("42\n")
    with pytest.raises(DotParseError, match="not a DOT graph"):
        load_model(path)


# ---------------------------------------------------------------------- generic DOT


def test_generic_dot_is_parsed_as_unknown_nodes():
    model = parse_dot(
        "digraph build {\n  rankdir=LR;\n  node [shape=box];\n"
        '  fetch [label="fetch\\nsources"];\n  compile; link;\n'
        "  fetch -> compile;\n  compile -> link [color=red];\n}\n",
        filename="build.dot",
    )
    assert is_generic(model) and model.source == "dot-generic"
    assert [(n.id, n.kind, n.name) for n in model.nodes] == [
        ("fetch", "unknown", "fetch sources"),
        ("compile", "unknown", "compile"),
        ("link", "unknown", "link"),
    ]
    assert model.edges == [("fetch", "compile"), ("compile", "link")]
    assert model.critical_path() == ["fetch", "compile", "link"]


def test_generic_dot_beyond_the_fast_scanner_goes_through_pydot():
    # Ports, HTML labels and undirected edges are pydot's job.
    model = parse_dot(
        "graph G { // undirected\n a -- b -- c; d:p1 -- a; e [label=<<b>E</b>>]; }",
        filename="g.dot",
    )
    assert model.source == "dot-generic"
    assert {n.id for n in model.nodes} == {"a", "b", "c", "d", "e"}
    assert model.edges == [("a", "b"), ("b", "c"), ("d", "a")]


@pytest.mark.parametrize("body, named", [
    # a label a later statement gives wins (pydot's reader kept the first statement's)
    ("a; a [label=X]; b -> c", [("a", "X"), ("b", "b"), ("c", "c")]),
    ("a [label=X]; a [color=red]; b -> c", [("a", "X"), ("b", "b"), ("c", "c")]),
    # the statement written last, wherever subgraphs put it (pydot's are read after their
    # graph's own statements)
    ("subgraph s { a [label=X] } a [label=Y]; b -> c", [("a", "Y"), ("b", "b"), ("c", "c")]),
    ("a [label=Y]; subgraph s { a [label=X] } b -> c", [("a", "X"), ("b", "b"), ("c", "c")]),
    ("{a [label=Y]} -> b; a [label=Z]", [("a", "Z"), ("b", "b")]),
    ("a [label=Z]; {a [label=Y]} -> b", [("a", "Y"), ("b", "b")]),
    # an HTML label, and strings joined with '+' (the scanner lost the first, cut the second
    # to its first string): pydot reads both; an HTML label is shown as its text
    ("a [label=<x <b>y</b>>]; b -> c", [("a", "x <b>y</b>"), ("b", "b"), ("c", "c")]),
    ('a [label="p" + "q"]; b -> c', [("a", "pq"), ("b", "b"), ("c", "c")]),
    ('a [label="x<y+z"]; b -> c', [("a", "x<y+z"), ("b", "b"), ("c", "c")]),
    # a quoted "node" is a node (pydot's reader took it for default attributes and lost it)
    ('"node" [label=X]; b -> c', [("node", "X"), ("b", "b"), ("c", "c")]),
    ("node [shape=box]; b -> c", [("b", "b"), ("c", "c")]),
])
def test_the_two_readers_of_generic_dot_agree(body, named):
    # Which reader runs depends on text elsewhere in the file: a port (c:p) sends the whole
    # file to pydot. Both must read the nodes alike, as Graphviz does.
    for text in (f"digraph {{ {body} }}", f"digraph {{ {body}; d -> e:p }}"):
        model = parse_dot(text, filename="g.dot")
        assert [(n.id, n.name) for n in model.nodes][:len(named)] == named, text


def test_comments_outside_strings_are_ignored_inside_kept():
    model = parse_dot('digraph { /* c */ a [label="see http://x"]; // tail\n a -> b }')
    assert model.node("a").name == "see http://x"
    assert model.edges == [("a", "b")]


# ---------------------------------------------------------------- recorded CUDA dumps


def _dump(name: str) -> Path:
    return recorded(name)


def _recorded() -> list[Path]:
    if not DUMPS.is_dir():
        return []
    return sorted(p for p in DUMPS.iterdir() if p.name.endswith((".dot", ".dot.gz")))


def _manifest() -> dict:
    return json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}


RECORDED = _recorded()


def test_every_dump_the_manifest_names_is_in_the_checkout():
    # The parametrized tests below have nothing to run without recordings: this one fails.
    if not MANIFEST.exists():
        missing_recording(MANIFEST)
    names = [name for name in _manifest() if not name.startswith("_")]
    assert len(names) >= 40
    for name in names:
        if not (DUMPS / name).is_file():
            missing_recording(DUMPS / name)
    assert sorted(p.name for p in RECORDED) == sorted(names)


def _pairs() -> list[tuple[Path, Path]]:
    """(basic, verbose) dumps of the same captured graph, as `make fixtures` names them."""
    pairs = []
    for basic in RECORDED:
        if "_basic.dot" in basic.name:
            verbose = basic.with_name(basic.name.replace("_basic.dot", "_verbose.dot"))
            if verbose.exists():
                pairs.append((basic, verbose))
    return pairs


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_every_recorded_dump_parses_as_a_cuda_graph(path):
    model = load_model(path)
    assert model.source in ("dot-verbose", "dot-basic")
    assert model.source == ("dot-basic" if "_basic" in path.name else "dot-verbose")
    assert model.nodes, "a recorded graph has nodes"
    assert model.is_acyclic()
    for graph in model.walk():
        for node in graph.nodes:
            assert node.kind != "unknown", f"{path.name}: {node.id} not recognised: {node.params}"
            if node.kind == "kernel":
                assert node.name, f"{path.name}: kernel {node.id} without a name"
            if node.kind == "graph":
                assert node.child is not None and node.child.nodes, f"{node.id} lost its child"
    # Every edge joins two nodes of the same graph (checked by building the index).
    for graph in model.walk():
        graph.topological_order()


def _manifest_kinds() -> list[tuple[str, dict]]:
    """(file, node kinds CUDA reported while recording) from MANIFEST.json, where known."""
    return [
        (name, entry["kinds"])
        for name, entry in sorted(_manifest().items())
        if isinstance(entry, dict) and entry.get("kinds") and (DUMPS / name).exists()
    ]


@pytest.mark.parametrize("name, expected", _manifest_kinds() or [("MANIFEST.json", {})])
def test_kind_counts_match_what_cuda_reported_when_recording(name, expected):
    # fixtures.py counts node types with cudaGraphNodeGetType on the live graph: an oracle
    # independent of the DOT text.
    assert load_model(recorded(name)).kind_counts() == expected


@pytest.mark.parametrize("pair", _pairs(), ids=lambda p: p[0].name.replace("_basic.dot", ""))
def test_basic_and_verbose_dumps_give_the_same_structure(pair):
    basic, verbose = (load_model(p) for p in pair)
    for b, v in zip(basic.walk(), verbose.walk()):
        assert [(n.id, n.kind, n.name) for n in b.nodes] == [(n.id, n.kind, n.name) for n in v.nodes]
        assert sorted(b.edges) == sorted(v.edges)
    assert basic.levels() == verbose.levels()
    assert basic.critical_path() == verbose.critical_path()
    assert basic.total_nodes() == verbose.total_nodes()


# Basic dumps too: their kernels are known by shape (octagon), which both paths must be given.
@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_label_templates_give_the_same_nodes_as_direct_parsing(path):
    from accelgraph_cli.dot import parse as dotparse
    from accelgraph_cli.dot.scan import _SHAPE_ATTR

    model = load_model(path)
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    document = dotparse._scan(text, path.name)
    for graph in model.walk():
        for node in graph.nodes:
            raw = document.node_attrs[node.id]
            label = dotparse._unquote(dotparse._LABEL_ATTR.search(raw).group(1))
            shape = dotparse._unquote(_SHAPE_ATTR.search(raw).group(1))
            direct = dotparse._node_from_label(node.id, label, shape)
            params = {k: v for k, v in node.params.items() if k != "demangled"}
            assert (direct.id, direct.kind, direct.name, direct.topo_id, direct.params) == (
                node.id,
                node.kind,
                node.name,
                node.topo_id,
                params,
            ), node.id


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_pointers_and_handles_are_marked_unstable(path):
    for graph in load_model(path).walk():
        for node in graph.nodes:
            for key, value in node.params.items():
                if isinstance(value, str) and value.startswith("0x") and len(value) > 6:
                    assert key.startswith(("ptr_", "handle_")), f"{node.id}: {key}={value}"


# Facts per recorded fixture. They follow from what tools/fixtures.py captures (see
# each recipe) and from CUDA's output format as read in the recorded dumps.


def _both(stem: str) -> list[GraphModel]:
    return [load_model(_dump(f"{stem}_{flags}.dot")) for flags in ("basic", "verbose")]


def test_chain_fixture():
    # chain(cupy, 6): x += 0.5 and x *= 1.0001 alternating on one stream.
    for model in _both("chain"):
        assert model.kind_counts() == {"kernel": 6}
        assert len(model.edges) == 5
        assert model.level_widths() == [1] * 6
        assert len(model.critical_path()) == 6
        names = [model.node(i).name for i in model.topological_order()]
        assert [n.split("__")[0] for n in names] == ["cupy_add", "cupy_multiply"] * 3
    verbose = _both("chain")[1]
    for node in verbose.nodes:
        assert node.params["shared_mem"] == 0
        assert len(node.params["grid"]) == 3 and len(node.params["block"]) == 3
        assert node.topo_id is not None


def test_forkjoin_fixture():
    # fork_join(cupy, 1, 3): three side streams each multiply+sqrt, then three adds on origin.
    for model in _both("forkjoin"):
        assert model.kind_counts() == {"kernel": 9}
        assert model.level_widths() == [3, 3, 1, 1, 1]
        assert model.max_width() == 3
        assert len(model.critical_path()) == 5
        join = model.levels()[2][0]
        assert len(model.parents(join)) == 3  # the join waits for every branch


def test_memops_fixture():
    # memory_ops: memset, D2D copy, H2D copy from pinned memory, host callback, kernel.
    for model in _both("memops"):
        order = [model.node(i) for i in model.topological_order()]
        assert [n.kind for n in order] == ["memset", "memcpy", "memcpy", "host", "kernel"]
        memset, d2d, h2d = order[:3]
        assert memset.params["value"] == 0 and memset.params["bytes"] == (1 << 16) * 4
        assert (d2d.params["direction"], d2d.params["bytes"]) == ("DtoD", (1 << 16) * 4)
        assert (h2d.params["direction"], h2d.params["bytes"]) == ("HtoD", (1 << 16) * 4)


def test_kinds_fixture_nests_the_child_graph():
    for model in _both("kinds"):
        counts = model.kind_counts()
        assert counts.get("event_record") == 1 and counts.get("event_wait") == 1
        assert counts.get("empty") == 1 and counts.get("graph") == 1
        child_node = next(n for n in model.nodes if n.kind == "graph")
        assert child_node.child is not None
        assert child_node.child.kind_counts() == {"kernel": 2}
        assert model.total_nodes() == len(model.nodes) + 2


def test_chain10k_fixture():
    # Its parse time (target: under a second) is measured by bench/bench_parse.py (make bench).
    model = load_model(recorded("chain10k_verbose.dot"))
    assert model.kind_counts() == {"kernel": 10_000}
    assert len(model.edges) == 9_999 and len(model.critical_path()) == 10_000


# A hex value of up to 8 digits is a number (flags, "0x00000005"); 9 or more digits is an
# address or handle, kept as text under a ptr_/handle_ key. Every hex token in the recordings
# has 16 digits, so the boundary is pinned here on recorded labels with one token re-sized.
@pytest.mark.parametrize(
    "digits, key, value",
    [
        (1, "user_data", 5),
        (8, "user_data", 5),
        (9, "ptr_user_data", "0x000000005"),
        (16, "ptr_user_data", "0x0000000000000005"),
    ],
)
def test_hex_width_boundary_agrees_between_templates_and_direct_parsing(digits, key, value):
    from accelgraph_cli.dot import labels, scan, templates

    path = _dump("memops_verbose.dot")
    document = scan._scan(path.read_text(), path.name)
    raw = document.node_attrs["graph_6_node_3"]  # the HOST node: "userData: 0x0000000000000000"
    label = scan._unquote(scan._LABEL_ATTR.search(raw).group(1))
    assert "userData: 0x0000000000000000" in label
    label = label.replace("userData: 0x0000000000000000", "userData: 0x" + "5".rjust(digits, "0"))
    direct = labels._node_from_label("n", label, "rectangle")
    recipes = templates._LabelTemplates()
    first, again = (recipes.node("n", label, "rectangle") for _ in range(2))
    assert direct.params[key] == value and "user_data" not in direct.params.keys() - {key}
    for node in (first, again):  # the recipe's first use, then a reuse of the cached recipe
        assert (node.kind, node.name, node.topo_id, node.params) == (
            direct.kind, direct.name, direct.topo_id, direct.params
        )


def test_launch_dims_one_number_or_a_brace_tuple_become_three_dims():
    # chain_verbose: "cupy_add...<<<8,128,0>>>"; jacobi: "jacobi_step4<<<{4,8},{32,8},0>>>".
    chain = load_model(_dump("chain_verbose.dot"))
    first = chain.node(chain.topological_order()[0])
    assert (first.params["grid"], first.params["block"], first.params["shared_mem"]) == (
        (8, 1, 1), (128, 1, 1), 0
    )
    jacobi = load_model(_dump("scenario_jacobi_verbose.dot"))
    dims = {(n.params["grid"], n.params["block"]) for n in jacobi.nodes if n.kind == "kernel"}
    assert dims == {((4, 8, 1), (32, 8, 1))}


@pytest.mark.parametrize(
    "text, dims",
    [("8", (8, 1, 1)), ("\x0132,4\x02", (32, 4, 1)), ("\x018,4,2\x02", (8, 4, 2)),
     ("\x011,2,3,4\x02", None), ("x", None), ("", None)],
)
def test_dims_pads_to_three_and_refuses_more(text, dims):
    from accelgraph_cli.dot import labels

    assert labels._dims(text) == dims
