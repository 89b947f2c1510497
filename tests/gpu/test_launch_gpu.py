"""GPU tier: accelgraph's kernels under capture get programmatic edges, and keep eager's bits.

Under capture, on compute capability 9.0 and up, the kernels of kernels/ are launched with
programmatic stream serialization (accelgraph_cli/cuda/launch.py): CUDA records each edge
from the kernel before as a programmatic one, and the kernel's wait keeps it from reading
what that kernel has not finished writing. Checked here: the edge types CUDA reports (so a
launch that silently lost its attribute fails), the switch that turns it off, and replays
that read what the kernel before them wrote, compared bit for bit with eager steps.
"""

from __future__ import annotations

import numpy as np
import pytest

from accelgraph_cli import Graph, kernels
from accelgraph_cli.cuda import device as _cuda
from accelgraph_cli.cuda import launch

_PROGRAMMATIC = 1  # cudaGraphDependencyTypeProgrammatic


def _edge_types(graph_handle: int) -> list[int]:
    runtime, _ = _cuda.bindings()
    count = _cuda.check("cudaGraphGetEdges", runtime.cudaGraphGetEdges(graph_handle, 0))[-1]
    found = _cuda.check("cudaGraphGetEdges", runtime.cudaGraphGetEdges(graph_handle, count))
    if len(found) < 4:  # CUDA 12's bindings: (from, to, count), no edge data
        pytest.skip("these CUDA bindings return no edge data (CUDA 13's do)")
    return [int(data.type) for data in found[2][:count]]


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
    cupy.cuda.Device().synchronize()  # the inputs' uploads (made on the legacy stream)
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


def test_dependent_kernels_read_what_the_kernel_before_wrote(cupy, stream, hopper):
    # Jacobi ping-pong: each step reads its neighbours' values, which other blocks of the
    # previous kernel wrote. A kernel that started reading before its wait would see the
    # values of two steps before, and the replay would not keep eager's bits.
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
