"""Matching: which node of A is which node of B (steps 3 to 8 of ``structural``'s docstring)."""

from __future__ import annotations

from collections import Counter, defaultdict
from heapq import heapify, heappop, heappush
from itertools import compress, count, filterfalse, pairwise, repeat, starmap
from operator import add, and_, gt, not_, sub

from .align import ALIGN_WORK_LIMIT, align
from .side import Side


def match(side_a: Side, side_b: Side, dropped: list | None = None,
          reseated: list | None = None) -> tuple[dict[int, int] | None, bool]:
    """Node index of A -> node index of B for every matched pair (steps 3 to 8 of ``structural``),
    and whether every edge of both graphs is known to be kept (True only when every node was
    matched in sequence and each edge's image was found on the other side: no rewiring).
    None instead of the dict when both hold: the k-th node of A's canonical order is the k-th
    of B's (the report reads the pairs off the orders; no dict of every node is built).

    ``dropped``: a list to let step 3 drop short stray runs of unchanged pairs (see
    :func:`_drop_stray_runs`) or slide runs along look-alikes (:func:`_slide_runs`), and to
    append the pairs it dropped or moved to; None keeps the alignment as it is.

    ``reseated``: a list to let step 8 re-seat nodes beside the holes it moved
    (:func:`_reseat_beside_holes`), and to append True to when that changed the matching;
    None leaves that out. The caller keeps it only where the report comes out no larger."""
    order_a, order_b = side_a.order, side_b.order

    # Step 3: unchanged nodes, by alignment of fine labels over the canonical orders.
    fine_a = list(map(side_a.fine.__getitem__, order_a))
    fine_b = list(map(side_b.fine.__getitem__, order_b))
    budget = [ALIGN_WORK_LIMIT]  # one budget for every alignment of this diff
    aligned = align(fine_a, fine_b, budget=budget)
    if len(aligned) == len(order_a) == len(order_b):
        # Every node matched in sequence: the k-th of A's order with the k-th of B's.
        edges = len(side_a.model.edges)
        both = list(map(and_, side_a.follows, side_b.follows))
        if edges == len(side_b.model.edges) == _kept_in_sequence(side_a, side_b, both):
            # Nothing to find. Whether B's edges are all images of A's tells the report
            # whether it must look for rewired edges; so does an edge written twice, which
            # counts as kept each time its image is found.
            if (_kept_in_sequence(side_b, side_a, both) == edges
                    and not side_a.doubled and not side_b.doubled):
                return None, True
            return dict(zip(order_a, order_b)), False
    a_to_b = {}
    b_to_a = [-1] * len(order_b)

    def pair(i: int, j: int) -> None:
        a_to_b[i] = j
        b_to_a[j] = i

    if dropped is not None and len(aligned) < min(len(order_a), len(order_b)):
        aligned = _drop_stray_runs(aligned, side_a, side_b, budget, dropped)
        aligned = _slide_runs(aligned, fine_a, fine_b, side_a, side_b, budget, dropped)
    for x, y in aligned:
        pair(order_a[x], order_b[y])

    # Step 4: changed nodes, by coarse label inside each gap the alignment left. What stays
    # unmatched is collected here, in canonical order, for step 5.
    left_a: list[int] = []
    left_b: list[int] = []
    bounds = [(-1, -1)] + aligned + [(len(order_a), len(order_b))]
    for (x0, y0), (x1, y1) in pairwise(bounds):
        if x1 - x0 > 1 and y1 - y0 > 1:
            gap_a = order_a[x0 + 1 : x1]
            gap_b = order_b[y0 + 1 : y1]
            coarse_a = [side_a.coarse[i] for i in gap_a]
            coarse_b = [side_b.coarse[j] for j in gap_b]
            for x, y in align(coarse_a, coarse_b, budget=budget):
                pair(gap_a[x], gap_b[y])
            # Reordered inside the gap: same kind and name, out of sequence.
            open_a = [i for i in gap_a if i not in a_to_b]
            open_b = [j for j in gap_b if b_to_a[j] < 0]
            _pair_by_key(open_a, open_b, side_a.coarse, side_b.coarse, pair)
            left_a += [i for i in open_a if i not in a_to_b]
            left_b += [j for j in open_b if b_to_a[j] < 0]
        elif x1 - x0 > 1:
            left_a += order_a[x0 + 1 : x1]
        elif y1 - y0 > 1:
            left_b += order_b[y0 + 1 : y1]

    # Step 5: moved nodes, then propagation to their neighbourhoods. Only nodes still
    # unmatched can be paired: the rest of the order is not read again.
    if left_a and left_b:
        for r in range(len(side_a.hashes) - 1, 0, -1):
            _pair_unique(left_a, left_b, side_a.hashes[r], side_b.hashes[r], a_to_b, b_to_a, pair)
        _propagate(side_a, side_b, a_to_b, b_to_a, pair)

    # Step 6: among equally good alignments the sequence picked one; prefer keeping edges:
    # look-alikes follow their matched neighbours (parents, then children), then single
    # nodes are re-seated.
    troubled = _follow(side_a, side_b, a_to_b, b_to_a)
    _reseat(side_a, side_b, a_to_b, b_to_a, troubled)
    for _ in range(_REMATCH_ROUNDS):
        if not _rematch(side_a, side_b, a_to_b, b_to_a, troubled):
            break
    if len(a_to_b) < len(order_a) and len(a_to_b) < len(order_b):
        _propagate(side_a, side_b, a_to_b, b_to_a, pair)
        # Step 7: a node left over on both sides whose edges changed.
        if _pair_leftovers(side_a, side_b, a_to_b, b_to_a, pair):
            _propagate(side_a, side_b, a_to_b, b_to_a, pair)
    if len(a_to_b) != len(order_a) or len(a_to_b) != len(order_b):
        if _move_holes(side_a, side_b, a_to_b) and reseated is not None:
            before = dict(a_to_b)
            _reseat_beside_holes(side_a, side_b, a_to_b)
            if a_to_b != before:
                reseated.append(True)
    return a_to_b, False


def _reseat_beside_holes(side_a: Side, side_b: Side, a_to_b: dict) -> None:
    """After holes moved (step 8): re-seat matched nodes of each side onto the other's
    unmatched look-alikes where that keeps more edges (``_reseat``, from A, then from B).

    A hole that moved along a chain can end beside a look-alike that fits its place better:
    a launch added as a leaf off a chain of its own kernel leaves the hole at the chain node
    after the fork, and the leaf holds that node's partner, keeping its one edge. From B's
    side, a leaf matched to a chain node keeps fewer edges than the chain node would."""
    b_to_a = [-1] * len(side_b.fine)
    for i, j in a_to_b.items():
        b_to_a[j] = i
    troubled: set[int] = set()
    _kept_edges(side_a, side_b, a_to_b, troubled)
    _reseat(side_a, side_b, a_to_b, b_to_a, troubled)
    b_to_a_map = {j: i for j, i in enumerate(b_to_a) if i >= 0}
    a_to_b_list = [-1] * len(side_a.fine)
    for i, j in a_to_b.items():
        a_to_b_list[i] = j
    troubled = set()
    _kept_edges(side_b, side_a, b_to_a_map, troubled)
    _reseat(side_b, side_a, b_to_a_map, a_to_b_list, troubled)
    a_to_b.clear()
    a_to_b.update({i: j for j, i in b_to_a_map.items()})


