"""Structural diff of two GraphModels: what changed between two captures of a CUDA graph.

Node ids are not guaranteed to mean anything across captures (``graph_0_node_7`` in one dump
need not be the ``graph_0_node_7`` of the next), so nodes are matched by what they do and
where they sit:

1. **Labels.** Every node gets a *fine* label — kind, kernel name as written, the stable parameters
   both graphs know for that kind (grid, block, bytes, direction... never pointers or handles,
   see ``model.stable_params``), and a digest of its child graph — and a *coarse* label: kind
   and name only. Labels are interned to small ints shared by both graphs.
2. **Canonical order.** Each graph is laid out in a topological order that depends on
   structure, not on node ids or file order: a depth-first Kahn walk (a branch is finished
   before the next starts) with ready nodes sorted by coarse label and by Weisfeiler-Lehman
   hashes over coarse labels (kind/name of the node and of its neighbours, 3 rounds).
   Look-alikes (graphs are full of identical parallel branches) are told apart by where
   their parents were placed, then by how they connect to what is placed already, so
   that a renumbered copy gets an order that corresponds node for node, edges included;
   node order breaks only what ties remain. Parameters stay out of the order on purpose: a
   kernel whose grid changed keeps its place among its siblings.
3. **Alignment of fine labels** over the two sequences (``align``): common prefix and suffix,
   then Myers' O(ND) diff (a longest common subsequence) when a few edits explain the
   difference; otherwise anchors — labels, or runs of labels, unique in both (patience
   diff) — split the stretch and the pieces are aligned the same way, and where no anchor
   exists (periodic graphs) Myers with up to ``MAX_EDIT_DISTANCE`` edits, then cuts at
   proportional positions. All of it within a fixed budget of work. Pairs found here are
   unchanged nodes — except a short run of them with unmatched nodes on both sides, which is
   dropped when aligning the stretch around it by kind and name gives a smaller diff (a
   batch sweep where one node's new grid equals another's old one would otherwise pair those
   two and leave the rest of the chain on the wrong sides of them), and a run of look-alikes
   paired a place off is slid along them until what is left over on the two sides meets in
   one gap (two kernels of a chain of one kernel with new grids are two changed nodes, not a
   node added, one removed and one changed); the diff keeps either only if the whole result,
   edges included, comes out smaller.
4. **Changed nodes.** Inside each gap left by step 3, the remaining nodes are aligned by
   coarse label: same kind and name, different parameters.
5. **Moved nodes.** A node still unmatched whose Weisfeiler-Lehman hash over fine labels
   (radius 3, then 2, then 1) occurs exactly once in each graph is paired with its twin
   (its place in the order moved, its neighbourhood did not); then matching propagates from
   matched pairs to their unmatched parents and children with the same label.
6. **Edges decide ties.** Several alignments are equally long (which of four identical
   "acc" kernels is the new one? which lane of three identical ones continues which?):
   nodes follow their matched parents, then children, onto look-alikes when more of their
   edges line up there (``_follow``, whole passes kept only when they keep more edges); then
   a matched node is moved onto another B node of its kind and name, or swapped with one,
   whenever that keeps more of its edges (``_reseat``). Last, what those single moves
   cannot mend — look-alike modules paired half with one module and half with another,
   where each move breaks as many edges as it mends — is matched again part by part
   (``_rematch``): the nodes within two edges of an edge not kept, each connected piece
   onto its partners and the unmatched B nodes next to them, inwards from the matched
   nodes around it (most constrained node first, onto the look-alike that keeps most of
   its edges, then whose neighbourhood looks most like its own); a piece's new matching is
   kept only if its own diff comes out smaller. Where matching from the roots down finds
   nothing smaller, the piece is matched from the sinks up (the join of a fork/join dropped
   above a chain of copies of itself is left over only that way).
7. **Edges changed around a node.** A node still unmatched whose fine label is left over
   exactly once on each side is paired with its twin when fewer of the pair's edges come out
   rewired than the two nodes would count as removed and added (an edge removed next to a
   node moves it in the order and changes its hashes; a look-alike that moved to another
   branch keeps none of its edges and stays removed and added), or when, paired, its
   neighbours re-seated around it (``_reseat``) leave fewer nodes unmatched and edges
   rewired in all (look-alike neighbours paired crosswise while it was unmatched).
8. **Holes move along chains.** A node still unmatched moves along its chain of look-alikes
   (to its lone parent or lone child of the same fine label, no child graphs, 256 links at
   most each way): each neighbour it passes goes unmatched and it takes that neighbour's
   partner, and it stops where the fewest edges around the nodes it passed are rewired (a
   launch cut out of a chain of one kernel is that launch, not the last one with every pair
   after the cut shifted by a place and an edge rewired). Not where an edge is written twice.
   Where a hole moved, matched nodes of each side are then re-seated (``_reseat``, from A and
   from B) onto look-alikes beside it that keep more edges: a launch added as a leaf off a
   chain of its kernel takes the hole's place, not the chain node after the fork. That
   weighs A's edges alone, so it is kept only where the whole report comes out no larger.
9. **The rest** is added (in B only) or removed (in A only).

When the result is not identical although both graphs hold the same labels and as many
edges — typically a renumbered dump where node order broke a tie the other way — the
order is rebuilt with ties broken by structure (Merkle hashes of everything below and above
a node) and the smaller of the two diffs is kept. Then, for any result that is not identical,
the nodes both graphs give the same number (``graph_5_node_3`` and ``graph_9_node_3``: two
captures of the same code number alike) with the same kind and name are paired, the rest left
unmatched; that report is kept where it is no larger. Structure alone can cross look-alike
lanes of a fork/join once an edge between them is dropped, and on a tie the numbers say which
of two look-alike branches changed.

Everything is O(V + E) or O(V log V) except Myers inside gaps, which is bounded.

Detail missing on one side is not a change: a basic dump has no grid/block/bytes, a verbose
dump has them, and the same graph dumped both ways diffs as identical. Only parameters that
both nodes of a pair carry (with a value other than None) are compared, and only parameter
keys that both graphs use for a kind take part in matching. ``ignore`` removes parameter names
from both matching and the report (e.g. ``{"grid"}`` when sweeping sizes).

The code, by job: ``labels`` (step 1 and which parameters count), ``order`` (Weisfeiler-Lehman
hashes and the canonical order of step 2), ``side`` (one graph prepared: adjacency, labels,
hashes, order), ``align`` (the sequence alignment of steps 3 and 4), ``match`` (steps 3 to 8),
``types`` (GraphDiff and its JSON form); this module runs them and writes the report (step 9).
"""

