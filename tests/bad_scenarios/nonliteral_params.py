"""Broken on purpose: PARAMS holds an expression, which --param could not know the type of."""
import os

PARAMS = {
    "n": 4,
    "size": 1 << int(os.environ.get("SIZE_LOG2", "10")),  # ERROR-LINE
}


def setup(n, size):
    return {}


def step(state):
    pass
