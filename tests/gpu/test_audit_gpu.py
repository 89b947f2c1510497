"""`accelgraph audit` on the GPU: the argument bytes read back from captured graphs are the
launches' own, each kind of frozen argument is found in a scenario that has it, and the
bundled scenarios, which freeze nothing, pass."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy
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
    if stem == "gpt_decode":
        # PyTorch's argument structs: bytes no launch sets differ, and the effect test finds
        # the outputs unchanged with the first step's there (none left untested)
        kinds = {d.kind for g in audit.graphs for d in g.differences}
        assert "no_effect" in kinds and "unsure" not in kinds, kinds
    # CuPy's indexer and PyTorch's argument structs carry bytes no launch sets: the effect
    # test finds they change no output, never frozen
    assert all(d.kind in ("elsewhere", "unsure", "no_effect")
               for g in audit.graphs for d in g.differences)


@pytest.mark.parametrize("stem", ["host_counter", "swapped_buffers", "decode_position",
                                  "growing_slice", "scheduled_lr", "functor_alpha",
                                  "decode_after_prefill", "seen_later"])
def test_each_frozen_example_fails_the_check_that_audit_explains(stem):
    """What the audit finds frozen is what makes replay differ from eager."""
    from accelgraph_cli.run import protocol as runner

    if stem in ("scheduled_lr", "functor_alpha", "decode_after_prefill", "seen_later"):
        pytest.importorskip("torch", reason="a PyTorch scenario")

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


def test_a_host_learning_rate_schedule_is_frozen_in_the_optimizer_kernels():
    """AdamW(capturable=True) given a Python-float rate: the rate reaches its foreach kernels
    as a float argument, judged (a built-in type in the demangled signature) and found
    frozen at the optimizer's step line."""
    pytest.importorskip("torch", reason="a PyTorch scenario")
    document, audit = _audit(FROZEN / "scheduled_lr.py")
    frozen = [d for g in audit.graphs for d in g.frozen]
    assert frozen and {d.kind for d in frozen} == {"value"}, [d.to_json() for d in frozen]
    assert all("multi_tensor_apply_kernel" in d.kernel and d.size == 4 for d in frozen)
    # setup's warm-up ran epochs 1 to 3; the captured steps are epochs 4 and 5. AdamW
    # passes 1 / lr (bias correction divided by the rate) and 1 - lr * weight_decay
    rates = [1e-2 * 0.5 ** epoch for epoch in (4, 5)]
    pairs = {(_float32(d.first_hex), _float32(d.second_hex)) for d in frozen}
    assert (1 / rates[0], 1 / rates[1]) in pairs, pairs
    decay = tuple(float(numpy.float32(1 - lr * 0.01)) for lr in rates)
    assert decay in pairs, pairs
    if document["origins_off"] is None:
        lines = (FROZEN / "scheduled_lr.py").read_text().splitlines()
        assert {lines[d.origin.line - 1].strip() for d in frozen} == {'state["opt"].step()'}


def test_a_value_inside_a_functor_is_found_frozen_by_its_effect():
    """y.add_(x, alpha=count): alpha lies in the kernel's functor struct (not judged by its
    type); the effect test finds it read, and only it."""
    pytest.importorskip("torch", reason="a PyTorch scenario")
    document, audit = _audit(FROZEN / "functor_alpha.py")
    (graph,) = audit.graphs
    (difference,) = graph.frozen
    assert difference.kind == "read" and difference.size == 4, difference.to_json()
    # setup's count is 0; the two captured steps pass alpha 1 and 2
    assert (_float32(difference.first_hex), _float32(difference.second_hex)) == (1.0, 2.0)
    assert not [d for d in graph.differences if d.kind == "unsure"]
    effects = document["graphs"][0]["effects"]
    assert effects["note"] is None and effects["changed"] == [
        [difference.node, difference.argument, difference.at]]
    from accelgraph_cli.run import protocol as runner

    scen = load_scenario(FROZEN / "functor_alpha.py")
    assert not runner.check(runner.capture(scen, dict(scen.info.params))).ok


def test_effect_test_restores_the_graph(tmp_path):
    """After the effect test the graph replays with its own bytes again: the functor_alpha
    graph, replayed once from a fresh state, gives what it gave before the test."""
    pytest.importorskip("torch", reason="a PyTorch scenario")
    from accelgraph_cli.run import audit as run_audit
    from accelgraph_cli.run import protocol as runner

    scen = load_scenario(FROZEN / "functor_alpha.py")
    result = runner.capture(scen, dict(scen.info.params), unroll=2)
    trials = run_audit._Trials(result)
    name = result.graphs[0].name
    before = trials.outputs(name)
    raw = {"name": name, "nodes": []}
    from accelgraph_cli.cuda.audit import graph_arguments

    raw["nodes"], _ranges = graph_arguments(result.graphs[0].graph.graph_handle,
                                            run_audit._node_id)
    state = [{"paths": list(r.paths), "start": int(r.ptr), "size": int(r.size)}
             for r in result.snapshot.regions]
    from accelgraph_cli.model.audit import effect_candidates

    effects = trials.run(raw, effect_candidates(raw, state))
    assert effects["changed"]
    assert trials.same(before, trials.outputs(name))


