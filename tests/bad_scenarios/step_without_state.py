"""Broken on purpose: step() takes no argument, but the runner passes it the state."""
PARAMS = {}


def setup():
    return {}


def step():  # ERROR-LINE
    pass
