"""Broken on purpose: step() without setup()."""
PARAMS = {"n": 4}


def step(state):
    pass
