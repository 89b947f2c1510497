"""Broken on purpose: a PARAMS value that is not int, float, bool or str."""
PARAMS = {
    "n": 4,
    "shape": (8, 8),  # ERROR-LINE
}


def setup(n, shape):
    return {}


def step(state):
    pass
