"""The diff's building blocks, pinned exactly: alignment helpers, labels, matching steps.

Mutation testing (tests/mutation/REPORT.md) found these unguarded by the graph-level tests in
test_diff.py: a flipped bound or a dropped value in them changed no outcome there, mostly
because the whole-graph tests reach them only on large inputs. The graphs here are built in
Python; none of them imitates CUDA's output.
"""

from __future__ import annotations

import random

import pytest
from _diff_models import fork_join_model, kernel, lanes_model, modules_model

from accelgraph_cli.diff.align import (
    _anchors_of,
    _double,
    _longest_increasing,
    _myers,
    _occurrence_pairs,
    _run_ids,
    _unique_anchors,
)
from accelgraph_cli.diff.labels import Labeler, shared_param_keys
from accelgraph_cli.diff.order import _heights
from accelgraph_cli.diff.side import WL_ROUNDS, Side, prepare, structural_order
from accelgraph_cli.model.graph_model import GraphModel, Node

# ------------------------------------------------------------------------- align


@pytest.mark.parametrize(
    "pairs, run",
    [
        ([], []),
        ([(0, 5)], [(0, 5)]),
        ([(0, 3), (1, 1), (2, 2), (3, 0), (4, 4)], [(1, 1), (2, 2), (4, 4)]),
        ([(0, 1), (1, 1)], [(1, 1)]),  # strictly increasing: an equal second item replaces
        ([(0, 2), (1, 0), (2, 1), (3, 3)], [(1, 0), (2, 1), (3, 3)]),
    ],
)
def test_longest_increasing_run(pairs, run):
    assert _longest_increasing(pairs) == run


def test_occurrence_pairs_stay_inside_the_stretch():
    # Outside the stretch [1, 5) both sequences hold more "a"s; none may be paired.
    a, b = list("aabcaz"), list("abacaa")
    assert _occurrence_pairs(a, 1, 5, b, 1, 5) == [(2, 1), (3, 3), (4, 4)]
    assert _occurrence_pairs(a, 0, 6, b, 0, 6) == [(0, 0), (2, 1), (3, 3), (4, 4)]
    assert _occurrence_pairs(a, 0, 6, list("xyw"), 0, 3) == []


def test_double_gives_equal_runs_equal_ids():
    table: dict = {}
    assert _double([0, 1, 0, 1], 1, table) == [0, 1, 0]
    assert table == {(1, 0, 1): 0, (1, 1, 0): 1}


def test_run_ids_per_length_stop_where_the_shorter_side_runs_out():
    a, b = list("abcdefghij"), list("x" * 30 + "abcdefghij")
    runs = _run_ids(a, b)
    assert sorted(runs) == [8]  # a has no run of 16
    runs_a, runs_b = runs[8]
    assert len(runs_a) == 3 and len(runs_b) == 33
    assert runs_b[30:] == runs_a and len(set(runs_a)) == 3
    periodic = [i % 3 for i in range(300)]
    assert {k: len(v[0]) for k, v in _run_ids(periodic, periodic).items()} == {8: 293, 32: 269, 128: 173}


def test_anchors_of_are_offset_by_the_stretch_start():
    assert _anchors_of(list("xabcy"), list("zabcw"), 10, 20, 1) == [(11, 21, 1), (12, 22, 1), (13, 23, 1)]


def test_unique_anchors_single_items_first():
    assert _unique_anchors(list("xabcy"), 0, 5, list("zabcw"), 0, 5, {}) == [(1, 1, 1), (2, 2, 1), (3, 3, 1)]


def test_unique_anchors_of_a_periodic_stretch_take_the_longest_unique_run():
    a = [i % 4 for i in range(40)]
    b = list(a)
    a[20] = a[21]
    b[24] = b[25]
    runs: dict = {}
    assert _unique_anchors(a, 0, 40, b, 0, 40, runs) == [(0, 4, 32)]
    assert sorted(runs) == [8, 32]  # built once, kept for the next stretch


