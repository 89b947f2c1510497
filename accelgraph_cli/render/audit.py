"""What `accelgraph audit` prints: per graph, each kernel argument that differs between two
consecutive steps (the values a one-step graph freezes), the line that launched it, and a
verdict."""

from __future__ import annotations

import os

from rich.console import Console
from rich.text import Text

from ..model.audit import UNJUDGED_KINDS, Audit, GraphAudit
from ..model.demangle import demangle_many, demangler_name, short_kernel_name
from .profile import _origin, _table

_NAME_WIDTH = 32


def print_audit(console: Console, audit: Audit) -> bool:
    """Every graph of ``audit``, then the verdict (see :func:`verdict`); whether it passed."""
    scenario = os.path.basename(audit.scenario) or "?"
    console.print(Text.assemble((scenario, "bold"), f"  params {audit.params}  on ",
                                (audit.device or "an unnamed device", "cyan")))
    readable = demangle_many(d.kernel for g in audit.graphs for d in g.differences)
    for graph in audit.graphs:
        _print_graph(console, graph, readable)
    if audit.origins_off:
        console.print(Text(f"no node has its line: {audit.origins_off}", style="dim"))
    elif audit.origins_failed:
        console.print(Text(f"some nodes' lines may be missing: {audit.origins_failed}",
                           style="dim"))
    ok, line = verdict(audit)
    console.print(Text.assemble("\n", ("audit: ", "bold"),
                                (line, "green" if ok else "bold red")))
    return ok


def _print_graph(console: Console, graph: GraphAudit, readable: dict) -> None:
    copies = f" and {graph.copies} copy or memset node(s)" if graph.copies else ""
    if graph.mismatch is not None:
        console.print(Text.assemble("\n", (graph.name, "bold"),
                                    f"  {graph.captured} node(s) captured for "
                                    f"{_steps(graph.steps)}"))
        console.print(Text(f"not compared: {graph.mismatch}", style="red"))
        return
    console.print(Text.assemble(
        "\n", (graph.name, "bold"),
        f"  {graph.nodes} node(s) a step: {graph.kernels} kernel(s){copies}, "
        f"{graph.arguments} argument(s) compared between {_compared(graph.steps)}"))
    if graph.nested:
        console.print(Text(f"{graph.nested} child-graph or conditional node(s): the nodes "
                           "inside are not read", style="yellow"))
    if graph.effects_note:
        console.print(Text(f"effect test: {graph.effects_note}", style="yellow"))
    if graph.untyped:
        console.print(Text(f"{len(graph.untyped)} C++ kernel(s) whose parameter types could "
                           f"not be read{_demangler_hint(graph.types_recorded)}: their small "
                           "arguments are not judged", style="yellow"))
    frozen = graph.frozen
    if frozen:
        later = "step 2" if graph.steps == 2 else "later step"
        table = _table("node", "arg", "step 1", later, "made by")
        # the values keep their width; a kernel's name and the line that launched it share
        # what is left (the table's rules and the other columns take about 26 columns), the
        # line getting at least 24
        shown = [(d.first, _later(d, graph.steps)) for d in frozen]  # both steps' values
        values = sum(max(len(x) for x in (*column, later)) for column in zip(*shown))
        name_width = min(_NAME_WIDTH, max(12, console.width - values - 26 - 24))
        rows = []
        for d, (first, second) in zip(frozen, shown):
            label = Text.assemble((d.node.rsplit("_", 1)[-1], "dim"), " ",
                                  short_kernel_name(readable.get(d.kernel, d.kernel),
                                                    name_width))
            # a part of a larger argument (a struct's word) is named by its first byte, and
            # a half of it read alone by its size too
            at = d.shown_at
            argument = d.label if at == 0 else f"{d.label} +{at}"
            if d.read_at is not None:
                argument += f" ({d.shown_size} B)"
            rows.append((d, label, argument, first,
                         second))
        widest = max(len(label) + len(argument) for _d, label, argument, *_ in rows)
        origin_width = max(16, console.width - widest - values - 16)
        for d, label, argument, first, second in rows:
            table.add_row(label, argument, Text(first, style="red"), Text(second, style="red"),
                          _origin(d, origin_width))
        console.print(table)
    elif graph.kernels or graph.copies:
        console.print(Text("no frozen argument", style="green"))
    kinds: dict[str, int] = {}
    for d in sorted(graph.differences, key=lambda d: not d.frozen):  # the frozen first
        kinds[d.what()] = kinds.get(d.what(), 0) + 1
    for what, count in kinds.items():
        console.print(Text(f"{count} × {what}", style="red" if "frozen" in what else "dim"))


