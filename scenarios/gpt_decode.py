"""GPT-style decode step in bf16 (PyTorch): LayerNorm, QKV, attention over a KV cache, MLP.

One decode step of a pre-norm transformer for `batch` sequences, each attending over a
`seq`-token KV cache: per layer LayerNorm -> fused QKV projection -> scaled_dot_product_attention
of the new token against the cache plus itself -> output projection and residual -> LayerNorm ->
MLP (GELU) and residual. This is the step inference servers capture once per batch size: a few
dozen small kernels whose launch cost rivals their run time at small batch.

The cache is read, not updated, so every step computes the same y from the same x: k replays
equal k eager steps. Weights, cache and input are seeded. torch picks the kernels (cuBLAS/nvjet
GEMMs, flash attention, fused elementwise); capture records them all.

Graph: per layer about a dozen kernels (layer_norm, 4 GEMMs, attention, GELU, adds), plus a copy.
"""

import torch
from torch import nn
from torch.nn import functional as F

PARAMS = {"batch": 8, "seq": 512, "dim": 1024, "heads": 16, "layers": 2}


class Block(nn.Module):
    """One pre-norm decoder layer, attending over a given KV cache."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x, cache_k, cache_v):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        keys = torch.cat([cache_k, k], dim=2)  # the cache plus the new token
        values = torch.cat([cache_v, v], dim=2)
        attn = F.scaled_dot_product_attention(q, keys, values)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def setup(batch, seq, dim, heads, layers):
    if dim % heads:
        raise ValueError(f"dim ({dim}) must be a multiple of heads ({heads})")
    torch.manual_seed(0)
    dev, dtype = "cuda", torch.bfloat16
    model = nn.ModuleList(Block(dim, heads) for _ in range(layers)).to(dev, dtype).eval()
    cache = (layers, batch, heads, seq, dim // heads)
    x = torch.randn(batch, 1, dim, device=dev, dtype=dtype)
    return {
        "model": model,
        "cache_k": torch.randn(cache, device=dev, dtype=dtype),
        "cache_v": torch.randn(cache, device=dev, dtype=dtype),
        "x": x,
        "y": torch.empty_like(x),
    }


def step(state):
    with torch.no_grad():
        h = state["x"]
        for i, block in enumerate(state["model"]):
            h = block(h, state["cache_k"][i], state["cache_v"][i])
        state["y"].copy_(h)


def outputs(state):
    return {"y": state["y"]}
