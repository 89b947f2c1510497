"""The run protocol on the GPU: every bundled scenario captures in global mode with its default
pool, replays, and passes the eager-vs-replay check; pools and speedups behave as documented."""

from pathlib import Path

import pytest

from accelgraph_cli.run import protocol as runner
from accelgraph_cli.run.scenario import load_scenario, parse_params

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.py"))


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_every_scenario_captures_replays_and_checks(path):
    scen = load_scenario(path)
    result = runner.capture(scen, parse_params(scen.info.params, []), error_mode="global")
    assert result.error_mode == "global"
    assert result.node_count > 0
    for g in result.graphs:
        assert g.node_count == sum(g.kinds.values()) > 0
        assert g.graph.is_instantiated
    assert scen.info.has_outputs, "every bundled scenario declares outputs()"
    checked = runner.check(result, steps=2)
    assert checked.ok, [m.line() for m in checked.mismatches]
    eager, graph, _ = runner.time_replay(result, iters=5, warmup=1, rounds=2)
    assert graph.gpu_us.median > 0 and eager.gpu_us.median > 0


def test_buckets_shared_pool_holds_less_than_private_pools(capsys):
    scen = load_scenario(ROOT / "scenarios" / "buckets.py")
    params = parse_params(scen.info.params, [])
    shared = runner.capture(scen, params, pool="shared")
    private = runner.capture(scen, params, pool="private")
    largest = max(g.pool_bytes for g in private.graphs)
    with capsys.disabled():
        print(f"\nbuckets: shared pool {shared.pool_bytes:,} B, private pools "
              f"{private.pool_bytes:,} B (sum), largest single graph {largest:,} B")
    assert len(shared.graphs) > 1
    assert shared.pool_bytes < private.pool_bytes
    assert runner.check(shared).ok


def test_async_pool_makes_alloc_nodes_and_replays_many_times():
    scen = load_scenario(ROOT / "scenarios" / "stream_ordered_alloc.py")
    result = runner.capture(scen, parse_params(scen.info.params, []), pool="async")
    kinds = result.kinds()
    assert kinds.get("mem_alloc", 0) > 0 and kinds.get("mem_free", 0) > 0
    assert runner.check(result, steps=3).ok
    with result.backend.use(result.streams):  # (replays go to the current stream)
        for _ in range(100):
            result.replay_all()
        result.stream.synchronize()


def test_elementwise_chain_1000_replay_is_faster_than_eager(capsys):
    scen = load_scenario(ROOT / "scenarios" / "elementwise_chain.py")
    result = runner.capture(scen, parse_params(scen.info.params, ["n=1000"]))
    eager, graph, _ = runner.time_replay(result, iters=20, warmup=3, rounds=3)
    speedup = eager.gpu_us.median / graph.gpu_us.median
    with capsys.disabled():
        print(f"\nelementwise_chain n=1000: eager {eager.gpu_us.median:.1f} µs, graph "
              f"{graph.gpu_us.median:.1f} µs per step, speedup {speedup:.2f}x")
    assert speedup > 1.5


def test_the_warm_up_runs_after_the_state_to_capture_is_made(tmp_path):
    # The order that keeps the host's caches warm for capture: setup of the captured state,
    # then setup and step of the throwaway warm-up state, then the step under capture.
    log = tmp_path / "calls.log"
    path = tmp_path / "order.py"
    path.write_text(
        '"""Logs which state each setup and step call is for."""\n'
        "import cupy\n"
        "PARAMS = {'log': ''}\n"
        "made = []\n"
        "def setup(log):\n"
        "    made.append(1)\n"
        "    number = len(made)\n"
        "    with open(log, 'a') as f:\n"
        "        f.write(f'setup {number}\\n')\n"
        "    return {'x': cupy.ones(8, dtype=cupy.float32), 'number': number, 'log': log}\n"
        "def step(state):\n"
        "    with open(state['log'], 'a') as f:\n"
        "        f.write(f\"step {state['number']}\\n\")\n"
        "    state['x'] += 1\n"
        "def outputs(state):\n"
        "    return {'x': state['x']}\n"
    )
    scen = load_scenario(path)
    result = runner.capture(scen, parse_params(scen.info.params, [f"log={log}"]))
    assert result.node_count == 1
    assert log.read_text().split("\n")[:4] == ["setup 1", "setup 2", "step 2", "step 1"]


def test_capture_failure_in_a_scenario_step_names_the_line_and_recovers(tmp_path):
    bad = tmp_path / "sync_in_step.py"
    bad.write_text(
        '"""Calls .get() inside step: refused during capture."""\n'
        "import cupy\n"
        "PARAMS = {}\n"
        "def setup():\n"
        "    return {'x': cupy.ones(8, dtype=cupy.float32)}\n"
        "def step(state):\n"
        "    state['x'] += 1\n"
        "    state['x'].get()\n"
        "def outputs(state):\n"
        "    return {'x': state['x']}\n"
    )
    scen = load_scenario(bad)
    with pytest.raises(runner.CaptureError) as info:
        runner.capture(scen, {})
    assert "sync_in_step.py:8" in str(info.value)
    good = load_scenario(ROOT / "scenarios" / "saxpy.py")
    result = runner.capture(good, parse_params(good.info.params, []))
    assert runner.check(result).ok