from __future__ import annotations

from collections import Counter
from itertools import compress, repeat
from operator import is_not, ne, not_, or_

from ..gcpause import cyclic_gc_paused
from ..model.graph_model import GraphModel
from .align import ALIGN_WORK_LIMIT, MAX_EDIT_DISTANCE, align
from .labels import Labeler, param_changes, shared_param_keys
from .match import match
from .side import WL_ROUNDS, CoarseShapes, Side, prepare, structural_order
from .types import DIFF_JSON_FORMAT, DIFF_JSON_VERSION, GraphDiff, GraphStats, NodeChange

__all__ = [
    "ALIGN_WORK_LIMIT",
    "DIFF_JSON_FORMAT",
    "DIFF_JSON_VERSION",
    "MAX_EDIT_DISTANCE",
    "WL_ROUNDS",
    "GraphDiff",
    "GraphStats",
    "NodeChange",
    "align",
    "diff_models",
    "param_changes",
]


def diff_models(a: GraphModel, b: GraphModel,
                ignore: set[str] | frozenset | str | None = frozenset()) -> GraphDiff:
    """Match the nodes of ``a`` and ``b`` structurally and report what changed from a to b.

    Nodes are matched by signature (kind, kernel name as written, stable parameters — never pointers
    or handles) and by position (neighbourhood hashing and an alignment over a canonical
    topological order; see this module's docstring). Matched pairs whose parameters differ are
    "changed" (param: old -> new); the rest are added/removed. Child graphs of matched
    child-graph nodes are diffed recursively (``NodeChange.child``).

    Detail missing on one side is not a change: only parameters present (not None) on both
    nodes of a pair are compared, so a basic dump (no grid/block/bytes) and a verbose dump
    of the same graph diff as identical; so do renumbered or reordered dumps. ``ignore``
    names parameters left out of matching and of the report (``{"grid"}``, ``{"bytes"}``...;
    one name may be given as a string, and None is none).

    Cost: O((V + E) log V) for two graphs of V nodes and E edges, plus a bounded alignment
    (``MAX_EDIT_DISTANCE``); two 10,000-node graphs take a fraction of a second.
    """
    # one name is one name ("grid", not {"g", "r", "i", "d"}); None is none
    ignore = frozenset([ignore] if isinstance(ignore, str) else ignore or ())
    # The diff allocates a few small tuples and lists per node and frees none of them until
    # it returns; the cyclic garbage collector would rescan that growing heap again and
    # again (a third of the time at 50,000 nodes) for cycles that cannot exist here.
    with cyclic_gc_paused():
        labeler = Labeler(shared_param_keys(a, b, ignore), ignore)
        return _diff_graphs(a, b, labeler)


