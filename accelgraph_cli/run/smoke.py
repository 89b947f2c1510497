"""`accelgraph smoke`: capture, replay and check every scenario under some paths (for CI).

One failing scenario never stops the others; each gets a row (ok / check failed / error with
its one-line reason). Results render as a table, JSON, or JUnit XML for CI dashboards.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from xml.etree import ElementTree

from ..errors import AccelgraphError
from ..files import path_kind
from .catalog import (
    bundled_by_name,
    bundled_names,
    bundled_scenario,
    bundled_scenario_files,
    hides_bundled,
    relative_to_cwd,
)


@dataclass
class SmokeRow:
    """The outcome for one scenario."""

    scenario: str
    status: str  # "ok", "failed" (check or drift), "error" (could not capture/replay),
    # "skipped" (a torch scenario where torch is not installed: message says so)
    nodes: int | None = None  # None (and for graphs, capture_ms): not captured (no GPU, a skip,
    graphs: int | None = None  # an error before it)
    capture_ms: float | None = None
    speedup: float | None = None  # None: not timed; 0.0: timed, but the graph took no time
    check: str = "-"  # "ok", "failed", "not run", "none" (no outputs), "-" (not reached)
    drift: str = "-"  # "none", "changed", "new baseline", "-" (no baseline asked)
    message: str = ""
    seconds: float = 0.0
    details: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Passed, or skipped for a stated reason (neither fails the run)."""
        return self.status in ("ok", "skipped")

    def to_dict(self) -> dict:
        return asdict(self)


def discover(paths: list[str] | None) -> list[Path]:
    """Scenario files under ``paths`` (files, folders searched for *.py not starting with _,
    or names of bundled scenarios); no paths: every bundled scenario.

    A path that is none of these, or a folder with no scenario, is an AccelgraphError.
    """
    if not paths:
        return [relative_to_cwd(p) for p in bundled_scenario_files()]
    found: list[Path] = []
    for raw in paths:
        if not str(raw).strip():  # Path("") is ".": this folder, which nobody named
            raise AccelgraphError("an empty path: name scenario files, folders of them or "
                                  "bundled scenarios (`accelgraph smoke` with no path runs "
                                  "them all)")
        path = Path(raw)
        bundled = bundled_scenario(raw)
        kind = path_kind(path)  # AccelgraphError where the path cannot be looked at
        if kind == "dir":
            try:  # (listed here, not by glob: glob finds nothing in a folder it cannot read)
                entries = os.listdir(path)
            except OSError as exc:
                raise AccelgraphError(f"{path}: cannot read: {exc.strerror or exc}") from None
            # the *.py names, less _ names and folders named x.py
            files = sorted(path / name for name in entries if name.endswith(".py")
                           and not name.startswith("_") and not (path / name).is_dir())
            if not files:
                raise AccelgraphError(hides_bundled(raw, bundled) if bundled is not None else
                                      f"{path}: no scenario files in this folder (*.py; names "
                                      "starting with _ and subfolders are skipped)")
            found.extend(files)
        elif kind != "missing":  # a file, or a named pipe or device: its row says what it is
            if bundled is not None and path.suffix != ".py":
                raise AccelgraphError(hides_bundled(raw, bundled))
            found.append(path)
        elif bundled is not None:
            found.append(relative_to_cwd(bundled))
        elif bundled_by_name(path):
            raise AccelgraphError(bundled_by_name(path))
        else:
            raise AccelgraphError(f"{path}: no such file or folder, and no bundled scenario of "
                                  f"that name; bundled: {', '.join(bundled_names())} (`accelgraph "
                                  f"smoke` with no path runs them all)")
    unique: list[Path] = []
    seen: set[str] = set()
    for p in found:
        key = os.path.realpath(p)  # one file named two ways runs once (a loop of links too)
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


