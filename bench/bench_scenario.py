"""accelgraph's capture/replay measurements vs bare CuPy doing the same work, one run (GPU).

    python bench/bench_scenario.py [--chain 1000] [--capture-chain 10000] [--json PATH] [--markdown PATH]

1. Speedup. `accelgraph replay` reports eager-vs-graph speedup for scenarios/elementwise_chain.py
   (n=1000). The same work is measured with bare CuPy: eager step() calls timed with CUDA events,
   and a graph captured with Stream.begin_capture/end_capture replayed with Graph.launch.
   Target: accelgraph's speedup within 5 % of the bare one.
2. Capture cost. Capture + instantiate of a 10,000-node chain through accelgraph's runner
   (what `accelgraph capture` times) vs bare CuPy begin_capture + step + end_capture (which
   instantiates). Median of several captures each, interleaved. Target: <= 1.2 x bare.
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

from accelgraph_cli import runner  # noqa: E402
from accelgraph_cli._cuda import device_name, require_cuda  # noqa: E402
from accelgraph_cli.scenario import load_scenario, parse_params  # noqa: E402
from accelgraph_cli.timing import measure  # noqa: E402

CHAIN = ROOT / "scenarios" / "elementwise_chain.py"


def bare_speedup(cupy, scen, params, iters, rounds, warmup):
    """Eager vs bare CuPy graph on the same scenario work, CUDA-event timed."""
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        eager_state = scen.make_state(params)
        step = scen.graph_steps(eager_state)["step"]
        eager = measure(step, iters=iters, rounds=rounds, warmup=warmup, stream=stream)
        graph_state = scen.make_state(params)
        graph_step = scen.graph_steps(graph_state)["step"]
        stream.synchronize()
        stream.begin_capture()
        graph_step()
        bare = stream.end_capture()
        graph = measure(bare.launch, iters=iters, rounds=rounds, warmup=warmup, stream=stream)
    return eager, graph


def speedups(n, iters, rounds, warmup):
    cupy = require_cuda()
    scen = load_scenario(CHAIN)
    params = parse_params(scen.info.params, [f"n={n}"])
    result = runner.capture(scen, params)
    ours_eager, ours_graph = runner.time_replay(result, iters=iters, warmup=warmup, rounds=rounds)
    bare_eager, bare_graph = bare_speedup(cupy, scen, params, iters, rounds, warmup)
    ours = ours_eager.gpu_us.median / ours_graph.gpu_us.median
    bare = bare_eager.gpu_us.median / bare_graph.gpu_us.median
    return {
        "chain_nodes": n, "iters": iters, "rounds": rounds,
        "accelgraph_eager_us": ours_eager.gpu_us.median, "accelgraph_graph_us": ours_graph.gpu_us.median,
        "accelgraph_speedup": ours,
        "bare_eager_us": bare_eager.gpu_us.median, "bare_graph_us": bare_graph.gpu_us.median,
        "bare_speedup": bare, "speedup_ratio": ours / bare,
    }


def capture_costs(n, repeats):
    cupy = require_cuda()
    scen = load_scenario(CHAIN)
    params = parse_params(scen.info.params, [f"n={n}"])
    ours, bare = [], []
    runner.capture(scen, params)  # warm: kernels compiled, pools created
    for _ in range(repeats):
        result = runner.capture(scen, params, warmup=False)
        g = result.graphs[0]
        ours.append(g.capture_ms + g.instantiate_ms)
        del result
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            state = scen.make_state(params)
            step = scen.graph_steps(state)["step"]
            stream.synchronize()
            t0 = time.perf_counter()
            stream.begin_capture()
            step()
            graph = stream.end_capture()
            bare.append((time.perf_counter() - t0) * 1e3)
            del graph
    return {
        "chain_nodes": n, "repeats": repeats,
        "accelgraph_ms": statistics.median(ours), "accelgraph_ms_all": ours,
        "bare_ms": statistics.median(bare), "bare_ms_all": bare,
        "ratio": statistics.median(ours) / statistics.median(bare),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chain", type=int, default=1000)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--capture-chain", type=int, default=10000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args(argv)
    require_cuda()
    device = device_name()
    sp = speedups(args.chain, args.iters, args.rounds, warmup=5)
    cc = capture_costs(args.capture_chain, args.repeats)
    date = time.strftime("%Y-%m-%d")
    text = (
        f"Scenario measurements vs bare CuPy, {device}, {date}\n\n"
        f"| measurement | accelgraph | bare CuPy | ratio | target |\n|---|---:|---:|---:|---|\n"
        f"| elementwise_chain n={sp['chain_nodes']}: speedup (eager/graph GPU time) | "
        f"{sp['accelgraph_speedup']:.2f}x "
        f"({sp['accelgraph_eager_us']:.0f}/{sp['accelgraph_graph_us']:.0f} µs) | "
        f"{sp['bare_speedup']:.2f}x ({sp['bare_eager_us']:.0f}/{sp['bare_graph_us']:.0f} µs) | "
        f"{sp['speedup_ratio']:.3f} | within 5 % |\n"
        f"| capture + instantiate, {cc['chain_nodes']:,}-node chain (median of {cc['repeats']}) | "
        f"{cc['accelgraph_ms']:.1f} ms | {cc['bare_ms']:.1f} ms | {cc['ratio']:.3f} | <= 1.2 |\n"
    )
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "date": date, "speedup": sp,
                                               "capture": cc}, indent=2) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
