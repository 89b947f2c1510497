"""Where each node stands: Weisfeiler-Lehman hashes and the canonical topological order."""

from __future__ import annotations

from collections import deque
from itertools import compress, repeat
from operator import lt


class Neighbourhoods:
    """How the nodes of one graph connect, in the form ``wl_hashes`` reads every round (and
    the canonical walk goes down by): per node, its one parent (child), or ``none`` when it
    has none or several; and the nodes with several. Built once per graph."""

    def __init__(
        self, parents: list[list[int]], children: list[list[int]], ends: tuple[list[int], list[int]]
    ):
        """``ends``: (sources, targets), each edge's two node indices, the edges that
        ``parents`` and ``children`` list."""
        self.parents, self.children = parents, children
        self.none = none = len(parents)  # index of the () appended to each round's hashes
        sources, targets = ends
        self.up_one, self.up_many = _one_and_many(parents, targets, sources, none)
        self.down_one, self.down_many = _one_and_many(children, sources, targets, none)


def _one_and_many(near: list[list[int]], ends: list[int], others: list[int], none: int):
    """Per node its one neighbour (``none`` if it has none or several), and the nodes with
    several; by built-ins over whole lists, since most nodes have exactly one. The
    neighbours are written edge by edge (node ends[k] gets others[k]), not read from each
    node's list: where nodes lie in memory in another order than their list (a shuffled
    copy), that reads far less of it."""
    one = [none] * len(near)
    deque(map(one.__setitem__, ends, others), maxlen=0)
    many = list(compress(range(len(near)), map(lt, repeat(1), map(len, near))))
    for i in many:
        one[i] = none
    return one, many


def wl_hashes(near: Neighbourhoods, base: list[int], rounds: int, tables: list[dict]) -> list[list[int]]:
    """Weisfeiler-Lehman refinement: each round, a node's hash becomes (its hash, sorted
    parents' hashes, sorted children's hashes), interned in the round's table (shared by both
    graphs, so equal neighbourhoods get equal ints on both sides).

    A lone parent or child enters the key as its hash, several as a sorted tuple, none as
    (): one encoding for both graphs, so equal keys still mean equal neighbourhoods. Most
    nodes have one parent and one child, so keys are built by ``map`` and ``zip`` over the
    whole graph and only the nodes with several neighbours are visited one by one.
    """
    parents, children = near.parents, near.children
    hashes = [base]
    current = base
    for r in range(rounds):
        at = [*current, ()].__getitem__
        ups = list(map(at, near.up_one))
        downs = list(map(at, near.down_one))
        for i in near.up_many:
            ups[i] = tuple(sorted([current[p] for p in parents[i]]))
        for i in near.down_many:
            downs[i] = tuple(sorted([current[c] for c in children[i]]))
        current = intern(list(zip(current, ups, downs)), tables[r])
        hashes.append(current)
    return hashes


def intern(keys: list, table: dict) -> list[int]:
    """``[table.setdefault(key, len(table)) for key in keys]``, with the per-key work done
    by dict built-ins: new keys get the next ints in the order they first occur."""
    for key in dict.fromkeys(keys):
        if key not in table:
            table[key] = len(table)
    return list(map(table.__getitem__, keys))


# Look-alike siblings one pick compares at most (a wider fan-out is taken in node order), the
# nodes one comparison looks at around each of them, and the nodes all comparisons of one
# order look at, per node and edge of the graph (see canonical_order): ties cost O(V + E).
_TIE_MAX_NODES = 16
_TIE_LOOKAHEAD = 32
_TIE_BUDGET = 1


def canonical_order(near: Neighbourhoods, sort_key) -> tuple[list[int], list[bool]]:
    """Depth-first Kahn order: finish a branch before starting the next, ready nodes by key.
    Returns the order (node indices) and, per place in it, whether the next node is the lone
    child of this one (the only edge out of it leads to its successor in the order).

    ``sort_key``: per node, the key ready nodes are sorted by; or a function that returns
    that list, called only if some ready nodes are to be sorted (not on a chain).

    Ties between look-alike ready nodes (equal keys) are broken by structure, not by node
    ids, so that two captures of one graph, however numbered, get orders that correspond
    node for node (edges included) and the alignment pairs look-alikes consistently:

    * by the places of their parents in the order so far: the k-th of three identical
      parallel lanes of a layer continues the k-th lane of the layer before;
    * siblings with the very same parents are picked one at a time, when their turn
      comes, by how they connect to what is placed already: the one nearest (over edges
      either way, through unplaced nodes) to the earliest placed nodes goes first, so the
      second root of a module follows the first root of the same module, not of a
      look-alike module;
    * look-alike roots, the tallest (longest path below) first.

    Only what none of these tells apart (interchangeable look-alikes, as far as the key sees) is
    taken in node order. A change inside one branch does not reshuffle the others — what
    the alignment needs. On a cycle (generic DOT only) the walk is restarted from the
    smallest unplaced node, so cyclic graphs get a structural order too.
    """
    walk = _Walk(near, sort_key)
    walk.from_roots()
    walk.through_cycles()
    return walk.order, walk.follows


def _push(stack: list, ready: list, key) -> None:
    """Push ready nodes onto ``stack``, smallest key on top; nodes with equal keys as one list."""
    keyed = sorted([(key(i), i) for i in ready], reverse=True)
    t = 0
    while t < len(keyed):
        u = t + 1
        while u < len(keyed) and keyed[u][0] == keyed[t][0]:
            u += 1
        stack.append(keyed[t][1] if u == t + 1 else [i for _, i in keyed[t:u]])
        t = u


