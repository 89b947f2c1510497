"""A step that swaps its two buffers in Python: capture freezes which one is read.

Eager steps alternate a -> b and b -> a; one replay of a one-step graph reads a and writes b
every time, so from the second replay on it recomputes the same result.
"""

import cupy
import numpy

from accelgraph_cli import kernels

PARAMS = {"n": 256}


def setup(n):
    kernels.preload("stencil.cu")
    rng = numpy.random.default_rng(5)
    a = cupy.asarray(rng.random((n, n), dtype=numpy.float32))
    return {"a": a, "b": a.copy()}


def step(state):
    kernels.jacobi_step(state["a"], state["b"])
    state["a"], state["b"] = state["b"], state["a"]


def outputs(state):
    return {"a": state["a"], "b": state["b"]}
