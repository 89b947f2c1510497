"""Node labels for matching: what a node does, interned to small ints shared by both graphs.

A *fine* label is kind, kernel name as written, the stable parameters both graphs know for that kind,
and a digest of the node's child graph; a *coarse* label is kind and name only.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from operator import attrgetter, itemgetter
from typing import Any

from ..model.graph_model import GraphModel, Node, is_stable_param

# Parameters that name the node's kernel rather than describe its work (see stable_params).
NAME_PARAMS = frozenset({"demangled"})

#: Per kind, CUDA's own fields a node's ``bytes`` is derived from (as dot.labels derives
#: it): ignoring ``bytes`` ignores them too, and where one changed exactly as ``bytes`` did,
#: the report shows ``bytes`` alone. Other kinds' fields of these names are left alone.
SIZE_FIELDS = {
    "memset": frozenset({"width", "height"}),
    "memcpy": frozenset({"extent_width", "extent_height", "extent_depth"}),
    "mem_alloc": frozenset({"bytesize", "byte_size", "size", "bytes_size"}),
}
_NO_FIELDS: frozenset = frozenset()


def left_out(kind: str, ignore: frozenset) -> frozenset:
    """The parameters of a node of ``kind`` that ``ignore`` leaves out (see SIZE_FIELDS)."""
    if "bytes" in ignore:
        return ignore | SIZE_FIELDS.get(kind, _NO_FIELDS)
    return ignore


def _param_keys_by_kind(model: GraphModel) -> dict[str, set]:
    keys: dict[str, set] = defaultdict(set)
    for graph in model.walk():
        nodes = graph.nodes
        kinds = set(map(_kind, nodes))
        for kind in kinds:
            group = [n.params for n in nodes if n.kind == kind] if len(kinds) > 1 else map(_params, nodes)
            names = set().union(*group)  # the keys of every dict: C-speed
            if names:
                keys[kind].update(names)
    return keys


_kind = attrgetter("kind")
_params = attrgetter("params")


def shared_param_keys(a: GraphModel, b: GraphModel, ignore: frozenset) -> dict[str, tuple]:
    """Per kind, the sorted parameter keys that both graphs use: the ones matching can trust.

    A key that only one graph knows (a verbose dump's grid against a basic dump) cannot tell
    two nodes apart, so it must not keep them from matching.
    """
    keys_a, keys_b = _param_keys_by_kind(a), _param_keys_by_kind(b)
    shared = {}
    for kind in keys_a.keys() & keys_b.keys():
        common = keys_a[kind] & keys_b[kind]
        out = left_out(kind, ignore)
        shared[kind] = tuple(
            sorted(k for k in common if is_stable_param(k) and k not in NAME_PARAMS and k not in out)
        )
    return shared


class Labeler:
    """Interns fine and coarse node labels (and child-graph digests) to ints shared by A and B."""

    def __init__(self, shared_keys: dict[str, tuple], ignore: frozenset):
        self.shared_keys = shared_keys
        self.ignore = ignore
        self.fine_ids: dict = {}
        self.coarse_ids: dict = {}
        self.with_child: set[int] = set()  # the fine labels of nodes with a child graph
        # id(model) -> (model, labels): the model is held so that its id cannot be reused by
        # another model while the entry exists (a stale hit would give it the wrong labels)
        self.cache: dict[int, tuple[GraphModel, tuple[list[int], list[int]]]] = {}
        # Per kind with several shared keys: their values in one call (params.get for each
        # key when a node lacks one, so a missing key still reads as None).
        self.getters = {kind: itemgetter(*keys) for kind, keys in shared_keys.items() if len(keys) > 1}

    def labels(self, model: GraphModel) -> tuple[list[int], list[int]]:
        """(fine, coarse) label ids of the model's nodes, in node order."""
        held = self.cache.get(id(model))
        if held is not None and held[0] is model and len(held[1][0]) == len(model.nodes):
            return held[1]
        fine_ids, coarse_ids, shared = self.fine_ids, self.coarse_ids, self.shared_keys
        fine, coarse = [], []
        no_keys: tuple = ()
        getters = self.getters
        for node in model.nodes:
            params = node.params
            # the name as written, not the demangled one: that is there only where the
            # machine that read the file had a demangler, and the same graph saved on two
            # machines came out mostly different
            head = (node.kind, node.name)
            coarse.append(coarse_ids.setdefault(head, len(coarse_ids)))
            keys = shared.get(node.kind, no_keys)
            if len(keys) > 1:
                try:  # one itemgetter call when the node has every key (the usual case)
                    values = getters[node.kind](params)
                except KeyError:
                    values = tuple(map(params.get, keys))
            else:
                values = tuple(map(params.get, keys)) if keys else no_keys
            child = self._digest(node.child) if node.child is not None else None
            key = (head, values, child)
            try:
                fine.append(fine_ids.setdefault(key, len(fine_ids)))
            except TypeError:  # a parameter value that is not hashable (not per convention)
                key = (head, repr(values), child)
                fine.append(fine_ids.setdefault(key, len(fine_ids)))
            if child is not None:
                self.with_child.add(fine[-1])
        result = (fine, coarse)
        self.cache[id(model)] = (model, result)
        return result

    def coarse_heads(self) -> list:
        """Coarse label id -> its (kind, name), for every label interned so far."""
        return list(self.coarse_ids)

    def _digest(self, child: GraphModel) -> int:
        """A child graph as the multiset of its node labels and of its labelled edges."""
        fine, _ = self.labels(child)
        position = {node.id: i for i, node in enumerate(child.nodes)}
        nodes = tuple(sorted(Counter(fine).items()))
        edges = tuple(sorted(Counter((fine[position[s]], fine[position[d]]) for s, d in child.edges).items()))
        return self.fine_ids.setdefault(("child-graph", nodes, edges), len(self.fine_ids))


def param_changes(a: Node, b: Node, ignore: frozenset = frozenset()) -> dict[str, tuple[Any, Any]]:
    """``{key: (old, new)}`` for stable parameters both nodes carry with different values.

    A parameter missing (or None) on either side is not a change: it is detail one dump
    has and the other lacks. Pointers/handles, ``demangled`` and ``ignore`` are left out.
    """
    changes = {}
    params_b = b.params
    ignore = left_out(a.kind, ignore)
    for key, old in a.params.items():
        if old is None or key in ignore or key in NAME_PARAMS or not is_stable_param(key):
            continue
        new = params_b.get(key)
        if new is not None and new != old:
            changes[key] = (old, new)
    size = changes.get("bytes")
    if size is not None:
        for key in SIZE_FIELDS.get(a.kind, _NO_FIELDS).intersection(changes):
            if changes[key] == size:
                del changes[key]  # the size once, as bytes
    return changes
