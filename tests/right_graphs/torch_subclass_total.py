"""Correct on purpose: a running total kept in a torch.Tensor subclass, updated in place.

total += 0.5 * x every step. The total is a tensor of a small subclass (RunningTotal) that
adds a helper method, as code that tags or extends tensors does (bitsandbytes' Params4bit,
Transformer Engine's Float8Tensor, or one's own). It is a CUDA tensor like any other: the graph
updates it in place, so k replays from the same bytes give what k eager steps give.

Expected: check: ok (exit 0).
"""
import torch

PARAMS = {"n": 65536}


class RunningTotal(torch.Tensor):
    """A tensor that knows how to accumulate into itself."""

    def accumulate(self, value, weight):
        return self.add_(value, alpha=weight)


def setup(n):
    torch.manual_seed(0)
    x = torch.randn(n, device="cuda")
    total = torch.zeros(n, device="cuda").as_subclass(RunningTotal)
    return {"x": x, "total": total}


def step(state):
    state["total"].accumulate(state["x"], 0.5)


def outputs(state):
    return {"total": state["total"]}
