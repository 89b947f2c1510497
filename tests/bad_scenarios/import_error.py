"""Broken on purpose: imports a module that does not exist; fails only when loaded."""
import accelgraph_no_such_module_for_tests  # ERROR-LINE  # noqa: F401

PARAMS = {}


def setup():
    return {}


def step(state):
    pass
