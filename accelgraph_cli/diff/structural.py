"""Structural diff of two GraphModels: what changed between two captures of a CUDA graph.

Node ids mean nothing across captures (``graph_0_node_7`` in one dump is not the
``graph_0_node_7`` of the next), so nodes are matched by what they do and where they sit:

1. **Labels.** Every node gets a *fine* label — kind, demangled name, the stable parameters
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
   unchanged nodes.
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
   whenever that keeps more of its edges (``_reseat``).
7. **The rest** is added (in B only) or removed (in A only).

When the result is not identical although both graphs hold the same labels and as many
edges — typically a renumbered dump where node order broke a tie the other way — the
order is rebuilt with ties broken by structure (Merkle hashes of everything below and above
a node) and the smaller of the two diffs is kept.

Everything is O(V + E) or O(V log V) except Myers inside gaps, which is bounded.

Detail missing on one side is not a change: a basic dump has no grid/block/bytes, a verbose
dump has them, and the same graph dumped both ways diffs as identical. Only parameters that
both nodes of a pair carry (with a value other than None) are compared, and only parameter
keys that both graphs use for a kind take part in matching. ``ignore`` removes parameter names
from both matching and the report (e.g. ``{"grid"}`` when sweeping sizes).
"""

from __future__ import annotations

import gc
from bisect import bisect_left
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from ..enums import ExitCode
from ..model.graph_model import GraphModel, Node, is_stable_param, to_jsonable

DIFF_JSON_FORMAT = "accelgraph-diff"
DIFF_JSON_VERSION = 1

# Rounds of Weisfeiler-Lehman hashing: radius 3 tells apart the places where the same kernel
# recurs (after a memcpy, before a join...) without making every hash unique near a change.
WL_ROUNDS = 3

# Myers' diff finds a longest common subsequence in about D² steps for D edits; past this
# many edits in one stretch, align() splits the stretch instead (see align()).
MAX_EDIT_DISTANCE = 1000

# Myers' steps (diagonals visited, about D²/2 for D edits) one alignment may spend in all,
# about half a second of Python; after that only the linear steps of align() run.
ALIGN_WORK_LIMIT = 2_000_000

# Edits Myers is first given for a stretch, before anchors are looked for (see align()).
_QUICK_EDIT_DISTANCE = 64

# Longest runs of labels tried as anchors (see _unique_anchors).
_GRAM_MAX = 128

# Stretch size (both sides together) below which align() stops cutting and lets Myers work.
_PIECE = 400

# Parameters that name the node's kernel rather than describe its work (see stable_params).
_NAME_PARAMS = frozenset({"demangled"})


# ------------------------------------------------------------------------ results


@dataclass(frozen=True)
class GraphStats:
    """The numbers of one graph that the diff compares (top level, child graphs as one node)."""

    nodes: int
    edges: int
    levels: int
    max_width: int
    critical_path: int
    kinds: dict

    @classmethod
    def of(cls, model: GraphModel) -> GraphStats:
        """Measure ``model`` (O(V+E); the model caches its order and levels)."""
        widths = model.level_widths()
        return cls(
            nodes=len(model.nodes),
            edges=len(model.edges),
            levels=len(widths),
            max_width=max(widths, default=0),
            critical_path=len(model.critical_path()),
            kinds=model.kind_counts(),
        )

    def to_json(self) -> dict:
        """``{"nodes", "edges", "levels", "max_width", "critical_path", "kinds"}``."""
        return {
            "nodes": self.nodes,
            "edges": self.edges,
            "levels": self.levels,
            "max_width": self.max_width,
            "critical_path": self.critical_path,
            "kinds": dict(self.kinds),
        }


@dataclass
class NodeChange:
    """A node present in both graphs that does something different.

    ``params`` maps each parameter whose value differs to ``(old, new)``; ``child`` is the
    diff of the nested graphs of a child-graph/conditional node when they differ.
    """

    a_id: str
    b_id: str
    kind: str
    name: str | None
    params: dict[str, tuple[Any, Any]]
    child: GraphDiff | None = None

    def to_json(self) -> dict:
        """``{"a", "b", "kind", "name", "params": {key: {"old", "new"}}, "child"?}``."""
        entry: dict[str, Any] = {
            "a": self.a_id,
            "b": self.b_id,
            "kind": self.kind,
            "name": self.name,
            "params": {
                key: {"old": to_jsonable(old), "new": to_jsonable(new)}
                for key, (old, new) in sorted(self.params.items())
            },
        }
        if self.child is not None:
            entry["child"] = self.child.to_json()
        return entry


