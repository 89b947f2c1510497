"""Wrong on purpose: the per-sequence rotary table of a ragged (packed) batch is built on a
side stream that is never joined, and outputs() returns it as a jagged nested tensor.

A prefill step over sequences of different lengths packed into one [total, dim] tensor (as
varlen attention takes them). q is scaled in the graph. The rotary sin table for every packed
token, sin(position * inv_freq), is computed on a side stream "to overlap with it", into a
tensor the step allocates (the graph's own static output). outputs() hands it to the
attention code as torch.nested.nested_tensor_from_jagged(table, offsets): one entry per
sequence. The side stream never waits for nor joins the capturing one: during capture the sin
kernel runs once, eagerly, into that graph allocation, and no replay ever writes it again.

Why it is wrong: the graph lacks the sin kernel (tests/wrong_graphs/torch_rope_side_complex.py
is the same bug with a complex output).

The check once passed it: a jagged output was neither flipped nor filled, and compared
entry by entry the replays' stale table equalled eager's. A nested output's entries are now
filled with the complement of eager's as a dense output is.

Expected: not "check: ok": FAILED, the replays never wrote 'sin' (exit 1).

Control: --param jagged=false returns the table itself (a plain graph allocation): the fill
poisons it and the check says the replays never wrote it (FAILED, exit 1).
"""
import torch

PARAMS = {"seqs": 8, "half": 64, "dim": 128, "jagged": True}


def setup(seqs, half, dim, jagged):
    torch.manual_seed(0)
    lengths = torch.arange(1, seqs + 1) * 16
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)]).cuda()
    positions = torch.cat([torch.arange(n) for n in lengths.tolist()]).float().cuda()
    inv_freq = 1.0 / 10000 ** (torch.arange(half, device="cuda", dtype=torch.float32) / half)
    total = int(lengths.sum())
    return {
        "offsets": offsets,
        "angles": torch.outer(positions, inv_freq),
        "q": torch.randn(total, dim, device="cuda"),
        "q_scaled": torch.zeros(total, dim, device="cuda"),
        "side": torch.cuda.Stream(),
        "jagged": jagged,
    }


def step(state):
    torch.mul(state["q"], state["q"].shape[1] ** -0.5, out=state["q_scaled"])  # in the graph
    table = torch.empty(state["angles"].shape, device="cuda")  # the graph's static output
    with torch.cuda.stream(state["side"]):  # the bug: no wait_stream either way
        torch.sin(state["angles"], out=table)
    state["sin_table"] = table


def outputs(state):
    table = state["sin_table"]
    if state["jagged"]:
        table = torch.nested.nested_tensor_from_jagged(table, state["offsets"])
    return {"q_scaled": state["q_scaled"], "sin": table}
