"""Wrong on purpose: a torch module keeps its output as a private plain tensor attribute
(self._out) taken from a module-level cache, so every state's module writes one tensor.

The module scales x by a host call counter (frozen at capture: the graph always multiplies
by 1.0, eager's second step by 2.0). The state walk must find `_out` (a plain tensor
attribute, private by name); the check then sees an output both states share and is not
run. Expected: check not run (exit 1)."""
import torch
from torch import nn

PARAMS = {"n": 4096}

_OUT_CACHE = {}  # size -> output tensor, reused across setups (saves an allocation)


class Scale(nn.Module):
    def __init__(self, out):
        super().__init__()
        self._out = out  # a plain tensor attribute, "private" by name
        self.calls = 0

    def forward(self, x):
        self.calls += 1  # host counter: frozen into the graph at capture
        torch.mul(x, float(self.calls), out=self._out)
        return self._out


def setup(n):
    torch.manual_seed(0)
    x = torch.randn(n, device="cuda")
    out = _OUT_CACHE.get(n)
    if out is None:
        out = _OUT_CACHE[n] = torch.empty(n, device="cuda")
    out.zero_()
    return {"x": x, "head": Scale(out)}


def step(state):
    with torch.no_grad():
        state["head"](state["x"])


def outputs(state):
    return {"y": state["head"]._out}