@dataclass
class GraphDiff:
    """What changed from graph ``a`` to graph ``b`` (see ``diff_models``).

    ``matches`` maps every matched node of A to its node in B (unchanged and changed alike);
    ``added`` holds ids of B (in B's topological order), ``removed`` ids of A (in A's order);
    ``changed`` is in A's topological order. ``edges_added`` (ids of B) and ``edges_removed``
    (ids of A) are edges between matched nodes that exist on one side only — rewiring; edges
    of added/removed nodes go with those nodes and show in the edge totals.
    """

    a: GraphModel
    b: GraphModel
    ignore: frozenset
    matches: dict[str, str]
    changed: list[NodeChange]
    added: list[str]
    removed: list[str]
    edges_added: list[tuple[str, str]]
    edges_removed: list[tuple[str, str]]
    stats_a: GraphStats
    stats_b: GraphStats

    @property
    def identical(self) -> bool:
        """True when every node is matched, none changed, and no edge was added or removed."""
        return not (self.added or self.removed or self.changed or self.edges_added or self.edges_removed)

    @property
    def exit_code(self) -> ExitCode:
        """The CLI's exit status for this result: 0 identical, 1 different."""
        return ExitCode.OK if self.identical else ExitCode.FAILED

    @property
    def unchanged(self) -> int:
        """Number of matched nodes whose parameters (and child graph) are the same."""
        return len(self.matches) - len(self.changed)

    def kind_deltas(self) -> dict[str, tuple[int, int]]:
        """``{kind: (count in A, count in B)}`` for every kind present on either side."""
        kinds = list(self.stats_a.kinds)
        kinds += [k for k in self.stats_b.kinds if k not in self.stats_a.kinds]
        return {k: (self.stats_a.kinds.get(k, 0), self.stats_b.kinds.get(k, 0)) for k in kinds}

    def to_json(self, include_matches: bool = False) -> dict:
        """A JSON-ready dict; the stable, documented form of a diff.

        ``{"format": "accelgraph-diff", "version": 1, "identical": bool, "ignore": [names],
        "summary": {"added", "removed", "changed", "unchanged", "edges_added",
        "edges_removed"}, "a": stats, "b": stats, "delta": {"nodes", "edges", "levels",
        "max_width", "critical_path", "kinds": {kind: b - a, nonzero only}},
        "changed": [NodeChange.to_json()], "added": [node], "removed": [node],
        "edges_added": [[b_src, b_dst]], "edges_removed": [[a_src, a_dst]]}``, where stats is
        ``GraphStats.to_json()`` and node is ``{"id", "kind", "name", "params"}`` (stable
        params). Lists keep the diff's order. ``include_matches`` adds ``"matches": [[a_id,
        b_id], ...]`` (every matched pair; large for big graphs).
        """
        sa, sb = self.stats_a, self.stats_b
        kinds_delta = {k: nb - na for k, (na, nb) in self.kind_deltas().items() if nb != na}
        document: dict[str, Any] = {
            "format": DIFF_JSON_FORMAT,
            "version": DIFF_JSON_VERSION,
            "identical": self.identical,
            "ignore": sorted(self.ignore),
            "summary": {
                "added": len(self.added),
                "removed": len(self.removed),
                "changed": len(self.changed),
                "unchanged": self.unchanged,
                "edges_added": len(self.edges_added),
                "edges_removed": len(self.edges_removed),
            },
            "a": sa.to_json(),
            "b": sb.to_json(),
            "delta": {
                "nodes": sb.nodes - sa.nodes,
                "edges": sb.edges - sa.edges,
                "levels": sb.levels - sa.levels,
                "max_width": sb.max_width - sa.max_width,
                "critical_path": sb.critical_path - sa.critical_path,
                "kinds": kinds_delta,
            },
            "changed": [change.to_json() for change in self.changed],
            "added": [_node_json(self.b.node(i)) for i in self.added],
            "removed": [_node_json(self.a.node(i)) for i in self.removed],
            "edges_added": [[s, d] for s, d in self.edges_added],
            "edges_removed": [[s, d] for s, d in self.edges_removed],
        }
        if include_matches:
            document["matches"] = [[a, b] for a, b in self.matches.items()]
        return document


def _node_json(node: Node) -> dict:
    params = {
        k: to_jsonable(v)
        for k, v in sorted(node.params.items())
        if is_stable_param(k) and k not in _NAME_PARAMS
    }
    return {"id": node.id, "kind": node.kind, "name": node.display_name, "params": params}


# ---------------------------------------------------------------------- entry point


def diff_models(a: GraphModel, b: GraphModel, ignore: set[str] | frozenset = frozenset()) -> GraphDiff:
    """Match the nodes of ``a`` and ``b`` structurally and report what changed from a to b.

    Nodes are matched by signature (kind, demangled name, stable parameters — never pointers
    or handles) and by position (neighbourhood hashing and an alignment over a canonical
    topological order; see the module docstring). Matched pairs whose parameters differ are
    "changed" (param: old -> new); the rest are added/removed. Child graphs of matched
    child-graph nodes are diffed recursively (``NodeChange.child``).

    Detail missing on one side is not a change: only parameters present (not None) on both
    nodes of a pair are compared, so a basic dump (no grid/block/bytes) and a verbose dump
    of the same graph diff as identical; so do renumbered or reordered dumps. ``ignore``
    names parameters left out of matching and of the report (``{"grid"}``, ``{"bytes"}``...).

    Cost: O((V + E) log V) for two graphs of V nodes and E edges, plus a bounded alignment
    (``MAX_EDIT_DISTANCE``); two 10,000-node graphs take a fraction of a second.
    """
    ignore = frozenset(ignore)
    # The diff allocates a few small tuples and lists per node and frees none of them until
    # it returns; the cyclic garbage collector would rescan that growing heap again and
    # again (a third of the time at 50,000 nodes) for cycles that cannot exist here.
    collecting = gc.isenabled()
    gc.disable()
    try:
        labeler = _Labeler(_shared_param_keys(a, b, ignore), ignore)
        return _diff_graphs(a, b, labeler)
    finally:
        if collecting:
            gc.enable()


# ------------------------------------------------------------------------- labels


