"""Fork/join across streams: a LayerNorm, then independent GEMM branches in parallel, then a sum.

Models a layer whose parts do not depend on each other (the heads of a multi-head block, the
experts of a mixture-of-experts layer, or a draft and a target model): after a shared
LayerNorm on the origin stream, each of `branches` side streams computes
gelu(xn @ W_i + b_i), and the origin stream adds the branch results together.

The cross-stream pattern is the one CUDA capture understands: record an event on the origin
(capturing) stream, make each side stream wait on it (the fork: the side streams join the
capture), enqueue the branch under `with side_stream:`, record an event on each side stream
and make the origin wait on all of them (the join) before the sum. Every side stream must be
joined back before the capture ends, or capture fails with cudaErrorStreamCaptureUnjoined.

Graph: layernorm_rows -> `branches` parallel GEMM -> bias_gelu branches (each GEMM the skinny
split-K kernel and its slice reduction at batch <= 64) -> a chain of axpby nodes summing
them. The branches have no edges between them, so replay may run them concurrently; the DOT
shows them side by side.
"""

import cupy
import numpy

from accelgraph_cli import kernels

PARAMS = {"branches": 4, "batch": 16, "hidden": 1024}


def setup(branches, batch, hidden):
    if branches < 2:
        raise ValueError(f"branches must be at least 2 to fork (got {branches})")
    kernels.preload("gemm.cu", "softmax.cu", "elementwise.cu")
    rng = numpy.random.default_rng(4)

    def array(*shape, scale=1.0):
        values = scale * rng.standard_normal(shape, dtype=numpy.float32)
        return cupy.asarray(values.astype(numpy.float32))  # the kernels take float32 only

    scale = 1.0 / numpy.sqrt(hidden)
    return {
        "x": array(batch, hidden),
        "gamma": cupy.ones(hidden, dtype=cupy.float32),
        "beta": cupy.zeros(hidden, dtype=cupy.float32),
        "xn": cupy.empty((batch, hidden), dtype=cupy.float32),
        "weights": [array(hidden, hidden, scale=scale) for _ in range(branches)],
        "biases": [array(hidden, scale=0.1) for _ in range(branches)],
        "branch_out": [cupy.empty((batch, hidden), dtype=cupy.float32) for _ in range(branches)],
        "out": cupy.empty((batch, hidden), dtype=cupy.float32),
        # Streams and events are made here, not in step: creating them is not stream work.
        "side_streams": [cupy.cuda.Stream(non_blocking=True) for _ in range(branches)],
        "fork": cupy.cuda.Event(disable_timing=True),
        "joins": [cupy.cuda.Event(disable_timing=True) for _ in range(branches)],
    }


def step(state):
    origin = cupy.cuda.get_current_stream()
    kernels.layernorm_rows(state["x"], state["gamma"], state["beta"], state["xn"])

    # Fork: every side stream starts after the LayerNorm.
    state["fork"].record(origin)
    branches = zip(state["side_streams"], state["joins"], state["weights"], state["biases"],
                   state["branch_out"])
    for side, join, w, b, out in branches:
        side.wait_event(state["fork"])
        with side:  # kernels launch on the current stream, now the side stream
            kernels.sgemm(state["xn"], w, out)
            kernels.bias_gelu(out, b)
        join.record(side)

    # Join: the origin waits for every branch, then sums them.
    for join in state["joins"]:
        origin.wait_event(join)
    first, second, *rest = state["branch_out"]
    total = kernels.axpby(1.0, first, 1.0, second, state["out"])
    for branch in rest:
        kernels.axpby(1.0, total, 1.0, branch, total)


def outputs(state):
    return {"out": state["out"]}
