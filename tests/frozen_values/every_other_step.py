"""Fooling: a host value that changes every other step, not every step, is frozen by capture.

The scale is the step count halved: 1, 1, 2, 2, ... from the first captured step on. Two
consecutive steps pass the same scale, so ``audit`` of two steps and ``replay``'s check of
two replays see nothing; ``audit --steps 3`` compares the first step with the third and
finds it, and ``replay --check-steps 3`` fails. The fix: keep the scale in device memory
the kernel reads, written before each replay.
"""
import cupy
import numpy

from accelgraph_cli import kernels

PARAMS = {"n": 4096}


def setup(n):
    kernels.preload("saxpy.cu")
    rng = numpy.random.default_rng(5)
    return {"count": 1,
            "x": cupy.asarray(rng.standard_normal(n, dtype=numpy.float32)),
            "y": cupy.asarray(rng.standard_normal(n, dtype=numpy.float32))}


def step(state):
    state["count"] += 1
    kernels.saxpy(numpy.float32(state["count"] // 2), state["x"], state["y"])


def outputs(state):
    return {"y": state["y"]}
