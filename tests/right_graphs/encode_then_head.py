"""Correct on purpose: two graphs, "encode" (h = tanh(x), a new array each step) and "head"
(y = 2 * h, written into y in place).

The encoder rebinds state["h"] to the array it makes, as functional code does; the head reads
whatever state["h"] is. setup() starts h at a placeholder (so that the head can run before
any encode, as a warm start). Replayed in order (encode, head), the graphs reproduce eager
exactly: the head's graph reads the array the encode graph writes, as the eager head reads
the array the eager encode made.

Expected: check: ok (exit 0).
"""
import cupy
import numpy

PARAMS = {"n": 4096}


def setup(n):
    rng = numpy.random.default_rng(0)
    return {
        "x": cupy.asarray(rng.standard_normal(n, dtype=numpy.float32)),
        "h": cupy.asarray(rng.standard_normal(n, dtype=numpy.float32)),  # placeholder
        "y": cupy.zeros(n, dtype=cupy.float32),
    }


def encode(state):
    state["h"] = cupy.tanh(state["x"])


def head(state):
    cupy.multiply(state["h"], 2.0, out=state["y"])


def steps(state):
    return {"encode": lambda: encode(state), "head": lambda: head(state)}


def outputs(state):
    return {"y": state["y"]}