# Steps a hole may take along chains of look-alikes: in one direction (a cycle of one kernel
# in a generic DOT file has no end to stop at), and in all for one matching (each step looks
# at the edges of three nodes), so a huge graph with many holes stays linear. A cut further
# than _HOLE_WALK launches from where the sequence left the hole stays reported as before.
_HOLE_WALK = 256
_HOLE_STEPS = 50_000


def _move_holes(side_a: Side, side_b: Side, a_to_b: dict) -> bool:
    """Step 8: move each node left unmatched (a hole) along its chain of look-alikes to where
    the fewest edges are rewired.

    In a chain of launches of one kernel with one launch removed, every choice of the A node
    that goes unmatched explains the removal; the sequence leaves the last one, which shifts
    every pair after the real hole by one place and rewires the edge across it. A hole moves
    one link at a time (to its only parent, or only child, with the same fine label): that
    neighbour goes unmatched and the hole takes its partner, which keeps every pair changed
    or unchanged as it was. The neighbour may have other links: every edge of the two nodes
    and of the partner is counted before and after each move. Each hole stops where the
    rewired edges around the nodes it passed were fewest, if fewer than where it started.
    Holes of B move the same way. Not where an edge is written twice (the report counts each
    copy, this step each edge once) and not for child-graph nodes (look-alike parents, whose
    child graphs the report diffs again, may differ there). Returns whether a hole moved."""
    if side_a.doubled or side_b.doubled:
        return False
    budget = [_HOLE_STEPS]
    # B's side as a dict like a_to_b (b_to_a is a list with -1 for none), so one walk serves
    # both directions; built from a_to_b, the map the earlier steps are checked to keep
    # (test_rematching_parts_keeps_the_matching_one_to_one).
    b_to_a_map = {j: i for i, j in a_to_b.items()}
    moved = False
    for side_x, side_y, x_to_y, y_to_x in ((side_a, side_b, a_to_b, b_to_a_map),
                                           (side_b, side_a, b_to_a_map, a_to_b)):
        for hole in [i for i in range(len(side_x.model.nodes)) if i not in x_to_y]:
            if budget[0] <= 0:
                break
            for links in (side_x.parents, side_x.children):
                if hole in x_to_y:  # moved already: a neighbour took its place
                    break
                moved |= _move_hole(side_x, side_y, x_to_y, y_to_x, hole, links, budget)
    return moved


def _move_hole(side_x: Side, side_y: Side, x_to_y: dict, y_to_x: dict, hole: int,
               links: list[list[int]], budget: list) -> bool:
    """Walk ``hole`` along ``links`` (parents or children of X) as :func:`_move_holes` says,
    then put it where the walk found the fewest rewired edges; whether it moved."""
    fine = side_x.fine
    # A child-graph node stays put. Its look-alikes hold child graphs too (the fine label
    # has the digest), so the walk below needs no check of its own.
    if side_x.model.nodes[hole].child is not None:
        return False
    moves = []  # (new hole, partner it gave up)
    total = best = 0
    best_at = 0
    while budget[0] > 0 and len(moves) < _HOLE_WALK:
        nxt = links[hole]
        if len(nxt) != 1:
            break
        p = nxt[0]
        if fine[p] != fine[hole] or p not in x_to_y:
            break
        budget[0] -= 1
        y = x_to_y[p]
        touched = (hole, p)
        before = _rewired_near(side_x, side_y, x_to_y, y_to_x, touched, y)
        del x_to_y[p]
        x_to_y[hole] = y
        y_to_x[y] = hole
        total += _rewired_near(side_x, side_y, x_to_y, y_to_x, touched, y) - before
        moves.append((p, y))
        hole = p
        if total < best:
            best, best_at = total, len(moves)
    for p, y in reversed(moves[best_at:]):  # back to where the edges rewired were fewest
        hole_then = y_to_x[y]
        del x_to_y[hole_then]
        x_to_y[p] = y
        y_to_x[y] = p
    return best_at > 0


def _rewired_near(side_x: Side, side_y: Side, x_to_y: dict, y_to_x: dict, nodes: tuple,
                  y: int) -> int:
    """Rewired edges (between matched nodes, with no image on the other side) among the edges
    of X touching ``nodes`` and the edges of Y touching ``y``. (Step 8 passes a hole and its
    neighbour, one of them unmatched: the edge between them, seen from both, counts 0. A
    self-loop, which no CUDA graph has but a hand-written DOT file may, counts twice: a move
    next to one can trade a report for another of the same size.)"""
    edges_y = side_y.edge_set
    edges_x = side_x.edge_set
    lost = 0
    for u in nodes:
        for s, t in [*((q, u) for q in side_x.parents[u]), *((u, q) for q in side_x.children[u])]:
            if s in x_to_y and t in x_to_y and (x_to_y[s], x_to_y[t]) not in edges_y:
                lost += 1
    for s, t in [*((q, y) for q in side_y.parents[y]), *((y, q) for q in side_y.children[y])]:
        if s in y_to_x and t in y_to_x and (y_to_x[s], y_to_x[t]) not in edges_x:
            lost += 1
    return lost


