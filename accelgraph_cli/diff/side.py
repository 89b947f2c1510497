"""One graph prepared for matching: adjacency, labels, hashes and canonical order."""

from __future__ import annotations

from collections import Counter, deque
from itertools import compress, repeat
from operator import eq, itemgetter, lt

from ..model.graph_model import GraphModel, in_kinds_order
from .labels import Labeler
from .order import Neighbourhoods, canonical_order, wl_hashes

# Rounds of Weisfeiler-Lehman hashing: radius 3 tells apart the places where the same kernel
# recurs (after a memcpy, before a join...) without making every hash unique near a change.
WL_ROUNDS = 3


class Side:
    """One graph prepared for matching: adjacency, labels, canonical order, and (computed
    when first needed) Weisfeiler-Lehman hashes over the fine labels."""

    def __init__(self, model, position, near, fine, coarse, shapes, order, follows, tables,
                 doubled=None):
        self.model: GraphModel = model
        self.position: dict[str, int] = position  # node id -> index in model.nodes
        self.near: Neighbourhoods = near
        self.parents: list[list[int]] = near.parents
        self.children: list[list[int]] = near.children
        self.fine: list[int] = fine
        self.coarse: list[int] = coarse
        self._shapes: tuple[CoarseShapes, int] = shapes  # where coarse_shape comes from
        self.order: list[int] = order  # canonical topological order, as node indices
        # follows[x]: the only edge out of order[x] goes to order[x + 1]
        self.follows: list[bool] = follows
        self._tables = tables
        self._rank: list[int] | None = None
        self._hashes: list[list[int]] | None = None
        self._edges: tuple[list[int], list[int]] | None = None
        self._edge_set: set[tuple[int, int]] | None = None
        self._several: set[int] | None = None  # the nodes with several children
        self._from_several = 0  # edges leaving them
        # The edges written more than once, (source, target) -> how many times (a CUDA dump
        # never writes an edge twice, a hand-written DOT file can). ``near`` and the
        # adjacency lists hold each edge once: matching sees the graph's shape, the report
        # counts the copies.
        self.doubled: dict[tuple[int, int], int] = doubled or {}

    def kind_counts(self, labeler: Labeler) -> dict[str, int]:
        """``model.kind_counts()``, from the coarse labels (a kind and a name each): one pass
        over small ints instead of over the nodes."""
        heads = labeler.coarse_heads()
        counts: Counter = Counter()
        for label, count in Counter(self.coarse).items():
            counts[heads[label][0]] += count
        return in_kinds_order(counts)

    @property
    def coarse_shape(self) -> list[int]:
        """WL hash over kind/name only, per node: what sorts ready nodes in the canonical
        order; computed when first needed (a chain's order never sorts any)."""
        shapes, k = self._shapes
        return shapes.shape(k)

    @property
    def rank(self) -> list[int]:
        """rank[i]: node i's position in the canonical order. Only the matching of graphs
        that differ reads it, so an identical diff never builds it."""
        if self._rank is None:
            self._rank = ranks(self.order)
        return self._rank

    @property
    def edges(self) -> tuple[list[int], list[int]]:
        """The edges as node indices: (sources, targets), in the model's edge order."""
        if self._edges is None:
            self._edges = self.model.edge_indices()
        return self._edges

    @property
    def edge_set(self) -> set[tuple[int, int]]:
        """The edges as a set of (source, target) node indices."""
        if self._edge_set is None:
            self._edge_set = set(zip(*self.edges))
        return self._edge_set

    def are_edges(self, sources: list[int], targets: list[int]) -> list[bool]:
        """For each k, whether sources[k] -> targets[k] is an edge of this graph (node
        indices; -1 names no node, so such a pair is no edge).

        Where most edges leave a node with one child (chains), pairs are compared with that
        child (``near.down_one``, with ``none`` appended for -1) and only pairs from nodes
        with several children are looked up in ``edge_set``, which a graph without such
        nodes never builds. Where most leave nodes with several (fork/joins), every pair is
        looked up: comparing first would only add a pass."""
        near = self.near
        if self._several is None:
            self._several = set(near.down_many)
            self._from_several = sum(map(len, map(self.children.__getitem__, near.down_many)))
        if 2 * self._from_several > len(self.model.edges):
            return list(map(self.edge_set.__contains__, zip(sources, targets)))
        lone = [*near.down_one, near.none]
        found = list(map(eq, map(lone.__getitem__, sources), targets))
        if near.down_many:
            at = list(compress(range(len(found)), map(self._several.__contains__, sources)))
            pairs = zip(map(sources.__getitem__, at), map(targets.__getitem__, at))
            deque(map(found.__setitem__, at, map(self.edge_set.__contains__, pairs)), maxlen=0)
        return found

    @property
    def hashes(self) -> list[list[int]]:
        """hashes[r][i]: WL hash of node i after r rounds over fine labels (hashes[0] = fine).

        Only needed when the alignment leaves nodes over, so an identical diff never pays."""
        if self._hashes is None:
            self._hashes = wl_hashes(self.near, self.fine, WL_ROUNDS, self._tables)
        return self._hashes

    def reordered(self, order: list[int], follows: list[bool]) -> Side:
        """The same graph with another canonical order (hashes shared)."""
        side = Side(
            self.model,
            self.position,
            self.near,
            self.fine,
            self.coarse,
            self._shapes,
            order,
            follows,
            self._tables,
            self.doubled,
        )
        side._hashes, side._edges, side._edge_set = self._hashes, self._edges, self._edge_set
        return side


