"""The cyclic collector's pause around large graph work (accelgraph_cli/gcpause.py)."""

from __future__ import annotations

import gc
import weakref

from accelgraph_cli.gcpause import cyclic_gc_paused


class _Box:
    """A tracked object that can hold a reference (a cycle) and be weakly referenced."""

    def __init__(self):
        self.other = None


def _in_generation(obj, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


def test_the_collector_is_restored_as_it_was():
    assert gc.isenabled()
    with cyclic_gc_paused():
        assert not gc.isenabled()
        with cyclic_gc_paused():  # nested: the inner one leaves it off
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()  # off before, off after
    finally:
        gc.enable()


def test_what_the_block_kept_is_old_not_young():
    assert gc.get_freeze_count() == 0
    with cyclic_gc_paused():
        kept = [_Box() for _ in range(20_000)]
    # the next collection of the young generation does not walk the 20,000 objects
    assert gc.get_count()[0] < 1_000
    assert not _in_generation(kept[-1], 0) and _in_generation(kept[-1], 2)


def test_a_cycle_made_in_the_block_is_still_collected():
    with cyclic_gc_paused():
        a, b = _Box(), _Box()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
    assert gone() is not None  # only reference counting ran: the cycle waits...
    gc.collect()
    assert gone() is None  # ...for the next full collection


def test_objects_the_program_froze_stay_frozen():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with cyclic_gc_paused():
            kept = _Box()
        gc.disable()  # no collection may promote it while it is looked for
        assert gc.get_freeze_count() == frozen
        assert _in_generation(kept, 0)  # left young: unfreezing would release the program's
    finally:
        gc.unfreeze()
        gc.enable()