@pytest.mark.parametrize("swap", [False, True])
def test_unique_anchors_a_run_as_long_as_the_stretch(swap):
    # 32 zeros, once in each stretch: the whole stretch is the anchor. The stretch of the
    # zeros-only side stops one short of its sequence, whose last run of 32 is not in it.
    zeros, framed = [0] * 33, [9] + [0] * 32 + [8]
    if swap:
        assert _unique_anchors(framed, 0, 34, zeros, 0, 32, {}) == [(1, 0, 32)]
    else:
        assert _unique_anchors(zeros, 0, 32, framed, 0, 34, {}) == [(0, 1, 32)]


@pytest.mark.parametrize(
    "grams_a, grams_b, length, anchors",
    [
        ([10, 11, 12, 13, 14], [10, 11, 12, 13, 14], 3, [(0, 0, 3), (3, 3, 3)]),  # no overlaps
        ([10, 11, 12], [10, 20, 21, 11, 12], 3, [(0, 0, 3)]),  # overlapping in a only
        ([10, 20, 21, 11, 12], [10, 11, 12], 3, [(0, 0, 3)]),  # overlapping in b only
        ([10, 10, 11], [10, 11], 1, [(2, 1, 1)]),  # unique in b, twice in a
        ([10, 11], [10, 10, 11], 1, [(1, 2, 1)]),
        ([10, 11], [12, 13], 1, []),
    ],
)
def test_anchors_are_unique_on_both_sides_and_never_overlap(grams_a, grams_b, length, anchors):
    assert _anchors_of(grams_a, grams_b, 0, 0, length) == anchors


@pytest.mark.parametrize(
    "a, alo, ahi, b, blo, bhi, pairs",
    [
        ("abcx", 0, 4, "abcy", 0, 4, [(2, 2), (1, 1), (0, 0)]),  # a common head: the first snake
        ("zabcx", 1, 5, "wabcy", 1, 5, [(3, 3), (2, 2), (1, 1)]),
        ("abxcd", 0, 5, "abcd", 0, 4, [(4, 3), (3, 2), (1, 1), (0, 0)]),
        ("xab", 0, 3, "yab", 0, 3, [(2, 2), (1, 1)]),
        ("abcdef", 0, 6, "ghijkl", 0, 6, []),
    ],
)
def test_myers_pairs_every_item_of_a_shortest_edit_script(a, alo, ahi, b, blo, bhi, pairs):
    assert _myers(list(a), alo, ahi, list(b), blo, bhi, 10) == pairs


def test_myers_gives_up_past_its_edit_limit():
    assert _myers(list("abcdef"), 0, 6, list("fedcba"), 0, 6, 3) is None


# ---------------------------------------------------------------- canonical order


def _side(model: GraphModel) -> Side:
    labeler = Labeler(shared_param_keys(model, model, frozenset()), frozenset())
    return prepare(model, labeler, [{} for _ in range(WL_ROUNDS)], [{} for _ in range(WL_ROUNDS)])


def _numbers(model: GraphModel, order: list[int]) -> list[int]:
    return [int(model.nodes[i].id.rsplit("_", 1)[1]) for i in order]


# The canonical order of each graph with its nodes listed in a shuffled order (seeded): it
# must not follow the listing, so look-alike branches are placed by structure. Pinned as
# computed; a change here changes which nodes the alignment pairs.
SHUFFLED_ORDERS = {
    ("fork_join", 1): [0, 5, 6, 3, 4, 1, 2, 7, 10, 11, 8, 9, 12, 13, 14],
    ("fork_join", 2): [0, 3, 4, 5, 6, 1, 2, 7, 12, 13, 10, 11, 8, 9, 14],
    ("lanes", 1): list(range(27)),
    ("lanes", 2): [0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 10, 13, 14, 11, 12, 15, 16, 17, 18, 19, 22, 23, 20, 21, 24,
                   25, 26],
    ("modules", 1): [0, 1, 4, 15, 18, 8, 11, 3, 5, 17, 19, 10, 12, 2, 6, 7, 16, 20, 21, 9, 13, 14, 22],
    ("modules", 2): [0, 16, 9, 2, 17, 10, 3, 15, 18, 21, 19, 20, 8, 11, 14, 12, 13, 1, 4, 7, 5, 6, 22],
}
SHAPES = {
    "fork_join": lambda: fork_join_model(2, 3),
    "lanes": lambda: lanes_model(3, 3),
    "modules": lambda: modules_model(3),
}


