"""accelgraph against its peers on the GPU, side by side in one run.

    python bench/bench_peers.py [--json PATH] [--markdown PATH] [--quick]

Replay cost per iteration of the same workloads through accelgraph_cli.Graph.replay, a bare
CuPy Graph.launch loop, torch.cuda.CUDAGraph.replay (and torch.accelerator.Graph where the
installed torch has it), and eager execution in CuPy and in torch:
  * elementwise chain, N = 1, 10, 100, 1000 in-place scalar adds on 1024 float32 (x += c);
  * the MLP decode step (batch 8, hidden 1024: GEMM, bias+GELU, GEMM, softmax) — accelgraph
    and CuPy run kernels/ (CuPy's cuBLAS cannot be captured), torch runs its own ops.
Capture + instantiate time of 1k- and 10k-node chains: accelgraph vs bare CuPy vs torch.
Memory of the bucketed scenario: shared pool vs private pools vs torch graphs sharing one
graph_pool_handle(). CUDA-event timing after warm-up, medians over rounds, min-max shown;
the launchers of one workload take their rounds in turn, so clock drift hits them alike.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from accelgraph_cli import Graph  # noqa: E402
from accelgraph_cli.cuda.device import device_name, require_cuda  # noqa: E402
from accelgraph_cli.cuda.timing import round_orders  # noqa: E402
from accelgraph_cli.run import protocol as runner  # noqa: E402
from accelgraph_cli.run.scenario import load_scenario, parse_params  # noqa: E402


def _torch():
    try:
        import torch

        return torch if torch.cuda.is_available() else None
    except Exception:
        return None


def cupy_timer(cupy, stream):
    """run(fn, iters) -> device µs per call of fn() on a CuPy stream (CUDA events)."""
    start, end = cupy.cuda.Event(), cupy.cuda.Event()

    def run(fn, iters):
        with stream:
            start.record(stream)
            for _ in range(iters):
                fn()
            end.record(stream)
            end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end) * 1e3 / iters

    return run


def torch_timer(torch, stream):
    """run(fn, iters) -> device µs per call of fn() on a torch stream (CUDA events)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def run(fn, iters):
        with torch.cuda.stream(stream):
            start.record(stream)
            for _ in range(iters):
                fn()
            end.record(stream)
            end.synchronize()
        return start.elapsed_time(end) * 1e3 / iters

    return run


def interleaved(entries, iters, rounds, warmup):
    """Time every (how, fn, run) entry, their rounds taken in turn so clock drift hits all alike.

    Returns [(how, (median, min, max))] in the order given.
    """
    for _how, fn, run in entries:
        run(fn, warmup)
    values = {how: [] for how, _fn, _run in entries}
    orders = round_orders(len(entries))  # each entry after each other one equally often
    for r in range(rounds):
        for index in orders[r % len(orders)]:
            how, fn, run = entries[index]
            values[how].append(run(fn, iters))
    return [(how, (statistics.median(v), min(v), max(v))) for how, v in values.items()]


def replay_rows(n, iters, rounds):
    """Replay and eager cost of an n-kernel chain, every way."""
    cupy = require_cuda()
    entries = []
    stream = cupy.cuda.Stream(non_blocking=True)
    on_cupy = cupy_timer(cupy, stream)
    with stream:
        x = cupy.zeros(1024, dtype=cupy.float32)

        def chain():
            for _ in range(n):
                x.__iadd__(1e-3)

        chain()
        stream.synchronize()
        entries.append(("CuPy eager", chain, on_cupy))
        stream.begin_capture()
        chain()
        bare = stream.end_capture()
        entries.append(("bare CuPy Graph.launch", bare.launch, on_cupy))
        ours = Graph()
        with ours:
            chain()
        entries.append(("accelgraph Graph.replay", ours.replay, on_cupy))
    torch = _torch()
    if torch is not None:
        s = torch.cuda.Stream()
        on_torch = torch_timer(torch, s)
        with torch.cuda.stream(s):
            t = torch.zeros(1024, device="cuda")

            def tchain():
                for _ in range(n):
                    t.add_(1e-3)

            tchain()
            entries.append(("torch eager", tchain, on_torch))
            g = torch.cuda.CUDAGraph()
            g.capture_begin()
            tchain()
            g.capture_end()
            entries.append(("torch.cuda.CUDAGraph.replay", g.replay, on_torch))
            accel = getattr(getattr(torch, "accelerator", None), "Graph", None)
            if accel is not None:
                ag = accel()
                ag.capture_begin()
                tchain()
                ag.capture_end()
                entries.append(("torch.accelerator.Graph.replay", ag.replay, on_torch))
    rows = interleaved(entries, iters, rounds, warmup=10)
    return [{"workload": f"chain N={n}", "how": how, "us_median": m, "us_min": lo, "us_max": hi,
             "iters": iters, "rounds": rounds} for how, (m, lo, hi) in rows]


