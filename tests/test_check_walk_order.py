"""The check walks its fresh eager state where capture walks its own: after asking the
scenario's steps() and outputs() of it. The CUDA layer is stubbed (no GPU here); stand-ins
record what the restore is given, and no CUDA output is imitated."""

from __future__ import annotations

import types

import pytest
from _capture_stubs import StubBackend, stub_cuda

SCENARIO = '''
"""outputs() makes a buffer in the state on its first call, and keeps it."""
PARAMS = {}


def setup():
    return {"y": 256}  # a stand-in for an array


def step(state):
    pass


def outputs(state):
    if "doubled" not in state:
        state["doubled"] = 512
    return {"y": state["y"], "doubled": state["doubled"]}
'''

STEPS_SCENARIO = '''
"""steps() makes a per-graph workspace in the state when it is asked for the steps."""
PARAMS = {}


def setup():
    return {"y": 256}


def steps(state):
    state.setdefault("ws", 1024)
    return {"first": lambda: None, "second": lambda: None}


def outputs(state):
    return {"y": state["y"]}
'''


class _Stop(Exception):
    pass


@pytest.mark.parametrize("text, names, want", [
    (SCENARIO, ["step"], {"y": 256, "doubled": 512}),
    (STEPS_SCENARIO, ["first", "second"], {"y": 256, "ws": 1024}),
], ids=["outputs", "steps"])
def test_the_restore_gets_the_buffers_outputs_or_steps_make(monkeypatch, tmp_path, text, names,
                                                            want):
    # capture() asks steps() and outputs() of its state before walking it, so the captured
    # state's snapshot holds what they make there; the fresh state the check restores from
    # must hold it too, or the restore refuses a right graph ("setup() built a different
    # state").
    from accelgraph_cli.run import protocol
    from accelgraph_cli.run.scenario import load_scenario

    given: list[dict] = []

    class RecordingSnapshot:
        def restore_from(self, arrays):
            given.append(dict(arrays))
            raise _Stop  # what the restore is given is all this test reads

    backend = StubBackend(None, None)
    stub_cuda(monkeypatch, protocol, backend)
    monkeypatch.setattr(protocol, "find_arrays", lambda state, test: list(state.items()))
    path = tmp_path / "makes_a_buffer.py"
    path.write_text(text)
    scenario = load_scenario(path)
    result = types.SimpleNamespace(scenario=scenario, backend=backend, streams=None, params={},
                                   snapshot=RecordingSnapshot(), host_save=None, unroll=1,
                                   graphs=[types.SimpleNamespace(name=name) for name in names])
    with pytest.raises(_Stop):
        protocol._check_run(result, names, 2, 0.0, 0.0, alone=False)
    assert given == [want]
