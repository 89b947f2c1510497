"""One SAXPY (y = a*x + y) on a million floats: the smallest graph, a single kernel node.

The step is one memory-bound kernel (kernels/saxpy.cu) over `n` elements, updating y in place,
so k eager steps equal k graph replays. With one node there is nothing to batch: this
scenario measures the fixed cost of a graph launch against one ordinary kernel launch, and
shows that a graph does not pay off for a single large kernel.

Graph: one KERNEL node.
"""

import cupy
import numpy

from accelgraph_cli import kernels

PARAMS = {"n": 1048576, "a": 0.5}


def setup(n, a):
    kernels.preload("saxpy.cu")
    rng = numpy.random.default_rng(1)
    return {
        "a": numpy.float32(a),
        "x": cupy.asarray(rng.standard_normal(n, dtype=numpy.float32)),
        "y": cupy.asarray(rng.standard_normal(n, dtype=numpy.float32)),
    }


def step(state):
    kernels.saxpy(state["a"], state["x"], state["y"])


def outputs(state):
    return {"y": state["y"]}
