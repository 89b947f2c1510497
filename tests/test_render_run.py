"""What capture, replay, unroll and smoke print, from plain results (no CUDA): pinned as text.

The GPU tier prints these from real runs; here the printers get stand-in results with the
fields they read, so every number, word and table cell is checked on the CPU.
"""

from __future__ import annotations

import io
from types import SimpleNamespace as NS

from _paths import styles_of
from rich.console import Console, Group

from accelgraph_cli.render import run


def printed(printer, *args) -> str:
    console = Console(file=io.StringIO(), width=110, force_terminal=False, no_color=True, record=True)
    printer(console, *args)
    return "\n".join(line.rstrip() for line in console.export_text().splitlines())


class _Collect:
    """Stands in for the console: keeps what a printer prints, for styles_of."""

    def __init__(self):
        self.items = []

    def print(self, *objects):
        self.items.extend(objects)


def colours(printer, *args) -> list[tuple[str, str]]:
    console = _Collect()
    printer(console, *args)
    return styles_of(Group(*console.items), width=110)


def stat(median: float, low: float, high: float) -> NS:
    return NS(median=median, min=low, max=high)


def timing(scale: float, iters: int = 100, rounds: int = 5) -> NS:
    return NS(gpu_us=stat(10 * scale, 9 * scale, 12 * scale), host_us=stat(2 * scale, scale, 3 * scale),
              wall_us=stat(11 * scale, 10 * scale, 13 * scale), iters=iters, rounds=rounds)


def capture(backend=None, watch=None) -> NS:
    graphs = [
        NS(name="main", node_count=1234, kinds={"kernel": 3, "memcpy": 1}, capture_ms=1.234,
           instantiate_ms=5.678, pool_added=2048, pool_bytes=4096),
        NS(name="tail", node_count=2, kinds={}, capture_ms=0.5, instantiate_ms=0.25, pool_added=0,
           pool_bytes=1536),
    ]
    return NS(
        scenario=NS(info=NS(name="saxpy", summary="a*x + y", backend="cupy")), backend=backend,
        params={"n": 8}, pool="shared", error_mode="thread_local", graphs=graphs, node_count=1236,
        pool_bytes=5632,
        guard_summary=lambda: {"arrays": 2, "bytes": 3072, "snapshot_ms": 0.1234, "compare_ms": 0.5678,
                               **(watch or {"watch": "off", "watch_off": "cupti-python is not available",
                                            "watch_ms": 0.0})},
    )


def check(ok=True, ran=True, rtol=0, atol=0, per_graph=None, note="", problems=(), steps=3) -> NS:
    return NS(ok=ok, ran=ran, rtol=rtol, atol=atol, per_graph=per_graph or {}, note=note, outputs=["y", "z"],
              steps=steps, graphs=["main", "tail"], problems=lambda: list(problems))


def replay(chk, per_graph=()) -> NS:
    return NS(capture=capture(), graph=timing(1), eager=timing(3), per_graph=list(per_graph), speedup=3.0,
              check=chk)


def unrolled(chk) -> NS:
    one = NS(node_count=617, graphs=[NS(capture_ms=0.5, instantiate_ms=1.0)], pool_bytes=1024)
    return NS(capture=capture(), one_step=one, unroll=4, unrolled=timing(0.5, 50, 3), eager=timing(3),
              graph=timing(1), over_one_step=0.5, speedup=6.0, check=chk, one_step_check=None)


def smoke_row(scenario: str, status: str, speedup, message: str = "", captured=True) -> NS:
    return NS(scenario=scenario, status=status, nodes=1200 if captured else None,
              capture_ms=12.345 if captured else None, speedup=speedup,
              check="bitwise" if captured else "-", drift="-", message=message)


def smoke_rows() -> list[NS]:
    """One row of each status smoke reports (a skipped one captured nothing)."""
    return [
        smoke_row("saxpy", "ok", 2.5),
        smoke_row("jacobi", "failed", 0, "outputs differ"),
        smoke_row("torch_mlp", "skipped", None, "needs torch", captured=False),
        smoke_row("bad", "error", 1.0, "boom"),
    ]


# ------------------------------------------------------------------------ capture


