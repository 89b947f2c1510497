"""Correct on purpose: outputs() makes a derived output on its first call and keeps it in the
state (a cache of y's running norm, as a metrics hook keeps its buffer), then fills it again
on each later call.

Capture asks outputs() of its state before the guard walks it, so the captured state holds
the buffer when its arrays are listed. The check's fresh state must be asked the same before
its walk, or the captured state holds a buffer the fresh one lacks and the restore refuses
a right graph ("setup() built a different state").

Expected: check: ok (exit 0).
"""
import cupy
import numpy

PARAMS = {"n": 4096}


def setup(n):
    rng = numpy.random.default_rng(0)
    return {"x": cupy.asarray(rng.standard_normal(n, dtype=numpy.float32)),
            "y": cupy.zeros(n, dtype=cupy.float32)}


def step(state):
    state["y"] *= 0.5
    state["y"] += state["x"]


def outputs(state):
    total = state.get("y_sum")
    if total is None:
        total = state["y_sum"] = cupy.zeros(1, dtype=cupy.float32)
    cupy.sum(state["y"], keepdims=True, out=total)
    return {"y": state["y"], "y_sum": total}