class CoarseShapes:
    """The coarse shapes (WL hashes over kind/name) of the sides of one diff, computed when
    first needed. The sides share the hash tables, which number each new neighbourhood in
    turn, so a side's shapes are computed only after those of every side prepared before it:
    the numbers (which sort ready nodes) are those of computing them all in that order."""

    def __init__(self, tables: list[dict]):
        self.tables = tables
        self.sides: list[list] = []  # [near, coarse, shape or None], in order of preparation

    def add(self, near: Neighbourhoods, coarse: list[int]) -> int:
        self.sides.append([near, coarse, None])
        return len(self.sides) - 1

    def shape(self, k: int) -> list[int]:
        for side in self.sides[: k + 1]:
            if side[2] is None:
                side[2] = wl_hashes(side[0], side[1], WL_ROUNDS, self.tables)[-1]
        return self.sides[k][2]


def prepare(model: GraphModel, labeler: Labeler, tables: list[dict], coarse_tables) -> Side:
    """One side of a diff. ``coarse_tables``: the CoarseShapes of the diff, or the coarse WL
    tables (one dict a round) shared with the other side, then the shapes are made here."""
    position, parents, children = model.adjacency()
    ends = model.edge_indices()
    doubled = _doubled(children)
    if doubled:
        parents, children, ends = _once_each(parents, children, ends)
    fine, coarse = labeler.labels(model)
    # The order must not depend on parameters: a kernel whose grid changed has to stay where
    # it was among its siblings, or the alignment pairs siblings crosswise. So ready nodes are
    # sorted by kind/name and by neighbourhood hashes over kind/name only; node order
    # (creation order in CUDA dumps) breaks the remaining ties.
    near = Neighbourhoods(parents, children, ends)
    lazy = isinstance(coarse_tables, CoarseShapes)
    shapes = coarse_tables if lazy else CoarseShapes(coarse_tables)
    k = shapes.add(near, coarse)
    if not lazy:
        shapes.shape(k)
    order, follows = canonical_order(near, lambda: list(zip(coarse, shapes.shape(k))))
    return Side(model, position, near, fine, coarse, (shapes, k), order, follows, tables, doubled)


