"""Broken on purpose: prefilled_side_stream, with the output published under a key that
setup() declares as None.

The state resumes from a checkpoint, so z_buf already holds the step's result (x + 1). The
step computes y on the current stream and z_buf on a side stream never forked from it nor
joined back: that kernel runs during capture, outside the graph, writing z_buf with the
value it already holds; the graph lacks it. The step then publishes the buffer it wrote as
state["z"], which setup() declares up front as None ("no result yet").

outputs() before the step names z as None, so nothing is flipped for it; the warm-up's
outputs are mapped to the first path that reaches their allocation in the warm-up's state,
state["z"] (declared before z_buf), which in the captured state holds None. z_buf is never
flipped, the stray write changes nothing, the guard is blind, and the check passes (z_buf is
restored to x + 1 and never rewritten).

--param declare_z=false leaves the key out of setup(): the control (refused, exit 2).

Expected: capture refused, work ran outside the graph (exit 2).
It once earned "check: ok" (exit 0).
"""
import cupy

PARAMS = {"n": 1024, "declare_z": True}


def setup(n, declare_z):
    x = cupy.arange(n, dtype=cupy.float32)
    state = {"x": x, "y": cupy.zeros(n, dtype=cupy.float32)}
    if declare_z:
        state["z"] = None                     # the buffer the last step wrote (none yet)
    state["z_buf"] = x + 1                    # restored from a checkpoint: the last result
    state["side"] = cupy.cuda.Stream(non_blocking=True)
    cupy.cuda.Device().synchronize()
    return state


def step(state):
    cupy.multiply(state["x"], 2, out=state["y"])
    with state["side"]:
        cupy.add(state["x"], 1, out=state["z_buf"])  # never joined: runs outside the graph
    state["z"] = state["z_buf"]                      # publish what this step wrote


def outputs(state):
    return {"y": state["y"], "z": state["z"]}
