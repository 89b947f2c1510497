"""Broken on purpose: the step writes a workspace the state holds as raw CuPy memory (a
MemoryPointer, as cupy.cuda.alloc returns it) on a side stream never joined to the
capturing one (raw_workspace_side_stream).

y = 2 * x is captured; ws += x ran eagerly during capture, and the graph lacks it. No array
of the state reaches ws: the guard must read the raw memory itself to see the stray write."""
import cupy

PARAMS = {"n": 1024}


def setup(n):
    x = cupy.arange(n, dtype=cupy.float32)
    ws = cupy.cuda.alloc(n * 4)
    view = cupy.ndarray((n,), dtype=cupy.float32, memptr=ws)
    view.fill(0)
    y = cupy.zeros(n, dtype=cupy.float32)
    cupy.multiply(x, 2, out=y)  # compiles both kernels before capture
    cupy.add(view, x, out=view)
    view.fill(0)
    y.fill(0)
    return {"x": x, "y": y, "ws": ws, "side": cupy.cuda.Stream(non_blocking=True)}


def step(state):
    cupy.multiply(state["x"], 2, out=state["y"])
    view = cupy.ndarray(state["x"].shape, dtype=cupy.float32, memptr=state["ws"])
    with state["side"]:
        cupy.add(view, state["x"], out=view)  # DIAGNOSE-LINE


def outputs(state):
    return {"y": state["y"]}
