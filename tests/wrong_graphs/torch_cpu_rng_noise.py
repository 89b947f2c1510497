"""Wrong on purpose: global_rng_dropout.py on torch's CPU generator: a noise level drawn with
torch.rand on the host each step, which the graph freezes at the value the capture drew.
After two steps eager's last level is the graph's frozen one. Expected: check FAILED."""

import math

import torch

PARAMS = {"batch": 64, "dim": 1024}


def setup(batch, dim):
    torch.manual_seed(0)  # seeded: eager and replay start equal
    x0 = torch.randn(batch, dim, device="cuda")
    eps = torch.randn(batch, dim, device="cuda")
    return {"x0": x0, "eps": eps, "xt": torch.zeros_like(x0)}


def step(state):
    t = float(torch.rand(()))  # noise level: CPU generator, a host float
    torch.mul(state["x0"], math.sqrt(1.0 - t), out=state["xt"])
    state["xt"].add_(state["eps"], alpha=math.sqrt(t))


def outputs(state):
    return {"xt": state["xt"]}
