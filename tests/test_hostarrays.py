"""The check's host-array restore (accelgraph_cli.run.hostarrays), on NumPy arrays."""

import numpy

from accelgraph_cli.run.hostarrays import (
    HostSave,
    device_and_host_arrays,
    held_by,
    host_arrays,
    host_extent,
    is_host_array,
)


def test_host_arrays_are_numeric_numpy_arrays_found_anywhere_in_a_state():
    flags = numpy.zeros(8, numpy.uint8)
    state = {"flags": flags, "nested": {"total": numpy.ones(3)}, "names": numpy.array([None]),
             "n": 3, "list": [1.0, 2.0]}
    assert host_arrays(state) == [("state['flags']", flags),
                                  ("state['nested']['total']", state["nested"]["total"])]
    assert not is_host_array(numpy.float32(1.0)) and not is_host_array([1, 2])


class _Device:
    """Stands for a device array: what the predicate given to device_and_host_arrays accepts."""

    def __init__(self, name):
        self.name = name


def test_one_walk_finds_what_the_two_walks_find_each_under_its_first_path():
    # (arrays held as attributes of other arrays aside: see the test after this one)
    from accelgraph_cli.run.statewalk import find_arrays

    flags, weights = numpy.zeros(8, numpy.uint8), _Device("w")
    holder = type("Holder", (), {})()
    holder.cache, holder.steps = _Device("kv"), numpy.arange(3)
    state = {"flags": flags, "w": weights, "again": [weights, flags], "holder": holder,
             "names": numpy.array([None]), "n": 3}
    is_device = lambda obj: isinstance(obj, _Device)  # noqa: E731
    device, host = device_and_host_arrays(state, is_device)
    assert device == find_arrays(state, is_device)
    assert host == host_arrays(state)
    assert [path for path, _ in device] == ["state['w']", "state['holder'].cache"]
    assert [path for path, _ in host] == ["state['flags']", "state['holder'].steps"]
    saved = HostSave(state, found=host)  # from the walk given, the same as its own
    assert [p for p, _, _ in saved.saved] == [p for p, _, _ in HostSave(state).saved]


class _Flagged(numpy.ndarray):
    """A host array that can carry attributes."""


def test_the_one_walk_does_not_go_into_an_array_for_another_kind_of_array():
    # As its docstring says: an array held only as an attribute of another array is not
    # found (the two walks each went into the other kind of array; the one walk goes into
    # neither). Pinned here so the narrowing stays a known one.
    from accelgraph_cli.run.statewalk import find_arrays

    host = numpy.zeros(3).view(_Flagged)
    host.cache = _Device("kv")
    is_device = lambda obj: isinstance(obj, _Device)  # noqa: E731
    device, found = device_and_host_arrays({"host": host}, is_device)
    assert [path for path, _ in found] == ["state['host']"] and device == []
    assert [path for path, _ in find_arrays({"host": host}, is_device)] == [
        "state['host'].cache"]


def test_a_host_extent_is_the_bytes_a_view_reaches():
    base = numpy.zeros((4, 6), numpy.float32)
    start = base.__array_interface__["data"][0]
    assert host_extent(base) == (start, start + base.nbytes)
    assert host_extent(base[1:3, 2:4]) == (start + 24 + 8, start + 2 * 24 + 16)
    assert host_extent(base[::-1, 0]) == (start, start + 3 * 24 + 4)
    assert host_extent(base[:0]) is None


def test_a_host_save_gives_back_the_bytes_each_array_held_when_it_was_taken():
    state = {"flags": numpy.zeros(4, numpy.uint8), "table": numpy.arange(3, dtype=numpy.uint64)}
    saved = HostSave(state)
    kept = state["flags"]
    state["flags"][:] = 7  # what stray work or an earlier check's replays leave there
    state["table"][1] = 99
    done, refused = saved.restore()
    assert kept is state["flags"] and not kept.any()
    assert state["table"].tolist() == [0, 1, 2]  # its own values, not a fresh state's
    assert done == [host_extent(state["flags"]), host_extent(state["table"])] and not refused


def test_a_host_save_leaves_out_what_it_cannot_write_or_would_cost_too_much(monkeypatch):
    buffer = numpy.zeros(8, numpy.uint8)
    view = buffer[:4]
    view.flags.writeable = False  # read-only, over bytes the buffer restores
    lone = numpy.zeros(2)
    lone.flags.writeable = False  # read-only, over bytes nothing else restores
    expanded = numpy.lib.stride_tricks.as_strided(numpy.zeros(1), (3,), (0,))
    monkeypatch.setattr("accelgraph_cli.run.hostarrays.SAVE_LIMIT", 64)
    state = {"view": view, "buffer": buffer, "lone": lone, "expanded": expanded,
             "big": numpy.zeros(9)}  # 72 bytes: over the limit
    saved = HostSave(state)
    assert [path for path, _, _ in saved.saved] == [
        "state['view']", "state['buffer']", "state['lone']", "state['expanded']"]
    buffer[:] = 5
    expanded[0] = 3.0  # all three elements: one in memory
    done, refused = saved.restore()
    assert not buffer.any() and expanded.tolist() == [0.0, 0.0, 0.0]
    assert refused == [host_extent(lone)]
    assert host_extent(state["big"]) in done  # not saved, and left alone: never filled


def test_a_host_save_keeps_to_its_total_and_skips_what_changed_shape(monkeypatch):
    monkeypatch.setattr("accelgraph_cli.run.hostarrays.SAVE_TOTAL", 48)
    state = {"a": numpy.zeros(4), "b": numpy.zeros(4), "c": numpy.zeros(2)}  # 32, 32, 16 bytes
    saved = HostSave(state)
    assert [path for path, _, _ in saved.saved] == ["state['a']", "state['c']"]
    assert saved.unsaved == [host_extent(state["b"])]
    state["a"].shape = (2, 2)  # reshaped in place: not written back
    state["c"][:] = 1.0
    done, refused = saved.restore()
    assert refused == [host_extent(state["a"])] and not state["c"].any()


def test_held_by_asks_for_a_shared_byte():
    buffer = numpy.zeros(16, numpy.uint8)
    held = [host_extent(buffer[:8])]
    assert held_by(held, buffer[7:9]) and held_by(held, buffer)
    assert not held_by(held, buffer[8:]) and not held_by(held, numpy.zeros(8, numpy.uint8))
    assert not held_by(held, [0] * 8) and not held_by(held, buffer[:0])
