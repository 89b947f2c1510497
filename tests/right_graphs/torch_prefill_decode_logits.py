"""Correct on purpose: prefill and decode graphs, decode returning its logits as a tensor it
makes (the torch.cuda.graphs idiom: the graph's own static output).

prefill writes the KV cache in place; decode attends over it with x and rebinds
state["logits"] to the tensor its matmul makes (setup holds a zero placeholder, so that
outputs() works on any state). Replayed in order, both graphs are right.

Checked alone, prefill (the first graph: no retry after others) was compared on every
output: eager's logits are the fresh state's placeholder, while the captured state's logits
are decode's graph allocation, which the check fills with the complement of the placeholder
and which prefill's replays never touch: "the replays never wrote it", for prefill. Now an
output that eager's steps leave as it was and the replays never write is not a mismatch of
a graph checked alone (the run of both graphs in order compares it): prefill alone writes
no output and is not run alone; with --param cache_out=true (the cache an output too) it is
compared on the cache.

Expected: check: ok (exit 0).
"""
import torch

PARAMS = {"seq": 128, "dim": 256, "vocab": 1024, "cache_out": False}


def setup(seq, dim, vocab, cache_out):
    torch.manual_seed(0)
    return {"prompt": torch.randn(seq, dim, device="cuda"),
            "wk": torch.randn(dim, dim, device="cuda") / dim ** 0.5,
            "wo": torch.randn(dim, vocab, device="cuda") / dim ** 0.5,
            "x": torch.randn(dim, device="cuda"),
            "cache": torch.zeros(seq, dim, device="cuda"),
            "logits": torch.zeros(vocab, device="cuda"), "cache_out": cache_out}


def prefill(s):
    torch.tanh(s["prompt"] @ s["wk"], out=s["cache"])


def decode(s):
    attn = torch.softmax(s["cache"] @ s["x"], dim=0)
    s["logits"] = (attn @ s["cache"]) @ s["wo"]


def steps(s):
    return {"prefill": lambda: prefill(s), "decode": lambda: decode(s)}


def outputs(s):
    out = {"logits": s["logits"]}
    if s["cache_out"]:
        out["cache"] = s["cache"]
    return out
