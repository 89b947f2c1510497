"""Rendering capture and replay results with rich (no CUDA here: plain dataclasses in).

Names, summaries, parameters and messages come from scenario files: they are printed as
``rich.text.Text``, never as markup, so a docstring holding "[/]" prints as itself.
"""

from __future__ import annotations

import contextlib

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from ..errors import one_line
from .text import format_bytes


def _table(*columns: tuple[str, str]) -> Table:
    """A table with these (title, justify) columns, bold headers and no outer edge."""
    table = Table(show_edge=False, header_style="bold")
    for title, justify in columns:
        table.add_column(title, justify=justify)
    return table


def _kinds(kinds: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in kinds.items()) or "-"


def print_capture(console: Console, result, folder) -> None:
    """The table `accelgraph capture` prints: one row per graph, then the pool total."""
    scen = result.scenario
    backend = result.backend.name if result.backend is not None else scen.info.backend
    console.print(Text.assemble(
        (str(scen.info.name), "bold"), f"  {scen.info.summary}\n", "backend ", (str(backend), "cyan"),
        f"  params {result.params}  pool ", (str(result.pool), "cyan"), "  error mode ",
        (str(result.error_mode), "cyan"),
    ))
    table = _table(("graph", "left"), ("nodes", "right"), ("kinds", "left"),
                   ("capture ms", "right"), ("instantiate ms", "right"),
                   ("pool added", "right"), ("pool", "right"))
    for g in result.graphs:
        table.add_row(Text(g.name), f"{g.node_count:,}", Text(_kinds(g.kinds)), f"{g.capture_ms:.2f}",
                      f"{g.instantiate_ms:.2f}", format_bytes(g.pool_added),
                      format_bytes(g.pool_bytes))
    console.print(table)
    console.print(Text.assemble(
        f"{len(result.graphs)} graph(s), {result.node_count:,} nodes; pool memory held: ",
        (format_bytes(result.pool_bytes), "bold"), f" ({result.pool}); artifacts in {folder}",
    ))
    g = result.guard_summary()
    if g.get("watch") == "on":
        watched = f"; the GPU ran nothing while capturing (CUPTI, {g['watch_ms']:.3f} ms)"
    else:
        watched = f"; execution watch off: {g.get('watch_off') or 'not run'}"
    console.print(Text(
        f"guard: {g['arrays']} state array(s), {format_bytes(g['bytes'])}, unchanged by capture "
        f"(nothing ran outside the graphs); checksums {g['snapshot_ms']:.3f} ms before, "
        f"{g['compare_ms']:.3f} ms after{watched}"
    ))


def _stat(stat, digits=2) -> str:
    return f"{stat.median:.{digits}f} ({stat.min:.{digits}f}–{stat.max:.{digits}f})"


def print_replay(console: Console, report) -> None:
    """The table `accelgraph replay` prints: eager vs graph, medians with spread, the check;
    for several graphs, one row per graph before the totals."""
    cap = report.capture
    console.print(Text.assemble(
        (str(cap.scenario.info.name), "bold"), f"  {cap.node_count:,} nodes in "
        f"{len(cap.graphs)} graph(s), pool {cap.pool}, {report.graph.iters} iters x "
        f"{report.graph.rounds} rounds"
    ))
    if len(report.per_graph) > 1:
        console.print(_per_graph_table(report))
    table = Table(show_edge=False, header_style="bold")
    table.add_column("per iteration" + (" (all graphs)" if len(report.per_graph) > 1 else ""))
    table.add_column("eager", justify="right")
    table.add_column("graph", justify="right")
    table.add_row("GPU µs (events)", _stat(report.eager.gpu_us), _stat(report.graph.gpu_us))
    table.add_row("host submit µs", _stat(report.eager.host_us), _stat(report.graph.host_us))
    table.add_row("wall µs", _stat(report.eager.wall_us), _stat(report.graph.wall_us))
    console.print(table)
    console.print(Text.assemble("speedup (GPU time, medians): ", (f"{report.speedup:.2f}x", "bold")))
    chk = report.check
    how = ""
    if chk is not None:
        how = "bitwise" if chk.rtol == 0 and chk.atol == 0 else f"rtol={chk.rtol}, atol={chk.atol}"
    alone = ""
    if chk is not None and chk.per_graph:
        alone = f", each graph alone and all {len(chk.graphs)} in order"
    _print_check(console, "check: ", chk,
                 None if chk is None else
                 f" — {len(chk.outputs)} output(s) equal after {chk.steps} step(s) from the "
                 f"pre-capture state{alone}, {how}", f" ({how})")
    _audit_hint(console, cap, chk, None if chk is None else chk.steps)


