"""The order of capture()'s steps around the output flips, with the CUDA layer stubbed (no
GPU here): every flip is undone exactly once, after the capture has ended, on success and
on every way a capture fails. Stand-ins record what would run; no CUDA output is imitated."""

from __future__ import annotations

import types

import numpy
import pytest
from _capture_stubs import StubBackend, stub_cuda

from accelgraph_cli.errors import CaptureError

SCENARIO = '''
"""Two float outputs in the state, one step."""
PARAMS = {}
STEP = []


def setup():
    return {"y": 256, "acc": 512}  # stand-ins for arrays: their "pointers"


def step(state):
    STEP[0](state)


def outputs(state):
    return {"y": state["y"], "acc": state["acc"], "again": state["y"]}
'''


@pytest.fixture
def rig(monkeypatch, tmp_path):
    """capture() with every CUDA call replaced by one that appends to ``log``."""
    from accelgraph_cli.run import protocol
    from accelgraph_cli.run import scenario as scenario_mod

    log: list[str] = []
    changed: list[str] = []
    executed: list = []  # what the stand-in watch says the device ran while capturing

    class FakeGraph:
        graph_handle = 1

        def __init__(self):
            self.capturing = False

        def enable_debug_mode(self):
            pass

        def capture_begin(self):
            self.capturing = True
            log.append("capture_begin")

        def abort_capture(self):
            if self.capturing:
                log.append("abort")
            self.capturing = False

        def capture_end(self):
            self.capturing = False
            log.append("capture_end")

        def pool_bytes(self):
            return 0

    class FakeStream:
        def synchronize(self):
            log.append("sync")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class FakeSnapshot:
        def wait(self):
            log.append("wait")

        def start_compare(self):
            pass

        def changed(self):
            log.append("compare")
            return list(changed)

    class FakeWatch:
        off = None
        ms = 0.0
        prepare = staticmethod(lambda: log.append("prepare"))

        def __init__(self):
            self.on = False

        def start(self, capturing_stream=None):
            self.on = True
            log.append(f"watch_start {capturing_stream}")

        def stop(self):
            if self.on:
                log.append("watch_stop")
            self.on = False
            return list(executed)

    monkeypatch.setattr(protocol, "ExecutionWatch", FakeWatch)
    stub_cuda(monkeypatch, protocol, StubBackend(FakeGraph, FakeStream()),
              device_synchronize=lambda: log.append("device_sync"))
    monkeypatch.setattr(protocol, "find_arrays", lambda state, test: list(state.items()))
    monkeypatch.setattr(protocol, "state_regions",
                        lambda arrays: [types.SimpleNamespace(ptr=a) for _, a in arrays])
    monkeypatch.setattr(protocol, "float_allocation", lambda value: (value, 8, 4, None))
    monkeypatch.setattr(protocol, "flip_low_bits", lambda ptr, *rest: log.append(f"flip {ptr}") or ptr)
    monkeypatch.setattr(protocol, "flip_back", lambda view: log.append(f"flip_back {view}"))
    monkeypatch.setattr(protocol, "StateSnapshot",
                        types.SimpleNamespace(take=lambda *args, **options: FakeSnapshot()))
    monkeypatch.setattr(protocol, "node_kinds", lambda handle: {"kernel": 1})
    monkeypatch.setattr(protocol, "_off_stream_lines", lambda *args: [])

    path = tmp_path / "two_outputs.py"
    path.write_text(SCENARIO)
    loaded = scenario_mod.load_scenario(path)

    def run(step):
        loaded.module.STEP[:] = [step]
        return protocol.capture(loaded, {})

    return types.SimpleNamespace(log=log, changed=changed, executed=executed, run=run)


FLIPS = ["flip 256", "flip 512"]
BACKS = ["flip_back 256", "flip_back 512", "sync"]


def _steps(log):
    return [entry for entry in log
            if entry not in ("prepare", "device_sync", "wait", "watch_start 1", "watch_stop")]


