"""The execution watch's own logic (cuda/cupti/watch.py), with cupti-python replaced by a
stand-in that records the switches it is given and hands back the records a test gives it.
No CUDA output is imitated: the records are plain objects with the few fields the watch
reads; what CUPTI itself reports is tested in the GPU tier (tests/gpu/test_guard.py)."""

from __future__ import annotations

import ctypes
import enum
import sys
import threading
import types

import pytest

from accelgraph_cli.cuda import device
from accelgraph_cli.cuda.cupti import watch


class _Kind(enum.IntEnum):
    MEMCPY = 1
    MEMSET = 2
    CONCURRENT_KERNEL = 10


class _CopyKind(enum.IntEnum):
    HTOD = 1
    DTOH = 2


@pytest.fixture
def cupti(monkeypatch):
    """A stand-in for ``cupti.cupti``: ``ran`` is what the next flush delivers."""
    log: list = []
    fake = types.SimpleNamespace(ActivityKind=_Kind, ActivityMemcpyKind=_CopyKind, log=log,
                                 ran=[], enabled=set(), fail=set(), streams={7: 3},
                                 dropped=0)

    def register(requested, completed):
        fake.completed = completed

    def enable(kind):
        if "enable" in fake.fail and kind == _Kind.MEMSET:
            raise RuntimeError("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")
        fake.enabled.add(kind)

    def flush(flag):
        log.append(("flush", flag))
        if "flush" in fake.fail:
            raise RuntimeError("CUPTI_ERROR_UNKNOWN")
        fake.completed([r for r in fake.ran if r.kind in fake.enabled])
        fake.ran = []

    def stream_id(context, handle, per_thread):
        if "stream" in fake.fail:
            raise RuntimeError("CUPTI_ERROR_INVALID_STREAM")
        return fake.streams[handle]

    def dropped(context, stream, address):  # CUPTI writes the count since the last call
        log.append(("dropped", context))
        if "dropped" in fake.fail:
            raise RuntimeError("CUPTI_ERROR_NOT_SUPPORTED")
        ctypes.c_size_t.from_address(address).value = fake.dropped
        fake.dropped = 0

    fake.activity_get_num_dropped_records = dropped
    fake.activity_register_callbacks = register
    fake.activity_enable = enable
    fake.activity_disable = fake.enabled.discard
    fake.activity_flush_all = flush
    fake.get_stream_id_ex = stream_id
    monkeypatch.setitem(sys.modules, "cupti", types.SimpleNamespace(cupti=fake))
    monkeypatch.setattr(watch, "_SETUP", {"done": False, "off": None, "cupti": None})
    monkeypatch.setattr(watch, "_PREPARING", [])
    runtime = types.SimpleNamespace(deviceSynchronize=lambda: log.append("sync"))
    driver = types.SimpleNamespace(ctxGetCurrent=lambda: 99)
    monkeypatch.setattr(device, "require_cuda", lambda: types.SimpleNamespace(
        cuda=types.SimpleNamespace(runtime=runtime, driver=driver)))
    return fake


def _kernel(name, stream):
    return types.SimpleNamespace(kind=_Kind.CONCURRENT_KERNEL, name=name, stream_id=stream)


def test_what_ran_off_the_capturing_stream_is_reported_after_a_synchronization(cupti):
    w = watch.ExecutionWatch()
    assert w.off == "not started"
    w.start(7)  # the capturing stream, CUPTI id 3
    assert w.off is None and cupti.enabled == set(_Kind)
    cupti.ran = [_kernel("fill_seed", 3), _kernel("cupy_multiply", 5),
                 types.SimpleNamespace(kind=_Kind.MEMCPY, copy_kind=2, bytes=256, stream_id=5),
                 types.SimpleNamespace(kind=_Kind.MEMSET, bytes=64, stream_id=6)]
    ran = w.stop()
    # synchronized, then a forced flush, then the records CUPTI dropped (none)
    assert cupti.log == [("dropped", 0), "sync", ("flush", 1), ("dropped", 0)]
    assert [e.describe() for e in ran] == ["kernel cupy_multiply", "copy (dtoh) of 256 bytes",
                                           "memset of 64 bytes"]
    assert cupti.enabled == set() and w.stop() == []  # off again; a second stop: nothing


