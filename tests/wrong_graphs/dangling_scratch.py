"""Wrong on purpose: the graph writes a scratch block that the step released during capture,
and the check's eager output can then be given that block, so every replay writes over it.

Each step takes its scratch from a recycler (two closures the state walk does not search),
computes y through it, drops it and hands the recycler a fresh one: eagerly the same block,
under capture one from the graph's pool, so the setup-made scratch goes back to CuPy's pool
while the graph still writes it. setup() keeps every state it made, so that block is the
only free one of its size when the check's setup() allocates y first. A host counter
(frozen at 1.0 in the graph) makes the graph wrong: eager 2*x, replay x. The check must
compare a copy of eager's result taken before the replays. Expected: check FAILED."""
import cupy
import numpy

PARAMS = {"n": 262144}  # 1 MiB float32 blocks: no other free block has this size

_KEEP = []  # every state setup() made, kept for the life of the process


def _recycler(first):
    spare = [first]

    def take():
        return spare.pop()

    def give(array):
        spare.append(array)

    return take, give


def setup(n):
    y = cupy.zeros(n, dtype=cupy.float32)  # allocated first, on purpose
    rng = numpy.random.default_rng(0)
    x = cupy.asarray(rng.standard_normal(n, dtype=numpy.float32))
    scratch = cupy.empty(n, dtype=cupy.float32)
    state = {"x": x, "y": y, "count": [0], "scratch": _recycler(scratch)}
    _KEEP.append(state)
    return state


def step(state):
    take, give = state["scratch"]
    state["count"][0] += 1  # host counter: frozen into the graph at capture
    tmp = take()
    cupy.multiply(state["x"], float(state["count"][0]), out=tmp)
    cupy.copyto(state["y"], tmp)
    n = tmp.size
    del tmp  # back to the pool now; eagerly the next line takes this very block again
    give(cupy.empty(n, dtype=cupy.float32))


def outputs(state):
    return {"y": state["y"]}
