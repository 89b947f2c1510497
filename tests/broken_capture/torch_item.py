"""Broken on purpose: a PyTorch step reads a value on the host with .item() (torch_item)."""
import torch

PARAMS = {}


def setup():
    return {"x": torch.arange(16, dtype=torch.float32, device="cuda"),
            "y": torch.zeros(16, device="cuda")}


def step(state):
    scale = state["x"].sum().item()  # DIAGNOSE-LINE
    torch.mul(state["x"], scale, out=state["y"])


def outputs(state):
    return {"y": state["y"]}
