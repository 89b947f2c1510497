"""The capture guard's tables, with the CUDA layer stubbed (no GPU here): a snapshot's table
(pinned host memory the checksum kernel reads its allocations from and writes its sums into)
goes back for the next snapshot only once no kernel of its snapshot can still use it, each
pass costs the calls it should, the sums are read back to the right allocation, and a device
that cannot map host memory gets the table and the sums by copies. Stand-ins record what
would run; no CUDA output is imitated."""

from __future__ import annotations

import ctypes
import gc
import threading
import types

import pytest

from accelgraph_cli.cuda import snapshot as sm

MIB = 1 << 20


class _Stream:
    def __init__(self, log, current=None):
        self.ptr = id(self)  # a stream handle of its own
        self.log = log
        self.done = False  # cudaStreamQuery: work still queued
        self.current = current if current is not None else []

    def __enter__(self):
        self.current.append(self)
        return self

    def __exit__(self, *exc):
        self.current.pop()
        return False

    def synchronize(self):
        self.log.append("stream sync")
        self.done = True


@pytest.fixture
def rig(monkeypatch):
    import numpy

    log: list = []
    kernel_error: list = []  # an exception the next checksum launch raises once queued
    launches: list = []  # (grid, table, regions in all, slot, first region, stream, function)
    copies: list = []  # (destination, source, bytes, stream) of each copy
    pinned: list = []  # sizes of the pinned allocations made
    device = [0]
    maps = {0: True, 1: True}  # whether each device maps host memory

    functions: dict = {}  # CUfunction handle -> the device it was loaded on
    streams: dict = {}  # stream handle -> the stand-in

    class _Function:
        def __init__(self, device):
            self.device = device
            self.ptr = 0xF000 + device  # the CUfunction handle
            functions[self.ptr] = device

    def launch_kernel(function, gx, gy, gz, bx, by, bz, shared_mem, stream, params, extra):
        # cuLaunchKernel: the arguments are read where the packed pointers point, as the
        # driver copies them at the launch
        log.append("checksum")
        assert (gz, bx, by, bz, shared_mem, extra) == (1, 256, 1, 1, 0, 0)
        table, count, slot, first = (ctypes.c_void_p * 4).from_address(params)
        launches.append(((gx, gy), ctypes.c_uint64.from_address(table).value,
                         ctypes.c_int32.from_address(count).value,
                         ctypes.c_int32.from_address(slot).value,
                         ctypes.c_int32.from_address(first).value,
                         streams[stream], functions[function]))
        streams[stream].done = False
        if kernel_error:
            raise kernel_error.pop()

    class _RawKernel:  # CuPy's: .kernel is the function loaded on the current device
        @property
        def kernel(self):
            return _Function(device[0])

    def alloc_pinned(nbytes):
        pinned.append(nbytes)
        return bytearray(nbytes)

    current = []  # the stream CuPy allocates on, when a stream context is entered

    def empty(words, dtype=None):  # the device table where host memory is not mapped
        return types.SimpleNamespace(data=types.SimpleNamespace(ptr=0xD000), size=words,
                                     stream=current[-1] if current else None)

    runtime = types.SimpleNamespace(
        deviceSynchronize=lambda: log.append("device sync"),
        getDevice=lambda: device[0],
        deviceGetAttribute=lambda attr, dev: int(maps[dev]),
        memcpyAsync=lambda dst, src, n, kind, stream: (log.append(("copy", kind, n)),
                                                       copies.append((dst, src, n, stream))),
    )
    cupy = types.SimpleNamespace(
        uint64=numpy.uint64, empty=empty,
        RawKernel=lambda source, name: _RawKernel(),
        cuda=types.SimpleNamespace(runtime=runtime, alloc_pinned_memory=alloc_pinned,
                                   driver=types.SimpleNamespace(launchKernel=launch_kernel)),
    )
    monkeypatch.setattr(sm._cuda, "require_cuda", lambda: cupy)
    monkeypatch.setattr(sm, "_TABLES", [])
    monkeypatch.setattr(sm, "_PARKED", [])
    monkeypatch.setattr(sm, "_DEVICES", {})
    sm._checksum_kernel.cache_clear()
    # large enough that each allocation has several blocks (4 MiB: 64 blocks of 256 threads
    # reading 32 words each), so a mix-up of block and allocation shows
    regions = [sm.Region(1 << 40, 4 * MIB, None, ["x"]), sm.Region(2 << 40, 2 * MIB, None, ["w"])]
    monkeypatch.setattr(sm, "state_regions", lambda arrays: list(regions))

    def take(**options):
        stream = _Stream(log, current)
        streams[stream.ptr] = stream
        return sm.StateSnapshot.take([], stream, **options)

    yield types.SimpleNamespace(log=log, kernel_error=kernel_error, launches=launches,
                                pinned=pinned, regions=regions, take=take, device=device,
                                maps=maps, copies=copies, current=current)
    gc.collect()  # this test's snapshots die while its own lists are in place
    sm._checksum_kernel.cache_clear()


