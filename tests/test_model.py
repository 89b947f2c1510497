"""GraphModel: lookups, order, levels, critical path, aggregates, signatures, JSON.

These tests build models directly in Python (no CUDA text involved); parsing of real CUDA
dumps is tested in test_dotparse.py.
"""

from __future__ import annotations

import json

import pytest

from accelgraph_cli.model.graph_model import (
    KINDS,
    GraphModel,
    ModelLoadError,
    Node,
    chain_runs,
    graph_signature,
    node_signature,
    signature_codes,
    stable_params,
)


def kernel(node_id: str, name: str = "k", grid=(1, 1, 1), **extra) -> Node:
    return Node(node_id, "kernel", name, {"grid": grid, "block": (128, 1, 1), "shared_mem": 0, **extra})


def diamond() -> GraphModel:
    """a -> (b, c) -> d, plus a memcpy e hanging off c: the fork/join shape of two streams."""
    nodes = [
        kernel("a", "init"),
        kernel("b", "left"),
        kernel("c", "right"),
        kernel("d", "join"),
        Node("e", "memcpy", None, {"direction": "DtoH", "bytes": 4096, "ptr_dst": "0x7f00"}),
    ]
    edges = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("c", "e")]
    return GraphModel(nodes, edges, source="live")


def chain(n: int, name: str = "step") -> GraphModel:
    nodes = [kernel(f"n{i}", name) for i in range(n)]
    edges = [(f"n{i}", f"n{i + 1}") for i in range(n - 1)]
    return GraphModel(nodes, edges, source="live")


def test_lookup_parents_children_roots_sinks():
    m = diamond()
    assert m.node("c").name == "right"
    assert m.parents("d") == ["b", "c"]
    assert m.children("c") == ["d", "e"]
    assert m.roots() == ["a"]
    assert m.sinks() == ["d", "e"]
    with pytest.raises(KeyError):
        m.node("zzz")


def test_topological_order_levels_width():
    m = diamond()
    assert m.topological_order() == ["a", "b", "c", "d", "e"]
    assert m.levels() == [["a"], ["b", "c"], ["d", "e"]]
    assert m.level_widths() == [1, 2, 2]
    assert m.max_width() == 2
    assert m.level_of("e") == 2


def test_level_widths_are_counted_once_and_given_out_as_copies():
    m = diamond()
    widths = m.level_widths()
    widths.append(7)
    widths[0] = 9
    assert m.level_widths() == [1, 2, 2] and m.max_width() == 2
    m.edges.append(("d", "e"))  # one more edge: the cached views are rebuilt
    assert m.level_widths() == [1, 2, 1, 1]


def test_critical_path_counts_nodes_and_prefers_first():
    m = diamond()
    # a->b->d, a->c->d and a->c->e are all 3 long; the first in order wins.
    assert m.critical_path() == ["a", "b", "d"]
    m.nodes.append(kernel("f", "tail"))
    m.edges.append(("e", "f"))
    assert m.critical_path() == ["a", "c", "e", "f"]


def test_skip_edge_does_not_shorten_levels():
    m = GraphModel([kernel("x"), kernel("y"), kernel("z")], [("x", "z"), ("x", "y"), ("y", "z")])
    assert m.levels() == [["x"], ["y"], ["z"]]
    assert m.critical_path() == ["x", "y", "z"]


def test_empty_graph():
    m = GraphModel([], [])
    assert m.levels() == [] and m.max_width() == 0 and m.critical_path() == []
    assert m.kind_counts() == {} and m.bytes_allocated() == 0


def test_cycle_is_reported_not_raised():
    m = GraphModel([Node(i, "unknown", i) for i in "pqr"], [("p", "q"), ("q", "r"), ("r", "q")])
    assert not m.is_acyclic()
    # The cyclic nodes come last in node order; the edge closing the cycle (r -> q) is ignored.
    assert m.topological_order() == ["p", "q", "r"]
    assert m.levels() == [["p"], ["q"], ["r"]]
    assert m.critical_path() == ["p", "q", "r"]


