"""Correct on purpose: nn.functional.dropout on the GPU, torch.manual_seed(0) in setup.

A training-mode dropout layer: y = dropout(x, p). Each eager step draws a fresh mask from
torch's default CUDA generator; each replay of the graph does too (torch's CUDA graphs read
the generator's seed and offset at every replay and advance the offset by what the capture
drew), so k replays from a generator position draw exactly the masks k eager steps draw from
that position. This is what torch.cuda.graph promises and what every training graph with
dropout relies on. setup() seeds, as the README's torch template does.

--param own_generator=true draws the mask from a torch.Generator kept in the state (one per
state, seeded in setup) instead of the process-wide default generator: the control.

Expected: check: ok (exit 0).
"""
import torch
from torch.nn import functional as F

PARAMS = {"n": 65536, "p": 0.5, "own_generator": False}


def setup(n, p, own_generator):
    torch.manual_seed(0)                      # seeded: both states start equal
    x = torch.randn(n, device="cuda")
    gen = None
    if own_generator:
        gen = torch.Generator(device="cuda")
        gen.manual_seed(1)
    return {"x": x, "y": torch.empty_like(x), "p": p, "gen": gen}


def step(state):
    x, p = state["x"], state["p"]
    if state["gen"] is None:
        out = F.dropout(x, p=p, training=True)           # torch's default CUDA generator
    else:
        keep = torch.rand(x.shape, device=x.device, generator=state["gen"]) >= p
        out = x * keep / (1.0 - p)
    state["y"].copy_(out)


def outputs(state):
    return {"y": state["y"]}