def test_outputs_are_flipped_once_each_before_capture_and_back_after_the_compare(rig):
    rig.run(lambda state: rig.log.append("step"))
    # CUPTI's load started first; setup's streams done before anything is flipped
    assert rig.log[:2] == ["prepare", "device_sync"]
    assert _steps(rig.log) == [*FLIPS, "capture_begin", "step", "capture_end", "compare", *BACKS]


def test_cupti_starts_loading_before_setup_unless_the_watch_is_switched_off(rig, monkeypatch):
    from accelgraph_cli.cuda.cupti.watch import SwitchedOff
    from accelgraph_cli.run import protocol

    rig.run(lambda state: rig.log.append("step"))
    assert rig.log[0] == "prepare" and rig.log.count("prepare") == 1
    assert rig.log.index("prepare") < rig.log.index("watch_start 1")
    rig.log.clear()
    monkeypatch.setattr(protocol, "ExecutionWatch", SwitchedOff)
    rig.run(lambda state: rig.log.append("step"))
    assert "prepare" not in rig.log and "step" in rig.log


def test_outputs_are_asked_for_before_the_sync_that_lets_the_snapshot_skip_its_own(
        rig, monkeypatch):
    # The snapshot is told the device is settled (it skips its synchronization): so any
    # work outputs() queues must come before the runner's synchronization, and the
    # snapshot must be taken after the flips, on the stream they were queued on.
    from accelgraph_cli.run import protocol

    asked = protocol._outputs_to_flip
    monkeypatch.setattr(protocol, "_outputs_to_flip",
                        lambda *args: rig.log.append("outputs") or asked(*args))
    taken = protocol.StateSnapshot.take

    def take(arrays, stream, **options):
        # the regions the flips were picked from, not found again
        rig.log.append(f"take synchronized={options['synchronized']} "
                       f"regions={[region.ptr for region in options['regions']]}")
        return taken(arrays, stream)

    found = protocol.state_regions
    monkeypatch.setattr(protocol, "state_regions",
                        lambda arrays: rig.log.append("regions") or found(arrays))
    monkeypatch.setattr(protocol, "StateSnapshot", types.SimpleNamespace(take=take))
    rig.run(lambda state: rig.log.append("step"))
    assert rig.log[:7] == ["prepare", "outputs", "device_sync", "regions", *FLIPS,
                           "take synchronized=True regions=[256, 512]"]
    assert rig.log.count("regions") == 1  # found once, for the flips and the snapshot


def test_a_step_that_raises_ends_the_capture_before_the_flips_back(rig):
    def step(state):
        raise ValueError("boom")

    with pytest.raises(CaptureError):
        rig.run(step)
    assert _steps(rig.log) == [*FLIPS, "capture_begin", "abort", *BACKS, "sync"]


def test_ctrl_c_in_the_step_ends_the_capture_then_flips_back_and_propagates(rig):
    def step(state):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        rig.run(step)
    assert _steps(rig.log) == [*FLIPS, "capture_begin", "abort", *BACKS, "sync"]


def test_ctrl_c_after_the_step_before_capture_end_is_aborted_by_the_outer_handler(rig):
    # between the step's own handler and capture_end: only the outer handler sees it
    from accelgraph_cli.run import protocol

    real = protocol.time.perf_counter
    raised = []

    def perf_counter():
        if rig.log[-1:] == ["step"] and not raised:  # t1, read right after the step
            raised.append(1)
            raise KeyboardInterrupt
        return real()

    rig_time = types.SimpleNamespace(perf_counter=perf_counter)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(protocol, "time", rig_time)
        with pytest.raises(KeyboardInterrupt):
            rig.run(lambda state: rig.log.append("step"))
    assert _steps(rig.log) == [*FLIPS, "capture_begin", "step", "abort", *BACKS, "sync"]


def test_stray_work_found_by_the_guard_still_flips_everything_back(rig):
    rig.changed.append("state['y']")
    with pytest.raises(CaptureError, match=r"state\['y'\] changed"):
        rig.run(lambda state: rig.log.append("step"))
    assert _steps(rig.log) == [*FLIPS, "capture_begin", "step", "capture_end", "compare", *BACKS,
                               "sync"]


