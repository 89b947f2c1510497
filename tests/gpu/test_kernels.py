"""GPU tier: every kernel in kernels/ against a NumPy reference (float32, odd sizes).

Tolerances: GEMM and reductions accumulate in float32 in a different order from NumPy, so
they are compared with rtol/atol; kernels whose arithmetic NumPy can replay operation by
operation (add_mod1, jacobi_step, the tiled GEMM's row independence) are compared bitwise.
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

from accelgraph_cli import kernels  # noqa: E402  (after the importorskip above)

RNG = np.random.default_rng(1234)


def uniform(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape).astype(np.float32)


def to_device(a):
    return cupy.asarray(a)


def _uploaded():
    """Wait for the uploads queued so far. cupy.asarray copies asynchronously on the current
    stream (the legacy one outside a `with stream:`), and a non-blocking stream does not wait
    for the legacy stream: its kernels could read an input before its copy had landed.
    (test_split_k_replays_write_every_element_and_agree_with_eager failed once on an H100
    and passed in the eight runs around it; this race explains that: an eager result taken
    from half-copied inputs differs from the replays'.)"""
    cupy.cuda.Device().synchronize()


def to_host(a):
    cupy.cuda.get_current_stream().synchronize()
    return cupy.asnumpy(a)


# --------------------------------------------------------------------------- references

def gelu_ref(v):
    v = v.astype(np.float64)
    return 0.5 * v * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (v + 0.044715 * v**3)))


def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm_ref(x, gamma, beta, eps):
    x = x.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def jacobi_ref(src):
    """Same float32 operations in the same order as kernels/stencil.cu."""
    dst = src.copy()
    ns = src[:-2, 1:-1] + src[2:, 1:-1]
    we = src[1:-1, :-2] + src[1:-1, 2:]
    dst[1:-1, 1:-1] = np.float32(0.25) * (ns + we)
    return dst


# --------------------------------------------------------------------------- sources

def test_every_source_compiles_and_exports_its_kernels():
    expected = {
        "gemm.cu": ["sgemm_tiled", "sgemm_skinny_1", "sgemm_skinny_2", "sgemm_skinny_4",
                    "sgemm_skinny_8", "sgemm_skinny_16", "sgemm_splitk_reduce",
                    "sgemm_128x128", "bias_gelu", "bias_gelu4"],
        "saxpy.cu": ["saxpy", "saxpy4"],
        "elementwise.cu": ["add_mod1", "add_mod1_4", "axpby", "axpby4"],
        "softmax.cu": ["softmax_rows", "sgemm_splitk_reduce_softmax", "layernorm_rows",
                       "softmax_rows_warp", "layernorm_rows_warp"],
        "stencil.cu": ["jacobi_step", "jacobi_step4"],
    }
    for filename, names in expected.items():
        assert kernels.kernel_names(filename) == names
        kernels.preload(filename)
        for name in names:
            kernel = kernels.get_kernel(filename, name)
            assert kernel.attributes["max_threads_per_block"] >= 256
    # Cached: the same object comes back without recompiling.
    assert kernels.load_module("gemm.cu") is kernels.load_module("gemm.cu")


def test_compile_error_names_the_file(tmp_path, monkeypatch):
    (tmp_path / "broken.cu").write_text('extern "C" __global__ void k(float* x) { x[0] = ; }\n')
    monkeypatch.setenv(kernels.KERNELS_DIR_ENV, str(tmp_path))
    with pytest.raises(kernels.KernelError, match="broken.cu failed to compile"):
        kernels.load_module("broken.cu")


# --------------------------------------------------------------------------- gemm.cu

# Shapes reach every path of kernels.sgemm: skinny (M <= 64) with each rows-per-block variant,
# K in one slice and split (with the reduction kernel), N a multiple of 4 (float4 loads) or not;
# the 128 x 128 kernel for larger M (with partial edge tiles) and the plain tiled kernel when
# N or K is not a multiple of 4.
@pytest.mark.parametrize(
    "m, n, k", [(1, 1, 1), (7, 5, 3), (17, 33, 65), (64, 48, 40), (100, 3, 257), (33, 130, 17),
                (1, 4096, 1024), (2, 260, 3000), (3, 1024, 4096), (8, 1000, 777), (16, 512, 96),
                (64, 384, 2048), (129, 132, 36), (256, 256, 512), (300, 100, 64),
                (7, 8192, 6000)]  # A's whole slice staged in > 48 KiB, the last slice short
)
def test_sgemm_matches_numpy(m, n, k):
    a, b = uniform(m, k), uniform(k, n)
    c = kernels.sgemm(to_device(a), to_device(b), cupy.empty((m, n), dtype=cupy.float32))
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(to_host(c), want, rtol=1e-5, atol=1e-5 * np.sqrt(k))


