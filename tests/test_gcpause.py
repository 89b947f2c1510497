"""gcpause: the cyclic collector is off inside the block and back as it was after it, and
pausing it often does not keep it from collecting on its own between the pauses."""

from __future__ import annotations

import gc

import pytest

from accelgraph_cli.gcpause import cyclic_gc_paused


def test_off_inside_and_back_on_after_even_when_the_block_raises():
    assert gc.isenabled()
    with cyclic_gc_paused():
        assert not gc.isenabled()
        with cyclic_gc_paused():  # nested: the inner one leaves it to the outer
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError, match="inside"), cyclic_gc_paused():
        raise ValueError("inside")
    assert gc.isenabled()


def test_left_off_when_it_was_off():
    gc.disable()
    try:
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_frequent_pauses_leave_automatic_collection_working():
    # A program (a server, say) that calls the parser or the diff once per request while
    # making a little cyclic garbage of its own: the collector must still run by itself
    # between the pauses and free that garbage. (A pause that reset the collector's
    # allocation counts on the way out, as gc.freeze does, stopped every automatic
    # collection: the garbage then piled up without bound.)
    gc.collect()
    before = gc.get_stats()[0]["collections"]
    for _ in range(5000):
        a: list = []
        a.append([a])  # a cycle: garbage once the loop moves on
        with cyclic_gc_paused():
            [[i] for i in range(20)]  # short-lived objects made inside the pause
    collections = gc.get_stats()[0]["collections"] - before
    assert collections >= 5  # 10,000 cyclic lists against a first-generation threshold of 700
    assert gc.collect() < 2000  # what the automatic collections left: at most the last few
