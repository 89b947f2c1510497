"""A whole training step in PyTorch: forward, backward and AdamW(capturable=True), captured.

Captures what a training loop repeats: zero the gradients, run the model, compute the loss,
backpropagate, and let the optimizer update the weights. Replaying the graph trains: each
replay updates the parameters and optimizer moments in place, exactly as the eager step does.

What makes it capturable (as torch's documentation describes): the optimizer is built with
capturable=True, so its step count lives on the GPU; setup runs a few warm-up steps (on the
side stream accelgraph makes current), which creates the optimizer's moment tensors and
cuBLAS workspaces before capture; zero_grad(set_to_none=True) lets backward allocate the
gradients from the graph's pool. The model is two Linear layers and a GELU with an MSE loss:
no dropout and no atomics, so replays match eager bit for bit.

Graph: forward GEMMs and GELU, the loss, their backward kernels, and the fused AdamW update.
"""

import torch
from torch import nn
from torch.nn import functional as F

PARAMS = {"batch": 64, "dim": 512, "hidden": 2048, "lr": 0.001}


def train(state):
    state["opt"].zero_grad(set_to_none=True)
    loss = F.mse_loss(state["model"](state["x"]), state["target"])
    loss.backward()
    state["opt"].step()
    state["loss"].copy_(loss.detach())


def setup(batch, dim, hidden, lr):
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)).cuda()
    state = {
        "model": model,
        "opt": torch.optim.AdamW(model.parameters(), lr=lr, capturable=True),
        "x": torch.randn(batch, dim, device="cuda"),
        "target": torch.randn(batch, dim, device="cuda"),
        "loss": torch.zeros((), device="cuda"),
    }
    for _ in range(3):  # warm-up: optimizer moments, cuBLAS workspaces, autograd's buffers
        train(state)
    return state


def step(state):
    train(state)


def outputs(state):
    return {"loss": state["loss"], "fc2.weight": state["model"][2].weight,
            "fc1.bias": state["model"][0].bias}
