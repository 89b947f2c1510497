"""Capture + instantiate of small graphs: accelgraph's Graph vs bare CuPy vs torch (GPU).

    python bench/bench_capture.py [--kernels 4,16,64,1024] [--repeats 41] [--profile N]
                                  [--json PATH] [--markdown PATH]

A step of N tiny kernels (kernels.add_mod1 on 1,024 floats; torch: ``x.add_(0.25)``), with and
without one allocation at its start (the step's output made inside it, as frameworks do).
Each repeat, interleaved across the three, times from nothing to an instantiated graph:

* accelgraph: ``Graph(pool=new private pool, capture_error_mode="global")``, debug mode on
  (what ``accelgraph capture`` does), capture_begin, the step, capture_end (which instantiates);
* bare CuPy: ``Stream.begin_capture()``, the step, ``Stream.end_capture()`` (which instantiates);
* torch: ``torch.cuda.CUDAGraph()``, capture_begin, the step, capture_end (which instantiates).

Medians of host wall time; each repeat runs the ways in the next of their orders (all of
them in turn). Target: accelgraph <= 1.2x bare CuPy at 4 kernels, with and without the
allocation, the kernels launched as CuPy launches them (as the target was set); every size is
also measured with the kernels launched with programmatic dependencies, as captures launch
them by default (the same launches for accelgraph and bare CuPy, each slower). Also the
first capture in a fresh process (phases of a child process: imports, CUDA start, kernel
load, first capture), for accelgraph and bare CuPy, with the modules' bytecode compiled
beforehand as an installed package's is.
``--profile N`` prints cProfile's top functions of N accelgraph captures (4 kernels, allocating).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import itertools
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from accelgraph_cli.cuda import launch  # noqa: E402
from accelgraph_cli.cuda.device import device_name, require_cuda  # noqa: E402

N_FLOATS = 1024


def cupy_step(cupy, kernels, x, n_kernels, allocate):
    def step():
        y = cupy.empty_like(x) if allocate else x
        if allocate:
            kernels.axpby(1.0, x, 0.0, x, y)
        for _ in range(n_kernels - (1 if allocate else 0)):
            kernels.add_mod1(y, 0.25)
        step.out = y
    return step


def torch_step(torch, x, n_kernels, allocate):
    def step():
        y = torch.empty_like(x) if allocate else x
        if allocate:
            y.copy_(x)
        for _ in range(n_kernels - (1 if allocate else 0)):
            y.add_(0.25)
        step.out = y
    return step


class Harness:
    def __init__(self, n_kernels, allocate, with_torch):
        self.cupy = require_cuda()
        from accelgraph_cli import kernels
        from accelgraph_cli.cuda.graph import Graph
        from accelgraph_cli.cuda.pools import new_pool

        self.Graph, self.new_pool = Graph, new_pool
        cupy = self.cupy
        kernels.preload("elementwise.cu")
        self.stream = cupy.cuda.Stream(non_blocking=True)
        with self.stream:
            self.x = cupy.zeros(N_FLOATS, dtype=cupy.float32)
            self.step = cupy_step(cupy, kernels, self.x, n_kernels, allocate)
            self.step()  # warm: kernels looked up, pool blocks cached
        self.stream.synchronize()
        self.torch = None
        if with_torch:
            import torch

            self.torch = torch
            self.tstream = torch.cuda.Stream()
            with torch.cuda.stream(self.tstream):
                self.tx = torch.zeros(N_FLOATS, device="cuda")
                self.tstep = torch_step(torch, self.tx, n_kernels, allocate)
                self.tstep()
            torch.cuda.synchronize()

    def accelgraph(self):
        t0 = time.perf_counter()
        graph = self.Graph(pool=self.new_pool("private"), capture_error_mode="global")
        graph.enable_debug_mode()
        with self.stream:
            graph.capture_begin()
            self.step()
            graph.capture_end()
        t1 = time.perf_counter()
        assert graph.is_instantiated
        return (t1 - t0) * 1e6, graph

    def bare_cupy(self):
        t0 = time.perf_counter()
        with self.stream:
            self.stream.begin_capture()
            self.step()
            graph = self.stream.end_capture()
            if not graph.graphExec:  # a CuPy that instantiates lazily: count it here
                graph.upload(self.stream)
        t1 = time.perf_counter()
        return (t1 - t0) * 1e6, graph

    def torch_graph(self):
        torch = self.torch
        t0 = time.perf_counter()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(self.tstream):
            graph.capture_begin()
            self.tstep()
            graph.capture_end()
        t1 = time.perf_counter()
        return (t1 - t0) * 1e6, graph

    def run(self, repeats):
        ways = {"accelgraph": self.accelgraph, "cupy": self.bare_cupy}
        if self.torch is not None:
            ways["torch"] = self.torch_graph
        times = {k: [] for k in ways}
        for fn in ways.values():  # warm each path once
            fn()
        orders = list(itertools.permutations(ways))
        for repeat in range(repeats):
            # Every order of the ways in turn, so each follows each other one (whose capture
            # may leave the host's caches cold for it) as often, and runs first as often.
            for name in orders[repeat % len(orders)]:
                us, graph = ways[name]()
                times[name].append(us)
                del graph
        self.stream.synchronize()
        return {k: statistics.median(v) for k, v in times.items()}


FRESH = r"""
import json, sys, time
t = {}
t0 = time.perf_counter()
import cupy
t["import_cupy"] = time.perf_counter()
stream = cupy.cuda.Stream(non_blocking=True)
t["cuda_start"] = time.perf_counter()
sys.path.insert(0, sys.argv[2])
from accelgraph_cli import kernels
kernels.preload("elementwise.cu")
with stream:
    x = cupy.zeros(1024, dtype=cupy.float32)
    kernels.add_mod1(x, 0.25)
