"""Fooling: a learning-rate schedule kept on the host is frozen by capture.

A common way to break a captured training step. AdamW(capturable=True) keeps its step count
on the GPU, but a Python-float learning rate reaches its kernels as a scalar argument: the
schedule below sets a new rate each step, and the graph keeps the rate of the step it
captured. The fix is to give the optimizer its rate as a CUDA tensor and update that tensor
in place (``group["lr"].fill_(rate)``), so that every replay reads the current rate.
"""

import torch

PARAMS = {"dim": 256, "batch": 32}


def setup(dim, batch):
    torch.manual_seed(5)
    model = torch.nn.Linear(dim, dim).cuda()
    state = {
        "model": model,
        "opt": torch.optim.AdamW(model.parameters(), lr=1e-2, capturable=True),
        "x": torch.randn(batch, dim, device="cuda"),
        "target": torch.randn(batch, dim, device="cuda"),
        "epoch": 0,
    }
    for _ in range(3):  # warm-up: the optimizer's moments, cuBLAS's workspace
        step(state)
    return state


def step(state):
    state["epoch"] += 1
    for group in state["opt"].param_groups:  # exponential decay, on the host
        group["lr"] = 1e-2 * 0.5 ** state["epoch"]
    state["opt"].zero_grad(set_to_none=True)
    torch.nn.functional.mse_loss(state["model"](state["x"]), state["target"]).backward()
    state["opt"].step()


def outputs(state):
    return {"weight": state["model"].weight, "bias": state["model"].bias}
