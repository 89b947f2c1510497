"""`accelgraph diff` results on recorded CUDA dumps, pinned whole: every matched pair included.

tests/test_diff.py checks what a diff must find (counts, ids, parameters). This file pins the
rest: which node of A went with which node of B, the order of every list, the statistics — the
full JSON the CLI prints plus the matching behind it — for pairs of recorded dumps and for
recorded dumps against copies with scattered, seeded edits (renumbered or not). The expected
results in tests/data/diff_expected.json.gz were computed by diff_models before its speed work;
a faster diff must give them back unchanged.

After a deliberate change of the matching rules, write them again (and review the change):

    python tests/test_diff_expected.py --write
"""

from __future__ import annotations

import copy
import functools
import gzip
import json
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))

from accelgraph_cli.diff.structural import diff_models  # noqa: E402 - after the sys.path line
from accelgraph_cli.model.graph_model import GraphModel, Node  # noqa: E402

DUMPS = ROOT / "tests" / "data" / "dumps"
EXPECTED = ROOT / "tests" / "data" / "diff_expected.json.gz"


# ---------------------------------------------------------------------- inputs


@functools.cache
def load(name: str) -> GraphModel:
    """A recorded dump, parsed once per test run (nothing here changes a model in place)."""
    from accelgraph_cli.dot.parse import load_model

    path = DUMPS / name
    return load_model(path if path.exists() else DUMPS / (name + ".gz"))


def renumbered(model: GraphModel, seed: int) -> GraphModel:
    """Ids permuted, nodes and edges shuffled, pointers and handles re-drawn (child graphs too)."""
    rng = random.Random(seed)
    ids = [node.id for node in model.nodes]
    shuffled = ids[:]
    rng.shuffle(shuffled)
    new_id = dict(zip(ids, shuffled))
    nodes = []
    for node in model.nodes:
        params = {
            k: (hex(rng.randrange(1 << 40)) if k.startswith(("ptr_", "handle_")) else v)
            for k, v in node.params.items()
        }
        child = renumbered(node.child, seed + 1) if node.child is not None else None
        nodes.append(Node(new_id[node.id], node.kind, node.name, params, child, node.topo_id))
    rng.shuffle(nodes)
    edges = [(new_id[s], new_id[d]) for s, d in model.edges]
    rng.shuffle(edges)
    return GraphModel(nodes, edges, source=model.source)


def edited(model: GraphModel, seed: int, edits: int) -> GraphModel:
    """A copy with ``edits`` of each kind at seeded places: a launch dimension or size
    changed, a node removed (its parents joined to its children), copies of a node chained
    in after it, an edge removed, an edge added forward in topological order. Each edit
    removes one node: ``edits`` stays well below the node count."""
    rng = random.Random(seed)
    nodes = {n.id: copy.deepcopy(n) for n in model.nodes}
    edges = list(dict.fromkeys(model.edges))
    order = model.topological_order()

    def pick() -> str:
        while True:
            node_id = order[rng.randrange(len(order))]
            if node_id in nodes:
                return node_id

    for k in range(edits):
        node = nodes[pick()]
        for key in ("grid", "block", "bytes"):
            value = node.params.get(key)
            if isinstance(value, tuple):
                node.params[key] = (value[0] * 2 + 1, *value[1:])
                break
            if isinstance(value, int):
                node.params[key] = value * 2 + 1
                break
        else:
            node.name = (node.name or node.kind) + "_v2"

        gone = pick()
        ins = [s for s, d in edges if d == gone]
        outs = [d for s, d in edges if s == gone]
        edges = [e for e in edges if gone not in e]
        edges += [(p, c) for p in ins for c in outs if (p, c) not in edges]
        del nodes[gone]

        after = pick()
        outs = [d for s, d in edges if s == after]
        edges = [e for e in edges if e[0] != after]
        previous = after
        for j in range(1 + rng.randrange(4)):
            twin = copy.deepcopy(nodes[after])
            twin.id = f"edit{k}_copy{j}"
            nodes[twin.id] = twin
            edges.append((previous, twin.id))
            previous = twin.id
        edges += [(previous, c) for c in outs]

        if edges:
            edges.pop(rng.randrange(len(edges)))
        rank = {node_id: r for r, node_id in enumerate(order)}
        s, d = pick(), pick()
        if s in rank and d in rank and rank[s] > rank[d]:
            s, d = d, s
        if s != d and (s, d) not in edges:
            edges.append((s, d))
    return GraphModel(list(nodes.values()), edges, source=model.source)


