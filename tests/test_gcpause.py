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


def test_resumed_turns_on_only_what_a_pause_turned_off():
    from accelgraph_cli.gcpause import cyclic_gc_resumed

    with cyclic_gc_paused():
        with cyclic_gc_paused(), cyclic_gc_resumed():  # nested pauses: still the outer's
            assert gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()  # off by the program's own choice: stays off
    try:
        with cyclic_gc_paused(), cyclic_gc_resumed():
            assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_pydot_fallback_runs_with_the_collector_on_inside_a_pause(monkeypatch):
    # pyparsing leaves cyclic garbage at every statement: with the collector paused (as
    # `show` and `diff` run), a 10,000-node file held 1.5 GB; with it on, 50 MB.
    from accelgraph_cli.dot import generic
    from accelgraph_cli.dot.parse import parse_dot

    seen = []
    real = generic._pydot_graphs

    def recording(text):
        seen.append(gc.isenabled())
        return real(text)

    monkeypatch.setattr(generic, "_pydot_graphs", recording)
    with cyclic_gc_paused():
        model = parse_dot("digraph { a:p -> b; }")  # a port: beyond the fast scanner
        assert not gc.isenabled()
    assert seen == [True]
    assert model.edges == [("a", "b")]
