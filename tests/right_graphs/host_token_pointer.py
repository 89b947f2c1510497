"""Correct on purpose: a two-graph decode loop whose sampled tokens go back through pinned
host memory, the state keeping the pinned buffer as CuPy hands it out (no NumPy view).

"embed" copies the token ids from a pinned host buffer to the device (a MEMCPY HtoD node) and
gathers their embeddings; "sample" picks the next token from h (the integer in column 0 of
its embedding row) and copies it back to the pinned buffer (MEMCPY DtoH), where the next
"embed" takes it. This is tests/right_graphs/host_token_feedback.py, except that the state
keeps only what memcpyAsync needs: the PinnedMemoryPointer that
cupy.cuda.alloc_pinned_memory returns (setup writes the prompt's tokens through a temporary
NumPy view it does not keep). Replayed in order, the graphs do exactly what the steps do.

Why it is right: every copy and kernel is on the capturing stream; nothing runs eagerly.

The check once failed it: the state walk found no host array in a PinnedMemoryPointer, so
"sample" checked alone left token 0 in the captured state's pinned buffer and the run of
both graphs started from it. The walk now finds CuPy's pinned buffers and the restore copies
their bytes.

Expected: check: ok (exit 0).

Control: --param keep_view=true also keeps the NumPy view in the state (the right graph as
tests/right_graphs/host_token_feedback.py has it): the restore reaches the buffer, exit 0.
"""
import cupy
import numpy
from cupy.cuda import runtime

PARAMS = {"batch": 64, "vocab": 1024, "dim": 256, "keep_view": False}


def setup(batch, vocab, dim, keep_view):
    rng = numpy.random.default_rng(0)
    emb = rng.standard_normal((vocab, dim), dtype=numpy.float32)
    emb[:, 0] = (numpy.arange(vocab) * 7 + 3) % vocab  # "sampling" = column 0 of the row
    pinned = cupy.cuda.alloc_pinned_memory(batch * 4)
    prompt = numpy.frombuffer(pinned, numpy.int32, batch)
    prompt[:] = numpy.arange(1, batch + 1)  # the prompt's last tokens
    state = {"emb": cupy.asarray(emb), "pinned": pinned,
             "tok": cupy.zeros(batch, cupy.int32), "h": cupy.zeros((batch, dim), cupy.float32)}
    if keep_view:
        state["tok_host"] = prompt
    return state


def embed(s):
    stream = cupy.cuda.get_current_stream()
    runtime.memcpyAsync(s["tok"].data.ptr, s["pinned"].ptr, s["tok"].nbytes,
                        runtime.memcpyHostToDevice, stream.ptr)
    cupy.take(s["emb"], s["tok"], axis=0, out=s["h"])


def sample(s):
    cupy.copyto(s["tok"], s["h"][:, 0], casting="unsafe")
    runtime.memcpyAsync(s["pinned"].ptr, s["tok"].data.ptr, s["tok"].nbytes,
                        runtime.memcpyDeviceToHost, cupy.cuda.get_current_stream().ptr)


def steps(s):
    return {"embed": lambda: embed(s), "sample": lambda: sample(s)}


def outputs(s):
    return {"h": s["h"], "tok": s["tok"]}
