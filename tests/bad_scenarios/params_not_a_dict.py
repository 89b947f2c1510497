"""Broken on purpose: PARAMS built by a call rather than written as a literal dict."""
PARAMS = dict(n=4)  # ERROR-LINE  # noqa: C408


def setup(n):
    return {}


def step(state):
    pass
