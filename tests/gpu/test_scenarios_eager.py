"""GPU tier: every scenario in scenarios/ sets up and steps eagerly, deterministically and right.

Eagerly only: capture and replay are the runner's tests. What is checked here is the contract
the runner relies on: setup with defaults works, step runs repeatedly on a non-default stream,
outputs are finite device arrays, two fresh states give bitwise-equal outputs, and each
scenario computes what its docstring says (against NumPy, with small params for speed).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

from accelgraph_cli.enums import Backend  # noqa: E402
from accelgraph_cli.run.scenario import (  # noqa: E402  (after the importorskip above)
    ScenarioError,
    inspect_scenario,
    load_scenario,
    parse_params,
)

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
# The CuPy scenarios, stepped eagerly on CuPy arrays (torch ones: tests/gpu/test_torch.py).
ALL = sorted(p for p in SCENARIOS.glob("*.py") if inspect_scenario(p).backend is Backend.CUPY)


@pytest.fixture(scope="module")
def stream():
    return cupy.cuda.Stream(non_blocking=True)


def load(name):
    return load_scenario(SCENARIOS / f"{name}.py")


def fresh_state(scenario, stream, **overrides):
    params = parse_params(scenario.params, [f"{k}={v}" for k, v in overrides.items()])
    with stream:
        state = scenario.make_state(params)
    stream.synchronize()
    return state


def run(scenario, state, stream, times=1):
    with stream:
        graphs = scenario.graph_steps(state)
        for _ in range(times):
            for step in graphs.values():
                step()
    stream.synchronize()


def host_outputs(scenario, state):
    return {key: cupy.asnumpy(value) for key, value in scenario.outputs(state).items()}


def host(array):
    return cupy.asnumpy(array)


# --------------------------------------------------------------------------- every scenario

@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_steps_twice_with_finite_outputs(path, stream):
    scenario = load_scenario(path)
    state = fresh_state(scenario, stream)
    run(scenario, state, stream, times=2)
    outputs = scenario.outputs(state)
    assert outputs, f"{path.stem} defines no outputs to check replay against"
    for key, value in outputs.items():
        assert isinstance(value, cupy.ndarray), key
        assert value.size > 0, key
        assert bool(cupy.isfinite(value).all()), f"{path.stem}: {key} has inf/nan"


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_two_fresh_states_agree_bitwise(path, stream):
    scenario = load_scenario(path)
    first, second = fresh_state(scenario, stream), fresh_state(scenario, stream)
    run(scenario, first, stream)
    run(scenario, second, stream)
    a, b = host_outputs(scenario, first), host_outputs(scenario, second)
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=f"{path.stem}: {key}")


# --------------------------------------------------------------------------- what each computes

def gelu(v):
    return 0.5 * v * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (v + 0.044715 * v**3)))


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def f64(array):
    return host(array).astype(np.float64)


def test_elementwise_chain_is_bitwise_numpy(stream):
    scenario = load("elementwise_chain")
    state = fresh_state(scenario, stream, n=50, size=333)
    want = host(state["x"])
    run(scenario, state, stream, times=2)
    for _ in range(2):
        for c in state["increments"]:
            v = want + c
            want = v - np.floor(v)
    np.testing.assert_array_equal(host(state["x"]), want)


def test_saxpy_accumulates_per_step(stream):
    scenario = load("saxpy")
    state = fresh_state(scenario, stream, n=10_001, a=0.25)
    y0, x = f64(state["y"]), f64(state["x"])
    run(scenario, state, stream, times=3)
    np.testing.assert_allclose(host(state["y"]), y0 + 3 * 0.25 * x, rtol=1e-5, atol=1e-5)


def test_mlp_decode_matches_numpy(stream):
    scenario = load("mlp_decode")
    state = fresh_state(scenario, stream, batch=3, hidden=64)
    run(scenario, state, stream)
    h = gelu(f64(state["x"]) @ f64(state["w1"]) + f64(state["b1"]))
    logits = h @ f64(state["w2"])
    assert state["logits"].shape == (3, 64) and state["probs"].shape == (3, 64)
    np.testing.assert_allclose(host(state["logits"]), logits, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(host(state["probs"]), softmax(logits), rtol=1e-4, atol=1e-6)


def test_jacobi_is_bitwise_numpy_and_keeps_its_boundary(stream):
    scenario = load("jacobi")
    state = fresh_state(scenario, stream, n=37, iterations=6)
    grid = host(state["a"])
    run(scenario, state, stream, times=2)
    for _ in range(12):
        new = grid.copy()
        ns = grid[:-2, 1:-1] + grid[2:, 1:-1]
        we = grid[1:-1, :-2] + grid[1:-1, 2:]
        new[1:-1, 1:-1] = np.float32(0.25) * (ns + we)
        grid = new
    got = host(state["a"])
    np.testing.assert_array_equal(got, grid)
    assert (got[0] == 1.0).all() and (got[-1] == 0.0).all()


def test_jacobi_rejects_odd_iterations_with_its_line(stream):
    scenario = load("jacobi")
    with pytest.raises(ScenarioError, match=r"jacobi\.py:\d+: setup\(\) raised ValueError.*even"):
        fresh_state(scenario, stream, iterations=3)


def test_fork_join_matches_numpy(stream):
    scenario = load("fork_join")
    state = fresh_state(scenario, stream, branches=3, batch=4, hidden=64)
    run(scenario, state, stream, times=2)
    xn = layernorm(f64(state["x"]), f64(state["gamma"]), f64(state["beta"]))
    want = sum(gelu(xn @ f64(w) + f64(b)) for w, b in zip(state["weights"], state["biases"]))
    np.testing.assert_allclose(host(state["out"]), want, rtol=1e-4, atol=1e-4)


def test_memory_ops_copies_the_pinned_input_and_calls_the_host_function(stream):
    scenario = load("memory_ops")
    state = fresh_state(scenario, stream, n=1000)
    run(scenario, state, stream, times=2)
    assert state["counter"]["host_calls"] == 2
    source = state["host_input"].copy()
    np.testing.assert_array_equal(host(state["work"]), source)
    np.testing.assert_array_equal(host(state["accumulator"]), 2 * source)

    # New input written to the pinned buffer is what the next step copies in.
    state["host_input"][:] = 1.5
    run(scenario, state, stream)
    np.testing.assert_array_equal(host(state["accumulator"]), np.full(1000, 3.0, np.float32))
    assert state["counter"]["host_calls"] == 3


def test_stream_ordered_alloc_matches_numpy(stream):
    scenario = load("stream_ordered_alloc")
    state = fresh_state(scenario, stream, rows=5, cols=300)
    run(scenario, state, stream, times=2)
    x = f64(state["x"])
    want = 0.5 * (x + softmax(layernorm(x, f64(state["gamma"]), f64(state["beta"]))))
    np.testing.assert_allclose(host(state["out"]), want, rtol=1e-5, atol=1e-5)


def test_buckets_every_bucket_is_a_prefix_of_the_largest(stream):
    scenario = load("buckets")
    assert list(scenario.graph_steps(fresh_state(scenario, stream))) == [
        "batch64", "batch32", "batch16", "batch8", "batch1"
    ]
    state = fresh_state(scenario, stream, buckets="1,5,2", hidden=32)
    graphs = scenario.graph_steps(state)
    assert list(graphs) == ["batch5", "batch2", "batch1"]  # largest first
    run(scenario, state, stream)
    outputs = host_outputs(scenario, state)
    assert {key: value.shape for key, value in outputs.items()} == {
        "batch5": (5, 32), "batch2": (2, 32), "batch1": (1, 32)
    }
    for key in ("batch2", "batch1"):
        np.testing.assert_array_equal(outputs[key], outputs["batch5"][: len(outputs[key])])
    want = gelu(f64(state["x"]) @ f64(state["w1"]) + f64(state["b1"])) @ f64(state["w2"])
    np.testing.assert_allclose(outputs["batch5"], want, rtol=1e-4, atol=1e-4)


def test_layernorm_scenario_matches_numpy(stream):
    scenario = load("layernorm")
    state = fresh_state(scenario, stream, rows=7, cols=129)
    run(scenario, state, stream)
    x = f64(state["x"])
    want = softmax(layernorm(x, f64(state["gamma"]), f64(state["beta"])))
    got = host(state["out"])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-5)
