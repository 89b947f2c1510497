"""Unrolled capture on the GPU: K steps in one graph replay as K eager steps do."""

import subprocess
import sys
from pathlib import Path

import pytest

from accelgraph_cli.run import protocol as runner
from accelgraph_cli.run.scenario import load_scenario, parse_params

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


def test_unrolled_graph_holds_k_steps_and_checks_against_k_eager_steps():
    scen = load_scenario(ROOT / "scenarios" / "saxpy.py")
    params = parse_params(scen.info.params, ["n=4096"])
    one = runner.capture(scen, params)
    unrolled = runner.capture(scen, params, unroll=8)
    assert unrolled.node_count == 8 * one.node_count
    checked = runner.check(unrolled, steps=2)
    assert checked.ok, checked.problems()
    eager, graph, per_step = runner.time_unrolled(one, unrolled, iters=64, warmup=8, rounds=3)
    assert per_step.iters == 64 and per_step.gpu_us.median > 0
    report = runner.UnrollReport(eager, graph, per_step, 8, checked, unrolled, one).to_dict()
    assert report["unroll"] == 8 and report["unrolled_over_one_step"] > 0


def test_an_unrolled_check_sees_a_step_that_is_not_the_same_each_time(tmp_path):
    # A step that reads a host counter at capture time: eagerly it adds 1, 2, 3...; the
    # unrolled graph froze 1, 2 (the values at capture). K eager steps != one replay.
    path = tmp_path / "frozen.py"
    path.write_text('''"""Adds a host counter that capture freezes."""
import cupy
def setup():
    return {"x": cupy.zeros(8, dtype=cupy.float32), "count": [0]}
def step(state):
    state["count"][0] += 1
    state["x"] += state["count"][0]
def outputs(state):
    return {"x": state["x"]}
''')
    scen = load_scenario(path)
    result = runner.capture(scen, {}, unroll=2)
    checked = runner.check(result, steps=2)
    assert not checked.ok and [m.output for m in checked.mismatches] == ["x"]


def test_cli_replay_unroll_prints_the_per_step_table():
    proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", "replay", "saxpy", "--param",
                           "n=1024", "--unroll", "16", "--iters", "256", "--rounds", "2"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "unrolled x16" in proc.stdout and "graph (16 steps)" in proc.stdout
    assert "check: ok" in proc.stdout and "32 eager step(s) vs 2 replay(s)" in proc.stdout
