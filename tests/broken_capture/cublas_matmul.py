"""Broken on purpose: a @ b inside step goes to cuBLAS (cublas)."""
import cupy

PARAMS = {"n": 64}


def setup(n):
    a = cupy.ones((n, n), dtype=cupy.float32)
    b = a @ a  # fine eagerly: cuBLAS works outside capture
    return {"a": a, "b": b}


def step(state):
    state["b"] = state["a"] @ state["a"]  # DIAGNOSE-LINE
