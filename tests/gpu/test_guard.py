"""The capture guard on the GPU: work that ran outside the graph, empty graphs, and a check that
replays from the pre-capture state cannot be passed by a graph that does not do the work."""

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from accelgraph_cli.errors import AccelgraphError, CaptureError
from accelgraph_cli.run import protocol as runner
from accelgraph_cli.run import smoke
from accelgraph_cli.run.scenario import load_scenario, parse_params
from accelgraph_cli.run.statewalk import find_arrays

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
BROKEN = ROOT / "tests" / "broken_capture"
HAS_TORCH = importlib.util.find_spec("torch") is not None

# scenario stem -> words the one-line error must contain
GUARDED = {
    "side_stream": ("ran work outside the graph", "state['y']", "fork/join"),
    "partial_side_stream": ("ran work outside the graph", "state['z']", "wait_event"),
    # the stray kernel rewrites z with the value setup's warm-up left there: seen only
    # because capture flips the outputs the state holds
    "prefilled_side_stream": ("ran work outside the graph", "state['z']", "wait_event"),
    # the same, with an output only the step stores: outputs() cannot run before the step,
    # and the outputs the state holds are named from the warm-up's state instead
    "lazy_output_side_stream": ("ran work outside the graph", "state['z']", "wait_event"),
    # the workspace is raw memory (a MemoryPointer) no array of the state reaches
    "raw_workspace_side_stream": ("ran work outside the graph", "state['ws']", "wait_event"),
    # a temporary the step allocates, written on a side stream it waits for from the host:
    # no state changes, so only the execution watch sees it
    "temp_side_stream": ("ran work outside the graph", "the GPU ran 1 operation(s) while "
                         "capturing (kernel cupy_multiply", "wait_event"),
    "empty_step": ("recorded no work", "empty", "EXPECT_EMPTY"),
    "torch_as_cupy": ("ran work outside the graph", "state['y']", "torch"),
}


def _marked_line(path: Path) -> int:
    for number, text in enumerate(path.read_text().splitlines(), 1):
        if "DIAGNOSE-LINE" in text:
            return number
    raise AssertionError(f"{path} has no DIAGNOSE-LINE mark")


def _capture(path, *overrides):
    scen = load_scenario(path)
    return runner.capture(scen, parse_params(scen.info.params, list(overrides)))


def _write(tmp_path, name, body):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return path


@pytest.mark.parametrize("stem", sorted(GUARDED))
def test_stray_work_and_empty_graphs_are_refused_with_the_line(stem, capsys):
    if stem == "torch_as_cupy" and not HAS_TORCH:
        pytest.skip("torch is not installed")
    if stem == "temp_side_stream":  # make test-gpu installs cupti-python: the watch must run
        from accelgraph_cli.cuda.cupti import watch

        assert watch.unavailable() is None, watch.unavailable()
    path = BROKEN / f"{stem}.py"
    with pytest.raises(CaptureError) as info:
        _capture(path)
    message = str(info.value)
    with capsys.disabled():
        print(f"\n{stem}: {message}")
    assert "\n" not in message
    for words in GUARDED[stem]:
        assert words in message, (words, message)
    assert f"{stem}.py:{_marked_line(path)}" in message, message
    # the side-stream cases name only what changed: x was read, not written
    assert "state['x']" not in message
    # and the process captures, replays and checks a good scenario afterwards
    assert runner.check(_capture(ROOT / "scenarios" / "saxpy.py")).ok


def test_cli_exits_2_for_stray_work_and_smoke_reports_errors(tmp_path):
    path = BROKEN / "side_stream.py"
    for verb in (["capture"], ["replay", "--iters", "5"], ["dump", "--out", str(tmp_path / "g.dot")]):
        proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", *verb, str(path)],
                              capture_output=True, text=True, cwd=tmp_path, timeout=120)
        assert proc.returncode == 2, (verb, proc.stdout, proc.stderr)
        assert "ran work outside the graph" in proc.stderr
        assert "Traceback" not in proc.stderr
        assert "speedup" not in proc.stdout and "check: ok" not in proc.stdout
    assert not (tmp_path / "g.dot").exists()
    for stem in ("side_stream", "partial_side_stream", "prefilled_side_stream", "empty_step"):
        row = smoke.run_one(BROKEN / f"{stem}.py", iters=5, rounds=1)
        assert row.status == "error", row
        assert "outside the graph" in row.message or "recorded no work" in row.message


