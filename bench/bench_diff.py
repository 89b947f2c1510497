"""Benchmark: `accelgraph diff` (diff_models) on recorded 10,000-node dumps and 50k-100k-node models.

    python bench/bench_diff.py                        # recorded dumps in tests/data/dumps
    python bench/bench_diff.py --json bench/results/diff.json --repeat 5
    python bench/bench_diff.py --synthetic            # no recorded dumps: Python-built graphs

Inputs (recorded on the GPU by `make fixtures`): ``chain10k_verbose.dot.gz`` (10,000 kernels
in one chain) and ``forkjoin_wide_verbose.dot.gz`` (2,500 fork/join layers of 3 identical
parallel branches: 22,500 kernels, 37,493 edges), parsed once, and their ``_basic`` twins
when recorded. Each is diffed against:

* itself parsed again (identical), and a renumbered copy (ids permuted, nodes and edges
  shuffled, pointers re-drawn: identical, every edge included);
* its basic-flags dump, renumbered (no grid/block/bytes on one side: identical);
* a mutated copy, as is and renumbered: one kernel's grid changed, one node removed, 50
  nodes inserted, one parallel branch added where there is a join (known node counts,
  checked, and at most the edge changes those mutations explain);
* a renumbered copy with one edge removed inside a fork/join branch (exactly one edge
  removed, checked; not for the chain, which such an edge cuts in two);
* a "sweep" copy where every kernel's grid changed (every node is "changed");
* the other recorded graph (unrelated graphs: the alignment's worst case).

The big model ("concat75k" from the recorded dumps, "concat50k" from --synthetic) is the
chain, the fork/join, the chain, the fork/join and the chain again, with ids prefixed per
copy and each copy's sinks joined to the next copy's roots, so it is one connected graph;
its mutated copy gets the same mutations in each of the five parts. "chain100k" is the chain
ten times over, one chain of 100,000 kernels, built the same way. Times are CPU time
(``time.process_time``) of ``diff_models`` only (parsing excluded), best of --repeat, so
other work on the machine counts less.
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import random
import sys
import time
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402 - after the sys.path line above
from rich.table import Table  # noqa: E402

from accelgraph_cli.diff.structural import diff_models  # noqa: E402
from accelgraph_cli.model.graph_model import GraphModel, Node  # noqa: E402

DEFAULT_DUMPS = ROOT / "tests" / "data" / "dumps"
RECORDED = ("chain10k_verbose.dot", "forkjoin_wide_verbose.dot")


# ---------------------------------------------------------------------- inputs


def load_recorded(dump_dir: Path) -> dict[str, GraphModel]:
    """The recorded 10k dumps (gzipped or not) as models; SystemExit with a hint if absent."""
    models = {}
    for name in RECORDED:
        model = _load(dump_dir, name)
        if model is None:
            raise SystemExit(
                f"{dump_dir}/{name}[.gz] not found: record the dumps with `make fixtures` on a "
                "GPU machine, or run with --synthetic"
            )
        models[name.split("_verbose")[0]] = model
    return models


def load_basic(dump_dir: Path) -> dict[str, GraphModel]:
    """The basic-flags twins of the recorded dumps, those that were recorded."""
    models = {}
    for name in RECORDED:
        model = _load(dump_dir, name.replace("_verbose", "_basic"))
        if model is not None:
            models[name.split("_verbose")[0]] = model
    return models


def _load(dump_dir: Path, name: str) -> GraphModel | None:
    from accelgraph_cli.dot.parse import load_model

    for candidate in (dump_dir / (name + ".gz"), dump_dir / name):
        if candidate.exists():
            return load_model(candidate)
    return None


def without_params(model: GraphModel) -> GraphModel:
    """What a basic dump knows of a graph: kinds and names, no launch dims or sizes."""
    nodes = [Node(n.id, n.kind, n.name, {}, n.child, n.topo_id) for n in model.nodes]
    return GraphModel(nodes, list(model.edges), source="dot-basic")


def synthetic() -> dict[str, GraphModel]:
    """Python-built stand-ins of the recorded graphs, for machines without the dumps."""

    def kernel(i: int, name: str) -> Node:
        return Node(
            f"graph_0_node_{i}",
            "kernel",
            name,
            {
                "grid": (4, 1, 1),
                "block": (256, 1, 1),
                "shared_mem": 0,
                "ptr_kernel_params": hex(0x7F0000000000 + 64 * i),
            },
        )

    chain_nodes = [kernel(i, "cupy_add" if i % 2 == 0 else "cupy_multiply") for i in range(10_000)]
    chain = GraphModel(chain_nodes, [(chain_nodes[i].id, chain_nodes[i + 1].id) for i in range(9_999)])
    nodes: list[Node] = []
    edges: list[tuple[str, str]] = []
    previous = None
    for _ in range(1_111):
        ends = []
        for _ in range(3):
            head = kernel(len(nodes), "cupy_multiply")
            tail = kernel(len(nodes) + 1, "cupy_sqrt")
            nodes += [head, tail]
            if previous:
                edges.append((previous, head.id))
            edges.append((head.id, tail.id))
            ends.append(tail.id)
        for k in range(3):
            acc = kernel(len(nodes), "cupy_add")
            nodes.append(acc)
            edges.extend((e, acc.id) for e in (ends if k == 0 else [previous]))
            previous = acc.id
    return {"chain10k": chain, "forkjoin_wide": GraphModel(nodes, edges)}


def clone(model: GraphModel) -> GraphModel:
    return GraphModel(copy.deepcopy(model.nodes), list(model.edges), source=model.source)


def renumbered(model: GraphModel, seed: int = 0) -> GraphModel:
    """Ids permuted, nodes and edges shuffled, pointers re-drawn: what a re-capture looks like."""
    rng = random.Random(seed)
    ids = [n.id for n in model.nodes]
    shuffled = ids[:]
    rng.shuffle(shuffled)
    new_id = dict(zip(ids, shuffled))
    nodes = [
        Node(
            new_id[n.id],
            n.kind,
            n.name,
            {k: (hex(rng.randrange(1 << 40)) if k.startswith("ptr_") else v) for k, v in n.params.items()},
            n.child,
            n.topo_id,
        )
        for n in model.nodes
    ]
    rng.shuffle(nodes)
    edges = [(new_id[s], new_id[d]) for s, d in model.edges]
    rng.shuffle(edges)
    return GraphModel(nodes, edges, source=model.source)


def concatenated(parts: list[GraphModel]) -> GraphModel:
    """One model from several: ids prefixed per part, each part's sinks -> next part's roots."""
    nodes: list[Node] = []
    edges: list[tuple[str, str]] = []
    previous_sinks: list[str] = []
    for k, part in enumerate(parts):
        prefix = f"p{k}_"
        for node in part.nodes:
            twin = copy.copy(node)
            twin.id = prefix + node.id
            nodes.append(twin)
        edges += [(prefix + s, prefix + d) for s, d in part.edges]
        roots = [prefix + r for r in part.roots()]
        edges += [(s, r) for s in previous_sinks for r in roots]
        previous_sinks = [prefix + s for s in part.sinks()]
    return GraphModel(nodes, edges, source="concatenated")


def mutated(model: GraphModel, region_roots: list[str] | None = None) -> tuple[GraphModel, dict]:
    """A copy with, per region (default: the whole graph), one kernel's grid changed, one
    node removed (neighbours bridged), 50 copies of a kernel inserted after one node, and a
    parallel branch added at the first join. Returns the copy and the expected counts:
    nodes added, removed and changed exactly, and ``edge_changes_max``, the edges between
    matched nodes those mutations add or remove at most (the bridges of the removed node,
    the edges the insertion cut)."""
    nodes = {n.id: copy.deepcopy(n) for n in model.nodes}
    parents = {i: [] for i in nodes}
    children = {i: [] for i in nodes}
    for s, d in model.edges:
        children[s].append(d)
        parents[d].append(s)

    def add_node(template: str, new_id: str) -> None:
        twin = copy.deepcopy(nodes[template])
        twin.id = new_id
        nodes[new_id] = twin
        parents[new_id], children[new_id] = [], []

    def link(s: str, d: str) -> bool:
        if d in children[s]:
            return False  # one edge per pair, as in a dump
        children[s].append(d)
        parents[d].append(s)
        return True

    def unlink(s: str, d: str) -> None:
        children[s].remove(d)
        parents[d].remove(s)

    order = model.topological_order()
    expected = {"added": 0, "removed": 0, "changed": 0, "edge_changes_max": 0}
    for k, (start, end) in enumerate(_regions(order, region_roots)):
        span = order[start:end]
        kernels = [i for i in span if nodes[i].kind == "kernel" and len(parents[i]) <= 1]
        target = nodes[kernels[len(kernels) // 4]]
        grid = target.params.get("grid")
        if grid is not None:  # a basic dump has no grid to change
            target.params["grid"] = (grid[0] * 2 + 1, grid[1], grid[2])
            expected["changed"] += 1

        gone = kernels[len(kernels) // 2]
        ps, cs = list(parents[gone]), list(children[gone])
        for p in ps:
            unlink(p, gone)
        for c in cs:
            unlink(gone, c)
        for p in ps:
            for c in cs:
                expected["edge_changes_max"] += link(p, c)
        del nodes[gone], parents[gone], children[gone]
        expected["removed"] += 1

        after = kernels[(3 * len(kernels)) // 4]
        cs = list(children[after])
        for c in cs:
            unlink(after, c)
        previous = after
        for j in range(50):
            add_node(after, f"r{k}_inserted_{j}")
            link(previous, f"r{k}_inserted_{j}")
            previous = f"r{k}_inserted_{j}"
        for c in cs:
            link(previous, c)
        expected["added"] += 50
        expected["edge_changes_max"] += len(cs)

        joins = [i for i in span if i in nodes and len(parents[i]) >= 2]
        if joins:
            join = joins[0]
            branch = [parents[join][0]]
            while len(parents[branch[-1]]) == 1 and len(children[parents[branch[-1]][0]]) == 1:
                branch.append(parents[branch[-1]][0])
            branch.reverse()
            new = {i: f"r{k}_branch_{j}" for j, i in enumerate(branch)}
            for i in branch:
                add_node(i, new[i])
            for p in parents[branch[0]]:
                if p not in new.values():
                    link(p, new[branch[0]])
            for x, y in pairwise(branch):
                link(new[x], new[y])
            link(new[branch[-1]], join)
            expected["added"] += len(branch)
    edges = [(s, d) for s, ds in children.items() for d in ds]
    return GraphModel(list(nodes.values()), edges, source=model.source), expected


def _regions(order: list[str], region_roots: list[str] | None) -> list[tuple[int, int]]:
    if not region_roots:
        return [(0, len(order))]
    starts = sorted(order.index(r) for r in region_roots)
    return list(zip(starts, starts[1:] + [len(order)]))


def edge_removed(model: GraphModel) -> GraphModel | None:
    """A copy without one dependency inside a branch: the edge into the first node of the
    second half (in topological order) that has one parent and a child that joins branches,
    so the graph stays in one piece. None when there is no such node (a chain)."""
    order = model.topological_order()
    node = next(
        (
            i
            for i in order[len(order) // 2 :]
            if len(model.parents(i)) == 1 and any(len(model.parents(c)) > 1 for c in model.children(i))
        ),
        None,
    )
    if node is None:
        return None
    edge = (model.parents(node)[0], node)
    edges = [e for e in model.edges if e != edge]
    return GraphModel(copy.deepcopy(model.nodes), edges, source=model.source)


def swept(model: GraphModel) -> GraphModel:
    """Every kernel launched with a doubled grid: a batch-size sweep."""
    out = clone(model)
    for node in out.nodes:
        if node.kind == "kernel" and "grid" in node.params:
            g = node.params["grid"]
            node.params["grid"] = (g[0] * 2, g[1], g[2])
    return out


# ---------------------------------------------------------------------- timing


def timed(a: GraphModel, b: GraphModel, repeat: int):
    """Best CPU time (s) of diff_models(a, b) over ``repeat`` runs, and the last diff."""
    best, diff = float("inf"), None
    for _ in range(repeat):
        start = time.process_time()
        diff = diff_models(a, b)
        best = min(best, time.process_time() - start)
    return best, diff


def matches(got: dict, expected: dict) -> bool:
    """Counts named in ``expected`` equal, edge changes within ``edge_changes_max``."""
    exact = all(got[key] == value for key, value in expected.items() if key != "edge_changes_max")
    bound = expected.get("edge_changes_max")
    return exact and (bound is None or got["edges_added"] + got["edges_removed"] <= bound)


def main(argv: list[str] | None = None) -> int:
    """Build the cases, time each, print a table and optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dumps", type=Path, default=DEFAULT_DUMPS, help="recorded dumps folder")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (best is kept)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--synthetic",
        action="store_true",
        help="use Python-built graphs instead of the recorded dumps",
    )
    args = parser.parse_args(argv)

    if args.synthetic:
        models = synthetic()
        basic = {name: without_params(model) for name, model in models.items()}
    else:
        models, basic = load_recorded(args.dumps), load_basic(args.dumps)
    chain, forkjoin = models["chain10k"], models["forkjoin_wide"]
    parts = [chain, forkjoin, chain, forkjoin, chain]
    big = concatenated(parts)
    chain100k = concatenated([chain] * 10)  # issue 16's target: two 100k-node graphs in 3 s
    big_regions = [f"p{k}_{part.roots()[0]}" for k, part in enumerate(parts)]

    same = {"added": 0, "removed": 0, "changed": 0, "edges_added": 0, "edges_removed": 0}
    one_edge = {**same, "edges_removed": 1}
    cases = []
    for name, model in (
        ("chain10k", chain),
        ("forkjoin_wide", forkjoin),
        (f"concat{round(len(big.nodes) / 1000)}k", big),
        ("chain100k", chain100k),
    ):
        regions = big_regions if model is big else None
        mutant, expected = mutated(model, regions)
        cases += [
            (name, "identical copy", model, clone(model), same),
            (name, "renumbered", model, renumbered(model, 1), same),
        ]
        if name in basic:
            cases.append((name, "basic dump, renumbered", model, renumbered(basic[name], 2), same))
        cases += [
            (name, "mutated", model, mutant, expected),
            (name, "mutated, renumbered", model, renumbered(mutant, 3), expected),
        ]
        cut = edge_removed(model)
        if cut is not None:
            cases.append((name, "1 edge removed, renum.", model, renumbered(cut, 4), one_edge))
        cases.append((name, "grid sweep", model, swept(model), None))
    cases.append(("chain10k", "vs forkjoin_wide", chain, forkjoin, None))

    console = Console(width=max(Console().width, 120))
    table = Table(
        title=f"diff_models, best of {args.repeat} ({platform.python_version()}, "
        f"{'synthetic' if args.synthetic else 'recorded'} graphs)"
    )
    for column in (
        "graph",
        "B is",
        "nodes A",
        "nodes B",
        "seconds",
        "added",
        "removed",
        "changed",
        "edges ±",
        "check",
    ):
        table.add_column(column, justify="right" if column not in ("graph", "B is") else "left")
    results = []
    for name, what, a, b, expected in cases:
        seconds, diff = timed(a, b, args.repeat)
        got = {
            "added": len(diff.added),
            "removed": len(diff.removed),
            "changed": len(diff.changed),
            "edges_added": len(diff.edges_added),
            "edges_removed": len(diff.edges_removed),
        }
        ok = expected is None or matches(got, expected)
        check = "" if expected is None else ("ok" if ok else "MISMATCH")
        table.add_row(
            name,
            what,
            f"{len(a.nodes):,}",
            f"{len(b.nodes):,}",
            f"{seconds:.3f}",
            f"{got['added']:,}",
            f"{got['removed']:,}",
            f"{got['changed']:,}",
            f"+{len(diff.edges_added)} -{len(diff.edges_removed)}",
            check,
        )
        results.append(
            {
                "graph": name,
                "b": what,
                "nodes_a": len(a.nodes),
                "nodes_b": len(b.nodes),
                "seconds": round(seconds, 4),
                **got,
                "expected": expected,
                "ok": ok,
            }
        )
    console.print(table)
    for r in results:
        if not r["ok"]:
            console.print(f"MISMATCH {r['graph']} / {r['b']}: expected {r['expected']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "python": platform.python_version(),
                    "machine": platform.machine(),
                    "synthetic": args.synthetic,
                    "repeat": args.repeat,
                    "results": results,
                },
                indent=2,
            )
            + "\n"
        )
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
