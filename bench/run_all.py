"""`make bench`: every benchmark in one run; tables printed, JSON and Markdown in bench/results/.

CPU parts run anywhere: DOT parse time (accelgraph's parser vs pydot), diff time at 10k and
50k nodes, `accelgraph --help` start-up time. GPU parts (replay per call, scenario speedup and
capture cost vs bare CuPy, peers incl. torch, soak) run where CuPy sees a GPU and are skipped
with a note elsewhere.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(ROOT))


def startup(repeats: int = 7) -> dict:
    """Median wall time of `python -m accelgraph_cli --help` vs a bare `python -c pass`."""
    def run(args):
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, *args], capture_output=True, check=True, cwd=ROOT)
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)

    bare = run(["-c", "pass"])
    helptime = run(["-m", "accelgraph_cli", "--help"])
    imported = subprocess.run(
        [sys.executable, "-c", "import sys, accelgraph_cli.cli; "
         "print(any(m.startswith('cupy') for m in sys.modules))"],
        capture_output=True, text=True, cwd=ROOT).stdout.strip()
    return {"python_ms": bare, "accelgraph_help_ms": helptime, "cupy_imported": imported == "True"}


def script(name: str, *args: str, timeout: int = 900) -> dict | None:
    """Run bench/<name> with --json into a temp file; returns its JSON or None on failure."""
    out = RESULTS / f".{name}.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / name), *args, "--json", str(out)],
                          text=True, capture_output=True, timeout=timeout, cwd=ROOT)
    print(proc.stdout)
    if proc.returncode != 0:
        print(f"{name} failed: {proc.stderr.strip().splitlines()[-1:]}")
        return None
    data = json.loads(out.read_text())
    out.unlink()
    return data


def main() -> int:
    from accelgraph_cli._cuda import gpu_available

    RESULTS.mkdir(parents=True, exist_ok=True)
    date = time.strftime("%Y-%m-%d")
    report: dict = {"date": date}
    report["startup"] = startup()
    print(f"accelgraph --help: {report['startup']['accelgraph_help_ms']:.0f} ms "
          f"(python -c pass: {report['startup']['python_ms']:.0f} ms), CuPy imported: "
          f"{report['startup']['cupy_imported']}")
    report["parse"] = script("bench_parse.py")
    report["diff"] = script("bench_diff.py")
    if gpu_available():
        report["replay"] = script("bench_replay.py")
        report["scenario"] = script("bench_scenario.py")
        report["peers"] = script("bench_peers.py")
        report["soak"] = script("soak.py")
    else:
        print("no CUDA GPU here: GPU benchmarks skipped (results recorded on an H200 are in "
              "bench/results/)")
    where = "gpu" if gpu_available() else "cpu"
    target = RESULTS / f"{date}-{where}.json"
    target.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