def test_a_state_that_is_one_array_is_not_asked_for_its_truth(rig, monkeypatch):
    # setup() may return one array as the state; capture asked `... and warm_state`, and the
    # truth of an array of several elements raises (CuPy, torch and NumPy alike), so capture
    # crashed where outputs() could not run before the step.
    from accelgraph_cli.run import protocol

    class OneArray:
        def __bool__(self):
            raise ValueError("The truth value of an array with more than one element is "
                             "ambiguous")

    monkeypatch.setattr(protocol, "_warm_up", lambda *args: (OneArray(), []))
    monkeypatch.setattr(protocol, "_outputs_to_flip", lambda scenario, state: None)
    rig.run(lambda state: rig.log.append("step"))
    assert _steps(rig.log) == ["capture_begin", "step", "capture_end", "compare"]


RESULTS_SCENARIO = '''
"""outputs() returns the dict the step publishes: empty before the first step."""
PARAMS = {}


def setup():
    return {"y": 256, "acc": 512, "results": {}}


def step(state):
    state["results"]["y"] = state["y"]


def outputs(state):
    return dict(state["results"])
'''


def test_outputs_named_only_after_the_step_are_flipped_where_the_warm_up_held_them(
        rig, monkeypatch, tmp_path):
    # outputs() ran before capture and named nothing ({}), so nothing was flipped, and stray
    # work rewriting y with the value it held went unseen. The warm-up's state, after its
    # step, names y; the captured state's array at that path is flipped too.
    from accelgraph_cli.run import protocol
    from accelgraph_cli.run import scenario as scenario_mod

    warm = {"y": 1256, "acc": 1512, "results": {"y": 1256}}
    monkeypatch.setattr(protocol, "_warm_up", lambda *args: (warm, []))
    monkeypatch.setattr(protocol, "_allocation_start",
                        lambda value: value if isinstance(value, int) else None)
    monkeypatch.setattr(protocol, "find_arrays", lambda state, test: [
        (k, v) for k, v in state.items() if isinstance(v, int)])
    path = tmp_path / "results_dict.py"
    path.write_text(RESULTS_SCENARIO)
    protocol.capture(scenario_mod.load_scenario(path), {})
    assert _steps(rig.log) == ["flip 256", "capture_begin", "capture_end", "compare",
                               "flip_back 256", "sync"]


def _check_with(monkeypatch, verdicts):
    """check() of graphs a, b, c with _check_run answering from ``verdicts``: (names,
    prefix) -> "ok", "FAILED" or "raised" (the eager step could not run alone)."""
    from accelgraph_cli.run import protocol

    calls = []

    def fake_run(result, names, steps, rtol, atol, *, alone, prefix=()):
        key = (tuple(names), tuple(prefix))
        calls.append(key)
        verdict = verdicts.get(key, "ok")
        found = protocol.CheckResult(verdict == "ok", list(names), steps, [], rtol, atol, names,
                                     ran=verdict not in ("raised", "not run"), note=f"{key}")
        found.cannot_run_alone = verdict == "raised"
        return found

    monkeypatch.setattr(protocol, "_check_run", fake_run)
    result = types.SimpleNamespace(graphs=[types.SimpleNamespace(name=n) for n in "abc"])
    return protocol.check(result), calls