def run_one(path: Path, *, iters: int, rounds: int, baseline: str | None = None,
            update_baseline: bool = False) -> SmokeRow:
    """Capture, check and time one scenario with its default parameters; never raises for a
    problem with the scenario itself (KeyboardInterrupt still propagates)."""
    from ..cuda.timing import speedup
    from . import protocol as runner
    from .scenario import inspect_scenario, load_scenario, parse_params

    row = SmokeRow(scenario=str(path), status="error")
    start = time.perf_counter()
    try:
        reason = skip_reason(inspect_scenario(path))
        if reason:
            row.status, row.message = "skipped", reason
            return row
        scen = load_scenario(path)
        params = parse_params(scen.info.params, [])
        result = runner.capture(scen, params)
        row.nodes = result.node_count
        row.graphs = len(result.graphs)
        row.capture_ms = sum(g.capture_ms + g.instantiate_ms for g in result.graphs)
        status = "ok"
        if scen.info.has_outputs:
            checked = runner.check(result)
            row.check = {"ok": "ok", "FAILED": "failed"}.get(checked.verdict, "not run")
            if checked.verdict == "FAILED":
                status = "failed"
                row.details = checked.problems()
                row.message = row.details[0]
            elif not checked.ran:  # the scenario has outputs, and nothing could be compared
                status = "failed"
                row.message = f"check not run: {checked.note}"
        else:
            row.check = "none"
        if baseline is not None:
            drift, lines = compare_baseline(result, Path(baseline), update_baseline)
            row.drift = drift
            if drift == "changed":
                status = "failed"
                row.details.extend(lines)
                row.message = row.message or lines[0]
        eager, graph, _ = runner.time_replay(result, iters=iters, warmup=min(5, iters),
                                             rounds=rounds)
        row.speedup = speedup(eager, graph)
        row.status = status
    except AccelgraphError as exc:
        row.message = str(exc)
    except (Exception, SystemExit) as exc:  # an unexpected failure in a scenario's own code
        row.message = f"{type(exc).__name__}: {exc}".splitlines()[0]
    row.seconds = time.perf_counter() - start
    return row


def skip_reason(info) -> str:
    """Why smoke skips a scenario here ("" when it runs): a torch scenario without torch."""
    import importlib.util

    from ..enums import Backend

    if info.backend is Backend.TORCH and importlib.util.find_spec("torch") is None:
        return ("skipped: a PyTorch scenario, and torch is not installed here "
                "(pip install 'accelgraph[torch]')")
    return ""


def compare_baseline(result, folder: Path, update: bool) -> tuple[str, list[str]]:
    """Compare each captured graph with ``folder/<scenario>[_<graph>].json``.

    Returns ("none" | "changed" | "new baseline", lines describing changes). With ``update``
    (or when no baseline exists yet) the current models are written as the baseline.
    """
    import json

    from ..diff.structural import diff_models
    from ..dot.parse import load_model, parse_dot
    from ..files import distinct_names, safe_name, write_text_atomic
    from ..model.graph_model import GraphModel
    from ..render.diff import render_verdict

    stem = Path(str(result.scenario.path)).stem
    verdict, lines = "none", []
    graphs = []
    # Two graphs of one scenario whose names are made safe alike ("batch 8", "batch_8"), or
    # differ in letter case only, get -2, -3... after the later one's, as their DOT files do:
    # sharing one file, the second overwrote the first's baseline, and the next run refused
    # the first.
    names = distinct_names([stem if captured.name == "step" else f"{stem}_{safe_name(captured.name)}"
                            for captured in result.graphs])
    for captured, name in zip(result.graphs, names):
        target = folder / f"{name}.json"
        # Each baseline names the scenario and graph it is the baseline of: a.py's graph "b"
        # and a_b.py's step have one file name, and neither may pass as the other's. All are
        # checked before any is written.
        origin = {"scenario": stem, "graph": captured.name}
        exists = target.exists()
        if exists and not target.is_file():  # a pipe would be waited on for ever
            raise AccelgraphError(f"baseline {target} is not a regular file; remove it, or use "
                                  "another --baseline folder")
        document = _baseline_document(target) if exists else None
        recorded = document.get(_ORIGIN_KEY) if document is not None else None
        if not isinstance(recorded, dict):
            recorded = None
        if recorded is not None and recorded != origin:
            raise AccelgraphError(
                f"baseline {target} is of graph {recorded.get('graph')!r} of scenario "
                f"{recorded.get('scenario')!r}, not of graph {captured.name!r} of {stem!r}: "
                "their baselines have one file name; rename a scenario or use another "
                "--baseline folder for one of them")
        graphs.append((captured, target, origin, exists, document))
    for captured, target, origin, exists, document in graphs:
        model = parse_dot(captured.graph.debug_dot("verbose"))
        if update or not exists:
            document = model.to_json()
            document[_ORIGIN_KEY] = origin
            write_text_atomic(target, json.dumps(document, indent=2) + "\n")
            if verdict == "none":
                verdict = "new baseline"
            continue
        # the file as read above; load_model reads it again only to say what is wrong with it
        baseline = (GraphModel.from_json(document, where=str(target)) if document is not None
                    else load_model(target))
        difference = diff_models(baseline, model)
        if not difference.identical:
            verdict = "changed"
            verdict_line = render_verdict(difference).plain
            lines.append(f"{captured.name}: graph drifted from {target}: {verdict_line}")
    return verdict, lines


