"""Stream-ordered allocation: temporaries allocated and freed inside the step (POOL = "async").

Under CUDA's stream-ordered allocator (cudaMallocAsync / cudaFreeAsync, CuPy's
MemoryAsyncPool), memory allocated and freed during capture becomes part of the graph: each
temporary turns into a MEM_ALLOC node before its first use and a MEM_FREE node after its last,
so replays allocate and release it in stream order with no host involvement, and its
memory can be reused by other work between replays. A graph that frees what it allocates
can be relaunched only when instantiated with cudaGraphInstantiateFlagAutoFreeOnLaunch.

One step normalizes a batch of rows (LayerNorm) into a temporary, takes a row softmax into a
second temporary, writes 0.5 * (x + probs) into the output buffer from setup (which outlives
every replay), then drops both temporaries (`del`), which frees them in stream order.

Graph: MEM_ALLOC -> layernorm_rows -> MEM_ALLOC -> softmax_rows -> axpby -> MEM_FREE x2.
"""

import cupy
import numpy

from accelgraph_cli import kernels

PARAMS = {"rows": 256, "cols": 1024}
POOL = "async"


def setup(rows, cols):
    kernels.preload("softmax.cu", "elementwise.cu")
    rng = numpy.random.default_rng(6)
    return {
        "x": cupy.asarray(rng.standard_normal((rows, cols), dtype=numpy.float32)),
        "gamma": cupy.asarray(1.0 + 0.1 * rng.standard_normal(cols, dtype=numpy.float32)),
        "beta": cupy.asarray(0.1 * rng.standard_normal(cols, dtype=numpy.float32)),
        "out": cupy.empty((rows, cols), dtype=cupy.float32),  # lives outside the graph
    }


def step(state):
    x = state["x"]
    normed = cupy.empty_like(x)  # temporary: MEM_ALLOC node under the async pool
    kernels.layernorm_rows(x, state["gamma"], state["beta"], normed)
    probs = cupy.empty_like(x)
    kernels.softmax_rows(normed, probs)
    kernels.axpby(0.5, x, 0.5, probs, state["out"])
    # Dropping the last references frees the temporaries on this stream: MEM_FREE nodes.
    del normed, probs


def outputs(state):
    return {"out": state["out"]}
