"""Broken on purpose: switches to the legacy default stream inside step (legacy_stream)."""
import cupy

PARAMS = {}


def setup():
    x = cupy.ones(256, dtype=cupy.float32)
    x += 1
    return {"x": x}


def step(state):
    with cupy.cuda.Stream.null:
        state["x"] += 1  # DIAGNOSE-LINE