def test_a_pass_is_one_launch_and_the_table_names_each_allocation(rig):
    snap = rig.take()
    assert rig.log == ["device sync", "checksum"]  # no upload: the kernel reads the table
    table = snap._table
    assert list(table[:2]) == [1 << 40, 2 << 40] and list(table[2:4]) == [4 * MIB, 2 * MIB]
    snap.wait()
    del rig.log[:]
    snap.start_compare()
    assert snap.changed() == []
    # after capture: stray work finishes, one launch, one wait; no copy back
    assert rig.log == ["device sync", "checksum", "stream sync"]
    assert [launch[3] for launch in rig.launches] == [0, 1]  # the slots
    assert {launch[5] for launch in rig.launches} == {snap.stream}  # given, not entered
    assert {launch[1] for launch in rig.launches} == {snap._address}  # the host table itself
    assert snap._blocks == 64 and rig.launches[0][0] == (64, 2)  # blocks x allocations


def test_a_synchronized_caller_spares_the_snapshot_its_device_sync(rig):
    rig.take(synchronized=True)
    assert rig.log == ["checksum"]


@pytest.mark.parametrize(("region", "block", "paths"), [(1, 5, ["w"]), (0, 63, ["x"]),
                                                         (1, 0, ["w"])])
def test_a_moved_block_sum_names_its_allocations_paths(rig, region, block, paths):
    snap = rig.take()
    snap.wait()
    snap.start_compare()
    n, blocks = 2, snap._blocks
    # where the kernel writes the sum of block b of allocation r in slot s:
    # 2n + (s * n + r) * blocks + b (after n pointers and n sizes)
    snap._table[2 * n + (1 * n + region) * blocks + block] = 5
    assert snap.changed() == paths


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
def test_a_table_that_a_kernel_may_still_use_is_parked_until_its_stream_is_done(rig, stop):
    # A snapshot dropped with its checksum kernel still queued: its table must neither go to
    # the next snapshot nor back to CuPy's pinned pool (which would hand it on at once)
    # while that kernel still reads it and writes its sums there.
    snap = rig.take()
    if stop == "during the compare":
        snap.wait()
        snap.start_compare()
    stream, table = snap.stream, snap._table
    del snap
    gc.collect()
    assert sm._TABLES == [] and [t is table for _, (t, _) in sm._PARKED] == [True]
    made = len(rig.pinned)
    assert rig.take()._table is not table and len(rig.pinned) == made + 1  # still queued
    stream.done = True  # the stream has finished: the next snapshot may have it
    last = rig.take()
    assert last._table is table
    assert all(t is not table for _, (t, _) in sm._PARKED)  # (the snapshot in between's)