def test_sgemm_alpha_beta_and_beta_zero_ignores_garbage():
    m, n, k = 19, 23, 29
    a, b, c0 = uniform(m, k), uniform(k, n), uniform(m, n)
    c = to_device(c0)
    kernels.sgemm(to_device(a), to_device(b), c, alpha=0.5, beta=2.0)
    want = 0.5 * (a.astype(np.float64) @ b) + 2.0 * c0
    np.testing.assert_allclose(to_host(c), want, rtol=1e-5, atol=1e-4)

    garbage = cupy.full((m, n), cupy.nan, dtype=cupy.float32)
    kernels.sgemm(to_device(a), to_device(b), garbage, beta=0.0)
    assert np.isfinite(to_host(garbage)).all()


# one K slice; K split 32 ways; 4 slices of 2048 (sgemm_skinny_4/8 stage a whole slice, 16 a
# chunk at a time)
@pytest.mark.parametrize("k, n", [(200, 96), (4096, 1024), (8192, 8192)])
def test_sgemm_rows_do_not_depend_on_batch_size(k, n):
    # Every batch size up to 64 (the skinny kernel's range, where buckets and decode run) gives
    # a row the same bits: the K slicing depends on K and N only.
    x, w = to_device(uniform(64, k)), to_device(uniform(k, n))
    full = kernels.sgemm(x, w, cupy.empty((64, n), dtype=cupy.float32))
    for rows in (1, 2, 3, 5, 8, 16, 33):
        part = kernels.sgemm(x[:rows], w, cupy.empty((rows, n), dtype=cupy.float32))
        np.testing.assert_array_equal(to_host(part), to_host(full)[:rows])


def test_sgemm_chunk_staging_gives_the_bits_of_whole_slice_staging(monkeypatch):
    # sgemm_skinny_4/8 stage A's whole K slice in shared memory where the device has room for
    # it with two blocks per SM, else chunk by chunk (smaller GPUs): same operations, same order.
    from accelgraph_cli.cuda import kernels as launch

    x, w = to_device(uniform(8, 4100)), to_device(uniform(4100, 520))
    for rows in (3, 8):
        whole = to_host(kernels.sgemm(x[:rows], w, cupy.empty((rows, 520), cupy.float32)))
        with monkeypatch.context() as patch:
            patch.setattr(launch, "_shared_limits", lambda device: (0, 0))  # no room at all
            chunked = to_host(kernels.sgemm(x[:rows], w, cupy.empty((rows, 520), cupy.float32)))
        np.testing.assert_array_equal(chunked, whole)


def test_sgemm_rows_keep_a_sum_of_negative_zero_whatever_the_batch_size(monkeypatch):
    # Every product underflows to -0.0, so every row's sum is -0.0 (0x80000000). K = 6000 is
    # 48 past a multiple of 64, so however the GPU's SM count slices K (8 x 768 on an H100 or
    # H200: a last slice of 624 rows), the last 64-row chunk holds 48 rows and in the
    # chunk-staged path two warps have none of it. Were they to add fmaf(0, 0, acc), the sum
    # would turn to +0.0 there and not in the other paths: a row's bits would depend on M.
    # Rows 9 to 64 always stage chunk by chunk; rows 4 to 8 do so when the device has no room
    # for the whole slice, forced here on the second pass.
    from accelgraph_cli.cuda import kernels as launch

    k, n = 6000, 4100
    a = cupy.full((64, k), -1e-30, dtype=cupy.float32)
    b = cupy.full((k, n), 1e-30, dtype=cupy.float32)
    for chunked in (False, True):
        with monkeypatch.context() as patch:
            if chunked:
                patch.setattr(launch, "_shared_limits", lambda device: (0, 0))
            for rows in range(1, 65) if not chunked else range(4, 9):
                c = cupy.empty((rows, n), dtype=cupy.float32)
                bits = to_host(kernels.sgemm(a[:rows], b, c)).view(np.uint32)
                assert (bits == 0x80000000).all(), (rows, chunked, np.unique(bits)[:4])