stream.synchronize()
t["kernels_loaded"] = time.perf_counter()
def step():
    y = cupy.empty_like(x)
    kernels.axpby(1.0, x, 0.0, x, y)
    for _ in range(3):
        kernels.add_mod1(y, 0.25)
if sys.argv[1] == "accelgraph":
    from accelgraph_cli.cuda.graph import Graph
    from accelgraph_cli.cuda.pools import new_pool
    t["import_graph"] = time.perf_counter()
    g = Graph(pool=new_pool("private"), capture_error_mode="global")
    g.enable_debug_mode()
    with stream:
        g.capture_begin()
        step()
        g.capture_end()
else:
    t["import_graph"] = time.perf_counter()
    with stream:
        stream.begin_capture()
        step()
        g = stream.end_capture()
        if not g.graphExec:
            g.upload(stream)
t["first_capture"] = time.perf_counter()
prev, out = t0, {}
for k, v in t.items():
    out[k] = (v - prev) * 1e3
    prev = v
print(json.dumps(out))
"""


def fresh_process(way, repeats=5):
    """Phases of a fresh child process (ms), medians over ``repeats`` children.

    The children read compiled bytecode, as an installed package's imports do: with
    PYTHONDONTWRITEBYTECODE set (or a source tree that cannot be written) every child would
    compile accelgraph's modules again, about 10 ms that no installed copy pays. One unmeasured
    child writes the bytecode into a cache of the bench's own, which the measured ones read.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    runs = []
    with tempfile.TemporaryDirectory(prefix="accelgraph-bench-pyc-") as cache:
        env["PYTHONPYCACHEPREFIX"] = cache
        for i in range(repeats + 1):
            done = subprocess.run([sys.executable, "-c", FRESH, way, str(ROOT)], capture_output=True,
                                  text=True, check=True, env=env)
            if i:
                runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def profile(n):
    harness = Harness(4, True, with_torch=False)
    harness.accelgraph()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        # Each graph dropped as the timed runs drop theirs, so its block goes back to the
        # pool's cache: graphs kept alive would make every capture a fresh cudaMalloc.
        harness.accelgraph()
    prof.disable()
    stats = pstats.Stats(prof)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(30)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default="4,16,64,1024")
    ap.add_argument("--repeats", type=int, default=41)
    ap.add_argument("--profile", type=int, default=0)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args(argv)
    require_cuda()
    if args.profile:
        profile(args.profile)
        return 0
    with_torch = not args.no_torch
    if with_torch:
        try:
            import torch

            with_torch = torch.cuda.is_available()
        except ImportError:
            with_torch = False
    rows = []
    gc.disable()  # a collection in the middle of one capture would land on one way alone
    default = launch.set_enabled(True)
    try:
        # The kernels launched as CuPy launches them (the figure #16 grades, as first
        # measured), then with programmatic dependencies, as captures launch them by default:
        # the same launches for accelgraph and bare CuPy either way
        for programmatic in (False, True):
            launch.set_enabled(programmatic)
            for n in [int(k) for k in args.kernels.split(",")]:
                for allocate in (False, True):
                    med = Harness(n, allocate, with_torch).run(args.repeats)
                    rows.append({"kernels": n, "allocates": allocate,
                                 "launch": "programmatic" if programmatic else "plain",
                                 **{f"{k}_us": v for k, v in med.items()},
                                 "ratio_cupy": med["accelgraph"] / med["cupy"]})
                    gc.collect()
    finally:
        launch.set_enabled(default)
        gc.enable()
    fresh = {way: fresh_process(way) for way in ("accelgraph", "cupy")}
    device = device_name()
    date = time.strftime("%Y-%m-%d")
    lines = [f"Capture + instantiate, {device}, {date} (host µs, median of {args.repeats}, interleaved)",
             "", "| kernels | allocates | kernels launched | accelgraph | bare CuPy | torch | "
             "accelgraph / CuPy |", "|---:|---|---|---:|---:|---:|---:|"]
    for r in rows:
        torch_us = f"{r['torch_us']:.1f}" if "torch_us" in r else "–"
        lines.append(f"| {r['kernels']} | {'yes' if r['allocates'] else 'no'} | {r['launch']} | "
                     f"{r['accelgraph_us']:.1f} | {r['cupy_us']:.1f} | {torch_us} | "
                     f"{r['ratio_cupy']:.2f} |")
    lines += ["", "First capture in a fresh process (ms, median of 5 children, bytecode compiled):", "",
              "| phase | " + " | ".join(fresh) + " |", "|---|" + "---:|" * len(fresh)]
    for phase in fresh["accelgraph"]:
        lines.append(f"| {phase} | " + " | ".join(f"{fresh[w][phase]:.2f}" for w in fresh) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "date": date, "rows": rows,
                                               "fresh_process": fresh}, indent=2) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
