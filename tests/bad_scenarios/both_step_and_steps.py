"""Broken on purpose: defines both step() and steps()."""
PARAMS = {"n": 4}


def setup(n):
    return {"n": n}


def step(state):
    pass


def steps(state):  # ERROR-LINE
    return {"a": lambda: None}