def _pair_leftovers(side_a: Side, side_b: Side, a_to_b: dict, b_to_a: list, pair) -> bool:
    """Pair a node left unmatched in A with the one node of its fine label left unmatched in
    B when that makes the diff smaller: fewer of the pair's edges rewired than the two nodes
    it would otherwise count (one removed, one added). Returns whether it paired any.

    What is left here fell out of sequence and its neighbourhood changed (an edge removed
    between it and a node that stayed, so the canonical order placed it elsewhere and its
    hashes differ): it is the same node with different edges. A look-alike that moved to
    another branch keeps none of its edges and stays removed and added."""
    fine_a, fine_b = side_a.fine, side_b.fine
    left_a: dict = defaultdict(list)
    for i in filterfalse(a_to_b.__contains__, range(len(fine_a))):
        left_a[fine_a[i]].append(i)
    left_b: dict = defaultdict(list)
    for j in compress(count(), map((-1).__eq__, b_to_a)):
        if fine_b[j] in left_a:
            left_b[fine_b[j]].append(j)
    paired = False
    tries = _LEFTOVER_RESEATS
    for label, js in left_b.items():
        candidates = left_a[label]
        if len(candidates) == 1 and len(js) == 1:
            i, j = candidates[0], js[0]
            if i in a_to_b or b_to_a[j] >= 0:
                continue  # a re-seat accepted for another pair took one of them meanwhile
            if _edges_lost(side_a, side_b, i, j, a_to_b, b_to_a) < 2:
                pair(i, j)
                paired = True
            elif tries:
                # Its look-alike neighbours may have been paired crosswise while it was
                # unmatched (nothing placed told them apart): paired, it tells them, and
                # re-seating them may keep the edges that pairing it alone would break.
                tries -= 1
                saved_a, saved_b = dict(a_to_b), b_to_a[:]
                before = _rewired_and_unmatched(side_a, side_b, a_to_b, b_to_a)
                pair(i, j)
                _reseat(side_a, side_b, a_to_b, b_to_a, {i, *side_a.parents[i], *side_a.children[i]})
                after = _rewired_and_unmatched(side_a, side_b, a_to_b, b_to_a)
                if after >= before:
                    # Runs of look-alikes paired crosswise (a GEMM's two kernels on each side
                    # of it) cannot be re-seated one node at a time, each move alone keeping
                    # no more edges: swap each neighbour's run whole onto the run beside j.
                    _restore(a_to_b, b_to_a, saved_a, saved_b)
                    pair(i, j)
                    _swap_neighbour_runs(side_a, side_b, a_to_b, b_to_a, i, j)
                    after = _rewired_and_unmatched(side_a, side_b, a_to_b, b_to_a)
                if after < before:
                    paired = True
                else:
                    _restore(a_to_b, b_to_a, saved_a, saved_b)
    return paired


_RUN_SWAP_STEPS = 64  # nodes of a run swapped at most, per neighbour (a bounded trial)


def _swap_neighbour_runs(side_a: Side, side_b: Side, a_to_b: dict, b_to_a: list, i: int,
                         j: int) -> None:
    """With i paired to j: each neighbour of i whose edge to i is not kept, and whose kind
    of node is next to j once, trades partners with the node of A paired to that node of B,
    and so on along the run: the next node up (from a parent) or down (from a child) trades
    for the next node of B's run, while each has one such neighbour, the two look alike,
    and both are matched."""
    fine_a, fine_b = side_a.fine, side_b.fine
    for up in (True, False):
        near_a = side_a.parents if up else side_a.children
        near_b = side_b.parents if up else side_b.children
        for n in near_a[i]:
            m = a_to_b.get(n)
            if m is not None and m in near_b[j]:
                continue  # its edge to i is kept
            alike = [k for k in near_b[j] if fine_b[k] == fine_a[n]]
            if len(alike) != 1:
                continue
            target = alike[0]
            for _ in range(_RUN_SWAP_STEPS):
                held, other = a_to_b.get(n), b_to_a[target]
                if held == target or held is None or other < 0:
                    # only two matched pairs trade partners: taking a node left over on
                    # either side would use up what pairing it later could match better
                    break
                a_to_b[n], b_to_a[target] = target, n
                a_to_b[other], b_to_a[held] = held, other
                next_a, next_b = near_a[n], near_b[target]
                if len(next_a) != 1 or len(next_b) != 1:
                    break
                n, target = next_a[0], next_b[0]
                if fine_a[n] != fine_b[target]:
                    break


def _restore(a_to_b: dict, b_to_a: list, saved_a: dict, saved_b: list) -> None:
    """Put back a matching saved as ``dict(a_to_b), b_to_a[:]``."""
    a_to_b.clear()
    a_to_b.update(saved_a)
    b_to_a[:] = saved_b


# Leftovers that _pair_leftovers tries with their neighbours re-seated, at most (each try
# copies the matching and counts every edge).
_LEFTOVER_RESEATS = 8


def _rewired_and_unmatched(side_a: Side, side_b: Side, a_to_b: dict, b_to_a: list) -> int:
    """What a diff with this matching would list, changed nodes aside: nodes unmatched on
    either side and edges between matched nodes whose image is no edge of the other graph."""
    from_b = dict(compress(enumerate(b_to_a), map((-1).__lt__, b_to_a)))
    unmatched = len(side_a.fine) - len(a_to_b) + len(side_b.fine) - len(from_b)
    return unmatched + _between_matched_lost(side_a, side_b, a_to_b) + _between_matched_lost(
        side_b, side_a, from_b)


def _between_matched_lost(side: Side, other: Side, image: dict) -> int:
    """Edges of ``side`` between two matched nodes whose image is no edge of ``other``."""
    sources, targets = side.edges
    both = sum(map(and_, map(image.__contains__, sources), map(image.__contains__, targets)))
    return both - _kept_edges(side, other, image)


def _edges_lost(side_a: Side, side_b: Side, i: int, j: int, a_to_b: dict, b_to_a: list) -> int:
    """Edges between node i of A (or j of B) and matched nodes that pairing i with j would
    report rewired: those whose image is no edge of the other graph."""
    lost = 0
    for parent in side_a.parents[i]:
        image = a_to_b.get(parent)
        lost += image is not None and not _linked(side_b, image, j)
    for child in side_a.children[i]:
        image = a_to_b.get(child)
        lost += image is not None and not _linked(side_b, j, image)
    for parent in side_b.parents[j]:
        image = b_to_a[parent]
        lost += image >= 0 and not _linked(side_a, image, i)
    for child in side_b.children[j]:
        image = b_to_a[child]
        lost += image >= 0 and not _linked(side_a, i, image)
    return lost


STRAY_RUN = 8
"""Longest run of unchanged nodes (equal fine labels, consecutive on both sides) that step 3
may drop as a coincidence; longer runs always stay."""


def _runs(aligned: list) -> list[tuple[int, int]]:
    """The runs of consecutive pairs of an alignment, as (first index into aligned, length).
    Runs break where either side steps by more than one; both sides only increase, so x + y
    grows by exactly 2 inside a run."""
    sums = list(starmap(add, aligned))
    starts = [0, *compress(count(1), map((2).__ne__, map(sub, sums[1:], sums))), len(aligned)]
    return [(s, e - s) for s, e in pairwise(starts)]