_ORIGIN_KEY = "baseline_of"  # in a baseline's model JSON: {"scenario": stem, "graph": name}


def _baseline_document(target: Path) -> dict | None:
    """A baseline file's JSON object: the model compared with, and the scenario and graph it
    says it is of under _ORIGIN_KEY (absent in one written before baselines said so). None
    for a file that cannot be read as a JSON object: comparing then reads it as load_model
    does, which says what is wrong with it."""
    from ..dot.load import loads_json

    try:
        document = loads_json(target.read_text(encoding="utf-8"))  # as load_model reads it
    except (OSError, ValueError, RecursionError):  # RecursionError: nested too deeply
        return None
    return document if isinstance(document, dict) else None


def json_report(rows: list[SmokeRow], total: int, interrupted: bool = False) -> dict:
    """What `smoke --json` prints: the rows (each named as JUnit names its test case: the
    scenario's stem, its path where two share one), and how many of the ``total`` scenarios
    passed."""
    names = case_names([r.scenario for r in rows])
    return {"rows": [{"name": name, **r.to_dict()} for r, name in zip(rows, names)],
            "interrupted": interrupted, "passed": sum(r.ok for r in rows), "total": total}


def inspect_files(files: list[Path]) -> list[tuple]:
    """(path, ScenarioInfo or None, its one-line error or "") for each file: what can be told
    without running it (syntax, setup and step, PARAMS and setup's parameters, POOL...)."""
    from .scenario import inspect_scenario

    entries = []
    for path in files:
        try:
            entries.append((path, inspect_scenario(path), ""))
        except AccelgraphError as exc:
            entries.append((path, None, str(exc)))
    return entries


def static_errors(files: list[Path]) -> dict[str, str]:
    """The one-line error of each file that cannot be a scenario, by path, so a run that
    cannot start still reports a broken file as an error, not as skipped."""
    return {str(path): error for path, _, error in inspect_files(files) if error}


def _not_run_rows(files: list[Path], reason: str, errors: dict[str, str] | None) -> list:
    """The rows of a run that could not start: every scenario skipped with ``reason``, except
    those ``errors`` (from :func:`static_errors`) names, which are errors."""
    errors = errors or {}
    return [SmokeRow(str(path), "error", message=errors[str(path)]) if str(path) in errors
            else SmokeRow(str(path), "skipped", message=reason) for path in files]


def json_not_run(files: list[Path], reason: str, errors: dict[str, str] | None = None) -> dict:
    """`smoke --json` for a run that could not start (no GPU): every scenario skipped, with
    why, except those ``errors`` names, which are errors; none passed."""
    report = json_report(_not_run_rows(files, reason, errors), len(files))
    report.update(passed=0, not_run=reason)
    return report