def mlp_rows(iters, rounds, batch=8, hidden=1024):
    cupy = require_cuda()
    scen = load_scenario(ROOT / "scenarios" / "mlp_decode.py")
    params = parse_params(scen.info.params, [f"batch={batch}", f"hidden={hidden}"])
    result = runner.capture(scen, params)
    on_cupy = cupy_timer(cupy, result.stream)
    entries = []
    with result.stream:
        state = scen.make_state(params)
        step = scen.graph_steps(state)["step"]
        entries.append(("CuPy eager (kernels/)", step, on_cupy))
        bare_state = scen.make_state(params)
        bare_step = scen.graph_steps(bare_state)["step"]
        pool = cupy.cuda.MemoryPool()
        with cupy.cuda.using_allocator(pool.malloc):
            result.stream.begin_capture(2)  # relaxed: CuPy's own pool may grow under capture
            bare_step()
            bare = result.stream.end_capture()
        entries.append(("bare CuPy Graph.launch", bare.launch, on_cupy))
        entries.append(("accelgraph Graph.replay", result.replay_all, on_cupy))
    torch = _torch()
    if torch is not None:
        torch.manual_seed(0)
        w1 = torch.randn(4 * hidden, hidden, device="cuda") / hidden ** 0.5
        b1 = torch.randn(4 * hidden, device="cuda") * 0.1
        w2 = torch.randn(hidden, 4 * hidden, device="cuda") / (4 * hidden) ** 0.5
        x = torch.randn(batch, hidden, device="cuda")
        F = torch.nn.functional

        def tstep():
            h = F.gelu(F.linear(x, w1, b1), approximate="tanh")
            return torch.softmax(F.linear(h, w2), dim=-1)

        s = torch.cuda.Stream()
        on_torch = torch_timer(torch, s)
        with torch.cuda.stream(s):
            for _ in range(3):
                tstep()
            entries.append(("torch eager", tstep, on_torch))
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=s):
                tstep()
            entries.append(("torch.cuda.CUDAGraph.replay", g.replay, on_torch))
    rows = interleaved(entries, iters, rounds, warmup=10)
    return [{"workload": f"MLP decode b={batch} h={hidden}", "how": how, "us_median": m, "us_min": lo,
             "us_max": hi, "iters": iters, "rounds": rounds} for how, (m, lo, hi) in rows]


def capture_rows(n, repeats):
    cupy = require_cuda()
    out = {"accelgraph": [], "bare CuPy": [], "torch": []}
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        x = cupy.zeros(1024, dtype=cupy.float32)
        x += 1
        stream.synchronize()
        for _ in range(repeats):
            t0 = time.perf_counter()
            stream.begin_capture()
            for _ in range(n):
                x.__iadd__(1e-3)
            g = stream.end_capture()
            out["bare CuPy"].append((time.perf_counter() - t0) * 1e3)
            del g
            ours = Graph()
            t0 = time.perf_counter()
            ours.capture_begin()
            for _ in range(n):
                x.__iadd__(1e-3)
            ours.capture_end()
            out["accelgraph"].append((time.perf_counter() - t0) * 1e3)
            ours.reset()
    torch = _torch()
    if torch is not None:
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            t = torch.zeros(1024, device="cuda")
            t.add_(1)
            torch.cuda.synchronize()
            for _ in range(repeats):
                g = torch.cuda.CUDAGraph()
                t0 = time.perf_counter()
                g.capture_begin()
                for _ in range(n):
                    t.add_(1e-3)
                g.capture_end()
                out["torch"].append((time.perf_counter() - t0) * 1e3)
                del g
    return [{"nodes": n, "how": how, "ms_median": statistics.median(v), "ms_min": min(v),
             "ms_max": max(v), "repeats": repeats} for how, v in out.items() if v]