def _drop_stray_runs(aligned: list, side_a: Side, side_b: Side, budget: list, dropped: list) -> list:
    """Step 3's alignment without the short runs that cost more than they explain.

    A longest common subsequence of fine labels can pair a node with a look-alike far from
    its place: in a batch sweep, one node's new grid can equal another node's old one (the
    first reduction at batch 64 has the grid the second had at batch 16), and pairing those
    two leaves every other node of the chain on the wrong side of them, to be reported
    added and removed. So a run of at most ``STRAY_RUN`` pairs with unmatched nodes beside
    it on both sides is dropped when aligning the stretch around it by kind and name (as
    step 4 will) gives a smaller diff — fewer nodes unmatched plus changed — than keeping it
    and aligning the stretches on either side. Runs are tried in order; a dropped run's
    nodes join the stretch the next run is weighed against. Long runs, and graphs whose
    edits leave no such run, cost nothing here. The weighing counts nodes, not edges, so the
    caller keeps the result only if the whole diff comes out smaller (``structural``)."""
    order_a, order_b = side_a.order, side_b.order
    fine_a, fine_b = side_a.fine, side_b.fine
    coarse_a, coarse_b = side_a.coarse, side_b.coarse

    def cost(alo: int, ahi: int, blo: int, bhi: int) -> int:
        stretch_a, stretch_b = order_a[alo:ahi], order_b[blo:bhi]
        if not stretch_a or not stretch_b:
            return len(stretch_a) + len(stretch_b)
        pairs = align([coarse_a[i] for i in stretch_a], [coarse_b[j] for j in stretch_b],
                      budget=budget)
        changed = sum(fine_a[stretch_a[x]] != fine_b[stretch_b[y]] for x, y in pairs)
        return len(stretch_a) + len(stretch_b) - 2 * len(pairs) + changed

    if not aligned:
        return aligned
    runs = _runs(aligned)  # (first index into aligned, length)
    kept: list = []
    last_a, last_b = -1, -1  # the last pair kept
    for r, (first, length) in enumerate(runs):
        (xa, xb), (ya, yb) = aligned[first], aligned[first + length - 1]
        next_a, next_b = aligned[runs[r + 1][0]] if r + 1 < len(runs) else (len(order_a), len(order_b))
        beside_a = (xa - last_a - 1) + (next_a - ya - 1)
        beside_b = (xb - last_b - 1) + (next_b - yb - 1)
        if length <= STRAY_RUN and beside_a and beside_b:
            keep = cost(last_a + 1, xa, last_b + 1, xb) + cost(ya + 1, next_a, yb + 1, next_b)
            if cost(last_a + 1, next_a, last_b + 1, next_b) < keep:
                dropped.extend(aligned[first : first + length])
                continue
        kept.extend(aligned[first : first + length])
        last_a, last_b = ya, yb
    return kept


def _slide_runs(aligned: list, seq_a: list, seq_b: list, side_a: Side, side_b: Side, budget: list,
                moved: list) -> list:
    """Step 3's alignment with runs of unchanged pairs slid along look-alikes, so that what
    is left over on one side meets what is left over on the other in one gap.

    Among look-alikes (a chain of a thousand launches of one kernel) a longest common
    subsequence may pair the nodes between two changed ones one place off: A's 11th to 19th
    with B's 12th to 20th, which leaves B's 11th alone before the run and A's 20th and 21st
    with B's 21st after it — one node added, one removed, one changed and an edge rewired at
    each end of the run, for two nodes whose parameters changed. Slid by one place, the run
    pairs A's 12th to 20th with B's 12th to 20th and leaves one node of each side in each
    gap, which step 4 pairs as changed.

    The gaps between runs hold ``a_k`` nodes of A and ``b_k`` of B; sliding a run's A side
    by s places forward (or its B side by s back) moves s of A's leftovers from the gap after
    it to the gap before it. Runs are slid so that every gap but the last holds as many
    nodes of A as of B (the flow across run r is what the gaps before it lack), where the
    labels along the run allow it and no gap would hold fewer than no nodes; a run that
    cannot slide that far stays. ``seq_a``, ``seq_b``: the fine labels in canonical order.
    The pairs of every run that slid are appended to ``moved``; like dropped runs, the
    caller keeps the result only if the whole diff comes out smaller."""
    if not aligned:
        return aligned
    runs = [(*aligned[s], n) for s, n in _runs(aligned)]  # (x, y, length)
    # Leftovers per gap: gap k lies before run k (the last one after the last run).
    ends = [(-1, -1), *((x + n - 1, y + n - 1) for x, y, n in runs)]
    begins = [*((x, y) for x, y, _ in runs), (len(side_a.order), len(side_b.order))]
    a_left = [x1 - x0 - 1 for (x0, _), (x1, _) in zip(ends, begins)]
    b_left = [y1 - y0 - 1 for (_, y0), (_, y1) in zip(ends, begins)]
    # Flow across run r: A's leftovers to move from after it to before it (negative: back).
    flows, lacking = [], 0
    for r in range(len(runs)):
        lacking += a_left[r] - b_left[r]
        flows.append(-lacking)
    if not any(flows):
        return aligned
    # A run slides its A side by the flow where the labels allow, else its B side the other
    # way; one that can slide neither way, or would leave a gap with fewer than no nodes,
    # stays (and the gaps beside it are weighed again).
    shift_a = [0] * len(runs)
    shift_b = [0] * len(runs)
    for r, (x, y, n) in enumerate(runs):
        f = flows[r]
        if not f:
            continue
        if budget[0] < n:
            flows[r] = 0
            continue
        budget[0] -= n
        if 0 <= x + f and x + f + n <= len(seq_a) and seq_a[x + f : x + f + n] == seq_b[y : y + n]:
            shift_a[r] = f
        elif 0 <= y - f and y - f + n <= len(seq_b) and seq_b[y - f : y - f + n] == seq_a[x : x + n]:
            shift_b[r] = -f
        else:
            flows[r] = 0  # it stays: its shifts are 0, which its neighbours' gaps assume
    # Leftovers per gap after the slides; a run whose slide empties a gap too far stays, and
    # the gaps beside it are weighed again (a worklist: each run stays at most once, so this
    # is linear in the runs, where passes over all of them until none changed were not).
    last = len(runs) - 1
    work = [r for r in range(len(runs)) if flows[r]]
    heapify(work)
    queued = set(work)
    while work:
        r = heappop(work)
        queued.discard(r)
        if not flows[r]:
            continue
        before_a = a_left[r] + shift_a[r] - (shift_a[r - 1] if r else 0)
        before_b = b_left[r] + shift_b[r] - (shift_b[r - 1] if r else 0)
        after_a = a_left[r + 1] - shift_a[r] + (shift_a[r + 1] if r < last else 0)
        after_b = b_left[r + 1] - shift_b[r] + (shift_b[r + 1] if r < last else 0)
        if min(before_a, before_b, after_a, after_b) < 0:
            flows[r] = shift_a[r] = shift_b[r] = 0
            for near in (r - 1, r + 1):
                if 0 <= near <= last and flows[near] and near not in queued:
                    queued.add(near)
                    heappush(work, near)
    if not any(shift_a) and not any(shift_b):
        return aligned
    slid = []
    for (x, y, n), sa, sb in zip(runs, shift_a, shift_b):
        pairs = [(x + sa + t, y + sb + t) for t in range(n)]
        if sa or sb:
            moved.extend(pairs)
        slid += pairs
    return slid


def _pair_by_key(left_a: list[int], left_b: list[int], key_a: list, key_b: list, pair) -> None:
    """Pair nodes with equal keys, k-th with k-th in the given (canonical) order."""
    if not left_a or not left_b:
        return
    waiting: dict = defaultdict(list)
    for j in reversed(left_b):
        waiting[key_b[j]].append(j)
    for i in left_a:
        queue = waiting.get(key_a[i])
        if queue:
            pair(i, queue.pop())


