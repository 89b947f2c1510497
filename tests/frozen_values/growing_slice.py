"""A step that works on a slice one element longer each step: capture freezes its length.

``data[:length]`` is a view whose size the host picks: CuPy passes the size and shape inside
the array's argument struct (and sizes the grid by it), so every replay scales the first
step's slice again.
"""

import cupy

PARAMS = {"n": 4096, "start": 1000}


def setup(n, start):
    return {"length": start, "data": cupy.ones(n, dtype=cupy.float32)}


def step(state):
    state["data"][: state["length"]] *= 1.5
    state["length"] += 1


def outputs(state):
    return {"data": state["data"]}