def test_a_value_read_only_after_the_graph_before_it_is_found():
    """decode_after_prefill: decode's alpha scales what prefill writes (zeros on a fresh
    state); the effect test replays prefill first, as the scenario runs them, and finds it."""
    pytest.importorskip("torch", reason="a PyTorch scenario")
    document, audit = _audit(FROZEN / "decode_after_prefill.py")
    graphs = {g.name: g for g in audit.graphs}
    assert not graphs["prefill"].frozen
    (difference,) = graphs["decode"].frozen
    assert difference.kind == "read", difference.to_json()
    assert (_float32(difference.first_hex), _float32(difference.second_hex)) == (1.0, 2.0)


def test_a_value_whose_effect_shows_in_a_later_graph_is_found():
    """seen_later: ``scale`` writes no output itself; the scale it froze shows once
    ``finish`` has copied its result into the output, which the effect test replays too."""
    pytest.importorskip("torch", reason="a PyTorch scenario")
    document, audit = _audit(FROZEN / "seen_later.py")
    graphs = {g.name: g for g in audit.graphs}
    assert not graphs["finish"].frozen
    (difference,) = graphs["scale"].frozen
    assert difference.kind == "read", difference.to_json()
    # mul's 8-byte functor: a byte of its own, padding, then the float scale at byte 4
    assert difference.size == 8, difference.to_json()
    assert (_float32(difference.first_hex[8:]), _float32(difference.second_hex[8:])) == (1.0, 2.0)
    # recorded with the C++ kernels' types, so it reads the same without a demangler
    assert all("types" in g for g in document["graphs"])


def test_empty_outputs_leave_the_struct_bytes_untried(tmp_path):
    """outputs() whose arrays hold no element cannot show an effect: the struct bytes are
    not tried, and the audit says why, rather than reading them as changing nothing."""
    pytest.importorskip("torch", reason="a PyTorch scenario")
    text = (FROZEN / "functor_alpha.py").read_text()
    body = '    return {"y": state["y"]}'
    assert body in text
    path = tmp_path / "empty_outputs.py"
    path.write_text(text.replace(body, '    return {"y": state["y"][:0]}'))
    document, audit = _audit(path)
    (graph,) = audit.graphs
    assert graph.effects_skipped and "no element" in graph.effects_note, graph.effects_note
    assert [d.kind for d in graph.differences] == ["unsure"]


def test_a_failure_in_the_effect_test_keeps_the_audit(monkeypatch):
    """A node CUDA will not change (any exception, not only accelgraph's own) is said for
    its graph; the arguments read are kept and the audit still loads."""
    pytest.importorskip("torch", reason="a PyTorch scenario")
    from accelgraph_cli.cuda import audit as cuda_audit

    def refuse(self, position, args):
        raise ValueError("node refused")

    monkeypatch.setattr(cuda_audit.Substitution, "give", refuse)
    document, audit = _audit(FROZEN / "functor_alpha.py")
    (graph,) = audit.graphs
    assert graph.effects_note == "not tested: node refused"
    assert [d.kind for d in graph.differences] == ["unsure"]


def test_a_value_that_changes_every_other_step_needs_more_steps():
    """every_other_step: the scale is 1, 1, 2 over three captured steps. Two steps show
    nothing, as the check of two replays passes; three steps find it at the third, and the
    check of three replays fails."""
    from accelgraph_cli.run import protocol as runner

    path = FROZEN / "every_other_step.py"
    scen = load_scenario(path)
    _document, two = _audit(path)
    assert two.frozen == 0 and not two.graphs[0].differences
    document = record_audit(scen, dict(scen.info.params), steps=3)
    three = load_audit(json.loads(json.dumps(document)), str(path))
    (difference,) = three.graphs[0].frozen
    assert (difference.kind, difference.step, difference.argument) == ("value", 3, 0)
    assert (_float32(difference.first_hex), _float32(difference.second_hex)) == (1.0, 2.0)
    assert document["steps"] == 3 and three.graphs[0].captured == 3 * three.graphs[0].nodes
    result = runner.capture(scen, dict(scen.info.params))
    assert runner.check(result, steps=2).ok
    assert not runner.check(result, steps=3).ok


def test_the_effect_test_gives_every_later_step_the_first_steps_bytes(tmp_path):
    """functor_alpha with alpha the count halved, over four steps: 1, 1, 2, 2 inside the
    functor, so only steps 3 and 4 differ from the first. The effect test gives every later
    step the first step's bytes and finds the alpha read, shown at step 3 (given to step 2
    alone, which already has them, nothing would change)."""
    pytest.importorskip("torch", reason="a PyTorch scenario")
    text = (FROZEN / "functor_alpha.py").read_text()
    for old, new in (('"count": 0', '"count": 1'),
                     ('alpha=float(state["count"])', 'alpha=float(state["count"] // 2)')):
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "halved_alpha.py"
    path.write_text(text)
    scen = load_scenario(path)
    document = record_audit(scen, dict(scen.info.params), steps=4)
    (graph,) = load_audit(json.loads(json.dumps(document)), str(path)).graphs
    (difference,) = graph.frozen
    assert (difference.kind, difference.step, difference.second) == ("read", 3, "2.0")
    assert difference.first == "1.0" and graph.captured == 4 * graph.nodes
