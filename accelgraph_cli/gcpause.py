"""Pausing Python's cyclic garbage collector while a large graph's objects are built.

Reading or indexing a 100,000-node graph creates hundreds of thousands of small objects
(nodes, dicts, lists, tuples) and frees almost none of them until it is done. Each
collection triggered on the way rescans that growing heap for cycles that cannot exist
there: a fifth to a half of the time on such graphs. The one copy of this helper: the parser,
the model's derived views and the diff all pause collection through it.

Pausing only defers the work: every object made meanwhile still counts towards the next
collection, which then walks them all (0.1 s or more for a 100,000-node model). So the
offline commands (``show``, ``diff``) run whole under one pause: they read their graphs,
print, and let reference counting free the models before the collector is back on.

Code that does make cyclic garbage runs under ``cyclic_gc_resumed`` inside such a pause:
pyparsing (behind pydot, the reader of DOT that is not CUDA's) leaves cycles behind at every
statement, and with the collector paused a 10,000-node file held 1.5 GB instead of 50 MB.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

# How many cyclic_gc_paused blocks are open that turned the collector off themselves (not
# those that found it off already, whether by an outer pause or by the program).
_pauses_that_disabled = 0


def pause_cyclic_gc() -> bool:
    """Turn the cyclic collector off; returns whether this call did (it was on), which the
    caller hands to :func:`resume_cyclic_gc` when its pause ends. For a pause that is not one
    block of code (a CUDA graph capture, from capture_begin to its end)."""
    global _pauses_that_disabled
    if not gc.isenabled():
        return False
    gc.disable()
    _pauses_that_disabled += 1
    return True


def resume_cyclic_gc(paused: bool) -> None:
    """End a pause :func:`pause_cyclic_gc` began: the collector back on if it turned it off."""
    global _pauses_that_disabled
    if paused:
        _pauses_that_disabled -= 1
        gc.enable()


@contextmanager
def cyclic_gc_paused():
    """Disable the cyclic collector for the block; restore it (if it was on) on the way out.

    Reference counting still frees everything as usual; only the search for cycles waits.
    """
    paused = pause_cyclic_gc()
    try:
        yield
    finally:
        resume_cyclic_gc(paused)


@contextmanager
def cyclic_gc_resumed():
    """The collector on for the block, if only a cyclic_gc_paused around it had turned it
    off (a program that disabled it itself keeps it off); paused again on the way out."""
    resume = _pauses_that_disabled > 0 and not gc.isenabled()
    if resume:
        gc.enable()
    try:
        yield
    finally:
        if resume:
            gc.disable()
