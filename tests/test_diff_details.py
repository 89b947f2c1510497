"""The diff's building blocks, pinned exactly: alignment helpers, labels, matching steps.

Mutation testing (tests/mutation/REPORT.md) found these unguarded by the graph-level tests in
test_diff.py: a flipped bound or a dropped value in them changed no outcome there, mostly
because the whole-graph tests reach them only on large inputs. The graphs here are built in
Python; none of them imitates CUDA's output.
"""

from __future__ import annotations

import random

import pytest
from _diff_models import chain_model, fork_join_model, kernel, lanes_model, modules_model

from accelgraph_cli.diff.align import (
    _anchors_of,
    _double,
    _longest_increasing,
    _myers,
    _myers_within,
    _occurrence_pairs,
    _run_ids,
    _unique_anchors,
    align,
)
from accelgraph_cli.diff.labels import Labeler, shared_param_keys
from accelgraph_cli.diff.match import _pair_by_key, _pair_unique, _propagate
from accelgraph_cli.diff.order import _heights
from accelgraph_cli.diff.side import WL_ROUNDS, CoarseShapes, Side, prepare, structural_order
from accelgraph_cli.diff.structural import diff_models
from accelgraph_cli.diff.types import GraphStats
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
    # Exactly as many edits as allowed still succeeds.
    assert _myers(list("abcx"), 0, 4, list("abcy"), 0, 4, 2) == [(2, 2), (1, 1), (0, 0)]
    assert _myers(list("abcx"), 0, 4, list("abcy"), 0, 4, 1) is None


def test_myers_within_charges_the_diagonals_it_visits():
    budget = [1000]
    # Two edits: (2 + 1) * (2 + 2) / 2 = 6 diagonals.
    assert _myers_within(list("abc"), 0, 3, list("acb"), 0, 3, 10, budget) == [(2, 1), (0, 0)]
    assert budget == [994]
    # Four edits needed, two allowed: it gives up, and is charged for the two rounds tried.
    budget = [10**6]
    assert _myers_within(list("abcdxy"), 0, 6, list("xyabcd"), 0, 6, 2, budget) is None
    assert budget == [10**6 - 6]


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
    # Kept alive together: the labeler caches labels by id() of the model, as in one diff.
    children = [
        _child(["a", "b", "c"], [(0, 1), (1, 2)]),
        _child(["a", "b", "c"], [(0, 1), (1, 2)]),
        _child(["c", "b", "a"], [(2, 1), (1, 0)]),  # the same, listed the other way round
        _child(["a", "b", "c"], [(0, 2), (2, 1)]),  # rewired
        _child(["a", "b", "d"], [(0, 1), (1, 2)]),  # renamed
        _child(["a", "b", "c"], []),  # no edges
        _child(["a", "b", "d"], [(0, 1)]),  # the same edges as the next, another lone node
        _child(["a", "b", "e"], [(0, 1)]),
    ]
    chain, same, listed_otherwise, rewired, renamed, unlinked, lone_d, lone_e = map(labeler._digest, children)
    assert chain == same == listed_otherwise
    assert len({chain, rewired, renamed, unlinked, lone_d, lone_e}) == 6
    assert all(isinstance(d, int) for d in (chain, rewired, renamed, unlinked, lone_d, lone_e))


def test_nodes_holding_different_child_graphs_get_different_fine_labels():
    def parent(child: GraphModel) -> GraphModel:
        return GraphModel([Node("g", "graph", None, {}, child)], [])

    labeler = Labeler({}, frozenset())
    models = [parent(_child(["a", "b"], [(0, 1)])), parent(_child(["a", "b"], [(1, 0)])),
              parent(_child(["a", "b"], [(0, 1)]))]
    first, second, third = map(labeler.labels, models)
    assert first[1] == second[1] == third[1]  # coarse: kind and name only
    assert first[0] != second[0] and first[0] == third[0]


# ---------------------------------------------------------------------- matching


def _pairing(a_to_b: dict, b_to_a: list):
    def pair(i: int, j: int) -> None:
        a_to_b[i] = j
        b_to_a[j] = i

    return pair


