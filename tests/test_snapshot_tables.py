"""The capture guard's device tables, with the CUDA layer stubbed (no GPU here): a table goes
back for the next snapshot only once nothing of its snapshot can still use it, only to a
snapshot on its own device, and only a second compare clears the slots the upload already
zeroed. Stand-ins record what would run; no CUDA output is imitated."""

from __future__ import annotations

import ctypes
import gc
import threading
import types

import pytest

from accelgraph_cli.cuda import snapshot as sm

N = 2  # regions in the stubbed state


class _OutOfMemory(Exception):
    status = 2  # the stub runtime's errorMemoryAllocation


class _Memory:
    made = 0
    full = False  # the device has no memory left outside CuPy's pool

    def __init__(self, nbytes):
        if _Memory.full:
            raise _OutOfMemory()
        _Memory.made += 1
        self.ptr = 1 << 30 + _Memory.made % 8
        self.size = nbytes


class _Table:
    def __init__(self, shape, dtype=None, memptr=None):
        self.size = shape[0]
        self.data = types.SimpleNamespace(ptr=memptr.mem.ptr)


class _Stream:
    ptr = 7

    def __init__(self, log):
        self.log = log

    def synchronize(self):
        self.log.append("stream sync")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.fixture
def rig(monkeypatch):
    import numpy

    log: list = []
    device = [0]
    kernel_error: list = []  # an exception the next checksum launch raises once queued

    def copy(dst, src, n, kind, stream):
        log.append(("copy", kind, n))
        if kind == 2:  # back to the host: checksums of an unchanged state (equal, zero here)
            ctypes.memset(dst, 0, n)

    launches: list = []  # (grid, regions in all, first region) of each checksum launch

    def checksum(grid, block, args):
        log.append("checksum")
        launches.append((grid, int(args[1]), int(args[3])))
        if kernel_error:
            raise kernel_error.pop()

    runtime = types.SimpleNamespace(
        deviceSynchronize=lambda: log.append("device sync"),
        memcpyAsync=copy,
        memsetAsync=lambda ptr, value, n, stream: log.append(("memset", ptr, n)),
        getDevice=lambda: device[0],
        CUDARuntimeError=_OutOfMemory,
        errorMemoryAllocation=2,
    )
    pooled: list = []

    def empty(size, dtype=None):  # CuPy's pool, which frees its cached blocks first
        pooled.append(_Table((size,), memptr=types.SimpleNamespace(mem=types.SimpleNamespace(ptr=64))))
        return pooled[-1]

    cupy = types.SimpleNamespace(
        uint64=numpy.uint64,
        ndarray=_Table,
        empty=empty,
        RawKernel=lambda source, name: checksum,
        cuda=types.SimpleNamespace(
            runtime=runtime, Memory=_Memory,
            MemoryPointer=lambda mem, offset: types.SimpleNamespace(mem=mem),
            alloc_pinned_memory=lambda nbytes: bytearray(nbytes)),
    )
    monkeypatch.setattr(sm._cuda, "require_cuda", lambda: cupy)
    monkeypatch.setattr(sm, "_TABLES", {})
    monkeypatch.setattr(sm, "_STAGING", [])
    sm._checksum_kernel.cache_clear()
    regions = [sm.Region(1 << 20, 4096, None, ["x"]), sm.Region(2 << 20, 8192, None, ["w"])]
    monkeypatch.setattr(sm, "state_regions", lambda arrays: list(regions))
    monkeypatch.setattr(_Memory, "full", False)
    yield types.SimpleNamespace(log=log, device=device, kernel_error=kernel_error, pooled=pooled,
                                launches=launches,
                                take=lambda: sm.StateSnapshot.take([], _Stream(log)))
    gc.collect()  # this test's snapshots die while its own lists are in place
    sm._checksum_kernel.cache_clear()


def _free(device=0) -> list:
    return sm._TABLES.get(device, [])


def test_a_finished_snapshots_table_serves_the_next_one(rig):
    snap = rig.take()
    assert ("copy", 1, 32 * N) in rig.log  # pointers, sizes and both checksum slots, zeroed
    snap.wait()
    snap.start_compare()
    assert snap.changed() == []
    table = snap._table
    del snap
    gc.collect()
    assert _free() == [table]
    made = _Memory.made
    assert rig.take()._table is table and _Memory.made == made  # no allocation this time


