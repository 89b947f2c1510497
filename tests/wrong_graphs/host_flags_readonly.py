"""Wrong on purpose: host_stop_flags, with the scheduler's view of the pinned flags made
read-only (as a scheduler protects a DMA target from its own host code).

A decode step gathers the next layer's input rows (h = emb[ids]) in the graph. To overlap the
device-to-host copy with the model, it computes done = (ids == eos) on a "copy stream" and
copies it into a pinned buffer that the host scheduler polls. That stream never waits for the
capturing stream nor is joined back, so during capture the compare and the copy run once,
eagerly, and the graph holds no DtoH copy at all: replays never refresh the flags. The
scheduler reads them through a NumPy view of the pinned buffer, made read-only
(``setflags(write=False)``) so that no host code but the DMA can change it. outputs() returns
that view.

Why it is wrong: the graph lacks the flags' compare and copy (eager writes them every step;
a replay writes nothing to the pinned buffer).

The check once passed it: the restore skipped the read-only view and the fill leaves alone
a host array the state holds, so the flags the stray copy wrote at capture stayed, equal to
eager's. The restore now also copies the pinned buffer itself (CuPy's PinnedMemoryPointer,
which the state keeps), so the flags go back to zeros; a read-only array over bytes nothing
restored makes the check "not run".

Expected: not "check: ok": FAILED, done differs (exit 1).

Control: --param readonly=false leaves the view writable (this is then
tests/wrong_graphs/host_stop_flags.py): the restore writes the saved zeros over the captured
flags, the replays never write them, and the check says FAILED (exit 1).
"""
import cupy
import numpy
from cupy.cuda import runtime

PARAMS = {"batch": 256, "vocab": 4096, "dim": 256, "eos": 3, "readonly": True}


def setup(batch, vocab, dim, eos, readonly):
    rng = numpy.random.default_rng(0)
    pinned = cupy.cuda.alloc_pinned_memory(batch)
    done_host = numpy.frombuffer(pinned, numpy.uint8, batch)
    done_host[:] = 0
    if readonly:
        done_host.setflags(write=False)  # the scheduler only reads; the DMA writes it
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
