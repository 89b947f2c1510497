"""Correct on purpose: tests/right_graphs/kv_pool_views.py in PyTorch, with the process-wide
cache pool made under torch.inference_mode() (as an inference server's setup code runs).

One cache tensor [slots, rows, cols] per process; each setup() takes the next free slot (a
view) and the step decays it and adds x, in place, then writes y = 2 * cache[0]. Every
kernel touches only the state's own slot, so k replays from the same bytes give what k eager
steps give. Both states hold slots of one allocation, so the check restores the captured
state array by array, copying each fresh slot into the captured one; it once did so with
Tensor.copy_ outside inference mode, which torch refuses for an inference tensor.

--param inference=false makes the pool under torch.no_grad(); --param bf16=true keeps it in
bfloat16, which CuPy (through which the restore copies raw memory) has no dtype for.

Expected: check: ok (exit 0); it once ended in an internal error (exit 70).
"""
import torch

PARAMS = {"rows": 64, "cols": 1024, "inference": True, "bf16": False}

_SLOTS = 8    # more than the states one run makes at once
_POOL = {}    # (rows, cols, inference) -> the process-wide pool
_NEXT = [0]   # the next slot to hand out (a ring)


def _mode(inference):
    return torch.inference_mode() if inference else torch.no_grad()


def setup(rows, cols, inference, bf16):
    torch.manual_seed(0)
    dtype = torch.bfloat16 if bf16 else torch.float32
    x = torch.randn(rows, cols, device="cuda", dtype=dtype)
    with _mode(inference):
        pool = _POOL.get((rows, cols, inference, bf16))
        if pool is None:
            pool = _POOL[(rows, cols, inference, bf16)] = torch.zeros(
                _SLOTS, rows, cols, device="cuda", dtype=dtype)
        cache = pool[_NEXT[0] % _SLOTS]   # this sequence's slot: a view
        _NEXT[0] += 1
        cache.zero_()
    return {"x": x, "cache": cache, "y": torch.zeros(cols, device="cuda", dtype=dtype),
            "inference": inference}


def step(state):
    with _mode(state["inference"]):
        cache = state["cache"]
        cache.mul_(0.5).add_(state["x"])
        torch.mul(cache[0], 2.0, out=state["y"])


def outputs(state):
    return {"y": state["y"], "cache": state["cache"]}