def test_expect_empty_lets_an_empty_step_capture(tmp_path):
    path = _write(tmp_path, "meant_empty", '''
        """A step that records nothing, on purpose."""
        import cupy
        EXPECT_EMPTY = True
        def setup():
            return {"x": cupy.ones(4)}
        def step(state):
            pass
    ''')
    result = _capture(path)
    assert [g.node_count for g in result.graphs] == [0]


def test_an_output_the_graph_never_writes_fails_the_check(tmp_path, request):
    # z is allocated and computed on a side stream during capture: not state the snapshot
    # covers, so the checksums cannot see it, and the graph (which holds y's kernel) is not
    # empty. The execution watch sees the kernel run and refuses the capture; without the
    # watch (no cupti-python), the check fills z with the complement of eager's z before
    # replaying: replay never writes z, so the check fails and says so.
    path = _write(tmp_path, "new_output_off_stream", '''
        """y on the capturing stream; z, a new array, on an unjoined side stream."""
        import cupy
        def setup():
            x = cupy.arange(64, dtype=cupy.float32)
            (x * 2) + 1  # compile both kernels before capture
            return {"x": x, "side": cupy.cuda.Stream(non_blocking=True)}
        def step(state):
            state["y"] = state["x"] * 2
            with state["side"]:
                state["z"] = state["x"] + 1
        def outputs(state):
            return {"y": state["y"], "z": state["z"]}
    ''')
    with pytest.raises(CaptureError, match=r"the GPU ran 1 operation\(s\) while capturing"):
        _capture(path)
    request.getfixturevalue("no_watch")  # from here on, captures without the watch
    result = _capture(path)
    assert result.node_count >= 1
    checked = runner.check(result)
    assert not checked.ok
    assert [m.output for m in checked.mismatches] == ["z"]
    assert checked.mismatches[0].elements == 64
    assert checked.mismatches[0].detail == runner.NOT_WRITTEN


def test_the_check_replays_from_the_pre_capture_state(tmp_path):
    # An accumulating step: eager from a fresh state after 2 steps holds x0 + 2. Replaying from
    # whatever the state held after another run would not; the check restores the snapshot,
    # so it passes, and passes again when called a second time.
    path = _write(tmp_path, "accumulate", '''
        """x += 1 per step."""
        import cupy
        def setup():
            x = cupy.zeros(32, dtype=cupy.float32)
            x += 1
            x -= 1
            return {"x": x}
        def step(state):
            state["x"] += 1
        def outputs(state):
            return {"x": state["x"]}
    ''')
    result = _capture(path)
    assert runner.check(result, steps=2).ok
    assert runner.check(result, steps=3).ok
    assert float(result.state["x"][0]) == 3.0


def test_a_step_warmed_up_in_setup_captures_and_leaves_its_outputs_as_they_were(tmp_path):
    # setup runs the step once, so y already holds the step's result, and capture flips the
    # last bit of y's and acc's words while it runs (y through a view, acc an accumulator
    # the step reads): all on the capturing stream, nothing changes, the capture passes, and
    # every output holds exactly its pre-capture bytes when capture returns.
    path = _write(tmp_path, "warmed_up", '''
        """y = 2x + 1, warmed up in setup; an accumulator beside it."""
        import cupy
        def setup():
            x = cupy.arange(256, dtype=cupy.float32)
            state = {"x": x, "y": cupy.zeros(256, dtype=cupy.float32),
                     "n": cupy.arange(256, dtype=cupy.int32),
                     "acc": cupy.ones(256, dtype=cupy.float64)}
            step(state)
            return state
        def step(state):
            cupy.multiply(state["x"], 2, out=state["y"])
            state["y"] += 1
            state["acc"] += state["y"]
        def outputs(state):
            return {"y": state["y"][:128], "acc": state["acc"], "n": state["n"],
                    "y_all": state["y"]}
    ''')
    scen = load_scenario(path)
    before = {k: v.copy() for k, v in scen.outputs(scen.make_state({})).items()}
    result = runner.capture(scen, {})
    after = scen.outputs(result.state)
    for key, want in before.items():
        assert after[key].tobytes() == want.tobytes(), key
    assert runner.check(result).ok