def _pair_unique(order_a, order_b, hash_a, hash_b, a_to_b, b_to_a, pair) -> None:
    """Pair unmatched nodes whose neighbourhood hash occurs exactly once in each graph.

    Such a node sits in one recognisable place in both graphs even if the canonical order
    moved it (a branch listed before, not after, its sibling). Hashes that recur are left
    alone: pairing a removed node with an added look-alike elsewhere would hide both.
    """
    count_a = Counter(hash_a)
    count_b = Counter(hash_b)
    once_b = {hash_b[j]: j for j in order_b if b_to_a[j] < 0 and count_b[hash_b[j]] == 1}
    if not once_b:
        return
    for i in order_a:
        if i not in a_to_b and count_a[hash_a[i]] == 1:
            j = once_b.get(hash_a[i])
            if j is not None:
                pair(i, j)


def _propagate(side_a: Side, side_b: Side, a_to_b: dict, b_to_a: list, pair) -> None:
    """From each matched pair, pair up unmatched parents (and children) with equal labels.

    Only a pair with an unmatched neighbour on both sides can pair anything, and matching
    only ever shrinks the unmatched sets, so the others are left out of the queue from the
    start (in a graph with a few changes, nearly every pair)."""
    unmatched_a = filterfalse(a_to_b.__contains__, range(len(side_a.fine)))
    unmatched_b = compress(range(len(b_to_a)), map(gt, repeat(0), b_to_a))  # b_to_a[j] < 0
    near_a = _near(side_a, unmatched_a)
    near_b = _near(side_b, unmatched_b)
    # The pairs with an unmatched neighbour on both sides, in a_to_b's order (the scan of
    # every pair is done by built-ins; only the few next to an unmatched A node are tested).
    queue = [(i, j) for i, j in compress(a_to_b.items(), map(near_a.__contains__, a_to_b)) if j in near_b]
    while queue:
        i, j = queue.pop()
        for near_a, near_b in (
            (side_a.parents, side_b.parents),
            (side_a.children, side_b.children),
        ):
            open_a = [x for x in near_a[i] if x not in a_to_b]
            if not open_a:
                continue
            open_b = [y for y in near_b[j] if b_to_a[y] < 0]
            if not open_b:
                continue
            before = len(a_to_b)
            for key_a, key_b in ((side_a.fine, side_b.fine), (side_a.coarse, side_b.coarse)):
                _pair_by_key(
                    [x for x in open_a if x not in a_to_b],
                    [y for y in open_b if b_to_a[y] < 0],
                    key_a,
                    key_b,
                    pair,
                )
            if len(a_to_b) > before:
                queue.extend((x, a_to_b[x]) for x in open_a if x in a_to_b)


def _near(side: Side, nodes) -> set[int]:
    """The parents and children of ``nodes``."""
    parents, children = side.parents, side.children
    near: set[int] = set()
    for i in nodes:
        near.update(parents[i])
        near.update(children[i])
    return near


def _kept_in_sequence(side_a: Side, side_b: Side, both: list[bool]) -> int:
    """``_kept_edges`` when the k-th node of A's order is matched to the k-th of B's.

    Where the next node in both orders is the lone child of this one (``Side.follows``), the
    edge between them is kept without looking it up: on a chain, every edge. Only the edges
    of the other places are looked up in B's edges (all of A's edges, by built-ins, where
    those are most of them: fork/joins)."""
    kept = both.count(True)
    if 2 * kept < len(side_a.model.edges):
        return _kept_edges(side_a, side_b, dict(zip(side_a.order, side_b.order)))
    if kept < len(side_a.model.edges):
        children_a, rank_a, order_b, edge_set = side_a.children, side_a.rank, side_b.order, side_b.edge_set
        for s, t in compress(zip(side_a.order, order_b), map(not_, both)):
            for d in children_a[s]:
                kept += (t, order_b[rank_a[d]]) in edge_set
    return kept


def _kept_edges(side_a: Side, side_b: Side, a_to_b: dict, troubled: set | None = None) -> int:
    """Edges of A whose two ends are matched to the two ends of an edge of B.

    ``troubled``, when given, receives both ends of every other edge of A."""
    sources, targets = side_a.edges
    image = list(map(a_to_b.get, range(len(side_a.fine)), repeat(-1))).__getitem__
    kept = side_b.are_edges(list(map(image, sources)), list(map(image, targets)))
    if troubled is not None:
        for s, d in compress(zip(sources, targets), map(not_, kept)):
            troubled.add(s)
            troubled.add(d)
    return sum(kept)


# Neighbours of a node's matched neighbour looked through for a better partner; past this
# (a fan-out of thousands) _follow leaves the node where the alignment put it.
_FOLLOW_MAX_CANDIDATES = 64

# Forward and backward passes of _follow at most (it stops when neither gains an edge).
_FOLLOW_ROUNDS = 4