def test_pair_by_key_pairs_the_kth_with_the_kth():
    a_to_b: dict = {}
    b_to_a = [-1] * 4
    # a: 0 "x", 1 "y", 2 "x"; b: 0 "y", 1 "x", 2 "x", 3 "z"
    _pair_by_key([0, 1, 2], [0, 1, 2, 3], ["x", "y", "x"], ["y", "x", "x", "z"], _pairing(a_to_b, b_to_a))
    assert a_to_b == {0: 1, 1: 0, 2: 2}
    _pair_by_key([], [3], ["x"], ["z"] * 4, _pairing(a_to_b, b_to_a))
    _pair_by_key([0], [], ["x"], [], _pairing(a_to_b, b_to_a))
    assert a_to_b == {0: 1, 1: 0, 2: 2}


def test_coarse_shapes_are_numbered_as_if_computed_in_order_of_preparation():
    # A chain's order sorts no ready nodes, so its shapes wait; the fork/join's order needs
    # its own, which must come out as when both are computed at once, the chain first.
    a = chain_model(7, names=("cupy_multiply", "cupy_sqrt", "cupy_add"))
    b = fork_join_model(2, 3)
    labeler = Labeler(shared_param_keys(a, b, frozenset()), frozenset())
    tables, coarse = [{} for _ in range(WL_ROUNDS)], [{} for _ in range(WL_ROUNDS)]
    eager = [prepare(model, labeler, tables, coarse) for model in (a, b)]
    shapes = CoarseShapes([{} for _ in range(WL_ROUNDS)])
    lazy = [prepare(model, labeler, [{} for _ in range(WL_ROUNDS)], shapes) for model in (a, b)]
    assert shapes.sides[0][2] is not None  # made for b's order, a's first
    assert lazy[1].coarse_shape == eager[1].coarse_shape
    assert lazy[0].coarse_shape == eager[0].coarse_shape
    assert lazy[1].order == eager[1].order
    shapes = CoarseShapes([{} for _ in range(WL_ROUNDS)])
    chain = prepare(a, labeler, [{} for _ in range(WL_ROUNDS)], shapes)
    assert shapes.sides[0][2] is None and chain.order == eager[0].order  # not needed
    assert chain.coarse_shape == eager[0].coarse_shape  # made when read


def test_are_edges_reads_lone_children_and_the_edges_of_nodes_with_several():
    # 0 -> 1, 1 -> 2, 1 -> 3, 3 -> 4: node 1 has two children, the others one or none; -1
    # names no node, so a pair with -1 at either end is no edge (not node 0's, not the last's).
    nodes = [kernel(i, "k") for i in range(5)]
    side = _side(_graph(nodes, [(0, 1), (1, 2), (1, 3), (3, 4)]))
    sources = [0, 1, 1, 3, -1, -1, 0, 2, 4, 1, 3, 4, -1]
    targets = [1, 2, 3, 4, 0, 1, 2, -1, 3, 0, -1, -1, -1]
    assert side.are_edges(sources, targets) == [True] * 4 + [False] * 9
    # Most edges leave node 0 (three children): every pair is looked up in the edge set.
    side = _side(_graph(nodes, [(0, 1), (0, 2), (0, 3), (1, 4)]))
    sources = [0, 0, 0, 1, -1, 1, 4, 0, -1]
    targets = [1, 2, 3, 4, 4, 2, -1, 4, -1]
    assert side.are_edges(sources, targets) == [True] * 4 + [False] * 5


def test_pair_unique_pairs_only_unmatched_nodes_with_a_hash_unique_on_both_sides():
    # a0 is matched to b0 already; a1 and b2 share a unique hash; a2's hash is b0's, but b0
    # is taken; a0's hash is b1's, but a0 is taken.
    a_to_b = {0: 0}
    b_to_a = [0, -1, -1]
    hash_a, hash_b = [7, 8, 9], [9, 7, 8]
    _pair_unique([0, 1, 2], [0, 1, 2], hash_a, hash_b, a_to_b, b_to_a, _pairing(a_to_b, b_to_a))
    assert a_to_b == {0: 0, 1: 2}
    assert b_to_a == [0, -1, 1]