def test_without_the_flip_the_prefilled_stray_work_would_pass(monkeypatch, no_watch):
    # The control for prefilled_side_stream: with the outputs not flipped, the stray kernel
    # rewrites z with the bytes it held, the checksums see no change, and the check (which
    # restores the same prefilled bytes) passes a graph that lacks z's kernel. The flip, and
    # (where cupti-python is there) the execution watch, each turn this into an error; this
    # control has neither.
    monkeypatch.setattr(runner, "_flip_state_outputs", lambda *args, **options: None)
    result = _capture(BROKEN / "prefilled_side_stream.py")
    assert result.node_count == 1
    assert runner.check(result).ok


def test_stray_work_on_an_output_returned_as_a_view_is_seen(tmp_path):
    # outputs() returns views of one buffer (as bucket scenarios do); the stray kernel
    # rewrites the buffer with what setup's warm-up left there.
    path = _write(tmp_path, "prefilled_view", '''
        """out[:] = x + 1 on an unjoined side stream, warmed up in setup."""
        import cupy
        def setup():
            x = cupy.arange(64, dtype=cupy.float32)
            state = {"x": x, "out": cupy.zeros((4, 64), dtype=cupy.float32), "y": cupy.zeros(64),
                     "side": cupy.cuda.Stream(non_blocking=True)}
            cupy.cuda.get_current_stream().synchronize()
            step(state)
            cupy.cuda.Device().synchronize()
            return state
        def step(state):
            cupy.multiply(state["x"], 2, out=state["y"])
            with state["side"]:
                cupy.add(state["x"], 1, out=state["out"][1])  # DIAGNOSE-LINE
        def outputs(state):
            return {"b1": state["out"][:1], "b2": state["out"][:2], "y": state["y"]}
    ''')
    with pytest.raises(CaptureError, match=r"ran work outside the graph: state\['out'\] changed"):
        _capture(path)


def test_a_buffer_every_state_shares_is_not_stray_work_and_leaves_the_check_not_run(tmp_path):
    # setup hands every state one module-level accumulator that the step writes. The
    # warm-up's step writes it too, through its throwaway state: the checksums are taken
    # after the warm-up, or its write would look like work that ran outside the graph.
    # The step also reads a host counter that capture freezes: a wrong graph. Eager and replay
    # both wrote the one buffer, and the check compared it with itself ("ok"); it now says it
    # cannot compare them.
    path = _write(tmp_path, "shared_buffer", '''
        """acc += t * x with t a host counter, acc one buffer for every state."""
        import cupy
        SHARED = []
        def setup():
            if not SHARED:
                SHARED.append(cupy.zeros(256, dtype=cupy.float32))
            return {"x": cupy.ones(256, dtype=cupy.float32), "acc": SHARED[0], "t": 0.0}
        def step(state):
            state["t"] += 1.0
            state["acc"] += state["t"] * state["x"]
        def outputs(state):
            return {"acc": state["acc"]}
    ''')
    result = _capture(path)
    assert result.node_count == 2  # t * x, then the +=
    checked = runner.check(result)
    assert (checked.ran, checked.ok, checked.verdict) == (False, False, "not run")
    assert "same memory for 'acc'" in checked.note and "afresh" in checked.note
    row = smoke.run_one(path, iters=2, rounds=1)
    assert (row.status, row.check) == ("failed", "not run")
    assert row.message.startswith("check not run: outputs() gives the same memory")


@pytest.mark.parametrize("also_as_array", [False, True])
def test_raw_memory_into_a_buffer_every_state_shares_is_refused_by_the_restore(tmp_path,
                                                                               also_as_array):
    # Each setup() takes its own slot of one module-level buffer and holds it as a raw
    # pointer (pool + offset): the slots share the allocation, and a pointer does not say
    # how many bytes it reaches, so the restore cannot copy eager's slot into the captured
    # one. It must refuse with one line, not skip the slot and compare stale bytes. Where
    # the state also holds the slot as an array (the pointer is its .data), the array's
    # copy restores those bytes: a right graph, and check: ok.
    path = _write(tmp_path, "raw_slot", f'''
        """Each state's cache is a raw pointer into its own slot of one buffer."""
        import cupy
        SLOTS = []
        NEXT = [0]
        def setup():
            if not SLOTS:
                SLOTS.append(cupy.zeros(8 * 256, dtype=cupy.float32))
            slot = NEXT[0] % 8
            NEXT[0] += 1
            view = SLOTS[0][slot * 256:(slot + 1) * 256]
            view.fill(0)
            state = {{"x": cupy.ones(256, dtype=cupy.float32), "slot": view.data,
                      "y": cupy.zeros(256, dtype=cupy.float32)}}
            if {also_as_array}:
                state["slot_array"] = view
            return state
        def step(state):
            view = cupy.ndarray((256,), dtype=cupy.float32, memptr=state["slot"])
            cupy.add(view, state["x"], out=view)
            cupy.multiply(view, 2.0, out=state["y"])
        def outputs(state):
            return {{"y": state["y"]}}
    ''')
    result = _capture(path)
    if also_as_array:
        assert runner.check(result).ok
        return
    with pytest.raises(AccelgraphError) as info:
        runner.check(result)
    message = str(info.value)
    assert "\n" not in message
    assert "state['slot']" in message and "raw memory" in message, message
    assert runner.check(_capture(ROOT / "scenarios" / "saxpy.py")).ok


