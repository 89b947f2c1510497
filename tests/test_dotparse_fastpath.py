"""The one-pass reader of CUDA's exact layout gives what the general scanner gives.

parse_dot first tries _read_cuda_layout (statements exactly as cudaGraphDebugDotPrint writes
them, labels found with str.find); anything else goes through _scan and _build_cuda_model.
Both must produce the same model, field for field and in the same order, on every recorded
dump, and the fast reader must step aside (None) for text it does not fully understand.
"""

from __future__ import annotations

import gzip
import json
import re

import pytest
from _paths import DUMPS

from accelgraph_cli.dot import parse as dotparse

RECORDED = sorted(p for p in DUMPS.glob("*.dot*") if p.name.endswith((".dot", ".dot.gz")))


def _text(path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode("utf-8-sig")


def _general(text: str, name: str):
    return dotparse._build_cuda_model(dotparse._scan(text, name), name)


# Recorded dumps the fast reader leaves to the general path (a statement form it does not
# take, such as a node with two style attributes). Any other dump it must read itself: a
# change that made it step aside would otherwise pass unnoticed, the general path being right.
GENERAL_PATH_ONLY = {"conditional_verbose.dot", "memops_verbose.dot", "scenario_memory_ops_verbose.dot"}


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_fast_reader_gives_the_general_model(path):
    text = _text(path)
    fast = dotparse._read_cuda_layout(text)
    if path.name in GENERAL_PATH_ONLY:
        assert fast is None
        return
    assert fast is not None, f"{path.name}: the fast reader stepped aside"
    general = _general(text, path.name)
    # to_json keeps key order, nesting, sources and edge order: any difference shows.
    assert json.dumps(fast.to_json()) == json.dumps(general.to_json())


def test_fast_reader_takes_the_big_recorded_dumps():
    for name in ("chain10k_verbose.dot.gz", "forkjoin_wide_basic.dot.gz", "kinds_verbose.dot"):
        path = DUMPS / name
        if path.exists():
            model = dotparse._read_cuda_layout(_text(path))
            assert model is not None, name
            assert model.total_nodes() == dotparse._build_cuda_model(
                dotparse._scan(_text(path), name), name).total_nodes()


CHAIN = (
    'digraph dot {\nsubgraph cluster_0 {\nlabel="graph_0" graph[style="dashed"];\n'
    '"graph_0_node_0"[style="bold" shape="octagon" label="0\nk_a\n"];\n\n'
    '"graph_0_node_1"[style="bold" shape="octagon" label="1\nk_b\n"];\n\n'
    '"graph_0_node_0" -> "graph_0_node_1" [headlabel=0];\n}\n}\n'
)


def test_fast_reader_reads_a_small_basic_dump():
    model = dotparse._read_cuda_layout(CHAIN)
    assert [(n.id, n.kind, n.name) for n in model.nodes] == [
        ("graph_0_node_0", "kernel", "k_a"),
        ("graph_0_node_1", "kernel", "k_b"),
    ]
    assert model.edges == [("graph_0_node_0", "graph_0_node_1")]
    assert model.source == "dot-basic"


@pytest.mark.parametrize(
    "text",
    [
        CHAIN.replace('label="1\nk_b\n"', 'label="1\nk_\\"b\n"'),  # an escaped quote in a label
        CHAIN.replace("k_b\n", "k_b\\\n"),  # a backslash before a line break
        CHAIN.replace("}\n}\n", "}\n}\ndigraph x { }\n"),  # a second graph
        CHAIN.replace('"graph_0_node_1"[', '"graph_0_node_0"['),  # a node declared twice
        CHAIN.replace("[headlabel=0];", "[color=red];"),  # an edge attribute CUDA does not write
        CHAIN.replace("-> \"graph_0_node_1\"", "-> \"graph_0_node_7\""),  # an undeclared node
        CHAIN[: len(CHAIN) // 2],  # truncated
    ],
    ids=["escaped-quote", "backslash-newline", "two-graphs", "repeated-node", "edge-attrs",
         "undeclared", "truncated"],
)
def test_fast_reader_leaves_unusual_text_to_the_general_path(text):
    assert dotparse._read_cuda_layout(text) is None


EDGE = '"graph_0_node_0" -> "graph_0_node_1" [headlabel=0];\n'


@pytest.mark.parametrize(
    "edges",
    [
        '"graph_0_node_0" -> "graph_0_node_1" [headlabel=0] ;\n',  # a space before ";"
        '"graph_0_node_0" ->  "graph_0_node_1";\n',  # two spaces after "->"
        '"graph_0_node_0" -> "graph_0_node_1" [headlabel=x];\n',  # not a number
        '"graph_0_node_0" -> "graph_0_node_1"\n',  # no ";"
        EDGE + 'x\n',  # stray text after the edges
        EDGE + '"graph_0_node_1";\n',  # a quoted id alone
        EDGE.replace('"graph_0_node_1"', '"graph_0_node_1 "'),  # an id with a space
        EDGE.replace("0];", "\u0660];"),  # an Arabic-Indic zero
        EDGE + "\u00a0" + EDGE,  # a no-break space between two edges
    ],
    ids=["space-semicolon", "two-spaces", "label-word", "no-semicolon", "stray-text",
         "lone-id", "id-space", "unicode-digit", "unicode-space"],
)
def test_fast_reader_leaves_unusual_edges_to_the_general_path(edges):
    text = CHAIN.replace(EDGE, edges)
    assert text != CHAIN
    assert dotparse._read_cuda_layout(text) is None


@pytest.mark.parametrize("edges", [EDGE, EDGE.rstrip("\n"), EDGE.replace(" [headlabel=0]", ""),
                                   EDGE + "\n\t \n" + EDGE, EDGE.replace(";\n", ";") + EDGE])
def test_fast_reader_takes_every_spacing_of_edges_the_general_path_takes(edges):
    text = CHAIN.replace(EDGE, edges)
    fast = dotparse._read_cuda_layout(text)
    assert fast is not None
    assert fast.to_json() == _general(text, "chain").to_json()


# ------------------------------------------------- what the node readers save (observable)
# The readers and recipes only save time: a mutant that disables one still gives the right
# model (the general reader or the direct parse takes over), so the tests above cannot see it.
# What they save is visible, though: how many statements go the slow way, and how many times
# a recipe is filled from scratch.


def _slow_reads(text: str):
    """(the readers learned by each statement read without a reader, how many recipe fills)."""
    from accelgraph_cli.dot import layout, templates

    learned, fills = [], [0]
    first_node, fill = layout._Layout._first_node, templates._Recipe.fill

    def spy_first(self, m):
        result = first_node(self, m)
        learned.append(result[2])
        return result

    def spy_fill(self, tokens):
        fills[0] += 1
        return fill(self, tokens)

    layout._Layout._first_node, templates._Recipe.fill = spy_first, spy_fill
    try:
        model = dotparse._read_cuda_layout(text)
    finally:
        layout._Layout._first_node, templates._Recipe.fill = first_node, fill
    return model, learned, fills[0]


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_each_shape_of_node_statement_is_read_the_slow_way_once(path):
    # Only the first statement of each shape (header, label template, stable numbers) is
    # read without a reader; it teaches a reader that then takes every later one, and only
    # those first statements fill a recipe from scratch. In a dump with more shapes than the
    # reader list holds (_READERS; torch's dumps: train_step's verbose one has 33), a shape
    # whose reader fell out of the list is read the slow way again (in every recorded dump,
    # fewer slow reads than twice its shapes).
    from accelgraph_cli.dot import layout

    if path.name in GENERAL_PATH_ONLY:
        return
    model, learned, fills = _slow_reads(_text(path))
    assert model is not None
    assert None not in learned
    shapes = len({id(reader) for reader in learned})
    if shapes <= layout._READERS:
        assert len(learned) == shapes
    else:
        assert len(learned) < 2 * shapes
    assert fills == len(learned)


def test_a_long_chain_of_two_kernels_is_read_with_two_slow_reads(monkeypatch):
    # chain1k_verbose alternates two kernels. Each reader remembers the reader that matched
    # after it (reader.next), so the list of readers is searched only until the order is
    # known: at the second node (the first reader does not take it) and the third (the
    # second reader's successor is not known yet), then once before the edges and once
    # before the cluster's closing brace, which no reader takes.
    from accelgraph_cli.dot import layout

    searches = []
    search = layout._Layout._match_reader
    monkeypatch.setattr(layout._Layout, "_match_reader",
                        lambda self, pos: searches.append(pos) or search(self, pos))
    text = _text(DUMPS / "chain1k_verbose.dot")
    model, learned, fills = _slow_reads(text)
    assert model.total_nodes() == 1000
    assert [reader.kind for reader in learned] == ["kernel", "kernel"]
    assert fills == 2
    # where the statements of the second and third node start: after the one before
    statements = [text.rindex('"];', 0, text.index(f'"graph_2_node_{i}"[')) + 3 for i in (1, 2)]
    assert searches[:2] == statements
    assert len(searches) == 4


def test_an_address_read_by_one_reader_is_one_string_for_every_node():
    # chain1k_verbose alternates two kernels; each node names its kernel's function handle.
    # The first node of each kernel is read the slow way (one string), the other 499 by that
    # kernel's reader, which keeps the string it read last for an equal address.
    model = dotparse._read_cuda_layout(_text(DUMPS / "chain1k_verbose.dot"))
    kernels = [n for n in model.nodes if n.kind == "kernel"]
    handles = {}
    for node in kernels:
        handles.setdefault(node.params["handle_func"], set()).add(id(node.params["handle_func"]))
    assert len(handles) == 2
    assert [len(ids) for ids in handles.values()] == [2, 2]


def test_edge_ends_refuse_text_before_the_first_edge_or_a_cut_last_edge():
    from accelgraph_cli.dot.layout import _edge_ends

    text = _text(DUMPS / "chain_basic.dot")
    start = text.index('"graph_1_node_0" ->')
    block = text[start:text.index("}", start)]
    sources, targets = _edge_ends(block)
    assert (sources[0], targets[0]) == ("graph_1_node_0", "graph_1_node_1")
    assert len(sources) == len(targets) == block.count("->")
    # Edited: a word before the first edge; the run cut inside the next edge's source.
    assert _edge_ends("x" + block) is None
    cut = block.index('"graph_1_node_1" ->') + 5
    assert _edge_ends(block[:cut]) is None


def test_a_node_declared_in_two_clusters_goes_to_the_general_path():
    # conditional_basic.dot edited: the body graph's node takes the id of a node of the
    # parent cluster. The fast reader must step aside for the general path, which reads it
    # as one node with two statements.
    path = DUMPS / "conditional_basic.dot"
    text = _text(path).replace('"graph_12_node_0"[', '"graph_11_node_0"[')
    assert dotparse._read_cuda_layout(text) is None
    assert dotparse.parse_dot(text, path.name).to_json() == _general(text, path.name).to_json()


def _labels(name: str) -> list[tuple[str, str, str]]:
    """(node id, label, shape) of every node statement of a recorded dump, in file order."""
    from accelgraph_cli.dot.scan import _SHAPE_ATTR

    text = _text(DUMPS / name)
    document = dotparse._scan(text, name)
    found = []
    for node_id, raw in document.node_attrs.items():
        label = dotparse._unquote(dotparse._LABEL_ATTR.search(raw).group(1))
        found.append((node_id, label, dotparse._unquote(_SHAPE_ATTR.search(raw).group(1))))
    return found


class _CountingSplit:
    """templates._NUMBER_TOKEN with its split calls counted (a label tokenised from scratch)."""

    def __init__(self, pattern):
        self.real, self.pattern, self.splits = pattern, pattern.pattern, 0

    def split(self, text):
        self.splits += 1
        return self.real.split(text)


def test_label_templates_match_recent_templates_and_share_repeated_addresses(monkeypatch):
    # chain1k_verbose's 1,000 labels alternate two templates (the add and the multiply
    # kernel). Each template is tokenised from scratch at its first label (the recipe is
    # made) and at its second (a matcher is made for it); the recent matchers take the other
    # 996. Each kernel's function handle is one string for all of its 500 nodes.
    from accelgraph_cli.dot import labels, templates

    counting = _CountingSplit(templates._NUMBER_TOKEN)
    monkeypatch.setattr(templates, "_NUMBER_TOKEN", counting)
    recipes = templates._LabelTemplates()
    found = _labels("chain1k_verbose.dot")
    nodes = [recipes.node(*entry) for entry in found]
    assert counting.splits == 4
    assert len(recipes.recipes) == 2
    monkeypatch.setattr(templates, "_NUMBER_TOKEN", counting.real)
    for node, entry in zip(nodes, found):
        direct = labels._node_from_label(*entry)
        assert (node.id, node.kind, node.name, node.topo_id, node.params) == (
            direct.id, direct.kind, direct.name, direct.topo_id, direct.params)
    ids = {}
    for node in nodes:
        ids.setdefault(node.name, set()).add(id(node.params["handle_func"]))
    assert [len(each) for each in ids.values()] == [1, 1]


@pytest.mark.parametrize("digits", [9, 10, 16])
def test_a_recipe_made_on_a_long_handle_reads_a_shorter_one_as_direct_parsing_does(digits):
    # chain1k_verbose edited: the second add node's handle written with fewer hex digits
    # (CUDA writes 16). The recipe is made on the first label and filled with the shorter
    # one, which is still an address (text) from 9 digits. (At 8 digits or fewer direct
    # parsing reads a number and names the field "node", the recipe keeps "handle_node":
    # see tests/mutation/REPORT.md, run 6.)
    from accelgraph_cli.dot import labels, templates

    (id0, label0, shape), (id2, label2, _) = _labels("chain1k_verbose.dot")[0:3:2]
    handle = re.search(r"\| \{0x(0{8}[0-9A-F]{8}) \| ", label2).group(1)  # 8 digits of value
    value = handle[8:]
    short = label2.replace("0x" + handle, "0x" + value.rjust(digits, "0")[-digits:])
    recipes = templates._LabelTemplates()
    recipes.node(id0, label0, shape)
    node, direct = recipes.node(id2, short, shape), labels._node_from_label(id2, short, shape)
    assert node.params == direct.params
    assert node.params["handle_node"] == "0x" + value.rjust(digits, "0")


def test_numbers_in_a_kernel_name_are_part_of_the_shared_fields():
    # chain1k_verbose edited: the third node's kernel is the float64 variant of the first's.
    # Only the numbers of the name differ, so a memo that left them out would give it the
    # first node's name.
    from accelgraph_cli.dot import labels, templates

    (id0, label0, shape), (id2, label2, _) = _labels("chain1k_verbose.dot")[0:3:2]
    label2 = label2.replace("float32_float_float32", "float64_float_float64")
    recipes = templates._LabelTemplates()
    recipes.node(id0, label0, shape)
    node = recipes.node(id2, label2, shape)
    assert node.name == labels._node_from_label(id2, label2, shape).name == (
        "cupy_add__float64_float_float64")


@pytest.mark.parametrize("token, value", [("0x14F7D8E8", 0x14F7D8E8), ("0x0", 0),
                                          ("0x014F7D8E8", "0x014F7D8E8"), ("128", 128),
                                          ("-1", -1), ("0.000000", 0.0)])
def test_token_value_of_each_class_of_number(token, value):
    from accelgraph_cli.dot.templates import _token_value

    assert _token_value(token) == value and type(_token_value(token)) is type(value)


def test_a_label_ending_in_a_backslash_goes_to_the_general_path():
    # chain_basic.dot edited: the first node's label ends in a backslash, which escapes the
    # closing quote for DOT. The fast reader must leave the statement to the general path.
    text = _text(DUMPS / "chain_basic.dot")
    start = text.index('"graph_1_node_0"[')
    end = text.index('"];', start)
    edited = text[:end] + "\\" + text[end:]
    assert dotparse._read_cuda_layout(edited) is None


def test_past_its_literal_readers_a_template_is_read_by_its_general_reader():
    # chain1k_verbose edited: the first 12 add kernels launched with grids 1 to 12 (CUDA
    # wrote 8 for all), so the add template has 12 combinations of its stable numbers. The
    # first 8 get a literal reader each; the 9th statement teaches the template's general
    # reader, which reads the 10th to 12th by filling the recipe (a memo miss each) and then
    # every later add. The reader list holds 6, so the multiply kernel's literal reader
    # falls out of it when the 7th add reader comes in, and is learned again at the next
    # multiply. The model is the general path's.
    text = _text(DUMPS / "chain1k_verbose.dot")
    launch = "cupy_add__float32_float_float32\\<\\<\\<8,128,0"
    assert text.count(launch) == 500
    for grid in range(1, 13):
        text = text.replace(launch, launch.replace("<8,", f"<{grid},"), 1)
    model, learned, fills = _slow_reads(text)
    kernels = [reader.shared[1].split("__")[0] if reader.literal else "general" for reader in learned]
    assert kernels == (["cupy_add", "cupy_multiply"] + ["cupy_add"] * 6 + ["cupy_multiply", "cupy_add"]
                       + ["general"])
    assert [reader.literal for reader in learned] == [True] * 10 + [False]
    assert fills == len(learned) + 3
    assert model.to_json() == _general(text, "chain1k_verbose.dot").to_json()


def test_a_label_no_recipe_can_express_is_parsed_directly():
    # chain1k_verbose edited: a field name with a digit ("priority2"), which a recipe cannot
    # express (its numbers are cut out as tokens): the label is parsed directly, every time.
    from accelgraph_cli.dot import labels, templates

    (node_id, label, shape), = _labels("chain1k_verbose.dot")[:1]
    label = label.replace("{priority | 0}", "{priority2 | 0}")
    recipes = templates._LabelTemplates()
    for _ in range(2):
        node = recipes.node(node_id, label, shape)
        direct = labels._node_from_label(node_id, label, shape)
        assert (node.id, node.name, node.params) == (direct.id, direct.name, direct.params)
        assert node.id == node_id and "priority2" in node.params
    assert list(recipes.recipes.values()) == [None]


def test_a_cluster_name_used_twice_goes_to_the_general_path():
    # kinds_basic.dot edited: the child graph's cluster (label "graph_10") named like its
    # parent's, cluster_9. DOT merges two subgraphs of one name; the fast reader, which
    # keeps one graph per cluster, must leave that to the general path.
    path = DUMPS / "kinds_basic.dot"
    text = _text(path).replace("subgraph cluster_10 {", "subgraph cluster_9 {")
    assert text.count("subgraph cluster_9 {") == 2
    assert dotparse._read_cuda_layout(text) is None
    assert dotparse.parse_dot(text, path.name).to_json() == _general(text, path.name).to_json()


@pytest.mark.parametrize("token, value", [
    ("2.5e3", 2500.0), ("1.5e308", 1.5e308), ("7.0e-400", 0.0), ("0.25", 0.25),
    ("1.0e999", "1.0e999"), ("-1.0e999", "-1.0e999"),  # past a double: kept as written
])
def test_a_number_field_reads_as_the_label_reader_reads_it(token, value):
    # Each label shape is parsed once with stand-in numbers; "2.5e3"'s stand-in overflowed a
    # double, and once such a field was kept as text the shape's recipe gave every node of
    # it the text '2.5e3' where the label reader gives 2500.0
    text = _text(DUMPS / "kinds_verbose.dot").replace("| 0.000000 | N | N}}",
                                                      f"| {token} | N | N}}}}", 1)
    for model in (dotparse.parse_dot(text, filename="k.dot"), _general(text, "k.dot")):
        (first, *_) = [n for n in model.nodes if "access_policy_window_hit_ratio" in n.params]
        assert first.params["access_policy_window_hit_ratio"] == value
        assert type(first.params["access_policy_window_hit_ratio"]) is type(value)
