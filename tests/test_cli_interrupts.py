"""Ctrl-C and SIGTERM in the middle of a capture: the command stops with 130 or 143.

The CUDA layer is stubbed (no GPU here): only the capture loop's control flow runs, with a
scenario whose step is interrupted while "capturing" — as the SIGTERM handler does, by
raising in the main thread. No CUDA output is imitated.
"""

from __future__ import annotations

import types

import pytest
from _capture_stubs import StubBackend, stub_cuda

STEP = '''
"""Interrupted while its step is captured."""
PARAMS = {"n": 4}
CAPTURING = []


def setup(n):
    return {"n": n}


def step(state):
    if CAPTURING:
        INTERRUPT
'''


@pytest.fixture
def no_gpu_capture(monkeypatch):
    """runner.capture with a stand-in backend: capture_begin/end only toggle a flag the
    scenario module reads, so its step knows when it is being captured."""
    from accelgraph_cli.run import protocol

    flags = []

    class FakeGraph:
        def enable_debug_mode(self):
            pass

        def capture_begin(self):
            flags.append(1)

        def abort_capture(self):
            flags.clear()

        def capture_end(self):
            flags.clear()

    stream = types.SimpleNamespace(synchronize=lambda: None)
    stub_cuda(monkeypatch, protocol, StubBackend(FakeGraph, stream))
    monkeypatch.setattr(protocol, "find_arrays", lambda *args: [])
    monkeypatch.setattr(protocol, "StateSnapshot",
                        types.SimpleNamespace(
                            take=lambda *args, **options: types.SimpleNamespace(wait=lambda: None)))
    return flags


def _scenario(tmp_path, name, interrupt, flags, monkeypatch):
    path = tmp_path / f"{name}.py"
    path.write_text(STEP.replace("INTERRUPT", interrupt))
    from accelgraph_cli.run import scenario as scenario_mod

    load = scenario_mod.load_scenario

    def load_with_flag(p, *args, **kwargs):
        loaded = load(p, *args, **kwargs)
        module = getattr(loaded, "module", None)
        if module is not None and hasattr(module, "CAPTURING"):
            module.CAPTURING = flags
        return loaded

    monkeypatch.setattr(scenario_mod, "load_scenario", load_with_flag)
    return path


# What the step runs to be interrupted: Ctrl-C, or the SIGTERM handler itself.
CTRL_C = "raise KeyboardInterrupt"
SIGTERM = "__import__('sys').modules['accelgraph_cli.cli.app']._on_sigterm(15, None)"


@pytest.mark.parametrize("interrupt, code", [(CTRL_C, 130), (SIGTERM, 143)], ids=["ctrl-c", "sigterm"])
def test_an_interrupt_during_capture_is_not_a_capture_error(
        cli, tmp_path, monkeypatch, no_gpu_capture, interrupt, code):
    path = _scenario(tmp_path, "slow", interrupt, no_gpu_capture, monkeypatch)
    import signal

    before = signal.getsignal(signal.SIGTERM)
    got, out, err = cli("capture", path)
    assert got == code, err
    # one line, as the README's exit-code table says, and no "capture failed"
    assert err.splitlines() == [f"accelgraph: {'terminated' if code == 143 else 'interrupted'}"]
    # the command's SIGTERM handler (and the default it sets after one SIGTERM) is gone
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize("interrupt, code", [(CTRL_C, 130), (SIGTERM, 143)], ids=["ctrl-c", "sigterm"])
def test_smoke_stops_at_an_interrupt_and_still_writes_its_report(
        cli, tmp_path, monkeypatch, no_gpu_capture, interrupt, code):
    folder = tmp_path / "sc"
    folder.mkdir()
    _scenario(folder, "a_first", interrupt, no_gpu_capture, monkeypatch)
    (folder / "b_second.py").write_text((folder / "a_first.py").read_text())
    got, out, err = cli("smoke", folder, "--junit", tmp_path / "report.xml")
    assert got == code, err
    assert "interrupted after 0 of 2" in out and "accelgraph:" not in err  # said once, in the table
    report = (tmp_path / "report.xml").read_text()
    assert "b_second" not in report  # the run stopped at the first scenario
