"""Correct on purpose: two graphs share a workspace the state holds as raw CuPy memory (a
MemoryPointer, as cupy.cuda.alloc returns it), with no array over it.

"accumulate" adds x into the workspace and copies it to y; "emit" writes y = 2 * workspace.
Both read what earlier steps left in the workspace, so each graph's check must start from
eager's bytes there too: the restore copies the raw allocation as it copies arrays. Were it
left out, the replays would start from what earlier replays (and the first check run) left.

Expected: check: ok (exit 0), checked again from the start as well.
"""
import cupy
import numpy

PARAMS = {"n": 4096}


def _view(state):
    return cupy.ndarray(state["x"].shape, dtype=cupy.float32, memptr=state["ws"])


def setup(n):
    rng = numpy.random.default_rng(0)
    ws = cupy.cuda.alloc(n * 4)
    state = {"x": cupy.asarray(rng.standard_normal(n, dtype=numpy.float32)), "ws": ws,
             "y": cupy.zeros(n, dtype=cupy.float32)}
    _view(state).fill(0)
    return state


def accumulate(state):
    view = _view(state)
    cupy.add(view, state["x"], out=view)
    cupy.copyto(state["y"], view)


def emit(state):
    cupy.multiply(_view(state), 2.0, out=state["y"])


def steps(state):
    return {"accumulate": lambda: accumulate(state), "emit": lambda: emit(state)}


def outputs(state):
    return {"y": state["y"]}
