"""CUDA kernels for scenarios: ``from accelgraph_cli import kernels``, then ``kernels.sgemm(...)``.

The public import path scenarios use; the implementation lives in
:mod:`accelgraph_cli.cuda.kernels`. Importing this module does not import CuPy.
"""

from .cuda.kernels import (
    KERNELS_DIR_ENV,
    HostFunction,
    KernelError,
    add_mod1,
    axpby,
    bias_gelu,
    get_kernel,
    jacobi_step,
    kernel_names,
    kernel_source,
    kernels_dir,
    layernorm_rows,
    load_module,
    preload,
    saxpy,
    sgemm,
    softmax_rows,
)

__all__ = [
    "KERNELS_DIR_ENV",
    "HostFunction",
    "KernelError",
    "add_mod1",
    "axpby",
    "bias_gelu",
    "get_kernel",
    "jacobi_step",
    "kernel_names",
    "kernel_source",
    "kernels_dir",
    "layernorm_rows",
    "load_module",
    "preload",
    "saxpy",
    "sgemm",
    "softmax_rows",
]