def _follow(side_a: Side, side_b: Side, a_to_b: dict, b_to_a: list) -> set[int]:
    """Let look-alike nodes follow their matched neighbours: symmetric parts paired consistently.

    The alignment pairs nodes in sequence; among identical parallel branches (three lanes of
    the same kernels, layer after layer) a pairing in sequence may cross lanes from one layer
    to the next, every node matched and edges broken. One pass over A in canonical
    (topological) order moves each node onto the B node of the same fine label that is
    adjacent to the images of more of its already-placed parents than its partner is — an
    unmatched one, or one whose A partner has the same label (the two are swapped, so
    nothing is matched or changed that was not before) and either comes later or agrees as
    well with its own placed parents after the swap; then the same pass backwards, over
    children. A pass is kept only if it keeps more edges in all.

    A node whose partner has its label and whose placed neighbours all agree is left where
    it is, so a pass visits only the troubled nodes — unmatched, changed, or at an edge not
    kept — and those next to a node that moved, in order; the edges kept are counted around
    each move. Returns the troubled nodes (and more), for ``_reseat``.
    """
    fine_a, fine_b, rank_a, rank_b = side_a.fine, side_b.fine, side_a.rank, side_b.rank
    parents_a, children_a = side_a.parents, side_a.children
    most = min(len(side_a.model.edges), len(side_b.model.edges))  # no matching keeps more
    troubled: set[int] = set()
    before = _kept_edges(side_a, side_b, a_to_b, troubled)
    troubled.update(x for x, y in a_to_b.items() if fine_a[x] != fine_b[y])
    if before >= most:
        return troubled
    last = len(fine_a) - 1
    passes = [
        (side_a.parents, side_b.parents, side_b.children, children_a, side_a.order, False),
        (side_a.children, side_b.children, side_b.parents, parents_a, side_a.order[::-1], True),
    ] * _FOLLOW_ROUNDS
    failed = 0

    def agreeing(near_a: list, near_b: list, i: int, j: int) -> int:
        """Matched neighbours of A node i (one side) whose images neighbour B node j."""
        around = set(near_b[j])
        return sum(1 for p in near_a[i] if a_to_b.get(p) in around)

    def kept_around(x: int, other: int) -> int:
        """Kept edges of A touching x or other (-1: none), each counted once."""
        kept = 0
        for u, skip in ((x, -2), (other, x)) if other >= 0 else ((x, -2),):
            t = a_to_b.get(u)
            if t is None:
                continue
            for d in children_a[u]:
                if d != skip and a_to_b.get(d) in side_b.children[t]:
                    kept += 1
            for p in parents_a[u]:
                if p != skip and p != u and a_to_b.get(p) in side_b.parents[t]:
                    kept += 1
        return kept

    for near_a, near_b, far_b, far_a, order, backwards in passes:
        saved_a, saved_b = dict(a_to_b), b_to_a[:]
        after = before
        place = [last - r for r in rank_a] if backwards else rank_a  # node -> step of this pass
        heap = sorted(map(place.__getitem__, troubled))
        here = -1
        while heap:
            where = heappop(heap)
            if where == here:
                continue  # queued twice
            here = where
            x = order[where]
            ns = near_a[x]
            if not ns:
                continue
            images = [a_to_b[p] for p in ns if p in a_to_b]
            if not images:
                continue
            label = fine_a[x]
            y0 = a_to_b.get(x)
            if y0 is not None:
                around = near_b[y0]
                if len(images) == 1:
                    score0 = images[0] in around
                else:
                    around_set = set(around)
                    score0 = sum(1 for q in images if q in around_set)
                if score0 == len(images) and fine_b[y0] == label:
                    continue  # every placed neighbour agrees already
            else:
                score0 = 0
            # Candidates: same label, next to the image of the least connected neighbour.
            pivot = min(images, key=lambda q: len(far_b[q]))
            if len(far_b[pivot]) > _FOLLOW_MAX_CANDIDATES:
                continue
            image_set = set(images) if len(images) > 1 else None
            best = -1
            best_key = None
            for c in far_b[pivot]:
                if c == y0 or fine_b[c] != label:
                    continue
                if image_set is None:
                    score = 1
                else:
                    score = sum(1 for q in near_b[c] if q in image_set)
                if score <= score0:
                    continue
                owner = b_to_a[c]
                if owner >= 0:
                    if fine_a[owner] != label or y0 is None or fine_b[y0] != label:
                        continue
                    # An owner already passed may give its place up only for one as good.
                    if place[owner] < where and agreeing(near_a, near_b, owner, c) > agreeing(
                        near_a, near_b, owner, y0
                    ):
                        continue
                # More agreeing neighbours first, then nearest the partner the alignment chose.
                key = (-score, abs(rank_b[c] - rank_b[y0]) if y0 is not None else rank_b[c], rank_b[c])
                if best_key is None or key < best_key:
                    best, best_key = c, key
            if best < 0:
                continue
            owner = b_to_a[best]
            after -= kept_around(x, owner)
            if owner >= 0:
                a_to_b[owner] = y0
                b_to_a[y0] = owner
            elif y0 is not None:
                b_to_a[y0] = -1
            a_to_b[x] = best
            b_to_a[best] = x
            after += kept_around(x, owner)
            # What moved, and what is next to it, may no longer agree: look at it (again).
            for u in (x, owner) if owner >= 0 else (x,):
                troubled.add(u)
                troubled.update(parents_a[u])
                troubled.update(children_a[u])
                for z in (u, *far_a[u]):
                    if place[z] > where:
                        heappush(heap, place[z])
        if after > before:
            before, failed = after, 0
        else:
            _restore(a_to_b, b_to_a, saved_a, saved_b)
            failed += 1
        if before >= most or failed == 2:
            return troubled
    return troubled


# A node with more candidate places than this is not re-seated (a fan-out of thousands).
_RESEAT_MAX_CANDIDATES = 64


def _reseat(side_a: Side, side_b: Side, a_to_b: dict, b_to_a: list, troubled: set[int]) -> None:
    """Move matched nodes of A onto look-alikes in B where that keeps more edges.

    Sequence alignment cannot tell which of several identical nodes was added (the 3rd
    "acc" of four, or the 4th?), nor, between look-alike branches, which is which; the edges
    can. A node whose partner breaks some of its edges is tried on each B node of the
    partner's kind and name that is adjacent to the images of its neighbours: an unmatched
    one is taken over, a matched one is swapped with. A move is made only when it strictly
    increases the number of kept edges, so this ends; afterwards only the moved nodes'
    neighbours are looked at again. ``troubled`` holds (at least) every node of A at an edge
    not kept; the others keep all their edges and are passed over (and added to it when a
    move next to them may change that).
    """
    parents_a, children_a = side_a.parents, side_a.children
    parents_b, children_b = side_b.parents, side_b.children
    coarse_b = side_b.coarse

    def kept(i: int) -> int:
        """Edges of A node i whose image is an edge of B under the current matching."""
        j = a_to_b.get(i)
        if j is None:
            return 0
        count = 0
        for p in parents_a[i]:
            q = a_to_b.get(p)
            if q is not None and j in children_b[q]:
                count += 1
        for c in children_a[i]:
            q = a_to_b.get(c)
            if q is not None and j in parents_b[q]:
                count += 1
        return count

    def kept_around(i: int, other: int) -> int:
        # Edges touching i or other, each once (an edge between them is counted twice by
        # kept(i) + kept(other), so one of those is taken back).
        # Only an edge B holds the same way round was counted: i -> other in A is kept by
        # ji -> jo, not by jo -> ji. (Taking one back for a reversed image counted a swap
        # that gained nothing as a gain, and on graphs with cycles such swaps went round
        # for ever.)
        total = kept(i) + kept(other)
        if other >= 0:
            ji, jo = a_to_b.get(i), a_to_b.get(other)
            if ji is not None and jo is not None:
                total -= (other in children_a[i] and jo in children_b[ji]) + (
                    other in parents_a[i] and jo in parents_b[ji])
        return total

    def assign(i: int, j: int) -> None:
        a_to_b[i] = j
        b_to_a[j] = i

    work = list(a_to_b)
    queued = set(work)
    while work:
        i = work.pop()
        queued.discard(i)
        if i not in troubled:
            continue  # every edge of i is kept
        j = a_to_b.get(i)
        if j is None or kept(i) == len(parents_a[i]) + len(children_a[i]):
            continue
        # Same kind and name as the partner: the node may turn out changed where it sits
        # rather than unchanged somewhere its edges do not fit.
        label = coarse_b[j]
        candidates = set()
        for p in parents_a[i]:
            q = a_to_b.get(p)
            if q is not None:
                candidates.update(c for c in children_b[q] if coarse_b[c] == label)
        for c in children_a[i]:
            q = a_to_b.get(c)
            if q is not None:
                candidates.update(p for p in parents_b[q] if coarse_b[p] == label)
        candidates.discard(j)
        if not candidates or len(candidates) > _RESEAT_MAX_CANDIDATES:
            continue
        moved = None
        for candidate in sorted(candidates, key=side_b.rank.__getitem__):
            other = b_to_a[candidate]  # -1: the candidate is unmatched
            before = kept_around(i, other) if other >= 0 else kept(i)
            # Try the move (or swap), keep it only if more edges survive.
            b_to_a[j] = -1
            if other >= 0:
                assign(other, j)
            assign(i, candidate)
            after = kept_around(i, other) if other >= 0 else kept(i)
            if after > before:
                moved = other
                break
            if other >= 0:
                assign(other, candidate)
            else:
                b_to_a[candidate] = -1
            assign(i, j)
        if moved is None:
            continue
        touched = parents_a[i] + children_a[i]
        if moved >= 0:
            touched = touched + [moved] + parents_a[moved] + children_a[moved]
        troubled.add(i)
        troubled.update(touched)
        for k in touched:
            if k in a_to_b and k not in queued:
                queued.add(k)
                work.append(k)


