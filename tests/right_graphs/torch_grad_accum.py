"""Correct on purpose: gradient accumulation as two graphs, "micro" (forward + backward,
gradients accumulate into .grad) and "update" (AdamW(capturable=True) step, then zero_grad
with set_to_none=False).

The standard way to graph gradient accumulation: replay "micro" once per micro-batch, then
"update" once. The gradients live in each parameter's .grad, allocated by setup's warm-up
steps and kept (set_to_none=False), so both graphs read and write the same .grad tensors at
every replay, exactly as the eager steps do. Replayed in order, the graphs reproduce eager bit
for bit (same model as scenarios/train_step.py: no dropout, no atomics).

--param grads_in_outputs=true also names fc1.weight.grad as an output.

Expected: check: ok (exit 0), both with and without grads_in_outputs.
"""
import torch
from torch import nn
from torch.nn import functional as F

PARAMS = {"batch": 32, "dim": 256, "hidden": 512, "lr": 0.001, "micro_batches": 4,
          "grads_in_outputs": False}


def micro(state):
    model = state["model"]
    loss = F.mse_loss(model(state["x"]), state["target"]) / state["micro_batches"]
    loss.backward()                                  # accumulates into p.grad, in place
    state["loss"].copy_(loss.detach())


def update(state):
    state["opt"].step()
    state["opt"].zero_grad(set_to_none=False)        # keep the .grad tensors, zero them


def setup(batch, dim, hidden, lr, micro_batches, grads_in_outputs):
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)).cuda()
    state = {
        "model": model,
        "opt": torch.optim.AdamW(model.parameters(), lr=lr, capturable=True),
        "x": torch.randn(batch, dim, device="cuda"),
        "target": torch.randn(batch, dim, device="cuda"),
        "loss": torch.zeros((), device="cuda"),
        "micro_batches": micro_batches,
        "grads_in_outputs": grads_in_outputs,
    }
    for _ in range(2):  # warm-up: .grad tensors, optimizer moments, cuBLAS workspaces
        for _ in range(micro_batches):
            micro(state)
        update(state)
    return state


def steps(state):
    return {"micro": lambda: micro(state), "update": lambda: update(state)}


def outputs(state):
    model = state["model"]
    out = {"loss": state["loss"], "fc2.weight": model[2].weight}
    if state["grads_in_outputs"]:
        out["fc1.weight.grad"] = model[0].weight.grad
    return out
