"""Wrong on purpose: every setup() hands out one pinned host buffer, kept at module level, and
the stop flags the step copies there come from a side stream never joined to the capture.

As host_stop_flags, the graph gathers h = emb[ids] and has no device-to-host copy at all: the
copy ran once, eagerly, during capture. Here the eager state and the captured state hold the
same host buffer, so eager's steps write the flags where the replays' would be read: the
restore cannot give the captured state its own starting bytes, and comparing the buffer with
itself proves nothing.

Expected: not "check: ok": the check says both states hand out one buffer and compares
nothing ("not run", exit 1).
"""
import cupy
import numpy
from cupy.cuda import runtime

PARAMS = {"batch": 256, "vocab": 4096, "dim": 256, "eos": 3}
_PINNED = {}


def setup(batch, vocab, dim, eos):
    rng = numpy.random.default_rng(0)
    if batch not in _PINNED:  # one page-locked buffer for the process, as a server keeps
        pinned = cupy.cuda.alloc_pinned_memory(batch)
        _PINNED[batch] = (pinned, numpy.frombuffer(pinned, numpy.uint8, batch))
    pinned, done_host = _PINNED[batch]
    done_host[:] = 0
    return {"emb": cupy.asarray(rng.standard_normal((vocab, dim), dtype=numpy.float32)),
            "ids": cupy.asarray(rng.integers(0, 8, batch, dtype=numpy.int32)),
            "h": cupy.zeros((batch, dim), cupy.float32), "pinned": pinned,
            "done_host": done_host, "copy": cupy.cuda.Stream(non_blocking=True), "eos": eos}


def step(s):
    cupy.take(s["emb"], s["ids"], axis=0, out=s["h"])  # in the graph
    with s["copy"]:  # the bug: neither waits for the capturing stream nor is joined to it
        done = (s["ids"] == s["eos"]).view(cupy.uint8)
        runtime.memcpyAsync(s["pinned"].ptr, done.data.ptr, done.nbytes,
                            runtime.memcpyDeviceToHost, s["copy"].ptr)


def outputs(s):
    return {"h": s["h"], "done": s["done_host"]}
