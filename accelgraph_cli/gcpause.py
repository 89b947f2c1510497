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
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def cyclic_gc_paused():
    """Disable the cyclic collector for the block; restore it (if it was on) on the way out.

    Reference counting still frees everything as usual; only the search for cycles waits.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
