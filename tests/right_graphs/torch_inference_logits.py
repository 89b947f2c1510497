"""Correct on purpose: a decode head run under torch.inference_mode(), its probabilities a new
tensor each step (state["probs"] = ...), as Hugging Face-style code returns its outputs.

inference_mode is what PyTorch recommends for inference (vLLM's and HF generate's steps run
in it). The graph computes exactly what the eager step computes. But the probabilities the
captured state holds are graph-allocated inference tensors, and the check fills such an
output with the complement of eager's values before the replays, writing into it in place
outside inference mode, which torch refuses ("Inplace update to inference tensor outside
InferenceMode is not allowed"): an internal error.

--param mode=no_grad runs the same step under torch.no_grad(): the control (check: ok).

Expected: check: ok (exit 0); it once ended in an internal error (exit 70).
"""
import torch
from torch import nn

PARAMS = {"batch": 8, "dim": 1024, "vocab": 4096, "mode": "inference"}


def setup(batch, dim, vocab, mode):
    if mode not in ("inference", "no_grad"):
        raise ValueError(f"mode must be inference or no_grad, not {mode!r}")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, vocab))
    model = model.to("cuda").eval()
    return {"model": model, "x": torch.randn(batch, dim, device="cuda"), "mode": mode}


def step(state):
    context = torch.inference_mode() if state["mode"] == "inference" else torch.no_grad()
    with context:
        logits = state["model"](state["x"])
        state["probs"] = torch.softmax(logits, dim=-1)


def outputs(state):
    return {"probs": state["probs"]}
