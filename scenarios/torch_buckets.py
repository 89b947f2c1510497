"""vLLM-style batch buckets in PyTorch: one graph per batch size 256..1, one shared pool.

Inference servers capture one graph per batch-size bucket (vLLM: 1, 2, 4, 8, then multiples of
8 up to 256 or more) and pad each request up to the next bucket. Every bucket here runs the same
bf16 MLP, gelu(x @ W1 + b1) @ W2 + b2, on the first `b` rows of a max-batch input, its
activations allocated inside the step, and writes its result into the first `b` rows of one
static max-batch output buffer made in setup (as vLLM does: graphs of different sizes never
run at once, so they share their inputs and outputs, and only one holds memory at a time).

POOL = "shared": the buckets are captured largest first into one torch graph pool
(torch.cuda.graph_pool_handle), so each smaller bucket reuses the memory the larger ones freed.
`accelgraph capture torch_buckets` shows the memory each capture added and the total; compare
with `--pool private` to see what sharing saves (the number that decides whether a server still
fits its KV cache after capture). Nothing a step allocates outlives it, so every capture after
the first reuses what the first freed: the shared pool holds about what the largest graph
holds alone. (Keeping each bucket's output alive instead, e.g. in a dict in the state, pins one
more small block per bucket, and torch opens a new 2 MiB segment for them.)

Graphs: `steps()` returns {"batch256": ..., ..., "batch1": ...}; each is GEMM -> GELU -> GEMM
-> a copy into the output buffer. outputs() names each bucket's rows of that buffer.
"""

import torch
from torch.nn import functional as F

PARAMS = {"buckets": "256,128,64,32,16,8,4,2,1", "hidden": 1024}
POOL = "shared"


def setup(buckets, hidden):
    sizes = sorted({int(b) for b in buckets.split(",") if b.strip()}, reverse=True)
    if not sizes or sizes[-1] < 1:
        raise ValueError(f"buckets must be comma-separated positive batch sizes, got {buckets!r}")
    torch.manual_seed(1)
    dev, dtype = "cuda", torch.bfloat16
    ffn = 4 * hidden
    return {
        "sizes": sizes,  # largest first: the capture order
        "x": torch.randn(sizes[0], hidden, device=dev, dtype=dtype),
        "w1": torch.randn(ffn, hidden, device=dev, dtype=dtype) / hidden ** 0.5,
        "b1": torch.randn(ffn, device=dev, dtype=dtype) * 0.1,
        "w2": torch.randn(hidden, ffn, device=dev, dtype=dtype) / ffn ** 0.5,
        "b2": torch.randn(hidden, device=dev, dtype=dtype) * 0.1,
        "out": torch.zeros(sizes[0], hidden, device=dev, dtype=dtype),  # static, all buckets
    }


def mlp(state, batch):
    x = state["x"][:batch]
    h = F.gelu(F.linear(x, state["w1"], state["b1"]))
    state["out"][:batch].copy_(F.linear(h, state["w2"], state["b2"]))


def steps(state):
    # Bind batch per entry (batch=batch), or every lambda would see the last size.
    return {f"batch{b}": (lambda batch=b: mlp(state, batch)) for b in state["sizes"]}


def outputs(state):
    return {f"batch{b}": state["out"][:b] for b in state["sizes"]}