def test_self_loop_is_a_cycle_and_does_not_hang():
    # a -> a is its own back edge: treating it as a parent would make the critical path walk
    # a -> a forever (the test's timeout catches that), and level(a) would be 1, not 0.
    from accelgraph_cli.dot.parse import parse_dot

    m = parse_dot("digraph { a -> a; a -> b }")
    assert not m.is_acyclic()
    assert m.topological_order() == ["a", "b"]
    assert m.levels() == [["a"], ["b"]]
    assert [m.level_of("a"), m.level_of("b")] == [0, 1]
    assert m.critical_path() == ["a", "b"]


def test_summary_warns_about_a_cycle_once_and_only_on_a_cycle():
    from rich.console import Console

    from accelgraph_cli.dot.parse import parse_dot
    from accelgraph_cli.render.graph import render_summary

    def summary(text: str) -> list[str]:
        console = Console(width=100, force_terminal=False, no_color=True, record=True)
        console.print(render_summary(parse_dot(text)))
        return [line.rstrip() for line in console.export_text().splitlines()]

    lines = summary("digraph { a -> a; a -> b }")
    assert [line for line in lines if line.startswith("Warning")] == [
        "Warning        the graph has a cycle (not a CUDA graph)"
    ]
    assert "Levels         2  (max width 1)" in lines
    assert "Critical path  2 nodes" in lines
    assert not [line for line in summary("digraph { a -> b }") if line.startswith("Warning")]


def test_bad_edge_and_duplicate_ids_are_errors():
    with pytest.raises(ValueError, match="unknown node"):
        GraphModel([kernel("a")], [("a", "b")]).levels()
    with pytest.raises(ValueError, match="duplicate"):
        GraphModel([kernel("a"), kernel("a")], []).levels()


def test_kind_counts_bytes_and_nesting():
    inner = GraphModel(
        [Node("i0", "mem_alloc", None, {"bytes": 1 << 20}), Node("i1", "mem_free")], [("i0", "i1")]
    )
    m = GraphModel(
        [
            Node("a", "mem_alloc", None, {"bytes": 4096, "ptr_dptr": "0x1"}),
            kernel("b"),
            Node("c", "graph", None, child=inner),
            Node("d", "mem_free"),
        ],
        [("a", "b"), ("b", "c"), ("c", "d")],
    )
    assert m.kind_counts() == {"kernel": 1, "mem_alloc": 1, "mem_free": 1, "graph": 1}
    assert list(m.kind_counts()) == [k for k in KINDS if k in m.kind_counts()]
    assert m.kind_counts(recursive=True)["mem_alloc"] == 2
    assert m.bytes_allocated() == 4096 + (1 << 20)
    assert m.total_nodes() == 6
    assert [len(g.nodes) for g in m.walk()] == [4, 2]


def test_signature_ignores_pointers_and_ids():
    a = Node("x", "memcpy", None, {"direction": "DtoD", "bytes": 64, "ptr_src": "0x1", "handle_node": "0x9"})
    b = Node("y", "memcpy", None, {"direction": "DtoD", "bytes": 64, "ptr_src": "0x2", "handle_node": "0x8"})
    c = Node("z", "memcpy", None, {"direction": "DtoD", "bytes": 128})
    assert stable_params(a) == {"direction": "DtoD", "bytes": 64}
    assert node_signature(a) == node_signature(b) != node_signature(c)
    # the name as written: a demangled name is there only where the machine that read the
    # file had a demangler, and the same graph read on two machines must sign alike
    mangled = Node("k", "kernel", "_Z1fv", {"demangled": "f()"})
    assert node_signature(mangled) == node_signature(Node("k", "kernel", "_Z1fv", {}))
    assert node_signature(mangled)[1] == "_Z1fv"


