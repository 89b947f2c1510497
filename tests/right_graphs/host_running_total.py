"""Correct on purpose: the graph copies this step's stop flags into a pinned host buffer the
state holds, and a host node adds them into a running count, also a host array of the state.

Each step: done = (ids == eos) on the device, a device-to-host copy of done into flags
(pinned), then a host callback that adds flags into total (total += flags): the count reads
what it held. Both are outputs. The check gives the captured state's host arrays back the
bytes they held before capture, and does not fill them (a graph may read them):
filled with a complement, total would start from garbage and never match eager's.

Expected: check: ok (exit 0).
"""
import cupy
import numpy
from cupy.cuda import runtime

from accelgraph_cli import kernels

PARAMS = {"batch": 256, "eos": 3}


def setup(batch, eos):
    rng = numpy.random.default_rng(1)
    pinned = cupy.cuda.alloc_pinned_memory(batch)
    flags = numpy.frombuffer(pinned, numpy.uint8, batch)
    flags[:] = 0
    total = numpy.zeros(batch, numpy.int64)

    def add():  # runs on a CUDA thread: plain Python only, no CUDA calls
        total[:] += flags

    return {"ids": cupy.asarray(rng.integers(0, 8, batch, dtype=numpy.int32)),
            "done": cupy.zeros(batch, cupy.uint8), "pinned": pinned, "flags": flags,
            "total": total, "eos": eos,
            "add": kernels.HostFunction(add)}  # must outlive the graph: kept in state


def step(s):
    stream = cupy.cuda.get_current_stream()
    cupy.equal(s["ids"], s["eos"], out=s["done"].view(cupy.bool_))
    runtime.memcpyAsync(s["pinned"].ptr, s["done"].data.ptr, s["done"].nbytes,
                        runtime.memcpyDeviceToHost, stream.ptr)
    s["add"].launch(stream)


def outputs(s):
    return {"flags": s["flags"], "total": s["total"]}