def test_buckets_replay_reports_each_graph_and_checks_each_alone():
    result = _capture(ROOT / "scenarios" / "buckets.py")
    checked = runner.check(result)
    assert checked.ok, checked.problems()
    names = [g.name for g in result.graphs]
    assert list(checked.per_graph) == names
    assert all(c.ran and c.ok and c.graphs == [n] for n, c in checked.per_graph.items())
    eager, graph, per_graph = runner.time_replay(result, iters=5, warmup=1, rounds=2)
    assert [g.name for g in per_graph] == names
    assert all(g.graph.gpu_us.median > 0 and g.eager.gpu_us.median > 0 for g in per_graph)
    report = runner.ReplayReport(eager, graph, checked, result, per_graph).to_dict()
    assert [g["name"] for g in report["per_graph"]] == names
    assert set(report["check"]["per_graph"]) == set(names)


def test_guard_cost_is_reported_and_covers_the_state():
    result = _capture(ROOT / "scenarios" / "mlp_decode.py")
    guard = result.guard_summary()
    fresh = result.scenario.make_state(result.params)  # the state as it was before capture
    state_bytes = sum(a.nbytes for a in fresh.values() if hasattr(a, "nbytes"))
    assert guard["bytes"] >= state_bytes
    assert guard["arrays"] >= 2
    assert guard["snapshot_ms"] > 0 and guard["compare_ms"] > 0
    # make test-gpu installs cupti-python: the execution watch ran, and saw nothing
    assert (guard["watch"], guard["watch_off"]) == ("on", None) and guard["watch_ms"] > 0


def test_the_execution_watch_sees_a_kernel_a_copy_and_a_memset_and_nothing_after_stop(cupy):
    from accelgraph_cli.cuda.cupti.watch import ExecutionWatch

    x = cupy.ones(1024, dtype=cupy.float32)
    cupy.cuda.runtime.deviceSynchronize()
    watch = ExecutionWatch()
    watch.start()
    y = x * 3
    y.data.copy_from_device(x.data, 4096)
    cupy.cuda.runtime.memset(y.data.ptr, 0, 4096)
    cupy.cuda.runtime.deviceSynchronize()
    ran = watch.stop()
    assert watch.off is None
    kinds = [e.kind for e in ran]
    assert kinds.count("kernel") == 1 and "copy" in kinds and "memset" in kinds, ran
    assert any("multiply" in e.name for e in ran if e.kind == "kernel"), ran
    (x * 2).sum()  # while stopped: not collected, not handed to the next window either
    cupy.cuda.runtime.deviceSynchronize()
    watch.start()
    assert watch.stop() == []  # nothing ran in this window


def test_work_whose_records_cupti_drops_is_still_refused(monkeypatch):
    # CUPTI given no buffer space drops every record (counted; measured on an H200): the
    # temporary's kernel changes no state, so only the count of dropped records shows it
    from accelgraph_cli.cuda.cupti import watch

    assert watch.unavailable() is None, watch.unavailable()
    monkeypatch.setattr(watch, "_BUFFER_BYTES", 0)
    with pytest.raises(CaptureError) as info:
        _capture(BROKEN / "temp_side_stream.py")
    message = str(info.value)
    assert "ran work outside the graph" in message, message
    assert "whose activity record CUPTI dropped" in message, message
    monkeypatch.undo()  # buffers again: a good scenario captures (watched) and checks
    result = _capture(ROOT / "scenarios" / "saxpy.py")
    assert result.watch.off is None, result.watch.off
    assert runner.check(result).ok