def test_capture_table_rows_totals_and_guard():
    assert printed(run.print_capture, capture(), "out/saxpy") + "\n" == """\
saxpy  a*x + y
backend cupy  params {'n': 8}  pool shared  error mode thread_local
 graph ┃ nodes ┃ kinds              ┃ capture ms ┃ instantiate ms ┃ pool added ┃    pool
━━━━━━━╇━━━━━━━╇━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━
 main  │ 1,234 │ kernel 3, memcpy 1 │       1.23 │           5.68 │    2.0 KiB │ 4.0 KiB
 tail  │     2 │ -                  │       0.50 │           0.25 │        0 B │ 1.5 KiB
2 graph(s), 1,236 nodes; pool memory held: 5.5 KiB (shared); artifacts in out/saxpy
guard: 2 state array(s), 3.0 KiB, unchanged by capture (nothing ran outside the graphs); checksums 0.123 ms
before, 0.568 ms after; execution watch off: cupti-python is not available
"""


def test_capture_guard_line_says_the_gpu_ran_nothing_where_the_watch_was_on():
    on = capture(watch={"watch": "on", "watch_off": None, "watch_ms": 0.0421})
    text = " ".join(printed(run.print_capture, on, "o").split())
    assert text.endswith("0.568 ms after; the GPU ran nothing while capturing (CUPTI, 0.042 ms)")


def test_capture_names_the_backend_that_ran_over_the_scenario_default():
    assert printed(run.print_capture, capture(NS(name="torch")), "o").splitlines()[1] == (
        "backend torch  params {'n': 8}  pool shared  error mode thread_local"
    )


# ------------------------------------------------------------------------- replay

NOT_RUN = 'check: not run (no outputs() in the scenario, or --no-check)'


def test_replay_table_speedup_and_a_bitwise_check():
    assert printed(run.print_replay, replay(check())) + "\n" == """\
saxpy  1,236 nodes in 2 graph(s), pool shared, 100 iters x 5 rounds
 per iteration   ┃               eager ┃               graph
━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━
 GPU µs (events) │ 30.00 (27.00–36.00) │  10.00 (9.00–12.00)
 host submit µs  │    6.00 (3.00–9.00) │    2.00 (1.00–3.00)
 wall µs         │ 33.00 (30.00–39.00) │ 11.00 (10.00–13.00)
speedup (GPU time, medians): 3.00x
check: ok — 2 output(s) equal after 3 step(s) from the pre-capture state, bitwise
"""


def test_replay_check_not_run_failed_or_skipped():
    assert printed(run.print_replay, replay(None)).splitlines()[-1] == NOT_RUN
    assert printed(run.print_replay, replay(check(ran=False, note="no outputs"))).splitlines()[-1] == (
        'check: not run (no outputs)'
    )
    failed = check(ok=False, rtol=1e-5, atol=1e-8, problems=["y: 3 of 8 differ", "z: shape"],
                   steps=2)
    assert printed(run.print_replay, replay(failed)).splitlines()[-5:] == [
        "check: FAILED (rtol=1e-05, atol=1e-08)",
        "  y: 3 of 8 differ",
        "  z: shape",
        "a host value capture froze is a common cause: accelgraph audit saxpy --param n=8 names each "
        "kernel argument",
        "that changes from one step to the next",
    ]


def test_a_failed_check_names_the_audit_of_the_same_scenario_and_parameters():
    failed = replay(check(ok=False, problems=["y: 3 of 8 differ"], steps=2))
    failed.capture.scenario.info.path = "tests/frozen_values/host_counter.py"
    failed.capture.scenario.info.params = {"n": 8, "k": 2}
    text = " ".join(printed(run.print_replay, failed).split())
    assert "accelgraph audit tests/frozen_values/host_counter.py names each" in text
    failed.capture.params = {"n": 16, "k": 2}
    text = " ".join(printed(run.print_replay, failed).split())
    assert "accelgraph audit tests/frozen_values/host_counter.py --param n=16 names" in text
    # a bundled scenario, asked for by its name, by its name
    from accelgraph_cli.run.catalog import bundled_scenario

    failed.capture.scenario.info.path = bundled_scenario("saxpy")
    text = " ".join(printed(run.print_replay, failed).split())
    assert "accelgraph audit saxpy --param n=16 names" in text
    # quoted for a shell, with the pool and error mode it ran with where not the file's
    failed.capture.scenario.info.path = "my runs/scen's.py"
    failed.capture.scenario.info.params = {"act": "gelu", "fast": False}
    failed.capture.params = {"act": "gelu fast", "fast": True}
    failed.capture.scenario.info.pool = "private"
    failed.capture.scenario.info.error_mode = "thread_local"
    text = " ".join(printed(run.print_replay, failed).split())
    assert ("""accelgraph audit 'my runs/scen'"'"'s.py' --param 'act=gelu fast' --param fast=True """
            "--pool shared names") in text
    import shlex

    command = text.split("common cause: ", 1)[1].split(" names each", 1)[0]
    assert shlex.split(command) == ["accelgraph", "audit", "my runs/scen's.py", "--param",
                                    "act=gelu fast", "--param", "fast=True", "--pool", "shared"]
    # an ok check, or one not run, says nothing of it
    for chk in (check(), check(ran=False, note="n"), None):
        assert "accelgraph audit" not in printed(run.print_replay, replay(chk))


