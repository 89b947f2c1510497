"""Graph.replay() per call vs a bare CuPy Graph.launch loop, same workloads, one run (GPU).

    python bench/bench_replay.py [--iters 20000] [--rounds 7] [--json PATH] [--markdown PATH]

For 1-node and 1000-node graphs (chains of tiny in-place kernels), captures the work once with
bare CuPy (Stream.begin_capture/end_capture) and once with accelgraph_cli.Graph, then times
back-to-back launches of each, rounds interleaved (bare, ours, bare, ours...) so clock drift
hits both alike. Per-launch device time from CUDA events, host submit time from perf_counter;
medians over rounds. Target: ours <= 1.05 x bare.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accelgraph_cli import Graph  # noqa: E402
from accelgraph_cli.cuda.device import device_name, require_cuda  # noqa: E402
from accelgraph_cli.cuda.timing import measure_interleaved  # noqa: E402


def chain_work(x, n):
    for i in range(n):
        if i % 2:
            x *= 1.0000001
        else:
            x += 1e-7


def bench(nodes, iters, rounds):
    cupy = require_cuda()
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        x = cupy.ones(256, dtype=cupy.float32)
        chain_work(x, 2)
        stream.synchronize()
        stream.begin_capture()
        chain_work(x, nodes)
        bare = stream.end_capture()
        ours = Graph()
        with ours:
            chain_work(x, nodes)
        launches = {"bare CuPy Graph.launch": bare.launch, "accelgraph Graph.replay": ours.replay}
        n = max(20, iters // max(1, nodes // 10)) if nodes > 1 else iters
        timed = measure_interleaved(launches, iters=n, rounds=rounds, warmup=min(n, 200),
                                    stream=stream)
    gpu = {name: t.gpu_us.values for name, t in timed.items()}
    host = {name: t.host_us.values for name, t in timed.items()}
    rows = []
    for name in launches:
        rows.append({
            "graph_nodes": nodes, "what": name, "iters": n, "rounds": rounds,
            "gpu_us_median": statistics.median(gpu[name]), "gpu_us_min": min(gpu[name]),
            "gpu_us_max": max(gpu[name]), "host_us_median": statistics.median(host[name]),
        })
    base = rows[0]["gpu_us_median"]
    for r in rows:
        r["ratio_vs_bare"] = r["gpu_us_median"] / base
    return rows


def markdown(rows, device):
    lines = [f"Replay per call, {device}, {time.strftime('%Y-%m-%d')}", "",
             "| graph nodes | launcher | µs/launch GPU (median, min–max) | host µs | ratio vs bare |",
             "|---:|---|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['graph_nodes']:,} | {r['what']} | {r['gpu_us_median']:.3f} "
            f"({r['gpu_us_min']:.3f}–{r['gpu_us_max']:.3f}) | {r['host_us_median']:.3f} | "
            f"{r['ratio_vs_bare']:.3f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--nodes", type=int, nargs="*", default=[1, 1000])
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args(argv)
    require_cuda()
    device = device_name()
    rows = []
    for n in args.nodes:
        rows.extend(bench(n, args.iters, args.rounds))
    text = markdown(rows, device)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "date": time.strftime("%Y-%m-%d"),
                                               "rows": rows}, indent=2) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(text)
    worst = max(r["ratio_vs_bare"] for r in rows)
    print(f"worst ratio accelgraph/bare: {worst:.3f} (target <= 1.05)")


if __name__ == "__main__":
    main()