def _diff_graphs(a: GraphModel, b: GraphModel, labeler: Labeler) -> GraphDiff:
    tables: list[dict] = [{} for _ in range(WL_ROUNDS)]
    shapes = CoarseShapes([{} for _ in range(WL_ROUNDS)])
    side_a = prepare(a, labeler, tables, shapes)
    side_b = prepare(b, labeler, tables, shapes)
    result = _matched(side_a, side_b, labeler)
    if not result.identical and len(a.edges) == len(b.edges) and Counter(side_a.fine) == Counter(side_b.fine):
        # Same nodes, same number of edges, yet different: maybe only a tie in the order
        # went the other way (a renumbered dump). Order by structure and keep the smaller diff.
        table: dict = {}
        ordered_a, ordered_b = structural_order(side_a, table), structural_order(side_b, table)
        retry = _matched(ordered_a, ordered_b, labeler)
        # each order at its best (read both ways) before they are weighed: a retry smaller
        # than the first reading but larger than that reading read B against A would win,
        # and the report come out larger than before the retry
        retry = _either_way(retry, ordered_a, ordered_b, labeler)
        result = _either_way(result, side_a, side_b, labeler)
        if _size(retry) < _size(result):  # (the readings below start from the order that won)
            result, side_a, side_b = retry, ordered_a, ordered_b
    else:
        result = _either_way(result, side_a, side_b, labeler)
    if not result.identical:
        # Two captures of the same code number their nodes alike: pairing nodes by number
        # (where kind and name agree) is one more reading, and the smaller report wins.
        # Structure alone can cross look-alike lanes once an edge is dropped between them.
        # On a tie the numbers decide which of two look-alike branches changed: the user's.
        by_number = _by_number(side_a, side_b)
        if by_number and _may_differ(by_number, result, side_a, side_b):
            numbered = _report(side_a, side_b, by_number, False, labeler)
            if _size(numbered) <= _size(result):
                result = numbered
    return result


def _either_way(result: GraphDiff, side_a: Side, side_b: Side, labeler: Labeler) -> GraphDiff:
    """``result`` (A read against B), or B read against A where that report is smaller:
    swapping the two graphs then swaps what was added and removed rather than finding
    another, larger reading one way (a tie keeps this way's). A report of changed parameters
    alone pairs every node already: no reading is smaller, and none is made."""
    if result.added or result.removed or result.edges_added or result.edges_removed:
        mirrored = _matched(side_a, side_b, labeler, mirror=True)
        if _size(mirrored) < _size(result):
            return mirrored
    return result


def _may_differ(by_number: dict[int, int], result: GraphDiff, side_a: Side, side_b: Side) -> bool:
    """Whether pairing by number can give a report no larger than ``result`` and not the
    same: it leaves no more nodes unmatched than ``result`` has items, and its pairs are not
    ``result``'s own. (A renumbered dump pairs few nodes by number; a grid sweep pairs them
    as the structure did: neither needs a second report.)"""
    nodes_a, nodes_b = side_a.model.nodes, side_b.model.nodes
    if len(nodes_a) + len(nodes_b) - 2 * len(by_number) > _size(result):
        return False
    matches = result.matches
    if len(matches) != len(by_number):
        return True
    get = matches.get
    return any(get(nodes_a[i].id) != nodes_b[j].id for i, j in by_number.items())


def _number(node_id: str) -> str:
    """A node's id without the graph's own number: ``graph_38_node_3`` -> ``node_3`` (CUDA
    numbers the graphs of a process in turn, and the nodes of each graph from 0)."""
    if node_id.startswith("graph_"):
        cut = node_id.find("_node_")
        if cut > 0:
            return node_id[cut + 1:]
    return node_id