# Nodes of A one troubled part may hold at most (a larger one is left as it is); nodes with
# more neighbours than this join a part without bringing their neighbours along.
_REGION_MAX_NODES = 512
_REGION_MAX_DEGREE = 64

# Edges a part reaches out from the ends of the edges not kept (through any nodes).
_REGION_RADIUS = 2

# Rounds of _rematch at most (it stops when no part comes out smaller).
_REMATCH_ROUNDS = 3


def _rematch(side_a: Side, side_b: Side, a_to_b: dict, b_to_a: list, troubled: set[int]) -> bool:
    """Match troubled parts of A again as a whole where that makes the diff smaller; returns
    whether any part was.

    ``_follow`` and ``_reseat`` move one node at a time (or swap two) and keep a move only
    when it keeps more edges at once. Look-alike modules that the alignment paired half with
    one module and half with another need several nodes moved together: each single move
    breaks as many edges as it mends. (The canonical order of B places a module whose edges
    changed elsewhere among its look-alike siblings, so the pairs in sequence cross modules.)
    So the nodes of A within ``_REGION_RADIUS`` edges of an edge not kept (either way) form
    parts, each a connected piece; a part is matched again onto its partners in B and the
    unmatched B nodes next to them (``_rematch_part``), and kept only if its own diff — its
    unmatched and changed nodes, and its edges not kept both ways — comes out smaller.
    ``troubled`` holds every node of A at an edge not kept (see ``_follow``); the nodes of
    the parts join it.
    """
    parents_a, children_a = side_a.parents, side_a.children
    parents_b, children_b = side_b.parents, side_b.children

    # Both ends of every edge not kept, either way, around the troubled nodes.
    ends: set[int] = set()
    for x in troubled:
        y = a_to_b.get(x)
        if y is None:
            continue
        for d in children_a[x]:
            t = a_to_b.get(d)
            if t is not None and not _linked(side_b, y, t):
                ends.add(x)
                ends.add(d)
        for z in children_b[y] if len(children_b[y]) <= _REGION_MAX_DEGREE else ():
            w = b_to_a[z]
            if w >= 0 and not _linked(side_a, x, w):
                ends.add(x)
                ends.add(w)
        for z in parents_b[y] if len(parents_b[y]) <= _REGION_MAX_DEGREE else ():
            w = b_to_a[z]
            if w >= 0 and not _linked(side_a, w, x):
                ends.add(x)
                ends.add(w)
    if not ends:
        return False
    region = set(ends)
    level = list(ends)
    for _ in range(_REGION_RADIUS):
        below = []
        for u in level:
            if len(parents_a[u]) + len(children_a[u]) <= _REGION_MAX_DEGREE:
                for v in (*parents_a[u], *children_a[u]):
                    if v not in region:
                        region.add(v)
                        below.append(v)
        level = below
    troubled.update(region)
    # Connected parts, each matched again on its own (no edge of A joins two of them).
    rank_a = side_a.rank
    seen: set[int] = set()
    better = False
    upward = None
    for start in sorted(region, key=rank_a.__getitem__):
        if start in seen:
            continue
        part, stack = [], [start]
        seen.add(start)
        while stack:
            u = stack.pop()
            part.append(u)
            for v in (*parents_a[u], *children_a[u]):
                if v in region and v not in seen:
                    seen.add(v)
                    stack.append(v)
        if len(part) <= _REGION_MAX_NODES:
            # Matched from the roots down first; where that finds nothing smaller, from the
            # sinks up: a node dropped above a run of look-alikes (the join of a fork/join
            # before a chain of copies of itself) is left over only when the run is matched
            # from its far end, each copy taking its partner below.
            if _rematch_part(side_a, side_b, a_to_b, b_to_a, part):
                better = True
                continue
            if upward is None:
                upward = _Upward(side_a), _Upward(side_b)
            better |= _rematch_part(*upward, a_to_b, b_to_a, part)
    return better


class _Upward:
    """A side seen with its edges reversed (parents and children swapped, the canonical order
    read backwards), for matching a part from the sinks up: what ``_rematch_part`` and
    ``_part_cost`` read of a side, with nothing copied (the rank and the edge set are read
    through, a lookup at a time)."""

    def __init__(self, side: Side):
        self.parents, self.children = side.children, side.parents
        self.fine, self.coarse, self.hashes = side.fine, side.coarse, side.hashes
        self.rank = _Backwards(side.rank)
        self.edge_set = _Reversed(side)


class _Backwards:
    """rank[i] read from the other end: the last node first."""

    def __init__(self, rank: list[int]):
        self._rank, self._last = rank, len(rank) - 1

    def __getitem__(self, i: int) -> int:
        return self._last - self._rank[i]


class _Reversed:
    """(s, d) in it when d -> s is an edge of the side."""

    def __init__(self, side: Side):
        self._side = side

    def __contains__(self, edge: tuple[int, int]) -> bool:
        return (edge[1], edge[0]) in self._side.edge_set


def _linked(side: Side, s: int, d: int) -> bool:
    """Whether s -> d is an edge of the side's graph."""
    out = side.children[s]
    return d in out if len(out) <= 16 else (s, d) in side.edge_set


def _part_cost(side_a: Side, side_b: Side, a_to_b: dict, b_to_a: list, part: list[int],
               pool: list[int]) -> int:
    """The diff of a part of A and its pool of B nodes: their unmatched and changed nodes,
    the edges touching the part not kept in B and those touching the pool not kept in A
    (each once; edges to unmatched nodes go with the node)."""
    fine_a, fine_b = side_a.fine, side_b.fine
    cost = 0
    for side, other, image, nodes, fine in ((side_a, side_b, a_to_b.get, part, fine_a),
                                            (side_b, side_a, b_to_a.__getitem__, pool, None)):
        inside = set(nodes)
        for x in nodes:
            y = image(x)
            if y is None or y < 0:
                cost += 1
                continue
            if fine is not None and fine[x] != fine_b[y]:
                cost += 1
            for d in side.children[x]:
                t = image(d)
                cost += t is not None and t >= 0 and not _linked(other, y, t)
            for p in side.parents[x]:
                if p not in inside:
                    t = image(p)
                    cost += t is not None and t >= 0 and not _linked(other, t, y)
    return cost


