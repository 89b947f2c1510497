"""Wrong on purpose: outputs() compares through a float64 staging buffer it keeps at module
level, so eager's outputs and the replayed state's are one buffer.

A host counter scales y each step; the graph freezes it at its capture value (1.0), so it is
wrong from the second replay on: eager after 2 steps holds 2*x, replay x. The buffer lies in
neither state's memory, so it is not seen as an output both states share; the check must
compare a copy of eager's result taken before the replays (not the buffer, which the
replayed state's outputs() rewrites). Expected: check FAILED."""
import cupy
import numpy

PARAMS = {"n": 4096}

_STAGING = {}  # shape -> float64 buffer, reused by every call of outputs()


def setup(n):
    rng = numpy.random.default_rng(0)
    x = cupy.asarray(rng.standard_normal(n, dtype=numpy.float32))
    return {"x": x, "y": cupy.zeros(n, dtype=cupy.float32), "count": [0]}


def step(state):
    state["count"][0] += 1  # host counter: the graph keeps the value it had at capture
    cupy.multiply(state["x"], float(state["count"][0]), out=state["y"])


def outputs(state):
    y = state["y"]
    buf = _STAGING.get(y.shape)
    if buf is None:
        buf = _STAGING[y.shape] = cupy.empty(y.shape, dtype=cupy.float64)
    buf[...] = y  # compared in float64 whatever the state's dtype
    return {"y": buf}
