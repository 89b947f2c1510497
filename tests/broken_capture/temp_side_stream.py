"""Broken on purpose: the step computes a temporary on a side stream and waits for it from
the host (relaxed mode allows the wait), then adds it into y on the capturing stream
(temp_side_stream).

t = 2 * x ran eagerly during capture, into memory the capture's pool gave the step: no array
of the state reaches it, so the state's checksums cannot see the work. The graph holds only
y += t, reading what capture's eager run left in t: replays agree with eager for as long as x
does not change. Only the execution watch (the GPU ran a kernel while capturing) sees it."""
import cupy

PARAMS = {"n": 4096}
ERROR_MODE = "relaxed"


def setup(n):
    x = cupy.arange(n, dtype=cupy.float32)
    y = cupy.zeros(n, dtype=cupy.float32)
    cupy.add(y, cupy.multiply(x, 2), out=y)  # compiles both kernels before capture
    y.fill(0)
    return {"x": x, "y": y, "side": cupy.cuda.Stream(non_blocking=True)}


def step(state):
    side = state["side"]
    with side:
        t = cupy.multiply(state["x"], 2)  # DIAGNOSE-LINE
    side.synchronize()
    cupy.add(state["y"], t, out=state["y"])


def outputs(state):
    return {"y": state["y"]}
