"""Benchmark: accelgraph's CUDA DOT parser against pydot on recorded dumps.

    python bench/bench_parse.py                    # every tests/data/dumps/*.dot[.gz]
    python bench/bench_parse.py big.dot --json out.json --pydot-max-bytes 200000

For each file: its (uncompressed) size, node count, our parse+model time (best of --repeat,
including reading and gunzipping the file) and pydot's ``graph_from_dot_data`` time on the
text (one run; only for files up to --pydot-max-bytes, since pydot needs minutes on a 4.5 MB
dump), and the ratio. Compare the two on the small files; the big one shows ours alone.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DUMPS = ROOT / "tests" / "data" / "dumps"


def time_ours(path: Path, repeat: int) -> tuple[float, int]:
    """Best wall time (s) of load_model over ``repeat`` runs, and the node count (nested too)."""
    from accelgraph_cli.dot.parse import load_model

    best, nodes = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        model = load_model(path)
        best = min(best, time.perf_counter() - start)
        nodes = model.total_nodes()
    return best, nodes


def dot_text(path: Path) -> str:
    """The DOT text of a dump, gzipped (as `make fixtures` stores big ones) or not."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode("utf-8")


def time_pydot(path: Path | None) -> float:
    """Wall time (s) of one pydot.graph_from_dot_data on the file's text (None: a warm-up)."""
    import pydot

    text = dot_text(path) if path is not None else "digraph { a -> b }"
    start = time.perf_counter()
    graphs = pydot.graph_from_dot_data(text)
    if not graphs:
        raise RuntimeError(f"pydot could not parse {path}")
    return time.perf_counter() - start


def nesting_growth(levels: tuple[int, int] = (5_000, 50_000), repeat: int = 3) -> dict:
    """Time per level of a graph whose one edge sits inside ``levels`` plain subgraphs nested
    in one another, at two depths: the scanner keeps each scope's cluster on its stack, so
    the time per level stays flat (it grew with the depth when each statement walked every
    open scope: 12 s at 20,000 levels). Target: the deeper file's time per level at most
    1.5x the shallower's."""
    from accelgraph_cli.dot.parse import parse_dot

    per_level = []
    for depth in levels:
        text = "digraph g {\n" + "subgraph s {\n" * depth + "a -> b\n" + "}\n" * depth + "}\n"
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            parse_dot(text, filename="nested.dot")
            best = min(best, time.perf_counter() - start)
        per_level.append(best / depth)
    return {"levels": list(levels), "us_per_level": [round(t * 1e6, 3) for t in per_level],
            "growth": round(per_level[1] / per_level[0], 2)}


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, time every file, print a table and optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, help="DOT dumps (default: recorded ones)")
    parser.add_argument(
        "--pydot-max-bytes",
        type=int,
        default=100_000,
        help="time pydot only on files up to this many bytes (default 100000: pydot needs "
        "seconds for 100 KB and minutes for megabytes)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of our parser per file")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))  # run from a checkout without installing

    files = (
        args.files or sorted(p for p in DEFAULT_DUMPS.iterdir() if p.name.endswith((".dot", ".dot.gz")))
        if DEFAULT_DUMPS.is_dir() or args.files
        else []
    )
    if not files:
        print(f"no DOT files given and none in {DEFAULT_DUMPS}", file=sys.stderr)
        return 2
    console = Console()
    table = Table(
        title="CUDA DOT parse time: accelgraph vs pydot",
        caption="ratio = pydot ms / ours ms; — : pydot not run (file over "
        f"--pydot-max-bytes={args.pydot_max_bytes:,})",
    )
    for column in ("file", "bytes", "nodes", "ours ms", "pydot ms", "ratio"):
        table.add_column(column, justify="left" if column == "file" else "right", no_wrap=True)
    time_pydot(None)  # import pydot and build its grammar once, outside the timings
    results = []
    for path in files:
        size = len(dot_text(path).encode("utf-8"))  # uncompressed, as parsed
        ours, nodes = time_ours(path, args.repeat)
        pydot_s = time_pydot(path) if size <= args.pydot_max_bytes else None
        results.append(
            {
                "file": path.name,
                "bytes": size,
                "nodes": nodes,
                "ours_ms": round(ours * 1000, 2),
                "pydot_ms": None if pydot_s is None else round(pydot_s * 1000, 2),
                "ratio": None if pydot_s is None else round(pydot_s / ours, 1),
            }
        )
        table.add_row(
            path.name,
            f"{size:,}",
            f"{nodes:,}",
            f"{ours * 1000:,.1f}",
            "—" if pydot_s is None else f"{pydot_s * 1000:,.1f}",
            "—" if pydot_s is None else f"{pydot_s / ours:,.0f}×",
        )
    console.print(table)
    nesting = nesting_growth()
    console.print(
        f"plain subgraphs nested {nesting['levels'][0]:,} and {nesting['levels'][1]:,} deep: "
        f"{nesting['us_per_level'][0]} and {nesting['us_per_level'][1]} µs per level, growth "
        f"{nesting['growth']}x (target <= 1.5x: {'met' if nesting['growth'] <= 1.5 else 'NOT met'})")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "nesting": nesting}, indent=2) + "\n",
                             encoding="utf-8")
        console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