def _by_number(side_a: Side, side_b: Side) -> dict[int, int] | None:
    """Node index of A -> of B for the nodes both graphs give the same number (see
    :func:`_number`) with the same kind and name; None where a number repeats in either."""
    numbers_a = [_number(node.id) for node in side_a.model.nodes]
    numbered = {_number(node.id): j for j, node in enumerate(side_b.model.nodes)}
    # unique on both sides: a file of several top-level graphs holds a node_0 in each, and
    # two of A's nodes paired with one of B's is no matching
    if len(numbered) != len(side_b.model.nodes) or len(set(numbers_a)) != len(numbers_a):
        return None
    coarse_a, coarse_b = side_a.coarse, side_b.coarse
    a_to_b = {}
    for i, number in enumerate(numbers_a):
        j = numbered.get(number)
        if j is not None and coarse_a[i] == coarse_b[j]:
            a_to_b[i] = j
    return a_to_b


def _matched(side_a: Side, side_b: Side, labeler: Labeler, mirror: bool = False) -> GraphDiff:
    """Match two prepared sides (steps 3 to 8) and report A to B; ``mirror``: match B
    against A, and report that matching from A to B."""
    dropped: list = []
    result = _reseated_or_not(side_a, side_b, labeler, dropped, mirror)
    if dropped:
        # Step 3 dropped short runs of unchanged pairs or slid runs along look-alikes,
        # weighing nodes alone: keep that only if the whole diff, edges included, is smaller.
        kept = _reseated_or_not(side_a, side_b, labeler, None, mirror)
        if _size(kept) <= _size(result):
            result = kept
    return result


def _reseated_or_not(side_a: Side, side_b: Side, labeler: Labeler, dropped: list | None,
                     mirror: bool = False) -> GraphDiff:
    """The report of a matching with nodes re-seated beside moved holes (step 8), unless the
    matching without that re-seating reports no more: the re-seat weighs A's edges alone."""
    reseated: list = []
    result = _report(side_a, side_b, *_matching(side_a, side_b, dropped, reseated, mirror),
                     labeler)
    if reseated:
        plain = _report(side_a, side_b,
                        *_matching(side_a, side_b, None if dropped is None else [], None, mirror),
                        labeler)
        if _size(plain) <= _size(result):
            result = plain
    return result


def _matching(side_a: Side, side_b: Side, dropped: list | None, reseated: list | None,
              mirror: bool) -> tuple[dict[int, int] | None, bool]:
    """``match`` of A against B, or (``mirror``) of B against A with its pairs turned round:
    node index of A -> node index of B either way (None: the k-th of each order, as match
    says), and whether every edge is kept."""
    if not mirror:
        return match(side_a, side_b, dropped, reseated)
    b_to_a, edges_kept = match(side_b, side_a, dropped, reseated)
    return (None if b_to_a is None else {i: j for j, i in b_to_a.items()}), edges_kept


def _size(diff: GraphDiff) -> int:
    return (
        len(diff.added)
        + len(diff.removed)
        + len(diff.changed)
        + len(diff.edges_added)
        + len(diff.edges_removed)
    )


