"""Broken on purpose: the step does host work only (empty_step), so its graph is empty."""
import cupy
import numpy

PARAMS = {}


def setup():
    return {"x": cupy.ones(8, dtype=cupy.float32), "count": numpy.zeros(1)}


def step(state):  # DIAGNOSE-LINE
    state["count"] += 1