def test_records_cupti_dropped_count_as_work_that_ran_and_only_this_windows(cupti):
    cupti.dropped = 3  # before the window: not this capture's
    w = watch.ExecutionWatch()
    w.start(7)
    cupti.ran = [_kernel("k", 5)]
    cupti.dropped += 2  # (the 3 counted before it would make 5, were the count not reset)
    ran = [e.describe() for e in w.stop()]
    assert ran == ["kernel k"] + ["an operation whose activity record CUPTI dropped (no buffer "
                                  "space)"] * 2
    assert w.off is None


def test_where_cupti_cannot_count_dropped_records_the_records_still_count(cupti):
    cupti.fail.add("dropped")
    w = watch.ExecutionWatch()
    w.start(7)
    assert w.off is None and cupti.enabled == set(_Kind)
    cupti.ran, cupti.dropped = [_kernel("k", 5)], 4
    assert [e.describe() for e in w.stop()] == ["kernel k"] and w.off is None
    assert cupti.log.count(("dropped", 0)) == 1  # not asked again at stop: nothing to count


def test_once_a_window_could_not_be_read_the_watch_stays_off_for_later_graphs(cupti):
    w = watch.ExecutionWatch()
    w.start(7)
    cupti.fail.add("flush")
    assert w.stop() == [] and w.off.startswith("CUPTI's records could not be read")
    cupti.fail.clear()
    w.start(7)  # the next graph's capture: off, with the first window's reason
    assert w.off.startswith("CUPTI's records could not be read") and cupti.enabled == set()
    cupti.ran = [_kernel("k", 5)]
    assert w.stop() == []


def test_records_of_an_earlier_window_are_not_seen_again(cupti):
    w = watch.ExecutionWatch()
    w.start(7)
    cupti.ran = [_kernel("a", 5)]
    assert len(w.stop()) == 1
    w.start(7)
    assert w.stop() == []


def test_a_record_that_cannot_be_read_still_counts_as_work_that_ran(cupti):
    w = watch.ExecutionWatch()
    w.start(7)
    cupti.ran = [types.SimpleNamespace(kind=_Kind.CONCURRENT_KERNEL, stream_id=5)]  # no name
    assert [e.describe() for e in w.stop()] == ["an activity record that could not be read"]


def test_a_watch_that_cannot_start_is_off_with_the_reason_and_leaves_nothing_on(cupti):
    cupti.fail.add("enable")
    w = watch.ExecutionWatch()
    w.start(7)
    assert w.off.startswith("CUPTI activity could not be enabled") and cupti.enabled == set()
    cupti.ran = [_kernel("k", 5)]
    assert w.stop() == []


def test_the_capturing_streams_id_is_asked_for_only_where_something_ran(cupti, monkeypatch):
    """Most windows run nothing: CUPTI is not asked to name the capturing stream for them
    (the call cost about 20 µs a capture); where something ran it is, after the records."""
    asked = []
    stream_id = cupti.get_stream_id_ex
    monkeypatch.setattr(cupti, "get_stream_id_ex", lambda *a: asked.append(a) or stream_id(*a))
    w = watch.ExecutionWatch()
    w.start(7)
    assert w.stop() == [] and asked == [] and w.off is None
    w.start(7)
    cupti.ran = [_kernel("fill_seed", 3), _kernel("k", 5)]
    assert [e.name for e in w.stop()] == ["k"] and asked == [(99, 7, 0)]
    # a torch capture's seed fills run on the capturing stream every time: asked once
    w.start(7)
    cupti.ran = [_kernel("fill_seed", 3)]
    assert w.stop() == [] and asked == [(99, 7, 0)]
    cupti.streams[8] = 4  # another capturing stream: asked for its own
    w.start(8)
    cupti.ran = [_kernel("fill_seed", 4), _kernel("k", 3)]
    assert [e.name for e in w.stop()] == ["k"] and asked == [(99, 7, 0), (99, 8, 0)]


def test_a_capturing_stream_cupti_cannot_name_turns_the_watch_off_once_something_ran(cupti):
    """Rather than blame the kernels the graph API queued on the capturing stream, a window
    whose records cannot be sorted reports nothing and the watch says why; later windows
    are off too. A window where nothing ran needs no name."""
    cupti.fail.add("stream")
    w = watch.ExecutionWatch()
    w.start(7)
    assert w.off is None and w.stop() == [] and w.off is None  # nothing ran: nothing to sort
    w.start(7)
    cupti.ran = [_kernel("k", 5)]
    assert w.stop() == [] and w.off.startswith("CUPTI could not name the capturing stream")
    assert cupti.enabled == set()
    w.start(7)
    assert w.off.startswith("CUPTI could not name the capturing stream")
    assert cupti.enabled == set() and w.stop() == []


