"""Broken on purpose: prefilled_side_stream with z held by the last of 16 linked stages, run
with --pool async.

z already holds the step's result when capture begins, and a side-stream kernel never
joined to the capture rewrites it with that value. The state walk must reach the 16th
stage (so z is checksummed and flipped); under --pool async the check fills no output, so
nothing else would see the missing kernel. Expected: capture refused (stray work, exit 2)."""
import cupy

PARAMS = {"stages": 16}


class Stage:
    def __init__(self, index, next_stage):
        self.index = index
        self.next = next_stage
        self.out = None


def _last(state):
    stage = state["head"]
    while stage.next is not None:
        stage = stage.next
    return stage


def setup(stages):
    x = cupy.arange(1024, dtype=cupy.float32)
    y = cupy.zeros(1024, dtype=cupy.float32)
    head = None
    for i in reversed(range(stages)):
        head = Stage(i, head)
    state = {"x": x, "y": y, "head": head, "side": cupy.cuda.Stream(non_blocking=True)}
    last = _last(state)
    last.out = cupy.empty(1024, dtype=cupy.float32)
    cupy.add(x, 1, out=last.out)  # the pipeline's output, restored from a checkpoint
    cupy.multiply(x, 2, out=y)  # compiles the kernel before capture
    y.fill(0)
    cupy.cuda.Device().synchronize()
    return state


def step(state):
    cupy.multiply(state["x"], 2, out=state["y"])
    with state["side"]:
        cupy.add(state["x"], 1, out=_last(state).out)  # runs outside the graph during capture


def outputs(state):
    return {"y": state["y"], "z": _last(state).out}
