"""accelgraph: capture, inspect and replay CUDA graphs.

The library under the `accelgraph` command. ``Graph`` implements the torch.accelerator.Graph
API on CuPy streams; ``TorchGraph`` is the same API on PyTorch's own graph object, for work
written in torch. Importing this package never imports CuPy or torch: that happens at the
first capture, so inspection (show, diff) works on machines with no GPU.
"""

from .cuda.graph import CAPTURE_ERROR_MODES, Graph
from .cuda.pools import graph_pool_handle
from .cuda.torch_graph import TorchGraph
from .enums import Backend, CaptureErrorMode, ExitCode, PoolKind
from .errors import (
    AccelgraphError,
    CaptureError,
    CudaError,
    GraphStateError,
    NoGPUError,
)

__version__ = "0.1.0"

__all__ = [
    "AccelgraphError",
    "Backend",
    "CAPTURE_ERROR_MODES",
    "CaptureError",
    "CaptureErrorMode",
    "CudaError",
    "ExitCode",
    "Graph",
    "GraphStateError",
    "NoGPUError",
    "PoolKind",
    "TorchGraph",
    "graph_pool_handle",
]
