"""Batch-size buckets: one graph per batch size, all sharing one memory pool (POOL = "shared").

Inference servers cannot capture a graph for every possible batch size, so they capture one
per bucket (here 64, 32, 16, 8 and 1 rows) and pad each request up to the next bucket. Every
bucket runs the same MLP block, gelu(x @ W1 + b1) @ W2, on the first `b` rows of a
max-batch input, allocating its activations inside the step.

The buckets are captured largest first into one shared pool. The big intermediate (the
4*hidden-wide activation) is freed at the end of each step, so the next, smaller bucket's
capture reuses that memory: the shared pool holds roughly one large activation, where
private pools would hold one per bucket. That is safe because the bucket graphs never run at
the same time. Only each bucket's small output stays allocated (it is kept in the state for
outputs()).

Graphs: `steps()` returns {"batch64": ..., "batch32": ..., ...}; each is a chain GEMM ->
bias_gelu -> GEMM, each GEMM the skinny split-K kernel and its slice reduction. Up to 64 rows
(the skinny kernel's range) a row's result does not depend on the batch it is in, so every
bucket's output equals the first rows of the largest bucket's, bit for bit.
"""

import cupy
import numpy

from accelgraph_cli import kernels

PARAMS = {"buckets": "64,32,16,8,1", "hidden": 1024}
POOL = "shared"


def setup(buckets, hidden):
    sizes = sorted({int(b) for b in buckets.split(",") if b.strip()}, reverse=True)
    if not sizes or sizes[-1] < 1:
        raise ValueError(f"buckets must be comma-separated positive batch sizes, got {buckets!r}")
    kernels.preload("gemm.cu")
    ffn = 4 * hidden
    rng = numpy.random.default_rng(7)
    scale1 = numpy.float32(1.0 / numpy.sqrt(hidden))
    scale2 = numpy.float32(1.0 / numpy.sqrt(ffn))
    return {
        "sizes": sizes,  # largest first: the capture order
        "x": cupy.asarray(rng.standard_normal((sizes[0], hidden), dtype=numpy.float32)),
        "w1": cupy.asarray(rng.standard_normal((hidden, ffn), dtype=numpy.float32) * scale1),
        "b1": cupy.asarray(0.1 * rng.standard_normal(ffn, dtype=numpy.float32)),
        "w2": cupy.asarray(rng.standard_normal((ffn, hidden), dtype=numpy.float32) * scale2),
        "y": {},  # bucket name -> output array, filled by the steps
    }


def mlp(state, batch):
    x = state["x"][:batch]  # a view of the first rows: no copy
    w1, w2 = state["w1"], state["w2"]
    h = kernels.sgemm(x, w1, cupy.empty((batch, w1.shape[1]), dtype=cupy.float32))
    kernels.bias_gelu(h, state["b1"])
    y = kernels.sgemm(h, w2, cupy.empty((batch, w2.shape[1]), dtype=cupy.float32))
    del h  # the large activation goes back to the pool for the next bucket's capture
    state["y"][f"batch{batch}"] = y


def steps(state):
    # Bind batch per entry (batch=batch), or every lambda would see the last size.
    return {f"batch{b}": (lambda batch=b: mlp(state, batch)) for b in state["sizes"]}


def outputs(state):
    return dict(state["y"])
