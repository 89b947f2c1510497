"""`accelgraph profile` on the GPU: every node of a replay timed by CUPTI and traced to the
scenario line that made it; the capture guard still works after a profile in the process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accelgraph_cli.model.profile import load_profile
from accelgraph_cli.run import protocol as runner
from accelgraph_cli.run.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"

pytest.importorskip("cupti", reason="profile needs cupti-python (the cuda13 extra)")


def _record(stem: str, iters: int = 20, **params):
    from accelgraph_cli.run.profile import record_profile

    scen = load_scenario(SCENARIOS / f"{stem}.py")
    return record_profile(scen, {**scen.info.params, **params}, iters=iters)


def test_mlp_decode_every_kernel_timed_and_traced_to_its_line():
    document = _record("mlp_decode")
    profile = load_profile(json.loads(json.dumps(document)), "mlp_decode")
    (graph,) = profile.graphs
    assert [n.kind for n in graph.nodes] == ["kernel"] * 4
    assert not graph.silent and graph.dropped == 0
    source = (SCENARIOS / "mlp_decode.py").read_text().splitlines()
    for node in graph.nodes:
        assert node.runs == 20
        assert 0 < node.own_us <= node.span_us
        assert node.origin is not None and node.origin.function == "step"
        assert Path(node.origin.file).name == "mlp_decode.py"
        assert source[node.origin.line - 1].strip() == node.origin.code
    assert [n.origin.via for n in graph.nodes] == (["kernels.sgemm_bias_gelu"] * 2
                                                  + ["kernels.sgemm_softmax"] * 2)
    # the nodes' runs fit inside a replay, and the replay is more than its nodes
    assert graph.own_total_us <= graph.busy_us * 1.01
    assert graph.busy_us < graph.traced_step_us


def test_two_profiles_in_one_process_and_the_guard_after(tmp_path):
    """The callbacks are switched off after each capture: a second profile gets its own
    origins, and a capture that runs stray work is still refused by the guard after."""
    first = _record("saxpy", iters=5)
    second = _record("saxpy", iters=5)
    for document in (first, second):
        (graph,) = load_profile(document, "saxpy").graphs
        assert [n.origin is not None for n in graph.nodes] == [True]
    # stray work only the execution watch sees (its records pass through the same CUPTI
    # activity buffers as the profile's)
    scen = load_scenario(ROOT / "tests" / "broken_capture" / "temp_side_stream.py")
    from accelgraph_cli.errors import CaptureError

    with pytest.raises(CaptureError, match=r"the GPU ran 1 operation\(s\) while capturing"):
        runner.capture(scen, dict(scen.info.params))


def test_cli_profile_writes_a_profile_it_shows_again(tmp_path, monkeypatch):
    from accelgraph_cli.cli.app import main

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "p.json"
    assert main(["profile", str(SCENARIOS / "fork_join.py"), "--iters", "10", "--out",
                 str(out)]) == 0
    again = load_profile(json.loads(out.read_text()), str(out))
    assert again.graphs[0].nodes
    assert main(["profile", str(out), "--json"]) == 0


def test_torch_scenario_profile():
    pytest.importorskip("torch", reason="the torch scenario needs torch")
    document = _record("gpt_decode", iters=5)
    profile = load_profile(document, "gpt_decode")
    graph = profile.graphs[0]
    assert graph.nodes and all(n.runs == 5 for n in graph.nodes)
    files = {Path(n.origin.file).name for n in graph.nodes if n.origin is not None}
    assert files == {"gpt_decode.py"}


def test_train_step_backward_nodes_traced_to_the_backward_call():
    """Backward's nodes are made on autograd's engine thread, which has no Python stack: they
    are traced to the line the capturing thread waits in (``loss.backward()``), and no
    callback fails."""
    pytest.importorskip("torch", reason="the torch scenario needs torch")
    document = _record("train_step", iters=3)
    assert document["origins_failed"] is None
    (graph,) = load_profile(document, "train_step").graphs
    origins = [n.origin for n in graph.nodes]
    assert all(o is not None for o in origins), [n.node for n in graph.nodes if n.origin is None]
    source = (SCENARIOS / "train_step.py").read_text().splitlines()
    for origin in origins:
        assert Path(origin.file).name == "train_step.py"
        assert source[origin.line - 1].strip() == origin.code
    codes = {o.code for o in origins}
    assert "loss.backward()" in codes and 'state["opt"].step()' in codes
    assert {o.via for o in origins if o.code == "loss.backward()"} == {"_tensor.backward"}