def test_an_interrupted_take_hands_its_table_on_only_after_waiting_for_its_stream(rig):
    rig.kernel_error.append(KeyboardInterrupt())  # Ctrl-C once the kernel is queued
    with pytest.raises(KeyboardInterrupt):
        rig.take()
    gc.collect()
    assert len(sm._TABLES) == 1 and sm._PARKED == []
    assert rig.log[-2:] == ["checksum", "stream sync"]


def test_a_compare_that_fails_once_work_is_queued_parks_its_table(rig):
    snap = rig.take()
    snap.wait()
    rig.kernel_error.append(RuntimeError("launch failed"))
    with pytest.raises(RuntimeError):
        snap.start_compare()
    del snap
    gc.collect()
    assert sm._TABLES == [] and len(sm._PARKED) == 1


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
    assert [(grid[1], n, first) for grid, _, n, _, first, _, _ in rig.launches] == [
        (2, 3, 0), (1, 3, 2)]
    snap.wait()
    snap.start_compare()  # slot 1, through the other argument arrays of each launch
    assert [(grid[1], slot, first) for grid, _, _, slot, first, _, _ in rig.launches[2:]] == [
        (2, 1, 0), (1, 1, 2)]


def test_a_free_table_is_taken_only_where_the_sums_and_the_arguments_fit(rig, monkeypatch):
    # Tables come back from earlier snapshots: one a word short of the sums and the packed
    # launch arguments (4 words, then 9 a launch) must not be taken, one just large enough
    # is, and the arguments are read from it.
    import numpy

    blocks = sm.StateSnapshot(list(rig.regions), None)._blocks  # (a table the probe takes)
    need = 2 * 2 + 2 * 2 * blocks + 4 + 9
    short, exact = numpy.zeros(need - 1, numpy.uint64), numpy.zeros(need, numpy.uint64)
    monkeypatch.setattr(sm, "_TABLES", [(short, short.ctypes.data), (exact, exact.ctypes.data)])
    snap = rig.take()
    assert snap._table is exact and rig.launches[-1][1] == exact.ctypes.data
    assert [table for table, _ in sm._TABLES][-1] is short  # left for a smaller state


def test_regions_given_to_take_are_used_and_their_time_counted(rig, monkeypatch):
    stream = rig.take().stream  # (a stream the stand-in launch knows)
    found = []
    monkeypatch.setattr(sm, "state_regions", lambda arrays: found.append(1) or [])
    given = [sm.Region(5 << 40, 4096, None, ["given"])]
    snap = sm.StateSnapshot.take([], stream, synchronized=True, regions=given,
                                 spent_ms=1234.0)
    assert not found and snap.regions is given
    assert rig.launches[-1][1] == snap._address and snap._table[0] == 5 << 40
    assert snap.take_ms >= 1234.0


def test_a_device_that_cannot_map_host_memory_gets_the_table_and_sums_by_copies(rig):
    rig.maps[0] = False
    snap = rig.take()
    n, blocks = 2, snap._blocks
    assert rig.log == ["device sync", ("copy", 1, 16 * n), "checksum"]  # pointers and sizes
    snap.wait()
    del rig.log[:]
    assert snap.changed() == []
    assert rig.log == ["device sync", "checksum", ("copy", 2, 16 * n * blocks), "stream sync"]
    assert {launch[1] for launch in rig.launches} == {0xD000}  # the device's table
    # the pointers and sizes to the table's start; both slots' sums back, after them; all
    # on the snapshot's stream, which the device table was allocated on (so CuPy's pool
    # hands its block on only in that stream's order)
    on = snap.stream.ptr
    assert rig.copies == [(0xD000, snap._address, 16 * n, on),
                          (snap._address + 16 * n, 0xD000 + 16 * n, 16 * n * blocks, on)]
    assert snap._device_table.stream is snap.stream


def test_each_device_launches_its_own_function(rig):
    rig.take()
    rig.device[0] = 1
    rig.maps[1] = False
    rig.take()
    assert [launch[6] for launch in rig.launches] == [0, 1]
    assert rig.launches[0][1] != 0xD000 and rig.launches[1][1] == 0xD000
