"""The bundled kernels against the card's limits and against torch, in one run (GPU).

    python bench/bench_kernels.py [--rounds 15] [--json PATH] [--markdown PATH] [--quick]

The limit is measured in the same run: ``cudaMemcpyAsync`` device to device of 1 GiB, counted
as bytes read + bytes written per second. Every kernel is timed with CUDA events (median over
rounds, after warm-up, on random data) and reported as achieved GB/s (memory-bound kernels:
the bytes it must read and write, each once) or TFLOP/s (square GEMM), as a fraction of that
limit, and beside torch doing the same operation (fp32, TF32 off). Inputs larger than the
card's L2 cache are read cold: skinny GEMMs rotate through copies of the weights that
together exceed L2 several times, so no kernel is flattered by cache hits a model's weights
would not get.

Targets (issue 17): skinny GEMM (M <= 16) >= 60 % of measured bandwidth and faster than torch
on every skinny shape (M <= 64); square GEMM >= 0.7x torch fp32; softmax_rows,
layernorm_rows, saxpy, bias_gelu, jacobi_step at >= 64 MB: >= 70 % of measured bandwidth.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from accelgraph_cli.cuda.device import device_name, require_cuda  # noqa: E402

SKINNY = [(1, 4096, 4096), (1, 8192, 8192), (4, 4096, 4096), (8, 1024, 4096), (8, 4096, 1024),
          (8, 4096, 4096), (8, 8192, 8192), (16, 4096, 4096), (16, 8192, 8192), (32, 4096, 4096),
          (64, 4096, 4096)]
SQUARE = [2048, 4096]
ROTATE_BYTES = 512 * 2**20  # weights rotated through per skinny shape: ~10x the H200's L2


_SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""


class Timer:
    """Median GPU time per call of ``fn(i)`` (i = call index), CUDA events on a stream.

    Each round first queues a kernel that spins for a few milliseconds, then the start event
    and the calls: the host has enqueued every call before the GPU reaches them, so the
    events time the kernels back to back, not the host's launch rate (which would hide how
    fast a 5 µs kernel is behind 20 µs of Python and launch overhead per call).
    """

    def __init__(self, cupy, stream, rounds):
        self.cupy, self.stream, self.rounds = cupy, stream, rounds
        self.spin = cupy.RawKernel(_SPIN, "spin")
        clock_khz = cupy.cuda.runtime.deviceGetAttribute(cupy.cuda.runtime.cudaDevAttrClockRate, 0)
        self.cycles_per_ms = clock_khz

    def us(self, fn, calls=20, warmup=3, spin_ms=4.0):
        import numpy

        cupy = self.cupy
        with self.stream:
            for i in range(warmup):
                fn(i)
            times = []
            for _ in range(self.rounds):
                start, stop = cupy.cuda.Event(), cupy.cuda.Event()
                self.spin((1,), (1,), (numpy.int64(spin_ms * self.cycles_per_ms),))
                start.record(self.stream)
                for i in range(calls):
                    fn(i)
                stop.record(self.stream)
                stop.synchronize()
                times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3 / calls)
        return statistics.median(times)


def copy_bandwidth(cupy, timer):
    """GB/s of a 1 GiB device-to-device cudaMemcpyAsync, read + write."""
    n = 2**30
    src = cupy.empty(n, dtype=cupy.uint8)
    dst = cupy.empty(n, dtype=cupy.uint8)
    src[:] = 1
    us = timer.us(lambda i: cupy.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, n, 3,
                                                           timer.stream.ptr), calls=5, spin_ms=0.1)
    return 2 * n / us / 1e3


def torch_stream(torch, cupy_stream):
    return torch.cuda.ExternalStream(cupy_stream.ptr)


def skinny(cupy, torch, kernels, timer, m, k, n):
    rng = cupy.random.default_rng(m * 7 + k + n)
    copies = max(2, ROTATE_BYTES // (k * n * 4))
    ws = [rng.standard_normal((k, n), dtype=cupy.float32) for _ in range(copies)]
    a = rng.standard_normal((m, k), dtype=cupy.float32)
    c = cupy.empty((m, n), dtype=cupy.float32)
    ours = timer.us(lambda i: kernels.sgemm(a, ws[i % copies], c))
    check = float(cupy.abs(c - a @ ws[(20 - 1) % copies]).max())  # last call's weights
    row = {"shape": f"{m}x{k}x{n}", "m": m, "k": k, "n": n, "bytes": 4 * (m * k + k * n + m * n),
           "ours_us": ours, "max_abs_err_vs_cupy_matmul": check}
    if torch is not None:
        tws = [torch.as_tensor(w, device="cuda") for w in ws]
        ta = torch.as_tensor(a, device="cuda")
        tc = torch.empty((m, n), device="cuda")
        row["torch_us"] = timer.us(lambda i: torch.matmul(ta, tws[i % copies], out=tc))
    return row


def square(cupy, torch, kernels, timer, n):
    rng = cupy.random.default_rng(n)
    a = rng.standard_normal((n, n), dtype=cupy.float32)
    b = rng.standard_normal((n, n), dtype=cupy.float32)
    c = cupy.empty((n, n), dtype=cupy.float32)
    calls = 3 if n >= 4096 else 10
    row = {"shape": f"{n}^3", "flop": 2 * n**3,
           "ours_us": timer.us(lambda i: kernels.sgemm(a, b, c), calls=calls, warmup=1,
                               spin_ms=0.1)}
    ref = a[:64].astype(cupy.float64) @ b.astype(cupy.float64)  # 64 rows against float64
    row["max_rel_err_64_rows_vs_float64"] = float(cupy.abs(c[:64] - ref).max() / cupy.abs(ref).max())
    if torch is not None:
        ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
        tc = torch.empty((n, n), device="cuda")
        row["torch_us"] = timer.us(lambda i: torch.matmul(ta, tb, out=tc), calls=calls, warmup=1,
                                   spin_ms=0.1)

    return row


def memory_bound(cupy, torch, kernels, timer):
    """(name, bytes moved, our µs, torch µs) for the element-wise and row kernels at 64 MB."""
    rng = cupy.random.default_rng(5)
    rows, cols = 16384, 1024  # 64 MiB of float32
    n = rows * cols
    x = rng.standard_normal(n, dtype=cupy.float32)
    y = rng.standard_normal(n, dtype=cupy.float32)
    out = cupy.empty(n, dtype=cupy.float32)
    x2, out2 = x.reshape(rows, cols), out.reshape(rows, cols)
    bias = rng.standard_normal(cols, dtype=cupy.float32)
    gamma = rng.standard_normal(cols, dtype=cupy.float32)
    beta = rng.standard_normal(cols, dtype=cupy.float32)
    grid = rng.standard_normal((4096, 4096), dtype=cupy.float32)
    grid_out = cupy.empty_like(grid)
    out_rows = []
    t = {}
    if torch is not None:
        tx, ty, tout = (torch.as_tensor(v, device="cuda") for v in (x, y, out))
        tx2 = tx.view(rows, cols)
        tb, tg, tbe = (torch.as_tensor(v, device="cuda") for v in (bias, gamma, beta))
        functional = torch.nn.functional
        t = {
            "saxpy": lambda i: ty.add_(tx, alpha=1.0001),
            "axpby": lambda i: torch.add(tx.mul(1.5), ty, alpha=0.5, out=tout),
            "bias_gelu": lambda i: functional.gelu(tx2 + tb, approximate="tanh"),
            "softmax_rows": lambda i: torch.softmax(tx2, dim=1),
            "layernorm_rows": lambda i: functional.layer_norm(tx2, (cols,), tg, tbe),
        }
    cases = [
        ("saxpy", 3 * 4 * n, lambda i: kernels.saxpy(1.0001, x, y)),
        ("axpby", 3 * 4 * n, lambda i: kernels.axpby(1.5, x, 0.5, y, out)),
        ("add_mod1", 2 * 4 * n, lambda i: kernels.add_mod1(out, 0.25)),
        ("bias_gelu", 2 * 4 * n, lambda i: kernels.bias_gelu(x2, bias, out2)),
        ("softmax_rows", 2 * 4 * n, lambda i: kernels.softmax_rows(x2, out2)),
        ("layernorm_rows", 2 * 4 * n, lambda i: kernels.layernorm_rows(x2, gamma, beta, out2)),
        ("jacobi_step", 2 * 4 * grid.size, lambda i: kernels.jacobi_step(grid, grid_out)),
    ]
    for name, nbytes, fn in cases:
        row = {"name": name, "bytes": nbytes, "ours_us": timer.us(fn)}
        if name in t:
            row["torch_us"] = timer.us(t[name])
        out_rows.append(row)
    return out_rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="fewer shapes (a first look)")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args(argv)
    cupy = require_cuda()
    from accelgraph_cli import kernels

    try:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    except ImportError:
        torch = None
    kernels.preload("gemm.cu", "softmax.cu", "elementwise.cu", "saxpy.cu", "stencil.cu")
    stream = cupy.cuda.Stream(non_blocking=True)
    timer = Timer(cupy, stream, args.rounds)
    if torch is not None:
        torch.cuda.set_stream(torch_stream(torch, stream))
    bw = copy_bandwidth(cupy, timer)
    with stream:
        shapes = SKINNY[:3] if args.quick else SKINNY
        skinny_rows = [skinny(cupy, torch, kernels, timer, *s) for s in shapes]
        square_rows = [square(cupy, torch, kernels, timer, n) for n in SQUARE]
        mem_rows = memory_bound(cupy, torch, kernels, timer)
    for r in skinny_rows + mem_rows:
        r["ours_gbs"] = r["bytes"] / r["ours_us"] / 1e3
        r["fraction"] = r["ours_gbs"] / bw
        if "torch_us" in r:
            r["torch_gbs"] = r["bytes"] / r["torch_us"] / 1e3
    for r in square_rows:
        r["ours_tflops"] = r["flop"] / r["ours_us"] / 1e6
        if "torch_us" in r:
            r["torch_tflops"] = r["flop"] / r["torch_us"] / 1e6
            r["vs_torch"] = r["ours_tflops"] / r["torch_tflops"]
    device = device_name()
    date = time.strftime("%Y-%m-%d")
    lines = [f"Kernels at the hardware's limit, {device}, {date}; limit = D2D copy "
             f"{bw:,.0f} GB/s (read + write)", "",
             "| kernel | shape | µs | GB/s | of limit | torch µs | torch GB/s | faster than torch |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in skinny_rows:
        tu = r.get("torch_us")
        lines.append(f"| sgemm | {r['shape']} | {r['ours_us']:.1f} | {r['ours_gbs']:,.0f} | "
                     f"{r['fraction']:.0%} | {tu or 0:.1f} | {r.get('torch_gbs', 0):,.0f} | "
                     f"{'yes' if tu and r['ours_us'] < tu else 'no'} |")
    for r in mem_rows:
        tu = r.get("torch_us")
        t_us, t_gbs = (f"{tu:.1f}", f"{r['torch_gbs']:,.0f}") if tu else ("–", "–")
        faster = ("yes" if r["ours_us"] < tu else "no") if tu else "–"
        lines.append(f"| {r['name']} | 64 MiB | {r['ours_us']:.1f} | {r['ours_gbs']:,.0f} | "
                     f"{r['fraction']:.0%} | {t_us} | {t_gbs} | {faster} |")
    lines += ["", "| square GEMM | µs | TFLOP/s | torch TFLOP/s (TF32 off) | of torch |",
              "|---|---:|---:|---:|---:|"]
    for r in square_rows:
        lines.append(f"| {r['shape']} | {r['ours_us']:.0f} | {r['ours_tflops']:.1f} | "
                     f"{r.get('torch_tflops', 0):.1f} | {r.get('vs_torch', 0):.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    report = {"device": device, "date": date, "copy_gbs": bw, "skinny": skinny_rows,
              "square": square_rows, "memory_bound": mem_rows}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
