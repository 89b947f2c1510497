"""Backend selection and PyTorch-specific diagnostics, without a GPU or torch."""

import textwrap
from pathlib import Path

import pytest

from accelgraph_cli.enums import Backend
from accelgraph_cli.run import diagnose, smoke
from accelgraph_cli.run.scenario import ScenarioError, inspect_scenario

ROOT = Path(__file__).resolve().parents[1]


def _file(tmp_path, head, name="s.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(head) + "def setup():\n    return {}\n"
                    "def step(state):\n    pass\n")
    return path


@pytest.mark.parametrize("head, backend", [
    ("import torch\n", Backend.TORCH),
    ("from torch import nn\n", Backend.TORCH),
    ("import cupy\n", Backend.CUPY),
    ("import numpy\n", Backend.CUPY),
    ("import torch\nimport cupy\nBACKEND = 'torch'\n", Backend.TORCH),
    ("import torch\nimport cupy\nBACKEND = 'cupy'\n", Backend.CUPY),
    ("import cupy\nBACKEND = 'torch'\n", Backend.TORCH),
])
def test_backend_is_read_from_the_file_without_running_it(tmp_path, head, backend):
    assert inspect_scenario(_file(tmp_path, head)).backend is backend


def test_a_file_importing_both_must_say_which(tmp_path):
    path = _file(tmp_path, "import torch\nimport cupy\n")
    with pytest.raises(ScenarioError) as info:
        inspect_scenario(path)
    assert str(info.value) == (f"{path}:1: imports both torch and cupy; say which one the step "
                               'launches its work with: BACKEND = "torch" or BACKEND = "cupy"')


def test_bad_backend_and_async_pool_for_torch_are_refused(tmp_path):
    path = _file(tmp_path, "import torch\nBACKEND = 'jax'\n")
    with pytest.raises(ScenarioError) as info:
        inspect_scenario(path)
    assert str(info.value) == (f"{path}:2: BACKEND = 'jax' is not one of 'cupy', 'torch'; use "
                               "one of those (or remove BACKEND to get 'cupy')")
    path = _file(tmp_path, "import torch\nPOOL = 'async'\n")
    with pytest.raises(ScenarioError) as info:
        inspect_scenario(path)
    assert str(info.value) == (
        f"{path}:2: POOL = 'async' is CuPy's stream-ordered allocator; a torch scenario's graphs "
        "allocate from torch's caching allocator: use 'private' or 'shared'")


def test_bundled_torch_scenarios_are_torch_and_cupy_ones_cupy():
    backends = {p.stem: inspect_scenario(p).backend for p in (ROOT / "scenarios").glob("*.py")}
    assert {name for name, b in backends.items() if b is Backend.TORCH} == {
        "gpt_decode", "torch_buckets", "train_step"}
    assert backends["mlp_decode"] is Backend.CUPY
    assert inspect_scenario(ROOT / "tests/broken_capture/torch_as_cupy.py").backend is Backend.CUPY


def test_smoke_skips_torch_scenarios_with_a_reason_where_torch_is_absent(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    row = smoke.run_one(ROOT / "scenarios" / "gpt_decode.py", iters=1, rounds=1)
    assert row.status == "skipped" and row.ok
    assert row.message == ("skipped: a PyTorch scenario, and torch is not installed here "
                           "(pip install 'accelgraph[torch]')")
    xml = smoke.junit_xml([row])
    assert '<skipped message="skipped: a PyTorch scenario' in xml


# -- diagnostics for failures PyTorch raises under capture --------------------------------------

CAPTURING = "CUDA error: operation not permitted when stream is capturing"


def _raise_at(tmp_path, line, message, exc_type=RuntimeError):
    """Run a scenario-file function whose one line raises like torch would; return the error."""
    path = tmp_path / "scen.py"
    path.write_text(f"def step(state, fail):\n    {line}\n")
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)

    def fail(*_a, **_k):
        raise exc_type(message)

    state = _State(fail)
    try:
        namespace["step"](state, fail)
    except Exception as exc:  # noqa: BLE001 - the point is to catch what the line raised
        return exc, path
    raise AssertionError("the line did not raise")


class _State:
    """Stands in for tensors: every attribute and call ends in ``fail``."""

    def __init__(self, fail):
        self._fail = fail

    def __getitem__(self, key):
        return self

    def __getattr__(self, name):
        return lambda *a, **k: self._fail()

    def __gt__(self, other):
        return self


@pytest.mark.parametrize("line, cause, words", [
    ("v = state['x'].sum().item()", "host_read", "`.item()` reads a tensor's value on the host"),
    ("v = state['x'].tolist()", "host_read", "`.tolist()` reads"),
    ("print(fail())", "host_read", "`print(...)` reads"),
    ("state.synchronize()", "host_sync", "`synchronize(...)` waits for the GPU"),
    ("i = state.nonzero()", "data_dependent_shape", "`nonzero` makes a tensor whose size"),
    ("y = state[state > 0].sum()", "data_dependent_shape", "`[state > 0]` makes a tensor"),
])
def test_torch_failures_are_explained_from_the_scenario_line(tmp_path, line, cause, words):
    exc, path = _raise_at(tmp_path, line, CAPTURING)
    found = diagnose.explain(exc, str(path))
    assert found is not None and found.cause == cause
    assert found.where == f"{path}:2"
    assert words in found.what


def test_a_pageable_copy_into_the_step_is_named(tmp_path):
    message = ("Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the "
               "CPU tensor is pinned. Please use tensor.pin_memory()")
    exc, path = _raise_at(tmp_path, "y = state.to('cuda')", message)
    found = diagnose.explain(exc, str(path))
    assert found.cause == "pageable_copy" and found.where == f"{path}:2"
    assert "pin_memory=True" in found.fix
    # the same message for .cpu() is a host read, not a pageable H2D copy
    exc, path = _raise_at(tmp_path, "y = state.cpu()", message)
    assert diagnose.explain(exc, str(path)).cause == "host_read"


def test_a_torch_error_that_is_not_about_capture_is_left_alone(tmp_path):
    exc, path = _raise_at(tmp_path, "v = state.item()", "shape mismatch: [3] vs [4]")
    assert diagnose.explain(exc, str(path)) is None


def test_a_failure_inside_a_lambda_step_points_at_the_innermost_scenario_line(tmp_path):
    from accelgraph_cli.run.scenario import load_scenario

    path = tmp_path / "lam.py"
    path.write_text(textwrap.dedent('''\
        """Steps as lambdas calling a helper that makes an illegal call."""
        PARAMS = {}
        def setup():
            return {}
        def work(state, batch):
            raise RuntimeError("cudaErrorStreamCaptureUnsupported: not permitted when capturing")
        def steps(state):
            return {"a": (lambda: work(state, 1))}
    '''))
    scen = load_scenario(path)
    step = scen.graph_steps(scen.make_state({}))["a"]
    with pytest.raises(Exception) as info:
        step()
    found = diagnose.explain(info.value, str(path))
    assert found.where == f"{path}:6"  # the raise in work(), not the lambda on line 8
    assert found.cuda_error == "cudaErrorStreamCaptureUnsupported"
