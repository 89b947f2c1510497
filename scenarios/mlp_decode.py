"""Decode-step MLP: two GEMMs from kernels/gemm.cu and a GELU, batch-sized, then a softmax.

The feed-forward block of a transformer during token-by-token decoding: a small batch of
activations x (batch x hidden) goes through

    h = gelu(x @ W1 + b1)        # hidden -> 4*hidden, GEMM with a bias+GELU epilogue
    logits = h @ W2              # 4*hidden -> hidden
    probs = softmax(logits)      # row-wise

With a batch of 8 the GEMMs are tiny and the step is dominated by launch overhead, which is
why inference servers capture decode steps into graphs. The activations (h, logits, probs)
are allocated inside the step, as a framework would: under capture they come from the
graph's private pool and stay at fixed addresses for every replay.

Graph: a chain of four KERNEL nodes. Each GEMM is the skinny split-K kernel (sgemm_skinny_8 at
batch 8); the first is followed by sgemm_splitk_reduce, which adds the K slices in slice order
and applies bias and GELU (kernels.sgemm_bias_gelu), the second by sgemm_splitk_reduce_softmax,
which adds them into the logits and writes their softmax in the same launch
(kernels.sgemm_softmax). The wrappers pick these by shape; with one K slice, on a small GPU, a
GEMM is one node, and the softmax softmax_rows_warp.
"""

import cupy
import numpy

from accelgraph_cli import kernels

PARAMS = {"batch": 8, "hidden": 1024}
POOL = "private"
ERROR_MODE = "global"


def setup(batch, hidden):
    kernels.preload("gemm.cu", "softmax.cu")
    ffn = 4 * hidden
    rng = numpy.random.default_rng(2)

    def weights(fan_in, fan_out):
        # Scaled so activations keep unit-ish variance through the layers.
        w = rng.standard_normal((fan_in, fan_out), dtype=numpy.float32)
        return cupy.asarray(w / numpy.float32(numpy.sqrt(fan_in)))

    return {
        "x": cupy.asarray(rng.standard_normal((batch, hidden), dtype=numpy.float32)),
        "w1": weights(hidden, ffn),
        "b1": cupy.asarray(0.1 * rng.standard_normal(ffn, dtype=numpy.float32)),
        "w2": weights(ffn, hidden),
    }


def step(state):
    x, w1, w2 = state["x"], state["w1"], state["w2"]
    batch, hidden = x.shape
    ffn = w1.shape[1]
    h = kernels.sgemm_bias_gelu(x, w1, state["b1"], cupy.empty((batch, ffn), dtype=cupy.float32))
    logits = cupy.empty((batch, hidden), dtype=cupy.float32)
    probs = kernels.sgemm_softmax(h, w2, logits, cupy.empty_like(logits))
    # Kept in the state so outputs() can read what the last step (or replay) wrote.
    state["logits"], state["probs"] = logits, probs


def outputs(state):
    return {"logits": state["logits"], "probs": state["probs"]}