def test_pair_unique_leaves_hashes_that_recur():
    a_to_b: dict = {}
    b_to_a = [-1, -1, -1]
    _pair_unique([0, 1], [0, 1, 2], [5, 6], [5, 5, 6], a_to_b, b_to_a, _pairing(a_to_b, b_to_a))
    assert a_to_b == {1: 2}
    a_to_b, b_to_a = {}, [-1, -1]
    _pair_unique([0, 1, 2], [0, 1], [5, 5, 6], [5, 6], a_to_b, b_to_a, _pairing(a_to_b, b_to_a))
    assert a_to_b == {2: 1}


def _sides(a: GraphModel, b: GraphModel) -> tuple[Side, Side]:
    labeler = Labeler(shared_param_keys(a, b, frozenset()), frozenset())
    tables, coarse = [{} for _ in range(WL_ROUNDS)], [{} for _ in range(WL_ROUNDS)]
    return prepare(a, labeler, tables, coarse), prepare(b, labeler, tables, coarse)


def _graph(nodes: list[Node], edges: list[tuple[int, int]]) -> GraphModel:
    return GraphModel(nodes, [(nodes[s].id, nodes[d].id) for s, d in edges])


def test_propagate_pairs_an_open_child_of_a_matched_pair_by_coarse_label():
    # x -> k in both; k's grid changed, so only kind and name pair it. x has no parents: the
    # parents' side has nothing open, and the children's side must still be looked at.
    a = _graph([kernel(0, "x"), kernel(1, "k")], [(0, 1)])
    b = _graph([kernel(0, "x"), kernel(1, "k", grid=(8, 1, 1))], [(0, 1)])
    side_a, side_b = _sides(a, b)
    a_to_b: dict = {0: 0}
    b_to_a = [0, -1]
    _propagate(side_a, side_b, a_to_b, b_to_a, _pairing(a_to_b, b_to_a))
    assert a_to_b == {0: 0, 1: 1}


def test_propagate_never_takes_a_matched_node():
    # A: x -> k2 (k2 open); B: x -> k0 (k0 matched to A's k0) and x -> z (open, another name).
    a = _graph([kernel(0, "k"), kernel(1, "x"), kernel(2, "k")], [(1, 2)])
    b = _graph([kernel(0, "k"), kernel(1, "x"), kernel(2, "z")], [(1, 0), (1, 2)])
    side_a, side_b = _sides(a, b)
    a_to_b: dict = {0: 0, 1: 1}
    b_to_a = [0, 1, -1]
    _propagate(side_a, side_b, a_to_b, b_to_a, _pairing(a_to_b, b_to_a))
    assert a_to_b == {0: 0, 1: 1}


def test_labels_of_unhashable_parameter_values_still_tell_nodes_apart():
    # Parameters are hashable by convention; a list (JSON model written by hand) falls back
    # to its repr.
    labeler = Labeler({"kernel": ("grid",)}, frozenset())
    nodes = [kernel(0, "k", grid=[1, 2]), kernel(1, "k", grid=[1, 3]), kernel(2, "k", grid=[1, 2])]
    model = GraphModel(nodes, [])
    fine, coarse = labeler.labels(model)
    assert fine[0] == fine[2] != fine[1]
    assert all(isinstance(x, int) for x in fine)
    assert coarse == [coarse[0]] * 3


def test_labels_use_the_name_as_written_not_the_demangled_one():
    # A demangled name is there only where the machine that read the file had a demangler
    # (c++filt): the same graph saved on a machine with one and read on a machine without
    # came out 16 added, 16 removed (gpt_decode). Names are matched as written.
    labeler = Labeler({}, frozenset())
    model = GraphModel(
        [
            Node("a", "kernel", "_Z1fv", {"demangled": "f()"}),
            Node("b", "kernel", "_Z1fv", {}),
            Node("c", "kernel", "_Z1fi", {"demangled": "f()"}),
        ],
        [],
    )
    fine, coarse = labeler.labels(model)
    assert coarse[0] == coarse[1] != coarse[2]
    assert fine[0] == fine[1] != fine[2]


def test_shared_param_keys_are_the_stable_keys_both_graphs_know_per_kind():
    a = GraphModel([kernel(0, "k"), Node("m", "memcpy", None, {"bytes": 4, "direction": "DtoD"})], [])
    b = GraphModel([kernel(0, "k", extra=1), Node("s", "memset", None, {"bytes": 4})], [])
    assert shared_param_keys(a, b, frozenset()) == {"kernel": ("block", "grid", "shared_mem")}
    assert shared_param_keys(a, b, frozenset({"grid"})) == {"kernel": ("block", "shared_mem")}