@pytest.mark.parametrize("stop", ["before the wait", "during the compare"])
def test_a_table_that_work_may_still_use_is_never_handed_on(rig, stop):
    # A snapshot dropped with its checksum kernel or its copy back still queued: the next
    # snapshot's upload must not land in memory that kernel still adds into.
    snap = rig.take()
    if stop == "during the compare":
        snap.wait()
        snap.start_compare()
    del snap
    gc.collect()
    assert _free() == []
    made = _Memory.made
    rig.take()
    assert _Memory.made == made + 1


def test_an_interrupted_take_hands_its_table_on_only_after_waiting_for_its_stream(rig):
    rig.kernel_error.append(KeyboardInterrupt())  # Ctrl-C once the kernel is queued
    with pytest.raises(KeyboardInterrupt):
        rig.take()
    gc.collect()
    assert len(_free()) == 1
    assert rig.log[-2:] == ["checksum", "stream sync"]


def test_a_compare_that_fails_once_work_is_queued_keeps_its_table(rig):
    snap = rig.take()
    snap.wait()
    rig.kernel_error.append(RuntimeError("launch failed"))
    with pytest.raises(RuntimeError):
        snap.start_compare()
    del snap
    gc.collect()
    assert _free() == []


def test_a_table_goes_only_to_a_snapshot_on_its_own_device(rig):
    snap = rig.take()
    snap.wait()
    table = snap._table
    del snap
    gc.collect()
    rig.device[0] = 1
    assert rig.take()._table is not table and _free(0) == [table]


def test_dropping_a_snapshot_inside_the_free_lists_lock_does_not_hang(rig):
    # The collector may run a snapshot's __del__ on a thread that holds the lock already
    # (inside _table_for): the lock must be re-entrant.
    snap = rig.take()
    snap.wait()
    done = threading.Event()

    def drop(snapshots):
        with sm._TABLES_LOCK:
            snapshots.clear()  # the last reference: __del__ runs here, lock held
        done.set()

    worker = threading.Thread(target=drop, args=([snap],), daemon=True)
    del snap
    worker.start()
    worker.join(timeout=5)
    assert done.is_set() and len(_free()) == 1


def test_only_a_second_compare_clears_the_slots(rig):
    snap = rig.take()
    snap.wait()
    snap.start_compare()
    snap.changed()
    assert not [entry for entry in rig.log if entry[0] == "memset"]  # the upload zeroed them
    first = len(rig.log)
    snap.start_compare()  # the next graph of the same scenario
    snap.changed()
    after_slots = snap._table.data.ptr + 3 * N * 8
    assert rig.log[first:first + 3] == ["device sync", ("memset", after_slots, N * 8), "checksum"]
    snap.start_compare()
    assert len([entry for entry in rig.log if entry[0] == "memset"]) == 2


def test_a_table_from_cupys_pool_is_never_handed_on(rig, monkeypatch):
    # With no memory outside the pool, the table comes from CuPy's pool, which orders a
    # block's reuse after the work of the stream that allocated it only: handed to another
    # snapshot (another stream), it could be reused while that snapshot's kernel runs.
    monkeypatch.setattr(_Memory, "full", True)
    snap = rig.take()
    assert snap._table is rig.pooled[-1]
    snap.wait()
    del snap
    gc.collect()
    assert _free() == []


def test_a_state_of_more_regions_than_a_grid_holds_is_checksummed_in_several_launches(
        rig, monkeypatch):
    # gridDim.y holds 65,535 regions; here 2, so 3 regions take two launches: regions 0-1,
    # then region 2 alone (a last launch as wide as the others would read past the table),
    # each told the total, where the checksum slots start.
    monkeypatch.setattr(sm, "_GRID_Y_MAX", 2)
    three = [sm.Region(k << 20, 4096, None, [f"r{k}"]) for k in (1, 2, 3)]
    monkeypatch.setattr(sm, "state_regions", lambda arrays: list(three))
    rig.take()
    assert [(grid[1], n, first) for grid, n, first in rig.launches] == [(2, 3, 0), (1, 3, 2)]
