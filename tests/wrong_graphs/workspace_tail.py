"""Wrong on purpose: the output is the tail of a workspace that every state shares, at bytes
no array of the state reaches, and the step skips writing it while capturing.

setup() hands out the head of one module-level workspace as x; outputs() names the tail. The
eager step writes y = 2x into the tail; under capture it does not, so the graph lacks that
work and its replays never write y. Eager's and the captured state's output are the same
bytes: comparing them proves nothing.

Expected: check not run (exit 1), as for an outputs() that hands both states one buffer.
"""
import cupy

PARAMS = {"n": 4096}
_WS = {}


def setup(n):
    ws = _WS.get(n)
    if ws is None:
        ws = _WS[n] = cupy.zeros(2 * n, dtype=cupy.float32)
    ws[n:] = 0
    x = ws[:n]
    x[...] = cupy.arange(n, dtype=cupy.float32)
    return {"x": x}  # the state reaches only the head of the workspace


def step(state):
    x = state["x"]
    y = _WS[x.size][x.size:]
    cupy.multiply(x, 1.0, out=x)  # keeps the graph non-empty
    if not cupy.cuda.runtime.streamIsCapturing(cupy.cuda.get_current_stream().ptr):
        cupy.multiply(x, 2.0, out=y)  # the bug: skipped under capture


def outputs(state):
    x = state["x"]
    return {"y": _WS[x.size][x.size:]}
