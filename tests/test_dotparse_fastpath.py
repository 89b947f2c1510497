"""The one-pass reader of CUDA's exact layout gives what the general scanner gives.

parse_dot first tries _read_cuda_layout (statements exactly as cudaGraphDebugDotPrint writes
them, labels found with str.find); anything else goes through _scan and _build_cuda_model.
Both must produce the same model, field for field and in the same order, on every recorded
dump, and the fast reader must step aside (None) for text it does not fully understand.
"""

from __future__ import annotations

import gzip
import json

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