def _param_keys_by_kind(model: GraphModel) -> dict[str, set]:
    keys: dict[str, set] = defaultdict(set)
    for graph in model.walk():
        for node in graph.nodes:
            if node.params:
                keys[node.kind].update(node.params)  # C-speed; filtered once per kind below
    return keys


def _shared_param_keys(a: GraphModel, b: GraphModel, ignore: frozenset) -> dict[str, tuple]:
    """Per kind, the sorted parameter keys that both graphs use: the ones matching can trust.

    A key that only one graph knows (a verbose dump's grid against a basic dump) cannot tell
    two nodes apart, so it must not keep them from matching.
    """
    keys_a, keys_b = _param_keys_by_kind(a), _param_keys_by_kind(b)
    shared = {}
    for kind in keys_a.keys() & keys_b.keys():
        common = keys_a[kind] & keys_b[kind]
        shared[kind] = tuple(
            sorted(k for k in common if is_stable_param(k) and k not in _NAME_PARAMS and k not in ignore)
        )
    return shared


class _Labeler:
    """Interns fine and coarse node labels (and child-graph digests) to ints shared by A and B."""

    def __init__(self, shared_keys: dict[str, tuple], ignore: frozenset):
        self.shared_keys = shared_keys
        self.ignore = ignore
        self.fine_ids: dict = {}
        self.coarse_ids: dict = {}
        self.cache: dict[int, tuple[list[int], list[int]]] = {}  # id(model) -> labels

    def labels(self, model: GraphModel) -> tuple[list[int], list[int]]:
        """(fine, coarse) label ids of the model's nodes, in node order."""
        cached = self.cache.get(id(model))
        if cached is not None and len(cached[0]) == len(model.nodes):
            return cached
        fine_ids, coarse_ids, shared = self.fine_ids, self.coarse_ids, self.shared_keys
        fine, coarse = [], []
        no_keys: tuple = ()
        for node in model.nodes:
            name = node.display_name
            head = (node.kind, name)
            coarse.append(coarse_ids.setdefault(head, len(coarse_ids)))
            keys = shared.get(node.kind, no_keys)
            params = node.params
            values = tuple([params.get(k) for k in keys]) if keys else no_keys
            child = self._digest(node.child) if node.child is not None else None
            key = (head, values, child)
            try:
                fine.append(fine_ids.setdefault(key, len(fine_ids)))
            except TypeError:  # a parameter value that is not hashable (not per convention)
                key = (head, repr(values), child)
                fine.append(fine_ids.setdefault(key, len(fine_ids)))
        result = (fine, coarse)
        self.cache[id(model)] = result
        return result

    def _digest(self, child: GraphModel) -> int:
        """A child graph as the multiset of its node labels and of its labelled edges."""
        fine, _ = self.labels(child)
        position = {node.id: i for i, node in enumerate(child.nodes)}
        nodes = tuple(sorted(Counter(fine).items()))
        edges = tuple(sorted(Counter((fine[position[s]], fine[position[d]]) for s, d in child.edges).items()))
        return self.fine_ids.setdefault(("child-graph", nodes, edges), len(self.fine_ids))


# ----------------------------------------------------------------- graph structure


class _Side:
    """One graph prepared for matching: adjacency, labels, canonical order, and (computed
    when first needed) Weisfeiler-Lehman hashes over the fine labels."""

    def __init__(self, model, position, parents, children, fine, coarse, coarse_shape, order, tables):
        self.model: GraphModel = model
        self.position: dict[str, int] = position  # node id -> index in model.nodes
        self.parents: list[list[int]] = parents
        self.children: list[list[int]] = children
        self.fine: list[int] = fine
        self.coarse: list[int] = coarse
        self.coarse_shape: list[int] = coarse_shape  # WL hash over kind/name only
        self.order: list[int] = order  # canonical topological order, as node indices
        self.rank: list[int] = _ranks(order)  # node index -> position in order
        self._tables = tables
        self._hashes: list[list[int]] | None = None

    @property
    def hashes(self) -> list[list[int]]:
        """hashes[r][i]: WL hash of node i after r rounds over fine labels (hashes[0] = fine).

        Only needed when the alignment leaves nodes over, so an identical diff never pays."""
        if self._hashes is None:
            self._hashes = _wl_hashes(self.parents, self.children, self.fine, WL_ROUNDS, self._tables)
        return self._hashes

    def reordered(self, order: list[int]) -> _Side:
        """The same graph with another canonical order (hashes shared)."""
        side = _Side(
            self.model,
            self.position,
            self.parents,
            self.children,
            self.fine,
            self.coarse,
            self.coarse_shape,
            order,
            self._tables,
        )
        side._hashes = self._hashes
        return side


def _adjacency(model: GraphModel) -> tuple[dict[str, int], list[list[int]], list[list[int]]]:
    position = {node.id: i for i, node in enumerate(model.nodes)}
    if len(position) != len(model.nodes):
        raise ValueError("duplicate node ids in graph")
    parents: list[list[int]] = [[] for _ in model.nodes]
    children: list[list[int]] = [[] for _ in model.nodes]
    for src, dst in model.edges:
        s, d = position[src], position[dst]
        children[s].append(d)
        parents[d].append(s)
    return position, parents, children


