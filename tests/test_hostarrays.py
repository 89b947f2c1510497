"""The check's host-array restore (accelgraph_cli.run.hostarrays), on NumPy arrays."""

import numpy

from accelgraph_cli.run.hostarrays import (
    held_by,
    host_arrays,
    host_extent,
    is_host_array,
    restore_host_arrays,
)


def test_host_arrays_are_numeric_numpy_arrays_found_anywhere_in_a_state():
    flags = numpy.zeros(8, numpy.uint8)
    state = {"flags": flags, "nested": {"total": numpy.ones(3)}, "names": numpy.array([None]),
             "n": 3, "list": [1.0, 2.0]}
    assert host_arrays(state) == [("state['flags']", flags),
                                  ("state['nested']['total']", state["nested"]["total"])]
    assert not is_host_array(numpy.float32(1.0)) and not is_host_array([1, 2])


def test_a_host_extent_is_the_bytes_a_view_reaches():
    base = numpy.zeros((4, 6), numpy.float32)
    start = base.__array_interface__["data"][0]
    assert host_extent(base) == (start, start + base.nbytes)
    assert host_extent(base[1:3, 2:4]) == (start + 24 + 8, start + 2 * 24 + 16)
    assert host_extent(base[::-1, 0]) == (start, start + 3 * 24 + 4)
    assert host_extent(base[:0]) is None


def test_restore_copies_each_fresh_array_over_the_captured_one_at_its_path():
    captured = {"flags": numpy.full(4, 7, numpy.uint8), "total": numpy.arange(3.0)}
    fresh = {"flags": numpy.zeros(4, numpy.uint8), "total": numpy.zeros(3)}
    kept = captured["flags"]
    assert restore_host_arrays(host_arrays(captured), host_arrays(fresh)) == [
        "state['flags']", "state['total']"]
    assert kept is captured["flags"] and not kept.any() and not captured["total"].any()


def test_restore_leaves_what_it_cannot_copy_as_it_was():
    shared = numpy.full(4, 5, numpy.int32)
    readonly = numpy.full(2, 9.0)
    readonly.flags.writeable = False
    captured = {"shared": shared, "shape": numpy.ones(3), "dtype": numpy.ones(2, numpy.int64),
                "readonly": readonly, "only_here": numpy.ones(2)}
    fresh = {"shared": shared[::-1], "shape": numpy.zeros(4), "dtype": numpy.zeros(2),
             "readonly": numpy.zeros(2)}
    assert restore_host_arrays(host_arrays(captured), host_arrays(fresh)) == []
    assert (shared == 5).all() and (captured["shape"] == 1).all()
    assert (captured["dtype"] == 1).all() and (readonly == 9).all()


def test_held_by_asks_for_a_shared_byte():
    buffer = numpy.zeros(16, numpy.uint8)
    held = [host_extent(buffer[:8])]
    assert held_by(held, buffer[7:9]) and held_by(held, buffer)
    assert not held_by(held, buffer[8:]) and not held_by(held, numpy.zeros(8, numpy.uint8))
    assert not held_by(held, [0] * 8) and not held_by(held, buffer[:0])
