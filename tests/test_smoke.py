"""smoke's CPU parts: discovering scenarios, the JUnit report, and errors without a GPU."""

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest
from _paths import SCENARIOS, recorded, requires_no_gpu

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
    # a folder with only a private module and a subfolder says why those do not count
    (tmp_path / "_helpers.py").write_text("x = 1\n")
    (tmp_path / "more").mkdir()
    with pytest.raises(AccelgraphError, match=r"no scenario files in this folder \(\*\.py; names "
                                              "starting with _ and subfolders are skipped\\)"):
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
    assert ("show and diff of saved dumps, saved profiles and audits, scenarios and smoke --list work "
            "without a GPU") in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1


@requires_no_gpu
def test_smoke_json_without_gpu_still_prints_every_scenario_skipped(cli):
    # A CI job that parses the JSON gets a report, as --junit gets one, and the exit code 3.
    code, out, err = cli("smoke", SCENARIOS, "--json")
    assert code == 3
    report = json.loads(out)
    names = sorted(p.name for p in SCENARIOS.glob("*.py") if not p.name.startswith("_"))
    assert sorted(Path(r["scenario"]).name for r in report["rows"]) == names
    # each row named as the JUnit report names its test case (a bundled one's path is long)
    assert [r["name"] for r in report["rows"]] == [Path(r["scenario"]).stem
                                                   for r in report["rows"]]
    assert {r["status"] for r in report["rows"]} == {"skipped"}
    assert report["passed"] == 0 and report["total"] == len(names)
    assert "CuPy is not installed" in report["not_run"] == report["rows"][0]["message"]
    assert len([line for line in err.splitlines() if line.strip()]) == 1


def _one_good_one_broken(tmp_path):
    folder = tmp_path / "scen"
    folder.mkdir()
    (folder / "good.py").write_text((SCENARIOS / "saxpy.py").read_text())
    (folder / "broken.py").write_text('"""Broken."""\n\ndef setup(:\n    pass\n')
    return folder


@requires_no_gpu
def test_smoke_without_gpu_names_its_report_on_one_line(cli, tmp_path):
    report = tmp_path / "r\nep.xml"
    code, out, err = cli("smoke", SCENARIOS / "saxpy.py", "--junit", report)
    assert code == 3
    assert f"wrote {tmp_path}/r\\nep.xml (1 scenario(s) skipped: no usable GPU)" in err.splitlines()
    assert ElementTree.parse(report).getroot().get("skipped") == "1"


@requires_no_gpu
def test_smoke_without_gpu_still_reports_a_broken_scenario_file_as_an_error(cli, tmp_path):
    # A CI job without a GPU must still fail on a file that cannot be a scenario (found
    # without running it), not list it among the skipped.
    folder = _one_good_one_broken(tmp_path)
    code, out, err = cli("smoke", folder, "--junit", tmp_path / "r.xml")
    assert code == 1, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert any("broken.py:3" in line and "syntax" in line for line in lines), err
    assert "1 of 2 scenario file(s) cannot be run (above); the other did not run either" in lines[-1]
    assert "no usable GPU" in err or "CuPy is not installed" in err
    suite = ElementTree.parse(tmp_path / "r.xml").getroot()
    assert (suite.get("errors"), suite.get("skipped")) == ("1", "1")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert "syntax" in cases["broken"].find("error").get("message")
    assert cases["good"].find("skipped") is not None


@requires_no_gpu
def test_smoke_without_gpu_and_every_file_broken_says_nothing_could_run(cli, tmp_path):
    folder = _one_good_one_broken(tmp_path)
    (folder / "good.py").unlink()
    code, out, err = cli("smoke", folder)
    assert code == 1
    assert "1 of 1 scenario file(s) cannot be run (above); and nothing could run here" in err


@requires_no_gpu
def test_smoke_json_without_gpu_marks_a_broken_scenario_file_as_an_error(cli, tmp_path):
    folder = _one_good_one_broken(tmp_path)
    code, out, err = cli("smoke", folder, "--json")
    assert code == 1, err
    rows = {Path(r["scenario"]).name: r for r in json.loads(out)["rows"]}
    assert rows["broken.py"]["status"] == "error" and "syntax" in rows["broken.py"]["message"]
    assert rows["good.py"]["status"] == "skipped"


@requires_no_gpu
def test_smoke_compares_with_a_read_only_baseline_folder(cli, tmp_path, read_only):
    # Comparing only reads the baselines (a checkout's committed ones, read-only): the run
    # gets as far as the GPU, where --update-baseline is refused before any work.
    folder = tmp_path / "baselines"
    folder.mkdir()
    read_only.append(folder)
    code, out, err = cli("smoke", SCENARIOS / "saxpy.py", "--baseline", folder)
    assert code == 3, err
    code, out, err = cli("smoke", SCENARIOS / "saxpy.py", "--baseline", folder,
                         "--update-baseline")
    assert code == 2 and "not writable" in err


def test_smoke_baseline_that_is_a_file_is_refused(cli, tmp_path):
    (tmp_path / "b.json").write_text("{}")
    code, out, err = cli("smoke", SCENARIOS / "saxpy.py", "--baseline", tmp_path / "b.json")
    assert code == 2 and "not a folder" in err


def test_smoke_update_baseline_needs_baseline(cli):
    code, out, err = cli("smoke", SCENARIOS, "--update-baseline")
    assert code == 2 and "--baseline" in err


