"""Broken on purpose: prefilled_side_stream, with outputs() reading what the step published.

The step records what it produced in state["results"] ({"y": ..., "z": ...}, the state's own
arrays), and outputs() returns that dict: before the first step there is nothing yet, so it
returns {} (it does not raise). The state resumes from a checkpoint, so z already holds the
step's result when capture begins; a side-stream kernel, never joined to the capture, writes
z with that same value during capture, outside the graph, and the graph lacks it.

Expected: capture refused, work ran outside the graph (exit 2), as for
tests/broken_capture/prefilled_side_stream.py and lazy_output_side_stream.py.
"""
import cupy

PARAMS = {}


def setup():
    x = cupy.arange(1024, dtype=cupy.float32)
    state = {"x": x, "y": cupy.zeros(1024, dtype=cupy.float32),
             "z": x + 1,  # restored from a checkpoint: the last step's result
             "side": cupy.cuda.Stream(non_blocking=True)}
    cupy.cuda.Device().synchronize()
    return state


def step(state):
    cupy.multiply(state["x"], 2, out=state["y"])
    with state["side"]:
        cupy.add(state["x"], 1, out=state["z"])  # DIAGNOSE-LINE
    state["results"] = {"y": state["y"], "z": state["z"]}


def outputs(state):
    return dict(state.get("results", {}))
