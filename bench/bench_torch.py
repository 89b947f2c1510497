"""The torch backend against bare PyTorch, side by side in one run (GPU with torch).

    python bench/bench_torch.py [--json PATH] [--markdown PATH]

1. Replay per call of scenarios/gpt_decode.py: accelgraph's TorchGraph.replay against a bare
   torch.cuda.CUDAGraph.replay of the same step captured on another state, rounds interleaved,
   CUDA events. Target: <= 1.05x bare.
2. Capture + instantiate of the same decode step: accelgraph's runner as `accelgraph capture`
   runs it (the state to capture made, then a warm-up on a throwaway state made after it, then
   capture_begin .. the step .. capture_end + instantiate of the untouched state) against bare
   CUDAGraph.capture_begin / step / capture_end (which instantiates) in torch's usual pattern:
   the step warmed up on the very state it then captures. Target: <= 1.2x that. Medians, the
   three ways rotated each repeat. Also reported: bare torch warming up on a throwaway state
   and only then making the state it captures (the runner's order before 2026-12-04), which
   shows what a setup() between warm-up and capture costs: it leaves the host's caches cold
   for the step's code.
3. Memory of scenarios/torch_buckets.py (one graph per batch size 256..1): all graphs sharing
   one pool vs each in its own pool, against the largest single graph's own memory.
   Target: shared total <= 1.05x the largest graph.
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
from accelgraph_cli.cuda.timing import measure_interleaved  # noqa: E402
from accelgraph_cli.run import protocol as runner  # noqa: E402
from accelgraph_cli.run.scenario import load_scenario, parse_params  # noqa: E402

DECODE = ROOT / "scenarios" / "gpt_decode.py"
BUCKETS = ROOT / "scenarios" / "torch_buckets.py"


def _bare_graph(torch, scen, params, step_name="step", warm="other"):
    """A bare torch.cuda.CUDAGraph of the scenario's step on a new state.

    ``warm="other"``: the step first runs on a throwaway state, then a fresh state is made and
    captured (a setup() between warm-up and capture, the runner's order before 2026-12-04);
    ``warm="same"``: the step runs once on the state that is then captured. Returns (graph,
    capture ms, state).
    """
    if warm == "other":
        scratch = scen.make_state(params)
        scen.graph_steps(scratch)[step_name]()
        torch.cuda.synchronize()
        del scratch
    state = scen.make_state(params)
    step = scen.graph_steps(state)[step_name]
    if warm == "same":
        step()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    t0 = time.perf_counter()
    graph.capture_begin()
    step()
    graph.capture_end()
    return graph, (time.perf_counter() - t0) * 1e3, state


def replay_overhead(torch, iters, rounds):
    scen = load_scenario(DECODE)
    params = parse_params(scen.info.params, [])
    result = runner.capture(scen, params)
    ours = result.graphs[0].graph
    with result.backend.use(result.streams):
        bare, _, _keep = _bare_graph(torch, scen, params, warm="same")
        timed = measure_interleaved({"accelgraph": ours.replay, "bare": bare.replay},
                                    iters=iters, rounds=rounds, warmup=20, stream=result.stream)
    med = {k: t.gpu_us.median for k, t in timed.items()}
    host = {k: t.host_us.median for k, t in timed.items()}
    return {"nodes": result.node_count, "accelgraph_us": med["accelgraph"], "bare_us": med["bare"],
            "accelgraph_host_us": host["accelgraph"], "bare_host_us": host["bare"],
            "ratio": med["accelgraph"] / med["bare"], "host_ratio": host["accelgraph"] / host["bare"]}


def capture_cost(torch, repeats):
    scen = load_scenario(DECODE)
    params = parse_params(scen.info.params, [])
    first = runner.capture(scen, params)  # warm: kernels loaded, cuBLAS workspaces made
    times = {"ours": [], "bare": [], "bare_same": []}

    def ours():
        result = runner.capture(scen, params)  # as `accelgraph capture`: warm-up, then capture
        g = result.graphs[0]
        return g.capture_ms + g.instantiate_ms

    def bare(warm):
        with first.backend.use(first.streams):
            graph, ms, state = _bare_graph(torch, scen, params, warm=warm)
            del graph, state
        return ms

    ways = [("ours", ours), ("bare", lambda: bare("other")), ("bare_same", lambda: bare("same"))]
    for i in range(repeats):
        for name, fn in ways[i % 3:] + ways[:i % 3]:  # each way first as often as the others
            times[name].append(fn())
    med = {name: statistics.median(values) for name, values in times.items()}
    return {"repeats": repeats, "accelgraph_ms": med["ours"], "accelgraph_ms_all": times["ours"],
            "bare_ms": med["bare_same"], "bare_ms_all": times["bare_same"],
            "ratio": med["ours"] / med["bare_same"],
            "bare_fresh_state_ms": med["bare"], "bare_fresh_state_ms_all": times["bare"],
            "ratio_vs_fresh_state": med["ours"] / med["bare"]}


def bucket_memory():
    scen = load_scenario(BUCKETS)
    params = parse_params(scen.info.params, [])
    shared = runner.capture(scen, params, pool="shared")
    shared_bytes = shared.pool_bytes
    per_graph_shared = {g.name: g.pool_added for g in shared.graphs}
    del shared
    private = runner.capture(scen, params, pool="private")
    largest = max(g.pool_bytes for g in private.graphs)
    return {"graphs": len(private.graphs), "shared_bytes": shared_bytes,
            "private_bytes": private.pool_bytes, "largest_graph_bytes": largest,
            "shared_added_per_graph": per_graph_shared,
            "shared_over_largest": shared_bytes / largest,
            "shared_over_private": shared_bytes / private.pool_bytes}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args(argv)
    require_cuda()
    import torch

    device = device_name()
    rp = replay_overhead(torch, args.iters, args.rounds)
    cc = capture_cost(torch, args.repeats)
    mem = bucket_memory()
    date = time.strftime("%Y-%m-%d")
    text = (
        f"torch backend vs bare PyTorch (torch {torch.__version__}), {device}, {date}\n\n"
        "| measurement | accelgraph | bare torch | ratio | target |\n|---|---:|---:|---:|---|\n"
        f"| gpt_decode replay, GPU µs per call ({rp['nodes']} nodes) | {rp['accelgraph_us']:.2f} | "
        f"{rp['bare_us']:.2f} | {rp['ratio']:.3f} | <= 1.05 |\n"
        f"| gpt_decode replay, host µs per call | {rp['accelgraph_host_us']:.2f} | "
        f"{rp['bare_host_us']:.2f} | {rp['host_ratio']:.3f} | |\n"
        f"| gpt_decode capture + instantiate, ms (median of {cc['repeats']}) | "
        f"{cc['accelgraph_ms']:.2f} | {cc['bare_ms']:.2f} | {cc['ratio']:.3f} | <= 1.2 |\n"
        f"| same, bare making the state to capture after its warm-up on another "
        f"| {cc['accelgraph_ms']:.2f} | {cc['bare_fresh_state_ms']:.2f} | "
        f"{cc['ratio_vs_fresh_state']:.3f} | |\n"
        f"| torch_buckets ({mem['graphs']} graphs): shared pool vs largest graph, bytes | "
        f"{mem['shared_bytes']:,} | {mem['largest_graph_bytes']:,} | "
        f"{mem['shared_over_largest']:.3f} | <= 1.05 |\n"
        f"| torch_buckets: shared pool vs private pools, bytes | {mem['shared_bytes']:,} | "
        f"{mem['private_bytes']:,} | {mem['shared_over_private']:.3f} | |\n"
    )
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "date": date,
                                               "torch": torch.__version__, "replay": rp,
                                               "capture": cc, "buckets": mem}, indent=2) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
