"""Benchmark: parse, `accelgraph show` and diff of large CUDA dumps (1k, 10k, 100k nodes).

    python bench/bench_bigdumps.py [--dumps bench/dumps] [--json out.json]

Reads the dumps that ``python bench/gen_big_dumps.py`` records on a GPU (chains of 1,000,
10,000 and 100,000 kernels in verbose form, a 50,004-node fork/join in basic form) and
measures, on this machine:

* parse: load_model (gunzip included), in MB/s of DOT text, by wall time and by CPU time
  (the steadier figure on a loaded machine), repeated in one process; and the first
  load_model of a new process ("cold"), as `show` and `diff` run it: no regex compiled yet,
  none of the previous run's memory to reuse;
* show: ``python -m accelgraph_cli show FILE`` as a new process: wall time, CPU time of the
  child (user + sys) and peak RSS (and the same for a small recorded dump, start to exit);
* diff: diff_models of each graph against a renumbered copy of itself (ids permuted, nodes
  and edges shuffled, pointers re-drawn: identical, every edge checked), and against a
  renumbered copy with bench_diff's mutations (one grid changed, one node removed, 50
  inserted, a branch added at a join: the counts checked), CPU time.

Each is run --repeat times; the median and the best are reported (the targets read the
median: a figure that only the best run meets is not met). Growth: for each step of the
chains (1k -> 10k -> 100k nodes), the time per node of the larger over that of the smaller
(1.0 is linear; the target is at most 1.5), from the medians.

Fails (exit 2) with the command to run when the dumps are missing: they must come from CUDA.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from rich.console import Console  # noqa: E402 - after the sys.path lines above
from rich.table import Table  # noqa: E402

DEFAULT_DUMPS = ROOT / "bench" / "dumps"
FILES = ("chain1k_verbose.dot.gz", "chain10k_verbose.dot.gz", "chain100k_verbose.dot.gz",
         "forkjoin50k_basic.dot.gz")
SMALL_DUMP = ROOT / "tests" / "data" / "dumps" / "scenario_saxpy_verbose.dot"
GENERATOR = "python bench/gen_big_dumps.py bench/dumps"


def parse_time(path: Path, repeat: int) -> tuple[list[float], list[float], object]:
    """Wall and CPU times (s) of load_model over ``repeat`` runs, and the model.

    CPU time (this process) is the steadier figure on a machine busy with other work.
    """
    from accelgraph_cli.dot.parse import load_model

    walls, cpus, model = [], [], None
    for _ in range(repeat):
        model = None  # the previous model is not kept alive while the next one is built
        start, start_cpu = time.perf_counter(), time.process_time()
        model = load_model(path)
        cpus.append(time.process_time() - start_cpu)
        walls.append(time.perf_counter() - start)
    return walls, cpus, model


# Runs a command; prints its wall time, its CPU time (user + sys) and the peak RSS of that
# one child, in bytes.
_MEASURE = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)\n"
    "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss * 1024)\n"
)


# Times the first load_model of a new process: wall and CPU seconds.
_COLD_PARSE = (
    "import sys, time\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "from accelgraph_cli.dot.parse import load_model\n"
    "t, c = time.perf_counter(), time.process_time()\n"
    "load_model(sys.argv[2])\n"
    "print(time.perf_counter() - t, time.process_time() - c)\n"
)


def cold_parse_time(path: Path, repeat: int) -> tuple[list[float], list[float]]:
    """Wall and CPU times (s) of the first load_model in a new process, each run."""
    walls, cpus = [], []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", _COLD_PARSE, str(ROOT), str(path)],
                             capture_output=True, text=True, check=True, cwd=ROOT).stdout.split()
        walls.append(float(out[0]))
        cpus.append(float(out[1]))
    return walls, cpus


# The chains, smallest first, whose time per node the growth lines compare.
CHAINS = FILES[:3]
GROWTH_OF = {"parse_s": "parse (wall)", "parse_cpu_s": "parse (CPU)", "parse_cold_s": "parse, cold",
             "diff_s": "diff", "diff_mutated_s": "diff mutated"}


def growth(results: list[dict]) -> dict[str, list[float]]:
    """Per measure, the time per node of each chain over that of the chain before it."""
    chains = [r for name in CHAINS for r in results if r["file"] == name]
    return {key: [round((big[key] / big["nodes"]) / (small[key] / small["nodes"]), 2)
                  for small, big in zip(chains, chains[1:])]
            for key in GROWTH_OF}


def show_process(path: Path, repeat: int) -> tuple[list[float], list[float], int]:
    """Wall and CPU times (s) of `accelgraph show FILE` in a new process, each run, and the
    largest peak RSS (bytes)."""
    walls, cpus, rss = [], [], 0
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", _MEASURE, sys.executable, "-m", "accelgraph_cli", "show", str(path)],
            capture_output=True, text=True, check=True, cwd=ROOT,
        ).stdout.split()
        walls.append(float(out[0]))
        cpus.append(float(out[1]))
        rss = max(rss, int(out[2]))
    return walls, cpus, rss


def diff_time(model, repeat: int) -> tuple[list[float], bool, list[float], bool]:
    """CPU times (s) of diff_models(model, renumbered copy), each run, and whether it was
    identical; the same against a renumbered mutated copy, and whether the counts were as
    expected."""
    from bench_diff import matches, mutated, renumbered

    from accelgraph_cli.diff.structural import diff_models

    results = []
    mutant, expected = mutated(model)
    for other, want in ((renumbered(model, 1), None), (renumbered(mutant, 3), expected)):
        times = []
        for _ in range(repeat):
            start = time.process_time()
            result = diff_models(model, other)
            times.append(time.process_time() - start)
        got = {"added": len(result.added), "removed": len(result.removed), "changed": len(result.changed),
               "edges_added": len(result.edges_added), "edges_removed": len(result.edges_removed)}
        ok = result.identical if want is None else matches(got, want)
        results += [times, ok]
    return tuple(results)


def main(argv: list[str] | None = None) -> int:
    """Measure every dump, print a table and optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dumps", type=Path, default=DEFAULT_DUMPS, help="recorded large dumps")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (median and best)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    missing = [name for name in FILES if not (args.dumps / name).exists()]
    if missing:
        print(f"{args.dumps}: missing {', '.join(missing)}; these dumps come from CUDA: record "
              f"them on a GPU machine with `{GENERATOR}`", file=sys.stderr)
        return 2
    console = Console(width=max(Console().width, 120))
    table = Table(title=f"Large dumps, median of {args.repeat} (best): parse, `accelgraph show` (new "
                  "process), diff (CPU) vs renumbered and vs mutated renumbered")
    for column in ("file", "nodes", "DOT MB", "parse s", "MB/s", "CPU MB/s", "cold MB/s", "show s",
                   "show CPU s", "show RSS MB", "diff s", "identical", "diff mutated s", "check"):
        table.add_column(column, justify="left" if column == "file" else "right")
    results = []
    load_start = os.getloadavg()
    for name in FILES:
        path = args.dumps / name
        size = len(gzip.decompress(path.read_bytes()))
        parse_walls, parse_cpus, model = parse_time(path, args.repeat)
        nodes = model.total_nodes()
        diff_times, identical, mutated_times, mutated_ok = diff_time(model, args.repeat)
        model = None
        cold_walls, cold_cpus = cold_parse_time(path, args.repeat)
        show_walls, show_cpus, show_rss = show_process(path, args.repeat)
        parse_s, parse_cpu_s = median(parse_walls), median(parse_cpus)
        results.append({
            "file": name, "nodes": nodes, "bytes": size, "repeat": args.repeat,
            "parse_s": round(parse_s, 4), "parse_best_s": round(min(parse_walls), 4),
            "parse_mb_s": round(size / 1e6 / parse_s, 1),
            "parse_best_mb_s": round(size / 1e6 / min(parse_walls), 1),
            "parse_cpu_s": round(parse_cpu_s, 4), "parse_cpu_mb_s": round(size / 1e6 / parse_cpu_s, 1),
            "parse_cpu_best_mb_s": round(size / 1e6 / min(parse_cpus), 1),
            "parse_cold_s": round(median(cold_walls), 4), "parse_cold_cpu_s": round(median(cold_cpus), 4),
            "parse_cold_mb_s": round(size / 1e6 / median(cold_walls), 1),
            "parse_cold_best_mb_s": round(size / 1e6 / min(cold_walls), 1),
            "show_s": round(median(show_walls), 3), "show_best_s": round(min(show_walls), 3),
            "show_cpu_s": round(median(show_cpus), 3), "show_rss_bytes": show_rss,
            "diff_s": round(median(diff_times), 4), "diff_best_s": round(min(diff_times), 4),
            "diff_identical": identical,
            "diff_mutated_s": round(median(mutated_times), 4),
            "diff_mutated_best_s": round(min(mutated_times), 4), "diff_mutated_ok": mutated_ok})
        r = results[-1]
        table.add_row(name, f"{nodes:,}", f"{size / 1e6:.1f}", f"{parse_s:.3f} ({min(parse_walls):.3f})",
                      f"{r['parse_mb_s']:.0f} ({r['parse_best_mb_s']:.0f})",
                      f"{r['parse_cpu_mb_s']:.0f} ({r['parse_cpu_best_mb_s']:.0f})",
                      f"{r['parse_cold_mb_s']:.0f} ({r['parse_cold_best_mb_s']:.0f})",
                      f"{r['show_s']:.2f} ({r['show_best_s']:.2f})", f"{r['show_cpu_s']:.2f}",
                      f"{show_rss / 2**20:.0f}", f"{r['diff_s']:.3f} ({r['diff_best_s']:.3f})",
                      "yes" if identical else "NO",
                      f"{r['diff_mutated_s']:.3f} ({r['diff_mutated_best_s']:.3f})",
                      "ok" if mutated_ok else "MISMATCH")
    small_walls, small_cpus, small_rss = show_process(SMALL_DUMP, max(args.repeat, 5))
    small_s = median(small_walls)
    console.print(table)
    console.print(f"`accelgraph show {SMALL_DUMP.name}` (process start to exit), median of "
                  f"{max(args.repeat, 5)}: {small_s * 1e3:.0f} ms (CPU {median(small_cpus) * 1e3:.0f} ms), "
                  f"peak RSS {small_rss / 2**20:.0f} MB")
    ratios = growth(results)
    for key, label in GROWTH_OF.items():
        steps = ", ".join(f"{small.split('_')[0]} -> {big.split('_')[0]}: {ratio:.2f}x"
                          for small, big, ratio in zip(CHAINS, CHAINS[1:], ratios[key]))
        console.print(f"growth of the time per node, {label}: {steps}")
    load = os.getloadavg()
    console.print(f"load average (1, 5, 15 min; other work on this machine) at the start: "
                  f"{load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}, at the end: {load[0]:.2f} "
                  f"{load[1]:.2f} {load[2]:.2f}, on {os.cpu_count()} CPUs")
    report = {"results": results, "show_small": {"file": SMALL_DUMP.name, "seconds": round(small_s, 4),
                                                 "cpu_seconds": round(median(small_cpus), 4),
                                                 "rss_bytes": small_rss},
              "growth_per_node": ratios,
              "load_average_start": [round(x, 2) for x in load_start],
              "load_average": [round(x, 2) for x in load], "cpus": os.cpu_count()}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if all(r["diff_identical"] and r["diff_mutated_ok"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