def case_names(scenarios: list[str]) -> list[str]:
    """A JUnit test case name per scenario: its file's stem, or, where two share a stem (a
    file of one's own beside a bundled scenario of that name), its path, so no report viewer
    merges the two."""
    names = [Path(s).stem for s in scenarios]
    if len(set(names)) < len(names):
        names = [str(s) if names.count(n) > 1 else n for s, n in zip(scenarios, names)]
    if len(set(names)) < len(names):  # a stem that is also another's path: paths for all
        names = [str(s) for s in scenarios]
    return names


def baseline_clashes(files: list[Path]) -> list[list[Path]]:
    """Groups of scenario files whose baselines would be the same files because one stem
    names them (``folder/<stem>[_<graph>].json``; compared case-folded, for file systems
    that ignore case). A steps() file's graph names are known only once it runs, so a.py
    with a graph b against a_b.py is caught then, by the origin each baseline records
    (compare_baseline)."""
    by_stem: dict[str, list[Path]] = {}
    for path in files:
        by_stem.setdefault(Path(path).stem.casefold(), []).append(path)
    return [group for group in by_stem.values() if len(group) > 1]


def junit_not_run(files: list[Path], reason: str, errors: dict[str, str] | None = None) -> str:
    """JUnit XML for a run that could not start (no GPU): every scenario skipped, with why,
    except those ``errors`` names, which are errors."""
    rows = _not_run_rows(files, reason, errors)
    suite = ElementTree.Element(
        "testsuite", name="accelgraph smoke", tests=str(len(rows)), failures="0",
        errors=str(sum(r.status == "error" for r in rows)),
        skipped=str(sum(r.status == "skipped" for r in rows)), time="0.000",
    )
    for r, name in zip(rows, case_names([r.scenario for r in rows])):
        case = ElementTree.SubElement(suite, "testcase", classname="accelgraph.smoke",
                                      name=name, file=r.scenario, time="0.000")
        ElementTree.SubElement(case, "error" if r.status == "error" else "skipped",
                               message=r.message)
    ElementTree.SubElement(suite, "system-err").text = f"nothing ran: {reason}"
    return _xml_text(ElementTree.tostring(suite, encoding="unicode", xml_declaration=True))


def junit_xml(rows: list[SmokeRow], interrupted: bool = False) -> str:
    """JUnit XML: one testsuite "accelgraph smoke", one testcase per scenario."""
    failures = sum(r.status == "failed" for r in rows)
    errors = sum(r.status == "error" for r in rows)
    suite = ElementTree.Element(
        "testsuite", name="accelgraph smoke", tests=str(len(rows)), failures=str(failures),
        errors=str(errors), skipped=str(sum(r.status == "skipped" for r in rows)),
        time=f"{sum(r.seconds for r in rows):.3f}",
    )
    for r, name in zip(rows, case_names([r.scenario for r in rows])):
        case = ElementTree.SubElement(
            suite, "testcase", classname="accelgraph.smoke", name=name,
            file=r.scenario, time=f"{r.seconds:.3f}",
        )
        props = ElementTree.SubElement(case, "properties")
        for key in ("nodes", "graphs", "capture_ms", "speedup", "check", "drift"):
            value = getattr(r, key)
            ElementTree.SubElement(props, "property", name=key,
                                   value="-" if value is None else str(value))
        if r.status == "failed":
            el = ElementTree.SubElement(case, "failure", message=r.message)
            el.text = "\n".join(r.details)
        elif r.status == "error":
            ElementTree.SubElement(case, "error", message=r.message)
        elif r.status == "skipped":
            ElementTree.SubElement(case, "skipped", message=r.message)
    if interrupted:
        ElementTree.SubElement(suite, "system-err").text = "interrupted before all scenarios ran"
    return _xml_text(ElementTree.tostring(suite, encoding="unicode", xml_declaration=True))


# What XML 1.0 cannot hold: control characters but tab and line ends, lone surrogates (a file
# name that is not UTF-8, as Python decodes it), and U+FFFE/U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(document: str) -> str:
    """The report with each character XML cannot hold (in a path, a scenario's message)
    replaced by U+FFFD, so CI tools can read it and it can be written as UTF-8."""
    return _NOT_XML.sub("\ufffd", document) + "\n"