def verdict(audit: Audit) -> tuple[bool, str]:
    """(passed, the line said): passed when every graph was compared, something was, and
    nothing is frozen."""
    nodes = sum(g.kernels + g.copies for g in audit.graphs)
    arguments = sum(g.arguments for g in audit.graphs)
    nested = sum(g.nested for g in audit.graphs)
    unread = f"; {nested} child-graph or conditional node(s) not read" if nested else ""
    skipped = [g.name for g in audit.graphs if g.effects_skipped]
    if skipped:
        unread += (f"; the effect test did not run on {', '.join(map(repr, skipped))} (said "
                   "above): its struct bytes that differ are not judged")
    problems = []
    frozen = [d for g in audit.graphs for d in g.frozen]
    if frozen:
        where = len({(g.name, d.node) for g in audit.graphs for d in g.frozen})
        # (with more steps, a unit may first differ at a later one: every other step)
        change = ("change from one step to the next" if max(g.steps for g in audit.graphs) == 2
                  else "differ between the first step and a later one")
        problems.append(
            f"FROZEN — {len(frozen)} argument part(s) or launch size(s) of {where} node(s) "
            f"{change}, and a graph replays the first step's every "
            "time: keep a value that changes in device memory the kernel reads (written "
            "before each replay), pick buffers on the device, or capture one graph per value")
    for g in audit.mismatched:
        problems.append(f"STEPS DIFFER — graph {g.name!r} is not the same for every step, "
                        "so one graph cannot stand for every step")
    if problems:
        return False, "; ".join(problems) + unread
    if not nodes:
        return False, ("NOTHING COMPARED — no kernel, copy or memset node at the top level of "
                       "any graph (the nodes inside child graphs and conditional nodes are not "
                       "read)")
    unjudged = sum(d.kind in UNJUDGED_KINDS for g in audit.graphs for d in g.differences)
    counted = f"; {unjudged} part(s) that differ are not judged (counted above)" if unjudged \
        else ""
    unused = sum(d.kind == "no_effect" for g in audit.graphs for d in g.differences)
    if unused:
        counted += (f"; {unused} part(s) that differ change no output when the later steps "
                    "run with the first step's")
    untyped = len({name for g in audit.graphs for name in g.untyped})
    if untyped:
        recorded = all(g.types_recorded for g in audit.graphs if g.untyped)
        counted += f"; {untyped} C++ kernel(s) untyped{_demangler_hint(recorded)}"
    steps = max(g.steps for g in audit.graphs)
    return True, (f"ok — no frozen value found in {nodes} kernel, copy and memset node(s) "
                  f"({arguments} argument(s) compared between {_compared(steps)}"
                  f"{counted}{unread}; a value that changes less often is not seen)")


def _later(d, steps: int) -> str:
    """A unit of a later step as shown: with its step where more than two were captured."""
    return d.second if steps == 2 else f"{d.second} (step {d.step})"


def _steps(count: int) -> str:
    return "two steps" if count == 2 else f"{count} steps"


def _compared(count: int) -> str:
    """How the steps were compared, in words."""
    return ("two consecutive steps" if count == 2 else
            f"the first of {count} consecutive steps and each one after it")


def _demangler_hint(recorded: bool = False) -> str:
    """Why a C++ kernel's types may be missing. Read where the audit was recorded
    (``recorded``, format 2): no demangler there, or a name it could not take apart, which a
    demangler here cannot change. Read here (format 1): no demangler here (said), or a name
    the demangler cannot take apart (nothing to say)."""
    if recorded:
        return (" (where the audit was recorded, no C++ demangler read them: record it again "
                "with binutils' c++filt installed)")
    return "" if demangler_name() else " (no C++ demangler found: install binutils for c++filt)"