class _Walk:
    """One canonical-order walk (see ``canonical_order``): the order so far and what is left.

    The stack holds ready nodes, smallest key on top; an item that is a list holds
    look-alikes (equal keys), picked from one at a time by ``pick``.
    """

    def __init__(self, near: Neighbourhoods, sort_key):
        self.near, self._sort_key = near, sort_key
        self.parents, self.children = parents, children = near.parents, near.children
        n = len(parents)
        self.indegree = [len(ps) for ps in parents]
        self.order: list[int] = []
        self.rank = [-1] * n  # place in the order; -1 until placed
        self.follows = [False] * n  # per place: the next node is this one's lone child
        self.far = (n + 1,)  # lead()'s entry for a distance with no placed node
        self.budget = _TIE_BUDGET * (n + sum(map(len, children))) + 20_000  # nodes lead() may visit

    @property
    def sort_key(self) -> list:
        """The sort key of every node (see canonical_order), made when first read."""
        if callable(self._sort_key):
            self._sort_key = self._sort_key()
        return self._sort_key

    def from_roots(self) -> None:
        """Walk from the roots. Look-alike roots, tallest first: a root that a change cut
        loose (its parent's edge removed) heads a part of the graph, and its part should
        follow the rest, not lead it."""
        indegree = self.indegree
        roots: list = []
        sources = [i for i in range(len(indegree)) if not indegree[i]]
        if len(sources) < 2:
            self.walk(sources)  # one root (or none): nothing to sort
            return
        sort_key = self.sort_key
        if len(set(map(sort_key.__getitem__, sources))) < len(sources):
            height = _heights(self.parents, self.children)
            _push(roots, sources, lambda i: (sort_key[i], -height[i]))
        else:
            _push(roots, sources, sort_key.__getitem__)
        self.walk(roots)

    def through_cycles(self) -> None:
        """Place what the walk from the roots could not reach (nodes on or after a cycle):
        restart from the smallest unplaced node by key, then node order, until none is left."""
        n, indegree = len(self.indegree), self.indegree
        if len(self.order) == n:
            return
        sort_key = self.sort_key
        placed = set(self.order)
        for i in sorted((i for i in range(n) if i not in placed), key=lambda i: (sort_key[i], i)):
            if indegree[i] > 0:  # not placed yet (placed nodes end at 0 or below)
                indegree[i] = 0
                self.walk([i])

    def walk(self, stack: list) -> None:
        """Place nodes from the stack until it is empty, pushing children as they get ready.

        A node with one child goes down to it at once when it gets ready (what pushing it
        and popping it again would do), through the precomputed lone child: a chain is
        walked without reading its nodes' child lists."""
        children, indegree, rank, order = self.children, self.indegree, self.rank, self.order
        lone, several, follows = self.near.down_one, self.near.none, self.follows
        places, pick = self.places, self.pick
        while stack:
            item = stack.pop()
            if type(item) is list:
                i = pick(item)
                stack.append(item if len(item) > 1 else item[0])
            else:
                i = item
            while True:
                place = rank[i] = len(order)
                order.append(i)
                c = lone[i]
                if c != several:  # one child: place it next if this was its last parent
                    indegree[c] -= 1
                    if indegree[c]:
                        break
                    follows[place] = True
                    i = c
                    continue
                ready = []
                for c in children[i]:
                    indegree[c] -= 1
                    if not indegree[c]:
                        ready.append(c)
                if len(ready) == 1:
                    stack.append(ready[0])
                elif ready:
                    _push(stack, ready, lambda c, key=self.sort_key: (key[c], places(c)))
                break

    def places(self, i: int) -> tuple:
        """The places of node i's parents in the order, sorted."""
        ps, rank = self.parents[i], self.rank
        return (rank[ps[0]],) if len(ps) == 1 else tuple(sorted([rank[p] for p in ps]))

    def pick(self, group: list) -> int:
        """Take the look-alike of ``group`` to place next: the one whose ``lead`` is smallest
        (node order when the group is too wide or the budget is spent)."""
        if len(group) > _TIE_MAX_NODES or self.budget < 0:
            # Node order: _push builds each group largest first, and picks keep that order,
            # so the smallest is at the end.
            return group.pop()
        best = min(group, key=lambda i: (self.lead(i), i))
        group.remove(best)
        return best

    def lead(self, i: int) -> tuple:
        """Where unplaced node i touches the placed part of the graph: for each distance
        (edges either way, through unplaced nodes only) the places of the placed nodes at
        that distance, as far as _TIE_LOOKAHEAD nodes (whole distances only)."""
        parents, children, rank = self.parents, self.children, self.rank
        level, seen, seen_count = [i], {i}, 0
        profile = []
        while level and seen_count <= _TIE_LOOKAHEAD:
            below = []
            hits = []
            for u in level:
                for near in (parents[u], children[u]):
                    for c in near:
                        if c not in seen:
                            seen.add(c)
                            if rank[c] < 0:
                                below.append(c)
                            else:
                                hits.append(rank[c])
            seen_count += len(below) + len(hits)
            if hits:
                hits.sort()
                profile.append(tuple(hits))
            else:
                profile.append(self.far)
            level = below
        self.budget -= seen_count
        return tuple(profile)


def _heights(parents, children) -> list[int]:
    """Edges on the longest path from each node down to a sink (0 for nodes on a cycle)."""
    pending = [len(cs) for cs in children]
    height = [0] * len(children)
    ready = [i for i, count in enumerate(pending) if not count]
    while ready:
        i = ready.pop()
        h = height[i] + 1
        for p in parents[i]:
            if height[p] < h:
                height[p] = h
            pending[p] -= 1
            if not pending[p]:
                ready.append(p)
    return height
