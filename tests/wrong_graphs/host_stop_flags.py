"""Wrong on purpose: the stop flags the host scheduler polls are computed and copied to
pinned memory on a "copy stream" that is never ordered with the capture, so the graph has no
DtoH copy at all.

The graph gathers the next layer's input rows (h = emb[ids]). On a side stream, to overlap
the device-to-host copy with the model, the step computes done = (ids == eos) and copies it
to a pinned host buffer that outputs() returns (a NumPy view, as memory_ops.py keeps one).
During capture that runs once, eagerly, and the graph never refreshes the flags.

The guard reads device memory only, and the check once restored only device arrays: the
pinned buffer kept the flags the stray copy wrote at capture, which equal eager's every step.
The check's complement fill could not stand in (it wrote a device copy of a NumPy output).

--param host=false copies the flags into a device array the step allocates instead: the fill
poisons it and the check says the replays never wrote it (exit 1).

Expected: not "check: ok": the check gives the captured state's host arrays back the
bytes they held before capture, so done_host keeps its zeros where eager's step wrote flags
(FAILED, exit 1). It once earned "check: ok" (exit 0).
"""
import cupy
import numpy
from cupy.cuda import runtime

PARAMS = {"batch": 256, "vocab": 4096, "dim": 256, "eos": 3, "host": True}


def setup(batch, vocab, dim, eos, host):
    rng = numpy.random.default_rng(0)
    pinned = cupy.cuda.alloc_pinned_memory(batch)
    done_host = numpy.frombuffer(pinned, numpy.uint8, batch)
    done_host[:] = 0
    return {"emb": cupy.asarray(rng.standard_normal((vocab, dim), dtype=numpy.float32)),
            "ids": cupy.asarray(rng.integers(0, 8, batch, dtype=numpy.int32)),
            "h": cupy.zeros((batch, dim), cupy.float32), "pinned": pinned,
            "done_host": done_host, "copy": cupy.cuda.Stream(non_blocking=True),
            "eos": eos, "host": host}


def step(s):
    cupy.take(s["emb"], s["ids"], axis=0, out=s["h"])  # in the graph
    done_dev = None if s["host"] else cupy.empty(s["ids"].size, cupy.uint8)
    with s["copy"]:  # the bug: neither waits for the capturing stream nor is joined to it
        done = (s["ids"] == s["eos"]).view(cupy.uint8)
        dst = s["pinned"].ptr if s["host"] else done_dev.data.ptr
        kind = runtime.memcpyDeviceToHost if s["host"] else runtime.memcpyDeviceToDevice
        runtime.memcpyAsync(dst, done.data.ptr, done.nbytes, kind, s["copy"].ptr)
    s["done_dev"] = done_dev


def outputs(s):
    return {"h": s["h"], "done": s["done_host"] if s["host"] else s["done_dev"]}
