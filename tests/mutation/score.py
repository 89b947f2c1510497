"""Per-module mutation score from mutmut's results in mutants/ (run by `make mutate`).

    python tests/mutation/score.py             # table of every mutated module
    python tests/mutation/score.py --survivors # and the name of each surviving mutant
    python tests/mutation/score.py --sample 120        # over a seeded sample per module
    python tests/mutation/score.py --sample 120 --todo # the sampled mutants not yet run

Killed counts mutants a test failed on, and those that hit the per-test or mutmut timeout
(a mutant that makes a loop endless is caught that way). The score is killed / checked;
"not checked" are mutants the run did not reach (an interrupted or partial run).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MUTANTS = ROOT / "mutants" / "accelgraph_cli"

# mutmut's exit codes (mutmut/stats.py): 1 and 3 killed, 0 survived, 36/24/152/255 timeout.
STATUS = {1: "killed", 3: "killed", 0: "survived", 36: "timeout", 24: "timeout", -24: "timeout",
          152: "timeout", 255: "timeout", 5: "no tests", 33: "no tests", 34: "skipped",
          None: "not checked"}


def results() -> dict[str, dict[str, int | None]]:
    """{module: {mutant name: exit code}} from the .meta files mutmut writes."""
    found = {}
    for meta in sorted(MUTANTS.rglob("*.py.meta")):
        data = json.loads(meta.read_text())
        module = meta.relative_to(MUTANTS).as_posix().removesuffix(".py.meta").replace("/", ".")
        found[module] = data["exit_code_by_key"]
    return found


def sample(codes: dict, k: int) -> list[str]:
    """The same k mutant names of a module every time (seeded), so runs can be compared."""
    names = sorted(codes)
    return names if len(names) <= k else sorted(random.Random(18).sample(names, k))


def main(argv: list[str] | None = None) -> int:
    """Print the table (and survivors); exit 1 when there are no results to read."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--survivors", action="store_true", help="list every surviving mutant")
    parser.add_argument("--sample", type=int, metavar="K",
                        help="score a seeded random sample of K mutants per module (all where fewer)")
    parser.add_argument("--todo", action="store_true",
                        help="with --sample: print the sampled mutants not checked yet (for `mutmut run`)")
    args = parser.parse_args(argv)
    table = results()
    if not table:
        print(f"no mutmut results under {MUTANTS} (run `make mutate`)", file=sys.stderr)
        return 1
    if args.sample:
        table = {module: {name: codes[name] for name in sample(codes, args.sample)}
                 for module, codes in table.items()}
    if args.todo:
        print("\n".join(name for codes in table.values() for name, code in codes.items() if code is None))
        return 0
    print("| module | mutants | killed | timeout | survived | no tests | not checked | score |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    survivors = []
    for module, codes in table.items():
        counts = Counter(STATUS.get(code, "suspicious") for code in codes.values())
        killed = counts["killed"] + counts["timeout"]
        checked = killed + counts["survived"] + counts["no tests"] + counts["suspicious"]
        score = f"{100 * killed / checked:.1f} %" if checked else "-"
        print(f"| {module} | {len(codes)} | {counts['killed']} | {counts['timeout']} | "
              f"{counts['survived']} | {counts['no tests']} | {counts['not checked']} | {score} |")
        survivors += [name for name, code in codes.items() if code in (0, 5, 33)]
    if args.survivors:
        print()
        for name in survivors:
            print(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
