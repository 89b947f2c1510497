"""LayerNorm then softmax over rows: the two reductions of an attention block, one block per row.

A (rows x cols) batch of scores is layer-normalized and then turned into probabilities with a
row softmax (kernels/softmax.cu). Both kernels run one thread block per row and reduce in
shared memory with a fixed tree order, so the result is deterministic and bitwise equal
between eager runs and graph replays. The output goes to a buffer from setup; the input is
never modified, so every step computes the same thing.

Graph: two KERNEL nodes, layernorm_rows -> softmax_rows.
"""

import cupy
import numpy

from accelgraph_cli import kernels

PARAMS = {"rows": 512, "cols": 768, "eps": 1e-05}


def setup(rows, cols, eps):
    kernels.preload("softmax.cu")
    rng = numpy.random.default_rng(8)
    return {
        "x": cupy.asarray(rng.standard_normal((rows, cols), dtype=numpy.float32)),
        "gamma": cupy.asarray(1.0 + 0.1 * rng.standard_normal(cols, dtype=numpy.float32)),
        "beta": cupy.asarray(0.1 * rng.standard_normal(cols, dtype=numpy.float32)),
        "eps": eps,
        "out": cupy.empty((rows, cols), dtype=cupy.float32),
    }


def step(state):
    kernels.layernorm_rows(state["x"], state["gamma"], state["beta"], state["out"],
                           eps=state["eps"])
    kernels.softmax_rows(state["out"])  # in place


def outputs(state):
    return {"probs": state["out"]}
