"""Broken on purpose: PARAMS names a key that setup() does not take."""
PARAMS = {"width": 4, "depth": 2}  # ERROR-LINE


def setup(width):
    return {}


def step(state):
    pass