def _wl_hashes(parents, children, base: list[int], rounds: int, tables: list[dict]) -> list[list[int]]:
    """Weisfeiler-Lehman refinement: each round, a node's hash becomes (its hash, sorted
    parents' hashes, sorted children's hashes), interned in the round's table (shared by both
    graphs, so equal neighbourhoods get equal ints on both sides)."""
    hashes = [base]
    current = base
    for r in range(rounds):
        table = tables[r]
        nxt = []
        append = nxt.append
        for i, h in enumerate(current):
            ps, cs = parents[i], children[i]
            up = (current[ps[0]],) if len(ps) == 1 else tuple(sorted([current[p] for p in ps]))
            down = (current[cs[0]],) if len(cs) == 1 else tuple(sorted([current[c] for c in cs]))
            append(table.setdefault((h, up, down), len(table)))
        hashes.append(nxt)
        current = nxt
    return hashes


# Look-alike siblings one pick compares at most (a wider fan-out is taken in node order), the
# nodes one comparison looks at around each of them, and the nodes all comparisons of one
# order look at, per node and edge of the graph (see _canonical_order): ties cost O(V + E).
_TIE_MAX_NODES = 16
_TIE_LOOKAHEAD = 32
_TIE_BUDGET = 1


def _canonical_order(parents, children, sort_key: list) -> list[int]:
    """Depth-first Kahn order: finish a branch before starting the next, ready nodes by key.

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
    n = len(parents)
    indegree = [len(ps) for ps in parents]
    order: list[int] = []
    rank = [-1] * n  # place in the order; -1 until placed
    far = (n + 1,)
    budget = [_TIE_BUDGET * (n + sum(map(len, children))) + 20_000]  # nodes lead() may visit

    def places(i: int) -> tuple:
        ps = parents[i]
        return (rank[ps[0]],) if len(ps) == 1 else tuple(sorted([rank[p] for p in ps]))

    def push(stack: list, ready: list, key) -> None:
        """Push ready nodes, smallest key on top; nodes with equal keys as one list."""
        keyed = sorted([(key(i), i) for i in ready], reverse=True)
        t = 0
        while t < len(keyed):
            u = t + 1
            while u < len(keyed) and keyed[u][0] == keyed[t][0]:
                u += 1
            stack.append(keyed[t][1] if u == t + 1 else [i for _, i in keyed[t:u]])
            t = u

    def lead(i: int) -> tuple:
        """Where unplaced node i touches the placed part of the graph: for each distance
        (edges either way, through unplaced nodes only) the places of the placed nodes at
        that distance, as far as _TIE_LOOKAHEAD nodes (whole distances only)."""
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
                profile.append(far)
            level = below
        budget[0] -= seen_count
        return tuple(profile)

    def pick(group: list) -> int:
        if len(group) > _TIE_MAX_NODES or budget[0] < 0:
            best = min(group)
        else:
            best = min(group, key=lambda i: (lead(i), i))
        group.remove(best)
        return best

    def walk(stack: list) -> None:
        while stack:
            item = stack.pop()
            if type(item) is list:
                i = pick(item)
                stack.append(item if len(item) > 1 else item[0])
            else:
                i = item
            rank[i] = len(order)
            order.append(i)
            ready = []
            for c in children[i]:
                indegree[c] -= 1
                if not indegree[c]:
                    ready.append(c)
            if len(ready) == 1:
                stack.append(ready[0])
            elif ready:
                push(stack, ready, lambda c: (sort_key[c], places(c)))

    # Look-alike roots, tallest first: a root that a change cut loose (its parent's edge
    # removed) heads a part of the graph, and its part should follow the rest, not lead it.
    roots: list = []
    sources = [i for i in range(n) if not indegree[i]]
    if len(set(map(sort_key.__getitem__, sources))) < len(sources):
        height = _heights(parents, children)
        push(roots, sources, lambda i: (sort_key[i], -height[i]))
    else:
        push(roots, sources, sort_key.__getitem__)
    walk(roots)
    if len(order) < n:
        placed = set(order)
        for i in sorted((i for i in range(n) if i not in placed), key=lambda i: (sort_key[i], i)):
            if indegree[i] > 0:  # not placed yet (placed nodes end at 0 or below)
                indegree[i] = 0
                walk([i])
    return order


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


def _prepare(model: GraphModel, labeler: _Labeler, tables: list[dict], coarse_tables: list[dict]) -> _Side:
    position, parents, children = _adjacency(model)
    fine, coarse = labeler.labels(model)
    # The order must not depend on parameters: a kernel whose grid changed has to stay where
    # it was among its siblings, or the alignment pairs siblings crosswise. So ready nodes are
    # sorted by kind/name and by neighbourhood hashes over kind/name only; node order
    # (creation order in CUDA dumps) breaks the remaining ties.
    coarse_shape = _wl_hashes(parents, children, coarse, WL_ROUNDS, coarse_tables)[-1]
    sort_key = list(zip(coarse, coarse_shape))
    order = _canonical_order(parents, children, sort_key)
    return _Side(model, position, parents, children, fine, coarse, coarse_shape, order, tables)


def _ranks(order: list[int]) -> list[int]:
    rank = [0] * len(order)
    for r, i in enumerate(order):
        rank[i] = r
    return rank


def _structural_order(side: _Side, table: dict) -> _Side:
    """The side again, with ties between look-alike ready nodes broken by structure, not by
    node order: what everything below a node looks like, then everything above it.

    Used when a renumbered (or reshuffled) dump of the same graph did not come out
    identical because node order broke a tie differently on the two sides.
    """
    order = _canonical_order(side.parents, side.children, side.fine)  # any topological order
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
    return side.reordered(_canonical_order(side.parents, side.children, sort_key))


# ---------------------------------------------------------------------- alignment


def align(
    a: list,
    b: list,
    max_edit_distance: int = MAX_EDIT_DISTANCE,
    budget: list | None = None,
) -> list[tuple[int, int]]:
    """Pairs ``(i, j)`` with ``a[i] == b[j]``, increasing in both i and j: a common subsequence.

    A longest one when the sequences differ by a few edits (``_QUICK_EDIT_DISTANCE``), or by
    up to ``max_edit_distance`` where no anchor is found; a good one, in bounded work,
    otherwise. ``budget`` (a one-item list, shared by the calls of one diff; default
    ``[ALIGN_WORK_LIMIT]``) caps the steps of Myers' search; past it only linear steps run.

    Per stretch: common prefix and suffix; Myers' O(ND) diff if a few edits do; else
    anchors — items, then runs of 8, 32, 128 items, unique in both stretches (their longest
    increasing chain, as in patience diff) — with the stretches between anchors handled the
    same way; else Myers up to ``max_edit_distance``; else cuts at proportional positions
    into pieces small enough for Myers; last, the k-th occurrence of an item paired with
    its k-th.
    """
    pairs: list[tuple[int, int]] = []
    if budget is None:
        budget = [ALIGN_WORK_LIMIT]
    runs: dict = {}  # run ids of a and b, built the first time anchors need them
    work = [(0, len(a), 0, len(b))]
    while work:
        alo, ahi, blo, bhi = work.pop()
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            pairs.append((alo, blo))
            alo += 1
            blo += 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi -= 1
            bhi -= 1
            pairs.append((ahi, bhi))
        if alo == ahi or blo == bhi:
            continue
        # A few edits: Myers settles it at once. Many: anchors split the stretch first, so
        # the expensive search below runs only where nothing else can tell where things are.
        quick = min(max_edit_distance, _QUICK_EDIT_DISTANCE)
        found = _myers_within(a, alo, ahi, b, blo, bhi, quick, budget)
        if found is not None:
            pairs.extend(found)
            continue
        anchors = _unique_anchors(a, alo, ahi, b, blo, bhi, runs)
        if anchors:
            previous_i, previous_j = alo, blo
            for i, j, length in anchors:
                pairs.extend((i + t, j + t) for t in range(length))
                if i > previous_i and j > previous_j:
                    work.append((previous_i, i, previous_j, j))
                previous_i, previous_j = i + length, j + length
            if previous_i < ahi and previous_j < bhi:
                work.append((previous_i, ahi, previous_j, bhi))
            continue
        if max_edit_distance > quick:
            found = _myers_within(a, alo, ahi, b, blo, bhi, max_edit_distance, budget)
            if found is not None:
                pairs.extend(found)
                continue
        n, m = ahi - alo, bhi - blo
        if n + m > _PIECE:
            # Periodic stretches (the same layer again and again) have no unique anchor;
            # edits spread evenly keep pieces cut at proportional positions in step.
            pieces = -(-(n + m) // _PIECE)
            cuts_a = [alo + n * t // pieces for t in range(pieces + 1)]
            cuts_b = [blo + m * t // pieces for t in range(pieces + 1)]
            work.extend((cuts_a[t], cuts_a[t + 1], cuts_b[t], cuts_b[t + 1]) for t in range(pieces))
            continue
        pairs.extend(_occurrence_pairs(a, alo, ahi, b, blo, bhi))
    pairs.sort()
    return pairs


def _myers_within(a, alo, ahi, b, blo, bhi, max_d: int, budget: list) -> list | None:
    """Myers on a stretch when it can succeed within ``max_d`` edits and the work budget;
    None when it cannot (or did not)."""
    n, m = ahi - alo, bhi - blo
    count_a = Counter(a[alo:ahi])
    count_b = Counter(b[blo:bhi])
    if not count_a.keys() & count_b.keys():
        return []  # nothing in common: nothing to search for
    # Every item in surplus on one side costs one insertion or deletion at least.
    surplus = sum((count_a - count_b).values()) + sum((count_b - count_a).values())
    max_d = min(max_d, n + m, int(max(budget[0], 0) ** 0.5))
    if surplus > max_d:
        return None
    found = _myers(a, alo, ahi, b, blo, bhi, max_d)
    d = max_d if found is None else n + m - 2 * len(found)
    budget[0] -= (d + 1) * (d + 2) // 2  # diagonals visited (snakes come on top)
    return found


def _unique_anchors(a, alo, ahi, b, blo, bhi, runs: dict) -> list[tuple[int, int, int]]:
    """Anchors for a stretch, as ``(i, j, length)``: runs of ``length`` items that occur
    once in a[alo:ahi] and once in b[blo:bhi], the longest increasing chain of them with
    overlapping runs left out. Single items first, as patience diff does; when none is
    unique (periodic graphs repeat every short run), runs of 128, 32, then 8 items — the
    longest first, since a short run can be unique on both sides by chance at two places
    that have nothing to do with each other. ``runs`` caches the run ids of a and b."""
    anchors = _anchors_of(a[alo:ahi], b[blo:bhi], alo, blo, 1)
    if anchors:
        return anchors
    if not runs:
        runs.update(_run_ids(a, b))
    for length in sorted(runs, reverse=True):
        runs_a, runs_b = runs[length]
        if ahi - alo < length or bhi - blo < length:
            continue
        anchors = _anchors_of(
            runs_a[alo : ahi - length + 1], runs_b[blo : bhi - length + 1], alo, blo, length
        )
        if anchors:
            return anchors
    return []


def _run_ids(a: list, b: list) -> dict[int, tuple[list, list]]:
    """For lengths 8, 32, 128: ids of the runs of that many items starting at each position
    of a and of b (equal runs, equal ids). Built by doubling: O(len) per doubling."""
    levels = {}
    runs_a, runs_b = a, b
    length = 1
    table: dict = {}
    while length < _GRAM_MAX:
        runs_a = _double(runs_a, length, table)
        runs_b = _double(runs_b, length, table)
        length *= 2
        if not runs_a or not runs_b:
            break
        if length in (8, 32, _GRAM_MAX):
            levels[length] = (runs_a, runs_b)
    return levels


def _double(runs: list, length: int, table: dict) -> list:
    """Ids of runs of 2·length items from ids of runs of ``length``: the run at i followed
    by the run at i + length."""
    return [table.setdefault((length, x, y), len(table)) for x, y in zip(runs, runs[length:])]


def _anchors_of(grams_a, grams_b, alo, blo, length) -> list[tuple[int, int, int]]:
    count_a = Counter(grams_a)
    count_b = Counter(grams_b)
    where_b = {
        gram: blo + j for j, gram in enumerate(grams_b) if count_b[gram] == 1 and count_a.get(gram) == 1
    }
    if not where_b:
        return []
    candidates = [(alo + i, where_b[g]) for i, g in enumerate(grams_a) if g in where_b]
    anchors = []
    end_i = end_j = -1
    for i, j in _longest_increasing(candidates):
        if i >= end_i and j >= end_j:
            anchors.append((i, j, length))
            end_i, end_j = i + length, j + length
    return anchors


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``pairs`` (sorted by first item) whose second items increase."""
    tails: list[int] = []  # tails[k]: smallest j ending an increasing run of length k+1
    tail_index: list[int] = []
    previous = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        k = bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_index.append(index)
        else:
            tails[k] = j
            tail_index[k] = index
        previous[index] = tail_index[k - 1] if k else -1
    run = []
    index = tail_index[-1] if tail_index else -1
    while index != -1:
        run.append(pairs[index])
        index = previous[index]
    run.reverse()
    return run