def swept(model: GraphModel) -> GraphModel:
    """Every kernel launched with a grid twice as wide (a batch-size sweep)."""
    out = GraphModel(copy.deepcopy(model.nodes), list(model.edges), source=model.source)
    for node in out.nodes:
        grid = node.params.get("grid")
        if isinstance(grid, tuple):
            node.params["grid"] = (grid[0] * 2, *grid[1:])
    return out


# Each case: name -> (what A is, what B is, ignored parameters). Dumps recorded on the GPU by
# `make fixtures`; the edited copies are made here, seeded.
CASES: dict[str, tuple] = {
    "buckets batch1 -> batch8": (
        "scenario_buckets_batch1_verbose.dot",
        "scenario_buckets_batch8_verbose.dot",
    ),
    "buckets batch8 -> batch64": (
        "scenario_buckets_batch8_verbose.dot",
        "scenario_buckets_batch64_verbose.dot",
    ),
    "buckets batch16 basic -> batch32": (
        "scenario_buckets_batch16_basic.dot",
        "scenario_buckets_batch32_verbose.dot",
    ),
    "mlp_decode -> batch16": ("scenario_mlp_decode_verbose.dot", "scenario_mlp_decode_batch16_verbose.dot"),
    "elementwise_chain -> n1200": (
        "scenario_elementwise_chain_verbose.dot",
        "scenario_elementwise_chain_n1200_verbose.dot",
    ),
    "chain -> chain1k": ("chain_verbose.dot", "chain1k_verbose.dot"),
    "forkjoin -> scenario fork_join": ("forkjoin_verbose.dot", "scenario_fork_join_verbose.dot"),
    "kinds -> memops": ("kinds_verbose.dot", "memops_verbose.dot"),
    "jacobi -> layernorm": ("scenario_jacobi_verbose.dot", "scenario_layernorm_verbose.dot"),
    "chain1k -> forkjoin_wide": ("chain1k_verbose.dot", "forkjoin_wide_verbose.dot"),
    "kinds, edited": ("kinds_verbose.dot", ("edited", "kinds_verbose.dot", 1, 1)),
    "conditional, renumbered": ("conditional_verbose.dot", ("renumbered", "conditional_verbose.dot", 2)),
    "mlp_decode, edited, renumbered": (
        "scenario_mlp_decode_verbose.dot",
        ("renumbered", ("edited", "scenario_mlp_decode_verbose.dot", 3, 1), 4),
    ),
    "elementwise_chain_n1200, edited": (
        "scenario_elementwise_chain_n1200_verbose.dot",
        ("edited", "scenario_elementwise_chain_n1200_verbose.dot", 5, 4),
    ),
    "chain10k, edited": ("chain10k_verbose.dot", ("edited", "chain10k_verbose.dot", 6, 5)),
    "chain10k, edited, renumbered": (
        "chain10k_verbose.dot",
        ("renumbered", ("edited", "chain10k_verbose.dot", 7, 5), 8),
    ),
    "forkjoin_wide, renumbered basic": (
        "forkjoin_wide_verbose.dot",
        ("renumbered", "forkjoin_wide_basic.dot", 9),
    ),
    "forkjoin_wide, edited, renumbered": (
        "forkjoin_wide_verbose.dot",
        ("renumbered", ("edited", "forkjoin_wide_verbose.dot", 11, 8), 12),
    ),
    "forkjoin_wide, grid sweep": ("forkjoin_wide_verbose.dot", ("swept", "forkjoin_wide_verbose.dot")),
    "forkjoin_wide, grid sweep, ignore grid": (
        "forkjoin_wide_verbose.dot",
        ("swept", "forkjoin_wide_verbose.dot"),
        ("grid",),
    ),
}


