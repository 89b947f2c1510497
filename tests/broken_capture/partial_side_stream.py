"""Broken on purpose: half of the step runs on a side stream (partial_side_stream).

Half of it is on the capturing stream, half on a side stream never joined to it. The graph
holds one kernel; the other ran during capture."""
import cupy

PARAMS = {}


def setup():
    x = cupy.arange(1024, dtype=cupy.float32)
    y = cupy.zeros(1024, dtype=cupy.float32)
    z = cupy.zeros(1024, dtype=cupy.float32)
    cupy.multiply(x, 2, out=y)  # compiles both kernels before capture
    cupy.add(x, 1, out=z)
    y.fill(0)
    z.fill(0)
    return {"x": x, "y": y, "z": z, "side": cupy.cuda.Stream(non_blocking=True)}


def step(state):
    cupy.multiply(state["x"], 2, out=state["y"])
    with state["side"]:
        cupy.add(state["x"], 1, out=state["z"])  # DIAGNOSE-LINE


def outputs(state):
    return {"y": state["y"], "z": state["z"]}
