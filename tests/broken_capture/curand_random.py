"""Broken on purpose: cupy.random inside step (curand)."""
import cupy

PARAMS = {}


def setup():
    cupy.random.seed(0)
    return {"x": cupy.random.random(128, dtype=cupy.float32)}


def step(state):
    state["x"] = cupy.random.random(128, dtype=cupy.float32)  # DIAGNOSE-LINE