def test_the_audit_named_covers_as_many_steps_as_the_check_ran():
    """A check of three or more steps that fails may have met a value that changes less
    often than every step: the audit named compares as many (at most its 64)."""
    def command(steps: int, report=None) -> str:
        chk = check(ok=False, problems=["y: differs"], steps=steps)
        text = " ".join(printed(run.print_replay, report or replay(chk)).split())
        return text.split("common cause: ", 1)[1].split(" names each", 1)[0]

    assert command(2) == "accelgraph audit saxpy --param n=8"
    assert command(1) == "accelgraph audit saxpy --param n=8"  # --check-steps 1: two steps
    text = " ".join(printed(run.print_replay, replay(check(
        ok=False, problems=["y: differs"], steps=1))).split())
    assert text.endswith("names each kernel argument that changes from one step to the next")
    assert command(3) == "accelgraph audit saxpy --param n=8 --steps 3"
    assert command(100) == "accelgraph audit saxpy --param n=8 --steps 64"
    # unrolled x4: three replays of the unrolled graph are twelve eager steps
    failed = unrolled(check(ok=False, problems=["y: differs"], steps=3))
    text = " ".join(printed(run.print_unrolled, failed).split())
    assert "accelgraph audit saxpy --param n=8 --steps 12 names" in text
    # and says what that audit finds: not a change from one step to the next
    assert text.endswith("names each kernel argument that differs between the first of 12 "
                         "steps and a later one")
    text = " ".join(printed(run.print_replay, replay(check(
        ok=False, problems=["y: differs"], steps=100))).split())
    assert text.endswith("that differs between the first of 64 steps and a later one")


def test_replay_of_several_graphs_has_a_row_per_graph_and_a_tolerance():
    per_graph = [
        NS(name="main", nodes=1234, eager=timing(3), graph=timing(1), speedup=3.0),
        NS(name="tail", nodes=2, eager=timing(2), graph=timing(1.5), speedup=1.3333),
    ]
    total = check(rtol=1e-5, per_graph={"main": NS(verdict="ok"), "tail": NS(verdict="FAILED")})
    total.verdict = "FAILED"
    assert printed(run.print_replay, replay(total, per_graph)) + "\n" == """\
saxpy  1,236 nodes in 2 graph(s), pool shared, 100 iters x 5 rounds
 graph      ┃ nodes ┃ eager GPU µs ┃ graph GPU µs ┃ graph host µs ┃ speedup ┃ check
━━━━━━━━━━━━╇━━━━━━━╇━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━
 main       │ 1,234 │        30.00 │        10.00 │          2.00 │   3.00x │ ok
 tail       │     2 │        20.00 │        15.00 │          3.00 │   1.33x │ FAILED
 all graphs │ 1,236 │        30.00 │        10.00 │          2.00 │   3.00x │ FAILED
 per iteration (all graphs) ┃               eager ┃               graph
━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━
 GPU µs (events)            │ 30.00 (27.00–36.00) │  10.00 (9.00–12.00)
 host submit µs             │    6.00 (3.00–9.00) │    2.00 (1.00–3.00)
 wall µs                    │ 33.00 (30.00–39.00) │ 11.00 (10.00–13.00)
speedup (GPU time, medians): 3.00x
check: ok — 2 output(s) equal after 3 step(s) from the pre-capture state, each graph alone and all 2 in order,
rtol=1e-05, atol=0
"""


# ------------------------------------------------------------------------- unroll


def test_unrolled_table_costs_and_check():
    assert printed(run.print_unrolled, unrolled(check())) + "\n" == """\
saxpy  one-step graph: 617 nodes; unrolled x4: 1,236 nodes; pool shared, 50 steps x 3 rounds
 per step                 ┃               eager ┃      graph (1 step) ┃  graph (4 steps)
━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━
 GPU µs (events)          │ 30.00 (27.00–36.00) │  10.00 (9.00–12.00) │ 5.00 (4.50–6.00)
 host submit µs           │    6.00 (3.00–9.00) │    2.00 (1.00–3.00) │ 1.00 (0.50–1.50)
 wall µs                  │ 33.00 (30.00–39.00) │ 11.00 (10.00–13.00) │ 5.50 (5.00–6.50)
 capture + instantiate ms │                   - │                1.50 │             7.66
 graph pool               │                   - │             1.0 KiB │          5.5 KiB
unrolled x4 per step / one-step graph (GPU time): 0.500; speedup over eager: 6.00x
check: ok — 2 output(s) equal: 12 eager step(s) vs 3 replay(s) of the 4-step graph
"""


