"""Correct on purpose: a ragged batch (values + offsets) whose per-sequence results
outputs() returns as a jagged nested tensor.

Sequences of different lengths are packed into one values tensor [total, dim] with offsets
[batch + 1], as ragged serving code keeps them; the step normalizes every token and applies
a residual scale in place. outputs() presents them as
torch.nested.nested_tensor_from_jagged(values, offsets), one entry per sequence.

A jagged tensor's ragged size is a nested int tied to its offsets tensor: two states built
alike have two offsets tensors, so eager's output has shape (B, j1, D) and the captured
state's (B, j2, D), and j1 != j2. The check once compared the two shapes and reported a
mismatch for a graph that computes every value exactly; nested outputs are now compared
entry by entry.

--param jagged=false returns the values tensor itself.

Expected: check: ok (exit 0).
"""
import torch

PARAMS = {"batch": 8, "dim": 128, "jagged": True}


def setup(batch, dim, jagged):
    torch.manual_seed(0)
    lengths = torch.arange(1, batch + 1) * 5
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)]).cuda()
    total = int(lengths.sum())
    return {"values": torch.randn(total, dim, device="cuda"), "offsets": offsets,
            "gamma": torch.full((dim,), 0.5, device="cuda"), "jagged": jagged}


def step(state):
    v = state["values"]
    normed = torch.nn.functional.layer_norm(v, v.shape[-1:])
    v.mul_(state["gamma"]).add_(normed)


def outputs(state):
    if not state["jagged"]:
        return {"hidden": state["values"]}
    return {"hidden": torch.nested.nested_tensor_from_jagged(state["values"],
                                                             state["offsets"])}
