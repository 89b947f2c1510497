"""Broken on purpose: POOL names no pool kind (typo for "private")."""
PARAMS = {"n": 4}
POOL = "privte"  # ERROR-LINE


def setup(n):
    return {}


def step(state):
    pass