def test_unrolled_check_not_run_or_failed():
    assert printed(run.print_unrolled, unrolled(None)).splitlines()[-1] == NOT_RUN
    assert printed(run.print_unrolled, unrolled(check(ran=False, note="skipped"))).splitlines()[-1] == (
        'check: not run (skipped)'
    )
    failed = unrolled(check(ok=False, problems=["y: differs"]))
    assert printed(run.print_unrolled, failed).splitlines()[-4:-2] == ['check: FAILED', '  y: differs']
    assert "accelgraph audit saxpy" in printed(run.print_unrolled, failed).splitlines()[-2]


def test_unrolled_shows_the_one_step_graphs_own_check():
    # The one-step graph is timed and shown beside the unrolled one, but only the unrolled
    # graph was checked: a one-step graph that froze a value two steps undo passed unseen.
    report = unrolled(check())
    report.one_step_check = check(ok=False, problems=["output 'y': 4 of 4 elements differ"])
    assert printed(run.print_unrolled, report).splitlines()[-5:-2] == [
        "check: ok — 2 output(s) equal: 12 eager step(s) vs 3 replay(s) of the 4-step graph",
        "check of the one-step graph: FAILED", "  output 'y': 4 of 4 elements differ"]
    assert "accelgraph audit saxpy" in printed(run.print_unrolled, report)  # the one-step's
    report.one_step_check = check()
    assert printed(run.print_unrolled, report).splitlines()[-1] == (
        "check of the one-step graph: ok — 2 output(s) equal after 3 step(s)")


def test_an_unroll_report_is_ok_only_when_both_graphs_checks_are():
    from accelgraph_cli.run.protocol import UnrollReport

    passed, failed = NS(ok=True), NS(ok=False)
    report = UnrollReport(None, None, None, 2, passed, None, None, failed)
    assert not report.ok
    report.one_step_check = passed
    assert report.ok
    report.check = NS(ok=False)  # not run counts as not ok, as it did before
    assert not report.ok
    assert UnrollReport(None, None, None, 2, None, None, None).ok  # --no-check


# -------------------------------------------------------------------------- smoke


def test_smoke_table_problems_and_summary():
    rows = smoke_rows()
    assert printed(run.print_smoke, rows, 6, True) + "\n" == """\
 scenario  ┃ status  ┃ nodes ┃ capture ms ┃ speedup ┃ check   ┃ drift
━━━━━━━━━━━╇━━━━━━━━━╇━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━━╇━━━━━━━
 saxpy     │ ok      │ 1,200 │       12.3 │   2.50x │ bitwise │ -
 jacobi    │ failed  │ 1,200 │       12.3 │       - │ bitwise │ -
 torch_mlp │ skipped │     - │          - │       - │ -       │ -
 bad       │ error   │ 1,200 │       12.3 │   1.00x │ bitwise │ -
jacobi: outputs differ
torch_mlp: needs torch
bad: boom
1 passed, 2 failed, 1 skipped — interrupted after 4 of 6
"""
    assert printed(run.print_smoke, rows[:1], 1, False).splitlines()[-1] == '1 passed, 0 failed'


def test_a_line_break_in_a_scenario_s_name_or_its_message_keeps_a_row_one_line():
    # The table's name and the problem line printed the break raw: the row split in two
    # (smoke --list already escaped it)
    from accelgraph_cli.run.smoke import SmokeRow

    rows = [SmokeRow("nl/bad\nname.py", "error", message="nl/bad\nname.py:3: setup() raised\nx")]
    lines = printed(run.print_smoke, rows, 1, False).splitlines()
    assert lines[2].startswith(" bad\\nname │ error ")
    assert lines[3] == "nl/bad\\nname.py: nl/bad\\nname.py:3: setup() raised\\nx"
    assert len(lines) == 5


def test_progress_off_or_off_a_terminal_is_a_silent_tick():
    console = Console(file=io.StringIO(), force_terminal=False)
    for enabled in (True, False):
        with run.progress(console, "capturing", enabled=enabled) as tick:
            assert tick(1, 2) is None
    assert console.file.getvalue() == ""


# ------------------------------------------------------------------------ colours


