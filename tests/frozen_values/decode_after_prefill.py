"""Fooling: a frozen value whose effect shows only after the graph captured before it.

Two graphs, run in order: ``prefill`` fills ``h``, and ``decode`` adds ``h`` to ``y``
scaled by a host counter (``add_``'s alpha, inside PyTorch's functor struct). On a fresh
state ``h`` is zeros, so the scale changes nothing until prefill has run: the audit's
effect test replays the graphs captured before ``decode`` first, as the scenario runs
them, and finds the alpha read. The fix: keep the scale in a device tensor.
"""

import torch

PARAMS = {"n": 4096}


def setup(n):
    torch.manual_seed(17)
    return {"count": 0, "x": torch.randn(n, device="cuda"),
            "h": torch.zeros(n, device="cuda"), "y": torch.zeros(n, device="cuda")}


def steps(state):
    def prefill():
        state["h"].copy_(state["x"])

    def decode():
        state["count"] += 1
        state["y"].add_(state["h"], alpha=float(state["count"]))

    return {"prefill": prefill, "decode": decode}


def outputs(state):
    return {"y": state["y"]}
