"""Broken on purpose: partial_side_stream with outputs prefilled (prefilled_side_stream).

As partial_side_stream, but setup runs the step once as a warm-up, so the state's outputs
already hold the step's result when capture begins. The side-stream kernel that runs during
capture writes z with the value z already holds."""
import cupy

PARAMS = {}


def setup():
    x = cupy.arange(1024, dtype=cupy.float32)
    state = {"x": x, "y": cupy.zeros(1024, dtype=cupy.float32),
             "z": cupy.zeros(1024, dtype=cupy.float32),
             "side": cupy.cuda.Stream(non_blocking=True)}
    cupy.cuda.get_current_stream().synchronize()  # the zeros are written before the side add
    step(state)  # a warm-up: compiles both kernels, and leaves y and z holding the result
    cupy.cuda.Device().synchronize()
    return state


def step(state):
    cupy.multiply(state["x"], 2, out=state["y"])
    with state["side"]:
        cupy.add(state["x"], 1, out=state["z"])  # DIAGNOSE-LINE


def outputs(state):
    return {"y": state["y"], "z": state["z"]}
