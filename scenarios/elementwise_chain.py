"""Launch-bound chain: N tiny in-place kernels on one small vector, the case CUDA graphs are for.

Each step launches `n` element-wise kernels (x = frac(x + c_i), kernels/elementwise.cu) on a
vector of `size` floats. Every kernel does almost no work, so eagerly the GPU mostly waits for
Python and the driver to submit the next launch (several microseconds each); replaying the
captured graph submits all `n` launches with one call and runs them back to back
(about a microsecond per node on an H200).

Graph: a straight chain of `n` KERNEL nodes, each depending on the one before.
Why it matters: decode loops, optimizer steps and simulation updates are often hundreds of
small kernels; this is the ceiling on what a graph can save for them.
"""

import cupy
import numpy

from accelgraph_cli import kernels

PARAMS = {"n": 1000, "size": 1024}


def setup(n, size):
    kernels.preload("elementwise.cu")
    rng = numpy.random.default_rng(0)
    x = cupy.asarray(rng.random(size, dtype=numpy.float32))
    # Irrational-ish increments so no two kernels in the chain do the same thing; the values
    # stay in [0, 1) however many times the chain runs.
    increments = [numpy.float32((i * 0.6180339887) % 1.0) for i in range(n)]
    return {"x": x, "increments": increments}


def step(state):
    x = state["x"]
    for c in state["increments"]:
        kernels.add_mod1(x, c)


def outputs(state):
    return {"x": state["x"]}
