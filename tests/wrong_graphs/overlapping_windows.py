"""Broken on purpose: partial_side_stream, with the outputs as two windows of a buffer that
another library owns.

The buffer z comes through __cuda_array_interface__ (as RMM, Numba or a C++ extension hand
out memory; cupy.asarray wraps it without copying), once whole and once as its last `tail`
elements (the rows a consumer reads). setup() runs the step once, so z already holds the
result. The step computes y and the head of z on the current stream, and the tail of z on a
side stream that is never forked from it nor joined back: that kernel runs during capture,
outside the graph, and the graph lacks it.

--param separate_windows=false takes the tail as a plain view z[-tail:]: the control.

Expected: capture refused, work ran outside the graph (exit 2), as for
tests/broken_capture/prefilled_side_stream.py; with separate_windows=false too.
"""
import cupy

PARAMS = {"n": 4096, "tail": 1024, "separate_windows": True}


class _Window:
    """Part of a device buffer, exposed as another library exposes its memory."""

    def __init__(self, base, start, count):
        self.base = base  # keeps the buffer alive
        self.__cuda_array_interface__ = {
            "shape": (count,),
            "typestr": "<f4",
            "data": (base.data.ptr + 4 * start, False),
            "version": 3,
        }


def setup(n, tail, separate_windows):
    x = cupy.arange(n, dtype=cupy.float32)
    buf = cupy.zeros(n, dtype=cupy.float32)        # "the other library's" buffer
    z = cupy.asarray(_Window(buf, 0, n))
    z_tail = cupy.asarray(_Window(buf, n - tail, tail)) if separate_windows else z[n - tail:]
    state = {"x": x, "y": cupy.zeros(n, dtype=cupy.float32), "z": z, "z_tail": z_tail,
             "side": cupy.cuda.Stream(non_blocking=True)}
    cupy.cuda.get_current_stream().synchronize()  # the zeros are written before the side add
    step(state)  # a warm-up: compiles the kernels, and leaves y and z holding the result
    cupy.cuda.Device().synchronize()
    return state


def step(state):
    head = state["z"].size - state["z_tail"].size
    cupy.multiply(state["x"], 2, out=state["y"])
    cupy.add(state["x"][:head], 1, out=state["z"][:head])
    with state["side"]:
        cupy.add(state["x"][head:], 1, out=state["z_tail"])  # DIAGNOSE-LINE


def outputs(state):
    return {"y": state["y"], "z": state["z"], "z_tail": state["z_tail"]}
