"""Broken on purpose: forks a side stream and never joins it back (unjoined)."""
import cupy

PARAMS = {}


def setup():
    x = cupy.ones(256, dtype=cupy.float32)
    y = cupy.ones(256, dtype=cupy.float32)
    x += 1
    y += 1
    return {"x": x, "y": y, "side": cupy.cuda.Stream(non_blocking=True)}


def step(state):  # DIAGNOSE-LINE
    origin = cupy.cuda.get_current_stream()
    state["side"].wait_event(origin.record())
    with state["side"]:
        state["y"] += 1
    state["x"] += 1