def _myers(a, alo, ahi, b, blo, bhi, max_d: int) -> list[tuple[int, int]] | None:
    """Myers' greedy O(ND) shortest edit script on a[alo:ahi] vs b[blo:bhi] -> matched pairs,
    or None when more than ``max_d`` edits are needed."""
    n, m = ahi - alo, bhi - blo
    if not set(a[alo:ahi]).intersection(b[blo:bhi]):
        return []  # nothing in common: no need to search
    max_d = min(max_d, n + m)
    offset = max_d + 1
    v = [0] * (2 * max_d + 3)
    trace = []
    for d in range(max_d + 1):
        trace.append(v[offset - d - 1 : offset + d + 2])  # state before round d, k in [-d-1, d+1]
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[offset + k - 1] < v[offset + k + 1]):
                x = v[offset + k + 1]
            else:
                x = v[offset + k - 1] + 1
            y = x - k
            while x < n and y < m and a[alo + x] == b[blo + y]:
                x += 1
                y += 1
            v[offset + k] = x
            if x >= n and y >= m:
                return _myers_backtrack(trace, d, n, m, alo, blo)
    return None


def _myers_backtrack(trace, final_d: int, n: int, m: int, alo: int, blo: int) -> list[tuple[int, int]]:
    pairs = []
    x, y = n, m
    for d in range(final_d, 0, -1):
        saved = trace[d]  # saved[k + d + 1] is v[k] before round d

        def v_at(k: int, saved=saved, d=d) -> int:
            return saved[k + d + 1]

        k = x - y
        if k == -d or (k != d and v_at(k - 1) < v_at(k + 1)):
            previous_k = k + 1
        else:
            previous_k = k - 1
        previous_x = v_at(previous_k)
        previous_y = previous_x - previous_k
        while x > previous_x and y > previous_y:
            x -= 1
            y -= 1
            pairs.append((alo + x, blo + y))
        x, y = previous_x, previous_y
    while x > 0 and y > 0:
        x -= 1
        y -= 1
        pairs.append((alo + x, blo + y))
    return pairs