_AUDIT_MOST = 64  # model/audit.py's MAX_STEPS (a test holds them equal)


def _audit_hint(console: Console, cap, chk, eager_steps: int | None) -> None:
    """After a failed check: the `accelgraph audit` command that shows which argument, if
    any, capture froze; over as many steps as the check ran eagerly (``eager_steps``, up to
    the audit's 64), where that is more than its two."""
    if chk is not None and chk.ran and not chk.ok:
        # (the audit compares two steps at least: --check-steps 1 names a two-step audit)
        steps = min(max(eager_steps or 2, 2), _AUDIT_MOST)
        command = _audit_command(cap, steps)
        change = ("changes from one step to the next" if steps == 2 else
                  f"differs between the first of {steps} steps and a later one")
        console.print(Text(f"a host value capture froze is a common cause: {command} names "
                           f"each kernel argument that {change}", style="dim"))


def _audit_command(cap, steps: int = 2) -> str:
    """The `accelgraph audit` command for the scenario, parameters, pool and error mode
    ``cap`` ran, over ``steps`` steps (2 to the audit's most: :func:`_audit_hint` caps
    them), each word quoted as a POSIX shell needs it."""
    import shlex

    from ..run.catalog import bundled_scenario

    info = cap.scenario.info
    path = getattr(info, "path", None)
    # a bundled scenario by its name, as `replay mlp_decode` was asked
    where = info.name if path is None or bundled_scenario(info.name) == path else str(path)
    words = ["accelgraph", "audit", where]
    defaults = getattr(info, "params", None) or {}
    for key, value in cap.params.items():
        if key not in defaults or defaults[key] != value or type(defaults[key]) is not type(value):
            words += ["--param", f"{key}={value}"]
    for option, chosen, default in (("--pool", cap.pool, getattr(info, "pool", None)),
                                    ("--error-mode", cap.error_mode,
                                     getattr(info, "error_mode", None))):
        if default is not None and str(chosen) != str(getattr(default, "value", default)):
            words += [option, str(getattr(chosen, "value", chosen))]
    if steps > 2:  # a value that changes less often than every step shows within them
        words += ["--steps", str(steps)]
    return " ".join(shlex.quote(w) for w in words)


def _print_check(console: Console, label: str, chk, ok_tail: str | None,
                 failed_tail: str = "") -> None:
    """One check's verdict line ("not run" and why, "ok" and ``ok_tail``, "FAILED" and
    ``failed_tail``), then each problem of a failed one on a line of its own."""
    if chk is None:
        console.print(Text.assemble(label, ("not run", "yellow"),
                                    " (no outputs() in the scenario, or --no-check)"))
    elif not chk.ran:
        console.print(Text.assemble(label, ("not run", "yellow"), f" ({chk.note})"))
    elif chk.ok:
        console.print(Text.assemble(label, ("ok", "green"), ok_tail))
    else:
        console.print(Text.assemble(label, ("FAILED", "bold red"), failed_tail))
        for line in chk.problems():
            console.print(Text(f"  {line}"))


def print_unrolled(console: Console, report) -> None:
    """What `replay --unroll K` prints: per-step times of eager, the one-step graph and the
    K-step graph, what unrolling cost in capture time and memory, and the check."""
    cap, one = report.capture, report.one_step
    k = report.unroll
    console.print(Text.assemble(
        (str(cap.scenario.info.name), "bold"), f"  one-step graph: {one.node_count:,} nodes; "
        f"unrolled x{k}: {cap.node_count:,} nodes; pool {cap.pool}, "
        f"{report.unrolled.iters} steps x {report.unrolled.rounds} rounds"
    ))
    table = Table(show_edge=False, header_style="bold")
    table.add_column("per step")
    table.add_column("eager", justify="right")
    table.add_column("graph (1 step)", justify="right")
    table.add_column(f"graph ({k} steps)", justify="right")
    for label, attr in (("GPU µs (events)", "gpu_us"), ("host submit µs", "host_us"),
                        ("wall µs", "wall_us")):
        table.add_row(label, _stat(getattr(report.eager, attr)), _stat(getattr(report.graph, attr)),
                      _stat(getattr(report.unrolled, attr)))
    capture_ms = sum(g.capture_ms + g.instantiate_ms for g in cap.graphs)
    one_ms = sum(g.capture_ms + g.instantiate_ms for g in one.graphs)
    table.add_row("capture + instantiate ms", "-", f"{one_ms:.2f}", f"{capture_ms:.2f}")
    table.add_row("graph pool", "-", format_bytes(one.pool_bytes), format_bytes(cap.pool_bytes))
    console.print(table)
    console.print(Text.assemble(
        f"unrolled x{k} per step / one-step graph (GPU time): ",
        (f"{report.over_one_step:.3f}", "bold"), "; speedup over eager: ",
        (f"{report.speedup:.2f}x", "bold"),
    ))
    chk = report.check
    _print_check(console, "check: ", chk,
                 None if chk is None else
                 f" — {len(chk.outputs)} output(s) equal: {chk.steps * k} eager step(s) vs "
                 f"{chk.steps} replay(s) of the {k}-step graph")
    one = report.one_step_check
    if chk is not None and one is not None:
        _print_check(console, "check of the one-step graph: ", one,
                     f" — {len(one.outputs)} output(s) equal after {one.steps} step(s)")
    if chk is None or not chk.ran or not chk.ok:
        _audit_hint(console, cap, chk, None if chk is None else chk.steps * k)
    else:
        _audit_hint(console, cap, one, one.steps if one is not None else None)