def test_records_that_cannot_be_read_turn_the_watch_off_and_nothing_stays_on(cupti):
    cupti.fail.add("flush")
    w = watch.ExecutionWatch()
    w.start(7)
    assert w.stop() == [] and w.off.startswith("CUPTI's records could not be read")
    assert cupti.enabled == set()


def test_an_interrupt_while_enabling_still_leaves_every_kind_off(cupti, monkeypatch):
    enable = cupti.activity_enable

    def interrupted(kind):
        enable(kind)
        if kind == _Kind.MEMCPY:
            raise KeyboardInterrupt

    monkeypatch.setattr(cupti, "activity_enable", interrupted)
    w = watch.ExecutionWatch()
    with pytest.raises(KeyboardInterrupt):
        w.start(7)
    w.stop()  # what capture's error path does
    assert cupti.enabled == set()


def test_without_cupti_python_the_watch_is_off_and_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupti", None)  # import fails
    monkeypatch.setattr(watch, "_SETUP", {"done": False, "off": None, "cupti": None})
    w = watch.ExecutionWatch()
    w.start(7)
    assert w.off.startswith("cupti-python is not available") and w.stop() == []


def test_prepare_registers_the_callbacks_on_a_thread_once(cupti, monkeypatch):
    at_exit = []
    monkeypatch.setattr(watch.atexit, "register", lambda *call: at_exit.append(call))
    loading, release = threading.Event(), threading.Event()

    class Loading(types.ModuleType):  # cupti-python still importing until released
        def __getattr__(self, name):
            loading.set()
            release.wait(5)
            if name != "cupti":
                raise AttributeError(name)
            return cupti

    monkeypatch.setitem(sys.modules, "cupti", Loading("cupti"))
    thread = watch.prepare()
    assert thread is not None and thread.daemon
    assert loading.wait(5)
    assert watch.prepare() is None  # asked again while it loads: no second thread
    assert at_exit == [(watch._join_at_exit, thread)]  # one exit hook, waiting for the load
    started = []
    w = watch.ExecutionWatch()
    starter = threading.Thread(target=lambda: (w.start(7), started.append(w.off)))
    starter.start()
    starter.join(0.2)
    assert starter.is_alive() and started == []  # start() waits for the load
    release.set()
    starter.join(5)
    thread.join(5)
    assert started == [None] and cupti.enabled == set(_Kind)
    assert watch._SETUP["cupti"] is cupti and callable(cupti.completed)
    assert watch.prepare() is None  # done: nothing more to load
    assert w.stop() == []


def test_an_import_that_fails_on_the_loading_thread_is_tried_again_at_start(cupti, monkeypatch):
    monkeypatch.setattr(watch.atexit, "register", lambda *call: None)
    module = sys.modules["cupti"]
    monkeypatch.setitem(sys.modules, "cupti", None)  # this import fails on the thread
    watch.prepare().join(5)
    assert not watch._SETUP["done"] and watch._SETUP["off"] is None
    monkeypatch.setitem(sys.modules, "cupti", module)  # and works on the capturing thread
    w = watch.ExecutionWatch()
    w.start(7)
    assert w.off is None and cupti.enabled == set(_Kind)
    assert w.stop() == []


def test_prepare_where_cupti_is_missing_leaves_the_watch_off_with_the_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupti", None)  # import fails, as when not installed
    monkeypatch.setattr(watch, "_SETUP", {"done": False, "off": None, "cupti": None})
    monkeypatch.setattr(watch, "_PREPARING", [])
    monkeypatch.setattr(watch.atexit, "register", lambda *call: None)
    watch.prepare().join(5)
    w = watch.ExecutionWatch()
    w.start(7)
    assert w.off is not None and w.off.startswith("cupti-python is not available")
    assert w.stop() == []


def test_the_exit_hook_gives_up_waiting_on_a_second_interrupt():
    class Interrupted:
        def join(self, timeout):
            assert timeout == watch._PREPARE_JOIN_S
            raise KeyboardInterrupt

    try:
        watch._join_at_exit(Interrupted())  # returns: no traceback at exit
    except KeyboardInterrupt:
        pytest.fail("the exit hook let a second Ctrl-C through")
