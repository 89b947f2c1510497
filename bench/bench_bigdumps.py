"""Benchmark: parse, `accelgraph show` and diff of large CUDA dumps (1k, 10k, 100k nodes).

    python bench/bench_bigdumps.py [--dumps bench/dumps] [--json out.json]

Reads the dumps that ``python bench/gen_big_dumps.py`` records on a GPU (chains of 1,000,
10,000 and 100,000 kernels in verbose form, a 50,004-node fork/join in basic form) and
measures, on this machine:

* parse: load_model (gunzip included), best of --repeat, in MB/s of DOT text, by wall
  time and by CPU time (the steadier figure on a loaded machine);
* show: ``python -m accelgraph_cli show FILE`` as a new process, wall time and peak RSS
  (and the same for a small recorded dump, start to exit);
* diff: diff_models of each graph against a renumbered copy of itself (ids permuted, nodes
  and edges shuffled, pointers re-drawn: identical, every edge checked), and against a
  renumbered copy with bench_diff's mutations (one grid changed, one node removed, 50
  inserted, a branch added at a join: the counts checked), CPU time, best of --repeat.

Fails (exit 2) with the command to run when the dumps are missing: they must come from CUDA.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

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


def parse_time(path: Path, repeat: int) -> tuple[float, float, object]:
    """Best wall time and best CPU time (s) of load_model over ``repeat`` runs, and the model.

    CPU time (this process) is the steadier figure on a machine busy with other work.
    """
    from accelgraph_cli.dot.parse import load_model

    best, best_cpu, model = float("inf"), float("inf"), None
    for _ in range(repeat):
        model = None  # the previous model is not kept alive while the next one is built
        start, start_cpu = time.perf_counter(), time.process_time()
        model = load_model(path)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
        best = min(best, time.perf_counter() - start)
    return best, best_cpu, model


# Runs a command and prints its wall time and the peak RSS of that one child, in bytes.
_MEASURE = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)\n"
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
)


def show_process(path: Path, repeat: int) -> tuple[float, int]:
    """Best wall time (s) and the peak RSS (bytes) of `accelgraph show FILE` in a new process."""
    best, rss = float("inf"), 0
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", _MEASURE, sys.executable, "-m", "accelgraph_cli", "show", str(path)],
            capture_output=True, text=True, check=True, cwd=ROOT,
        ).stdout.split()
        best, rss = min(best, float(out[0])), max(rss, int(out[1]))
    return best, rss


def diff_time(model, repeat: int) -> tuple[float, bool, float, bool]:
    """Best CPU time (s) of diff_models(model, renumbered copy) and whether it was identical;
    the same against a renumbered mutated copy, and whether the counts were as expected."""
    from bench_diff import matches, mutated, renumbered

    from accelgraph_cli.diff.structural import diff_models

    results = []
    mutant, expected = mutated(model)
    for other, want in ((renumbered(model, 1), None), (renumbered(mutant, 3), expected)):
        best, ok = float("inf"), False
        for _ in range(repeat):
            start = time.process_time()
            result = diff_models(model, other)
            best = min(best, time.process_time() - start)
        got = {"added": len(result.added), "removed": len(result.removed), "changed": len(result.changed),
               "edges_added": len(result.edges_added), "edges_removed": len(result.edges_removed)}
        ok = result.identical if want is None else matches(got, want)
        results += [best, ok]
    return tuple(results)


def main(argv: list[str] | None = None) -> int:
    """Measure every dump, print a table and optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dumps", type=Path, default=DEFAULT_DUMPS, help="recorded large dumps")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best kept)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    missing = [name for name in FILES if not (args.dumps / name).exists()]
    if missing:
        print(f"{args.dumps}: missing {', '.join(missing)}; these dumps come from CUDA: record "
              f"them on a GPU machine with `{GENERATOR}`", file=sys.stderr)
        return 2
    console = Console(width=max(Console().width, 120))
    table = Table(title="Large dumps: parse, `accelgraph show` (new process), diff (CPU) vs renumbered "
                  "and vs mutated renumbered")
    for column in ("file", "nodes", "DOT MB", "parse s", "MB/s", "CPU MB/s", "show s", "show RSS MB",
                   "diff s", "identical", "diff mutated s", "check"):
        table.add_column(column, justify="left" if column == "file" else "right")
    results = []
    for name in FILES:
        path = args.dumps / name
        size = len(gzip.decompress(path.read_bytes()))
        parse_s, parse_cpu_s, model = parse_time(path, args.repeat)
        nodes = model.total_nodes()
        diff_s, identical, mutated_s, mutated_ok = diff_time(model, args.repeat)
        model = None
        show_s, show_rss = show_process(path, args.repeat)
        results.append({"file": name, "nodes": nodes, "bytes": size, "parse_s": round(parse_s, 4),
                        "parse_mb_s": round(size / 1e6 / parse_s, 1),
                        "parse_cpu_s": round(parse_cpu_s, 4),
                        "parse_cpu_mb_s": round(size / 1e6 / parse_cpu_s, 1), "show_s": round(show_s, 3),
                        "show_rss_bytes": show_rss, "diff_s": round(diff_s, 4),
                        "diff_identical": identical, "diff_mutated_s": round(mutated_s, 4),
                        "diff_mutated_ok": mutated_ok})
        r = results[-1]
        table.add_row(name, f"{nodes:,}", f"{size / 1e6:.1f}", f"{parse_s:.3f}",
                      f"{r['parse_mb_s']:.0f}", f"{r['parse_cpu_mb_s']:.0f}", f"{show_s:.2f}",
                      f"{show_rss / 2**20:.0f}", f"{diff_s:.3f}", "yes" if identical else "NO",
                      f"{mutated_s:.3f}", "ok" if mutated_ok else "MISMATCH")
    small_s, small_rss = show_process(SMALL_DUMP, 5)
    console.print(table)
    console.print(f"`accelgraph show {SMALL_DUMP.name}` (process start to exit): {small_s * 1e3:.0f} ms, "
                  f"peak RSS {small_rss / 2**20:.0f} MB")
    report = {"results": results, "show_small": {"file": SMALL_DUMP.name, "seconds": round(small_s, 4),
                                                 "rss_bytes": small_rss}}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if all(r["diff_identical"] and r["diff_mutated_ok"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
