"""A check that proves nothing: outputs() returns the rows that have finished, and after the
steps checked none has, so every output is empty. Nothing compared must not read as "ok".
Expected: check not run (exit 1)."""

import cupy
import numpy

PARAMS = {"batch": 64, "dim": 1024, "max_len": 16}


def setup(batch, dim, max_len):
    rng = numpy.random.default_rng(0)  # seeded: both states start equal
    return {
        "x": cupy.asarray(rng.standard_normal((batch, dim), dtype=numpy.float32)),
        "y": cupy.zeros((batch, dim), dtype=cupy.float32),
        "length": cupy.zeros(batch, dtype=cupy.int32),
        "max_len": max_len,
        "count": [0],
    }


def step(state):
    state["count"][0] += 1  # host counter: frozen at capture
    cupy.multiply(state["x"], float(state["count"][0]), out=state["y"])
    cupy.add(state["length"], 1, out=state["length"])


def outputs(state):
    finished = state["length"] >= state["max_len"]
    return {"finished": state["y"][finished]}