def test_capture_and_replay_colours():
    assert colours(run.print_capture, capture(), "o") == [
        ("saxpy", "bold"), ("cupy", "cyan"), ("shared", "cyan"), ("thread_local", "cyan"),
        ("graph", "bold"), ("nodes", "bold"), ("kinds             ", "bold"), ("capture ms", "bold"),
        ("instantiate ms", "bold"), ("pool added", "bold"), ("   pool", "bold"), ("5.5 KiB", "bold"),
    ]
    header = [("saxpy", "bold"), ("per iteration  ", "bold"), ("              eager", "bold"),
              ("              graph", "bold"), ("3.00x", "bold")]
    assert colours(run.print_replay, replay(None)) == [*header, ("not run", "yellow")]
    assert colours(run.print_replay, replay(check(ran=False, note="n"))) == [*header, ("not run", "yellow")]
    assert colours(run.print_replay, replay(check())) == [*header, ("ok", "green")]
    failed = replay(check(ok=False, problems=["y"]))
    found = colours(run.print_replay, failed)
    assert found[:len(header) + 1] == [*header, ("FAILED", "bold red")]
    assert {style for _text, style in found[len(header) + 1:]} == {"dim"}  # the audit's hint


def test_replay_of_several_graphs_colours_each_verdict():
    per_graph = [
        NS(name="main", nodes=1234, eager=timing(3), graph=timing(1), speedup=3.0),
        NS(name="tail", nodes=2, eager=timing(2), graph=timing(1.5), speedup=1.3333),
        NS(name="side", nodes=5, eager=timing(2), graph=timing(1.5), speedup=1.3333),
    ]
    total = check(per_graph={"main": NS(verdict="ok"), "tail": NS(verdict="FAILED")})
    total.verdict = "FAILED"
    assert colours(run.print_replay, replay(total, per_graph))[8:13] == [
        ("ok    ", "green"), ("FAILED", "bold red"), ("-     ", "yellow"), ("all graphs", "bold"),
        ("per iteration (all graphs)", "bold"),
    ]


def test_replay_of_one_graph_has_no_per_graph_table():
    one = [NS(name="main", nodes=1236, eager=timing(3), graph=timing(1), speedup=3.0)]
    assert printed(run.print_replay, replay(check(), one)) == printed(run.print_replay, replay(check()))


def test_unrolled_colours():
    header = [("saxpy", "bold"), ("per step                ", "bold"), ("              eager", "bold"),
              ("     graph (1 step)", "bold"), (" graph (4 steps)", "bold"), ("0.500", "bold"),
              ("6.00x", "bold")]
    failed = unrolled(check(ok=False, problems=["y"]))
    found = colours(run.print_unrolled, failed)
    assert found[:len(header) + 1] == [*header, ("FAILED", "bold red")]
    assert {style for _text, style in found[len(header) + 1:]} == {"dim"}  # the audit's hint
    assert colours(run.print_unrolled, unrolled(check()))[-1] == ("ok", "green")
    assert colours(run.print_unrolled, unrolled(None))[-1] == ("not run", "yellow")
    assert colours(run.print_unrolled, unrolled(check(ran=False, note="n")))[-1] == ("not run", "yellow")


def test_smoke_colours_by_status():
    rows = [*smoke_rows(), smoke_row("odd", "unheard-of", 1.0, "?")]
    number = "bold not italic cyan"  # rich's highlighting of the numbers in the last line
    assert colours(run.print_smoke, rows, 6, True) == [
        ("scenario ", "bold"), ("status    ", "bold"), ("nodes", "bold"), ("capture ms", "bold"),
        ("speedup", "bold"), ("check  ", "bold"), ("drift", "bold"),
        ("ok        ", "green"), ("failed    ", "bold red"), ("skipped   ", "yellow"),
        ("error     ", "bold red"),
        ("jacobi", "red"), ("torch_mlp", "yellow"), ("bad", "red"), ("odd", "red"),
        ("1", number), ("3", number), ("1", number), ("5", number), ("6", number),
    ]


def test_smoke_table_names_scenarios_by_stem_and_problems_by_path():
    # A run over an absolute folder: the table is not a column of truncated paths; where two
    # stems clash the table gives paths, as the JUnit report does.
    rows = smoke_rows()
    for r in rows:
        r.scenario = f"/home/someone/project/scenarios/{r.scenario}.py"
    text = printed(run.print_smoke, rows, 4, False)
    assert " saxpy     │ ok " in text
    assert "/home/someone/project/scenarios/jacobi.py: outputs differ" in text
    rows[1].scenario = "/elsewhere/saxpy.py"
    text = printed(run.print_smoke, rows, 4, False)
    assert "/elsewhere/saxpy.py" in text.splitlines()[3]
