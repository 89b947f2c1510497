"""The tables `accelgraph profile` prints: per graph, each node's GPU time and the line of the
scenario that made it."""

from __future__ import annotations

import os

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..model.demangle import demangle_many, short_kernel_name
from ..model.profile import GraphProfile, Profile

_NAME_WIDTH = 40


def print_profile(console: Console, profile: Profile, limit: int = 0) -> None:
    """Every graph of ``profile``; ``limit`` > 0 shows that many costliest nodes a graph."""
    scenario = os.path.basename(profile.scenario) or "?"
    console.print(Text.assemble((scenario, "bold"), f"  params {profile.params}  on ",
                                (profile.device or "an unnamed device", "cyan")))
    for graph in profile.graphs:
        _print_graph(console, graph, limit)
    if profile.origins_failed:
        console.print(Text(f"some nodes' origins may be missing: {profile.origins_failed}",
                           style="dim"))


def _print_graph(console: Console, graph: GraphProfile, limit: int) -> None:
    console.print(Text.assemble(
        "\n", (graph.name, "bold"),
        f"  {graph.step_us:.2f} µs a replay (CUDA events, {graph.iters:,} replays), "
        f"{graph.traced_step_us:.2f} µs while traced; nodes busy {graph.busy_us:.2f} µs "
        "(first start to last end)",
    ))
    table = _table("node", "own µs", "share", "span µs", "made by")
    nodes = graph.nodes
    readable = demangle_many(n.name for n in nodes if n.kind == "kernel")
    # the figures keep their width (about 32 columns with the table's rules): a node's name
    # and the line that made it share what is left, the line getting at least 24
    name_width = min(_NAME_WIDTH, max(8, console.width - 32 - 24 - 6))
    labels = [_label(n, readable, name_width) for n in nodes]
    origin_width = max(16, console.width - max((len(x) for x in labels), default=4) - 32)
    shown = sorted(nodes, key=lambda n: -n.own_us)[:limit] if limit > 0 else nodes
    keep = {id(n) for n in shown}
    for node, label in zip(nodes, labels):
        if id(node) not in keep:
            continue
        share = f"{node.own_us / graph.busy_us:.0%}" if graph.busy_us > 0 else "–"
        table.add_row(label, f"{node.own_us:.2f}", share,
                      f"{node.span_us:.2f}", _origin(node, origin_width))
    console.print(table)
    notes = []
    if limit > 0 and len(shown) < len(nodes):
        notes.append(f"{len(nodes) - len(shown)} cheaper node(s) not shown (--top)")
    notes.append(f"own times add to {graph.own_total_us:.2f} µs of the {graph.busy_us:.2f} µs "
                 "busy (less: time between nodes, such as a host node's; more: nodes side by "
                 "side)")
    if graph.silent:
        kernels = graph.silent_kernels
        notes.append(f"{len(graph.silent)} node(s) with no run recorded: "
                     + ", ".join(graph.silent[:6]) + (" …" if len(graph.silent) > 6 else "")
                     + (f" ({len(kernels)} of them kernel nodes: their records could not be "
                        "matched to the graph)" if kernels else
                        " (empty, event, host and memory-allocation nodes run nothing CUPTI's kernel, "
                        "copy and memset records time)"))
    short = [n.node for n in nodes if n.runs < graph.replays]
    if graph.replays < graph.iters or short or graph.dropped or graph.unreadable:
        notes.append(f"records of {graph.replays} of {graph.iters} replays came back; CUPTI "
                     f"dropped {graph.dropped}, {graph.unreadable} had no timestamps; node(s) "
                     f"with fewer runs: {', '.join(short[:6]) or 'none'}")
    for note in notes:
        console.print(Text(note, style="dim"))


def _table(*titles: str) -> Table:
    """A table of these columns: the first and last (a node, the line that made it) to the
    left, the figures between to the right; one line a row, cut with an ellipsis."""
    table = Table(show_edge=False, header_style="bold")
    for i, title in enumerate(titles):
        table.add_column(title, justify="left" if i in (0, len(titles) - 1) else "right",
                         overflow="ellipsis", no_wrap=True)
    return table


def _label(node, readable: dict, width: int) -> Text:
    if node.kind == "kernel":
        name = short_kernel_name(readable.get(node.name, node.name), width)
    else:
        name = node.kind
    return Text.assemble((node.node.rsplit("_", 1)[-1], "dim"), " ", name)


def _origin(node, width: int) -> Text:
    origin = node.origin
    if origin is None:
        return Text("–", style="dim")
    where = origin.where()
    room = max(0, width - len(where) - 2)
    code = origin.code if len(origin.code) <= room else origin.code[: max(0, room - 1)] + "…"
    return Text.assemble((where, "cyan"), "  ", code)


def print_comparison(console: Console, before: Profile, after: Profile, changes,
                     before_name: str, after_name: str) -> None:
    """Two profiles of graphs of the same shape, node by node: own time before and after."""
    console.print(Text.assemble(
        ("before ", "dim"), (before_name, "bold"), f"  on {before.device or '?'}\n",
        ("after  ", "dim"), (after_name, "bold"), f"  on {after.device or '?'}"))
    if before.device != after.device:
        console.print(Text("recorded on different GPUs: the figures compare the cards too",
                           style="dim"))
    for change in changes:
        old, new = change.before, change.after
        console.print(Text.assemble(
            "\n", (change.name, "bold"),
            f"  {old.step_us:.2f} → {new.step_us:.2f} µs a replay "
            f"({_percent(old.step_us, new.step_us)}; CUDA events, {old.iters:,} and "
            f"{new.iters:,} replays); busy {old.busy_us:.2f} → {new.busy_us:.2f} µs",
        ))
        table = _table("node", "own µs before", "after", "change", "made by")
        readable = demangle_many(n.name for c in change.nodes for n in (c.before, c.after)
                                 if n.kind == "kernel")
        # the figures take about 44 columns with the table's rules; the rest is shared, the
        # line that made a node getting at least 24 (as in the single profile's table)
        name_width = min(_NAME_WIDTH, max(8, console.width - 44 - 24 - 2))
        labels = [_label(c.after, readable, name_width) for c in change.nodes]
        renamed = [c for c in change.nodes if c.before.kind == "kernel"
                   and c.before.name != c.after.name]
        renamed_ids = {c.node for c in renamed}
        for c, label in zip(change.nodes, labels):
            if c.node in renamed_ids:
                label.append(" *", style="yellow")
        origin_width = max(16, console.width - max((len(x) for x in labels), default=4) - 44)
        for c, label in zip(change.nodes, labels):
            delta = round(c.change_us, 2) + 0.0  # no "-0.00"
            style = "green" if delta <= -0.05 else "red" if delta >= 0.05 else ""
            table.add_row(label, f"{c.before.own_us:.2f}", f"{c.after.own_us:.2f}",
                          Text(f"{delta:+.2f}", style=style), _origin(c.after, origin_width))
        console.print(table)
        for c in renamed:
            was = short_kernel_name(readable.get(c.before.name, c.before.name), _NAME_WIDTH)
            console.print(Text(f"* {c.node}: was {was}", style="dim"))


def _percent(before: float, after: float) -> str:
    if before <= 0:
        return "–"
    return f"{(after - before) / before:+.1%}"
