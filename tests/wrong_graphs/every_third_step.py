"""Wrong on purpose: every third step clips y, by a host counter the graph freezes (it never
clips). Run with --check-steps 4: step 4 overwrites step 3's clipped result, so the final
state agrees; the check must compare after each replay. Expected: check FAILED."""

import cupy
import numpy

PARAMS = {"n": 65536}


def setup(n):
    rng = numpy.random.default_rng(0)  # seeded: both states start equal
    return {
        "x": cupy.asarray(rng.standard_normal(n, dtype=numpy.float32)),
        "w": cupy.asarray(rng.uniform(1.0, 3.0, n).astype(numpy.float32)),
        "y": cupy.zeros(n, dtype=cupy.float32),
        "count": [0],
    }


def step(state):
    state["count"][0] += 1  # host counter: frozen at capture
    cupy.multiply(state["x"], state["w"], out=state["y"])
    if state["count"][0] % 3 == 0:  # every third step
        cupy.clip(state["y"], -1.0, 1.0, out=state["y"])


def outputs(state):
    return {"y": state["y"]}
