"""Correct on purpose: a ragged sliding-window KV cache that grows by one row per sequence
each decode step, returned as a jagged nested tensor with holes (offsets + lengths).

Each sequence owns `cap` rows of one [batch * cap, dim] cache (offsets = i * cap, fixed) and
has `lengths[i]` valid rows, starting from its prompt length. A decode step computes each
sequence's new key/value row (kv = tanh(x @ wkv), fed back as the next x), writes it at the
sequence's next slot (the oldest one once the window is full) with index_copy_, and advances
pos and lengths in place. outputs() presents the valid rows as
torch.nested.nested_tensor_from_jagged(cache, offsets, lengths=lengths): the layout
ragged attention takes. Every op is on the capturing stream and reads and writes device
memory only.

Why it is right: the graph records exactly the step's kernels; lengths advance on the device,
in the graph, as eagerly.

The check once failed it: eager's outputs were kept as clone(), and a jagged clone shares
its offsets and lengths, which the step advances in place, so the kept copy grew a row each
step. A jagged output is now copied whole: its values, offsets and lengths each cloned.

Expected: check: ok (exit 0).

Control: --param jagged=false returns the cache buffer and lengths as plain tensors: exit 0.
"""
import torch

PARAMS = {"batch": 8, "dim": 128, "cap": 256, "jagged": True}


def setup(batch, dim, cap, jagged):
    torch.manual_seed(0)
    prompt = torch.arange(1, batch + 1, device="cuda") * 16  # prompt lengths, < cap
    cache = torch.zeros(batch * cap, dim, device="cuda")
    rows = torch.cat([torch.arange(i * cap, i * cap + n) for i, n in enumerate(prompt.tolist())])
    cache[rows.cuda()] = torch.randn(len(rows), dim, device="cuda")  # the prompt's keys
    return {"x": torch.randn(batch, dim, device="cuda"),
            "wkv": torch.randn(dim, dim, device="cuda") / dim ** 0.5,
            "cache": cache, "offsets": torch.arange(batch + 1, device="cuda") * cap,
            "pos": prompt.clone(), "lengths": prompt.clone(), "cap": cap, "jagged": jagged}


def step(s):
    kv = torch.tanh(s["x"] @ s["wkv"])
    s["x"].copy_(kv)
    slot = s["offsets"][:-1] + torch.remainder(s["pos"], s["cap"])  # sliding window
    s["cache"].index_copy_(0, slot, kv)
    s["pos"].add_(1)
    torch.clamp(s["pos"], max=s["cap"], out=s["lengths"])


def outputs(s):
    if not s["jagged"]:
        return {"cache": s["cache"], "lengths": s["lengths"]}
    return {"cache": torch.nested.nested_tensor_from_jagged(s["cache"], s["offsets"],
                                                           lengths=s["lengths"])}