@pytest.mark.parametrize("shape, seed", sorted(SHUFFLED_ORDERS))
def test_canonical_order_of_shuffled_look_alikes(shape, seed):
    model = SHAPES[shape]()
    nodes = list(model.nodes)
    random.Random(seed).shuffle(nodes)
    shuffled = GraphModel(nodes, list(model.edges), source=model.source)
    side = _side(shuffled)
    assert _numbers(shuffled, side.order) == SHUFFLED_ORDERS[shape, seed]
    assert _numbers(shuffled, structural_order(side, {}).order) == SHUFFLED_ORDERS[shape, seed]


def test_canonical_order_of_listed_graphs_follows_the_listing_where_it_is_structural():
    for make in (SHAPES["fork_join"], SHAPES["lanes"]):
        model = make()
        assert _numbers(model, _side(model).order) == list(range(len(model.nodes)))
    model = SHAPES["modules"]()
    assert _numbers(model, _side(model).order) == [0, 1, 4, 8, 11, 15, 18, 3, 5, 10, 12, 17, 19, 2, 6, 7, 9,
                                                    13, 14, 16, 20, 21, 22]


def test_heights_count_edges_on_the_longest_path_down():
    # 0 -> 1 -> 2 and 0 -> 2; 3 alone; 4 -> 5 -> 4 is a cycle (0 for its nodes).
    parents = [[], [0], [0, 1], [], [5], [4]]
    children = [[1, 2], [2], [], [], [5], [4]]
    assert _heights(parents, children) == [2, 1, 0, 0, 0, 0]


# ------------------------------------------------------------------------ labels


def _child(names: list[str], edges: list[tuple[int, int]]) -> GraphModel:
    nodes = [kernel(i, name) for i, name in enumerate(names)]
    return GraphModel(nodes, [(nodes[s].id, nodes[d].id) for s, d in edges])


def test_child_graph_digest_is_its_node_and_edge_multiset():
    labeler = Labeler({}, frozenset())
    chain = labeler._digest(_child(["a", "b", "c"], [(0, 1), (1, 2)]))
    same = labeler._digest(_child(["a", "b", "c"], [(0, 1), (1, 2)]))
    listed_otherwise = labeler._digest(_child(["c", "b", "a"], [(2, 1), (1, 0)]))
    rewired = labeler._digest(_child(["a", "b", "c"], [(0, 2), (2, 1)]))
    renamed = labeler._digest(_child(["a", "b", "d"], [(0, 1), (1, 2)]))
    unlinked = labeler._digest(_child(["a", "b", "c"], []))
    assert chain == same == listed_otherwise
    assert len({chain, rewired, renamed, unlinked}) == 4
    assert all(isinstance(d, int) for d in (chain, rewired, renamed, unlinked))


def test_nodes_holding_different_child_graphs_get_different_fine_labels():
    def parent(child: GraphModel) -> GraphModel:
        return GraphModel([Node("g", "graph", None, {}, child)], [])

    labeler = Labeler({}, frozenset())
    first = labeler.labels(parent(_child(["a", "b"], [(0, 1)])))
    second = labeler.labels(parent(_child(["a", "b"], [(1, 0)])))
    third = labeler.labels(parent(_child(["a", "b"], [(0, 1)])))
    assert first[1] == second[1] == third[1]  # coarse: kind and name only
    assert first[0] != second[0] and first[0] == third[0]
