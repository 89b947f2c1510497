"""CUDA kernels for scenarios: load the .cu sources in kernels/ and launch them from Python.

Every launch wrapper here enqueues on CuPy's *current* stream and never synchronizes, so the
same call works eagerly and inside a CUDA graph capture. Kernels compile once per process
(NVRTC through ``cupy.RawModule``; CuPy's on-disk cache makes later processes fast).

Compile and load kernels *before* capturing (a scenario's ``setup`` calls :func:`preload`):
module loading is not a stream operation and is not something to do under capture.

CuPy is imported inside the functions, so importing this module costs nothing on a machine
without a GPU.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..bundled import kernels_folder
from ..errors import CudaError

KERNELS_DIR_ENV = "ACCELGRAPH_KERNELS"
"""Environment variable that overrides where the .cu sources are looked up (read when a
module is loaded; a kernel already looked up in this process stays as it was)."""

_THREADS = 256  # 1-D kernels: threads per block
_GEMM_TILE = 16  # must match GEMM_TILE in kernels/gemm.cu
_ROW_BLOCK = 256  # must match ROW_BLOCK in kernels/softmax.cu
_STENCIL_BLOCK = 16  # jacobi_step block edge
_INT32_MAX = 2**31 - 1

_KERNEL_NAME = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(')


class KernelError(RuntimeError):
    """A kernel source is missing or does not compile; the message names the .cu file."""


def kernels_dir() -> Path:
    """The folder holding the .cu sources: $ACCELGRAPH_KERNELS, else the bundled kernels/
    (package data in an installed accelgraph, the top-level kernels/ in a source checkout)."""
    return _kernels_dir(os.environ.get(KERNELS_DIR_ENV, ""))


@functools.cache
def _kernels_dir(override: str) -> Path:
    # Cached: get_kernel runs on every launch, and resolving a path costs system calls.
    if override:
        return Path(override).expanduser().resolve()
    return kernels_folder()


def kernel_source(filename: str) -> str:
    """The CUDA C++ text of ``filename`` (e.g. ``"gemm.cu"``) from :func:`kernels_dir`."""
    return _read_source(kernels_dir(), filename)


def _read_source(folder: Path, filename: str) -> str:
    path = folder / filename
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        available = sorted(p.name for p in path.parent.glob("*.cu"))
        raise KernelError(
            f"{path}: no such kernel source; available in {path.parent}: "
            f"{', '.join(available) or 'none'} (set {KERNELS_DIR_ENV} to use another folder)"
        ) from None


def kernel_names(filename: str) -> list[str]:
    """The ``extern "C" __global__`` kernel names defined in ``filename``, in source order."""
    return _KERNEL_NAME.findall(kernel_source(filename))


def load_module(filename: str, name_expressions=(), options=()) -> Any:
    """Compile ``kernels/<filename>`` into a ``cupy.RawModule`` and load it on the device.

    Cached per process (per source folder, file, name expressions and options): the first call
    runs NVRTC (or reads CuPy's disk cache) and loads the module; later calls are a dict
    lookup. ``name_expressions`` are C++ template instantiations to export (they need a
    ``-std=c++NN`` option, which is added when missing); ``options`` go to NVRTC.
    Raises :class:`KernelError` with the compiler log when the source does not compile.
    """
    return _load_module(kernels_dir(), filename, tuple(name_expressions), tuple(options))


@functools.cache
def _load_module(folder: Path, filename: str, name_expressions: tuple, options: tuple) -> Any:
    import cupy
    from cupy.cuda.compiler import CompileException

    source = _read_source(folder, filename)
    if name_expressions and not any("-std=c++" in option for option in options):
        options = options + ("-std=c++17",)
    module = cupy.RawModule(
        code=source, options=options, name_expressions=name_expressions or None
    )
    try:
        module.compile()  # compile and load now, not lazily at the first (maybe captured) launch
    except CompileException as error:
        raise KernelError(f"{folder / filename} failed to compile:\n{error}") from error
    return module


_KERNELS: dict[tuple[str, str], Any] = {}


def get_kernel(filename: str, name: str) -> Any:
    """The kernel ``name`` from ``kernels/<filename>`` as a loaded ``cupy.RawKernel`` (cached).

    Call it as ``kernel(grid, block, args, shared_mem=0)``: it launches on the current stream.
    Scalars in ``args`` must be NumPy scalars of the C type (``numpy.float32``,
    ``numpy.int32``): a Python float would be passed as a double.
    """
    # Runs on every launch: one dict lookup, so eager timings measure the launch, not this.
    # (So $ACCELGRAPH_KERNELS is read when a kernel is first looked up, not on every launch.)
    kernel = _KERNELS.get((filename, name))
    if kernel is None:
        module = load_module(filename)
        kernel = _KERNELS[(filename, name)] = module.get_function(name)
    return kernel


def preload(*filenames: str) -> None:
    """Compile, load and look up every kernel of each file, so that nothing loads under capture.

    Scenarios call this in ``setup``: e.g. ``kernels.preload("gemm.cu", "softmax.cu")``.
    """
    for filename in filenames:
        for name in kernel_names(filename):
            get_kernel(filename, name)


# --------------------------------------------------------------------------- launch helpers


def _check_f32(name: str, array: Any, ndim: int) -> None:
    import numpy

    if array.dtype != numpy.float32:
        raise ValueError(f"{name} must be float32, got {array.dtype}")
    if array.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {array.shape}")
    if not array.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous (take a copy with cupy.ascontiguousarray)")
    if array.size > _INT32_MAX:
        raise ValueError(f"{name} has {array.size} elements; the kernels index with int32")


def _blocks(n: int, threads: int = _THREADS) -> tuple[int]:
    return ((n + threads - 1) // threads,)


def sgemm(a, b, c, alpha: float = 1.0, beta: float = 0.0):
    """C = alpha * A @ B + beta * C with the tiled kernel of kernels/gemm.cu; returns ``c``.

    ``a`` (M, K), ``b`` (K, N), ``c`` (M, N): float32, C-contiguous. With ``beta == 0`` the old
    contents of ``c`` are ignored, so ``c`` may come from ``cupy.empty``. One launch of
    ceil(N/16) x ceil(M/16) blocks of 16 x 16 threads. Use this rather than ``a @ b``: cuBLAS
    cannot be captured from CuPy.
    """
    import numpy

    for name, array in (("a", a), ("b", b), ("c", c)):
        _check_f32(name, array, 2)
    m, k = a.shape
    k_b, n = b.shape
    if k_b != k or c.shape != (m, n):
        raise ValueError(f"sgemm shapes do not match: a {a.shape} @ b {b.shape} -> c {c.shape}")
    if m == 0 or n == 0:
        return c
    grid = ((n + _GEMM_TILE - 1) // _GEMM_TILE, (m + _GEMM_TILE - 1) // _GEMM_TILE)
    get_kernel("gemm.cu", "sgemm_tiled")(
        grid,
        (_GEMM_TILE, _GEMM_TILE),
        (a, b, c, numpy.int32(m), numpy.int32(n), numpy.int32(k),
         numpy.float32(alpha), numpy.float32(beta)),
    )
    return c


def bias_gelu(x, bias, out=None):
    """out = gelu_tanh(x + bias), bias broadcast over rows; in place on ``x`` by default.

    ``x`` and ``out`` (rows, cols), ``bias`` (cols,): float32, C-contiguous. Returns ``out``.
    """
    import numpy

    out = x if out is None else out
    _check_f32("x", x, 2)
    _check_f32("bias", bias, 1)
    _check_f32("out", out, 2)
    rows, cols = x.shape
    if bias.shape != (cols,) or out.shape != x.shape:
        raise ValueError(f"bias_gelu shapes: x {x.shape}, bias {bias.shape}, out {out.shape}")
    if x.size == 0:
        return out
    get_kernel("gemm.cu", "bias_gelu")(
        _blocks(x.size), (_THREADS,), (x, bias, out, numpy.int32(rows), numpy.int32(cols))
    )
    return out


def saxpy(a: float, x, y):
    """y = a * x + y in place (kernels/saxpy.cu); returns ``y``. 1-D float32 vectors."""
    import numpy

    _check_f32("x", x, 1)
    _check_f32("y", y, 1)
    if x.shape != y.shape:
        raise ValueError(f"saxpy shapes differ: x {x.shape}, y {y.shape}")
    if y.size == 0:
        return y
    # The kernel strides over the grid, so capping it (1M threads) still covers any n.
    grid = (min(_blocks(y.size)[0], 4096),)
    get_kernel("saxpy.cu", "saxpy")(
        grid, (_THREADS,), (numpy.float32(a), x, y, numpy.int32(y.size))
    )
    return y


def add_mod1(x, c: float):
    """x = frac(x + c) in place (kernels/elementwise.cu); returns ``x``. Any-shape contiguous."""
    import numpy

    _check_f32("x", x, x.ndim)
    if x.size == 0:
        return x
    get_kernel("elementwise.cu", "add_mod1")(
        _blocks(x.size), (_THREADS,), (x, numpy.float32(c), numpy.int32(x.size))
    )
    return x


def axpby(a: float, x, b: float, y, out):
    """out = a * x + b * y, element-wise (kernels/elementwise.cu); ``out`` may alias x or y."""
    import numpy

    for name, array in (("x", x), ("y", y), ("out", out)):
        _check_f32(name, array, array.ndim)
    if not (x.shape == y.shape == out.shape):
        raise ValueError(f"axpby shapes differ: x {x.shape}, y {y.shape}, out {out.shape}")
    if out.size == 0:
        return out
    get_kernel("elementwise.cu", "axpby")(
        _blocks(out.size),
        (_THREADS,),
        (numpy.float32(a), x, numpy.float32(b), y, out, numpy.int32(out.size)),
    )
    return out


def softmax_rows(x, out=None):
    """Row-wise softmax of a (rows, cols) matrix into ``out`` (in place by default).

    One block of 256 threads per row (kernels/softmax.cu). Returns ``out``.
    """
    import numpy

    out = x if out is None else out
    _check_f32("x", x, 2)
    _check_f32("out", out, 2)
    if out.shape != x.shape:
        raise ValueError(f"softmax_rows shapes differ: x {x.shape}, out {out.shape}")
    rows, cols = x.shape
    if x.size == 0:
        return out
    get_kernel("softmax.cu", "softmax_rows")(
        (rows,), (_ROW_BLOCK,), (x, out, numpy.int32(rows), numpy.int32(cols))
    )
    return out


def layernorm_rows(x, gamma, beta, out=None, eps: float = 1e-5):
    """Row-wise LayerNorm: (x - mean) / sqrt(var + eps) * gamma + beta, per row of ``x``.

    ``x``/``out`` (rows, cols), ``gamma``/``beta`` (cols,). One block of 256 threads per row
    (kernels/softmax.cu). In place by default; returns ``out``.
    """
    import numpy

    out = x if out is None else out
    _check_f32("x", x, 2)
    _check_f32("gamma", gamma, 1)
    _check_f32("beta", beta, 1)
    _check_f32("out", out, 2)
    rows, cols = x.shape
    if out.shape != x.shape or gamma.shape != (cols,) or beta.shape != (cols,):
        raise ValueError(
            f"layernorm_rows shapes: x {x.shape}, gamma {gamma.shape}, beta {beta.shape}, "
            f"out {out.shape}"
        )
    if x.size == 0:
        return out
    get_kernel("softmax.cu", "layernorm_rows")(
        (rows,),
        (_ROW_BLOCK,),
        (x, gamma, beta, out, numpy.int32(rows), numpy.int32(cols), numpy.float32(eps)),
    )
    return out


def jacobi_step(src, dst):
    """One 5-point Jacobi iteration src -> dst on a 2-D grid, boundary copied (stencil.cu).

    ``src`` and ``dst`` (ny, nx) float32, distinct buffers. Returns ``dst``.
    """
    import numpy

    _check_f32("src", src, 2)
    _check_f32("dst", dst, 2)
    if src.shape != dst.shape:
        raise ValueError(f"jacobi_step shapes differ: src {src.shape}, dst {dst.shape}")
    if src.data.ptr == dst.data.ptr:
        raise ValueError("jacobi_step needs two buffers: src and dst are the same memory")
    ny, nx = src.shape
    if src.size == 0:
        return dst
    edge = _STENCIL_BLOCK
    grid = ((nx + edge - 1) // edge, (ny + edge - 1) // edge)
    get_kernel("stencil.cu", "jacobi_step")(
        grid, (edge, edge), (src, dst, numpy.int32(ny), numpy.int32(nx))
    )
    return dst


# --------------------------------------------------------------------------- host functions

# CUhostFn: void (*)(void* user_data). ctypes takes the GIL when CUDA calls it.
_HOST_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@functools.cache
def _libcuda() -> Any:
    name = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
    lib = ctypes.CDLL(name)
    lib.cuLaunchHostFunc.argtypes = [ctypes.c_void_p, _HOST_FN, ctypes.c_void_p]
    lib.cuLaunchHostFunc.restype = ctypes.c_int
    return lib


class HostFunction:
    """A Python callable that can be enqueued on a stream and captured as a graph HOST node.

    Why not ``cupy.cuda.Stream.launch_host_func``: CuPy hands CUDA a reference that its
    trampoline releases after the *first* call. Eagerly that is right; in a graph the host node
    runs on every replay, so the second replay would use a freed Python object. Here the
    C callback is owned by this object, which must outlive every graph that calls it (keep it
    in the scenario state).

    The callback runs on a CUDA driver thread with the GIL held; it must not call CUDA
    (no CuPy) and should be quick: the stream waits for it.
    """

    def __init__(self, callback: Callable[[], None]):
        self.callback = callback
        self._c_callback = _HOST_FN(self._trampoline)
        _libcuda()  # load the driver library now, not under capture

    def _trampoline(self, _user_data) -> None:
        self.callback()

    def launch(self, stream=None) -> None:
        """Enqueue the callback on ``stream`` (default: CuPy's current stream); returns at once.

        Under stream capture this adds a HOST node instead of running anything.
        """
        import cupy

        if stream is None:
            stream = cupy.cuda.get_current_stream()
        status = _libcuda().cuLaunchHostFunc(ctypes.c_void_p(stream.ptr), self._c_callback, None)
        if status != 0:
            raise CudaError("cuLaunchHostFunc", f"CUresult {status}")
