"""smoke's result logic on the CPU: the runner (capture, check, timing) is replaced by stubs.

What is checked here is what `smoke` makes of the runner's answers — the row's status, node
count, capture time, speedup (eager GPU time / graph GPU time), check and drift columns, the
baseline files — not the capture itself, which the GPU tier covers. The graph a stub
"captured" dumps a DOT recorded on a GPU (tests/data/dumps/), so baselines hold real models.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from _paths import SCENARIOS, recorded

from accelgraph_cli.cuda.timing import Stat
from accelgraph_cli.errors import AccelgraphError
from accelgraph_cli.run import protocol as runner
from accelgraph_cli.run import smoke
from accelgraph_cli.run.protocol import CheckResult, Mismatch
from accelgraph_cli.run.smoke import SmokeRow, compare_baseline, discover, run_one

SCENARIO = '"""{doc}"""\nPARAMS = {{"n": 4}}\n\ndef setup(n):\n    return [0] * n\n\n' \
           "def step(state):\n    state[0] += 1\n"
WITH_OUTPUTS = SCENARIO + "\ndef outputs(state):\n    return {{'y': state}}\n"


def dump_text(name: str) -> str:
    return recorded(name).read_text()


class FakeGraph:
    """What smoke asks of a captured Graph: its DOT dump."""

    def __init__(self, dot: str):
        self.dot = dot

    def debug_dot(self, flags: str) -> str:
        assert flags == "verbose"
        return self.dot


@dataclass
class FakeCaptured:
    name: str
    graph: FakeGraph
    node_count: int
    capture_ms: float
    instantiate_ms: float


@dataclass
class FakeResult:
    scenario: object
    params: dict
    graphs: list = field(default_factory=list)

    @property
    def node_count(self) -> int:
        return sum(g.node_count for g in self.graphs)


@dataclass
class FakeTiming:
    gpu_us: Stat


@pytest.fixture
def stub_runner(monkeypatch):
    """Replace runner.capture/check/time_replay; returns the knobs and a log of the calls."""
    knobs = {
        "graphs": [("step", "scenario_saxpy_verbose.dot", 1, 2.0, 0.5)],
        "eager_us": 300.0,
        "graph_us": 100.0,
        "check_ok": True,
        "check_ran": True,
        "capture_raises": None,
    }
    calls: list = []

    def capture(scenario, params, **kwargs):
        calls.append(("capture", scenario.info.name, dict(params), kwargs))
        if knobs["capture_raises"] is not None:
            raise knobs["capture_raises"]
        graphs = [FakeCaptured(name, FakeGraph(dump_text(dump)), nodes, cap, inst)
                  for name, dump, nodes, cap, inst in knobs["graphs"]]
        return FakeResult(scenario, params, graphs)

    def check(result):
        assert isinstance(result, FakeResult), "check gets what capture returned"
        calls.append(("check",))
        mismatches = [] if knobs["check_ok"] else [Mismatch("y", 3, 8, 0.5), Mismatch("z", 1, 8, 2.0)]
        return CheckResult(knobs["check_ok"], ["y"], 2, mismatches, 0.0, 0.0, ran=knobs["check_ran"],
                           note="" if knobs["check_ran"] else "outputs() returned no array to compare")

    def time_replay(result, *, iters, warmup, rounds):
        assert isinstance(result, FakeResult), "time_replay gets what capture returned"
        calls.append(("time_replay", iters, warmup, rounds))
        return (FakeTiming(Stat.of([knobs["eager_us"]])), FakeTiming(Stat.of([knobs["graph_us"]])), [])

    monkeypatch.setattr(runner, "capture", capture)
    monkeypatch.setattr(runner, "check", check)
    monkeypatch.setattr(runner, "time_replay", time_replay)
    return knobs, calls


def scenario_file(folder: Path, name: str = "tiny", text: str = SCENARIO) -> Path:
    path = folder / f"{name}.py"
    path.write_text(text.format(doc=f"The {name} scenario."))
    return path


def test_ok_row_speedup_is_eager_over_graph(tmp_path, stub_runner):
    knobs, calls = stub_runner
    row = run_one(scenario_file(tmp_path), iters=7, rounds=2)
    assert (row.status, row.ok, row.message) == ("ok", True, "")
    assert row.speedup == 3.0  # 300 µs eager / 100 µs graph
    assert (row.nodes, row.graphs, row.capture_ms) == (1, 1, 2.5)
    assert (row.check, row.drift, row.details) == ("none", "-", [])
    assert row.seconds > 0
    # default params, then timing with warm-up min(5, iters); no check without outputs
    assert calls == [("capture", "tiny", {"n": 4}, {}), ("time_replay", 7, 5, 2)]


def test_warmup_is_capped_by_iters_and_zero_graph_time_is_no_speedup(tmp_path, stub_runner):
    knobs, calls = stub_runner
    knobs["graph_us"] = 0.0
    row = run_one(scenario_file(tmp_path), iters=3, rounds=1)
    assert row.status == "ok" and row.speedup == 0.0
    assert calls[-1] == ("time_replay", 3, 3, 1)


def test_capture_time_sums_capture_and_instantiate_over_graphs(tmp_path, stub_runner):
    knobs, _ = stub_runner
    knobs["graphs"] = [("b1", "scenario_saxpy_verbose.dot", 1, 1.25, 0.5),
                       ("b8", "scenario_fork_join_verbose.dot", 16, 3.0, 2.0)]
    row = run_one(scenario_file(tmp_path), iters=1, rounds=1)
    assert (row.nodes, row.graphs, row.capture_ms) == (17, 2, 6.75)


def test_failed_check_fails_the_row_with_the_first_mismatch(tmp_path, stub_runner):
    knobs, calls = stub_runner
    knobs["check_ok"] = False
    row = run_one(scenario_file(tmp_path, text=WITH_OUTPUTS), iters=1, rounds=1)
    assert (row.status, row.check, row.ok) == ("failed", "failed", False)
    assert row.details == [
        "output 'y': 3 of 8 elements differ, largest difference 0.5",
        "output 'z': 1 of 8 elements differ, largest difference 2",
    ]
    assert row.message == row.details[0]
    assert row.speedup == 3.0  # still timed
    assert [c[0] for c in calls] == ["capture", "check", "time_replay"]


def test_passing_check_is_ok(tmp_path, stub_runner):
    row = run_one(scenario_file(tmp_path, text=WITH_OUTPUTS), iters=1, rounds=1)
    assert (row.status, row.check) == ("ok", "ok")


def test_a_check_that_could_not_run_fails_the_row_with_its_reason(tmp_path, stub_runner):
    # as replay exits 1 then: the scenario defines outputs, and nothing was compared
    knobs, _ = stub_runner
    knobs["check_ok"], knobs["check_ran"] = False, False
    row = run_one(scenario_file(tmp_path, text=WITH_OUTPUTS), iters=1, rounds=1)
    assert (row.status, row.check, row.ok) == ("failed", "not run", False)
    assert row.message == "check not run: outputs() returned no array to compare"


def test_errors_become_rows_not_exceptions(tmp_path, stub_runner):
    knobs, _ = stub_runner
    knobs["capture_raises"] = AccelgraphError("tiny.py:8: capture failed: host sync")
    row = run_one(scenario_file(tmp_path), iters=1, rounds=1)
    assert (row.status, row.message, row.check, row.capture_ms, row.speedup) == (
        "error", "tiny.py:8: capture failed: host sync", "-", None, None)  # nothing measured

    knobs["capture_raises"] = ZeroDivisionError("division by zero\nsecond line")
    row = run_one(scenario_file(tmp_path), iters=1, rounds=1)
    assert (row.status, row.message) == ("error", "ZeroDivisionError: division by zero")

    # sys.exit() in scenario code the runner does not wrap: an error row, and the smoke run
    # goes on (it ended there, with no table and no report, exit 0)
    knobs["capture_raises"] = SystemExit(0)
    row = run_one(scenario_file(tmp_path), iters=1, rounds=1)
    assert (row.status, row.message) == ("error", "SystemExit: 0")

    knobs["capture_raises"] = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        run_one(scenario_file(tmp_path), iters=1, rounds=1)


def test_a_scenario_that_does_not_load_is_an_error_row(tmp_path, stub_runner):
    _, calls = stub_runner
    bad = tmp_path / "broken.py"
    bad.write_text('"""Broken."""\ndef setup():\n    return {}\n')
    row = run_one(bad, iters=1, rounds=1)
    assert row.status == "error" and row.message.startswith(f"{bad}:")
    assert "step" in row.message
    assert calls == []


def test_baseline_is_written_when_missing_then_compared(tmp_path, stub_runner):
    knobs, _ = stub_runner
    path = scenario_file(tmp_path, "saxpy")
    folder = tmp_path / "baseline"
    folder.mkdir()

    row = run_one(path, iters=1, rounds=1, baseline=str(folder))
    assert (row.status, row.drift) == ("ok", "new baseline")
    written = folder / "saxpy.json"
    assert sorted(p.name for p in folder.iterdir()) == ["saxpy.json"]
    text = written.read_text()
    # indented and ending in a newline, so a baseline reads and diffs well in version control
    assert text.startswith('{\n  "format": "accelgraph-model",\n  "version": 1,\n  "source": ')
    assert text.endswith("\n}\n")
    model = json.loads(text)
    assert model["format"] == "accelgraph-model"
    assert [n["kind"] for n in model["nodes"]] == ["kernel"]

    row = run_one(path, iters=1, rounds=1, baseline=str(folder))
    assert (row.status, row.drift, row.details) == ("ok", "none", [])

    knobs["graphs"] = [("step", "scenario_fork_join_verbose.dot", 16, 1.0, 1.0)]
    row = run_one(path, iters=1, rounds=1, baseline=str(folder))
    assert (row.status, row.drift) == ("failed", "changed")
    assert len(row.details) == 1
    assert row.message == row.details[0]
    assert row.message == (f"step: graph drifted from {written}: different: +16 added · -1 removed · "
                           "~0 changed · 0 unchanged")
    assert json.loads(written.read_text()) == model  # a drift does not overwrite the baseline

    row = run_one(path, iters=1, rounds=1, baseline=str(folder), update_baseline=True)
    assert (row.status, row.drift) == ("ok", "new baseline")
    assert json.loads(written.read_text()) != model
    row = run_one(path, iters=1, rounds=1, baseline=str(folder))
    assert (row.status, row.drift) == ("ok", "none")


def test_baseline_names_each_graph_and_a_drift_keeps_the_check_message(tmp_path, stub_runner):
    knobs, _ = stub_runner
    knobs["graphs"] = [("step", "scenario_saxpy_verbose.dot", 1, 1.0, 1.0),
                       ("batch 8", "scenario_saxpy_verbose.dot", 1, 1.0, 1.0)]
    path = scenario_file(tmp_path, "multi", WITH_OUTPUTS)
    folder = tmp_path / "baseline"
    folder.mkdir()
    assert run_one(path, iters=1, rounds=1, baseline=str(folder)).drift == "new baseline"
    assert sorted(p.name for p in folder.iterdir()) == ["multi.json", "multi_batch_8.json"]

    knobs["graphs"][1] = ("batch 8", "scenario_fork_join_verbose.dot", 16, 1.0, 1.0)
    knobs["check_ok"] = False
    row = run_one(path, iters=1, rounds=1, baseline=str(folder))
    assert (row.status, row.check, row.drift) == ("failed", "failed", "changed")
    assert row.message == "output 'y': 3 of 8 elements differ, largest difference 0.5"
    assert len(row.details) == 3 and row.details[2].startswith("batch 8: graph drifted from ")


def test_graphs_whose_names_are_made_safe_alike_keep_a_baseline_each(tmp_path, stub_runner):
    # "batch 8" and "batch_8" (and "Batch_8", on a file system that ignores case) were one
    # baseline file: the second graph's overwrote the first's, and the next run refused the
    # scenario with advice (rename a scenario, another folder) that could not help.
    knobs, _ = stub_runner
    knobs["graphs"] = [("batch 8", "scenario_saxpy_verbose.dot", 1, 1.0, 1.0),
                       ("batch_8", "scenario_fork_join_verbose.dot", 16, 1.0, 1.0),
                       ("Batch_8", "chain_verbose.dot", 6, 1.0, 1.0)]
    path = scenario_file(tmp_path, "multi")
    folder = tmp_path / "baseline"
    folder.mkdir()
    assert run_one(path, iters=1, rounds=1, baseline=str(folder)).drift == "new baseline"
    assert sorted(p.name for p in folder.iterdir()) == [
        "multi_Batch_8-3.json", "multi_batch_8-2.json", "multi_batch_8.json"]
    kinds = {p.name: len(json.loads(p.read_text())["nodes"]) for p in folder.iterdir()}
    assert kinds == {"multi_batch_8.json": 1, "multi_batch_8-2.json": 16, "multi_Batch_8-3.json": 6}
    row = run_one(path, iters=1, rounds=1, baseline=str(folder))
    assert (row.status, row.drift, row.details) == ("ok", "none", [])


def test_compare_baseline_returns_new_then_none(tmp_path):
    result = FakeResult(type("S", (), {"path": tmp_path / "x.py"})(), {},
                        [FakeCaptured("step", FakeGraph(dump_text("chain_verbose.dot")), 6, 0, 0)])
    assert compare_baseline(result, tmp_path, update=False) == ("new baseline", [])
    assert compare_baseline(result, tmp_path, update=False) == ("none", [])
    assert compare_baseline(result, tmp_path, update=True) == ("new baseline", [])


def test_discover_skips_underscore_files_and_sorts(tmp_path):
    for name in ("b.py", "a.py", "_helper.py", "__init__.py", "notes.txt"):
        (tmp_path / name).write_text("")
    assert [p.name for p in discover([str(tmp_path)])] == ["a.py", "b.py"]
    # a file named on its own is taken even with a leading underscore
    assert [p.name for p in discover([str(tmp_path / "_helper.py")])] == ["_helper.py"]
    only_private = tmp_path / "private"
    only_private.mkdir()
    (only_private / "_x.py").write_text("")
    with pytest.raises(AccelgraphError, match="no scenario files"):
        discover([str(only_private)])


def test_smoke_command_with_a_stubbed_runner(cli, tmp_path, stub_runner, monkeypatch):
    from accelgraph_cli.cuda import device as _cuda

    knobs, _ = stub_runner
    monkeypatch.setattr(_cuda, "require_cuda", lambda: None)
    scenario_file(tmp_path, "good")
    scenario_file(tmp_path, "bad", WITH_OUTPUTS)
    knobs["check_ok"] = True
    code, out, err = cli("smoke", tmp_path, "--json", "--junit", tmp_path / "r.xml")
    report = json.loads(out)
    assert code == 0, err
    assert (report["passed"], report["total"], report["interrupted"]) == (2, 2, False)
    assert [Path(r["scenario"]).name for r in report["rows"]] == ["bad.py", "good.py"]
    assert [r["check"] for r in report["rows"]] == ["ok", "none"]
    assert [r["speedup"] for r in report["rows"]] == [3.0, 3.0]
    assert 'tests="2" failures="0" errors="0"' in (tmp_path / "r.xml").read_text()

    knobs["check_ok"] = False
    code, out, err = cli("smoke", tmp_path)
    assert code == 1
    assert out.splitlines()[-1] == "1 passed, 1 failed"
    lines = out.splitlines()
    table_end = max(i for i, line in enumerate(lines) if "│" in line)
    rows = [[cell.strip() for cell in line.split("│")[1:]] for line in lines if "│" in line]
    assert rows == [["failed", "1", "2.5", "3.00x", "failed", "-"], ["ok", "1", "2.5", "3.00x", "none", "-"]]
    problems = " ".join(" ".join(lines[table_end + 1:]).split())  # lines may wrap
    assert problems == (f"{tmp_path / 'bad.py'}: output 'y': 3 of 8 elements differ, largest "
                        "difference 0.5 1 passed, 1 failed")


def test_smoke_row_ok_and_dict():
    row = SmokeRow("s.py", "ok", nodes=2)
    assert row.ok and not SmokeRow("s.py", "failed").ok and not SmokeRow("s.py", "error").ok
    assert row.to_dict() == {
        "scenario": "s.py", "status": "ok", "nodes": 2, "graphs": None, "capture_ms": None,
        "speedup": None, "check": "-", "drift": "-", "message": "", "seconds": 0.0, "details": [],
    }
    assert smoke.SmokeRow("s.py", "ok").details is not smoke.SmokeRow("s.py", "ok").details


def test_row_seconds_is_the_time_the_scenario_took(tmp_path, stub_runner, monkeypatch):
    ticks = iter([100.0, 102.5])
    monkeypatch.setattr(smoke, "time", type("Clock", (), {"perf_counter": staticmethod(lambda: next(ticks))}))
    row = run_one(scenario_file(tmp_path), iters=1, rounds=1)
    assert row.seconds == 2.5


def test_junit_document_exactly():
    rows = [
        SmokeRow("scenarios/a.py", "ok", nodes=3, graphs=1, capture_ms=1.5, speedup=2.0, check="ok",
                 drift="none", seconds=0.5),
        SmokeRow("scenarios/b.py", "failed", check="failed", message="output 'y' differs",
                 details=["output 'y' differs", "output 'z' differs"], seconds=0.25),
        SmokeRow("scenarios/c.py", "error", message="c.py:7: setup() raised"),
        SmokeRow("scenarios/d.py", "skipped", message="skipped: torch is not installed here"),
    ]
    props = ('<properties><property name="nodes" value="{}" /><property name="graphs" value="{}" />'
             '<property name="capture_ms" value="{}" /><property name="speedup" value="{}" />'
             '<property name="check" value="{}" /><property name="drift" value="{}" /></properties>')
    expected = (
        "<?xml version='1.0' encoding='utf-8'?>\n"
        # (skipped= as the report of a run that could not start has it: it was missing)
        '<testsuite name="accelgraph smoke" tests="4" failures="1" errors="1" skipped="1" '
        'time="0.750">'
        '<testcase classname="accelgraph.smoke" name="a" file="scenarios/a.py" time="0.500">'
        + props.format(3, 1, 1.5, 2.0, "ok", "none") + "</testcase>"
        '<testcase classname="accelgraph.smoke" name="b" file="scenarios/b.py" time="0.250">'
        + props.format("-", "-", "-", "-", "failed", "-")
        + "<failure message=\"output 'y' differs\">output 'y' differs\noutput 'z' differs</failure>"
        "</testcase>"
        '<testcase classname="accelgraph.smoke" name="c" file="scenarios/c.py" time="0.000">'
        + props.format("-", "-", "-", "-", "-", "-") + '<error message="c.py:7: setup() raised" />'
        "</testcase>"
        '<testcase classname="accelgraph.smoke" name="d" file="scenarios/d.py" time="0.000">'
        + props.format("-", "-", "-", "-", "-", "-")
        + '<skipped message="skipped: torch is not installed here" />'
        "</testcase>{}</testsuite>\n"
    )
    assert smoke.junit_xml(rows) == expected.format("")
    assert smoke.junit_xml(rows, interrupted=True) == expected.format(
        "<system-err>interrupted before all scenarios ran</system-err>")


def test_discover_bundled_scenarios_by_name_and_by_default(tmp_path, monkeypatch):
    from accelgraph_cli.run.catalog import bundled_scenario_files

    bundled = bundled_scenario_files()
    names = [p.stem for p in bundled]
    assert "saxpy" in names and "fork_join" in names
    monkeypatch.chdir(tmp_path)  # the bundled folder is not under the cwd: absolute paths
    assert discover(None) == bundled
    assert discover(["saxpy", "fork_join.py"]) == [
        next(p for p in bundled if p.stem == "saxpy"), next(p for p in bundled if p.stem == "fork_join")
    ]
    monkeypatch.chdir(bundled[0].parent.parent)  # inside the cwd: relative to it
    folder = bundled[0].parent.name
    assert discover(None) == [Path(folder) / p.name for p in bundled]
    assert discover(["saxpy"]) == [Path(folder) / "saxpy.py"]
    with pytest.raises(AccelgraphError) as caught:
        discover(["no_such_scenario"])
    assert str(caught.value) == (
        "no_such_scenario: no such file or folder, and no bundled scenario of that name; "
        f"bundled: {', '.join(names)} (`accelgraph smoke` with no path runs them all)"
    )
    with pytest.raises(AccelgraphError) as caught:
        discover(["elsewhere/saxpy.py"])  # as the README writes it, outside a checkout
    assert str(caught.value) == ("elsewhere/saxpy.py: no such file; the bundled scenario 'saxpy' "
                                 "runs by its name: `saxpy`")


def test_junit_reports_hold_only_what_xml_can():
    # A scenario path with an escape character, or a file name that is not UTF-8 (a lone
    # surrogate once Python decodes it): the report was not well-formed XML, or could not be
    # written at all (internal error). Such characters become U+FFFD.
    import os
    import xml.dom.minidom

    names = [Path("a\x1bb.py"), Path(os.fsdecode(b"\xff.py"))]
    for report in (smoke.junit_not_run(names, "no usable GPU"),
                   smoke.junit_xml([SmokeRow(scenario=str(p), status="error",
                                             message="bad \x01 line") for p in names])):
        report.encode("utf-8")  # no lone surrogate left
        document = xml.dom.minidom.parseString(report)
        text = document.toxml()
        assert "a\ufffdb.py" in text and "\ufffd.py" in text


def test_bundled_scenarios_are_found_from_a_deleted_working_directory(tmp_path, monkeypatch):
    # `smoke --list` in a folder deleted under the shell: Path.cwd() raises, which was an
    # internal error (exit 70); the bundled scenarios are then named by their full paths.
    from accelgraph_cli.run.catalog import bundled_scenario_files

    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert discover(None) == bundled_scenario_files()


def test_a_folder_named_like_a_scenario_inside_a_smoke_folder_is_not_taken(tmp_path):
    # smoke takes a folder's *.py files; a subfolder named dir.py became an error row.
    (tmp_path / "dir.py").mkdir()
    scenario = tmp_path / "one.py"
    scenario.write_text((SCENARIOS / "saxpy.py").read_text())
    assert discover([str(tmp_path)]) == [scenario]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("update", [False, True])
def test_a_baseline_that_is_a_pipe_is_refused_not_waited_on(tmp_path, update):
    # compare_baseline read x.json whatever it was: a named pipe waited for a writer for ever
    import os

    result = FakeResult(type("S", (), {"path": tmp_path / "x.py"})(), {},
                        [FakeCaptured("step", FakeGraph(dump_text("chain_verbose.dot")), 6, 0, 0)])
    os.mkfifo(tmp_path / "x.json")
    with pytest.raises(AccelgraphError, match=r"x\.json is not a regular file; remove it"):
        compare_baseline(result, tmp_path, update=update)
    assert not (tmp_path / "x.json").is_file()


def test_dump_of_several_graphs_takes_back_what_it_wrote_when_one_fails(cli, tmp_path,
                                                                        stub_runner,
                                                                        monkeypatch):
    # a full disk at the second graph left the first graph's file written (and said so)
    # beside an error, exit 2
    import errno

    from accelgraph_cli import files
    from accelgraph_cli.cli import app
    from accelgraph_cli.cuda import device as _cuda

    knobs, _ = stub_runner
    monkeypatch.setattr(_cuda, "require_cuda", lambda: None)
    knobs["graphs"] = [("prefill", "scenario_saxpy_verbose.dot", 1, 2.0, 0.5),
                       ("decode", "scenario_saxpy_verbose.dot", 1, 2.0, 0.5),
                       ("extra", "scenario_saxpy_verbose.dot", 1, 2.0, 0.5)]
    scenario_file(tmp_path, "two")
    (tmp_path / "g_extra.dot").write_text("mine\n")  # there before: not the dump's to remove
    real = app._write_text_file

    def second_fails(target, text):
        if target.endswith("decode.dot"):
            raise files.write_error(target, OSError(errno.ENOSPC, "No space left on device"))
        real(target, text)

    monkeypatch.setattr(app, "_write_text_file", second_fails)
    code, out, err = cli("dump", tmp_path / "two.py", "--out", "g.dot", "--no-render")
    assert (code, out) == (2, "")
    assert "wrote" not in err and "g_decode.dot: No space left on device" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g_extra.dot", "two.py"]
    code, out, err = cli("dump", tmp_path / "two.py", "--out", "new/sub/g.dot", "--no-render")
    assert code == 2 and not (tmp_path / "new").exists()  # nor the folders it made
    monkeypatch.setattr(app, "_write_text_file", real)
    code, out, err = cli("dump", tmp_path / "two.py", "--out", "g.dot", "--no-render")
    assert code == 0, err
    assert [line.split()[1] for line in err.splitlines() if line.startswith("wrote")] == [
        "g_prefill.dot", "g_decode.dot", "g_extra.dot"]


def test_a_baseline_holding_nan_is_refused_as_load_model_refuses_it(tmp_path):
    # the baseline was read with Python's plain JSON reader, which takes NaN: a model that
    # holds one never equals itself, so the graph read as drifted on every run
    result = FakeResult(type("S", (), {"path": tmp_path / "x.py"})(), {},
                        [FakeCaptured("step", FakeGraph(dump_text("chain_verbose.dot")), 6, 0, 0)])
    assert compare_baseline(result, tmp_path, update=False) == ("new baseline", [])
    text = (tmp_path / "x.json").read_text()
    assert '"grid": [' in text
    (tmp_path / "x.json").write_text(text.replace('"grid": [', '"nan_here": NaN, "grid": [', 1))
    with pytest.raises(AccelgraphError, match="invalid JSON: NaN is not a JSON value"):
        compare_baseline(result, tmp_path, update=False)
