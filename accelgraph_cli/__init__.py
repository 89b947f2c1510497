"""accelgraph: capture, inspect and replay CUDA graphs.

The library under the `accelgraph` command. ``Graph`` implements the torch.accelerator.Graph
API on CuPy streams; ``TorchGraph`` is the same API on PyTorch's own graph object, for work
written in torch. ``load_model`` reads a saved graph (a DOT dump or a JSON model) and
``diff_models`` compares two, as `show` and `diff` do. Importing this package never imports
CuPy or torch: that happens at the first capture, so inspection (show, diff) works on
machines with no GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:  # what type checkers and editors see; at run time the names load lazily
    from .cuda.graph import CAPTURE_ERROR_MODES, Graph
    from .cuda.pools import graph_pool_handle
    from .cuda.torch_graph import TorchGraph
    from .diff.structural import diff_models
    from .dot.load import load_model
    from .enums import Backend, CaptureErrorMode, ExitCode, PoolKind
    from .errors import AccelgraphError, CaptureError, CudaError, GraphStateError, NoGPUError

# Every name loads on first use: importing the package runs nothing, so the `accelgraph`
# command reaches its own Ctrl-C handler (cli.main) at once, and starts without the graph
# classes it may not need.
_LAZY = {
    "AccelgraphError": ".errors",
    "Backend": ".enums",
    "CAPTURE_ERROR_MODES": ".cuda.graph",
    "CaptureError": ".errors",
    "CaptureErrorMode": ".enums",
    "CudaError": ".errors",
    "ExitCode": ".enums",
    "Graph": ".cuda.graph",
    "GraphStateError": ".errors",
    "NoGPUError": ".errors",
    "PoolKind": ".enums",
    "TorchGraph": ".cuda.torch_graph",
    "diff_models": ".diff.structural",
    "graph_pool_handle": ".cuda.pools",
    "load_model": ".dot.load",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


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
    "diff_models",
    "graph_pool_handle",
    "load_model",
]
