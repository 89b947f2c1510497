"""Launch wrappers for the kernels in kernels/: ``kernels.sgemm(a, b, c)`` and the like.

Every wrapper enqueues on CuPy's *current* stream and never synchronizes, so the same call
works eagerly and inside a CUDA graph capture. Arguments are checked (dtype, shape,
contiguity) before anything is launched. CuPy is imported inside the functions, so
importing this module costs nothing on a machine without a GPU.
"""

from __future__ import annotations

from typing import Any

from .kernel_loader import get_kernel

Array = Any
"""A cupy.ndarray (float32, C-contiguous; each wrapper checks). Named for the signatures
only: importing CuPy here would cost every machine without a GPU."""

_THREADS = 256  # 1-D kernels: threads per block
_GEMM_TILE = 16  # must match GEMM_TILE in kernels/gemm.cu
_ROW_BLOCK = 256  # must match ROW_BLOCK in kernels/softmax.cu
_STENCIL_BLOCK = 16  # jacobi_step block edge
_INT32_MAX = 2**31 - 1


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


def sgemm(a: Array, b: Array, c: Array, alpha: float = 1.0, beta: float = 0.0) -> Array:
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


def bias_gelu(x: Array, bias: Array, out: Array | None = None) -> Array:
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


def saxpy(a: float, x: Array, y: Array) -> Array:
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


def add_mod1(x: Array, c: float) -> Array:
    """x = frac(x + c) in place (kernels/elementwise.cu); returns ``x``. Any-shape contiguous."""
    import numpy

    _check_f32("x", x, x.ndim)
    if x.size == 0:
        return x
    get_kernel("elementwise.cu", "add_mod1")(
        _blocks(x.size), (_THREADS,), (x, numpy.float32(c), numpy.int32(x.size))
    )
    return x


def axpby(a: float, x: Array, b: float, y: Array, out: Array) -> Array:
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


def softmax_rows(x: Array, out: Array | None = None) -> Array:
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


def layernorm_rows(x: Array, gamma: Array, beta: Array, out: Array | None = None,
                   eps: float = 1e-5) -> Array:
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


def jacobi_step(src: Array, dst: Array) -> Array:
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
