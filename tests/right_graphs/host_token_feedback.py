"""Correct on purpose: a two-graph decode loop whose sampled tokens go back through pinned
host memory (as memory_ops.py feeds a graph).

"embed" copies the token ids from a pinned host buffer to the device (a MEMCPY node) and
gathers their embeddings; "sample" picks the next token from h (here: the integer in column
0 of its embedding row) and copies it back to the pinned buffer (MEMCPY DtoH), where the
host scheduler reads it and the next "embed" takes it. Replayed in order, the graphs do
exactly what the steps do.

Checked alone on a fresh state, "sample" writes 0 into the captured state's pinned buffer
(h is zero there). When the check restored only device memory, nothing put the starting
tokens back, so the run of both graphs started from token 0 where eager started from
1..batch, and FAILED on 'h'. The check now gives the captured state's host arrays
(tok_host, a NumPy view of the pinned buffer) back the bytes capture saved.

--param feedback=false leaves the DtoH copy out (the graphs then only read the host buffer).

Expected: check: ok (exit 0).
"""
import cupy
import numpy
from cupy.cuda import runtime

PARAMS = {"batch": 64, "vocab": 1024, "dim": 256, "feedback": True}


def setup(batch, vocab, dim, feedback):
    rng = numpy.random.default_rng(0)
    emb = rng.standard_normal((vocab, dim), dtype=numpy.float32)
    emb[:, 0] = (numpy.arange(vocab) * 7 + 3) % vocab  # "sampling" = column 0 of the row
    pinned = cupy.cuda.alloc_pinned_memory(batch * 4)
    tok_host = numpy.frombuffer(pinned, numpy.int32, batch)
    tok_host[:] = numpy.arange(1, batch + 1)  # the prompt's last tokens
    return {"emb": cupy.asarray(emb), "pinned": pinned, "tok_host": tok_host,
            "tok": cupy.zeros(batch, cupy.int32), "h": cupy.zeros((batch, dim), cupy.float32),
            "feedback": feedback}


def embed(s):
    stream = cupy.cuda.get_current_stream()
    runtime.memcpyAsync(s["tok"].data.ptr, s["pinned"].ptr, s["tok"].nbytes,
                        runtime.memcpyHostToDevice, stream.ptr)
    cupy.take(s["emb"], s["tok"], axis=0, out=s["h"])


def sample(s):
    cupy.copyto(s["tok"], s["h"][:, 0], casting="unsafe")
    if s["feedback"]:
        runtime.memcpyAsync(s["pinned"].ptr, s["tok"].data.ptr, s["tok"].nbytes,
                            runtime.memcpyDeviceToHost, cupy.cuda.get_current_stream().ptr)


def steps(s):
    return {"embed": lambda: embed(s), "sample": lambda: sample(s)}


def outputs(s):
    return {"h": s["h"], "tok": s["tok"]}