def test_stats_of_an_empty_graph_are_zero():
    assert GraphStats.of(GraphModel([], [])).to_json() == {
        "nodes": 0, "edges": 0, "levels": 0, "max_width": 0, "critical_path": 0, "kinds": {},
    }


def _common_subsequence(a: list, b: list, pairs: list) -> bool:
    return all(a[i] == b[j] for i, j in pairs) and all(
        i0 < i1 and j0 < j1 for (i0, j0), (i1, j1) in zip(pairs, pairs[1:])
    )


def test_align_cuts_a_long_periodic_stretch_into_pieces():
    # No anchor (two items, every run repeats), more edits than allowed: cut into pieces of at
    # most 400 items, each paired k-th occurrence with k-th.
    a = [i % 2 for i in range(600)]
    b = [1 - x if k % 5 == 0 else x for k, x in enumerate(a)]
    pairs = align(a, b, max_edit_distance=10)
    assert _common_subsequence(a, b, pairs)
    assert len(pairs) == 420
    assert pairs[:4] == [(1, 0), (3, 1), (5, 3), (6, 6)]
    assert pairs[-4:] == [(596, 596), (597, 597), (598, 598), (599, 599)]


def test_align_with_a_spent_budget_still_uses_unique_anchors():
    rng = random.Random(5)
    a = [rng.randrange(4) for _ in range(300)]
    b = list(a)
    for i in rng.sample(range(300), 90):
        b[i] = rng.randrange(4, 8)
    for k in (50, 150, 250):
        a[k] = b[k] = 100 + k  # three items unique on both sides
    pairs = align(a, b, budget=[400])  # Myers gets 20 edits at most
    assert _common_subsequence(a, b, pairs)
    assert {(50, 50), (150, 150), (250, 250)} <= set(pairs)
    assert len(pairs) == 156


def _long_lanes_model(length: int = 6) -> GraphModel:
    """One source feeding three lanes of ``length`` kernels into one sink: the lanes alike but
    for the kernel each ends in, beyond the WL radius from the lane heads."""
    nodes: list[Node] = [kernel(0, "init")]
    edges: list[tuple[str, str]] = []
    tails = []
    for own in ("cupy_exp", "cupy_log", "cupy_sqrt"):
        previous = nodes[0].id
        for step in range(length):
            node = kernel(len(nodes), own if step == length - 1 else "cupy_add")
            nodes.append(node)
            edges.append((previous, node.id))
            previous = node.id
        tails.append(previous)
    sink = kernel(len(nodes), "cupy_multiply")
    nodes.append(sink)
    edges += [(t, sink.id) for t in tails]
    return GraphModel(nodes, edges, source="dot-verbose")


def test_structural_order_places_look_alikes_by_what_lies_beyond_the_hashes_reach():
    # The three lane heads look the same to the canonical order (same labels, same WL hashes:
    # what tells the lanes apart is five steps below them), so the listing decides among them
    # and a shuffled listing moves them. structural_order ranks look-alikes by everything
    # below and above them: with the tables the two sides of a diff share, every listing
    # gives one order, each lane whole (which lane comes first follows the ids the shared
    # table gave the lanes' structures: pinned as computed).
    model = _long_lanes_model()
    assert WL_ROUNDS < 5
    labeler = Labeler(shared_param_keys(model, model, frozenset()), frozenset())
    tables = [{} for _ in range(WL_ROUNDS)]
    coarse_tables = [{} for _ in range(WL_ROUNDS)]
    structural_table: dict = {}
    canonical, structural = set(), set()
    for seed in range(6):
        nodes = list(model.nodes)
        random.Random(seed).shuffle(nodes)
        shuffled = GraphModel(nodes, list(model.edges), source=model.source)
        side = prepare(shuffled, labeler, tables, coarse_tables)
        canonical.add(tuple(_numbers(shuffled, side.order)))
        structural.add(tuple(_numbers(shuffled, structural_order(side, structural_table).order)))
    assert len(canonical) > 1  # the listing does decide the canonical order here
    assert structural == {(0, 13, 14, 15, 16, 17, 18, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 19)}