def _occurrence_pairs(a, alo, ahi, b, blo, bhi) -> list[tuple[int, int]]:
    """Linear fallback: the k-th occurrence of an item in a with its k-th in b, in order."""
    positions: dict = defaultdict(list)
    for j in range(bhi - 1, blo - 1, -1):
        positions[b[j]].append(j)  # reversed, so pop() yields them in order
    candidates = []
    for i in range(alo, ahi):
        waiting = positions.get(a[i])
        if waiting:
            candidates.append((i, waiting.pop()))
    return _longest_increasing(candidates)


# -------------------------------------------------------------------------- matching


def _match(side_a: _Side, side_b: _Side) -> dict[int, int]:
    """Node index of A -> node index of B for every matched pair (see the module docstring)."""
    order_a, order_b = side_a.order, side_b.order
    a_to_b: dict[int, int] = {}
    b_to_a = [-1] * len(order_b)

    def pair(i: int, j: int) -> None:
        a_to_b[i] = j
        b_to_a[j] = i

    # Step 3: unchanged nodes, by alignment of fine labels over the canonical orders.
    fine_a = [side_a.fine[i] for i in order_a]
    fine_b = [side_b.fine[j] for j in order_b]
    budget = [ALIGN_WORK_LIMIT]  # one budget for every alignment of this diff
    aligned = align(fine_a, fine_b, budget=budget)
    for x, y in aligned:
        pair(order_a[x], order_b[y])
    if len(aligned) == len(order_a) == len(order_b):
        edges = len(side_a.model.edges)
        if edges == len(side_b.model.edges) == _kept_edges(side_a, side_b, a_to_b):
            return a_to_b  # every node matched in sequence, every edge kept: nothing to find

    # Step 4: changed nodes, by coarse label inside each gap the alignment left.
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
            _pair_by_key(
                [i for i in gap_a if i not in a_to_b],
                [j for j in gap_b if b_to_a[j] < 0],
                side_a.coarse,
                side_b.coarse,
                pair,
            )

    # Step 5: moved nodes, then propagation to their neighbourhoods.
    if len(a_to_b) < len(order_a) and len(a_to_b) < len(order_b):
        for r in range(len(side_a.hashes) - 1, 0, -1):
            _pair_unique(order_a, order_b, side_a.hashes[r], side_b.hashes[r], a_to_b, b_to_a, pair)
        _propagate(side_a, side_b, a_to_b, b_to_a, pair)

    # Step 6: among equally good alignments the sequence picked one; prefer keeping edges:
    # look-alikes follow their matched neighbours (parents, then children), then single
    # nodes are re-seated.
    _follow(side_a, side_b, a_to_b, b_to_a)
    _reseat(side_a, side_b, a_to_b, b_to_a)
    if len(a_to_b) < len(order_a) and len(a_to_b) < len(order_b):
        _propagate(side_a, side_b, a_to_b, b_to_a, pair)
    return a_to_b


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


