"""The capture guard's device tables, with the CUDA layer stubbed (no GPU here): a table goes
back for the next snapshot only once nothing of its snapshot can still use it, and only a
second compare clears the slots the upload already zeroed. Stand-ins record what would run;
no CUDA output is imitated."""

from __future__ import annotations

import ctypes
import gc
import types

import pytest

from accelgraph_cli.cuda import snapshot as sm


class _Memory:
    made = 0

    def __init__(self, nbytes):
        _Memory.made += 1
        self.ptr = 4096 * _Memory.made
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

    def copy(dst, n, kind):
        log.append(("copy", kind))
        if kind == 2:  # back to the host: checksums of an unchanged state (equal, zero here)
            ctypes.memset(dst, 0, n)

    runtime = types.SimpleNamespace(
        deviceSynchronize=lambda: log.append("device sync"),
        memcpyAsync=lambda dst, src, n, kind, stream: copy(dst, n, kind),
        memsetAsync=lambda ptr, value, n, stream: log.append("memset"),
    )
    cupy = types.SimpleNamespace(
        uint64=numpy.uint64,
        ndarray=_Table,
        RawKernel=lambda source, name: (lambda grid, block, args: log.append("checksum")),
        cuda=types.SimpleNamespace(
            runtime=runtime, Memory=_Memory,
            MemoryPointer=lambda mem, offset: types.SimpleNamespace(mem=mem),
            alloc_pinned_memory=lambda nbytes: bytearray(nbytes)),
    )
    monkeypatch.setattr(sm._cuda, "require_cuda", lambda: cupy)
    monkeypatch.setattr(sm, "_TABLES", [])
    monkeypatch.setattr(sm, "_STAGING", [])
    sm._checksum_kernel.cache_clear()
    regions = [sm.Region(1 << 20, 4096, None, ["x"]), sm.Region(2 << 20, 8192, None, ["w"])]
    monkeypatch.setattr(sm, "state_regions", lambda arrays: list(regions))
    yield types.SimpleNamespace(log=log, take=lambda: sm.StateSnapshot.take([], _Stream(log)))
    gc.collect()  # this test's snapshots die while its own lists are in place
    sm._checksum_kernel.cache_clear()


def test_a_finished_snapshots_table_serves_the_next_one(rig):
    snap = rig.take()
    snap.wait()
    snap.start_compare()
    assert snap.changed() == []
    table = snap._table
    del snap
    gc.collect()
    assert sm._TABLES == [table]
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
    assert sm._TABLES == []
    made = _Memory.made
    rig.take()
    assert _Memory.made == made + 1


def test_only_a_second_compare_clears_the_slots(rig):
    snap = rig.take()
    snap.wait()
    snap.start_compare()
    snap.changed()
    assert "memset" not in rig.log  # the upload zeroed them: one call fewer per capture
    first = len(rig.log)
    snap.start_compare()  # the next graph of the same scenario
    snap.changed()
    assert rig.log[first:first + 3] == ["device sync", "memset", "checksum"]
    snap.start_compare()
    assert rig.log.count("memset") == 2
