"""CUDA kernels for scenarios: ``from accelgraph_cli import kernels``, then ``kernels.sgemm(...)``.

The public import path scenarios use; the implementation lives in
:mod:`accelgraph_cli.cuda.kernels` (launch wrappers), :mod:`accelgraph_cli.cuda.kernel_loader`
(finding and compiling the .cu sources) and :mod:`accelgraph_cli.cuda.host_function`.
Importing this module does not import CuPy.
"""

from .cuda.host_function import HostFunction
from .cuda.kernel_loader import (
    KERNELS_DIR_ENV,
    KernelError,
    get_kernel,
    kernel_names,
    kernel_source,
    kernels_dir,
    load_module,
    preload,
)
from .cuda.kernels import (
    add_mod1,
    axpby,
    bias_gelu,
    jacobi_step,
    layernorm_rows,
    saxpy,
    sgemm,
    sgemm_bias_gelu,
    sgemm_softmax,
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
    "sgemm_bias_gelu",
    "sgemm_softmax",
    "softmax_rows",
]