def test_signature_codes_are_equal_exactly_when_signatures_are():
    inner = GraphModel([kernel("i", "inner")], [])
    other_inner = GraphModel([kernel("i", "inner", grid=(2, 1, 1))], [])
    nodes = [
        kernel("a"),
        kernel("b", ptr_x="0x1"),  # a pointer more: same signature as a
        # the same keys in another order
        Node("c", "kernel", "k", {"shared_mem": 0, "block": (128, 1, 1), "grid": (1, 1, 1)}),
        kernel("d", grid=(2, 1, 1)),
        kernel("e", "other"),
        kernel("f", "_Z1kv", demangled="k"),  # the name as written decides, not the display
        kernel("g", shared_mem=False),  # False == 0, as in the sorted tuples
        kernel("h", shared_mem=0.0),
        Node("i", "memcpy", "k", {"grid": (1, 1, 1), "block": (128, 1, 1), "shared_mem": 0}),
        Node("j", "graph", None, {}, child=inner),
        Node("k", "graph", None, {"handle_x": "0x2"}, child=GraphModel([kernel("z", "inner")], [])),
        Node("l", "graph", None, {}, child=other_inner),
        Node("m", "empty", None, {}),
        Node("n", "empty", None, {"ptr_only": "0x3"}),
        Node("o", "empty", "x", {"bytes": 1}),
        Node("p", "empty", "x", {"bytes": (1,)}),
    ]
    codes = signature_codes(nodes)
    for i, a in enumerate(nodes):
        for j, b in enumerate(nodes):
            assert (codes[i] == codes[j]) == (node_signature(a) == node_signature(b)), (a.id, b.id)


def test_graph_signature_is_independent_of_ids():
    one = diamond()
    two = diamond()
    for node in two.nodes:
        node.id = "other_" + node.id
    two.edges = [("other_" + a, "other_" + b) for a, b in two.edges]
    two.invalidate()
    assert graph_signature(one) == graph_signature(two)


def test_chain_runs_collapse_identical_chain_only():
    m = chain(6)
    m.nodes[3].name = "different"
    m.invalidate()
    runs = chain_runs(m)
    assert [(r.ids, r.period, r.repeats) for r in runs] == [
        (("n0", "n1", "n2"), 1, 3),
        (("n3",), 1, 1),
        (("n4", "n5"), 1, 2),
    ]
    # A fork breaks a run: b and c are both children of a.
    assert [r.ids for r in chain_runs(diamond())] == [("a",), ("b",), ("c",), ("d",), ("e",)]


def test_chain_runs_find_repeating_blocks():
    m = chain(10_001)
    for i, node in enumerate(m.nodes):
        node.name = ("add", "mul")[i % 2]
    runs = chain_runs(m)
    assert [(len(r.ids), r.period, r.repeats) for r in runs] == [(10_000, 2, 5_000), (1, 1, 1)]
    assert [m.node(i).name for i in runs[0].block] == ["add", "mul"]
    # A node kept alone splits the run around it.
    runs = chain_runs(m, alone=frozenset(["n4"]))
    assert [len(r.ids) for r in runs] == [4, 1, 9_996]


def test_json_round_trip_exact_with_nested_child():
    inner = GraphModel([kernel("i0", "_Z5innerv", demangled="inner()")], [], source="dot-verbose")
    m = diamond()
    m.nodes.append(Node("g", "graph", None, {"ptr_x": "0x1"}, child=inner, topo_id=7))
    m.edges.append(("d", "g"))
    document = m.to_json()
    assert document["format"] == "accelgraph-model" and document["version"] == 1
    text = json.dumps(document)
    back = GraphModel.from_json(json.loads(text))
    assert back == m
    assert back.node("a").params["grid"] == (1, 1, 1)  # tuples come back as tuples
    assert back.node("g").child.nodes[0].params["demangled"] == "inner()"
    assert back.critical_path() == m.critical_path()


