"""Memory nodes: memset, host-to-device copy from pinned memory, device copy, a host callback.

How an inference server feeds a captured graph: new inputs are written into a pinned
(page-locked) host buffer allocated once, and the graph itself copies them to the device at
replay time, so the graph never needs re-capturing. One step:

    memset      accumulator <- 0                        (cudaMemsetAsync)
    H2D copy    staging <- pinned host buffer           (cudaMemcpyAsync, pinned source)
    D2D copy    work <- staging                         (cudaMemcpyAsync, device to device)
    host node   a Python callback counts the steps      (cuLaunchHostFunc)
    kernel      accumulator <- 2 * work + accumulator   (axpby, kernels/elementwise.cu)

The copy from host memory must come from pinned memory: a graph's memcpy node reads the host
address at replay time, which CUDA only allows for page-locked buffers. The host callback
runs on a CUDA driver thread between the copy and the kernel and must not call CUDA; it is
kernels.HostFunction rather than Stream.launch_host_func because CuPy releases that
callback after its first call, and a graph calls it on every replay.

Graph: MEMSET, MEMCPY (HtoD), MEMCPY (DtoD), HOST and KERNEL nodes in one chain.
"""

import cupy
import numpy
from cupy.cuda import runtime

from accelgraph_cli import kernels

PARAMS = {"n": 65536}


def setup(n):
    kernels.preload("elementwise.cu")
    nbytes = n * 4
    pinned = cupy.cuda.alloc_pinned_memory(nbytes)
    host_input = numpy.frombuffer(pinned, numpy.float32, n)  # a NumPy view of pinned memory
    host_input[:] = numpy.random.default_rng(5).standard_normal(n, dtype=numpy.float32)
    counter = {"host_calls": 0}

    def count():  # runs on a CUDA thread: plain Python only, no CUDA calls
        counter["host_calls"] += 1

    return {
        "nbytes": nbytes,
        "pinned": pinned,  # keeps the page-locked allocation alive
        "host_input": host_input,
        "staging": cupy.empty(n, dtype=cupy.float32),
        "work": cupy.empty(n, dtype=cupy.float32),
        "accumulator": cupy.empty(n, dtype=cupy.float32),
        "counter": counter,
        "count_steps": kernels.HostFunction(count),  # must outlive the graph: kept in state
    }


def step(state):
    stream = cupy.cuda.get_current_stream()
    nbytes = state["nbytes"]
    staging, work, accumulator = state["staging"], state["work"], state["accumulator"]
    runtime.memsetAsync(accumulator.data.ptr, 0, nbytes, stream.ptr)
    runtime.memcpyAsync(staging.data.ptr, state["pinned"].ptr, nbytes,
                        runtime.memcpyHostToDevice, stream.ptr)
    runtime.memcpyAsync(work.data.ptr, staging.data.ptr, nbytes,
                        runtime.memcpyDeviceToDevice, stream.ptr)
    state["count_steps"].launch(stream)
    kernels.axpby(2.0, work, 1.0, accumulator, accumulator)


def outputs(state):
    return {"accumulator": state["accumulator"], "work": state["work"]}
