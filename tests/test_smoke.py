"""smoke's CPU parts: discovering scenarios, the JUnit report, and errors without a GPU."""

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest
from _paths import SCENARIOS, requires_no_gpu

from accelgraph_cli.errors import AccelgraphError
from accelgraph_cli.run.smoke import SmokeRow, discover, junit_xml


def test_discover_folder_and_files_sorted_without_duplicates():
    found = discover([str(SCENARIOS), str(SCENARIOS / "saxpy.py")])
    assert [p.name for p in found] == [
        "buckets.py", "elementwise_chain.py", "fork_join.py", "gpt_decode.py", "jacobi.py",
        "layernorm.py", "memory_ops.py", "mlp_decode.py", "saxpy.py", "stream_ordered_alloc.py",
        "torch_buckets.py", "train_step.py",
    ]
    assert found[0] == SCENARIOS / "buckets.py"  # paths as given, not resolved or relative


def test_discover_missing_path_and_empty_folder(tmp_path):
    with pytest.raises(AccelgraphError, match="no such file or folder"):
        discover([str(tmp_path / "nope")])
    with pytest.raises(AccelgraphError, match="no scenario files"):
        discover([str(tmp_path)])


def test_junit_report_counts_failures_and_errors():
    rows = [
        SmokeRow("scenarios/a.py", "ok", nodes=3, check="ok", seconds=0.5, speedup=2.0),
        SmokeRow("scenarios/b.py", "failed", check="failed", message="output 'y': 3 of 8 "
                 "elements differ", details=["output 'y': 3 of 8 elements differ"]),
        SmokeRow("scenarios/c.py", "error", message="scenarios/c.py:7: setup() raised"),
    ]
    root = ElementTree.fromstring(junit_xml(rows).split("?>", 1)[1])
    assert root.get("tests") == "3" and root.get("failures") == "1" and root.get("errors") == "1"
    cases = root.findall("testcase")
    assert [c.get("name") for c in cases] == ["a", "b", "c"]
    assert cases[1].find("failure").get("message").startswith("output 'y'")
    assert cases[2].find("error").get("message") == "scenarios/c.py:7: setup() raised"
    props = {p.get("name"): p.get("value") for p in cases[0].find("properties")}
    assert props["nodes"] == "3" and props["speedup"] == "2.0"


@requires_no_gpu
def test_smoke_without_gpu_is_one_line_exit_3(cli):
    code, out, err = cli("smoke", SCENARIOS)
    assert code == 3
    assert "show and diff of saved dumps, scenarios and smoke --list work without a GPU" in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1


@requires_no_gpu
def test_smoke_json_without_gpu_still_prints_every_scenario_skipped(cli):
    # A CI job that parses the JSON gets a report, as --junit gets one, and the exit code 3.
    code, out, err = cli("smoke", SCENARIOS, "--json")
    assert code == 3
    report = json.loads(out)
    names = sorted(p.name for p in SCENARIOS.glob("*.py") if not p.name.startswith("_"))
    assert sorted(Path(r["scenario"]).name for r in report["rows"]) == names
    assert {r["status"] for r in report["rows"]} == {"skipped"}
    assert report["passed"] == 0 and report["total"] == len(names)
    assert "CuPy is not installed" in report["not_run"] == report["rows"][0]["message"]
    assert len([line for line in err.splitlines() if line.strip()]) == 1


def test_smoke_update_baseline_needs_baseline(cli):
    code, out, err = cli("smoke", SCENARIOS, "--update-baseline")
    assert code == 2 and "--baseline" in err
