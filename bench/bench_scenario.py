"""accelgraph's capture/replay measurements vs bare CuPy doing the same work, one run (GPU).

    python bench/bench_scenario.py [--chain 1000] [--capture-chain 10000] [--json PATH] [--markdown PATH]

1. Speedup. `accelgraph replay` reports eager-vs-graph speedup for scenarios/elementwise_chain.py
   (n=1000). The same work is measured with bare CuPy: eager step() calls timed with CUDA events,
   and a graph captured with Stream.begin_capture/end_capture replayed with Graph.launch. The
   four (accelgraph eager/graph, bare eager/graph) run round by round in turn.
   Target: accelgraph's speedup within 5 % of the bare one.
2. Capture cost. Capture + instantiate of a 10,000-node chain through accelgraph's runner
   (what `accelgraph capture` times) vs bare CuPy begin_capture + step + end_capture (which
   instantiates). Median of several captures each, interleaved. Target: <= 1.2 x bare.
3. Capture guard. What the state snapshot (taken before capture, compared after it, to prove no
   work ran outside the graph; the walk that finds the state's arrays included) costs on
   scenarios/mlp_decode.py, against the capture +
   instantiate time of the same capture, as `accelgraph capture` runs it (warm-up on) and
   without the warm-up; and the whole capture call with the guard on and off. Target: <= 10 %.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from accelgraph_cli.cuda.cupti.watch import SwitchedOff  # noqa: E402
from accelgraph_cli.cuda.device import device_name, require_cuda  # noqa: E402
from accelgraph_cli.cuda.timing import measure_interleaved  # noqa: E402
from accelgraph_cli.run import protocol as runner  # noqa: E402
from accelgraph_cli.run.scenario import load_scenario, parse_params  # noqa: E402

CHAIN = ROOT / "scenarios" / "elementwise_chain.py"
MLP = ROOT / "scenarios" / "mlp_decode.py"


def speedups(n, iters, rounds, warmup):
    """Eager and graph, accelgraph's runner and bare CuPy, all four rounds interleaved."""
    require_cuda()
    scen = load_scenario(CHAIN)
    params = parse_params(scen.info.params, [f"n={n}"])
    result = runner.capture(scen, params)
    stream = result.stream
    with stream:
        ours_state = scen.make_state(params)
        ours_step = scen.graph_steps(ours_state)["step"]
        bare_eager_state = scen.make_state(params)
        bare_step = scen.graph_steps(bare_eager_state)["step"]
        bare_graph_state = scen.make_state(params)
        bare_graph_step = scen.graph_steps(bare_graph_state)["step"]
        bare_graph_step()  # kernels loaded before the bare capture, as the runner's warm-up does
        stream.synchronize()
        stream.begin_capture()
        bare_graph_step()
        bare = stream.end_capture()
        timed = measure_interleaved(
            {"ours_eager": ours_step, "ours_graph": result.replay_all,
             "bare_eager": bare_step, "bare_graph": bare.launch},
            iters=iters, rounds=rounds, warmup=warmup, stream=stream,
        )
    med = {name: t.gpu_us.median for name, t in timed.items()}
    ours = med["ours_eager"] / med["ours_graph"]
    bare_speedup = med["bare_eager"] / med["bare_graph"]
    return {
        "chain_nodes": n, "iters": iters, "rounds": rounds,
        "accelgraph_eager_us": med["ours_eager"], "accelgraph_graph_us": med["ours_graph"],
        "accelgraph_speedup": ours,
        "bare_eager_us": med["bare_eager"], "bare_graph_us": med["bare_graph"],
        "bare_speedup": bare_speedup, "speedup_ratio": ours / bare_speedup,
        "rounds_us": {name: t.gpu_us.values for name, t in timed.items()},
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


class _NoSnapshot:
    """The guard switched off (bench only): what a capture costs without it."""

    regions: list = []
    take_ms = compare_ms = 0.0
    nbytes = 0

    @classmethod
    def take(cls, arrays, stream, **options):
        return cls()

    def wait(self):
        pass

    def start_compare(self):
        pass

    def changed(self):
        return []


def guard_cost(repeats):
    """The capture guard on mlp_decode: its host time (snapshot + compare, waits included,
    and the execution watch)
    against the capture + instantiate time of the same capture, with the warm-up (as
    `accelgraph capture` runs) and without it; and the whole runner.capture call with the
    guard and with it switched off, to see what it adds to the wall clock (switched off, the
    outputs are still flipped and flipped back around the capture, a device sync each way,
    so the difference leaves those out). Each repeat runs the three ways in the next of
    their orders."""
    scen = load_scenario(MLP)
    params = parse_params(scen.info.params, [])
    runner.capture(scen, params)  # warm: kernels compiled, pools created
    ways = {"cli": [], "off": [], "no_warmup": []}
    real, real_watch = runner.StateSnapshot, runner.ExecutionWatch
    watch_ms: list = []
    orders = list(itertools.permutations(ways))
    for repeat in range(repeats):
        for way in orders[repeat % len(orders)]:
            rows = ways[way]
            runner.StateSnapshot = _NoSnapshot if way == "off" else real
            runner.ExecutionWatch = SwitchedOff if way == "off" else real_watch
            try:
                t0 = time.perf_counter()
                result = runner.capture(scen, params, warmup=way != "no_warmup")
                wall = (time.perf_counter() - t0) * 1e3
            finally:
                runner.StateSnapshot = real
                runner.ExecutionWatch = real_watch
            g = result.guard_summary()
            if way == "cli":
                watch_ms.append(g["watch_ms"])
            rows.append((g["snapshot_ms"] + g["compare_ms"] + g["watch_ms"],
                         sum(c.capture_ms + c.instantiate_ms for c in result.graphs), wall))
            if way == "cli":
                state_bytes = g["bytes"]
            del result

    def med(way, column):
        return statistics.median(row[column] for row in ways[way])

    return {
        "scenario": "mlp_decode", "repeats": repeats, "state_bytes": state_bytes,
        "guard_ms": med("cli", 0), "capture_ms": med("cli", 1),
        "watch_ms": statistics.median(watch_ms),
        "ratio": med("cli", 0) / med("cli", 1),
        "no_warmup_guard_ms": med("no_warmup", 0), "no_warmup_capture_ms": med("no_warmup", 1),
        "no_warmup_ratio": med("no_warmup", 0) / med("no_warmup", 1),
        "wall_ms": med("cli", 2), "wall_off_ms": med("off", 2),
        "added_ms": med("cli", 2) - med("off", 2),
        "rows": ways,
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
    gc = guard_cost(max(args.repeats, 5))
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
        f"| capture guard (snapshot + compare of {gc['state_bytes'] / 2**20:.1f} MiB, and the "
        f"execution watch: {gc['watch_ms']:.3f} ms of it), "
        f"mlp_decode as `accelgraph capture` runs it, vs its capture + instantiate | "
        f"{gc['guard_ms']:.3f} ms | {gc['capture_ms']:.3f} ms (capture) | {gc['ratio']:.3f} | "
        f"<= 0.10 |\n"
        f"| the same without the warm-up | "
        f"{gc['no_warmup_guard_ms']:.3f} ms | {gc['no_warmup_capture_ms']:.3f} ms (capture) | "
        f"{gc['no_warmup_ratio']:.3f} | – |\n"
        f"| the whole runner.capture call, guard on vs off | {gc['wall_ms']:.2f} ms | "
        f"{gc['wall_off_ms']:.2f} ms (off) | {gc['wall_ms'] / gc['wall_off_ms']:.3f} | – |\n"
    )
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "date": date, "speedup": sp,
                                               "capture": cc, "guard": gc}, indent=2) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
