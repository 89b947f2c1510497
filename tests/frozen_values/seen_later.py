"""Fooling: a frozen value whose effect shows only in a later graph's outputs.

Two graphs, run in order: ``scale`` writes ``h``, ``x`` scaled by a host counter
(``mul``'s scalar, inside PyTorch's functor struct), and ``finish`` copies ``h`` into ``y``,
the one output. ``scale`` alone changes no output: the audit's effect test compares the
outputs after the tried graph and again after the graphs that follow it, and finds the
scale read. The fix: keep the scale in a device tensor.
"""

import torch

PARAMS = {"n": 4096}


def setup(n):
    torch.manual_seed(23)
    return {"count": 0, "x": torch.randn(n, device="cuda"),
            "h": torch.zeros(n, device="cuda"), "y": torch.zeros(n, device="cuda")}


def steps(state):
    def scale():
        state["count"] += 1
        torch.mul(state["x"], float(state["count"]), out=state["h"])

    def finish():
        state["y"].copy_(state["h"])

    return {"scale": scale, "finish": finish}


def outputs(state):
    return {"y": state["y"]}
