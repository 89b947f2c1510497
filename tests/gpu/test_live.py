"""The model walked from a live graph equals the model parsed from its verbose dump."""

from pathlib import Path

import pytest

from accelgraph_cli import runner
from accelgraph_cli.dotparse import parse_dot
from accelgraph_cli.live import model_from_graph
from accelgraph_cli.model import graph_signature, node_signature
from accelgraph_cli.scenario import load_scenario, parse_params

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


def _structure(model):
    return sorted(node_signature(n) for n in model.nodes), len(model.edges)


@pytest.mark.parametrize("name", ["fork_join", "memory_ops", "mlp_decode", "stream_ordered_alloc"])
def test_live_model_equals_parsed_verbose_dump(name):
    scen = load_scenario(ROOT / "scenarios" / f"{name}.py")
    result = runner.capture(scen, parse_params(scen.info.params, []))
    for captured in result.graphs:
        live = model_from_graph(captured.graph.graph_handle)
        parsed = parse_dot(captured.graph.debug_dot("verbose"))
        assert [n.kind for n in live.nodes] == [n.kind for n in parsed.nodes]
        assert [n.name for n in live.nodes] == [n.name for n in parsed.nodes]
        assert sorted(live.edges) == sorted(parsed.edges)
        for a, b in zip(live.nodes, parsed.nodes):
            for key in ("grid", "block", "shared_mem", "bytes", "direction"):
                if key in a.params and key in b.params:
                    assert a.params[key] == b.params[key], (a.id, key)
        assert graph_signature(live)[1] == graph_signature(parsed)[1]


def test_basic_and_verbose_dumps_give_the_same_structure():
    scen = load_scenario(ROOT / "scenarios" / "fork_join.py")
    result = runner.capture(scen, parse_params(scen.info.params, []))
    g = result.graphs[0].graph
    basic = parse_dot(g.debug_dot("basic"))
    verbose = parse_dot(g.debug_dot("verbose"))
    assert [(n.id, n.kind, n.name) for n in basic.nodes] == [
        (n.id, n.kind, n.name) for n in verbose.nodes
    ]
    assert sorted(basic.edges) == sorted(verbose.edges)
    assert basic.levels() == verbose.levels()
