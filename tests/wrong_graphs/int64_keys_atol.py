"""Wrong on purpose: int64 keys pack a score and the step number, which the graph freezes, so
its keys are 1 less than eager's. Run with --atol 1e-6: near 2**62 two int64 values 1 apart
are equal in float64, where a tolerance compares; integers must be compared exactly
whatever the tolerance. Expected: check FAILED."""

import cupy
import numpy

PARAMS = {"n": 4096}

_pack = cupy.ElementwiseKernel(
    "float32 score, int64 t",
    "int64 key",
    "key = ((long long)__float_as_int(score) << 32) | (long long)t;",
    "pack_score_step",
)


def setup(n):
    rng = numpy.random.default_rng(0)  # seeded: both states start equal
    return {
        "x": cupy.asarray(rng.uniform(1.0, 2.0, n).astype(numpy.float32)),
        "w": cupy.asarray(rng.uniform(0.5, 1.0, n).astype(numpy.float32)),
        "score": cupy.zeros(n, dtype=cupy.float32),
        "key": cupy.zeros(n, dtype=cupy.int64),
        "best": cupy.zeros(n, dtype=cupy.int64),
        "t": [0],
    }


def step(state):
    state["t"][0] += 1  # the step number: a host value
    cupy.multiply(state["x"], state["w"], out=state["score"])  # scores in [0.5, 2)
    _pack(state["score"], numpy.int64(state["t"][0]), state["key"])
    cupy.maximum(state["best"], state["key"], out=state["best"])


def outputs(state):
    return {"score": state["score"], "best": state["best"]}
