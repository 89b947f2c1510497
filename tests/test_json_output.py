"""What --json prints is JSON every reader takes, and a mismatch's line says no 'nan'."""

import json
import math

from accelgraph_cli.cli.app import json_text
from accelgraph_cli.run.protocol import Mismatch


def test_numbers_json_cannot_hold_are_written_as_null():
    # A mismatch whose one side holds a NaN has an infinite largest difference, a boolean
    # output's has none (NaN): Python's json wrote them as Infinity and NaN, which strict
    # readers (JavaScript's JSON.parse, json.loads with parse_constant) refuse.
    report = {"ok": False, "mismatches": [
        {"output": "probs", "max_abs_diff": math.inf},
        {"output": "mask", "max_abs_diff": math.nan},
        {"output": "y", "max_abs_diff": 0.5, "shape": (2, 3)},
    ], "speedup": -math.inf, "nested": [[math.nan, 1.0]], "count": 3, "name": "NaN"}

    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    text = json_text(report, indent=2)
    read = json.loads(text, parse_constant=refuse)
    assert read == {"ok": False, "mismatches": [
        {"output": "probs", "max_abs_diff": None},
        {"output": "mask", "max_abs_diff": None},
        {"output": "y", "max_abs_diff": 0.5, "shape": [2, 3]},
    ], "speedup": None, "nested": [[None, 1.0]], "count": 3, "name": "NaN"}
    finite = {"a": 1.5, "b": [1, 2]}
    assert json_text(finite, indent=2) == json.dumps(finite, indent=2)  # as before


def test_a_mismatch_without_a_largest_difference_names_none():
    # booleans (and what has no numeric difference) gave "largest difference nan"
    assert Mismatch("mask", 3, 8, math.nan).line() == "output 'mask': 3 of 8 elements differ"
    assert Mismatch("y", 1, 8, math.inf, "x").line() == \
        "output 'y': 1 of 8 elements differ, largest difference inf (x)"
    assert Mismatch("y", 3, 8, 0.5).line() == \
        "output 'y': 3 of 8 elements differ, largest difference 0.5"


def test_every_json_the_cli_prints_goes_through_json_text():
    from pathlib import Path

    import accelgraph_cli.cli.app as app

    source = Path(app.__file__).read_text(encoding="utf-8")
    assert "echo(json.dumps(" not in source and source.count("echo(json_text(") >= 10


PRINTS = '''"""Prints as it sets up, as scenarios do."""
PARAMS = {"n": 4}


def setup(n):
    print("loading weights...")
    return {"n": n}


def step(state):
    print("step ran")
'''


def test_what_a_scenario_prints_does_not_corrupt_the_json(cli, tmp_path, monkeypatch):
    # `print("loading...")` in setup() came out before smoke's --json report, and no JSON
    # reader took the output. Under --json, sys.stdout points at standard error while the
    # command runs; the JSON goes to the standard output the run began with.
    import sys

    from accelgraph_cli.cuda import device
    from accelgraph_cli.cuda.timing import Stat
    from accelgraph_cli.run import protocol as runner

    path = tmp_path / "prints.py"
    path.write_text(PRINTS)
    seen = []

    def capture(scenario, params, **options):
        state = scenario.make_state(params)  # the scenario's own code runs, and prints
        scenario.graph_steps(state)["step"]()
        seen.append(sys.stdout)
        raise runner.CaptureError("stub: nothing captured")

    monkeypatch.setattr(device, "require_cuda", lambda: None)  # (no GPU here)
    monkeypatch.setattr(runner, "capture", capture)
    monkeypatch.setattr(runner, "time_replay", lambda *a, **k: (Stat.of([1.0]),) * 3)
    stdout_before = sys.stdout
    code, out, err = cli("smoke", path, "--json")
    assert code == 1, err
    report = json.loads(out)  # nothing but the JSON
    assert [row["status"] for row in report["rows"]] == ["error"]
    assert "loading weights...\nstep ran\n" in err
    assert seen == [sys.stderr] and sys.stdout is stdout_before  # and put back after
    code, out, err = cli("smoke", path)  # without --json, prints stay on standard output
    assert "loading weights..." in out