def bucket_memory():
    require_cuda()
    scen = load_scenario(ROOT / "scenarios" / "buckets.py")
    params = parse_params(scen.info.params, [])
    shared = runner.capture(scen, params, pool="shared")
    private = runner.capture(scen, params, pool="private")
    row = {
        "buckets": params["buckets"], "hidden": params["hidden"],
        "accelgraph_shared_bytes": shared.pool_bytes,
        "accelgraph_private_bytes": private.pool_bytes,
        "largest_single_graph_bytes": max(g.pool_bytes for g in private.graphs),
    }
    row["shared_over_largest"] = row["accelgraph_shared_bytes"] / row["largest_single_graph_bytes"]
    del shared, private
    gc.collect()
    torch = _torch()
    if torch is not None:
        sizes = sorted({int(b) for b in params["buckets"].split(",")}, reverse=True)
        hidden = params["hidden"]
        w1 = torch.randn(4 * hidden, hidden, device="cuda")
        w2 = torch.randn(hidden, 4 * hidden, device="cuda")
        x = torch.randn(sizes[0], hidden, device="cuda")
        F = torch.nn.functional
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            for b in sizes:
                F.linear(F.gelu(F.linear(x[:b], w1)), w2)
        torch.cuda.synchronize()
        torch.cuda.empty_cache()  # torch.cuda.graph() empties the cache itself: start level
        before = torch.cuda.memory_reserved()
        handle = torch.cuda.graph_pool_handle()
        graphs, outs = [], []
        for b in sizes:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=handle, stream=s):
                outs.append(F.linear(F.gelu(F.linear(x[:b], w1)), w2))
            graphs.append(g)
        row["torch_shared_pool_reserved_bytes"] = torch.cuda.memory_reserved() - before
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    args = ap.parse_args(argv)
    cupy = require_cuda()
    device = device_name()
    rounds = 3 if args.quick else 7
    replay = []
    for n in (1, 10, 100, 1000):
        replay += replay_rows(n, iters=max(20, 20000 // n), rounds=rounds)
    replay += mlp_rows(iters=2000, rounds=rounds)
    capture = capture_rows(1000, 5) + capture_rows(10000, 3)
    memory = bucket_memory()
    torch = _torch()
    report = {"device": device, "date": time.strftime("%Y-%m-%d"),
              "torch": getattr(torch, "__version__", None), "cupy": cupy.__version__,
              "replay": replay, "capture": capture, "bucket_memory": memory}
    text = markdown(report)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(text)


def markdown(r) -> str:
    lines = [f"GPU peers, {r['device']}, {r['date']} (CuPy {r['cupy']}, torch {r['torch']})", "",
             "| workload | how | µs per iteration, median (min–max) | vs bare CuPy graph |",
             "|---|---|---:|---:|"]
    bare = {row["workload"]: row["us_median"] for row in r["replay"]
            if row["how"] == "bare CuPy Graph.launch"}
    for row in r["replay"]:
        ratio = row["us_median"] / bare[row["workload"]] if row["workload"] in bare else float("nan")
        lines.append(f"| {row['workload']} | {row['how']} | {row['us_median']:.2f} "
                     f"({row['us_min']:.2f}–{row['us_max']:.2f}) | {ratio:.3f} |")
    lines += ["", "| chain nodes | capture + instantiate | ms, median (min–max) | vs bare CuPy |",
              "|---:|---|---:|---:|"]
    cbare = {row["nodes"]: row["ms_median"] for row in r["capture"] if row["how"] == "bare CuPy"}
    for row in r["capture"]:
        lines.append(f"| {row['nodes']:,} | {row['how']} | {row['ms_median']:.1f} "
                     f"({row['ms_min']:.1f}–{row['ms_max']:.1f}) | "
                     f"{row['ms_median'] / cbare[row['nodes']]:.3f} |")
    m = r["bucket_memory"]
    torch_bytes = m.get("torch_shared_pool_reserved_bytes")
    torch_text = f"{torch_bytes:,} B reserved" if isinstance(torch_bytes, int) else "n/a"
    lines += ["", f"Buckets ({m['buckets']}, hidden {m['hidden']}): accelgraph shared pool "
              f"{m['accelgraph_shared_bytes']:,} B, private pools {m['accelgraph_private_bytes']:,} B, "
              f"largest single graph {m['largest_single_graph_bytes']:,} B "
              f"(shared / largest = {m['shared_over_largest']:.3f}); torch graphs sharing "
              f"graph_pool_handle(): {torch_text}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
