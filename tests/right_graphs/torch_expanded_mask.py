"""Correct on purpose: the step builds a 4-D attention mask as an expanded view, and
outputs() names it.

Each step makes the padding mask from the sequence lengths (on the GPU) and broadcasts it to
[batch, heads, q, k] with .expand(), as Hugging Face's _prepare_4d_attention_mask does, then
masks the scores with it. The mask is a new tensor each step (state["mask"] = ...); graph and
eager compute the same mask and the same masked scores.

Expected: check: ok (exit 0).
"""
import torch

PARAMS = {"batch": 4, "heads": 8, "q": 16, "k": 128}


def setup(batch, heads, q, k):
    torch.manual_seed(0)
    return {
        "lengths": torch.tensor([k, k // 2, k // 4, 1][:batch] + [k] * max(0, batch - 4),
                                device="cuda"),
        "scores": torch.randn(batch, heads, q, k, device="cuda"),
        "y": torch.empty(batch, heads, q, k, device="cuda"),
        "shape": (batch, heads, q, k),
    }


def step(state):
    batch, heads, q, k = state["shape"]
    keep = torch.arange(k, device="cuda")[None, :] < state["lengths"][:, None]   # [batch, k]
    state["mask"] = keep[:, None, None, :].expand(batch, heads, q, k)             # a view
    torch.where(state["mask"], state["scores"], torch.full((), -1e4, device="cuda"),
                out=state["y"])


def outputs(state):
    return {"y": state["y"], "mask": state["mask"]}
