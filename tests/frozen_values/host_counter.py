"""Fooling: a host value that changes each step is frozen by capture."""
import cupy
import numpy

from accelgraph_cli import kernels

PARAMS = {"n": 4096}


def setup(n):
    kernels.preload("saxpy.cu")
    rng = numpy.random.default_rng(3)
    return {"count": 1,
            "x": cupy.asarray(rng.standard_normal(n, dtype=numpy.float32)),
            "y": cupy.asarray(rng.standard_normal(n, dtype=numpy.float32))}


def step(state):
    state["count"] += 1
    kernels.saxpy(numpy.float32(state["count"]), state["x"], state["y"])


def outputs(state):
    return {"y": state["y"]}
