"""GPU tier: accelgraph's kernels under capture get programmatic edges, and keep eager's bits.

Under capture, on compute capability 9.0 and up, the kernels of kernels/ are launched with
programmatic stream serialization (accelgraph_cli/cuda/launch.py): CUDA records each edge
from the kernel before as a programmatic one, and the kernel's wait keeps it from reading
what that kernel has not finished writing. Checked here: the edge types CUDA reports (so a
launch that silently lost its attribute fails), the switch that turns it off, replays bit
for bit eager's, a plain edge after a memset, and the wait itself, against a writer that lets
the next kernel start early (with a control that shows the race it prevents).
"""

from __future__ import annotations

import numpy as np
import pytest

from accelgraph_cli import Graph, kernels
from accelgraph_cli.cuda import launch
from accelgraph_cli.cuda.live import graph_edges
from accelgraph_cli.errors import CudaError

_PROGRAMMATIC = 1  # cudaGraphDependencyTypeProgrammatic


def _edge_types(graph_handle: int) -> list[int]:
    try:
        edges = graph_edges(graph_handle)
    except CudaError as exc:
        # CUDA 12's bindings before 12.3 have no call that returns the edges' data
        if exc.error_name == "cudaErrorLossyQuery":
            pytest.skip(f"these CUDA bindings cannot read programmatic edges ({exc})")
        raise
    if edges and edges[0][2] is None:
        pytest.skip("these CUDA bindings give no edge data")
    return [kind for _, _, kind in edges]


@pytest.fixture
def hopper(cupy):
    if int(cupy.cuda.Device().compute_capability) < 90:
        pytest.skip("programmatic dependent launch needs compute capability 9.0 or later")
    if launch._driver() is None:
        pytest.skip("libcuda.so.1 has no cuLaunchKernelEx")


def _decode_step(cupy):
    rng = np.random.default_rng(3)
    x = cupy.asarray(rng.standard_normal((8, 1024), dtype=np.float32))
    w1 = cupy.asarray(rng.standard_normal((1024, 4096), dtype=np.float32) / np.float32(32))
    b1 = cupy.asarray(rng.standard_normal(4096, dtype=np.float32))
    w2 = cupy.asarray(rng.standard_normal((4096, 1024), dtype=np.float32) / np.float32(64))
    out = {}

    def step():
        h = kernels.sgemm_bias_gelu(x, w1, b1, cupy.empty((8, 4096), dtype=cupy.float32))
        logits = cupy.empty((8, 1024), dtype=cupy.float32)
        out["probs"] = kernels.sgemm_softmax(h, w2, logits, cupy.empty_like(logits))
        out["logits"] = logits

    return step, out


@pytest.mark.parametrize("enabled", [True, False])
def test_captured_kernels_get_programmatic_edges_and_eager_bits(cupy, stream, hopper,
                                                                monkeypatch, enabled):
    monkeypatch.setattr(launch, "_ENABLED", enabled)
    step, out = _decode_step(cupy)
    cupy.cuda.Device().synchronize()  # the inputs' uploads have landed
    step()
    eager = {key: cupy.asnumpy(value) for key, value in out.items()}
    graph = Graph(keep_graph=True)
    with graph:
        step()
    # four kernels in a chain: two GEMMs, each followed by its split-K reduction
    types = _edge_types(graph.graph_handle)
    assert len(types) == 3
    assert types == [_PROGRAMMATIC if enabled else 0] * 3
    graph.replay()
    for key, value in out.items():
        replayed = cupy.asnumpy(value)
        assert replayed.view(np.uint32).tolist() == eager[key].view(np.uint32).tolist(), key