def build(spec) -> GraphModel:
    if isinstance(spec, str):
        return load(spec)
    what, inner, *args = spec
    return {"renumbered": renumbered, "edited": edited, "swept": swept}[what](build(inner), *args)


def result(name: str) -> dict:
    """The case's diff as the CLI prints it (``--json``), plus every matched pair."""
    a_spec, b_spec, *ignore = CASES[name]
    diff = diff_models(build(a_spec), build(b_spec), ignore=set(ignore[0]) if ignore else set())
    return json.loads(json.dumps(diff.to_json(include_matches=True)))


@functools.cache
def expected() -> dict:
    return json.loads(gzip.decompress(EXPECTED.read_bytes()))


# ---------------------------------------------------------------------- tests


@pytest.mark.parametrize("name", list(CASES))
def test_diff_of_recorded_dumps_is_unchanged(name):
    want = expected()[name]
    got = result(name)
    # Smaller parts first, so a difference shows where it is rather than as one huge dict.
    for key in want:
        if key != "matches":
            assert got[key] == want[key], key
    assert got["matches"] == want["matches"]
    assert got.keys() == want.keys()


# Where dropping stray runs alone makes the diff larger (107 against 105 items): the edges
# it costs outweigh the nodes it pairs, so the diff must not keep it.
DROP_LOSES = ("forkjoin_wide_verbose.dot",
              ("renumbered", ("edited", "forkjoin_wide_verbose.dot", 11, 9), 111))


def _sizes(a_spec, b_spec, ignore=()) -> tuple[int, int, int]:
    """Sizes of the diff: as diff_models gives it, with stray runs dropped, with none."""
    from accelgraph_cli.diff.labels import Labeler, shared_param_keys
    from accelgraph_cli.diff.match import match
    from accelgraph_cli.diff.side import WL_ROUNDS, CoarseShapes, prepare
    from accelgraph_cli.diff.structural import _report, _size

    a, b = build(a_spec), build(b_spec)
    ignore = frozenset(ignore)
    labeler = Labeler(shared_param_keys(a, b, ignore), ignore)
    tables, shapes = [{} for _ in range(WL_ROUNDS)], CoarseShapes([{} for _ in range(WL_ROUNDS)])
    side_a, side_b = prepare(a, labeler, tables, shapes), prepare(b, labeler, tables, shapes)
    dropped = _report(side_a, side_b, *match(side_a, side_b, []), labeler)
    plain = _report(side_a, side_b, *match(side_a, side_b), labeler)
    return _size(diff_models(a, b, ignore)), _size(dropped), _size(plain)


@pytest.mark.parametrize("name", [*CASES, "drop loses"])
def test_dropping_stray_runs_never_makes_a_diff_larger(name):
    # Step 3 may drop short runs of unchanged pairs (match._drop_stray_runs) by weighing
    # nodes alone; the diff keeps that only where the whole diff, edges included, is smaller.
    a_spec, b_spec, *ignore = DROP_LOSES if name == "drop loses" else CASES[name]
    result, dropped, plain = _sizes(a_spec, b_spec, ignore[0] if ignore else ())
    assert result <= min(dropped, plain)
    if name == "drop loses":
        assert dropped > plain == result


def test_cli_prints_the_expected_json(cli):
    a, b = CASES["mlp_decode -> batch16"]
    code, out, _ = cli("diff", DUMPS / a, DUMPS / b, "--json")
    want = dict(expected()["mlp_decode -> batch16"])
    del want["matches"]
    assert json.loads(out) == want
    assert code == (0 if want["identical"] else 1)


def test_expected_results_cover_every_case():
    assert sorted(expected()) == sorted(CASES)


def write() -> None:
    """Compute every case with the diff as it is now and store the results."""
    results = {name: result(name) for name in CASES}
    text = json.dumps(results, indent=None, sort_keys=True, separators=(",", ":"))
    EXPECTED.write_bytes(gzip.compress(text.encode(), mtime=0))
    print(f"wrote {EXPECTED} ({EXPECTED.stat().st_size:,} bytes, {len(results)} cases)")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit(__doc__)
    write()
