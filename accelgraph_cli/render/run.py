"""Rendering capture and replay results with rich (no CUDA here: plain dataclasses in)."""

from __future__ import annotations

import contextlib

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .text import format_bytes


def _kinds(kinds: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in kinds.items()) or "-"


def print_capture(console: Console, result, folder) -> None:
    """The table `accelgraph capture` prints: one row per graph, then the pool total."""
    scen = result.scenario
    console.print(
        f"[bold]{scen.info.name}[/]  {scen.info.summary}\n"
        f"params {result.params}  pool [cyan]{result.pool}[/]  error mode [cyan]{result.error_mode}[/]"
    )
    table = Table(show_edge=False, header_style="bold")
    for col, just in (("graph", "left"), ("nodes", "right"), ("kinds", "left"),
                      ("capture ms", "right"), ("instantiate ms", "right"), ("pool", "right")):
        table.add_column(col, justify=just)
    for g in result.graphs:
        table.add_row(g.name, f"{g.node_count:,}", _kinds(g.kinds), f"{g.capture_ms:.2f}",
                      f"{g.instantiate_ms:.2f}", format_bytes(g.pool_bytes))
    console.print(table)
    console.print(
        f"{len(result.graphs)} graph(s), {result.node_count:,} nodes; "
        f"pool memory held: [bold]{format_bytes(result.pool_bytes)}[/] ({result.pool}); "
        f"artifacts in {folder}"
    )


def _stat(stat, digits=2) -> str:
    return f"{stat.median:.{digits}f} ({stat.min:.{digits}f}–{stat.max:.{digits}f})"


def print_replay(console: Console, report) -> None:
    """The table `accelgraph replay` prints: eager vs graph, medians with spread, the check."""
    cap = report.capture
    console.print(
        f"[bold]{cap.scenario.info.name}[/]  {cap.node_count:,} nodes in {len(cap.graphs)} "
        f"graph(s), pool {cap.pool}, {report.graph.iters} iters x {report.graph.rounds} rounds"
    )
    table = Table(show_edge=False, header_style="bold")
    table.add_column("per iteration")
    table.add_column("eager", justify="right")
    table.add_column("graph", justify="right")
    table.add_row("GPU µs (events)", _stat(report.eager.gpu_us), _stat(report.graph.gpu_us))
    table.add_row("host submit µs", _stat(report.eager.host_us), _stat(report.graph.host_us))
    table.add_row("wall µs", _stat(report.eager.wall_us), _stat(report.graph.wall_us))
    console.print(table)
    console.print(f"speedup (GPU time, medians): [bold]{report.speedup:.2f}x[/]")
    chk = report.check
    if chk is None:
        console.print("check: [yellow]not run[/] (no outputs() in the scenario, or --no-check)")
    elif chk.ok:
        how = "bitwise" if chk.rtol == 0 and chk.atol == 0 else f"rtol={chk.rtol}, atol={chk.atol}"
        console.print(f"check: [green]ok[/] — {len(chk.outputs)} output(s) equal after "
                      f"{chk.steps} step(s), {how}")
    else:
        console.print("check: [bold red]FAILED[/]")
        for m in chk.mismatches:
            console.print(f"  {m.line()}")


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
    table = Table(show_edge=False, header_style="bold")
    for col, just in (("scenario", "left"), ("status", "left"), ("nodes", "right"),
                      ("capture ms", "right"), ("speedup", "right"), ("check", "left"),
                      ("drift", "left")):
        table.add_column(col, justify=just)
    colours = {"ok": "green", "failed": "bold red", "error": "bold red"}
    for r in rows:
        table.add_row(
            r.scenario, f"[{colours.get(r.status, '')}]{r.status}[/]", f"{r.nodes:,}",
            f"{r.capture_ms:.1f}", f"{r.speedup:.2f}x" if r.speedup else "-", r.check, r.drift,
        )
    console.print(table)
    for r in rows:
        if not r.ok:
            console.print(f"[red]{r.scenario}[/]: {r.message}")
    passed = sum(r.ok for r in rows)
    tail = f" — interrupted after {len(rows)} of {total}" if interrupted else ""
    console.print(f"{passed} passed, {len(rows) - passed} failed{tail}")