def test_sgemm_k_past_the_grids_z_limit():
    # K = 2**27 needs more than 65,535 slices of 2,048 rows: the slices grow instead (2,112
    # rows, 63,551 slices). All ones: every partial sum is an integer float32 holds exactly
    # (multiples of 8 near 2**27), so the result must be exactly K.
    from accelgraph_cli.cuda import kernels as launch

    k = 2**27
    slices, per_slice = launch.skinny_split(k, 1)
    assert (slices, per_slice) == (63551, 2112)
    a = cupy.ones((4, k), dtype=cupy.float32)
    b = cupy.ones((k, 1), dtype=cupy.float32)
    c = kernels.sgemm(a, b, cupy.empty((4, 1), dtype=cupy.float32))
    np.testing.assert_array_equal(to_host(c), np.full((4, 1), k, dtype=np.float32))
    del a, b


@pytest.mark.parametrize("m", [8, 200])  # the skinny kernel; the 128 x 128 kernel
def test_sgemm_is_deterministic_and_unaligned_views_work(m):
    a, b = to_device(uniform(m, 1025)), to_device(uniform(1025, 516))
    first = to_host(kernels.sgemm(a, b, cupy.empty((m, 516), dtype=cupy.float32)))
    second = to_host(kernels.sgemm(a, b, cupy.empty((m, 516), dtype=cupy.float32)))
    np.testing.assert_array_equal(first, second)
    # a view one float in: not 16-byte aligned, so the scalar paths run
    a2 = to_device(uniform(m, 513)[:, 1:].copy())
    b_big = cupy.asarray(uniform(512 * 516 + 1))
    b2 = b_big[1:].reshape(512, 516)
    got = kernels.sgemm(a2, b2, cupy.empty((m, 516), dtype=cupy.float32))
    want = cupy.asnumpy(a2).astype(np.float64) @ cupy.asnumpy(b2).astype(np.float64)
    np.testing.assert_allclose(to_host(got), want, rtol=1e-5, atol=1e-5 * np.sqrt(512))


# The skinny kernel with K split (the reduction applies bias and GELU; on the H200 4 to 64
# slices, a short last slice, N not a multiple of 4), with K in one slice (K <= 64 on any GPU:
# the skinny kernel applies them itself), and M past the skinny range (sgemm, then bias_gelu:
# there only the NumPy comparison can fail)
@pytest.mark.parametrize("m, k, n", [(8, 1024, 4096), (8, 4096, 1024), (1, 4096, 130), (3, 200, 96),
                                     (5, 3001, 517), (16, 2048, 384), (64, 512, 256), (4, 64, 96),
                                     (2, 40, 200), (16, 64, 132), (80, 64, 96)])
def test_sgemm_bias_gelu_is_sgemm_then_bias_gelu_bit_for_bit(m, k, n):
    from accelgraph_cli.cuda import kernels as launch

    if k <= 64:
        assert launch.skinny_split(k, n)[0] == 1
    x, w, bias = to_device(uniform(m, k)), to_device(uniform(k, n)), to_device(uniform(n))
    fused = to_host(kernels.sgemm_bias_gelu(x, w, bias, cupy.empty((m, n), cupy.float32)))
    apart = kernels.sgemm(x, w, cupy.empty((m, n), cupy.float32))
    np.testing.assert_array_equal(fused, to_host(kernels.bias_gelu(apart, bias)))
    want = gelu_ref(cupy.asnumpy(x).astype(np.float64) @ cupy.asnumpy(w) + cupy.asnumpy(bias))
    np.testing.assert_allclose(fused, want, rtol=1e-5, atol=1e-5 * np.sqrt(k))


def test_sgemm_bias_gelu_rejects_a_bias_of_the_wrong_length():
    x, w = cupy.zeros((2, 8), cupy.float32), cupy.zeros((8, 12), cupy.float32)
    with pytest.raises(ValueError, match="bias"):
        kernels.sgemm_bias_gelu(x, w, cupy.zeros(8, cupy.float32), cupy.zeros((2, 12), cupy.float32))


