"""Correct on purpose: a prefill step over a batch collated on the CPU, Hugging Face style,
with the CPU batch kept in the state for the host's bookkeeping.

setup() builds the batch as a DataLoader's collate_fn does: input_ids, attention_mask, and
position_ids = torch.arange(seq).unsqueeze(0).expand(batch, -1) (the idiom of many
transformers models: one row of positions, broadcast over the batch, no copy). The batch is
moved to the GPU for the model, and the CPU batch stays in the state (the scheduler reads
lengths and ids from it). The step embeds tokens and positions, masks, runs an MLP block and
writes the logits into a state buffer: all on the capturing stream, nothing on the host.

Why it is right: the graph records exactly the step's kernels; the CPU tensors are never
read or written by the step.

The check once crashed on it (exit 70): the host-array restore wrote the expanded view
with copy_, which torch refuses for a tensor whose elements share memory. The restore now
writes one element along each expanded dimension.

Expected: check: ok (exit 0).

Control: --param contiguous=true materializes position_ids (.contiguous()): the restore
copies it and the check passes, exit 0.
"""
import torch

PARAMS = {"batch": 8, "seq": 128, "vocab": 4096, "dim": 256, "contiguous": False}


def collate(batch, seq, vocab, generator):
    """A CPU batch, as a DataLoader's collate_fn builds it."""
    return {
        "input_ids": torch.randint(0, vocab, (batch, seq), generator=generator),
        "attention_mask": torch.ones(batch, seq, dtype=torch.long),
        "position_ids": torch.arange(seq).unsqueeze(0).expand(batch, -1),
    }


def setup(batch, seq, vocab, dim, contiguous):
    host = collate(batch, seq, vocab, torch.Generator().manual_seed(0))
    if contiguous:
        host["position_ids"] = host["position_ids"].contiguous()
    torch.manual_seed(0)
    return {
        "host_batch": host,  # kept for the scheduler: lengths, ids to detokenize
        "batch": {key: value.to("cuda") for key, value in host.items()},
        "tok_emb": torch.randn(vocab, dim, device="cuda") * 0.02,
        "pos_emb": torch.randn(seq, dim, device="cuda") * 0.02,
        "w1": torch.randn(dim, 4 * dim, device="cuda") / dim ** 0.5,
        "w2": torch.randn(4 * dim, dim, device="cuda") / (4 * dim) ** 0.5,
        "logits": torch.zeros(batch, seq, vocab, device="cuda"),
    }


def step(state):
    b = state["batch"]
    h = state["tok_emb"][b["input_ids"]] + state["pos_emb"][b["position_ids"]]
    h = h * b["attention_mask"].unsqueeze(-1)
    h = h + torch.relu(h @ state["w1"]) @ state["w2"]
    state["logits"].copy_(h @ state["tok_emb"].t())


def outputs(state):
    return {"logits": state["logits"]}
