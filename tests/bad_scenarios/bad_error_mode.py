"""Broken on purpose: ERROR_MODE is not a capture mode."""
PARAMS = {"n": 4}
ERROR_MODE = "strict"  # ERROR-LINE


def setup(n):
    return {}


def step(state):
    pass
