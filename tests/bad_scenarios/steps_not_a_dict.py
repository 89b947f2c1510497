"""Broken on purpose: steps() returns a list instead of {name: callable}."""
PARAMS = {}


def setup():
    return {}


def steps(state):  # ERROR-LINE
    return [lambda: None]
