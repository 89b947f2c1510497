"""What a diff reports: the result types and their JSON form (see ``structural.diff_models``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..enums import ExitCode
from ..model.graph_model import GraphModel, Node, is_stable_param, to_jsonable
from .labels import NAME_PARAMS, left_out

DIFF_JSON_FORMAT = "accelgraph-diff"
DIFF_JSON_VERSION = 1


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
    def of(cls, model: GraphModel, kinds: dict | None = None) -> GraphStats:
        """Measure ``model`` (O(V+E); the model caches its order and levels). ``kinds``: its
        ``kind_counts()`` when the caller has them already."""
        widths = model.level_widths()
        return cls(
            nodes=len(model.nodes),
            edges=len(model.edges),
            levels=len(widths),
            max_width=max(widths, default=0),
            critical_path=model.critical_path_length(),
            kinds=model.kind_counts() if kinds is None else kinds,
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
            "added": [node_json(self.b.node(i), self.ignore) for i in self.added],
            "removed": [node_json(self.a.node(i), self.ignore) for i in self.removed],
            "edges_added": [[s, d] for s, d in self.edges_added],
            "edges_removed": [[s, d] for s, d in self.edges_removed],
        }
        if include_matches:
            document["matches"] = [[a, b] for a, b in self.matches.items()]
        return document


def node_json(node: Node, ignore: frozenset = frozenset()) -> dict:
    """An added or removed node in the report: its stable params, less those ``ignore``
    leaves out of the report (--ignore), as the changed nodes' are."""
    skipped = left_out(node.kind, ignore)
    params = {
        k: to_jsonable(v)
        for k, v in sorted(node.params.items())
        if is_stable_param(k) and k not in NAME_PARAMS and k not in skipped
    }
    return {"id": node.id, "kind": node.kind, "name": node.display_name, "params": params}
