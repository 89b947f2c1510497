"""Launch wrappers for the kernels in kernels/: ``kernels.sgemm(a, b, c)`` and the like.

Every wrapper enqueues on CuPy's *current* stream and never synchronizes, so the same call
works eagerly and inside a CUDA graph capture. Arguments are checked (dtype, shape,
contiguity) before anything is launched. CuPy is imported inside the functions, so
importing this module costs nothing on a machine without a GPU.
"""

from __future__ import annotations

from typing import Any

from .kernel_loader import launcher

Array = Any
"""A cupy.ndarray (float32, C-contiguous; each wrapper checks). Named for the signatures
only: importing CuPy here would cost every machine without a GPU."""

_THREADS = 256  # 1-D kernels: threads per block
_GEMM_TILE = 16  # must match GEMM_TILE in kernels/gemm.cu
_SKINNY_MAX_M = 64  # sgemm: rows up to this run the skinny split-K kernel
_SKINNY_COLS = 128  # must match SK_COLS in kernels/gemm.cu
_SKINNY_KT = 64  # K slices are multiples of 8 warps x SK_ROWS (8) in kernels/gemm.cu
_SKINNY_MAX_SLICE = 2048  # rows of K per slice at most: 8 rows of A's slice = 64 KiB
_SKINNY_STAGED_MAX_MT = 8  # sgemm_skinny_4/8 stage a whole slice of A (dynamic shared memory)
_SOFTMAX_FUSED_COLS = 4096  # must match 4 * ROW_BLOCK * REDUCE_VECS in kernels/softmax.cu
_GRID_Z_MAX = 65535  # blocks a grid may have along z
_GRID_STRIDE_CAP = 8192  # blocks of a grid-stride kernel (saxpy): enough to fill any GPU
_ROW_BLOCK = 256  # must match ROW_BLOCK in kernels/softmax.cu
_WARP_COLS = 1024  # must match WARP_COLS in kernels/softmax.cu: rows a warp handles alone
_STENCIL_BLOCK = (32, 8)  # jacobi_step block: a warp reads 128 contiguous bytes of a row
_STENCIL_ROWS = 8  # must match JACOBI_ROWS in kernels/stencil.cu: rows each thread walks
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


