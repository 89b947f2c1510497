"""Wrong on purpose, for `replay --unroll 2`: the one-step graph is wrong, the 2-step graph
is right, and both are timed and shown.

The sign of y alternates with a host counter: eager gives +x, -x, +x, ... The one-step graph
freezes +x; the 2-step graph holds +x then -x, so each of its replays equals two eager
steps. `replay --unroll 2` must check the one-step graph too. Expected: exit 1, "check of the
one-step graph: FAILED"."""
import cupy
import numpy

PARAMS = {"n": 4096}


def setup(n):
    rng = numpy.random.default_rng(0)
    x = cupy.asarray(rng.standard_normal(n, dtype=numpy.float32))
    return {"x": x, "y": cupy.zeros(n, dtype=cupy.float32), "count": [0]}


def step(state):
    state["count"][0] += 1
    sign = 1.0 if state["count"][0] % 2 else -1.0  # host value: frozen per captured copy
    cupy.multiply(state["x"], sign, out=state["y"])


def outputs(state):
    return {"y": state["y"]}
