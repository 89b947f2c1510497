"""Unrolled replay: K steps in one graph against K launches of a one-step graph (GPU).

    python bench/bench_unroll.py [--n 1024] [--json PATH] [--markdown PATH]

For a launch-bound step (scenarios/saxpy.py on `n` floats: one tiny kernel) the launch is the
cost. Each K in 1, 4, 16, 64, 256: capture K consecutive steps into one graph (what
`accelgraph replay --unroll K` does) and time it per step against the one-step graph's
launch loop and eager steps, rounds interleaved, CUDA events. Also the capture +
instantiate time and the pool memory of each, which grow with K.
Target: K = 64 per-step GPU time <= 0.55x the one-step graph's.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from accelgraph_cli.cuda.device import device_name, require_cuda  # noqa: E402
from accelgraph_cli.run import protocol as runner  # noqa: E402
from accelgraph_cli.run.scenario import load_scenario, parse_params  # noqa: E402

SAXPY = ROOT / "scenarios" / "saxpy.py"


def curve(n, ks, iters, rounds):
    scen = load_scenario(SAXPY)
    params = parse_params(scen.info.params, [f"n={n}"])
    one = runner.capture(scen, params)
    rows = []
    for k in ks:
        unrolled = runner.capture(scen, params, unroll=k, warmup=False)
        checked = runner.check(unrolled, steps=1)
        eager, graph, per_step = runner.time_unrolled(one, unrolled, iters=iters, warmup=k,
                                                      rounds=rounds)
        rows.append({
            "unroll": k, "nodes": unrolled.node_count,
            "eager_us": eager.gpu_us.median, "graph_us": graph.gpu_us.median,
            "unrolled_us": per_step.gpu_us.median,
            "ratio": per_step.gpu_us.median / graph.gpu_us.median,
            "capture_ms": sum(g.capture_ms + g.instantiate_ms for g in unrolled.graphs),
            "pool_bytes": unrolled.pool_bytes, "check": checked.verdict,
        })
        del unrolled
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--iters", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args(argv)
    require_cuda()
    device = device_name()
    rows = curve(args.n, [1, 4, 16, 64, 256], args.iters, args.rounds)
    date = time.strftime("%Y-%m-%d")
    lines = [f"Unrolled replay of saxpy (n={args.n}), per step, {device}, {date}", "",
             "| K | nodes | eager µs | one-step graph µs | unrolled µs | unrolled / one-step "
             "| capture + instantiate ms | pool | check |", "|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['unroll']} | {r['nodes']} | {r['eager_us']:.2f} | {r['graph_us']:.2f} | "
                     f"{r['unrolled_us']:.3f} | {r['ratio']:.3f} | {r['capture_ms']:.2f} | "
                     f"{r['pool_bytes']:,} | {r['check']} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "date": date, "n": args.n,
                                               "rows": rows}, indent=2) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
