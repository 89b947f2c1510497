"""`accelgraph audit` on the GPU: the argument bytes read back from captured graphs are the
launches' own, each kind of frozen argument is found in a scenario that has it, and the
bundled scenarios, which freeze nothing, pass."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from accelgraph_cli.model.audit import load_audit
from accelgraph_cli.run.audit import record_audit
from accelgraph_cli.run.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
FROZEN = ROOT / "tests" / "frozen_values"


def _audit(path: Path):
    scen = load_scenario(path)
    document = record_audit(scen, dict(scen.info.params))
    # what --out writes is what is read back
    return document, load_audit(json.loads(json.dumps(document)), str(path))


def _float32(hex_text: str) -> float:
    return struct.unpack("<f", bytes.fromhex(hex_text))[0]


def test_the_bytes_read_back_are_the_launch_arguments():
    """saxpy4(float a, const float* x, float* y, int n): each argument read from the graph
    equals what the scenario passed, in both steps."""
    document, audit = _audit(SCENARIOS / "saxpy.py")
    state = {entry["paths"][0]: entry["start"] for entry in document["state"]}
    (graph,) = document["graphs"]
    assert [n["kind"] for n in graph["nodes"]] == ["kernel", "kernel"]
    n = load_scenario(SCENARIOS / "saxpy.py").info.params["n"]
    for node in graph["nodes"]:
        assert node["name"] == "saxpy4"
        a, x, y, size = (bytes.fromhex(arg["hex"]) for arg in node["args"])
        assert [arg["size"] for arg in node["args"]] == [4, 8, 8, 4]
        assert struct.unpack("<f", a)[0] == 0.5  # the scenario's a
        assert int.from_bytes(x, "little") == state["state['x']"]
        assert int.from_bytes(y, "little") == state["state['y']"]
        assert int.from_bytes(size, "little") == n
    assert audit.frozen == 0 and not audit.graphs[0].differences


def test_a_host_counter_is_a_frozen_value_at_its_line():
    document, audit = _audit(FROZEN / "host_counter.py")
    (graph,) = audit.graphs
    (difference,) = graph.differences
    assert (difference.kind, difference.argument, difference.frozen) == ("value", 0, True)
    # setup's count is 1; the two captured steps pass 2 and 3
    assert (_float32(difference.first_hex), _float32(difference.second_hex)) == (2.0, 3.0)
    assert (difference.first, difference.second) == ("2.0", "3.0")
    if document["origins_off"] is None:
        lines = (FROZEN / "host_counter.py").read_text().splitlines()
        assert difference.origin is not None
        assert lines[difference.origin.line - 1].strip().startswith("kernels.saxpy(")


def test_swapped_buffers_are_frozen_buffers():
    _document, audit = _audit(FROZEN / "swapped_buffers.py")
    (graph,) = audit.graphs
    kinds = {(d.argument, d.kind) for d in graph.differences}
    assert kinds == {(0, "buffer"), (1, "buffer")}
    by_argument = {d.argument: (d.first, d.second) for d in graph.differences}
    assert by_argument[0] == ("state['a']", "state['b']")
    assert by_argument[1] == ("state['b']", "state['a']")


def test_a_cache_position_picked_on_the_host_is_a_frozen_offset():
    """`cache[position] = token` is a copy node: its destination moves one row a step."""
    document, audit = _audit(FROZEN / "decode_position.py")
    (graph,) = audit.graphs
    width = load_scenario(FROZEN / "decode_position.py").info.params["width"]
    assert [(d.kind, d.label, d.first, d.second) for d in graph.frozen] == [
        ("offset", "dst", "state['cache']", f"state['cache'] + {4 * width:,} B")]
    # the copy's source and size read back as the launch had them
    state = {entry["paths"][0]: entry["start"] for entry in document["state"]}
    copies = [n for n in document["graphs"][0]["nodes"] if n["kind"] == "memcpy"]
    assert len(copies) == 2
    for node in copies:
        assert node["labels"] == ["src", "dst", "bytes"]
        src, _dst, size = (int.from_bytes(bytes.fromhex(a["hex"]), "little")
                           for a in node["args"])
        assert (src, size) == (state["state['token']"], 4 * width)


@pytest.mark.parametrize("stem", ["mlp_decode", "jacobi", "buckets", "fork_join", "memory_ops",
                                  "stream_ordered_alloc", "elementwise_chain", "layernorm",
                                  "gpt_decode", "train_step", "torch_buckets"])
def test_bundled_scenarios_freeze_nothing(stem):
    """No false alarm: the bundled scenarios replay what eager computes (the check says
    so), and no argument their kernels read changes from step to step."""
    if stem in ("gpt_decode", "train_step", "torch_buckets"):
        pytest.importorskip("torch", reason="a PyTorch scenario")
    _document, audit = _audit(SCENARIOS / f"{stem}.py")
    assert audit.frozen == 0, [d.to_json() for g in audit.graphs for d in g.frozen]
    assert not audit.mismatched
    assert all(g.kernels > 0 for g in audit.graphs)
    # CuPy's indexer and PyTorch's argument structs carry bytes no launch sets: read as
    # unsure, never as frozen
    assert all(d.kind in ("elsewhere", "unsure") for g in audit.graphs for d in g.differences)


@pytest.mark.parametrize("stem", ["host_counter", "swapped_buffers", "decode_position",
                                  "growing_slice"])
def test_each_frozen_example_fails_the_check_that_audit_explains(stem):
    """What the audit finds frozen is what makes replay differ from eager."""
    from accelgraph_cli.run import protocol as runner

    scen = load_scenario(FROZEN / f"{stem}.py")
    checked = runner.check(runner.capture(scen, dict(scen.info.params)))
    assert not checked.ok and checked.verdict == "FAILED", checked.to_dict()
    _document, audit = _audit(FROZEN / f"{stem}.py")
    assert audit.frozen > 0


def test_a_growing_slice_is_a_frozen_size_and_launch():
    """data[:length] with length + 1 a step: CuPy passes the slice's size and shape inside
    its array and indexer structs, and may size the grid by it."""
    _document, audit = _audit(FROZEN / "growing_slice.py")
    (graph,) = audit.graphs
    values = {(d.argument, d.at) for d in graph.frozen if d.kind == "value"}
    # the array's size and shape (words 1 and 2 of argument 0), the indexer's size and shape
    assert {(0, 8), (0, 16)} <= values, graph.frozen
    start = load_scenario(FROZEN / "growing_slice.py").info.params["start"]
    sizes = {d.first: d.second for d in graph.frozen if d.kind == "value" and d.at == 8}
    assert sizes == {str(start): str(start + 1)}