@pytest.mark.parametrize(
    "document, message",
    [
        ([], "not an accelgraph model"),
        ({"format": "other"}, "not an accelgraph model"),
        ({"format": "accelgraph-model", "version": 99, "nodes": [], "edges": []}, "version 99"),
        ({"format": "accelgraph-model", "version": 1, "nodes": {}, "edges": []}, "must be lists"),
        ({"format": "accelgraph-model", "version": 1, "nodes": [{"id": 1}], "edges": []}, "string"),
        (
            {
                "format": "accelgraph-model",
                "version": 1,
                "nodes": [{"id": "a", "kind": "kernel"}],
                "edges": [["a", "b"]],
            },
            "unknown node",
        ),
        (
            {"format": "accelgraph-model", "version": 1, "nodes": [], "edges": [["a"]]},
            "pair",
        ),
    ],
)
def test_from_json_rejects_wrong_shapes(document, message):
    with pytest.raises(ModelLoadError, match=message):
        GraphModel.from_json(document, where="snap.json")


def test_derived_views_on_50k_nodes():
    # Their speed (under 0.5 s) is measured by bench/bench_model.py, not asserted here.
    n = 50_000
    # A ladder: two parallel chains with a rung every 10 nodes, so levels have width 2.
    nodes = [kernel(f"a{i}") for i in range(n // 2)] + [kernel(f"b{i}") for i in range(n // 2)]
    edges = [(f"a{i}", f"a{i + 1}") for i in range(n // 2 - 1)]
    edges += [(f"b{i}", f"b{i + 1}") for i in range(n // 2 - 1)]
    edges += [(f"a{i}", f"b{i + 1}") for i in range(0, n // 2 - 1, 10)]
    m = GraphModel(nodes, edges)
    order = m.topological_order()
    levels = m.levels()
    path = m.critical_path()
    assert len(order) == n and len(levels) == n // 2 and len(path) == n // 2
    assert levels[1] == ["a1", "b1"] and path[:3] == ["a0", "a1", "a2"]
    assert m.max_width() == 2 and m.kind_counts() == {"kernel": n}


def _doc(nodes, edges=(), **extra) -> dict:
    return {"format": "accelgraph-model", "version": 1, "nodes": nodes, "edges": list(edges), **extra}


@pytest.mark.parametrize(
    "document, problem",
    [
        (_doc({}), '"nodes" and "edges" must be lists'),
        ({**_doc([]), "edges": {}}, '"nodes" and "edges" must be lists'),
        (_doc([], source=3), '"source" must be a string'),
        (_doc(["a"]), "node #0 is not an object"),
        (_doc([{"id": "a"}]), 'node #0 needs string "id" and "kind"'),
        (_doc([{"kind": "kernel"}]), 'node #0 needs string "id" and "kind"'),
        (_doc([{"id": "a", "kind": "kernel", "name": 5}]), 'node a: "name" must be a string'),
        (_doc([{"id": "a", "kind": "kernel", "topo_id": True}]), 'node a: "topo_id" must be an integer'),
        (_doc([{"id": "a", "kind": "kernel", "topo_id": "3"}]), 'node a: "topo_id" must be an integer'),
        (_doc([{"id": "a", "kind": "kernel", "params": []}]), 'node a: "params" must be an object'),
        (_doc([{"id": "a", "kind": "graph", "child": []}]), 'node a: "child" must be an object'),
        (_doc([{"id": "a", "kind": "graph", "child": {"nodes": [7], "edges": []}}]),
         "node #0 is not an object"),
        (_doc([{"id": "a", "kind": "k"}], [["a", "a", "a"]]),
         "edge #0 is not a [from_id, to_id] pair of strings"),
        (_doc([{"id": "a", "kind": "k"}, {"id": "a", "kind": "k"}]), "duplicate node id 'a' in graph"),
    ],
)
def test_from_json_says_exactly_what_is_malformed(document, problem):
    with pytest.raises(ModelLoadError) as caught:
        GraphModel.from_json(document, where="snap.json")
    assert str(caught.value) == f"snap.json: malformed accelgraph model: {problem}"
    with pytest.raises(ModelLoadError) as caught:
        GraphModel.from_json(document)
    assert str(caught.value) == f"<json>: malformed accelgraph model: {problem}"


def _with_param(key, value, kind="kernel") -> dict:
    return _doc([{"id": "a", "kind": kind, "params": {key: value}}])


COUNT = "an integer of 0 or more"
DIMS = "a list of one to three sizes from 1 to 2**31 - 1"


@pytest.mark.parametrize(
    "key, value, kind, problem",
    [
        ("bytes", "x", "mem_alloc", COUNT),  # int("x") in the summary: exit 70 before
        ("bytes", [1], "memcpy", COUNT),
        ("bytes", True, "memset", COUNT),
        ("bytes", -5, "mem_alloc", COUNT),  # "Allocated -5 B" before
        ("shared_mem", 1.5, "kernel", COUNT),
        ("shared_mem", -1, "kernel", COUNT),
        ("grid", 5, "kernel", DIMS),
        ("block", ["a", 1], "kernel", DIMS),
        ("grid", [-1, 0, 10**30], "kernel", DIMS),  # taken before
        ("grid", [], "kernel", DIMS),
        ("block", [1, 1, 1, 1], "kernel", DIMS),
        ("grid", [1 << 31], "kernel", DIMS),
        ("demangled", 3, "kernel", "a string"),
        ("direction", {"a": 1}, "memcpy", "a string, number, true, false, null or a list of those"),
        ("value", [[1]], "memset", "a string, number, true, false, null or a list of those"),
    ],
)
def test_from_json_refuses_parameters_of_the_wrong_type(key, value, kind, problem):
    # sizes and launch dimensions are what CUDA can have: a count, one to three positive dims
    with pytest.raises(ModelLoadError) as caught:
        GraphModel.from_json(_with_param(key, value, kind), where="m.json")
    assert str(caught.value) == (
        f'm.json: malformed accelgraph model: node a: parameter "{key}" must be {problem}'
    )


def test_from_json_takes_parameters_of_the_right_types():
    params = {"bytes": 4096, "grid": [2, 1, 1], "block": [128], "shared_mem": 0, "demangled": "f()",
              "other": ["x", 1, 2.5, None, False], "flag": True, "none": None}
    model = GraphModel.from_json(_doc([{"id": "a", "kind": "kernel", "params": params}]))
    assert model.nodes[0].params == {**params, "grid": (2, 1, 1), "block": (128,),
                                     "other": ("x", 1, 2.5, None, False)}


def test_from_json_defaults_and_exact_top_level_messages():
    model = GraphModel.from_json(_doc([{"id": "a", "kind": "kernel", "topo_id": 0}]))
    assert (model.source, model.nodes) == ("", [Node("a", "kernel", None, {}, None, 0)])
    with pytest.raises(ModelLoadError) as caught:
        GraphModel.from_json({"format": "other"})
    assert str(caught.value) == (
        '<json>: not an accelgraph model (expected a JSON object with "format": "accelgraph-model")'
    )
    with pytest.raises(ModelLoadError) as caught:
        GraphModel.from_json({"format": "accelgraph-model", "version": 2}, where="m.json")
    assert str(caught.value) == (
        "m.json: accelgraph model version 2 is not supported (this accelgraph reads version 1)"
    )


@pytest.mark.parametrize("version", [True, 1.0, "1"])
def test_a_version_that_only_equals_1_is_not_version_1(version):
    # true == 1 and 1.0 == 1 in Python: both were read as version 1
    with pytest.raises(ModelLoadError) as caught:
        GraphModel.from_json({"format": "accelgraph-model", "version": version, "nodes": [],
                              "edges": []}, where="m.json")
    assert str(caught.value) == (f"m.json: accelgraph model version {version!r} is not "
                                 "supported (this accelgraph reads version 1)")


@pytest.mark.parametrize("key", ["grid", "block", "shared_mem", "demangled", "bytes"])
def test_a_json_model_with_a_null_typed_parameter_is_refused(key):
    # The renderer computes with these (grid and block as dimensions): null is not one, and
    # a model that held it made show and diff fail with an internal error.
    document = {"format": "accelgraph-model", "version": 1, "source": "dot-verbose",
                "nodes": [{"id": "a", "kind": "kernel", "name": "k", "params": {key: None}}],
                "edges": []}
    with pytest.raises(ModelLoadError, match=f'parameter "{key}" must be'):
        GraphModel.from_json(document)