def test_dependent_kernels_keep_eager_bits(cupy, stream, hopper):
    # Jacobi ping-pong: each step reads its neighbours' values, which other blocks of the
    # previous kernel wrote; 32 programmatic edges in a row, the replay bit for bit eager's.
    rng = np.random.default_rng(5)
    start = rng.standard_normal((2048, 2048), dtype=np.float32)
    a, b = cupy.asarray(start), cupy.empty((2048, 2048), dtype=cupy.float32)
    cupy.cuda.Device().synchronize()

    def step():
        for _ in range(16):
            kernels.jacobi_step(a, b)
            kernels.jacobi_step(b, a)

    step()
    eager = cupy.asnumpy(a)
    a.set(start)
    graph = Graph(keep_graph=True)
    with graph:
        step()
    assert set(_edge_types(graph.graph_handle)) == {_PROGRAMMATIC}
    graph.replay()
    assert cupy.asnumpy(a).view(np.uint32).tolist() == eager.view(np.uint32).tolist()


# A writer that lets the kernel after it launch at once, then spins about a millisecond
# before it writes: the kernel after it runs beside it, and only its wait orders the two.
_RACE = r"""
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define WAIT_FOR_PRIOR_GRID() asm volatile("griddepcontrol.wait;" ::: "memory")
#define LAUNCH_DEPENDENTS() asm volatile("griddepcontrol.launch_dependents;")
#else
#define WAIT_FOR_PRIOR_GRID() ((void)0)
#define LAUNCH_DEPENDENTS() ((void)0)
#endif

extern "C" __global__ void late_writer(int* flag, int cycles)
{
    WAIT_FOR_PRIOR_GRID();
    LAUNCH_DEPENDENTS();
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
    *flag = 1;
}

extern "C" __global__ void reader(const int* flag, int* seen)
{
    WAIT_FOR_PRIOR_GRID();
    *seen = *flag;
}

extern "C" __global__ void hasty_reader(const int* flag, int* seen)
{
    *seen = *flag;
}
"""


def _race_graph(cupy, reader_name):
    writer = launch.Launcher(cupy.RawKernel(_RACE, "late_writer"), True)
    # (told it waits, for the control: the launch it gets is the one a waiting kernel gets)
    reader = launch.Launcher(cupy.RawKernel(_RACE, reader_name), True)
    for each in (writer, reader):
        each.kernel.compile()  # compiled and loaded now: module loading is no capture work
    flag = cupy.zeros(1, dtype=cupy.int32)
    seen = cupy.full(1, -1, dtype=cupy.int32)
    graph = Graph(keep_graph=True)
    with graph:
        writer((1,), (1,), (flag, np.int32(2_000_000)))
        reader((1,), (1,), (flag, seen))
    return graph, flag, seen


def _replays_seen(cupy, graph, flag, seen, times=5):
    found = []
    for _ in range(times):
        flag.fill(0)
        graph.replay()
        found.append(int(seen.get()[0]))
    return found


def test_the_wait_orders_a_kernel_after_one_that_lets_it_start_early(cupy, stream, hopper):
    graph, flag, seen = _race_graph(cupy, "reader")
    assert _edge_types(graph.graph_handle) == [_PROGRAMMATIC]
    assert _replays_seen(cupy, graph, flag, seen) == [1] * 5
    # The control: the same launch of a kernel without the wait reads the flag before the
    # writer has set it, so the test above would see a wait that did not hold
    graph, flag, seen = _race_graph(cupy, "hasty_reader")
    assert 0 in _replays_seen(cupy, graph, flag, seen)


def test_a_kernel_after_a_memset_gets_a_plain_edge(cupy, stream, hopper):
    kernels.preload("elementwise.cu")
    y = cupy.ones(1 << 20, dtype=cupy.float32)
    cupy.cuda.Device().synchronize()
    graph = Graph(keep_graph=True)
    with graph:
        cupy.cuda.runtime.memsetAsync(y.data.ptr, 0, y.nbytes, stream.ptr)
        kernels.add_mod1(y, 0.25)
        kernels.add_mod1(y, 0.25)
    assert sorted(_edge_types(graph.graph_handle)) == [0, _PROGRAMMATIC]
    graph.replay()
    assert (cupy.asnumpy(y) == np.float32(0.5)).all()
