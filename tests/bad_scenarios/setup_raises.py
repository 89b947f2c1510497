"""Broken on purpose: inspects and loads fine, but setup() and step() raise (no CuPy needed)."""
PARAMS = {"n": 4}


def setup(n):
    if n > 3:
        raise ValueError(f"n must be at most 3, got {n}")  # ERROR-LINE setup
    return {"n": n}


def step(state):
    state["missing"]  # ERROR-LINE step