def _lookalike_model(graph: int, ids: str, edges: str) -> GraphModel:
    """Kernels alike in every field (cupy_add, grid 1), numbered ``ids``; edges "a>b ...";
    listed in order of their topoId as CUDA lists them."""
    nodes = []
    for k, i in enumerate(ids.split()):
        node = kernel(int(i), "cupy_add", grid=(1, 1, 1))
        node.id, node.topo_id = f"graph_{graph}_node_{i}", k
        nodes.append(node)
    return GraphModel(nodes, [tuple(f"graph_{graph}_node_{n}" for n in e.split(">"))
                              for e in edges.split()], source="dot-verbose")


def test_a_renumbered_graph_of_look_alikes_crossing_far_below_is_identical_both_ways():
    # Four look-alike roots that only structure four edges away tells apart (their
    # descendants meet crosswise): below and above hashes agree for them, so node order broke
    # the tie, the matching paired two crosswise, and A -> B came out "different" (2 edges
    # added, 2 removed) while B -> A was identical. B is A renumbered (found by a fuzzer of
    # random sparse graphs, about 1 in 1,000). Refinement past the hashes settles it.
    a = _lookalike_model(1, "2 11 15 19 45 56 77 79 82 97 109 112",
                         "19>79 77>79 56>82 15>97 45>97 56>97 82>109 2>112 11>112 19>112")
    b = _lookalike_model(7, "78 1 99 95 97 89 26 32 58 55 23 108",
                         "1>108 95>55 95>108 55>97 58>108 89>32 99>32 26>32 78>23 99>23")
    for one, other in ((a, b), (b, a)):
        report = diff_models(one, other)
        assert report.identical, (len(report.edges_added), len(report.edges_removed))


def _listed_model(graph: int, ids: list[int], order: list[int], edges: list) -> GraphModel:
    """17 look-alike kernels: node i numbered ids[i], listed in ``order`` (its topoId);
    edges between the i's."""
    nodes = []
    for k, i in enumerate(order):
        node = kernel(ids[i], "k0", grid=(1, 1, 1))
        node.id, node.topo_id = f"graph_{graph}_node_{ids[i]}", k
        nodes.append(node)
    return GraphModel(nodes, [(f"graph_{graph}_node_{ids[a]}", f"graph_{graph}_node_{ids[b]}")
                              for a, b in edges], source="dot-verbose")


def test_the_retry_order_is_kept_only_when_its_best_reading_is_smaller():
    # One edge moved, B renumbered. The first reading was 12 items and B read against A 4;
    # the retry ordering read 8, which beat the first reading, and its own reverse reading
    # (8 again) was then the only one made: the report grew from 4 to 8. Each order is now
    # read both ways before they are weighed. (Found by a fuzzer: 0 of 3,000 such cases
    # larger than before the retry ordering's refinement, 11 smaller.)
    edges = [(0, 10), (0, 15), (1, 11), (2, 6), (2, 7), (2, 10), (4, 12), (5, 15), (6, 10),
             (6, 12), (7, 9), (7, 15), (8, 9)]
    moved = [e for e in edges if e != (0, 10)] + [(5, 11)]
    a = _listed_model(1, list(range(17)),
                      [0, 14, 8, 4, 1, 3, 11, 16, 13, 5, 2, 7, 9, 15, 6, 12, 10], edges)
    b = _listed_model(7, [84, 99, 114, 77, 71, 64, 163, 160, 125, 17, 136, 89, 117, 164, 96,
                          127, 192], [14, 4, 8, 13, 16, 2, 7, 5, 0, 6, 1, 11, 9, 12, 15, 3, 10],
                      moved)
    for one, other in ((a, b), (b, a)):
        report = diff_models(one, other)
        size = len(report.edges_added) + len(report.edges_removed) + len(report.added) \
            + len(report.removed) + len(report.changed)
        assert size <= 4, size


def _small_model(spec: list[tuple[str, int]], edges: list[tuple[int, int]]) -> GraphModel:
    nodes = [kernel(i, name, grid=(grid, 1, 1)) for i, (name, grid) in enumerate(spec)]
    return GraphModel(nodes, [(nodes[a].id, nodes[b].id) for a, b in edges], source="dot-verbose")


