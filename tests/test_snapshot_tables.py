"""The capture guard's tables, with the CUDA layer stubbed (no GPU here): a snapshot's table
(pinned host memory the checksum kernel reads its allocations from and writes its sums into)
goes back for the next snapshot only once no kernel of its snapshot can still use it, and
each pass costs the calls it should: no upload, no copy back. Stand-ins record what would
run; no CUDA output is imitated."""

from __future__ import annotations

import gc
import threading
import types

import pytest

from accelgraph_cli.cuda import snapshot as sm


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
    kernel_error: list = []  # an exception the next checksum launch raises once queued
    launches: list = []  # (grid, regions in all, slot, first region) of each checksum launch
    pinned: list = []  # sizes of the pinned allocations made

    def checksum(grid, block, args, shared_mem, stream):
        log.append("checksum")
        launches.append((grid, int(args[1]), int(args[2]), int(args[3]), stream))
        if kernel_error:
            raise kernel_error.pop()

    def alloc_pinned(nbytes):
        pinned.append(nbytes)
        return bytearray(nbytes)

    runtime = types.SimpleNamespace(deviceSynchronize=lambda: log.append("device sync"))
    cupy = types.SimpleNamespace(
        RawKernel=lambda source, name: types.SimpleNamespace(kernel=checksum),
        cuda=types.SimpleNamespace(runtime=runtime, alloc_pinned_memory=alloc_pinned),
    )
    monkeypatch.setattr(sm._cuda, "require_cuda", lambda: cupy)
    monkeypatch.setattr(sm, "_TABLES", [])
    sm._checksum_kernel.cache_clear()
    regions = [sm.Region(1 << 20, 4096, None, ["x"]), sm.Region(2 << 20, 8192, None, ["w"])]
    monkeypatch.setattr(sm, "state_regions", lambda arrays: list(regions))

    def take(**options):
        return sm.StateSnapshot.take([], _Stream(log), **options)

    yield types.SimpleNamespace(log=log, kernel_error=kernel_error, launches=launches,
                                pinned=pinned, regions=regions, take=take, numpy=numpy)
    gc.collect()  # this test's snapshots die while its own lists are in place
    sm._checksum_kernel.cache_clear()


def test_a_pass_is_one_launch_and_the_table_names_each_allocation(rig):
    snap = rig.take()
    assert rig.log == ["device sync", "checksum"]  # no upload: the kernel reads the table
    table = snap._table
    assert list(table[:2]) == [1 << 20, 2 << 20] and list(table[2:4]) == [4096, 8192]
    snap.wait()
    del rig.log[:]
    snap.start_compare()
    assert snap.changed() == []
    # after capture: stray work finishes, one launch, one wait; no copy back
    assert rig.log == ["device sync", "checksum", "stream sync"]
    assert [slot for _, _, slot, _, _ in rig.launches] == [0, 1]
    assert {stream for *_, stream in rig.launches} == {snap.stream}  # given, not entered
    assert rig.launches[0][0] == (snap._blocks, 2)  # a row of blocks per allocation


def test_a_synchronized_caller_spares_the_snapshot_its_device_sync(rig):
    rig.take(synchronized=True)
    assert rig.log == ["checksum"]


def test_a_moved_block_sum_names_its_allocations_paths(rig):
    snap = rig.take()
    snap.wait()
    snap.start_compare()
    blocks = snap._blocks
    # the second region's first block sum after capture (the kernel's place for it)
    snap._table[2 * 2 + 2 * blocks + blocks] = 5
    assert snap.changed() == ["w"]


def test_a_finished_snapshots_table_serves_the_next_one(rig):
    snap = rig.take()
    snap.wait()
    snap.start_compare()
    assert snap.changed() == []
    table = snap._table
    del snap
    gc.collect()
    assert [t for t, _ in sm._TABLES] == [table]
    made = len(rig.pinned)
    again = rig.take()
    assert again._table is table and len(rig.pinned) == made  # no allocation this time
    assert again._address == table.ctypes.data  # what the kernel is given


@pytest.mark.parametrize("stop", ["before the wait", "during the compare"])
def test_a_table_that_a_kernel_may_still_use_is_never_handed_on(rig, stop):
    # A snapshot dropped with its checksum kernel still queued: the next snapshot must not
    # write its allocations into memory that kernel still reads and writes.
    snap = rig.take()
    if stop == "during the compare":
        snap.wait()
        snap.start_compare()
    del snap
    gc.collect()
    assert sm._TABLES == []
    made = len(rig.pinned)
    rig.take()
    assert len(rig.pinned) == made + 1


def test_an_interrupted_take_hands_its_table_on_only_after_waiting_for_its_stream(rig):
    rig.kernel_error.append(KeyboardInterrupt())  # Ctrl-C once the kernel is queued
    with pytest.raises(KeyboardInterrupt):
        rig.take()
    gc.collect()
    assert len(sm._TABLES) == 1
    assert rig.log[-2:] == ["checksum", "stream sync"]


def test_a_compare_that_fails_once_work_is_queued_keeps_its_table(rig):
    snap = rig.take()
    snap.wait()
    rig.kernel_error.append(RuntimeError("launch failed"))
    with pytest.raises(RuntimeError):
        snap.start_compare()
    del snap
    gc.collect()
    assert sm._TABLES == []


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
    assert done.is_set() and len(sm._TABLES) == 1


def test_a_second_graphs_compare_needs_no_clearing(rig):
    # Each block writes its sum (no adding into a slot), so the next graph's compare of the
    # same snapshot is again a sync and one launch.
    snap = rig.take()
    snap.wait()
    snap.start_compare()
    snap.changed()
    first = len(rig.log)
    snap.start_compare()
    snap.changed()
    assert rig.log[first:] == ["device sync", "checksum", "stream sync"]


def test_a_state_of_more_regions_than_a_grid_holds_is_checksummed_in_several_launches(
        rig, monkeypatch):
    # gridDim.y holds 65,535 regions; here 2, so 3 regions take two launches: regions 0-1,
    # then region 2 alone (a last launch as wide as the others would read past the table),
    # each told the total, where the sums start.
    monkeypatch.setattr(sm, "_GRID_Y_MAX", 2)
    three = [sm.Region(k << 20, 4096, None, [f"r{k}"]) for k in (1, 2, 3)]
    monkeypatch.setattr(sm, "state_regions", lambda arrays: list(three))
    snap = rig.take()
    assert [(grid[1], n, first) for grid, n, _, first, _ in rig.launches] == [(2, 3, 0), (1, 3, 2)]
    assert snap._table.size >= 2 * 3 + 2 * 3 * snap._blocks