def _report(side_a: Side, side_b: Side, a_to_b: dict | None, edges_kept: bool, labeler: Labeler) -> GraphDiff:
    """Turn a matching (node index of A -> of B; None: the k-th node of A's canonical order
    with the k-th of B's, every node) into the GraphDiff users read; ``edges_kept``: the
    matching is known to keep every edge both ways (no rewired edge to look for)."""
    a, b = side_a.model, side_b.model
    nodes_a, nodes_b = a.nodes, b.nodes
    ids_a, ids_b = list(side_a.position), list(side_b.position)  # ids in node order
    topological = a.topological_indices()
    if a_to_b is None:
        partners = list(map(side_b.order.__getitem__, map(side_a.rank.__getitem__, topological)))
    else:
        partners = list(map(a_to_b.get, topological))
    if a_to_b is None or len(a_to_b) == len(nodes_a):
        removed: list[str] = []
        pairs_a, pairs_b = topological, partners
    else:
        matched = list(map(is_not, partners, repeat(None)))
        removed = list(map(ids_a.__getitem__, compress(topological, map(not_, matched))))
        pairs_a, pairs_b = list(compress(topological, matched)), list(compress(partners, matched))
    matches = dict(zip(map(ids_a.__getitem__, pairs_a), map(ids_b.__getitem__, pairs_b)))
    # Pairs to look at, in A's topological order: different labels (then some parameter
    # both carry differs), or child graphs to diff. Equal labels and no child: unchanged.
    fine_a, fine_b = side_a.fine, side_b.fine
    labels_a = list(map(fine_a.__getitem__, pairs_a))
    look = list(map(ne, labels_a, map(fine_b.__getitem__, pairs_b)))
    if labeler.with_child:
        look = list(map(or_, look, map(labeler.with_child.__contains__, labels_a)))
    changed: list[NodeChange] = []
    for i, j in compress(zip(pairs_a, pairs_b), look):
        node_a, node_b = nodes_a[i], nodes_b[j]
        params = {} if fine_a[i] == fine_b[j] else param_changes(node_a, node_b, labeler.ignore)
        child = None
        if node_a.child is not None and node_b.child is not None:
            child_diff = _diff_graphs(node_a.child, node_b.child, labeler)
            child = None if child_diff.identical else child_diff
        elif node_a.child is not node_b.child:  # one side has no graph inside (a damaged dump)
            params["child_graph"] = (_inside(node_a), _inside(node_b))
        if params or child is not None:
            changed.append(NodeChange(node_a.id, node_b.id, node_a.kind, node_a.display_name, params, child))
    added: list[str] = []
    edges_added: list[tuple[str, str]] = []
    edges_removed: list[tuple[str, str]] = []
    if len(matches) < len(nodes_b) or not edges_kept:
        b_to_a = [-1] * len(nodes_b)
        for i, j in zip(pairs_a, pairs_b):
            b_to_a[j] = i
        if len(matches) < len(nodes_b):
            added = [ids_b[j] for j in b.topological_indices() if b_to_a[j] < 0]
        if not edges_kept:
            a_to_b_list = list(map(a_to_b.get, range(len(nodes_a)), repeat(-1)))
            edges_added = _in_order(_rewired(side_b, side_a, b_to_a, a_to_b_list), b)
            edges_removed = _in_order(_rewired(side_a, side_b, a_to_b_list, b_to_a), a)
    return GraphDiff(
        a=a,
        b=b,
        ignore=labeler.ignore,
        matches=matches,
        changed=changed,
        added=added,
        removed=removed,
        edges_added=edges_added,
        edges_removed=edges_removed,
        stats_a=GraphStats.of(a, side_a.kind_counts(labeler)),
        stats_b=GraphStats.of(b, side_b.kind_counts(labeler)),
    )


def _inside(node) -> str:
    if node.child is None:
        return "none"
    count = len(node.child.nodes)
    return f"{count} node{'' if count == 1 else 's'}"


def _rewired(side: Side, other: Side, image: list[int], back: list[int]) -> list[tuple[int, int]]:
    """Edges of ``side`` (node indices) between matched nodes whose image is no edge of
    ``other``; ``image[i]`` is node i's partner in ``other`` (-1: none), ``back`` the same
    the other way. One entry per edge, duplicates included, in no particular order; an edge
    written n times whose image is written m < n times gives its n - m extra copies."""
    near = side.near
    if near.down_many:  # the edges in the model's order
        sources, targets = side.edges
        ends, ends_to = list(map(image.__getitem__, sources)), list(map(image.__getitem__, targets))
    else:
        # Each node's lone child, in node order (no child: -1, no edge): in a shuffled copy
        # the model's edge order would jump about the image list at every edge.
        ends, ends_to = image, list(map([*image, -1].__getitem__, near.down_one))
    # Only the few edges that are missing go into a set, not all of them, and no tuple is
    # made for an edge that is kept (a list of 100,000 image tuples took 12 ms more).
    missing = set(compress(zip(ends, ends_to), map(not_, other.are_edges(ends, ends_to))))
    rewired = []
    for t, u in missing:
        if t >= 0 and u >= 0:
            s, d = back[t], back[u]
            rewired += [(s, d)] * side.doubled.get((s, d), 1)
    for (s, d), n in side.doubled.items():
        t, u = image[s], image[d]
        if t >= 0 and u >= 0 and (t, u) not in missing:
            rewired += [(s, d)] * (n - min(n, other.doubled.get((t, u), 1)))
    return rewired


def _in_order(edges: list[tuple[int, int]], model: GraphModel) -> list[tuple[str, str]]:
    """Edges (node indices) as ids, sorted by the topological position of their ends, so
    listings read in order."""
    nodes = model.nodes
    if len(edges) > 1:
        rank = [0] * len(nodes)
        for r, i in enumerate(model.topological_indices()):
            rank[i] = r
        edges = sorted(edges, key=lambda e: (rank[e[0]], rank[e[1]]))
    return [(nodes[s].id, nodes[d].id) for s, d in edges]
