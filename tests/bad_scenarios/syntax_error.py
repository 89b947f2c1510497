"""Broken on purpose: a def without its colon (the marked line)."""
PARAMS = {"n": 4}


def setup(n):
    return {"n": n}


def step(state)  # ERROR-LINE
    pass
