"""Broken on purpose: setup() but neither step() nor steps()."""
PARAMS = {"n": 4}


def setup(n):
    return {"n": n}


def outputs(state):
    return {}
