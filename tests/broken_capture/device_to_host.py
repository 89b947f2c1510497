"""Broken on purpose: reads a result on the host inside step (device_to_host)."""
import cupy

PARAMS = {}


def setup():
    x = cupy.ones(256, dtype=cupy.float32)
    x += 1
    return {"x": x, "total": 0.0}


def step(state):
    state["x"] += 1
    state["total"] = state["x"].get()  # DIAGNOSE-LINE
