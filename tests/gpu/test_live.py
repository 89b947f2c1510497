"""The model walked from a live graph equals the model parsed from its verbose dump."""

from pathlib import Path

import pytest

from accelgraph_cli import runner
from accelgraph_cli.dotparse import parse_dot
from accelgraph_cli.live import model_from_graph
from accelgraph_cli.scenario import load_scenario, parse_params

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


def _number(node_id: str) -> int:
    # Both routes name nodes graph_<G>_node_<K>; G is a process-wide graph number in CUDA's
    # dump, so compare by K, the node's creation index.
    return int(node_id.rsplit("_", 1)[1])


def _by_number(model):
    nodes = {_number(n.id): n for n in model.nodes}
    edges = sorted((_number(a), _number(b)) for a, b in model.edges)
    return nodes, edges


@pytest.mark.parametrize("name", ["fork_join", "memory_ops", "mlp_decode", "stream_ordered_alloc"])
def test_live_model_equals_parsed_verbose_dump(name):
    scen = load_scenario(ROOT / "scenarios" / f"{name}.py")
    result = runner.capture(scen, parse_params(scen.info.params, []))
    for captured in result.graphs:
        live_nodes, live_edges = _by_number(model_from_graph(captured.graph.graph_handle))
        parsed_nodes, parsed_edges = _by_number(parse_dot(captured.graph.debug_dot("verbose")))
        assert live_edges == parsed_edges
        assert sorted(live_nodes) == sorted(parsed_nodes)
        for k, a in live_nodes.items():
            b = parsed_nodes[k]
            assert (a.kind, a.name) == (b.kind, b.name), k
            for key in ("grid", "block", "shared_mem", "bytes", "direction"):
                if key in a.params and key in b.params:
                    assert a.params[key] == b.params[key], (k, key, a.params[key], b.params[key])


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
