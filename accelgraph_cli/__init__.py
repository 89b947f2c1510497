"""accelgraph: capture, inspect and replay CUDA graphs.

The library under the `accelgraph` command. ``Graph`` implements the torch.accelerator.Graph
API on CuPy streams. Importing this package never imports CuPy: that happens at the first
capture, so inspection (show, diff) works on machines with no GPU.
"""

from .cuda.graph import CAPTURE_ERROR_MODES, Graph
from .cuda.pools import graph_pool_handle
from .enums import CaptureErrorMode, ExitCode, PoolKind
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
    "CAPTURE_ERROR_MODES",
    "CaptureError",
    "CaptureErrorMode",
    "CudaError",
    "ExitCode",
    "Graph",
    "GraphStateError",
    "NoGPUError",
    "PoolKind",
    "graph_pool_handle",
]
