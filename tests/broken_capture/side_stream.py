"""Broken on purpose: the step works on an unjoined side stream (side_stream).

The side stream is never joined to the capturing one: that work runs eagerly during capture
and the graph records nothing."""
import cupy

PARAMS = {}


def setup():
    x = cupy.arange(1024, dtype=cupy.float32)
    y = cupy.zeros(1024, dtype=cupy.float32)
    cupy.multiply(x, 2, out=y)  # compiles the kernel before capture
    y.fill(0)
    return {"x": x, "y": y, "side": cupy.cuda.Stream(non_blocking=True)}


def step(state):
    with state["side"]:
        cupy.multiply(state["x"], 2, out=state["y"])  # DIAGNOSE-LINE


def outputs(state):
    return {"y": state["y"]}