def test_a_graph_that_differs_alone_is_checked_again_after_the_graphs_before_it(monkeypatch):
    # head reads what encode's graph allocated (no fresh state has it): alone it differs,
    # after encode it is right, and so it was in the run in order; it failed the whole check
    found, calls = _check_with(monkeypatch, {(("b",), ()): "FAILED"})
    assert found.ok and found.per_graph["b"].ok
    assert (("b",), ("a",)) in calls and "on a fresh state its replay differs" in \
        found.per_graph["b"].note
    # the first graph has no graphs before it; one wrong both ways keeps its own failure
    found, calls = _check_with(monkeypatch, {(("a",), ()): "FAILED", (("c",), ()): "FAILED",
                                             (("c",), ("a", "b")): "FAILED"})
    assert not found.ok
    assert (("a",), ()) in calls and not any(k[0] == ("a",) and k[1] for k in calls)
    assert found.per_graph["c"].note == "(('c',), ())"
    # one that cannot run alone is checked after them whatever that gives
    found, _ = _check_with(monkeypatch, {(("c",), ()): "raised", (("c",), ("a", "b")): "FAILED"})
    assert not found.ok and found.per_graph["c"].note == "(('c',), ('a', 'b'))"
    # so is one not run alone (a fresh state gives it no output to compare): a decode step
    # whose frozen position shows only after its prefill failed there, and the "not run"
    # of its own check, which the verdict leaves out, hid it
    found, _ = _check_with(monkeypatch, {(("c",), ()): "not run", (("c",), ("a", "b")): "FAILED"})
    assert not found.ok and found.per_graph["c"].verdict == "FAILED"
    found, _ = _check_with(monkeypatch, {(("c",), ()): "not run"})
    assert found.ok and "the check was not run ((('c',), ()))" in found.per_graph["c"].note


def test_an_output_published_under_a_placeholder_key_is_named_where_the_state_held_it(
        monkeypatch):
    # The step publishes the buffer it wrote as state["z"], which setup() declares as None.
    # After the warm-up's step the walk reaches that buffer first (only) through "z", which in
    # the captured state holds None: the buffer was not flipped, and stray work rewriting it
    # with its own value went unseen. The paths the warm-up's state held it at before its
    # step count too.
    import numpy

    from accelgraph_cli.run import protocol
    from accelgraph_cli.run.statewalk import find_arrays

    monkeypatch.setattr(protocol, "is_device_array", lambda obj: isinstance(obj, numpy.ndarray))
    monkeypatch.setattr(protocol, "_allocation_start",
                        lambda v: (v if v.base is None else v.base).__array_interface__["data"][0]
                        if isinstance(v, numpy.ndarray) else None)
    y, z_buf = numpy.zeros(4), numpy.ones(4)
    warm = {"x": numpy.arange(4.0), "y": y, "z": None, "z_buf": z_buf}
    before = find_arrays(warm, protocol.is_device_array)
    warm["z"] = z_buf  # what the step does
    scenario = types.SimpleNamespace(outputs_fn=lambda s: {"y": s["y"], "z": s["z"]})
    assert protocol._output_paths(scenario, warm) == ["state['y']", "state['z']"]
    assert protocol._output_paths(scenario, warm, before) == [
        "state['y']", "state['z_buf']", "state['z']"]


def test_the_fill_of_a_broadcast_output_narrows_its_repeated_dimensions():
    # An expanded output (stride 0) has one value where it shows many: torch refuses to
    # write it whole ("more than one element of the written-to tensor refers to a single
    # memory location"), which ended the check in an internal error.
    import numpy

    from accelgraph_cli.cuda.snapshot import one_of_each_broadcast as _one_of_each_broadcast

    keep = numpy.array([True, False, True])
    mask = numpy.broadcast_to(keep[:, None, None], (3, 4, 5))  # strides (1, 0, 0)
    want = numpy.ascontiguousarray(mask)
    target, reference = _one_of_each_broadcast(mask, want)
    assert target.shape == reference.shape == (3, 1, 1)
    assert numpy.shares_memory(target, mask) and (reference == keep[:, None, None]).all()
    plain = numpy.zeros((2, 3))
    assert _one_of_each_broadcast(plain, plain)[0].shape == (2, 3)  # nothing repeated
    scalar = numpy.zeros(())
    assert _one_of_each_broadcast(scalar, scalar)[0].shape == ()