def _doubled(children: list[list[int]]) -> dict[tuple[int, int], int]:
    """The edges written more than once, (source, target) node indices -> how many times.
    Only a node with several children can have one, so only those lists are looked at."""
    doubled: dict[tuple[int, int], int] = {}
    for i in compress(range(len(children)), map(lt, repeat(1), map(len, children))):
        kids = children[i]
        if len(set(kids)) < len(kids):
            for d, n in Counter(kids).items():
                if n > 1:
                    doubled[i, d] = n
    return doubled


def _once_each(parents, children, ends):
    """The adjacency lists and edge ends with each edge once (copies: the model's stay as
    they are), for the matching, where a doubled edge would look like two children and
    pair look-alikes crosswise."""
    once = [list(dict.fromkeys(kids)) if len(kids) > 1 else kids for kids in children]
    above = [list(dict.fromkeys(ups)) if len(ups) > 1 else ups for ups in parents]
    pairs = list(dict.fromkeys(zip(*ends)))
    return above, once, (list(map(itemgetter(0), pairs)), list(map(itemgetter(1), pairs)))


def ranks(order: list[int]) -> list[int]:
    rank = [0] * len(order)
    for r, i in enumerate(order):
        rank[i] = r
    return rank


def structural_order(side: Side, table: dict) -> Side:
    """The side again, with ties between look-alike ready nodes broken by structure, not by
    node order: what everything below a node looks like, then everything above it.

    Used when a renumbered (or reshuffled) dump of the same graph did not come out
    identical because node order broke a tie differently on the two sides.
    """
    order, _ = canonical_order(side.near, side.fine)  # any topological order
    below = [0] * len(order)
    for i in reversed(order):
        below[i] = table.setdefault(
            ("below", side.fine[i], tuple(sorted([below[c] for c in side.children[i]]))), len(table)
        )
    above = [0] * len(order)
    for i in order:
        above[i] = table.setdefault(
            ("above", side.fine[i], tuple(sorted([above[p] for p in side.parents[i]]))), len(table)
        )
    sort_key = list(zip(side.coarse, side.coarse_shape, side.fine, side.hashes[-1], below, above))
    refined = _refined(sort_key, side.parents, side.children, table)
    return side.reordered(*canonical_order(side.near, [(*key, r) for key, r in zip(sort_key, refined)]))


#: Most rounds of refinement structural_order runs past its keys (each one pass over the
#: graph; a graph whose keys tell every node apart, a chain, stops after one).
_REFINE_ROUNDS = 32


def _refined(key: list, parents: list, children: list, table: dict) -> list[int]:
    """Each node's class once neighbourhood refinement, seeded by ``key`` and over parents
    and children alike, stops splitting classes (at most _REFINE_ROUNDS rounds): what tells
    look-alikes apart where the difference lies further away than the hashes reach and is
    not a matter of below or above alone (two roots whose descendants meet crosswise).
    Without it a renumbered dump of such a graph could pair them crosswise and diff as
    different, one way round. Ids come from ``table``, which both sides share, so isomorphic
    sides run the same rounds and get the same ids."""
    colour = [table.setdefault(("seed", k), len(table)) for k in key]
    classes = len(set(colour))
    if classes == len(colour):  # every node told apart already (a chain): nothing to refine
        return colour
    for _ in range(_REFINE_ROUNDS):
        # only nodes whose class still holds others are recoloured: a node told apart keeps
        # its id, so the table grows by the look-alikes left, and a round spends a lookup on
        # each other node (recolouring every node each round was 12 s and about 1 GB for a
        # 100,000-node chain with a crown of 100 look-alike roots at its head)
        sizes = Counter(colour)
        colour = [
            table.setdefault(("round", colour[i], tuple(sorted([colour[p] for p in parents[i]])),
                              tuple(sorted([colour[c] for c in children[i]]))), len(table))
            if sizes[colour[i]] > 1 else colour[i]
            for i in range(len(colour))
        ]
        count = len(set(colour))
        if count == classes:
            break
        classes = count
    return colour
