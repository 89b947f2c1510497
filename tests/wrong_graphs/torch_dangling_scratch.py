"""Wrong on purpose: dangling_scratch.py on torch's caching allocator. The graph writes a
scratch tensor released during capture; the check's eager output may be given that block.

Eagerly each step frees its scratch and allocates a new one (the same block); under capture
the new one comes from the graph's pool and the setup-made one goes back to torch's regular
pool on the capture stream. setup() keeps every state, and a host counter (frozen at 1.0 in
the graph) makes the graph wrong: eager 2*x, replay x. Expected: check FAILED."""
import torch

PARAMS = {"n": 65536}  # 256 KiB: torch's small pool (2 MiB segments)

_KEEP = []  # every state setup() made, kept for the life of the process


def _recycler(first):
    spare = [first]

    def take():
        return spare.pop()

    def give(tensor):
        spare.append(tensor)

    return take, give


def setup(n):
    torch.manual_seed(0)
    y = torch.zeros(n, device="cuda")  # allocated first, on purpose
    x = torch.randn(n, device="cuda")
    scratch = torch.empty(n, device="cuda")
    state = {"x": x, "y": y, "count": [0], "scratch": _recycler(scratch)}
    _KEEP.append(state)
    return state


def step(state):
    take, give = state["scratch"]
    state["count"][0] += 1  # host counter: frozen into the graph at capture
    tmp = take()
    torch.mul(state["x"], float(state["count"][0]), out=tmp)
    state["y"].copy_(tmp)
    n = tmp.numel()
    del tmp  # freed now; eagerly the next line takes this very block again
    give(torch.empty(n, device="cuda"))


def outputs(state):
    return {"y": state["y"]}
