"""Wrong on purpose: the rotary table (freqs_cis, complex64) is built on a side stream that
is never joined, so the graph lacks that work.

A prefill step, as LLaMA-style code writes it: q is scaled in the graph, and
freqs_cis = polar(1, angles) is made on a side stream "to overlap with it". The output is
allocated in the step (so in the graph's pool) and the side stream never waits for nor joins
the capturing one: during capture the polar kernel runs once, eagerly, into that graph
allocation, and every replay leaves it as it was. It reads only state inputs, so the guard's
checksums do not move, and the check's complement fill once skipped complex tensors
(TorchBackend._fill_complement returned False for them): the replays were compared with the
value the stray kernel left there at capture, which is what eager computes each step.

--param as_real=true names the same output as torch.view_as_real(freqs_cis), float32: the
fill then poisons it and the check says the replays never wrote it (exit 1).

Expected: not "check: ok": the fill now covers complex outputs, so the check says the
replays never wrote freqs_cis (FAILED, exit 1). It once earned "check: ok" (exit 0).
"""
import torch

PARAMS = {"seq": 512, "half": 64, "as_real": False}


def setup(seq, half, as_real):
    torch.manual_seed(0)
    pos = torch.arange(seq, device="cuda", dtype=torch.float32)
    inv_freq = 1.0 / 10000 ** (torch.arange(half, device="cuda", dtype=torch.float32) / half)
    return {
        "angles": torch.outer(pos, inv_freq),
        "mag": torch.ones(seq, half, device="cuda"),
        "q": torch.randn(seq, 2 * half, device="cuda"),
        "q_scaled": torch.zeros(seq, 2 * half, device="cuda"),
        "side": torch.cuda.Stream(),
        "as_real": as_real,
    }


def step(state):
    torch.mul(state["q"], state["q"].shape[1] ** -0.5, out=state["q_scaled"])  # in the graph
    freqs = torch.empty(state["angles"].shape, dtype=torch.complex64, device="cuda")
    with torch.cuda.stream(state["side"]):  # the bug: no wait_stream either way
        torch.polar(state["mag"], state["angles"], out=freqs)
    state["freqs_cis"] = freqs


def outputs(state):
    freqs = state["freqs_cis"]
    return {"q_scaled": state["q_scaled"],
            "freqs_cis": torch.view_as_real(freqs) if state["as_real"] else freqs}
