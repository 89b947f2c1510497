"""Broken on purpose: prefilled_side_stream with one output the step itself creates.

As prefilled_side_stream, the state's z already holds the step's result when capture begins,
and a side-stream kernel, never joined to the capture, writes z with that same value. Here the
step also stores a new array, state["tripled"], so outputs() cannot run before the first
step; the outputs to flip during capture are then named from the warm-up's state, where the
step has run (z is one; tripled is not in the state yet and is not flipped)."""
import cupy

PARAMS = {}


def setup():
    x = cupy.arange(1024, dtype=cupy.float32)
    state = {"x": x, "y": cupy.zeros(1024, dtype=cupy.float32),
             "z": cupy.zeros(1024, dtype=cupy.float32),
             "side": cupy.cuda.Stream(non_blocking=True)}
    cupy.cuda.get_current_stream().synchronize()  # the zeros are written before the side add
    step(state)  # a warm-up: compiles the kernels, and leaves y and z holding the result
    del state["tripled"]  # a state as a checkpoint holds it: the step's own array is not in it
    cupy.cuda.Device().synchronize()
    return state


def step(state):
    cupy.multiply(state["x"], 2, out=state["y"])
    with state["side"]:
        cupy.add(state["x"], 1, out=state["z"])  # DIAGNOSE-LINE
    state["tripled"] = cupy.multiply(state["x"], 3)


def outputs(state):
    return {"y": state["y"], "z": state["z"], "tripled": state["tripled"]}