# structural_order ranks ready nodes by kind/name, then the shape of their neighbourhood over
# kind/name, then their full label, then its neighbourhood hash, and only then by everything
# below and above. Each graph below is ordered differently if one of the first keys is left
# out (pinned as computed; a change here changes which nodes the alignment pairs).
KEY_ORDER_CASES = {
    # node 1 leads a longer branch than node 3: the shape over names decides before the grids
    # (a kernel whose grid changed keeps its place among its siblings)
    "shape before label": ([("cupy_add", 8), ("cupy_add", 4), ("cupy_add", 8), ("cupy_add", 8)],
                           [(0, 1), (0, 3), (1, 2)], [0, 1, 2, 3]),
    # two leaves alike but for their grids: the labels decide, not the listing
    "label before listing": ([("cupy_add", 4), ("cupy_add", 8), ("cupy_add", 4)],
                             [(0, 1), (0, 2)], [0, 2, 1]),
    # two identical siblings whose children differ in their grids: the neighbourhood hash over
    # full labels decides
    "hash over labels": ([("cupy_add", 4), ("cupy_mul", 8), ("cupy_add", 4), ("cupy_mul", 8),
                          ("cupy_add", 8)], [(0, 1), (0, 3), (1, 2), (3, 4)], [0, 1, 2, 3, 4]),
}


@pytest.mark.parametrize("case", sorted(KEY_ORDER_CASES))
def test_structural_order_keys_in_their_order(case):
    spec, edges, want = KEY_ORDER_CASES[case]
    model = _small_model(spec, edges)
    assert _numbers(model, structural_order(_side(model), {}).order) == want


def _split_chain(n: int, k: int):
    """A chain of n launches of one kernel, and the same with launch k removed and its
    neighbours left unconnected (two chains)."""
    a = chain_model(n, names=("cupy_add",))
    gone = a.nodes[k].id
    b = GraphModel([node for node in a.nodes if node.id != gone],
                   [(s, t) for s, t in a.edges if gone not in (s, t)], source="dot-verbose")
    return a, b, gone


@pytest.mark.parametrize("n", [2, 5, 8, 13, 41])
def test_a_launch_cut_out_of_a_chain_of_one_kernel_is_that_launch_and_nothing_else(n):
    # Every choice of the unmatched launch explains the removal; only the launch that was cut
    # out leaves every other edge kept. The sequence used to leave the last one unmatched and
    # shift the pairs after the cut by one place: one edge reported rewired for nothing.
    # B is two chains, of k and n - 1 - k launches: cutting out launch n - 1 - k of A leaves
    # the same two, so that launch explains it as well (at the ends: either end).
    for k in range(n):
        a, b, gone = _split_chain(n, k)
        want = {gone, a.nodes[n - 1 - k].id}
        diff = diff_models(a, b)
        assert len(diff.removed) == 1 and diff.removed[0] in want
        assert (diff.added, diff.changed, diff.edges_added, diff.edges_removed) == ([], [], [], [])
        back = diff_models(b, a)  # the launch put back: one added, no rewiring
        assert len(back.added) == 1 and back.added[0] in want
        assert (back.removed, back.changed, back.edges_added, back.edges_removed) == ([], [], [], [])


