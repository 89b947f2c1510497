"""Wrong on purpose: prefill + decode graphs; outputs() reports only the active requests' rows.

decode() appends one position to a ring cache at a host position (prefill resets it to 0), so
its graph freezes position 1: replayed as decode graphs are used (one prefill, then decode
after decode) it rewrites slot 1 where eager moves on to slots 2, 3... (as
tests/wrong_graphs/decode_needs_prefill.py). Here decode does not raise on a fresh state:
outputs() returns the rows of the active requests, which prefill admits, so on a fresh state
every output is empty. decode's alone check is then "not run"; its retry after prefill
FAILS, but that failure is dropped (the "not run" is kept, and not-run per-graph checks are
ignored), and the run in order (prefill, decode, prefill, decode) agrees.

--param report_all_rows=true returns whole arrays: the control (decode FAILED, exit 1).

Expected: check FAILED for decode (exit 1); it once earned "check: ok" (exit 0).
"""
import cupy
import numpy

PARAMS = {"batch": 8, "dim": 1024, "max_len": 16, "report_all_rows": False}


def setup(batch, dim, max_len, report_all_rows):
    rng = numpy.random.default_rng(0)
    return {
        "prompt": cupy.asarray(rng.standard_normal((batch, dim), dtype=numpy.float32)),
        "cache": cupy.zeros((max_len, batch, dim), dtype=cupy.float32),
        "y": cupy.zeros((batch, dim), dtype=cupy.float32),
        "pos": [0],          # host position: frozen into decode's graph at capture
        "active": [0],       # requests admitted by prefill (host bookkeeping)
        "batch": batch,
        "all_rows": report_all_rows,
    }


def prefill(state):
    cupy.copyto(state["cache"][0], state["prompt"])
    state["pos"][0] = 0
    state["active"][0] = state["batch"]


def decode(state):
    state["pos"][0] += 1
    cache = state["cache"]
    p = 1 + (state["pos"][0] - 1) % (cache.shape[0] - 1)   # a ring: slot 0 holds the prompt
    cupy.multiply(cache[p - 1], numpy.float32(0.5), out=cache[p])
    cupy.add(cache[p], state["prompt"], out=cache[p])
    cupy.copyto(state["y"], cache[p])


def steps(state):
    return {"prefill": lambda: prefill(state), "decode": lambda: decode(state)}


def outputs(state):
    n = state["batch"] if state["all_rows"] else state["active"][0]
    return {"y": state["y"][:n], "cache": state["cache"][:, :n]}