def _vec_blocks(n: int) -> tuple[int]:
    """Blocks for a "4" kernel over n elements: one float4 per thread, and at least one block
    (block 0 also does the last n % 4 elements)."""
    return (max(1, (n // 4 + _THREADS - 1) // _THREADS),)


def _aligned(*arrays: Array) -> bool:
    """Whether every array starts on a 16-byte boundary (what float4 loads need)."""
    return all(array.data.ptr % 16 == 0 for array in arrays)


_SM_COUNT: dict[int, int] = {}


def _sm_count() -> int:
    """Streaming multiprocessors of the current device (cached per device)."""
    import cupy

    device = cupy.cuda.runtime.getDevice()
    count = _SM_COUNT.get(device)
    if count is None:
        count = _SM_COUNT[device] = int(cupy.cuda.runtime.deviceGetAttribute(
            cupy.cuda.runtime.cudaDevAttrMultiProcessorCount, device))
    return count


def skinny_split(k: int, n: int) -> tuple[int, int]:
    """(slices, rows per slice) of K for the skinny GEMM.

    As many slices as keep the grid within one wave of two blocks per SM (a second, partly
    filled wave costs a whole wave's time: measured on the H200, 16 x 8192 x 8192 went from
    40 % to 59.6 % of the card's bandwidth when 5 slices became 4), but slices of at most
    _SKINNY_MAX_SLICE rows of K, so a slice of A fits in shared memory, and no more slices
    than a grid's z dimension holds (then slices are longer and A is staged chunk by chunk).
    Depends on K, N and the device only, never on M, so a row's result does not depend on
    the batch it is in.
    """
    fit = max(1, 2 * _sm_count() // _ceil_div(n, _SKINNY_COLS))
    slices = min(max(fit, _ceil_div(k, _SKINNY_MAX_SLICE)), _ceil_div(k, _SKINNY_KT),
                 _GRID_Z_MAX)
    per_slice = _ceil_div(_ceil_div(k, slices), _SKINNY_KT) * _SKINNY_KT
    return _ceil_div(k, per_slice), per_slice


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def sgemm(a: Array, b: Array, c: Array, alpha: float = 1.0, beta: float = 0.0) -> Array:
    """C = alpha * A @ B + beta * C with the kernels of kernels/gemm.cu; returns ``c``.

    ``a`` (M, K), ``b`` (K, N), ``c`` (M, N): float32, C-contiguous. With ``beta == 0`` the old
    contents of ``c`` are ignored, so ``c`` may come from ``cupy.empty``. Dispatched by shape:
    M <= 64 (decode batches) runs the skinny split-K kernel (plus a reduction kernel when K is
    split, with its workspace allocated on the current stream), larger M the 128 x 128 tiled
    kernel when K and N are multiples of 4 and the arrays 16-byte aligned, else the plain
    16 x 16 tiled kernel. No atomics: the same inputs give the same bits, and a row's result
    does not depend on M within the skinny range. Use this rather than ``a @ b``: cuBLAS
    cannot be captured from CuPy.
    """
    m, n, k = _gemm_shapes("sgemm", a, b, c)
    _gemm(a, b, c, m, n, k, alpha, beta, None)
    return c


def sgemm_softmax(a: Array, b: Array, c: Array, out: Array) -> Array:
    """C = A @ B, then ``out`` = the row-wise softmax of C: a decode step's logits and
    probabilities; returns ``out``.

    C gets :func:`sgemm`'s bits. Where the skinny kernel splits K (M <= 64, and rows of at
    most 4,096 columns), its reduction and the softmax are one launch, one block per row, so
    ``out`` may differ from :func:`softmax_rows` of C in the last bit for rows of up to 1,024
    columns (which softmax_rows gives a warp each: another order of the row's sum);
    otherwise this is sgemm then softmax_rows. ``out`` (M, N) float32, not overlapping C; the
    rest as for :func:`sgemm`.
    """
    m, n, k = _gemm_shapes("sgemm_softmax", a, b, c)
    _check_f32("out", out, 2)
    if out.shape != c.shape:
        raise ValueError(f"sgemm_softmax: out {out.shape} does not match c {c.shape}")
    import cupy

    if out.size and cupy.may_share_memory(out, c):
        raise ValueError("sgemm_softmax: out must not overlap c (both are written)")
    if not _gemm(a, b, c, m, n, k, 1.0, 0.0, None, out)[1]:
        softmax_rows(c, out)
    return out


def sgemm_bias_gelu(a: Array, b: Array, bias: Array, c: Array) -> Array:
    """C = gelu_tanh(A @ B + bias), bias broadcast over rows: an MLP's first layer; returns ``c``.

    The same bits as :func:`sgemm` followed by :func:`bias_gelu`, with one launch fewer where
    the skinny kernel runs (M <= 64, K > 0): it, or its split-K reduction, applies bias and
    GELU as it writes C. ``bias`` (N,) float32; the rest as for :func:`sgemm`.
    """
    m, n, k = _gemm_shapes("sgemm_bias_gelu", a, b, c)
    _check_f32("bias", bias, 1)
    if bias.shape != (n,):
        raise ValueError(f"sgemm_bias_gelu: bias {bias.shape} does not match N = {n}")
    if not _gemm(a, b, c, m, n, k, 1.0, 0.0, bias)[0]:
        bias_gelu(c, bias)
    return c


def _gemm_shapes(name: str, a: Array, b: Array, c: Array) -> tuple[int, int, int]:
    for arg, array in (("a", a), ("b", b), ("c", c)):
        _check_f32(arg, array, 2)
    m, k = a.shape
    k_b, n = b.shape
    if k_b != k or c.shape != (m, n):
        raise ValueError(f"{name} shapes do not match: a {a.shape} @ b {b.shape} -> c {c.shape}")
    return m, n, k


def _gemm(a, b, c, m, n, k, alpha, beta, bias, softmax=None) -> tuple[bool, bool]:
    """Launch C = alpha * A @ B + beta * C; returns whether ``bias`` (+ GELU) was applied too
    (only the skinny kernels apply it) and whether ``softmax`` (an array) was given the
    row-wise softmax of C (only the split skinny kernel's reduction does); the caller applies
    what was not."""
    import numpy

    if m == 0 or n == 0:
        return True, True  # nothing to write
    scalars = (numpy.float32(alpha), numpy.float32(beta))
    # k == 0 (an empty sum: C = beta * C) goes to the plain kernel, whose K loop runs no step
    if k and m <= _SKINNY_MAX_M:
        return True, _sgemm_skinny(a, b, c, m, n, k, scalars, bias, softmax)
    if k and k % 4 == 0 and n % 4 == 0 and _aligned(a, b, c):
        launcher("gemm.cu", "sgemm_128x128")(
            ((n + 127) // 128, (m + 127) // 128), (256,),
            (a, b, c, numpy.int32(m), numpy.int32(n), numpy.int32(k), *scalars))
    else:
        grid = ((n + _GEMM_TILE - 1) // _GEMM_TILE, (m + _GEMM_TILE - 1) // _GEMM_TILE)
        launcher("gemm.cu", "sgemm_tiled")(
            grid, (_GEMM_TILE, _GEMM_TILE),
            (a, b, c, numpy.int32(m), numpy.int32(n), numpy.int32(k), *scalars))
    return bias is None, False


def _sgemm_skinny(a, b, c, m, n, k, scalars, bias, softmax=None) -> bool:
    """The skinny GEMM (bias + GELU applied when given); returns whether ``softmax`` was
    written too (by the split's reduction)."""
    import cupy
    import numpy

    rows = 1 if m == 1 else 2 if m == 2 else 4 if m <= 4 else 8 if m <= 8 else 16
    slices, per_slice = skinny_split(k, n)
    grid = (_ceil_div(m, rows), _ceil_div(n, _SKINNY_COLS), slices)
    dims = (numpy.int32(m), numpy.int32(n), numpy.int32(k), numpy.int32(per_slice))
    kernel = launcher("gemm.cu", f"sgemm_skinny_{rows}")
    # sgemm_skinny_4 and _8 stage their whole slice of A when given the shared memory for it
    # (no barrier in the loop over B); without it they stage A chunk by chunk, same bits.
    shared = 0
    if 4 <= rows <= _SKINNY_STAGED_MAX_MT:
        shared = _staging_shared(kernel.kernel, 4 * rows * per_slice)
    null = numpy.uint64(0)
    bias_arg = null if bias is None else bias
    if slices == 1:  # the skinny kernel writes C (and applies the bias + GELU) itself
        kernel(grid, (_THREADS,), (a, b, c, null, bias_arg, *dims, *scalars), shared_mem=shared)
        return False
    workspace = cupy.empty((slices, m, n), dtype=cupy.float32)
    kernel(grid, (_THREADS,), (a, b, c, workspace, null, *dims, *scalars), shared_mem=shared)
    if (softmax is not None and bias is None and scalars == (1.0, 0.0) and n % 4 == 0
            and n <= _SOFTMAX_FUSED_COLS and _aligned(c, softmax)):
        launcher("softmax.cu", "sgemm_splitk_reduce_softmax")(
            (m,), (_ROW_BLOCK,),
            (workspace, c, softmax, numpy.int32(m), numpy.int32(n), numpy.int32(slices)))
        return True
    launcher("gemm.cu", "sgemm_splitk_reduce")(
        _blocks(m * n), (_THREADS,),
        (workspace, c, bias_arg, numpy.int32(m * n), numpy.int32(n), numpy.int32(slices),
         *scalars))
    return False


_DYNAMIC_SHARED: dict[tuple[int, int], list] = {}  # (id, device) -> [kernel, static, allowed]
_SHARED_LIMITS: dict[int, tuple[int, int]] = {}
_SHARED_RESERVED = 1024  # bytes the driver reserves per block (compute capability 8.0 and up)


def _staging_shared(kernel, need: int) -> int:
    """``need`` bytes of dynamic shared memory for ``kernel`` if the device gives a block that
    much on top of the kernel's static shared memory with two blocks still fitting on an SM
    (what skinny_split sizes the grid for), after allowing it; else 0 (the kernel then stages
    A chunk by chunk: the same bits, a little slower)."""
    import cupy

    device = cupy.cuda.runtime.getDevice()
    key = (id(kernel), device)
    entry = _DYNAMIC_SHARED.get(key)
    if entry is None or entry[0] is not kernel:  # a kernel loaded again may reuse a freed id
        entry = _DYNAMIC_SHARED[key] = [kernel, int(kernel.attributes["shared_size_bytes"]), 0]
    per_block, per_sm = _shared_limits(device)
    block = entry[1] + need
    if block > per_block or 2 * (block + _SHARED_RESERVED) > per_sm:
        return 0
    if need > entry[2]:
        # A function attribute, not a stream operation: legal under capture (measured).
        kernel.max_dynamic_shared_size_bytes = need
        entry[2] = need
    return need


def _shared_limits(device: int) -> tuple[int, int]:
    """(shared memory a block may opt in to, shared memory of an SM) in bytes, per device."""
    limits = _SHARED_LIMITS.get(device)
    if limits is None:
        import cupy

        runtime = cupy.cuda.runtime
        per_block = runtime.deviceGetAttribute(
            getattr(runtime, "cudaDevAttrMaxSharedMemoryPerBlockOptin", 97), device)
        per_sm = runtime.deviceGetAttribute(
            getattr(runtime, "cudaDevAttrMaxSharedMemoryPerMultiprocessor", 81), device)
        limits = _SHARED_LIMITS[device] = (int(per_block), int(per_sm))
    return limits


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
    args = (x, bias, out, numpy.int32(rows), numpy.int32(cols))
    if cols % 4 == 0 and _aligned(x, bias, out):
        launcher("gemm.cu", "bias_gelu4")(_blocks(x.size // 4), (_THREADS,), args)
    else:
        launcher("gemm.cu", "bias_gelu")(_blocks(x.size), (_THREADS,), args)
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
    # The kernels stride over the grid, so capping it still covers any n.
    args = (numpy.float32(a), x, y, numpy.int32(y.size))
    if _aligned(x, y):
        grid = (max(1, min(_blocks(y.size // 4)[0], _GRID_STRIDE_CAP)),)
        launcher("saxpy.cu", "saxpy4")(grid, (_THREADS,), args)
    else:
        grid = (min(_blocks(y.size)[0], _GRID_STRIDE_CAP),)
        launcher("saxpy.cu", "saxpy")(grid, (_THREADS,), args)
    return y


def add_mod1(x: Array, c: float) -> Array:
    """x = frac(x + c) in place (kernels/elementwise.cu); returns ``x``. Any-shape contiguous."""
    import numpy

    _check_f32("x", x, x.ndim)
    if x.size == 0:
        return x
    args = (x, numpy.float32(c), numpy.int32(x.size))
    if _aligned(x):
        launcher("elementwise.cu", "add_mod1_4")(_vec_blocks(x.size), (_THREADS,), args)
    else:
        launcher("elementwise.cu", "add_mod1")(_blocks(x.size), (_THREADS,), args)
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
    args = (numpy.float32(a), x, numpy.float32(b), y, out, numpy.int32(out.size))
    if _aligned(x, y, out):
        launcher("elementwise.cu", "axpby4")(_vec_blocks(out.size), (_THREADS,), args)
    else:
        launcher("elementwise.cu", "axpby")(_blocks(out.size), (_THREADS,), args)
    return out


def _warp_rows(cols: int, *arrays: Array) -> bool:
    """Whether the one-warp-per-row kernels of softmax.cu take rows of ``cols`` columns."""
    return cols % 4 == 0 and cols <= _WARP_COLS and _aligned(*arrays)


def _warp_row_blocks(rows: int) -> tuple[int]:
    return ((rows + _ROW_BLOCK // 32 - 1) // (_ROW_BLOCK // 32),)


def softmax_rows(x: Array, out: Array | None = None) -> Array:
    """Row-wise softmax of a (rows, cols) matrix into ``out`` (in place by default).

    One warp per row for rows of up to 1,024 columns (a multiple of 4, 16-byte aligned), else
    one block of 256 threads per row (kernels/softmax.cu). Returns ``out``.
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
    args = (x, out, numpy.int32(rows), numpy.int32(cols))
    if _warp_rows(cols, x, out):
        launcher("softmax.cu", "softmax_rows_warp")(_warp_row_blocks(rows), (_ROW_BLOCK,), args)
    else:
        launcher("softmax.cu", "softmax_rows")((rows,), (_ROW_BLOCK,), args)
    return out


def layernorm_rows(x: Array, gamma: Array, beta: Array, out: Array | None = None,
                   eps: float = 1e-5) -> Array:
    """Row-wise LayerNorm: (x - mean) / sqrt(var + eps) * gamma + beta, per row of ``x``.

    ``x``/``out`` (rows, cols), ``gamma``/``beta`` (cols,). One warp or one block per row, as
    for :func:`softmax_rows` (kernels/softmax.cu). In place by default; returns ``out``.
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
    args = (x, gamma, beta, out, numpy.int32(rows), numpy.int32(cols), numpy.float32(eps))
    if _warp_rows(cols, x, gamma, beta, out):
        launcher("softmax.cu", "layernorm_rows_warp")(_warp_row_blocks(rows), (_ROW_BLOCK,),
                                                        args)
    else:
        launcher("softmax.cu", "layernorm_rows")((rows,), (_ROW_BLOCK,), args)
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
    bx, by = _STENCIL_BLOCK
    args = (src, dst, numpy.int32(ny), numpy.int32(nx))
    rows_per_block = by * _STENCIL_ROWS
    if nx % 4 == 0 and _aligned(src, dst):  # four columns per thread, same bits
        grid = (_ceil_div(nx, 4 * bx), _ceil_div(ny, rows_per_block))
        launcher("stencil.cu", "jacobi_step4")(grid, (bx, by), args)
    else:
        grid = (_ceil_div(nx, bx), _ceil_div(ny, rows_per_block))
        launcher("stencil.cu", "jacobi_step")(grid, (bx, by), args)
    return dst