def _random_edit(rng: random.Random):
    """A random graph of look-alike kernels (chains with short jumps) and a copy with a few
    launches cut out and a few new ones hung off it."""
    n = rng.randint(3, 40)
    names = rng.choice([("a",), ("a", "b"), ("a", "a", "b"), ("a", "b", "c")])
    nodes = [kernel(i, rng.choice(names) if rng.random() < 0.3 else names[i % len(names)])
             for i in range(n)]
    edges = set()
    for i in range(1, n):
        if rng.random() < 0.9:
            edges.add((nodes[max(0, i - rng.choice([1, 1, 1, 2, 3]))].id, nodes[i].id))
    a = GraphModel(nodes, sorted(edges), source="dot-verbose")
    gone = {nodes[i].id for i in rng.sample(range(n), rng.randint(1, max(1, n // 6)))}
    keep = [node for node in nodes if node.id not in gone]
    kept_edges = {(s, t) for s, t in edges if s not in gone and t not in gone}
    extra = [kernel(1000 + k, rng.choice(names)) for k in range(rng.randint(0, 3))]
    kept_edges |= {(rng.choice(keep).id, node.id) for node in extra if keep}
    return a, GraphModel(keep + extra, sorted(kept_edges), source="dot-verbose")


def _items(diff) -> int:
    return (len(diff.added) + len(diff.removed) + len(diff.changed) + len(diff.edges_added)
            + len(diff.edges_removed))


def _structure_only(monkeypatch) -> None:
    """Leave out the reading by node number (these edits keep the numbers) and the mirrored
    reading (B against A): the tests that call this look at what the structural steps make
    of A against B alone."""
    from accelgraph_cli.diff import structural

    monkeypatch.setattr(structural, "_by_number", lambda side_a, side_b: None)
    one_way = structural._matched
    monkeypatch.setattr(structural, "_matched",
                        lambda side_a, side_b, labeler, mirror=False:
                        one_way(side_a, side_b, labeler))


def test_moving_holes_never_makes_a_report_larger(monkeypatch):
    # Step 8 must only ever trade a report for a smaller one. (It once read a stale entry of
    # b_to_a and turned a 5-item report into 9.) 300 seeded edits of look-alike graphs,
    # both directions: 50 come out smaller with it, none larger.
    from accelgraph_cli.diff import match as match_module

    _structure_only(monkeypatch)
    rng = random.Random(26)
    cases = [_random_edit(rng) for _ in range(300)]
    with_step = [_items(diff_models(a, b)) + _items(diff_models(b, a)) for a, b in cases]
    monkeypatch.setattr(match_module, "_move_holes", lambda *args: None)
    without = [_items(diff_models(a, b)) + _items(diff_models(b, a)) for a, b in cases]
    assert all(w <= wo for w, wo in zip(with_step, without))
    assert sum(w < wo for w, wo in zip(with_step, without)) >= 40  # the step does something


def test_moving_holes_leaves_graphs_with_doubled_edges_alone(monkeypatch):
    # The report counts each copy of an edge written twice; step 8 counts each edge once, so
    # there it could trade a report for a larger one (4 items became 5 here). It stays out.
    # (Paired by number, the two nodes removed are the whole report: see
    # test_numbered_reading_* below.)
    _structure_only(monkeypatch)
    nodes = [kernel(i) for i in range(7)]
    ids = [node.id for node in nodes]
    a = GraphModel(nodes, [(ids[0], ids[1]), (ids[1], ids[2]), (ids[2], ids[3]), (ids[3], ids[4]),
                           (ids[3], ids[4]), (ids[4], ids[5])], source="dot-verbose")
    b = GraphModel([nodes[i] for i in (0, 2, 3, 4, 6)],
                   [(ids[2], ids[3]), (ids[3], ids[4]), (ids[3], ids[4])], source="dot-verbose")
    assert _items(diff_models(a, b)) == 4


def _twin_children(kind: int) -> GraphModel:
    """One of two child graphs with one digest (the same labels, the same labelled edges) that
    are not the same graph: x -> x -> y, or x -> x and x -> y."""
    nodes = [kernel(i, name) for i, name in enumerate(["x", "x", "x", "y"])]
    edges = [(0, 1), (1, 3)] if kind == 0 else [(0, 1), (2, 3)]
    return GraphModel(nodes, [(nodes[s].id, nodes[d].id) for s, d in edges], source="dot-verbose")


def test_moving_holes_stays_off_child_graph_nodes(monkeypatch):
    # Look-alike child-graph nodes share a digest, not always a graph: moving a hole along
    # them pairs nodes whose child graphs differ, and the report diffs those too. A chain of
    # eight such nodes with the fourth cut out: kept off them, the report is the last node
    # removed and one edge removed; walked along them, it was a node removed and two nodes
    # changed (their child graphs rewired inside), 3 items.
    nodes = [Node(f"graph_0_node_{i}", "graph", None, {}, _twin_children(kind), topo_id=i)
             for i, kind in enumerate([0, 0, 1, 0, 0, 0, 1, 0])]
    ids = [node.id for node in nodes]
    edges = list(zip(ids, ids[1:]))
    a = GraphModel(nodes, edges, source="dot-verbose")
    b = GraphModel(nodes[:3] + nodes[4:], [e for e in edges if ids[3] not in e], source="dot-verbose")
    _structure_only(monkeypatch)
    diff = diff_models(a, b)
    assert diff.changed == [] and diff.added == [] and diff.edges_added == []
    assert _items(diff) == 2


def _labelled(spec, edges) -> GraphModel:
    """Kernels ``(index, name)`` and edges between those indices."""
    nodes = {i: kernel(i, name) for i, name in spec}
    return GraphModel(list(nodes.values()), [(nodes[s].id, nodes[t].id) for s, t in edges],
                      source="dot-verbose")


def _diff_within(a: GraphModel, b: GraphModel, seconds: int = 20):
    """diff_models(a, b), or TimeoutError where it has not returned within ``seconds``."""
    import signal

    def hung(*_):
        raise TimeoutError("diff_models did not return")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        return diff_models(a, b)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_rematching_a_part_pairs_each_waiting_node_once():
    # _rematch_part queued a node that found no place twice (it came back closer to placed
    # nodes), paired it twice, and left its first partner pointing at it; _reseat then
    # swapped two nodes back and forth for ever on this pair of 10- and 11-node graphs.
    a = _labelled([(1, "a"), (2, "b"), (4, "a"), (5, "a"), (6, "b"), (7, "a"), (8, "b"),
                   (9, "a"), (10, "a"), (11, "a")],
                  [(1, 2), (11, 9), (2, 4), (2, 5), (4, 6), (4, 7), (5, 6), (5, 7), (5, 9),
                   (7, 10), (7, 8)])
    b = _labelled([(0, "a"), (1, "a"), (2, "b"), (3, "a"), (4, "a"), (5, "a"), (6, "b"),
                   (7, "a"), (8, "b"), (9, "a"), (10, "a")],
                  [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 4), (2, 5), (3, 4), (4, 6),
                   (4, 7), (5, 6), (5, 7), (5, 9), (7, 10), (7, 8)])
    diff = _diff_within(a, b)
    assert (len(diff.removed), len(diff.added)) == (1, 2)


@pytest.mark.parametrize("a_spec, b_spec", [
    # A with a 2-cycle, B a 3-cycle (generic DOT files may hold cycles)
    ((3, [(1, 0), (1, 2), (2, 0), (2, 1)]), (3, [(0, 2), (2, 1), (1, 0)])),
    # A a DAG (three sources into one sink), B with a cycle
    ((4, [(0, 3), (1, 3), (2, 3)]), (5, [(0, 1), (1, 4), (3, 0), (3, 1), (3, 4), (4, 0), (4, 2)])),
])
def test_reseat_counts_an_edge_kept_only_where_b_has_it_the_same_way_round(a_spec, b_spec):
    # _reseat took one back from a swap's count for an edge whose image B holds reversed
    # (counted by neither end): a swap that gained nothing passed as a gain, and with a cycle
    # such swaps went round for ever (a reviewer's random search; both pairs hung).
    (n_a, edges_a), (n_b, edges_b) = a_spec, b_spec
    a = _labelled([(i, "a") for i in range(n_a)], edges_a)
    b = _labelled([(i, "a") for i in range(n_b)], edges_b)
    for x, y in ((a, b), (b, a)):
        diff = _diff_within(x, y)
        assert len(diff.added) - len(diff.removed) == len(y.nodes) - len(x.nodes)


def test_rematching_parts_keeps_the_matching_one_to_one(monkeypatch):
    # A node _rematch_part could not place at first may be placed after all; pairing it
    # again with the leftovers left its first partner pointing at it. After every part,
    # a_to_b and b_to_a must be inverses of each other. 300 seeded edits, both directions.
    from accelgraph_cli.diff import match as match_module

    real = match_module._rematch_part
    broken = []

    def checked(side_a, side_b, a_to_b, b_to_a, part):
        result = real(side_a, side_b, a_to_b, b_to_a, part)
        stale = [j for j, i in enumerate(b_to_a) if i >= 0 and a_to_b.get(i) != j]
        missing = [i for i, j in a_to_b.items() if b_to_a[j] != i]
        if stale or missing:
            broken.append((stale, missing))
        return result

    monkeypatch.setattr(match_module, "_rematch_part", checked)
    rng = random.Random(27)
    for _ in range(300):
        a, b = _random_edit(rng)
        diff_models(a, b)
        diff_models(b, a)
    assert broken == []
