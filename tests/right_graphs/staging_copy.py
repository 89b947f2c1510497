"""Correct on purpose: outputs() copies the result into one module-level buffer and returns
that buffer, as code that stages results for the host does.

The step updates y in place (y = 0.5 * y + x). outputs() copies y into _STAGING, which every
state shares, and returns it: eager's copy is taken before the captured state's outputs are
ever asked for, so the check compares the replays' y with eager's, whatever the buffer
holds in between.

Expected: check: ok (exit 0).
"""
import cupy

PARAMS = {"n": 4096}
_STAGING = {}


def setup(n):
    x = cupy.arange(n, dtype=cupy.float32)
    return {"x": x, "y": cupy.zeros(n, dtype=cupy.float32)}


def step(state):
    state["y"] *= 0.5
    state["y"] += state["x"]


def outputs(state):
    y = state["y"]
    buffer = _STAGING.get(y.size)
    if buffer is None:
        buffer = _STAGING[y.size] = cupy.empty(y.size, dtype=cupy.float64)
    buffer[...] = y
    return {"y": buffer}
