"""Pausing Python's cyclic garbage collector while a large graph's objects are built.

Reading or indexing a 100,000-node graph creates hundreds of thousands of small objects
(nodes, dicts, lists, tuples) and frees almost none of them until it is done. Each
collection triggered on the way rescans that growing heap for cycles that cannot exist
there: a fifth to a half of the time on such graphs. The one copy of this helper: the parser,
the model's derived views and the diff all pause collection through it.

Pausing alone only defers the work: every object made meanwhile still counts towards the
next collection, which would then walk them all as young objects (0.05 s for a
100,000-node model, a tenth of its parse) and walk them again when they are promoted. So on
the way out the objects the block kept are moved straight to the oldest generation, as
collections would have promoted a model that lives on, without scanning them (gc.freeze
and gc.unfreeze: two list splices). That is skipped when the program has frozen objects of
its own, which an unfreeze would release. The offline commands (``show``, ``diff``) run
whole under one pause: they read their graphs, print, and let reference counting free the
models before the collector is back on.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def cyclic_gc_paused():
    """Disable the cyclic collector for the block; restore it (if it was on) on the way out,
    with what the block made counted as old objects (see the module's docstring).

    Reference counting still frees everything as usual; only the search for cycles waits
    (a cycle made in the block is found by the next full collection).
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            if not gc.get_freeze_count():
                gc.freeze()  # every tracked object, young ones included, set aside...
                gc.unfreeze()  # ...and back, all into the oldest generation
            gc.enable()
