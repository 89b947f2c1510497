"""Wrong on purpose: prefill and decode graphs; decode refuses to run on a state no prefill
has filled, and its graph freezes its position.

decode() multiplies the cache by its position (a host counter that prefill resets to 0), so
its graph freezes position 1. In order (prefill, decode, prefill, decode) that is right;
replayed as decode graphs are used, one prefill then several decodes, the graph repeats
position 1 where eager moves to 2, 3... Decode cannot run alone on a fresh state, so the
check must run it alone after one prefill. Expected: check FAILED for decode."""
import cupy
import numpy

PARAMS = {"n": 4096}


def setup(n):
    rng = numpy.random.default_rng(0)
    return {
        "prompt": cupy.asarray(rng.standard_normal(n, dtype=numpy.float32)),
        "cache": cupy.zeros(n, dtype=cupy.float32),
        "y": cupy.zeros(n, dtype=cupy.float32),
        "pos": [0],
        "filled": [False],
    }


def prefill(state):
    cupy.copyto(state["cache"], state["prompt"])
    state["pos"][0] = 0
    state["filled"][0] = True


def decode(state):
    if not state["filled"][0]:
        raise RuntimeError("decode before prefill: the cache is empty")
    state["pos"][0] += 1  # host position: frozen into the graph at capture
    cupy.multiply(state["cache"], float(state["pos"][0]), out=state["y"])


def steps(state):
    return {"prefill": lambda: prefill(state), "decode": lambda: decode(state)}


def outputs(state):
    return {"y": state["y"], "cache": state["cache"]}
