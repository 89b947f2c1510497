"""diff on live captures: one scenario at two parameter values, and against itself."""

from pathlib import Path

import pytest

from accelgraph_cli.cli.app import main

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
MLP = str(ROOT / "scenarios" / "mlp_decode.py")
CHAIN = str(ROOT / "scenarios" / "elementwise_chain.py")


def test_batch_size_changes_grids_not_structure(capsys):
    # 32 and 64 rows both run sgemm_skinny_16 (kernels.sgemm picks the kernel by batch size:
    # batch 8 would run sgemm_skinny_8, another kernel, which diff reports as replaced). Not
    # 16 vs 64: there one node's new grid equals another's old one, which the matcher still
    # gets wrong (test_diff.py::test_batch_sweep_of_a_chain_is_changes_not_replacements).
    code = main(["diff", MLP, MLP, "--a-param", "batch=32", "--b-param", "batch=64", "--json"])
    out = capsys.readouterr().out
    import json

    report = json.loads(out)
    assert code == 1
    assert report["summary"]["added"] == 0 and report["summary"]["removed"] == 0
    assert report["summary"]["changed"] >= 1
    changed_params = {k for entry in report["changed"] for k in entry["params"]}
    assert "grid" in changed_params


def test_same_scenario_twice_is_identical(capsys):
    assert main(["diff", MLP, MLP]) == 0
    assert "identical" in capsys.readouterr().out


def test_longer_chain_reports_added_kernels(capsys):
    import json

    code = main(["diff", CHAIN, CHAIN, "--a-param", "n=100", "--b-param", "n=130", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert report["summary"]["added"] == 30 and report["summary"]["removed"] == 0