def _per_graph_table(report) -> Table:
    checks = report.check.per_graph if report.check is not None else {}
    table = _table(("graph", "left"), ("nodes", "right"), ("eager GPU µs", "right"),
                   ("graph GPU µs", "right"), ("graph host µs", "right"),
                   ("speedup", "right"), ("check", "left"))
    for g in report.per_graph:
        chk = checks.get(g.name)
        verdict = "-" if chk is None else chk.verdict
        colour = {"ok": "green", "FAILED": "bold red"}.get(verdict, "yellow")
        table.add_row(Text(g.name), f"{g.nodes:,}", f"{g.eager.gpu_us.median:.2f}",
                      f"{g.graph.gpu_us.median:.2f}", f"{g.graph.host_us.median:.2f}",
                      f"{g.speedup:.2f}x", Text(verdict, style=colour))
    total = report.check
    table.add_row(Text("all graphs", style="bold"), f"{report.capture.node_count:,}",
                  f"{report.eager.gpu_us.median:.2f}", f"{report.graph.gpu_us.median:.2f}",
                  f"{report.graph.host_us.median:.2f}", f"{report.speedup:.2f}x",
                  Text("-" if total is None else total.verdict))
    return table


@contextlib.contextmanager
def progress(console: Console, description: str, enabled: bool = True):
    """A progress bar; yields ``tick(done, total)``. Silent when disabled or not a terminal."""
    if not enabled or not console.is_terminal:
        yield lambda done, total: None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task(description, total=None)

        def tick(done, total):
            bar.update(task, completed=done, total=total)

        yield tick


def print_smoke(console: Console, rows, total: int, interrupted: bool) -> None:
    """The table `accelgraph smoke` prints, then one line per problem."""
    table = _table(("scenario", "left"), ("status", "left"), ("nodes", "right"),
                   ("capture ms", "right"), ("speedup", "right"), ("check", "left"),
                   ("drift", "left"))
    colours = {"ok": "green", "failed": "bold red", "error": "bold red", "skipped": "yellow"}
    from ..run.smoke import case_names

    # the table names each scenario as JUnit does (its stem; its path where stems clash), so
    # a folder's absolute path does not crowd out the figures; the problem lines give paths
    for r, name in zip(rows, case_names([r.scenario for r in rows])):
        table.add_row(
            Text(one_line(name)), Text(r.status, style=colours.get(r.status, "")),
            "-" if r.nodes is None else f"{r.nodes:,}",
            "-" if r.capture_ms is None else f"{r.capture_ms:.1f}",
            f"{r.speedup:.2f}x" if r.speedup else "-", Text(r.check),
            Text(r.drift),
        )
    console.print(table)
    for r in rows:
        if r.status != "ok":
            colour = "yellow" if r.status == "skipped" else "red"
            # (a line break in a file's name or a message is written as an escape: a
            # problem stays one line, as the README says of every name accelgraph prints)
            console.print(Text.assemble((one_line(r.scenario), colour),
                                        f": {one_line(r.message)}"))
    passed = sum(r.status == "ok" for r in rows)
    skipped = sum(r.status == "skipped" for r in rows)
    tail = f" — interrupted after {len(rows)} of {total}" if interrupted else ""
    skips = f", {skipped} skipped" if skipped else ""
    console.print(f"{passed} passed, {len(rows) - passed - skipped} failed{skips}{tail}")
