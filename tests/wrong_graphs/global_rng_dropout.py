"""Wrong on purpose: a dropout mask seeded from NumPy's global generator, on the host.

setup() seeds the generator, so every state starts alike, but the warm-up's step draws the
first seed, so the graph freezes the second. Eager's first step draws the first and its
second step the second: after two steps eager's y equals the graph's, though every replay
repeats one mask. The check must compare after each replay. Expected: check FAILED."""

import cupy
import numpy

PARAMS = {"n": 65536, "p": 0.5}

# y = dropout(x) with a mask hashed from (element index, seed): deterministic for one seed
_dropout = cupy.ElementwiseKernel(
    "float32 x, uint32 seed, float32 p",
    "float32 y",
    """
    unsigned int h = ((unsigned int)i * 0x9E3779B9u) ^ seed;
    h ^= h >> 16; h *= 0x85EBCA6Bu; h ^= h >> 13; h *= 0xC2B2AE35u; h ^= h >> 16;
    float u = (float)(h >> 8) * (1.0f / 16777216.0f);
    y = (u < p) ? 0.0f : x / (1.0f - p);
    """,
    "host_seeded_dropout",
)


def setup(n, p):
    numpy.random.seed(0)  # seeded: eager and replay start equal
    x = cupy.asarray(numpy.random.standard_normal(n).astype(numpy.float32))
    return {"x": x, "y": cupy.zeros(n, dtype=cupy.float32), "p": numpy.float32(p)}


def step(state):
    seed = numpy.random.randint(0, 2**31)  # a new mask every step (host value)
    _dropout(state["x"], numpy.uint32(seed), state["p"], state["y"])


def outputs(state):
    return {"y": state["y"]}