def test_shared_outputs_ask_the_captured_state_only_inside_its_allocations(monkeypatch):
    # The captured state's outputs() was asked before eager's outputs were copied; an
    # outputs() staging into one module-level buffer then overwrote eager's first result.
    # It is asked only for an output inside an allocation the captured state holds, never
    # under an async pool (graph memory is mapped only during a launch).
    from accelgraph_cli.enums import PoolKind
    from accelgraph_cli.run import protocol

    asked = []

    class Snapshot:
        def covers(self, value):
            return value == "in_state_allocation"

        def shares(self, value, also=()):
            return value == "same_bytes" or (value == "in_state_allocation" and "tail" in also)

    def outputs(state):
        asked.append(state)
        return {"y": "tail"}

    def result(pool):
        return types.SimpleNamespace(snapshot=Snapshot(), pool=pool, state="captured",
                                     scenario=types.SimpleNamespace(outputs=outputs),
                                     host_save=None)

    staged = {"y": "module_buffer"}
    assert protocol._shared_outputs(result(PoolKind.PRIVATE), staged) == [] and asked == []
    assert protocol._shared_outputs(result(PoolKind.PRIVATE), {"a": "same_bytes"}) == ["a"]
    assert asked == []
    tail = {"y": "in_state_allocation", "z": "module_buffer"}
    assert protocol._shared_outputs(result(PoolKind.PRIVATE), tail) == ["y"]
    assert asked == ["captured"]
    assert protocol._shared_outputs(result(PoolKind.ASYNC), tail) == [] and asked == ["captured"]


class _NumpyBackend:
    """difference() as the backends answer it, on NumPy arrays (bitwise when rtol = atol = 0)."""

    def difference(self, want, got, rtol, atol):
        from accelgraph_cli.cuda.backends import Difference

        if want.shape != got.shape or want.dtype != got.dtype:
            return Difference(-1, want.size, 0.0, "shape/dtype")
        bad = int((want.view(numpy.uint8) != got.view(numpy.uint8)).sum())
        return Difference(bad, want.size, 0.0)


def test_an_output_is_left_as_it_was_only_where_every_round_holds_its_bits():
    from accelgraph_cli.run.protocol import _left_as_it_was

    start = {"logits": numpy.zeros(4), "cache": numpy.zeros(4), "sign": numpy.zeros(2)}
    rounds = [{"logits": numpy.zeros(4), "cache": numpy.ones(4), "sign": numpy.zeros(2)},
              {"logits": numpy.zeros(4), "cache": numpy.ones(4), "sign": -numpy.zeros(2)}]
    # cache changed; sign holds -0.0 in its second round (equal values, other bits)
    assert _left_as_it_was(_NumpyBackend(), start, rounds) == {"logits"}
    # an output with nothing before the steps (outputs() had none yet) is never left
    assert _left_as_it_was(_NumpyBackend(), {}, rounds) == set()
    assert _left_as_it_was(_NumpyBackend(), {"logits": numpy.zeros(3)}, rounds) == set()


def test_the_watch_spans_the_capture_from_an_idle_device_to_a_synchronized_one(rig):
    # started once the before-capture checksums are done (nothing else runs then), stopped
    # after the capture has ended (the watch synchronizes the device itself: stray work
    # finished; tests/test_execution_watch.py), before the compare's own kernel
    rig.run(lambda state: rig.log.append("step"))
    log = rig.log
    # (the stub backend's capturing stream is handle 1: its records are left out)
    assert log.index("wait") < log.index("watch_start 1") < log.index("capture_begin")
    stop = log.index("watch_stop")
    assert log.index("capture_end") < stop < log.index("compare")


def test_work_the_device_ran_while_capturing_is_refused_though_no_state_changed(rig):
    # a temporary the step allocates, written on a side stream: no state changed, but the
    # device ran the kernel, which the graph lacks
    rig.executed[:] = [types.SimpleNamespace(describe=lambda: "kernel cupy_multiply")] * 2
    with pytest.raises(CaptureError) as info:
        rig.run(lambda state: rig.log.append("step"))
    message = str(info.value)
    assert "ran work outside the graph" in message
    assert "the GPU ran 2 operation(s) while capturing (kernel cupy_multiply (x2))" in message
    assert "changed while capturing" not in message
    assert _steps(rig.log) == [*FLIPS, "capture_begin", "step", "capture_end", "compare", *BACKS,
                              "sync"]  # the flips undone after the refusal


def test_a_step_that_fails_leaves_the_watch_stopped(rig):
    def fail(state):
        raise ValueError("boom")

    with pytest.raises(CaptureError):
        rig.run(fail)
    assert rig.log.count("watch_start 1") == rig.log.count("watch_stop") == 1