@pytest.mark.parametrize("m, k, n", [(8, 4096, 1024), (1, 1024, 4096), (16, 8192, 256), (3, 700, 130)])
def test_split_k_writes_every_element_on_every_launch(m, k, n):
    # With K split (8 to 128 slices here: the reduction loads up to 16 slices at a time, so
    # one batch, several, and a short last one), C is written by the reduction alone. C
    # starts as NaN each time, so an element it skipped shows; the bits must not change from
    # launch to launch.
    from accelgraph_cli.cuda import kernels as launch

    assert launch.skinny_split(k, n)[0] > 1
    x, w = to_device(uniform(m, k)), to_device(uniform(k, n))
    c = cupy.empty((m, n), cupy.float32)
    first = None
    for _ in range(12):
        c.fill(cupy.nan)
        got = to_host(kernels.sgemm(x, w, c))
        if first is None:
            first = got
            assert np.isfinite(first).all()
            want = cupy.asnumpy(x).astype(np.float64) @ cupy.asnumpy(w)
            np.testing.assert_allclose(first, want, rtol=1e-5, atol=1e-5 * np.sqrt(k))
        np.testing.assert_array_equal(got, first)


def test_split_k_replays_write_every_element_and_agree_with_eager():
    # A captured sgemm_bias_gelu (skinny kernel, then the reduction with bias + GELU) replayed
    # onto a C full of NaN gives eager's bits every time.
    x, w, bias = to_device(uniform(8, 4096)), to_device(uniform(4096, 1024)), to_device(uniform(1024))
    h = cupy.empty((8, 1024), cupy.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    _uploaded()
    with stream:
        eager = to_host(kernels.sgemm_bias_gelu(x, w, bias, h))
        stream.begin_capture()
        kernels.sgemm_bias_gelu(x, w, bias, h)
        graph = stream.end_capture()
        for _ in range(5):
            h.fill(cupy.nan)
            graph.launch()
            np.testing.assert_array_equal(to_host(h), eager)


# (m, k, n, whether the split's reduction writes the softmax too)
@pytest.mark.parametrize("m, k, n, fused", [
    (8, 4096, 1024, True), (1, 4096, 1024, True), (5, 3001, 516, True), (64, 4096, 1024, True),
    (16, 2048, 4096, True), (4, 1024, 3000, True),
    (2, 512, 4100, False),  # a row longer than the fused kernel holds
    (80, 256, 512, False),  # past the skinny range
    (4, 64, 512, False),  # K in one slice: no reduction to fuse into
    (8, 4096, 1022, False),  # N % 4: no float4 rows
])
def test_sgemm_softmax_is_sgemm_then_softmax(m, k, n, fused, monkeypatch):
    # The split's reduction writes the logits with sgemm's bits and their softmax in one
    # launch, one block per row: softmax_rows' bits for rows of more than 1,024 columns (its
    # block kernel), within float32 rounding of them for shorter rows (softmax_rows gives
    # those a warp, which adds the row's sum in another order). Elsewhere the two calls run.
    from accelgraph_cli.cuda import kernels as launch

    # (A scaled so the logits spread over a few units, not hundreds: a softmax of hundreds
    # is one 1 and zeros, which would hide a wrong sum)
    x, w = to_device(uniform(m, k) * np.float32(0.05)), to_device(uniform(k, n))
    calls = []
    real = launch.softmax_rows
    monkeypatch.setattr(launch, "softmax_rows", lambda *args: calls.append(1) or real(*args))
    logits = cupy.full((m, n), cupy.nan, dtype=cupy.float32)
    probs = cupy.full((m, n), cupy.nan, dtype=cupy.float32)
    kernels.sgemm_softmax(x, w, logits, probs)
    fused = fused and launch.skinny_split(k, n)[0] > 1  # (a small GPU splits K less)
    assert calls == ([] if fused else [1])
    alone = to_host(kernels.sgemm(x, w, cupy.empty((m, n), cupy.float32)))
    np.testing.assert_array_equal(to_host(logits), alone)
    apart = to_host(real(cupy.asarray(alone)))
    if n > 1024 or not fused:
        np.testing.assert_array_equal(to_host(probs), apart)
    else:
        np.testing.assert_allclose(to_host(probs), apart, rtol=2e-6, atol=1e-9)
    np.testing.assert_allclose(to_host(probs), softmax_ref(alone.astype(np.float64)),
                               rtol=1e-5, atol=1e-8)
    again = cupy.empty((m, n), cupy.float32)
    kernels.sgemm_softmax(x, w, cupy.empty((m, n), cupy.float32), again)
    np.testing.assert_array_equal(to_host(again), to_host(probs))  # deterministic


def test_sgemm_softmax_unaligned_outputs_take_the_two_calls(monkeypatch):
    # c and out one float into their buffers: not 16-byte aligned, so no float4 rows
    from accelgraph_cli.cuda import kernels as launch

    x, w = to_device(uniform(8, 4096) * np.float32(0.05)), to_device(uniform(4096, 1024))
    buffers = [cupy.full(8 * 1024 + 1, cupy.nan, dtype=cupy.float32) for _ in range(2)]
    logits, probs = (b[1:].reshape(8, 1024) for b in buffers)
    calls = []
    real = launch.softmax_rows
    monkeypatch.setattr(launch, "softmax_rows", lambda *args: calls.append(1) or real(*args))
    kernels.sgemm_softmax(x, w, logits, probs)
    assert calls == [1]
    alone = to_host(kernels.sgemm(x, w, cupy.empty((8, 1024), cupy.float32)))
    np.testing.assert_array_equal(to_host(logits), alone)
    # (softmax_rows of unaligned rows: the same path as above, not the aligned rows' warp)
    other = cupy.empty(8 * 1024 + 1, dtype=cupy.float32)[1:].reshape(8, 1024)
    np.testing.assert_array_equal(to_host(probs), to_host(real(logits, other)))


def test_sgemm_softmax_rows_do_not_depend_on_batch_size():
    x, w = to_device(uniform(64, 4096)), to_device(uniform(4096, 1024))

    def probs(rows):
        out = cupy.empty((rows, 1024), cupy.float32)
        kernels.sgemm_softmax(x[:rows], w, cupy.empty((rows, 1024), cupy.float32), out)
        return to_host(out)

    full = probs(64)
    for rows in (1, 3, 8, 16):
        np.testing.assert_array_equal(probs(rows), full[:rows])


def test_sgemm_softmax_refuses_out_overlapping_c_and_takes_an_empty_batch():
    x, w = to_device(uniform(8, 64)), to_device(uniform(64, 32))
    c = cupy.zeros((8, 32), cupy.float32)
    with pytest.raises(ValueError, match="must not overlap c"):
        kernels.sgemm_softmax(x, w, c, c)
    rows = cupy.zeros((9, 32), cupy.float32)  # two views one row apart
    with pytest.raises(ValueError, match="must not overlap c"):
        kernels.sgemm_softmax(x, w, rows[:8], rows[1:])
    with pytest.raises(ValueError, match="does not match"):
        kernels.sgemm_softmax(x, w, c, cupy.zeros((8, 31), cupy.float32))
    empty = cupy.zeros((0, 32), cupy.float32)  # (CuPy gives empty arrays the same address)
    out = cupy.zeros((0, 32), cupy.float32)
    assert kernels.sgemm_softmax(x[:0], w, empty, out) is out


def test_sgemm_rejects_bad_shapes_and_dtypes():
    a = cupy.zeros((4, 5), dtype=cupy.float32)
    with pytest.raises(ValueError, match="shapes do not match"):
        kernels.sgemm(a, cupy.zeros((4, 5), dtype=cupy.float32), cupy.zeros((4, 5), cupy.float32))
    with pytest.raises(ValueError, match="float32"):
        kernels.sgemm(a.astype(cupy.float64), a.T.copy(), cupy.zeros((4, 4), cupy.float32))
    with pytest.raises(ValueError, match="contiguous"):
        kernels.sgemm(a, a.T, cupy.zeros((4, 4), cupy.float32))


@pytest.mark.parametrize("rows, cols", [(1, 1), (3, 7), (8, 4096), (5, 1000), (2, 6)])
def test_bias_gelu_matches_numpy(rows, cols):
    x, bias = uniform(rows, cols, low=-4, high=4), uniform(cols)
    out = kernels.bias_gelu(to_device(x), to_device(bias), cupy.empty((rows, cols), cupy.float32))
    want = gelu_ref(x + bias)
    np.testing.assert_allclose(to_host(out), want, rtol=1e-5, atol=1e-6)

    in_place = to_device(x)
    assert kernels.bias_gelu(in_place, to_device(bias)) is in_place
    np.testing.assert_array_equal(to_host(in_place), to_host(out))


# --------------------------------------------------------------------------- saxpy.cu, elementwise.cu

@pytest.mark.parametrize("n", [1, 1000, 3_000_001])  # the last exceeds the capped grid
def test_saxpy_matches_numpy(n):
    x, y = uniform(n), uniform(n)
    got = kernels.saxpy(0.75, to_device(x), to_device(y))
    np.testing.assert_allclose(to_host(got), np.float32(0.75) * x + y, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n", [1, 255, 257, 100_003])
def test_add_mod1_is_bitwise_numpy(n):
    x = uniform(n, low=0.0, high=1.0)
    got = to_device(x)
    want = x.copy()
    for c in (0.3, 0.61803398, 0.999):
        kernels.add_mod1(got, c)
        v = want + np.float32(c)
        want = v - np.floor(v)
    result = to_host(got)
    np.testing.assert_array_equal(result, want)
    assert ((result >= 0) & (result < 1)).all()


def test_float4_and_scalar_paths_give_the_same_bits():
    # An array one float into its allocation is not 16-byte aligned: the wrappers then launch
    # the one-element-per-thread kernels. Both paths must compute the same values.
    n = 10_001
    base = {name: uniform(n + 1) for name in ("x", "y")}
    aligned = {k: to_device(v[1:].copy()) for k, v in base.items()}
    shifted = {k: to_device(v)[1:] for k, v in base.items()}
    assert shifted["x"].data.ptr % 16 and not aligned["x"].data.ptr % 16
    for arrays in (aligned, shifted):
        kernels.saxpy(0.75, arrays["x"], arrays["y"])
        kernels.add_mod1(arrays["y"], 0.3)
        kernels.axpby(1.5, arrays["x"], -0.5, arrays["y"], arrays["y"])
    np.testing.assert_array_equal(to_host(aligned["y"]), to_host(shifted["y"]))
    rows, cols = 3, 8
    x, bias = uniform(rows * cols + 1), uniform(cols + 1)
    vec = kernels.bias_gelu(to_device(x[1:].reshape(rows, cols)), to_device(bias[1:]),
                            cupy.empty((rows, cols), cupy.float32))
    scalar = kernels.bias_gelu(to_device(x)[1:].reshape(rows, cols), to_device(bias)[1:],
                               cupy.empty((rows, cols), cupy.float32))
    np.testing.assert_array_equal(to_host(vec), to_host(scalar))


def test_axpby_and_in_place_accumulate():
    n = 4099
    x, y = uniform(n), uniform(n)
    out = kernels.axpby(2.0, to_device(x), -0.5, to_device(y), cupy.empty(n, cupy.float32))
    np.testing.assert_allclose(to_host(out), 2.0 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
    total = to_device(x)
    kernels.axpby(1.0, total, 1.0, to_device(y), total)
    np.testing.assert_allclose(to_host(total), x + y, rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------- softmax.cu

# cols % 4 == 0 up to 8192 take the register-cached float4 path; the rest loop over memory.
@pytest.mark.parametrize("rows, cols", [(1, 1), (3, 7), (5, 300), (4, 1000), (2, 4097),
                                        (3, 8192), (2, 8200), (9, 1024)])
def test_softmax_rows_matches_numpy(rows, cols):
    x = uniform(rows, cols, low=-5, high=5)
    got = to_host(kernels.softmax_rows(to_device(x), cupy.empty((rows, cols), cupy.float32)))
    np.testing.assert_allclose(got, softmax_ref(x), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-5)


def test_softmax_rows_is_stable_and_deterministic():
    x = to_device(uniform(6, 513, low=-1, high=1) * 500)  # exp would overflow without the max
    first = to_host(kernels.softmax_rows(x, cupy.empty_like(x)))
    second = to_host(kernels.softmax_rows(x, cupy.empty_like(x)))
    assert np.isfinite(first).all()
    np.testing.assert_array_equal(first, second)
    in_place = x.copy()
    kernels.softmax_rows(in_place)
    np.testing.assert_array_equal(to_host(in_place), first)


@pytest.mark.parametrize("rows, cols", [(1, 2), (3, 7), (5, 300), (4, 1024), (2, 4097), (3, 8192),
                                        (2, 8200)])
def test_layernorm_rows_matches_numpy(rows, cols):
    x = uniform(rows, cols, low=-3, high=5)  # non-zero mean: the two-pass form matters
    gamma, beta = uniform(cols, low=0.5, high=1.5), uniform(cols)
    got = kernels.layernorm_rows(to_device(x), to_device(gamma), to_device(beta),
                                 cupy.empty((rows, cols), cupy.float32), eps=1e-5)
    np.testing.assert_allclose(to_host(got), layernorm_ref(x, gamma, beta, 1e-5),
                               rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------- stencil.cu

# nx % 4 == 0 runs jacobi_step4 (four columns a thread; 132 = two warps' worth plus one lane,
# 4 = one thread), other widths jacobi_step
@pytest.mark.parametrize("ny, nx", [(3, 3), (5, 7), (33, 17), (512, 512), (1, 40), (70, 1),
                                    (129, 65), (9, 132), (5, 4), (2, 8), (70, 260)])
def test_jacobi_step_is_bitwise_numpy(ny, nx):
    src = uniform(ny, nx, low=0, high=1)
    got = kernels.jacobi_step(to_device(src), cupy.empty((ny, nx), cupy.float32))
    np.testing.assert_array_equal(to_host(got), jacobi_ref(src))


@pytest.mark.parametrize("which", ["src", "dst"])
def test_jacobi_step_unaligned_buffers_take_the_scalar_kernel_with_the_same_bits(which):
    ny, nx = 40, 132
    src = uniform(ny, nx, low=0, high=1)
    source, target = to_device(src), cupy.empty((ny, nx), cupy.float32)
    shifted = cupy.empty(ny * nx + 1, cupy.float32)[1:].reshape(ny, nx)  # not 16-byte aligned
    if which == "src":
        shifted[...] = source
        source = shifted
    else:
        target = shifted
    got = kernels.jacobi_step(source, target)
    np.testing.assert_array_equal(to_host(got), jacobi_ref(src))


def test_jacobi_step_needs_two_buffers():
    grid = cupy.zeros((8, 8), dtype=cupy.float32)
    with pytest.raises(ValueError, match="two buffers"):
        kernels.jacobi_step(grid, grid)


# --------------------------------------------------------------------------- under capture

def test_wrappers_capture_and_replay_bitwise():
    """The launch wrappers work under stream capture and replay computes what eager does."""
    x, w, bias = to_device(uniform(5, 64)), to_device(uniform(64, 96)), to_device(uniform(96))
    h = cupy.empty((5, 96), cupy.float32)
    p = cupy.empty((5, 96), cupy.float32)

    def work():
        kernels.sgemm(x, w, h)
        kernels.bias_gelu(h, bias)
        kernels.softmax_rows(h, p)

    stream = cupy.cuda.Stream(non_blocking=True)
    _uploaded()
    with stream:
        work()
        eager = to_host(p)
        p.fill(0)
        stream.begin_capture()
        work()
        graph = stream.end_capture()
        graph.launch()
        stream.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(p), eager)


def test_host_function_runs_eagerly_and_on_every_replay():
    calls = []
    host = kernels.HostFunction(lambda: calls.append(1))
    stream = cupy.cuda.Stream(non_blocking=True)
    host.launch(stream)
    stream.synchronize()
    assert len(calls) == 1

    with stream:
        stream.begin_capture()
        host.launch()  # the current stream: the capturing one
        graph = stream.end_capture()
    assert len(calls) == 1  # captured, not run
    for _ in range(5):  # CuPy's own launch_host_func would use freed memory from replay 2
        graph.launch(stream)
    stream.synchronize()
    assert len(calls) == 6
