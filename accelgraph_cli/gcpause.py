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

A CUDA graph capture pauses it too (``pause_for_capture``, from capture_begin to the
capture's end), for another reason: what it would destroy then, through CUDA, a global-mode
capture refuses. Those pauses are counted apart, since captures overlap and end in any order.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager

# How many cyclic_gc_paused blocks are open that turned the collector off themselves (not
# those that found it off already, whether by an outer pause, a capture or the program).
_pauses_that_disabled = 0


@contextmanager
def cyclic_gc_paused():
    """Disable the cyclic collector for the block; restore it (if it was on) on the way out.

    Reference counting still frees everything as usual; only the search for cycles waits.
    """
    global _pauses_that_disabled, _on_after_captures
    collecting = gc.isenabled()
    gc.disable()
    if collecting:
        _pauses_that_disabled += 1
    try:
        yield
    finally:
        if collecting:
            _pauses_that_disabled -= 1
            with _capture_lock:
                if _captures:  # a capture begun inside the block runs on: on after it
                    _on_after_captures = True
                else:
                    gc.enable()


# CUDA graph captures in progress (any thread), and whether the first of them found the
# collector on: a capture's pause is not one block of code (capture_begin to the capture's
# end, however it ends), and captures overlap (two threads, two streams), so the collector is
# back on when the last of them ends, not the first.
# (reentrant: a collection the lock's own bookkeeping set off may end a dropped graph's
# capture, which takes it again)
_capture_lock = threading.RLock()
_captures = 0
_on_after_captures = False


def pause_for_capture() -> None:
    """The collector off while a capture runs; each call is matched by one
    :func:`resume_after_capture` as the capture ends. Collection during a capture would
    destroy what it finds (a graph left in a cycle) through CUDA calls a global-mode capture
    refuses, and is invalidated by; it runs after. (``gc.collect()`` called explicitly still
    collects.)"""
    global _captures, _on_after_captures
    with _capture_lock:
        if _captures == 0:
            _on_after_captures = gc.isenabled()
            gc.disable()
        _captures += 1


def resume_after_capture() -> None:
    """One capture ended: with the last one, the collector on again if the first found it on."""
    global _captures, _on_after_captures
    with _capture_lock:
        _captures = max(0, _captures - 1)
        if _captures == 0 and _on_after_captures:
            _on_after_captures = False
            gc.enable()


@contextmanager
def cyclic_gc_resumed():
    """The collector on for the block, if only a cyclic_gc_paused around it had turned it
    off (a program that disabled it itself keeps it off); paused again on the way out."""
    global _on_after_captures
    with _capture_lock:  # (not while a capture runs: its pause holds)
        resume = _pauses_that_disabled > 0 and not gc.isenabled() and not _captures
        if resume:
            gc.enable()
    try:
        yield
    finally:
        if resume:
            with _capture_lock:
                # a capture begun in the block found the collector on, this block's doing:
                # off after it, as the pause around this block wants
                if _captures:
                    _on_after_captures = False
                gc.disable()