def test_snapshot_checksum_sees_one_changed_or_moved_word(cupy, stream):
    from accelgraph_cli.cuda.snapshot import StateSnapshot, is_device_array

    a = cupy.zeros(1000, dtype=cupy.uint8)
    b = cupy.arange(1 << 20, dtype=cupy.float32)
    state = {"a": a, "view": a[10:20], "b": b, "host": [1, 2]}
    snap = StateSnapshot.take(find_arrays(state, is_device_array), stream)
    assert [r.paths for r in snap.regions] == [["state['a']", "state['view']"], ["state['b']"]]
    assert snap.changed() == []
    a[999] = 1
    assert snap.changed() == ["state['a']", "state['view']"]
    a[999] = 0
    assert snap.changed() == []
    b[[0, 1]] = b[[1, 0]]  # the same words, swapped: the position salt sees it
    assert snap.changed() == ["state['b']"]
    b[[0, 1]] = b[[1, 0]]
    b[-1] = -0.0 if float(b[-1]) == 0.0 else float(b[-1]) + 1
    assert snap.changed() == ["state['b']"]


def test_a_state_of_more_allocations_than_one_launch_covers_is_checksummed_whole(cupy, stream):
    # A launch covers 65,535 allocations (gridDim.y); the rest take further launches. 64-byte
    # slices of one buffer, each an allocation of its own to the snapshot.
    from accelgraph_cli.cuda.snapshot import _GRID_Y_MAX, StateSnapshot, is_device_array

    count = _GRID_Y_MAX + 10
    base = cupy.zeros(count * 64, dtype=cupy.uint8)
    parts = [cupy.ndarray((64,), dtype=cupy.uint8, memptr=cupy.cuda.MemoryPointer(
        cupy.cuda.UnownedMemory(base.data.ptr + 64 * i, 64, base), 0)) for i in range(count)]
    snap = StateSnapshot.take(find_arrays({"parts": parts}, is_device_array), stream)
    assert len(snap.regions) == count
    assert snap.changed() == []
    base[-1] = 1  # in the last allocation, which only the second launch reads
    assert snap.changed() == [f"state['parts'][{count - 1}]"]
    base[-1] = 0
    base[0] = 1  # and the first, read by the first launch
    assert snap.changed() == ["state['parts'][0]"]


def test_a_device_that_cannot_map_host_memory_is_checksummed_through_copies(
        cupy, stream, monkeypatch):
    # Where a device cannot read and write pinned host memory in place, the table goes to
    # the device by a copy and the sums come back by one; the verdicts must not change.
    from accelgraph_cli.cuda import snapshot as sm

    device = cupy.cuda.runtime.getDevice()
    function, _ = sm._for_device(device)
    monkeypatch.setitem(sm._DEVICES, device, (function, False))
    a = cupy.arange(1 << 20, dtype=cupy.float32)
    b = cupy.zeros(77, dtype=cupy.uint8)
    snap = sm.StateSnapshot.take(find_arrays({"a": a, "b": b}, sm.is_device_array), stream)
    assert snap._device_table is not None and snap._blocks > 1
    assert snap.changed() == []
    a[123456] += 1  # in a block other than the first
    assert snap.changed() == ["state['a']"]
    a[123456] -= 1
    b[76] = 3  # the byte after the last whole word
    assert snap.changed() == ["state['b']"]


CALLABLE_STATE = '''
    """y += x, the arrays held by a callable object; SIDE launches on an unjoined stream."""
    import cupy
    SIDE = {side}
    class Accumulate:
        def __init__(self):
            self.x = cupy.arange(1024, dtype=cupy.float32)
            self.y = cupy.zeros(1024, dtype=cupy.float32)
            self.side = cupy.cuda.Stream(non_blocking=True)
        def __call__(self):
            if SIDE:
                with self.side:
                    self.y += self.x
            else:
                self.y += self.x
    def setup():
        return {{"acc": Accumulate()}}
    def step(state):
        state["acc"]()
    def outputs(state):
        return {{"y": state["acc"].y}}
'''


