"""Broken on purpose: a PyTorch step captured on CuPy's stream (torch_as_cupy).

torch launches on its own current stream, so its work runs eagerly during capture, outside
the graph."""
import torch

BACKEND = "cupy"  # on purpose: torch work captured on CuPy's stream

PARAMS = {}


def setup():
    x = torch.arange(1024, dtype=torch.float32, device="cuda")
    y = torch.zeros_like(x)
    torch.mul(x, 2, out=y)  # loads the kernel before capture
    y.zero_()
    return {"x": x, "y": y}


def step(state):
    torch.mul(state["x"], 2, out=state["y"])  # DIAGNOSE-LINE


def outputs(state):
    return {"y": state["y"]}