def test_smoke_list_says_where_a_missing_summary_goes(cli, tmp_path):
    body = (SCENARIOS / "saxpy.py").read_text().split('"""', 2)[2]  # saxpy without its docstring
    (tmp_path / "bare.py").write_text(body)
    code, out, err = cli("smoke", "--list", tmp_path / "bare.py")
    assert code == 0, err
    assert "(no summary: the first line of the file's docstring is its summary)" in out


@pytest.mark.parametrize("given", [["--junit", "l.xml"], ["--baseline", "b"],
                                   ["--update-baseline"], ["-n", "5"], ["--rounds", "2"]])
def test_smoke_list_refuses_the_options_of_a_run(cli, tmp_path, given):
    code, out, err = cli("smoke", "--list", *given)
    assert (code, out) == (2, ""), err
    assert "--list only lists the scenarios" in err and "would be ignored" in err
    assert list(tmp_path.iterdir()) == []  # no report, no folder


def test_one_file_named_two_ways_is_one_scenario(cli, tmp_path):
    import shutil

    shutil.copy(SCENARIOS / "saxpy.py", tmp_path / "mine.py")
    code, out, err = cli("smoke", "--list", "--json", "mine.py", str(tmp_path / "mine.py"))
    assert code == 0, err
    assert [entry["name"] for entry in json.loads(out)] == ["mine"]


def test_a_loop_of_links_named_like_a_scenario_is_listed_as_broken_not_a_crash(cli, tmp_path):
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    code, out, err = cli("smoke", "--list", str(tmp_path))
    assert code == 1, err  # broken files, listed with their errors: no internal error (70)
    assert "internal error" not in err


def test_two_scenarios_of_one_name_get_a_test_case_each_and_no_shared_baseline(cli, tmp_path):
    import shutil

    from accelgraph_cli.run.smoke import case_names

    (tmp_path / "mine").mkdir()
    shutil.copy(SCENARIOS / "saxpy.py", tmp_path / "mine" / "saxpy.py")
    assert case_names(["mine/saxpy.py", "scenarios/saxpy.py", "scenarios/buckets.py"]) == [
        "mine/saxpy.py", "scenarios/saxpy.py", "buckets"]
    # refused before any GPU work: their baselines would be the same files
    code, out, err = cli("smoke", "mine/saxpy.py", "saxpy", "--baseline", "bl")
    assert (code, out) == (2, ""), err
    assert "would share baseline files" in err and not (tmp_path / "bl").exists()


def test_junit_names_scenarios_of_one_stem_by_their_paths():
    rows = [SmokeRow(scenario=path, status="ok") for path in
            ("mine/saxpy.py", "scenarios/saxpy.py", "scenarios/buckets.py")]
    suite = ElementTree.fromstring(junit_xml(rows))
    assert [case.get("name") for case in suite] == ["mine/saxpy.py", "scenarios/saxpy.py",
                                                    "buckets"]
    from accelgraph_cli.run.smoke import baseline_clashes, case_names

    # a stem that is also another scenario's path: every name still its own
    names = case_names(["foo.py", "x/foo.py", "foo.py.py"])
    assert len(set(names)) == 3, names
    assert baseline_clashes([Path("a/Saxpy.py"), Path("saxpy.py"), Path("b.py")]) == [
        [Path("a/Saxpy.py"), Path("saxpy.py")]]


def test_a_baseline_of_one_name_for_two_scenarios_is_never_passed_off_as_the_other(tmp_path):
    # a.py's graph "b" and a_b.py's step both map to a_b.json. Each baseline records the
    # scenario and graph it is of, so whichever runs second is refused (nothing written),
    # in this run or a later one, with --update-baseline too; a baseline of its own is
    # compared as ever. The graphs are recorded dumps; only the capture is stood in for.
    import json
    import types

    from accelgraph_cli.errors import AccelgraphError
    from accelgraph_cli.run.smoke import compare_baseline

    def result(path, *graphs):
        return types.SimpleNamespace(
            scenario=types.SimpleNamespace(path=path),
            graphs=[types.SimpleNamespace(name=name, graph=types.SimpleNamespace(
                debug_dot=lambda flags, dump=dump: recorded(dump).read_text()))
                for name, dump in graphs])

    folder = tmp_path / "bl"
    a = result("x/a.py", ("step", "chain_verbose.dot"), ("b", "forkjoin_verbose.dot"))
    a_b = result("y/a_b.py", ("step", "chain_verbose.dot"))
    assert compare_baseline(a, folder, update=False) == ("new baseline", [])
    written = json.loads((folder / "a_b.json").read_text())
    assert written["baseline_of"] == {"scenario": "a", "graph": "b"}
    clash = "is of graph 'b' of scenario 'a', not of graph 'step' of 'a_b'"
    for update in (False, True):
        with pytest.raises(AccelgraphError, match=clash):
            compare_baseline(a_b, folder, update=update)
    assert json.loads((folder / "a_b.json").read_text()) == written
    assert compare_baseline(a, folder, update=False) == ("none", [])
    # a baseline written before baselines recorded their origin is compared as ever
    del written["baseline_of"]
    (folder / "a_b.json").write_text(json.dumps(written))
    verdict, lines = compare_baseline(a_b, folder, update=False)
    assert verdict == "changed" and "graph drifted" in lines[0]
