"""The DOT reader's pieces, pinned exactly: what each helper makes of its input.

Mutation testing (tests/mutation/REPORT.md) found these unguarded: a flipped condition or a
dropped value in them changed no test's outcome. CUDA's output comes from the recorded dumps
(tests/data/dumps/), edited where a test needs a damaged one; the hand-written inputs are
generic DOT, JSON, or a single label field handed to the helper that reads it.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import sys

import pytest
from _paths import child_env, recorded

from accelgraph_cli.dot import labels, scan
from accelgraph_cli.dot.load import _gunzip, decode_text
from accelgraph_cli.dot.parse import DotParseError, load_model, load_model_bytes, parse_dot
from accelgraph_cli.dot.read import STDIN, read_graph
from accelgraph_cli.model.graph_model import GraphModel, ModelLoadError, Node


def _text(name: str) -> str:
    path = recorded(name)
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode()


MODEL_JSON = json.dumps(GraphModel([Node("a", "empty")], []).to_json()).encode()


def _line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


# ------------------------------------------------------------ CUDA dump or generic DOT


def test_a_cuda_dump_without_nodes_is_still_a_cuda_dump():
    # The recorded chain with every node and edge statement cut out: CUDA's clusters remain.
    text = _text("chain_basic.dot")
    frame = ("digraph", "subgraph", "label=", "}")
    empty = "".join(line for line in text.splitlines(keepends=True) if line.startswith(frame))
    assert empty.count("subgraph cluster_") == 1
    model = parse_dot(empty, filename="empty.dot")
    assert (model.source, model.nodes, model.edges) == ("dot-basic", [], [])


@pytest.mark.parametrize(
    "text",
    [
        "digraph dot { }",  # CUDA's graph name, but no cluster: not a dump
        "digraph G { subgraph cluster_0 { } }",  # a cluster, but not CUDA's graph name
        "digraph DOT { subgraph cluster_0 { } }",
    ],
)
def test_node_less_dot_that_is_not_cuda_is_generic(text):
    model = parse_dot(text)
    assert (model.source, model.nodes, model.edges) == ("dot-generic", [], [])


def test_nodes_in_a_cluster_are_not_enough_for_a_cuda_dump():
    # Every node must also be named graph_N_node_K: plain names in a cluster are generic DOT.
    model = parse_dot("digraph G { subgraph cluster_0 { a; b; a -> b; } }")
    assert model.source == "dot-generic"
    assert [(n.id, n.kind, n.name, n.params) for n in model.nodes] == [
        ("a", "unknown", "a", {}),
        ("b", "unknown", "b", {}),
    ]


def test_a_cuda_node_name_outside_a_cluster_is_not_a_cuda_dump():
    model = parse_dot('digraph dot { "graph_0_node_0" -> "graph_0_node_1"; }')
    assert model.source == "dot-generic"
    assert model.edges == [("graph_0_node_0", "graph_0_node_1")]


# ------------------------------------------------------------------------ generic DOT


def test_generic_nodes_keep_a_label_only_where_it_differs_from_the_id():
    model = parse_dot('digraph G { a [label="Alpha \\n beta"]; b [label="b"]; c; a -> b; b -> d; }')
    assert [(n.id, n.kind, n.name, n.params) for n in model.nodes] == [
        ("a", "unknown", "Alpha beta", {"label": "Alpha beta"}),
        ("b", "unknown", "b", {}),
        ("c", "unknown", "c", {}),
        ("d", "unknown", "d", {}),
    ]


# ------------------------------------------------------------------- comments, lines


def test_a_comment_over_several_lines_becomes_that_many_line_breaks():
    text = 'digraph G {\n/* one\ntwo\n*/ a -> b;\n# three\n c [label="x\n}\n'
    model_text = text.replace('c [label="x\n}', "c;\n}")
    model = parse_dot(model_text)
    assert [n.id for n in model.nodes] == ["c", "a", "b"]
    with pytest.raises(DotParseError) as caught:
        parse_dot(text, filename="x.dot")
    assert str(caught.value) == "x.dot:6: unterminated string (file truncated?)"


# ------------------------------------------------------------- basic labels' detail line


def test_basic_memset_and_memcpy_details_from_recorded_dumps():
    memops = {n.id: (n.kind, n.params) for n in load_model(recorded("memops_basic.dot")).nodes}
    assert memops["graph_6_node_0"] == ("memset", {"value": 0, "bytes": 262144})
    assert memops["graph_6_node_1"] == ("memcpy", {"direction": "DtoD", "bytes": 262144})
    assert memops["graph_6_node_2"] == ("memcpy", {"direction": "HtoD", "bytes": 262144})
    # "UtoU" is how basic dumps write cudaMemcpyDefault.
    alloc = {n.id: (n.kind, n.params) for n in load_model(recorded("asyncalloc_basic.dot")).nodes}
    assert alloc["graph_7_node_5"] == ("memcpy", {"direction": "default", "bytes": 4194304})
    assert alloc["graph_7_node_0"] == ("mem_alloc", {})


@pytest.mark.parametrize(
    "kind, detail, params",
    [
        ("memset", "7,64", {"value": 7, "bytes": 64}),
        ("memset", "7,64,1", {"detail": "7,64,1"}),
        ("memset", "x,64", {"detail": "x,64"}),
        ("memcpy", "DtoH,64", {"direction": "DtoH", "bytes": 64}),
        ("memcpy", "PtoP,64", {"direction": "PtoP", "bytes": 64}),  # unknown words kept
        ("memcpy", "DtoH,many", {"detail": "DtoH,many"}),
        ("memcpy", "64", {"detail": "64"}),
        ("mem_alloc", "4096", {"bytes": 4096}),
        ("mem_alloc", "4096,2", {"detail": "4096,2"}),
        ("mem_alloc", "big", {"detail": "big"}),
        ("host", "12", {"detail": "12"}),
        ("host", "1,2", {"detail": "1,2"}),
    ],
)
def test_basic_detail_line_by_kind(kind, detail, params):
    found: dict = {}
    labels._basic_detail(kind, detail, found)
    assert found == params


# ------------------------------------------------------------------ conditional bodies


def test_conditional_node_names_its_body_by_handle():
    model = load_model(recorded("conditional_verbose.dot"))
    node = model.node("graph_11_node_1")
    assert node.kind == "conditional"
    # the address CUDA wrote (it differs from one recording to the next)
    handle = re.search(r'"graph_11_node_1".*?\{node handle\| (0x[0-9A-F]{16})\}',
                       recorded("conditional_verbose.dot").read_text(), re.S).group(1)
    assert node.params == {
        "handle_node": handle,
        "handle_conditional": 1,
        "conditional_type": "IF",
        "handle_body_true": "graph_12",
        "handle_child_graph": "graph_12",
    }
    assert [n.kind for n in node.child.nodes] == ["memset"]


# --------------------------------------------------------------------------- files


def test_gunzip_reads_a_handle_and_names_a_damaged_file():
    data = gzip.compress(b"digraph G { a; }")
    assert _gunzip(io.BytesIO(data), "g.dot.gz") == b"digraph G { a; }"
    with pytest.raises(DotParseError) as caught:
        _gunzip(io.BytesIO(data[:-6]), "g.dot.gz")
    assert str(caught.value).startswith("g.dot.gz: damaged gzip file (")


@pytest.mark.parametrize(
    "data, message",
    [
        # json's own message ends in "starting at": its position was cut off
        (b'{"a": "abc', "j.json:1: invalid JSON: Unterminated string starting at line 1, column 7"),
        (b'{"a":\n [1,]}', "j.json:2: invalid JSON: Expecting value at line 2, column 5"),
    ],
)
def test_invalid_json_names_line_and_column(data, message):
    with pytest.raises(ModelLoadError) as caught:
        load_model_bytes(data, filename="j.json")
    assert str(caught.value) == message


def test_json_nested_too_deeply_is_one_line_naming_the_file():
    with pytest.raises(ModelLoadError) as caught:
        load_model_bytes(b"[" * 100_000 + b"]" * 100_000, filename="deep.json")
    assert str(caught.value) == "deep.json: invalid JSON: nested too deeply"


# ------------------------------------------------------------- damaged CUDA dumps


def test_an_edge_to_a_node_never_declared_is_named():
    text = _text("chain_basic.dot")
    start = text.index('"graph_1_node_0"[')
    end = text.index('"];', start) + 3
    first = "graph_1_node_0"
    with pytest.raises(DotParseError) as caught:
        parse_dot(text[:start] + text[end:], filename="cut.dot")
    assert str(caught.value).startswith("cut.dot: edge ")
    assert str(caught.value).endswith(f"names a node never declared: {first!r}")


def test_a_long_node_name_is_cut_to_sixty_characters_in_messages():
    text = _text("chain_basic.dot")
    first = "graph_1_node_0"
    edge = text.index(f'"{first}" ->')
    long_name = "graph_0_node_" + "7" * 60
    damaged = text[:edge] + f'"{first}" -> "{long_name}";\n' + text[edge:]
    with pytest.raises(DotParseError) as caught:
        parse_dot(damaged, filename="long.dot")
    brief = repr(long_name[:57] + "...")
    assert str(caught.value) == (
        f"long.dot: edge {first!r} -> {brief} names a node never declared: {brief}"
    )


@pytest.mark.parametrize("length, brief", [(59, "a" * 59), (60, "a" * 60), (61, "a" * 57 + "...")])
def test_brief_keeps_sixty_characters(length, brief):
    assert scan._brief("a" * length) == repr(brief)


def test_an_edge_between_two_clusters_names_the_line_of_its_source():
    text = _text("kinds_basic.dot")
    damaged = text.replace(
        '"graph_9_node_4" -> "graph_9_node_5";',
        '"graph_9_node_4" -> "graph_9_node_5";\n"graph_9_node_5" -> "graph_10_node_0";',
    )
    line = _line_of(damaged, '"graph_9_node_5"[')
    with pytest.raises(DotParseError) as caught:
        parse_dot(damaged, filename="k.dot")
    assert str(caught.value) == (
        f"k.dot:{line}: edge 'graph_9_node_5' -> 'graph_10_node_0' joins two graphs "
        "(not what CUDA writes)"
    )


def test_a_record_label_cut_short_names_the_node_and_its_line():
    text = _text("conditional_verbose.dot")
    damaged = text.replace("| {True|graph_12}\n}", "| {True|graph_12\n}")
    line = _line_of(damaged, '"graph_11_node_1"[')
    with pytest.raises(DotParseError) as caught:
        parse_dot(damaged, filename="c.dot")
    assert str(caught.value) == (
        f"c.dot:{line}: node 'graph_11_node_1': unclosed '{{' in record label (file damaged?)"
    )


def test_document_line_of_a_node_and_of_an_unknown_one():
    document = scan._scan('digraph G {\n a [label="a"];\n\n b [label="x"];\n}', "d.dot")
    assert [document.line_of("a"), document.line_of("b"), document.line_of("zz")] == [2, 4, 1]


# ------------------------------------------------------- read_graph: path or stdin


def _stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_read_graph_from_stdin_gzipped_or_not(monkeypatch):
    raw = recorded("chain_basic.dot").read_bytes()
    expected = [(n.id, n.kind, n.name) for n in load_model(recorded("chain_basic.dot")).nodes]
    for data in (raw, gzip.compress(raw)):
        _stdin(monkeypatch, data)
        loaded = read_graph(STDIN)
        assert (loaded.name, loaded.saved_model, loaded.undirected) == ("<stdin>", False, False)
        assert [(n.id, n.kind, n.name) for n in loaded.model.nodes] == expected


def test_read_graph_names_damaged_gzip_on_stdin(monkeypatch):
    _stdin(monkeypatch, gzip.compress(b"digraph G { a; }")[:-6])
    with pytest.raises(DotParseError) as caught:
        read_graph(STDIN)
    assert str(caught.value).startswith("<stdin>: damaged gzip data (")


def test_read_graph_errors_on_stdin_name_stdin(monkeypatch):
    _stdin(monkeypatch, b"hello\n")
    with pytest.raises(DotParseError) as caught:
        read_graph(STDIN)
    assert str(caught.value) == "<stdin>:1: not a DOT graph (expected 'digraph ...')"


@pytest.mark.parametrize(
    "data, saved_model, undirected",
    [
        (b"\xef\xbb\xbf\n  " + MODEL_JSON, True, False),  # BOM, then space, then the object
        (b"graph G { a -- b }", False, True),
        (b"/* c */ strict graph G { a -- b }", False, True),
        (b"digraph G { a -> b }", False, False),
    ],
)
def test_read_graph_says_what_the_file_was(tmp_path, monkeypatch, data, saved_model, undirected):
    path = tmp_path / "g.in"
    path.write_bytes(data)
    loaded = read_graph(str(path))
    assert (loaded.name, loaded.saved_model, loaded.undirected) == (str(path), saved_model, undirected)
    _stdin(monkeypatch, data)
    piped = read_graph(STDIN)
    assert (piped.name, piped.saved_model, piped.undirected) == ("<stdin>", saved_model, undirected)


def test_read_graph_of_a_gzipped_file_looks_into_it(tmp_path):
    path = tmp_path / "g.dot.gz"
    path.write_bytes(gzip.compress(b"graph G { a -- b }"))
    loaded = read_graph(str(path))
    assert (loaded.saved_model, loaded.undirected) == (False, True)
    assert loaded.model.edges == [("a", "b")]


def test_read_graph_head_cut_inside_a_character_is_no_error(tmp_path):
    # The first 4096 bytes end inside a three-byte character: the head is only sniffed.
    label = "é" * 3000  # two bytes each, after an odd number of ASCII bytes
    data = ("digraph G { a [label=\"#" + label + "\"]; }").encode()
    with pytest.raises(UnicodeDecodeError):
        data[:4096].decode("utf-8")
    path = tmp_path / "wide.dot"
    path.write_bytes(data)
    loaded = read_graph(str(path))
    assert loaded.model.node("a").name == "#" + label


# ------------------------------------------------------------ clusters and kernels


def test_two_unrelated_graphs_in_one_dump_are_kept_side_by_side():
    chain, memops = _text("chain_basic.dot"), _text("memops_basic.dot")
    both = chain[: chain.rindex("}")] + memops[memops.index("subgraph") : memops.rindex("}")] + "}\n"
    model = parse_dot(both, filename="both.dot")
    first, second = load_model(recorded("chain_basic.dot")), load_model(recorded("memops_basic.dot"))
    assert model.source == "dot-basic"
    assert [n.id for n in model.nodes] == [n.id for n in first.nodes + second.nodes]
    assert model.edges == first.edges + second.edges


def test_a_node_statement_without_label_or_shape():
    text = _text("chain_basic.dot")
    no_label = text.replace(' label="0\ncupy_add__float32_float_float32\n"', "", 1)
    node = parse_dot(no_label).node("graph_1_node_0")
    assert (node.kind, node.name, node.params) == ("unknown", None, {})
    no_shape = text.replace('shape="octagon" label="0', 'label="0', 1)
    node = parse_dot(no_shape).node("graph_1_node_0")
    # Without the octagon the kernel's name is just a word CUDA did not explain.
    assert (node.kind, node.name) == ("unknown", None)
    assert node.params == {"cuda_type": "cupy_add__float32_float_float32"}


def test_mangled_kernel_names_are_demangled_once_parsed():
    model = load_model(recorded("torch_mlp.dot"))
    softmax = model.node("graph_13_node_3")
    assert softmax.params["demangled"] == (
        "void (anonymous namespace)::softmax_warp_forward<float, float, float, 5, false, false>"
        "(float*, float const*, int, int, int, bool const*, int, bool)"
    )
    assert all(n.params["demangled"].startswith("void ") for n in model.nodes)
    raw = parse_dot(_text("torch_mlp.dot"), demangle=False)
    assert all("demangled" not in n.params for n in raw.nodes)


def test_only_kernels_are_demangled():
    # A generic node may be named like a mangled symbol; it is not a kernel.
    assert parse_dot('digraph { "_Z1fv" }').nodes[0].params == {}


# --------------------------------------------------------------------- file errors


def test_a_path_through_a_file_cannot_be_read(tmp_path):
    plain = tmp_path / "plain.dot"
    plain.write_text("digraph G { a; }")
    with pytest.raises(ModelLoadError) as caught:
        load_model(plain / "inner.dot")
    assert str(caught.value) == f"{plain / 'inner.dot'}: cannot read: Not a directory"


def test_a_file_that_is_not_utf8_is_named_with_its_line(tmp_path):
    path = tmp_path / "latin.dot"
    path.write_bytes(b'digraph G {\n a [label="caf\xe9"];\n}\n')
    with pytest.raises(DotParseError) as caught:
        load_model(path)
    assert str(caught.value) == f"{path}:2: not UTF-8 text (byte 0xe9); not a DOT or JSON graph"


def _parse(text: str):
    return parse_dot(text, filename="b.dot")


def _scan_only(text: str):
    # Generic DOT that parse_dot gives to pydot: the scanner's own message, as for a CUDA dump.
    return scan._scan(text, "b.dot")


@pytest.mark.parametrize(
    "read, text, message",
    [
        (_parse, "digraph G {\n a;\n}\n}\n", "b.dot:4: unbalanced '}'"),
        (_parse, "digraph G { }\n\ndigraph H { }", "b.dot:3: more than one graph in the file"),
        (_scan_only, "digraph {\n digraph { }\n}", "b.dot:2: a graph inside a graph"),
        (_scan_only, "a -> b\ndigraph { }", "b.dot:1: edge outside a graph"),
        # Three quote characters before the junk (one escaped): only quotes after it can
        # mean that the file was cut inside a string.
        (_scan_only, 'digraph { a [label="say \\"hi"]; @ }',
         "b.dot:1: unexpected text '@ }' (not the DOT that CUDA writes)"),
    ],
)
def test_a_statement_out_of_place_is_named_by_its_own_line(read, text, message):
    # Not by the line where the whitespace before it starts (the end of the statement before).
    with pytest.raises(DotParseError) as caught:
        read(text)
    assert str(caught.value) == message


# ------------------------------------------------------------ DOT beyond the scanner


def test_an_escaped_quote_in_a_label_reads_the_same_on_both_generic_paths():
    # The port sends the second text to pydot; the label must not change with it.
    node = 'digraph G { "x \\"q\\"" [label="Quoted \\"L\\""]; a -> b'
    scanned, through_pydot = parse_dot(node + " }"), parse_dot(node + " -> c:p }")
    for model in (scanned, through_pydot):
        assert (model.nodes[0].id, model.nodes[0].name) == ('x "q"', 'Quoted "L"')
        assert model.nodes[0].params == {"label": 'Quoted "L"'}


def _no_pydot(monkeypatch):
    from accelgraph_cli.dot import generic

    def fail(_text):
        raise AssertionError("read by pydot")

    monkeypatch.setattr(generic, "_pydot_graphs", fail)


def test_edge_chains_are_read_by_the_scanner_not_pydot(monkeypatch):
    # pydot took 9.5 s for a 10,000-node file of "a -> b -> c;" lines (pyparsing: about 1 ms
    # a node); the scanner reads them as it reads single edges.
    _no_pydot(monkeypatch)
    model = parse_dot('digraph { a -> "b c" -> 15 -> d [color=red]; e -> f\n -> e; g -> h }')
    assert [n.id for n in model.nodes] == ["a", "b c", "15", "d", "e", "f", "g", "h"]
    assert model.edges == [("a", "b c"), ("b c", "15"), ("15", "d"), ("e", "f"), ("f", "e"), ("g", "h")]


@pytest.mark.parametrize(
    "text", ["digraph { a -> b; -> c }", "digraph { a -> b [x=1] -> c }", "digraph { -> c }"]
)
def test_an_arrow_that_continues_no_edge_is_an_error(text):
    # Graphviz refuses these too (attributes go after the whole chain).
    with pytest.raises(DotParseError, match="x.dot:1: "):
        parse_dot(text, filename="x.dot")


@pytest.mark.parametrize(
    "text, nodes, edges",
    [
        ("digraph { {a -> b} -> c }", "abc", ["ab", "ac", "bc"]),
        ("digraph { subgraph s { a -> b } -> c }", "abc", ["ab", "ac", "bc"]),
        ("digraph { x -> { a -> b } }", "xab", ["ab", "xa", "xb"]),
        ("digraph { {a b} -> {c d} }", "abcd", ["ac", "ad", "bc", "bd"]),
        # nested, and one subgraph at the middle of a chain: its inner edge once
        ("digraph { x -> subgraph s { a; subgraph t { q -> r } } -> y }", "xaqry",
         ["qr", "xa", "xq", "xr", "ay", "qy", "ry"]),
        ("digraph { x -> { node [shape=box]; a } }", "xa", ["xa"]),
    ],
)
def test_an_edge_to_or_from_a_subgraph_joins_every_node_of_it(text, nodes, edges):
    # As Graphviz reads it (dot -Tplain); these once gave an empty graph, silently.
    model = parse_dot(text)
    assert [n.id for n in model.nodes] == list(nodes)
    assert model.edges == [tuple(e) for e in edges]


@pytest.mark.parametrize(
    "text, edges",
    [
        ("strict digraph { a -> b -> c; b -> c; }", [("a", "b"), ("b", "c")]),  # scanner
        ("strict digraph { a -> b; b -> a; a -> b }", [("a", "b"), ("b", "a")]),
        ("STRICT digraph { a:p -> b; a -> b; }", [("a", "b")]),  # pydot
        ("strict graph { a -- b; b -- a; a -- a; a -- a }", [("a", "b"), ("a", "a")]),
        # a name is no keyword: an undirected graph named mydigraph stays undirected
        ("strict graph mydigraph { a -- b; b -- a }", [("a", "b")]),
        ("strict digraph{ a -> b; b -> a; a -> b }", [("a", "b"), ("b", "a")]),
        ("digraph { a -> b; a -> b }", [("a", "b"), ("a", "b")]),  # not strict: both kept
        ("digraph { a:p -> b; a -> b }", [("a", "b"), ("a", "b")]),
    ],
)
def test_a_strict_graph_has_each_edge_once(text, edges):
    assert parse_dot(text).edges == edges


def test_a_quoted_name_with_a_port_is_the_same_node_without_it():
    # '"a b":p' once became a node of its own, named with its quotes.
    model = parse_dot('digraph { "a b":p -> c; "a b" -> c:q:n; "x:y":p -> "x:y" }')
    assert [n.id for n in model.nodes] == ["a b", "c", "x:y"]
    assert model.edges == [("a b", "c"), ("a b", "c"), ("x:y", "x:y")]


def test_pydot_reads_ports_subgraph_edges_quoted_names_and_defaults():
    model = parse_dot(
        'digraph G { "x \\"q\\"" [label="X"]; a:p1 -> "x \\"q\\""; b -> {c d}; node [shape=box]; '
        'e [label=plain]; f -> f; g [label=""]; edge [color=red]; graph [rankdir=LR]; }',
        filename="p.dot",
    )
    assert model.source == "dot-generic"
    assert [(n.id, n.name, n.params) for n in model.nodes] == [
        ('x "q"', "X", {"label": "X"}),
        ("e", "plain", {"label": "plain"}),
        ("g", "g", {}),
        ("a", "a", {}),
        ("b", "b", {}),
        ("c", "c", {}),
        ("d", "d", {}),
        ("f", "f", {}),
    ]
    assert model.edges == [("a", 'x "q"'), ("b", "c"), ("b", "d"), ("f", "f")]


@pytest.mark.parametrize(
    "text, line",
    [("digraph G { a -> }", 1), ("digraph G {\n a -> b;\n c -> ;\n}", 3), ("graph { a -- }", 1)],
)
def test_pydot_errors_name_the_line_and_drop_pyparsing_positions(text, line):
    with pytest.raises(DotParseError) as caught:
        parse_dot(text, filename="x.dot")
    message = str(caught.value)
    prefix = f"x.dot:{line}: not valid DOT: "
    assert message.startswith(prefix) and len(message) > len(prefix)
    assert "(at char" not in message and "(line:" not in message and "\n" not in message


@pytest.mark.parametrize("text, line, found", [
    ("digraph { a -> b }\n c -> d; e -> f;\n", 2, "c"),
    ("digraph { a -> b } junk junk", 1, "junk"),
    ("digraph { a -> b } digraph", 1, "digraph"),
    ("digraph { a:p -> b }\n}\n", 2, "}"),
])
def test_text_after_the_graph_is_refused_not_dropped(text, line, found):
    # pydot's own reader stopped at the graph's "}" and dropped the rest without a word
    # (the first file was a graph of two nodes); Graphviz refuses such a file.
    with pytest.raises(DotParseError) as caught:
        parse_dot(text, filename="x.dot")
    assert str(caught.value) == f"x.dot:{line}: not valid DOT: Expected end of text, found {found!r}"


@pytest.mark.parametrize("text", ["digraph { a:p -> b };\n", "digraph { a:p -> b }\n// the end\n",
                                  "digraph { a:p -> b } /* the end */  \n\n",
                                  "digraph { a:p -> b } ; ;\n", "digraph { a:p -> b };;"])
def test_a_semicolon_or_comment_after_the_graph_is_still_read(text):
    assert parse_dot(text, filename="x.dot").edges == [("a", "b")]


def test_pydot_reason_is_cut_at_160_characters(monkeypatch):
    from accelgraph_cli.dot import generic

    def fail(_text):
        raise ValueError("r" * 200 + "\nsecond line")

    monkeypatch.setattr(generic, "_pydot_graphs", fail)
    with pytest.raises(DotParseError) as caught:
        parse_dot("digraph G { a:p -> b }", filename="x.dot")
    assert str(caught.value) == "x.dot: not valid DOT: " + "r" * 160


def test_pydot_without_a_reason_names_the_exception_type(monkeypatch):
    from accelgraph_cli.dot import generic

    def fail(_text):
        raise KeyError()

    monkeypatch.setattr(generic, "_pydot_graphs", fail)
    with pytest.raises(DotParseError) as caught:
        parse_dot("digraph G { a:p -> b }", filename="x.dot")
    assert str(caught.value) == "x.dot: not valid DOT: KeyError"


def test_pydot_finding_no_graph_says_so(monkeypatch):
    from accelgraph_cli.dot import generic

    monkeypatch.setattr(generic, "_pydot_graphs", lambda _text: [])
    with pytest.raises(DotParseError) as caught:
        parse_dot("digraph G { a:p -> b }", filename="x.dot")
    assert str(caught.value) == "x.dot: not valid DOT: no graph found"


# ------------------------------------------------------------------ scanner details


def test_bare_keywords_and_repeated_bare_ids_add_no_nodes():
    model = parse_dot('digraph G { graph; node; edge; a; a [label="x"]; a; b }')
    assert [(n.id, n.name, n.params) for n in model.nodes] == [("a", "x", {"label": "x"}), ("b", "b", {})]


def test_nodes_declared_in_a_cluster_with_plain_names_are_generic():
    model = parse_dot("digraph dot { subgraph cluster_0 { a; b; a -> b; } }")
    assert model.source == "dot-generic"
    assert [n.id for n in model.nodes] == ["a", "b"]


def test_text_after_the_graph_is_named_by_the_scanner():
    with pytest.raises(DotParseError) as caught:
        scan._scan("digraph G { }\nzz", "f.dot")
    assert str(caught.value) == "f.dot:2: unexpected text 'zz' (not a DOT graph)"


def test_junk_inside_a_recorded_dump_is_quoted_up_to_the_line_end():
    text = _text("chain_basic.dot")
    at = text.index('"graph_1_node_1"[')
    damaged = text[:at] + "@@ junk that CUDA never writes, and more than forty characters\n" + text[at:]
    with pytest.raises(DotParseError) as caught:
        parse_dot(damaged, filename="j.dot")
    line = _line_of(damaged, "@@ junk")
    quoted = "@@ junk that CUDA never writes, and more"  # the first 40 characters
    assert str(caught.value) == f"j.dot:{line}: unexpected text {quoted!r} (not the DOT that CUDA writes)"
    short = text[:at] + "@@\n" + text[at:]
    with pytest.raises(DotParseError) as caught:
        parse_dot(short, filename="j.dot")
    assert str(caught.value) == f"j.dot:{line}: unexpected text '@@' (not the DOT that CUDA writes)"


def test_a_recorded_dump_cut_inside_a_label_is_an_unterminated_string():
    text = _text("chain_basic.dot")
    cut = text.index("cupy_multiply")
    with pytest.raises(DotParseError) as caught:
        parse_dot(text[:cut], filename="t.dot")
    line = _line_of(text, '"graph_1_node_1"[')
    assert str(caught.value) == f"t.dot:{line}: unterminated string (file truncated?)"


@pytest.mark.parametrize("after, rest", [
    ('"graph_35_node_6" -> ', "-> "),  # cut after an edge's arrow
    ('"graph_35_node_0"[style=', "[style="),  # cut inside a node's attribute list
])
def test_a_recorded_dump_cut_mid_statement_says_truncated(after, rest):
    text = _text("scenario_fork_join_verbose.dot")
    cut = text.index(after) + len(after)
    with pytest.raises(DotParseError) as caught:
        parse_dot(text[:cut], filename="t.dot")
    line = _line_of(text, after)
    assert str(caught.value) == (
        f"t.dot:{line}: the file ends inside a statement, after {rest!r} (file truncated?)"
    )


def test_dot_parse_errors_are_one_line():
    assert str(DotParseError("a\r\nb\nc")) == "a\\r\\nb\\nc"


def test_bytes_without_a_name_are_called_bytes():
    with pytest.raises(DotParseError) as caught:
        load_model_bytes(b"")
    assert str(caught.value) == "<bytes>: empty file, not a DOT or JSON graph"


def test_parse_dot_messages_name_the_text_and_what_was_wrong():
    with pytest.raises(DotParseError) as caught:
        parse_dot(b"digraph {}")  # type: ignore[arg-type]
    assert str(caught.value) == "<string>: expected text, got bytes"
    with pytest.raises(DotParseError) as caught:
        parse_dot("digraph G { a }\x00", filename="n.dot")
    assert str(caught.value) == "n.dot: binary content (NUL bytes), not a DOT graph"
    with pytest.raises(DotParseError) as caught:
        parse_dot("\n\n  hello", filename="n.dot")
    assert str(caught.value) == "n.dot:3: not a DOT graph (expected 'digraph ...')"


def test_a_byte_order_mark_and_blank_lines_before_the_graph_are_skipped():
    model = parse_dot("\ufeff\n \t\r\ndigraph G { a -> b }")
    assert model.edges == [("a", "b")]


def test_verbose_line_labels_keep_their_topo_ids():
    # EVENT_*, EMPTY and child-graph nodes keep the line form in verbose dumps.
    model = load_model(recorded("kinds_verbose.dot"))
    assert [(n.id, n.kind, n.topo_id) for g in model.walk() for n in g.nodes] == [
        ("graph_9_node_0", "kernel", 5),
        ("graph_9_node_1", "event_record", 4),
        ("graph_9_node_2", "event_wait", 3),
        ("graph_9_node_3", "kernel", 2),
        ("graph_9_node_4", "empty", 1),
        ("graph_9_node_5", "graph", 0),
        ("graph_10_node_0", "kernel", 1),
        ("graph_10_node_1", "kernel", 0),
    ]


def test_a_damaged_gzip_file_is_named(tmp_path):
    path = tmp_path / "cut.dot.gz"
    path.write_bytes(recorded("chain10k_basic.dot.gz").read_bytes()[:5000])
    with pytest.raises(DotParseError) as caught:
        load_model(path)
    assert str(caught.value).startswith(f"{path}: damaged gzip file (")


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_file_whose_first_lines_are_no_graph_is_refused_before_the_rest_is_read(tmp_path,
                                                                                gzipped):
    # Junk at line 1, then what reading the whole file would trip over first (bytes that
    # are not UTF-8; a gzip stream cut short): the refusal comes from the first lines, so
    # the rest (2 GB of junk in a 9 MB gzip, say) is never read or gunzipped.
    junk = b"\n  aaaa aaaa\n" * 20000
    path = tmp_path / ("junk.dot.gz" if gzipped else "junk.dot")
    if gzipped:
        whole = gzip.compress(junk + bytes(range(256)) * 4000, compresslevel=1)
        path.write_bytes(whole[:len(whole) // 2])  # a damaged gzip, past the first lines
    else:
        path.write_bytes(junk + b"\xff\xfe")
    with pytest.raises(DotParseError) as caught:
        load_model(path)
    assert str(caught.value) == f"{path}:2: not a DOT graph (expected 'digraph ...')"


@pytest.mark.parametrize("text", [
    b"\n" * 70000 + b"digraph g { a -> b }\n",  # the first word past the first 64 KB
    b"strict\n" + b"\n" * 70000 + b"digraph g { a -> b }\n",  # its second word past them
    b"\xef\xbb\xbf  digraph g { a -> b }\n" + b"// x\n" * 20000,
    # a comment first (parse_dot takes it), the graph longer than the first 64 KB
    b"// made by hand\r\ndigraph g {\r\n a -> b\r\n" + b" a -> b;\r\n" * 12000 + b"}\r\n",
    b"/* made\n by hand */ digraph g {\n a -> b\n" + b" a -> b;\n" * 12000 + b"}\n",
    b"# made by hand\ndigraph g {\n a -> b\n" + b" a -> b;\n" * 12000 + b"}\n",
])
def test_a_graph_whose_first_lines_do_not_settle_it_is_read_whole(tmp_path, text):
    path = tmp_path / "g.dot"
    path.write_bytes(text)
    assert sorted(node.id for node in load_model(path).nodes) == ["a", "b"]


def test_decode_text_names_bytes_and_counts_lines_from_the_first():
    with pytest.raises(DotParseError) as caught:
        decode_text(b"digraph G {\x00}")
    assert str(caught.value) == "<bytes>: binary file (NUL bytes), not a DOT or JSON graph"
    with pytest.raises(DotParseError) as caught:
        decode_text(b"\n\xff", "x.dot")
    assert str(caught.value) == "x.dot:2: not UTF-8 text (byte 0xff); not a DOT or JSON graph"


# ------------------------------------------------------------ verbose memory nodes


def _stable(params: dict) -> dict:
    return {k: v for k, v in params.items() if not k.startswith(("ptr_", "handle_"))}


def test_verbose_memcpy_and_memset_fields_and_derived_size():
    nodes = {n.id: n for n in load_model(recorded("memops_verbose.dot")).nodes}
    copy = _stable(nodes["graph_6_node_2"].params)
    assert {k: copy[k] for k in ("extent_width", "extent_height", "extent_depth")} == {
        "extent_width": 262144, "extent_height": 1, "extent_depth": 1,
    }
    assert copy["direction"] == "HtoD" and copy["memory_types"] == "HOST PINNED to DEVICE"
    assert copy["bytes"] == 262144
    assert type(copy["bytes"]) is int
    assert "kind" not in copy
    assert _stable(nodes["graph_6_node_0"].params) == {
        "pitch": 0, "value": 0, "element_size": 1, "width": 262144, "height": 1, "bytes": 262144,
    }
    assert type(nodes["graph_6_node_0"].params["bytes"]) is int


def test_verbose_mem_alloc_size_becomes_bytes():
    nodes = {n.id: n for n in load_model(recorded("asyncalloc_verbose.dot")).nodes}
    # handleTypes is a setting of the pool, not a handle: kept (and compared by diff)
    assert _stable(nodes["graph_7_node_0"].params) == {
        "pool_props_alloc_type": "PINNED", "pool_props_handle_types": "NONE",
        "pool_props_location_type": "DEVICE", "pool_props_location_id": 0,
        "bytesize": 4194304, "bytes": 4194304,
    }
    assert (nodes["graph_7_node_5"].params["direction"], nodes["graph_7_node_5"].params["memory_types"]) == (
        "default", "DEVICE to DEVICE",
    )


@pytest.mark.parametrize(
    "kind, params, normalised",
    [
        ("memcpy", {"kind": "PtoP (A to B)"}, {"direction": "PtoP", "memory_types": "A to B"}),
        ("memcpy", {"kind": "DtoH"}, {"direction": "DtoH"}),
        ("memcpy", {"kind": "DtoD ()", "bytes": 8}, {"bytes": 8, "direction": "DtoD"}),
        ("memcpy", {"extent_width": 4, "extent_height": 2}, {"extent_width": 4, "extent_height": 2}),
        ("memset", {"element_size": 4, "width": 8, "height": 2}, {"element_size": 4, "width": 8, "height": 2,
                                                                "bytes": 64}),
        ("mem_alloc", {"byte_size": 16}, {"byte_size": 16, "bytes": 16}),
        ("mem_alloc", {"size": 32, "bytes_size": 8}, {"size": 32, "bytes_size": 8, "bytes": 32}),
        ("mem_alloc", {"bytes_size": 8}, {"bytes_size": 8, "bytes": 8}),
        ("mem_alloc", {"bytes": 1, "size": 32}, {"bytes": 1, "size": 32}),
        ("mem_alloc", {"size": "big"}, {"size": "big"}),
        ("kernel", {"size": 32}, {"size": 32}),
    ],
)
def test_normalise_derives_direction_and_bytes(kind, params, normalised):
    labels._normalise(kind, params)
    assert params == normalised


@pytest.mark.parametrize("text", ["digraph G { a -> subgraph }", "digraph G { node -> b }"])
def test_an_edge_to_a_keyword_is_refused_by_the_scanner(text):
    with pytest.raises(DotParseError) as caught:
        scan._scan(text, "f.dot")
    assert str(caught.value) == "f.dot:1: edge to a subgraph (not the DOT that CUDA writes)"


def test_a_named_subgraph_that_is_no_cluster_adds_no_graph():
    assert parse_dot("digraph dot { subgraph x { } }").source == "dot-generic"
    assert parse_dot("digraph dot { subgraph cluster_x { } }").source == "dot-basic"


@pytest.mark.parametrize("comment", ["/* a note */", "// a note", "# a note"])
def test_a_recorded_dump_with_a_comment_line_parses_as_without(comment):
    # CUDA writes no comments, but a dump edited by hand may carry one; it is dropped (and the
    # lines still count) before the dump is read as CUDA's, not left to the generic reader.
    text = _text("chain_basic.dot")
    at = text.index('"graph_1_node_1"[')
    model = parse_dot(text[:at] + comment + "\n" + text[at:])
    plain = parse_dot(text)
    assert model.source == "dot-basic"
    assert [(n.id, n.kind, n.name) for n in model.nodes] == [(n.id, n.kind, n.name) for n in plain.nodes]
    assert model.edges == plain.edges


def test_an_unknown_node_is_on_line_one_even_after_a_blank_first_line():
    text = "\n" + _text("chain_basic.dot")
    document = scan._scan(text, "c.dot")
    assert [document.line_of("zz"), document.line_of("graph_1_node_0")] == [
        1, text.count("\n", 0, text.index('"graph_1_node_0"[')) + 1]


def test_default_attribute_statements_add_no_node():
    document = scan._scan("digraph { edge [color=red]; node [shape=box]; graph [rankdir=LR]; a; }", "x.dot")
    assert document.node_attrs == {"a": ""}


def test_anonymous_subgraphs_are_invisible_scopes():
    document = scan._scan("digraph G { subgraph { a; b [shape=box]; } subgraph { c } a -> c }", "x.dot")
    assert list(document.clusters) == [""]
    assert (document.clusters[""].node_ids, document.clusters[""].edges) == (["a", "b", "c"], [("a", "c")])
    assert document.node_cluster == {"a": "", "b": "", "c": ""}


def _fifo_with(tmp_path, data: bytes):
    """A FIFO that a thread fills with ``data`` (as `show <(cat dump)` or a named pipe gives)."""
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def write():
        with open(fifo, "wb") as handle:
            handle.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return fifo, writer


@pytest.mark.parametrize("gzipped", [False, True])
@pytest.mark.parametrize("reader", ["load_model", "read_graph"])
def test_a_pipe_reads_like_a_file_gzipped_or_not(tmp_path, gzipped, reader):
    # Seeking back after the sniff failed on a pipe: "cannot read: File or stream is not
    # seekable."; read_graph also opened the file a second time for its head.
    raw = recorded("chain1k_verbose.dot").read_bytes()
    expected = [(n.id, n.kind, n.name) for n in load_model(recorded("chain1k_verbose.dot")).nodes]
    fifo, writer = _fifo_with(tmp_path, gzip.compress(raw) if gzipped else raw)
    model = load_model(fifo) if reader == "load_model" else read_graph(str(fifo)).model
    writer.join(5)
    assert [(n.id, n.kind, n.name) for n in model.nodes] == expected


def test_a_damaged_gzip_pipe_and_a_binary_pipe_are_named(tmp_path):
    fifo, writer = _fifo_with(tmp_path, gzip.compress(b"digraph G { a; }")[:-6])
    with pytest.raises(DotParseError, match=r"pipe: damaged gzip file \("):
        load_model(fifo)
    writer.join(5)
    fifo.unlink()
    fifo, writer = _fifo_with(tmp_path, b"digraph G {\x00}")
    with pytest.raises(DotParseError, match=r"pipe: binary file \(NUL bytes\)"):
        load_model(fifo)
    writer.join(5)


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_stream_is_read_from_where_it_stands(tmp_path, gzipped):
    # Standard input redirected from a file a script has already read a line of
    # (`exec 3<f; read -r line <&3; accelgraph show - <&3`) is seekable: going back to its
    # very start read the line again ("not a DOT graph").
    from accelgraph_cli.dot.load import read_stream_bytes

    raw = recorded("chain_basic.dot").read_bytes()
    body = gzip.compress(raw) if gzipped else raw
    path = tmp_path / "with_header"
    path.write_bytes(b"a header line a script reads first\n" + body)
    with open(path, "rb") as handle:
        handle.readline()
        assert read_stream_bytes(handle, "<stdin>") == raw


class _EndlessPipe:
    """A pipe whose writer is always ahead: every read of a size returns that much at once."""

    def __init__(self):
        self.block = b"digraph {\n" + b"a -> b;\n" * (1 << 19)  # over 4 MiB
        self.reads = 0
        self.slices = {}

    def seekable(self):
        return False

    def read(self, size=-1):
        if size is None or size < 0:
            raise AssertionError("read to the end: nothing between the calls could hear Ctrl-C")
        self.reads += 1
        if size not in self.slices:  # one object a size, kept: the reader's list holds
            self.slices[size] = self.block[:size]  # references, not copies, as it grows
        return self.slices[size]


def test_ctrl_c_is_heard_while_a_pipe_that_never_runs_dry_is_read(monkeypatch):
    import _thread
    import threading

    from accelgraph_cli.dot import load

    monkeypatch.setattr(load, "memory_limit", lambda: None)
    pipe = _EndlessPipe()
    timer = threading.Timer(0.2, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            load.read_stream_bytes(pipe, "<stdin>")
    finally:
        timer.cancel()
    assert pipe.reads > 1


def test_a_pipe_outgrowing_the_memory_limit_is_refused_before_it_is_all_read(monkeypatch):
    from accelgraph_cli.dot import load

    monkeypatch.setattr(load, "memory_limit", lambda: 20 * 2**20)
    pipe = _EndlessPipe()
    with pytest.raises(ModelLoadError) as caught:
        load.read_stream_bytes(pipe, "<stdin>")
    assert str(caught.value) == (
        "<stdin>: more than 20 MiB, too large for the memory this process can use (input over a "
        "quarter of the memory it may still take is refused: reading it as a graph takes several "
        "times its size)")
    assert pipe.reads == 1 + 20 // 4  # the head (64 KiB), then 4 MiB a read until past 20 MiB


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_pipe_within_the_limit_is_read_whole(monkeypatch, gzipped):
    from accelgraph_cli.dot import load

    monkeypatch.setattr(load, "_PIPE_CHUNK", 1000)  # many chunks, the last a short one
    raw = recorded("chain1k_verbose.dot").read_bytes()  # 445 kB: the head, then chunks
    body = gzip.compress(raw) if gzipped else raw
    # the limit holds for what a gzipped pipe unzips to (about 20 times its size here)
    monkeypatch.setattr(load, "memory_limit", lambda: len(raw))
    assert load.read_stream_bytes(io.BufferedReader(_Unseekable(body)), "<stdin>") == raw
    monkeypatch.setattr(load, "memory_limit", lambda: len(raw) - 1)
    with pytest.raises(ModelLoadError, match="too large for the memory this process can use"):
        load.read_stream_bytes(io.BufferedReader(_Unseekable(body)), "<stdin>")


class _Unseekable(io.RawIOBase):
    def __init__(self, data):
        self.data = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, buffer):
        return self.data.readinto(buffer)


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_file_over_the_memory_limit_is_refused(monkeypatch, tmp_path, gzipped):
    # a plain file from its size, before it is read; a gzipped one as it unzips
    from accelgraph_cli.dot import load

    raw = recorded("chain_verbose.dot").read_bytes()
    path = tmp_path / ("big.dot.gz" if gzipped else "big.dot")
    path.write_bytes(gzip.compress(raw) if gzipped else raw)
    monkeypatch.setattr(load, "memory_limit", lambda: len(raw))
    assert load.read_file_bytes(path) == raw
    monkeypatch.setattr(load, "memory_limit", lambda: len(raw) - 1)
    with pytest.raises(ModelLoadError) as caught:
        load.read_file_bytes(path)
    assert str(caught.value).startswith(f"{path}: more than 0 MiB, too large for the memory")


def test_the_memory_limit_is_a_quarter_of_what_the_system_calls_available(monkeypatch):
    from accelgraph_cli.dot import load

    monkeypatch.setattr(load, "_CGROUP_FILES", ())
    monkeypatch.setattr(load, "_address_space_room", lambda: None)  # (a ulimit -v here)
    limit = load.memory_limit()
    with open("/proc/meminfo") as info:
        available = next(int(line.split()[1]) for line in info if line.startswith("MemAvailable:"))
    assert abs(limit - available * 1024 // 4) < 256 * 2**20  # what was free moved a little


@pytest.mark.parametrize("limit, usage, stat, room", [
    (b"max\n", b"1000\n", b"", None),  # cgroup v2 without a limit
    (b"%d\n" % 2**63, b"1000\n", b"", None),  # v1's "no limit", a huge number
    (b"8000\n", b"1000\n", None, 7000),  # no statistics file
    (b"8000\n", b"6000\n", b"anon 1000\nfile 5000\nfile_mapped 10\n", 7000),  # cache is room
    (b"8000\n", b"9000\n", b"file 0\n", -1000),  # over its limit already (ignored below)
    (b"not a number\n", b"1000\n", b"", None),
])
def test_a_memory_control_group_limits_the_room(monkeypatch, tmp_path, limit, usage, stat, room):
    # In a container MemAvailable is the host's: the control group's limit is the one that
    # kills the process, and the page cache it counts is given back when needed.
    from accelgraph_cli.dot import load

    monkeypatch.setattr(load, "_address_space_room", lambda: None)  # (a ulimit -v here)

    (tmp_path / "max").write_bytes(limit)
    (tmp_path / "current").write_bytes(usage)
    if stat is not None:
        (tmp_path / "stat").write_bytes(stat)
    monkeypatch.setattr(load, "_CGROUP_FILES", (
        (str(tmp_path / "missing"), str(tmp_path / "x"), str(tmp_path / "y"), b"file"),
        (str(tmp_path / "max"), str(tmp_path / "current"), str(tmp_path / "stat"), b"file")))
    assert load._cgroup_room() == room
    monkeypatch.setattr(load, "_meminfo_available", lambda: 40_000)
    assert load.memory_limit() == (min(room, 40_000) if room and room > 0 else 40_000) // 4
    monkeypatch.setattr(load, "_meminfo_available", lambda: None)
    assert load.memory_limit() == (room // 4 if room and room > 0 else None)


@pytest.mark.parametrize("levels", [11, 40, 3000])
def test_dot_nested_too_deeply_for_the_generic_reader_is_refused_at_once(tmp_path, levels):
    # pydot takes about twice as long per level (16 levels: over a minute) and recurses past
    # Python's limit in the thousands: refused before it is asked, with the depth
    path = tmp_path / "deep.dot"
    path.write_text("digraph G { a -> " + "{ x; " * levels + "b" + " }" * levels + "}\n")
    with pytest.raises(DotParseError) as caught:
        load_model(path)
    assert str(caught.value).startswith(f"{path}: not read: nested {levels} levels deep")


def test_dot_nested_as_deep_as_the_generic_reader_takes_is_read(tmp_path):
    path = tmp_path / "ten.dot"
    path.write_text("digraph G { a -> " + "{ x; " * 10 + "b" + " }" * 10 + ' [label="{{{"] }\n')
    model = load_model(path)  # braces inside a quoted string are no level
    assert {"a", "b", "x"} <= {node.id for node in model.nodes}


@pytest.mark.parametrize("text", [
    "digraph { a:p1:n -> b:s }\ndigraph two { x -> y }\n",  # ports: read by pydot
    "digraph { a -> { b c } }\ndigraph two { x -> y }\n",  # an edge to a subgraph: pydot
])
def test_a_second_graph_is_refused_on_the_pydot_path_too(text):
    # As on the scanner's own path: the first graph alone would be a listing that says
    # nothing of the second.
    with pytest.raises(DotParseError, match="more than one graph in the file"):
        _parse(text)


def test_plain_subgraphs_nested_deeply_put_their_statements_in_the_enclosing_cluster():
    # Plain subgraphs are invisible: what they hold belongs to the innermost cluster around
    # them, at any depth. (Correctness only: that such a file reads in linear time, 0.05 s
    # at 20,000 levels against 11.5 s before, is measured, not asserted here.)
    depth = 20_000
    text = ("digraph g {\n subgraph cluster_outer { label=\"outer\";\n"
            + "subgraph s {\n" * depth + "a -> b\n" + "}\n" * depth + "}\n c -> a\n}\n")
    document = scan._scan(text, "b.dot")
    assert document.clusters["cluster_outer"].edges == [("a", "b")]
    assert document.clusters[""].edges == [("c", "a")]
    assert document.clusters["cluster_outer"].label == "outer"


@pytest.mark.parametrize("size", ["lots", "1.5"])
def test_a_size_that_is_not_an_integer_is_kept_aside_not_summed(tmp_path, size):
    # The recorded stream-ordered allocation dump, damaged: a MEM_ALLOC's size written under
    # "bytes" and not as an integer. It was summed as an integer (internal error, exit 70), and
    # the model was written to JSON that load_model then refused. It is kept as written.
    from accelgraph_cli.dot.parse import load_model as load
    from accelgraph_cli.model.graph_model import GraphModel

    text = recorded("asyncalloc_verbose.dot").read_text()
    assert text.count("{{bytesize | dptr} | {4194304 |") >= 1
    dot = tmp_path / "damaged.dot"
    dot.write_text(text.replace("{{bytesize | dptr} | {4194304 |", f"{{{{bytes | dptr}} | {{{size} |", 1))
    model = load(dot)
    damaged = [n for n in model.nodes if "bytes_as_written" in n.params]
    assert len(damaged) == 1 and "bytes" not in damaged[0].params
    assert str(damaged[0].params["bytes_as_written"]) == size
    assert GraphModel.from_json(model.to_json()) == model
    model.bytes_allocated()  # sums the sizes that are integers


def test_an_escaped_quote_does_not_open_a_string_and_the_open_one_is_named_by_its_line():
    # Generic DOT with a port (which the CUDA reader stops at) and a label holding \": the
    # quotes were counted raw, so the file was refused as an unterminated string, and a
    # string really left open was named at the line where the reader stopped, not its own.
    good = 'digraph G {\n a:e -> b:w;\n b [label="6\\" pipe"];\n}\n'
    model = parse_dot(good, filename="r.dot")
    assert sorted(node.name for node in model.nodes) == ['6" pipe', "a"]
    with pytest.raises(DotParseError) as caught:
        parse_dot(good.replace('pipe"]', "pipe]"), filename="r.dot")
    assert str(caught.value) == "r.dot:3: unterminated string (file truncated?)"


def test_a_quote_inside_an_html_label_is_not_an_unterminated_string():
    # Generic DOT whose HTML label holds a quote: the CUDA reader pairs that quote with the
    # next one, which left the last quote of the file open, and the file was refused as an
    # unterminated string (file truncated?). It is read by the general parser instead, and
    # a string really left open after an ordinary label is still named at its line.
    dot = 'digraph g {\n  a [label=<x"y>];\n  b [label="ok"];\n  a -> b;\n}\n'
    model = parse_dot(dot, filename="h.dot")
    assert sorted(node.name for node in model.nodes) == ["ok", 'x"y']  # (an HTML label's text)
    assert [tuple(edge) for edge in model.edges] == [("a", "b")]
    with pytest.raises(DotParseError) as caught:
        parse_dot('digraph g {\n  a [label="x];\n  b -> a;\n}\n', filename="h.dot")
    assert str(caught.value) == "h.dot:2: unterminated string (file truncated?)"


@pytest.mark.parametrize("dump, before, after, key", [
    # a block of 0 threads, a grid of 2**31 blocks, a negative shared memory size
    ("chain_verbose.dot", "8,128,0", "8,0,0", "block"),
    ("chain_verbose.dot", "8,128,0", "2147483648,128,0", "grid"),
    ("chain_verbose.dot", "8,128,0", "8,128,-4", "shared_mem"),
    # a stream-ordered allocation's size written under "bytes", negative
    ("asyncalloc_verbose.dot", "{{bytesize | dptr} | {4194304 |",
     "{{bytes | dptr} | {-4194304 |", "bytes"),
])
def test_a_value_cuda_cannot_have_is_kept_aside_so_the_saved_model_reads_back(
        tmp_path, dump, before, after, key):
    # Recorded dumps, damaged by hand: the DOT reader took these integers as they were, and
    # `show -o m.json` wrote a model that the JSON reader then refused ("must be a list of
    # one to three sizes from 1 to 2**31 - 1"). They are kept aside, as a non-integer is.
    from accelgraph_cli.dot.parse import load_model as load
    from accelgraph_cli.model.graph_model import GraphModel

    text = recorded(dump).read_text()
    assert before in text
    dot = tmp_path / "damaged.dot"
    dot.write_text(text.replace(before, after, 1))
    model = load(dot)
    damaged = [n for n in model.nodes if f"{key}_as_written" in n.params]
    assert len(damaged) == 1 and key not in damaged[0].params
    assert GraphModel.from_json(model.to_json()) == model
    undamaged = load(recorded(dump))
    assert sum(key in n.params for n in undamaged.nodes) == \
        sum(key in n.params for n in model.nodes) + 1


@pytest.mark.parametrize("dump, before, after", [
    ("memops_verbose.dot", "| 0 | 0 | 1 | 262144 | 1}", "| 0 | 0 | 1 | -5 | 1}"),
    ("memops_verbose.dot", "| 0 | 0 | 1 | 262144 | 1}", "| 0 | 0 | 1 | -5 | -1}"),
])
def test_a_size_is_not_computed_from_negative_factors(tmp_path, dump, before, after):
    # A memset's size is element size x width x height: a width of -5 gave "-5 B" (and a
    # model JSON refused), and -5 x -1 a size of 5 B that looks right. The size is left out;
    # the factors stay as written.
    from accelgraph_cli.dot.parse import load_model as load
    from accelgraph_cli.model.graph_model import GraphModel

    text = recorded(dump).read_text()
    assert before in text
    dot = tmp_path / "damaged.dot"
    dot.write_text(text.replace(before, after, 1))
    memset = [n for n in load(dot).nodes if n.kind == "memset"]
    assert [n.params.get("width") for n in memset] == [-5]
    assert "bytes" not in memset[0].params and "bytes_as_written" not in memset[0].params
    assert [n.params["bytes"] for n in load(recorded(dump)).nodes if n.kind == "memset"] == [262144]
    model = load(dot)
    assert GraphModel.from_json(model.to_json()) == model


def test_a_demangled_field_that_is_not_text_is_kept_aside(tmp_path):
    # a record field "demangled" holding a number: the JSON reader refuses a demangled name
    # that is not a string, so the DOT reader keeps it aside too
    from accelgraph_cli.dot.parse import load_model as load
    from accelgraph_cli.model.graph_model import GraphModel

    text = recorded("asyncalloc_verbose.dot").read_text()
    before = "{{bytesize | dptr} | {4194304 |"
    assert before in text
    dot = tmp_path / "damaged.dot"
    dot.write_text(text.replace(before, "{{demangled | dptr} | {5 |", 1))
    model = load(dot)
    damaged = [n for n in model.nodes if "demangled_as_written" in n.params]
    assert len(damaged) == 1 and damaged[0].params["demangled_as_written"] == 5
    assert GraphModel.from_json(model.to_json()) == model


@pytest.mark.parametrize("text, keyword", [
    ("digraph G {\n {rank=same; x; y}\n x -> y;\n}\n",
     "digraph G {\n subgraph {rank=same; x; y}\n x -> y;\n}\n"),
    ('digraph G {\n subgraph cluster_a { label="A"; p -> q; { r [label="R"] } }\n {{ s -> t }}\n'
     " t -> p\n}\n",
     'digraph G {\n subgraph cluster_a { label="A"; p -> q; subgraph { r [label="R"] } }\n'
     " subgraph { subgraph { s -> t }}\n t -> p\n}\n"),
    ("digraph {" + " ".join("{" * 10 + f"a{j}" + "}" * 10 for j in range(40)) + "}",
     "digraph {" + " ".join("subgraph {" * 10 + f"a{j}" + "}" * 10 for j in range(40)) + "}"),
    # DOT's keywords in any case
    ("digraph { Subgraph s {a} {Node [shape=box]; Edge [color=red]; a -> b} GRAPH [rankdir=LR] }",
     "digraph { subgraph s {a} subgraph {node [shape=box]; edge [color=red]; a -> b} "
     "graph [rankdir=LR] }"),
])
def test_an_anonymous_subgraph_reads_as_a_subgraph_without_pydot(monkeypatch, text, keyword):
    # "{ ... }" is DOT's anonymous subgraph (as "subgraph { ... }"): it sent the whole file
    # to pydot, whose parse of the 40 ten-deep groups above took 95 s (of 960 bytes), and of
    # a 16 KB file with one {rank=same; ...} 14.5 s. The scanner reads it: the nodes, labels
    # and edges pydot reads (the scanner lists declared nodes first, as it does in a file
    # without braces), and the same model as with the keywords written out in lower case.
    from accelgraph_cli.dot import generic
    from accelgraph_cli.dot import parse as parse_module

    # (pydot's reading of the 40 deep groups takes minutes: their nodes are known)
    reference = (generic._parse_with_pydot(text, "a.dot") if text.count("{") < 50 else
                 GraphModel([Node(f"a{j}", "unknown", f"a{j}") for j in range(40)], []))

    def refuse(*args):
        raise AssertionError("read by pydot")

    monkeypatch.setattr(parse_module, "_parse_with_pydot", refuse)
    model = parse_dot(text, filename="a.dot")
    assert model.source == "dot-generic" and model.nodes
    assert sorted((n.id, n.name) for n in model.nodes) == \
        sorted((n.id, n.name) for n in reference.nodes)
    assert sorted(model.edges) == sorted(reference.edges)
    assert model == parse_dot(keyword, filename="a.dot")


def test_edges_to_an_anonymous_subgraph_are_still_read_by_pydot(monkeypatch):
    # "a -> {b c}" is an edge to each node of the group, which the scanner does not read:
    # pydot does, as before
    from accelgraph_cli.dot import parse as parse_module

    calls = []
    real = parse_module._parse_with_pydot
    monkeypatch.setattr(parse_module, "_parse_with_pydot",
                        lambda *args: calls.append(1) or real(*args))
    assert sorted(parse_dot("digraph G { a -> {b c} }", "e.dot").edges) == [("a", "b"), ("a", "c")]
    assert sorted(parse_dot("digraph G { {b c} -> a }", "e.dot").edges) == [("b", "a"), ("c", "a")]
    assert calls == [1, 1]


def test_a_label_inside_a_plain_subgraph_is_not_its_clusters():
    # CUDA names each graph of a dump by its cluster's label (graph_N): a label inside a
    # plain subgraph in it ("{label=note}" or "subgraph {label=note}") replaced the cluster's,
    # so a conditional's body graph was no longer attached to its node. Graphviz gives that
    # label to the subgraph.
    text = recorded("conditional_verbose.dot").read_text()
    model = parse_dot(text, filename="c.dot")
    assert model.nodes and any(node.child is not None for node in model.nodes)
    # after each graph's own label (a label before it is overwritten by it)
    clusters = [m.end() for m in re.finditer(r'label="graph_\d+"[^\n]*\n', text)]
    assert len(clusters) >= 2
    for opening in clusters:
        for group in ('{label="note"}', 'subgraph {label="note"}'):
            damaged = parse_dot(text[:opening] + group + text[opening:], filename="c.dot")
            assert damaged == model


# ------------------------------------------------------------ edge operators (as Graphviz)


@pytest.mark.parametrize("text, op, kind", [
    ("digraph { a -- b }", "--", "digraph"),
    ("digraph G {\n a -> b;\n c -- d\n}", "--", "digraph"),
    ("graph { a -> b }", "->", "graph"),
    ("strict graph {\n a -- b\n b -> c }", "->", "graph"),
    ("graph { a -- b; subgraph s { c -> d } }", "->", "graph"),
    ("strict graph mydigraph { a -> b; b -> a }", "->", "graph"),  # a name is no keyword
])
def test_an_edge_operator_of_the_other_kind_of_graph_is_refused(text, op, kind):
    with pytest.raises(DotParseError) as info:
        parse_dot(text, "g.dot")
    line = text[:text.index(op)].count("\n") + 1
    assert f"g.dot:{line}: not valid DOT: '{op}' in a {kind}" in str(info.value)


@pytest.mark.parametrize("text, edges", [
    ('digraph { a -> b [label="x -- y"] }', [("a", "b")]),
    ('digraph { a -> b [label="say \\"--\\" here"] }', [("a", "b")]),
    ("digraph { a -> b; /* c -- d */ }", [("a", "b")]),
    ("digraph { a -> b // c -- d\n }", [("a", "b")]),
    ("digraph {\n# c -- d\n a -> b }", [("a", "b")]),
    ("digraph {\n  a -> b;   # ---- inputs ----\n}", [("a", "b")]),
    ("digraph { a [label=<<b>c -- d</b>>]; a -> b }", [("a", "b")]),
    ("digraph { a [label=<<i><!-- -- --></i>>]; a -> b }", [("a", "b")]),
    ('graph { a -- "b -> c" }', [("a", "b -> c")]),
    ("graph { a -- b -- c }", [("a", "b"), ("b", "c")]),
])
def test_operators_inside_strings_and_comments_are_not_edges(text, edges):
    assert parse_dot(text, "g.dot").edges == edges


def _mapped() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))


def test_an_address_space_cap_bounds_the_memory_limit(monkeypatch):
    """``ulimit -v``: what may still be mapped is the cap less what is (a quarter of it the
    limit), where that is less than what the system has available; input that outgrew it
    ended in a MemoryError rather than in the message that says it is too large."""
    import resource

    from accelgraph_cli.dot import load

    room = 400 * 2**20
    cap = _mapped() + room
    monkeypatch.setattr(resource, "getrlimit",
                        lambda which: (cap, resource.RLIM_INFINITY) if which == resource.RLIMIT_AS
                        else (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    # the cap less what is mapped (which moves a little between two reads), not the cap
    assert abs(load._address_space_room() - room) < 4 * 2**20
    monkeypatch.setattr(load, "_meminfo_available", lambda: 64 * 2**30)
    monkeypatch.setattr(load, "_CGROUP_FILES", ())
    assert abs(load.memory_limit() - room // 4) < 2**20
    # a cap below what is mapped already: no bound told (not every input refused)
    cap = _mapped() // 2
    assert load._address_space_room() is None and load.memory_limit() == 16 * 2**30
    # no cap: no bound of its own
    monkeypatch.setattr(resource, "getrlimit",
                        lambda which: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert load._address_space_room() is None and load.memory_limit() == 16 * 2**30


def test_a_process_under_ulimit_v_reads_its_cap(tmp_path):
    """The cap as a shell sets it, in a child process: its limit is under a quarter of the
    cap, above nothing."""
    import resource
    import subprocess

    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    # (a host whose hard cap is lower already: that one)
    cap = 4 * 2**30 if hard == resource.RLIM_INFINITY else min(4 * 2**30, hard)

    def capped():
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))

    child = subprocess.run(
        [sys.executable, "-c", "from accelgraph_cli.dot import load; "
         "print(load._address_space_room(), load.memory_limit())"],
        capture_output=True, text=True, preexec_fn=capped, timeout=120, cwd=tmp_path,
        env=child_env())
    assert child.returncode == 0, child.stderr
    room, limit = map(int, child.stdout.split())
    assert 0 < room < cap and 0 < limit <= room // 4


@pytest.mark.parametrize("name", ["kinds_verbose.dot", "kinds_basic.dot", "conditional_verbose.dot",
                                  "memops_verbose.dot"])
def test_dot_as_graphviz_rewrites_it_reads_as_the_dump(name):
    # What Graphviz's own tools write back (dot -Tcanon, tred, gvpr) differs from CUDA's text
    # in two ways this reader missed: a cluster's label set as `graph [label="graph_1"]`
    # (read as no label: child graphs were not attached, and showed as top-level nodes), and
    # long strings continued on the next line after a backslash (refused). Both are DOT.
    from accelgraph_cli.dot.parse import parse_dot

    text = recorded(name).read_text()
    want = parse_dot(text).to_json()
    relabelled, count = re.subn(r'^label="(graph_\d+)" graph\[style="dashed"\];',
                                r'graph [label="\1", style="dashed"];', text, flags=re.M)
    assert count >= 1
    assert parse_dot(relabelled, filename=name).to_json() == want
    labels_ = re.findall(r'label="([^"]{12,})"', text)
    assert labels_
    for newline in ("\n", "\r\n"):
        continued = text
        for label in labels_:  # each long label broken in two, as Graphviz breaks them
            continued = continued.replace(f'label="{label}"',
                                          f'label="{label[:6]}\\{newline}{label[6:]}"')
        assert parse_dot(continued, filename=name).to_json() == want


@pytest.mark.parametrize("quoted, text", [
    ('"x\\\ny"', "xy"),  # a string continued on the next line: the pair goes
    ('"x\\\r\ny"', "xy"),
    ('"x\\\\\ny"', "x\\\\\ny"),  # an escaped backslash, then a line break: both kept
    ('"x\\\\\r\ny"', "x\\\\\r\ny"),
    ('"a\\"b\\\nc"', 'a"bc'),  # a quote escaped, and a continuation, in one string
    ('"a\\nb"', "a\\nb"),  # the label language's escapes are left for the label reader
])
def test_a_dot_string_is_unescaped_in_pairs(quoted, text):
    assert scan._unquote(quoted) == text
