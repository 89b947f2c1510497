"""Correct on purpose: an int8 weight kept in a wrapper tensor subclass, as quantization
libraries keep theirs.

Int8Weight is made by torch.Tensor._make_wrapper_subclass: a tensor with no memory of its
own, whose data are the int8 values q and the per-column scale it holds. The step
dequantizes it (q * scale) and multiplies: y = x @ (q * scale), written into y in place.
The guard must find q and scale inside it (the wrapper has no storage to read), and the
graph is right: k replays from the same bytes give what k eager steps give.

Expected: check: ok (exit 0).
"""
import torch

PARAMS = {"batch": 8, "dim": 256}


class Int8Weight(torch.Tensor):
    """A float-looking weight whose data are int8 values and a scale per column."""

    @staticmethod
    def __new__(cls, q, scale):
        return torch.Tensor._make_wrapper_subclass(cls, q.shape, dtype=torch.float32,
                                                   device=q.device)

    def __init__(self, q, scale):
        self.q, self.scale = q, scale

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise NotImplementedError(f"Int8Weight does not run {func}: use .q and .scale")


def setup(batch, dim):
    torch.manual_seed(0)
    q = torch.randint(-127, 128, (dim, dim), dtype=torch.int8, device="cuda")
    scale = torch.rand(dim, device="cuda") / 127
    return {"x": torch.randn(batch, dim, device="cuda"), "w": Int8Weight(q, scale),
            "y": torch.zeros(batch, dim, device="cuda")}


def step(state):
    w = state["w"]
    torch.matmul(state["x"], w.q.float() * w.scale, out=state["y"])
    state["x"].mul_(0.5).add_(state["y"], alpha=0.01)  # the next step reads what this wrote


def outputs(state):
    return {"y": state["y"], "x": state["x"]}
