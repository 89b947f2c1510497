"""Broken on purpose: a raw cudaMalloc inside a global-mode capture (unsafe_call)."""
import cupy

PARAMS = {}
ERROR_MODE = "global"


def setup():
    x = cupy.ones(256, dtype=cupy.float32)
    x += 1
    return {"x": x, "ptrs": []}


def step(state):
    state["x"] += 1
    state["ptrs"].append(cupy.cuda.runtime.malloc(1 << 20))  # DIAGNOSE-LINE