def _propagate(side_a: _Side, side_b: _Side, a_to_b: dict, b_to_a: list, pair) -> None:
    """From each matched pair, pair up unmatched parents (and children) with equal labels."""
    queue = list(a_to_b.items())
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


def _kept_edges(side_a: _Side, side_b: _Side, a_to_b: dict) -> int:
    """Edges of A whose two ends are matched to the two ends of an edge of B."""
    children_b = side_b.children
    kept = 0
    for s, ds in enumerate(side_a.children):
        t = a_to_b.get(s)
        if t is None or not ds:
            continue
        images = children_b[t]
        if len(ds) == 1 and len(images) == 1:
            kept += a_to_b.get(ds[0]) == images[0]
            continue
        images_set = set(images)
        for d in ds:
            kept += a_to_b.get(d) in images_set
    return kept


# Neighbours of a node's matched neighbour looked through for a better partner; past this
# (a fan-out of thousands) _follow leaves the node where the alignment put it.
_FOLLOW_MAX_CANDIDATES = 64

# Forward and backward passes of _follow at most (it stops when neither gains an edge).
_FOLLOW_ROUNDS = 4


def _follow(side_a: _Side, side_b: _Side, a_to_b: dict, b_to_a: list) -> None:
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
    """
    fine_a, fine_b, rank_b = side_a.fine, side_b.fine, side_b.rank
    most = min(len(side_a.model.edges), len(side_b.model.edges))  # no matching keeps more
    before = _kept_edges(side_a, side_b, a_to_b)
    if before >= most:
        return
    passes = [
        (side_a.parents, side_b.parents, side_b.children, side_a.order),
        (side_a.children, side_b.children, side_b.parents, side_a.order[::-1]),
    ] * _FOLLOW_ROUNDS
    failed = 0

    def agreeing(near_a: list, near_b: list, i: int, j: int) -> int:
        """Matched neighbours of A node i (one side) whose images neighbour B node j."""
        around = set(near_b[j])
        return sum(1 for p in near_a[i] if a_to_b.get(p) in around)

    for near_a, near_b, far_b, order in passes:
        saved_a, saved_b = dict(a_to_b), b_to_a[:]
        done = bytearray(len(fine_a))
        for x in order:
            done[x] = 1
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
                    if done[owner] and agreeing(near_a, near_b, owner, c) > agreeing(
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
            if owner >= 0:
                a_to_b[owner] = y0
                b_to_a[y0] = owner
            elif y0 is not None:
                b_to_a[y0] = -1
            a_to_b[x] = best
            b_to_a[best] = x
        after = _kept_edges(side_a, side_b, a_to_b)
        if after > before:
            before, failed = after, 0
        else:
            a_to_b.clear()
            a_to_b.update(saved_a)
            b_to_a[:] = saved_b
            failed += 1
        if before >= most or failed == 2:
            return


# A node with more candidate places than this is not re-seated (a fan-out of thousands).
_RESEAT_MAX_CANDIDATES = 64


def _reseat(side_a: _Side, side_b: _Side, a_to_b: dict, b_to_a: list) -> None:
    """Move matched nodes of A onto look-alikes in B where that keeps more edges.

    Sequence alignment cannot tell which of several identical nodes was added (the 3rd
    "acc" of four, or the 4th?), nor, between look-alike branches, which is which; the edges
    can. A node whose partner breaks some of its edges is tried on each B node of the
    partner's kind and name that is adjacent to the images of its neighbours: an unmatched
    one is taken over, a matched one is swapped with. A move is made only when it strictly
    increases the number of kept edges, so this ends; afterwards only the moved nodes'
    neighbours are looked at again.
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
        total = kept(i) + kept(other)
        if other >= 0 and (other in children_a[i] or other in parents_a[i]):
            ji, jo = a_to_b.get(i), a_to_b.get(other)
            if ji is not None and jo is not None and (jo in children_b[ji] or jo in parents_b[ji]):
                total -= 1
        return total

    def assign(i: int, j: int) -> None:
        a_to_b[i] = j
        b_to_a[j] = i

    work = list(a_to_b)
    queued = set(work)
    while work:
        i = work.pop()
        queued.discard(i)
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
        for k in touched:
            if k in a_to_b and k not in queued:
                queued.add(k)
                work.append(k)


