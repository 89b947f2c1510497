"""A decode loop that writes each step's row at the next position of a cache.

``cache[position] = ...`` picks the row on the host: capture freezes the address of the
first step's row, and every replay writes that same row again.
"""

import cupy
import numpy

PARAMS = {"rows": 64, "width": 1024}


def setup(rows, width):
    rng = numpy.random.default_rng(7)
    return {"position": 0,
            "cache": cupy.zeros((rows, width), dtype=cupy.float32),
            "token": cupy.asarray(rng.standard_normal(width, dtype=numpy.float32))}


def step(state):
    state["token"] *= 1.5
    state["cache"][state["position"]] = state["token"]
    state["position"] += 1


def outputs(state):
    return {"cache": state["cache"]}