def test_state_a_callable_object_holds_is_guarded_and_checked(tmp_path):
    # The walker skipped callable objects: a correct scenario failed its check (its output
    # taken for memory the graph allocated, and filled with a complement), and stray work on
    # what such an object holds went unseen.
    checked = runner.check(_capture(_write(tmp_path, "callable_ok",
                                           CALLABLE_STATE.format(side=False))))
    assert checked.ok, checked.problems()
    with pytest.raises(CaptureError, match=r"state\['acc'\]\.y changed"):
        _capture(_write(tmp_path, "callable_side", CALLABLE_STATE.format(side=True)))


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_a_cache_a_torch_module_keeps_as_a_plain_attribute_is_checked(tmp_path):
    # kv is a plain tensor attribute (not a registered buffer) that the step updates in place:
    # the check took it for memory the graph allocated and failed a correct graph.
    path = _write(tmp_path, "module_cache", '''
        """kv += lin(x), kv a plain attribute of the module."""
        import torch
        class Cache(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(64, 64, device="cuda")
                self.kv = torch.zeros(8, 64, device="cuda")
            def forward(self, x):
                self.kv.add_(self.lin(x))
        def setup():
            torch.manual_seed(0)
            return {"model": Cache(), "x": torch.randn(8, 64, device="cuda")}
        def step(state):
            with torch.no_grad():
                state["model"](state["x"])
        def outputs(state):
            return {"kv": state["model"].kv}
    ''')
    result = _capture(path)
    assert "state['model'].kv" in [p for r in result.snapshot.regions for p in r.paths]
    checked = runner.check(result)
    assert checked.ok, checked.problems()


def test_bitwise_means_the_bits_signed_zeros_and_nan_payloads_included(cupy):
    from accelgraph_cli.cuda.backends import CupyBackend

    backend = CupyBackend()
    zero, negative = cupy.zeros(4, cupy.float32), cupy.zeros(4, cupy.float32)
    negative.view(cupy.uint32)[1] = 0x80000000  # -0.0, set by its bits
    assert float(negative[1]) == 0.0 and bool(cupy.signbit(negative[1]))
    assert backend.difference(zero, negative, 0.0, 0.0).bad == 1
    assert backend.difference(zero, negative, 0.0, 1e-9).bad == 0  # a tolerance: equal values
    nans = cupy.full(3, cupy.nan, cupy.float32)
    other = nans.copy()
    other.view(cupy.uint32)[2] += 1  # another payload, still a NaN
    assert bool(cupy.isnan(other).all())
    assert backend.difference(nans, nans.copy(), 0.0, 0.0).bad == 0
    assert backend.difference(nans, other, 0.0, 0.0).bad == 1
    pairs = cupy.zeros(2, cupy.complex128)
    flipped = pairs.copy()
    flipped.view(cupy.uint64)[3] = 1 << 63  # the second element's imaginary part: -0.0
    assert backend.difference(pairs, flipped, 0.0, 0.0).bad == 1
    flipped.view(cupy.float64)[3] = 2.0  # the largest difference counts the imaginary part
    assert backend.difference(pairs, flipped, 0.0, 0.0).largest == 2.0
    found = runner._compare(backend, "y", zero, negative, 0.0, 0.0)
    assert "+0 against -0" in found[0].line()
    found = runner._compare(backend, "y", nans, other, 0.0, 0.0)  # |a - b| is NaN here
    assert "NaNs of other payloads" in found[0].line()
    assert not runner._compare(backend, "y", zero, zero + 1, 0.0, 0.0)[0].detail  # values differ
    if HAS_TORCH:
        import torch

        from accelgraph_cli.cuda.backends import TorchBackend

        tb = TorchBackend()
        t0, t1 = torch.zeros(4, device="cuda"), torch.zeros(4, device="cuda")
        t1.view(torch.int32)[3] = -(1 << 31)  # -0.0, by its bits
        assert bool(torch.signbit(t1[3]))
        assert tb.difference(t0, t1, 0.0, 0.0).bad == 1
        b0 = torch.zeros(4, device="cuda", dtype=torch.bfloat16)
        assert tb.difference(b0, b0.clone(), 0.0, 0.0).bad == 0
        c0 = torch.zeros(2, device="cuda", dtype=torch.complex64)
        c1 = c0.clone()
        torch.view_as_real(c1).view(torch.int32)[1, 0] = -(1 << 31)  # a real part of -0.0
        found = tb.difference(c0, c1, 0.0, 0.0)
        assert (found.bad, found.largest, found.bits_only) == (1, 0.0, True)
        torch.view_as_real(c1)[1, 1] = 2.0  # the largest difference counts the imaginary part
        assert tb.difference(c0, c1, 0.0, 0.0).largest == 2.0
