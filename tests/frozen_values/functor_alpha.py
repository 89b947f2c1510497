"""Fooling: a host value that reaches a PyTorch kernel inside its functor struct.

``y.add_(x, alpha=count)`` launches an elementwise kernel whose functor holds alpha: a C++
struct, whose bytes the audit cannot judge from their type (a launch leaves some struct
bytes unset), so its effect test decides: the second step run with the first step's functor
computes another ``y``, and the alpha is reported frozen. The fix: keep the scale in a
device tensor (``y.add_(x * scale)``, ``scale`` a CUDA tensor updated in place).
"""

import torch

PARAMS = {"n": 4096}


def setup(n):
    torch.manual_seed(11)
    return {"count": 0, "x": torch.randn(n, device="cuda"), "y": torch.randn(n, device="cuda")}


def step(state):
    state["count"] += 1
    state["y"].add_(state["x"], alpha=float(state["count"]))


def outputs(state):
    return {"y": state["y"]}
