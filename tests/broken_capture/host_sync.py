"""Broken on purpose: synchronizes the stream inside step (host_sync)."""
import cupy

PARAMS = {}


def setup():
    x = cupy.ones(256, dtype=cupy.float32)
    x += 1
    return {"x": x}


def step(state):
    state["x"] += 1
    cupy.cuda.get_current_stream().synchronize()  # DIAGNOSE-LINE


def outputs(state):
    return {"x": state["x"]}