# ------------------------------------------------------------------------- the diff


def param_changes(a: Node, b: Node, ignore: frozenset = frozenset()) -> dict[str, tuple[Any, Any]]:
    """``{key: (old, new)}`` for stable parameters both nodes carry with different values.

    A parameter missing (or None) on either side is not a change: it is detail one dump
    has and the other lacks. Pointers/handles, ``demangled`` and ``ignore`` are left out.
    """
    changes = {}
    params_b = b.params
    for key, old in a.params.items():
        if old is None or key in ignore or key in _NAME_PARAMS or not is_stable_param(key):
            continue
        new = params_b.get(key)
        if new is not None and new != old:
            changes[key] = (old, new)
    return changes


def _diff_graphs(a: GraphModel, b: GraphModel, labeler: _Labeler) -> GraphDiff:
    tables: list[dict] = [{} for _ in range(WL_ROUNDS)]
    coarse_tables: list[dict] = [{} for _ in range(WL_ROUNDS)]
    side_a = _prepare(a, labeler, tables, coarse_tables)
    side_b = _prepare(b, labeler, tables, coarse_tables)
    result = _report(side_a, side_b, _match(side_a, side_b), labeler)
    if not result.identical and len(a.edges) == len(b.edges) and Counter(side_a.fine) == Counter(side_b.fine):
        # Same nodes, same number of edges, yet different: maybe only a tie in the order
        # went the other way (a renumbered dump). Order by structure and keep the smaller diff.
        table: dict = {}
        side_a, side_b = _structural_order(side_a, table), _structural_order(side_b, table)
        retry = _report(side_a, side_b, _match(side_a, side_b), labeler)
        if _size(retry) < _size(result):
            result = retry
    return result


def _size(diff: GraphDiff) -> int:
    return (
        len(diff.added)
        + len(diff.removed)
        + len(diff.changed)
        + len(diff.edges_added)
        + len(diff.edges_removed)
    )


def _report(side_a: _Side, side_b: _Side, a_to_b: dict[int, int], labeler: _Labeler) -> GraphDiff:
    """Turn a matching (node index of A -> of B) into the GraphDiff users read."""
    a, b = side_a.model, side_b.model
    nodes_a, nodes_b = a.nodes, b.nodes
    changed: list[NodeChange] = []
    matches: dict[str, str] = {}
    order_a = a.topological_order()
    position_a = side_a.position
    fine_a, fine_b = side_a.fine, side_b.fine
    removed = []
    for node_id in order_a:
        i = position_a[node_id]
        j = a_to_b.get(i)
        if j is None:
            removed.append(node_id)
            continue
        node_a, node_b = nodes_a[i], nodes_b[j]
        matches[node_id] = node_b.id
        same_label = fine_a[i] == fine_b[j]
        if same_label and node_a.child is None:
            continue  # equal labels: every parameter both carry is equal
        params = {} if same_label else param_changes(node_a, node_b, labeler.ignore)
        child = None
        if node_a.child is not None and node_b.child is not None:
            child_diff = _diff_graphs(node_a.child, node_b.child, labeler)
            child = None if child_diff.identical else child_diff
        if params or child is not None:
            changed.append(NodeChange(node_id, node_b.id, node_a.kind, node_a.display_name, params, child))
    matched_b = set(matches.values())
    added = (
        [node_id for node_id in b.topological_order() if node_id not in matched_b]
        if len(matched_b) < len(nodes_b)
        else []
    )

    # Rewiring: edges between matched nodes present on one side only.
    edges_b = set(b.edges)
    mapped_a = set()
    edges_removed = []
    for src, dst in a.edges:
        s, d = matches.get(src), matches.get(dst)
        if s is None or d is None:
            continue
        mapped_a.add((s, d))
        if (s, d) not in edges_b:
            edges_removed.append((src, dst))
    edges_added = [
        (src, dst)
        for src, dst in b.edges
        if src in matched_b and dst in matched_b and (src, dst) not in mapped_a
    ]
    return GraphDiff(
        a=a,
        b=b,
        ignore=labeler.ignore,
        matches=matches,
        changed=changed,
        added=added,
        removed=removed,
        edges_added=_in_order(edges_added, b),
        edges_removed=_in_order(edges_removed, a),
        stats_a=GraphStats.of(a),
        stats_b=GraphStats.of(b),
    )


def _in_order(edges: list[tuple[str, str]], model: GraphModel) -> list[tuple[str, str]]:
    """Edges sorted by the topological position of their ends, so listings read in order."""
    if len(edges) < 2:
        return edges
    rank = {node_id: r for r, node_id in enumerate(model.topological_order())}
    return sorted(edges, key=lambda e: (rank[e[0]], rank[e[1]]))