def _rematch_part(side_a: Side, side_b: Side, a_to_b: dict, b_to_a: list, part: list[int]) -> bool:
    """Match the A nodes of ``part`` again onto their partners and the unmatched B nodes next
    to those; keep that if the part's diff comes out smaller (see ``_rematch``), and say so.

    From the matched nodes around the part inwards: the node next to placed nodes whose
    images have the fewest neighbours (where its partner must be) goes first, so a module is
    matched from one placed node on before the next module is started; it goes to the free
    B node of its fine label next to most of their images (ties: the one whose neighbourhood
    hashes agree with its own furthest, then its partner so far, then canonical order)."""
    parents_a, children_a = side_a.parents, side_a.children
    parents_b, children_b = side_b.parents, side_b.children
    fine_a, fine_b, rank_a, rank_b = side_a.fine, side_b.fine, side_a.rank, side_b.rank
    saved = {x: a_to_b[x] for x in part if x in a_to_b}
    pool = list(saved.values())
    pooled = set(pool)
    for y in saved.values():
        for z in (*parents_b[y], *children_b[y]):
            if b_to_a[z] < 0 and z not in pooled:
                pooled.add(z)
                pool.append(z)
    before = _part_cost(side_a, side_b, a_to_b, b_to_a, part, pool)
    for y in saved.values():
        b_to_a[y] = -1
    for x in saved:
        del a_to_b[x]
    free: dict = defaultdict(set)  # fine label -> free B nodes of the pool
    for y in pool:
        free[fine_b[y]].add(y)
    hashes_a, hashes_b = side_a.hashes[:0:-1], side_b.hashes[:0:-1]  # widest first

    def unlike(x: int, y: int) -> int:
        """How far apart the neighbourhoods of x and y look: 0 when their widest hashes
        agree, one more for each radius less that they agree at."""
        for r, (h_a, h_b) in enumerate(zip(hashes_a, hashes_b)):
            if h_a[x] == h_b[y]:
                return r
        return len(hashes_a)

    def alike(x: int, y: int) -> int:
        """Neighbours of x and of y with equal fine labels, parents with parents and children
        with children, counted as pairs (0 past ``_REGION_MAX_DEGREE`` neighbours)."""
        common = 0
        for near_a, near_b in ((parents_a[x], parents_b[y]), (children_a[x], children_b[y])):
            if len(near_a) + len(near_b) <= _REGION_MAX_DEGREE:
                common += sum((Counter(map(fine_a.__getitem__, near_a))
                               & Counter(map(fine_b.__getitem__, near_b))).values())
        return common

    # Per node, how many of its neighbours are placed, and the fewest B nodes next to one
    # of their images.
    placed: dict[int, int] = dict.fromkeys(part, 0)
    bound: dict[int, int] = dict.fromkeys(part, len(fine_b) + 1)
    heap: list = []

    def touch(x: int, y: int) -> None:
        """x of A is placed on y of B: its neighbours in the part are closer to placed."""
        for near_a, width in ((children_a[x], len(children_b[y])), (parents_a[x], len(parents_b[y]))):
            for u in near_a:
                if u in placed and u not in a_to_b:
                    placed[u] += 1
                    if width < bound[u]:
                        bound[u] = width
                    heappush(heap, (bound[u], -placed[u], rank_a[u], u))

    for x in part:
        for p in parents_a[x]:
            q = a_to_b.get(p)
            if q is not None:
                placed[x] += 1
                bound[x] = min(bound[x], len(children_b[q]))
        for c in children_a[x]:
            q = a_to_b.get(c)
            if q is not None:
                placed[x] += 1
                bound[x] = min(bound[x], len(parents_b[q]))
        heap.append((bound[x], -placed[x], rank_a[x], x))
    heapify(heap)
    # Nodes with no free B node of their fine label next to their neighbours, each once: a
    # node queued again closer to placed nodes can come back here, or be placed after all,
    # and paired again below it would leave its first partner pointing at it (a matching
    # that then never settles).
    waiting: dict[int, None] = {}
    while heap:
        width, score, _, x = heappop(heap)
        if x in a_to_b or width != bound[x] or -score != placed[x]:
            continue  # placed already, or queued again closer to placed nodes
        pool_x = free.get(fine_a[x])
        if not pool_x:
            waiting[x] = None
            continue
        ups = [a_to_b[p] for p in parents_a[x] if p in a_to_b]
        downs = [a_to_b[c] for c in children_a[x] if c in a_to_b]
        if ups or downs:
            # Candidates: free nodes of the label next to one image (the one with fewest
            # neighbours, or the free nodes when they are fewer).
            nearest = min([children_b[q] for q in ups] + [parents_b[q] for q in downs], key=len)
            if len(nearest) <= len(pool_x):
                candidates = [c for c in nearest if c in pool_x]
            else:
                candidates = [c for c in pool_x if c in set(nearest)]
        else:
            candidates = list(pool_x)
        if not candidates:
            waiting[x] = None
            continue
        was = saved.get(x, -1)
        best, best_key = candidates[0], None
        for c in candidates if len(candidates) > 1 else ():
            into, out = set(parents_b[c]), set(children_b[c])
            agree = sum(1 for q in ups if q in into) + sum(1 for q in downs if q in out)
            key = (-agree, unlike(x, c), -alike(x, c), c != was, rank_b[c])
            if best_key is None or key < best_key:
                best, best_key = c, key
        a_to_b[x] = best
        b_to_a[best] = x
        pool_x.discard(best)
        touch(x, best)
    if waiting:
        left_b = sorted((y for ys in free.values() for y in ys), key=rank_b.__getitem__)
        left_a = sorted((x for x in waiting if x not in a_to_b), key=rank_a.__getitem__)

        def pair(i: int, j: int) -> None:
            a_to_b[i] = j
            b_to_a[j] = i

        _pair_by_key(left_a, left_b, fine_a, fine_b, pair)
        _pair_by_key([x for x in left_a if x not in a_to_b], [y for y in left_b if b_to_a[y] < 0],
                     side_a.coarse, side_b.coarse, pair)
    if _part_cost(side_a, side_b, a_to_b, b_to_a, part, pool) < before:
        return True
    for x in part:
        y = a_to_b.pop(x, None)
        if y is not None:
            b_to_a[y] = -1
    for x, y in saved.items():
        a_to_b[x] = y
        b_to_a[y] = x
    return False
