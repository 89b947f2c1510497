"""Timing: CUDA events for device time, perf_counter for host submit and wall time.

Each measurement runs ``rounds`` rounds of ``iters`` calls after a warm-up, and reports per
iteration figures for every round, so the caller can show the median and the spread.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass


@dataclass
class Stat:
    """Median and spread of per-iteration figures over rounds (same unit as the values)."""

    median: float
    min: float
    max: float
    values: list[float]

    @classmethod
    def of(cls, values: list[float]) -> Stat:
        return cls(statistics.median(values), min(values), max(values), list(values))

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Timing:
    """Per-iteration timings of one workload: device µs (CUDA events), host submit µs, wall µs."""

    gpu_us: Stat
    host_us: Stat
    wall_us: Stat
    iters: int
    rounds: int

    def per(self, k: int) -> Timing:
        """The same figures for 1/k of each iteration (an iteration that ran k steps -> per step)."""
        def scaled(stat: Stat) -> Stat:
            return Stat.of([v / k for v in stat.values])

        return Timing(scaled(self.gpu_us), scaled(self.host_us), scaled(self.wall_us),
                      self.iters * k, self.rounds)

    def to_dict(self) -> dict:
        return {
            "gpu_us": self.gpu_us.to_dict(),
            "host_us": self.host_us.to_dict(),
            "wall_us": self.wall_us.to_dict(),
            "iters": self.iters,
            "rounds": self.rounds,
        }


def speedup(eager: Timing, graph: Timing) -> float:
    """What replay buys: eager GPU time / graph GPU time per iteration (medians over rounds),
    rounded to 4 decimals; 0.0 when the graph's time is 0 (nothing measurable)."""
    g = graph.gpu_us.median
    return round(eager.gpu_us.median / g, 4) if g else 0.0


def round_orders(n: int) -> list[list[int]]:
    """Orders in which to run ``n`` workloads, one a round, cycled over the rounds: a
    Williams design, in which, within the rounds, each workload comes right after each other
    one equally often and never right after itself (for two: a, b, then b, a). Across the
    rounds' boundaries (the first of a round after the last of the one before) the pairs are
    not balanced, but for three or more no workload follows itself there either.

    What ran just before a round affects it (a GPU-bound round leaves the host idle and its
    caches cold for the next; a host-bound one does not), so that must fall on every
    workload alike. Mirrored rounds (a, b, c, d, then d, c, b, a) do not do that for more
    than two: there d always follows c or itself, and b always follows a or c. On an H100,
    one eager step timed as two of four mirrored workloads gave ratios of 0.83 to 1.18
    between runs of the same code; in this order, 1.01 and 1.02 (bench/HISTORY.md).
    """
    if n < 2:
        return [list(range(n))]
    first, low, high = [0], 1, n - 1
    while low <= high:  # 0, 1, n-1, 2, n-2, ...
        first.append(low)
        low += 1
        if low <= high:
            first.append(high)
            high -= 1
    rows = [[(k + i) % n for k in first] for i in range(n)]
    if n % 2:  # an odd count needs the reversed rows too, to balance who follows whom
        rows = _chained(rows + [row[::-1] for row in rows])
    return rows


def _chained(rows: list[list[int]]) -> list[list[int]]:
    """``rows`` in an order in which no row starts with the workload the row before it
    (cyclically) ends with: a depth-first search, from the first row (rows a reversed
    Williams design adds would otherwise start with what the row before them ends with)."""
    order, used = [0], {0}

    def extend() -> bool:
        if len(order) == len(rows):
            return rows[order[-1]][-1] != rows[order[0]][0]
        for i in range(len(rows)):
            if i not in used and rows[i][0] != rows[order[-1]][-1]:
                order.append(i)
                used.add(i)
                if extend():
                    return True
                used.discard(order.pop())
        return False

    return [rows[i] for i in order] if extend() else rows


def measure_interleaved(fns: dict, *, iters: int, rounds: int, warmup: int, stream,
                        on_round=None) -> dict[str, Timing]:
    """Time ``fn()`` of each workload (each enqueues work on ``stream``) per iteration, their
    rounds interleaved in the orders of :func:`round_orders` (for two: a, b, b, a, ...).

    The device time of a round is the time between CUDA events recorded before the first and
    after the last call, so it includes the gaps a launch-bound workload leaves on the GPU:
    exactly what graphs remove. Host time is the time to submit the calls; wall time includes
    the final synchronization.

    GPU clocks drift over seconds (measured one after the other in one process on an H200,
    two captures of the same 1,000-kernel step replayed in 842 and 1,019 µs), so workloads
    compared with each other are measured round by round in turn rather than one after the
    other: drift then hits each of them alike.
    ``on_round(done, total)`` is called after every round of every workload.
    """
    import cupy  # imported by the caller's require_cuda already

    for fn in fns.values():
        for _ in range(warmup):
            fn()
    stream.synchronize()
    start = cupy.cuda.Event()
    end = cupy.cuda.Event()
    figures = {name: ([], [], []) for name in fns}
    total, done = rounds * len(fns), 0
    names = list(fns)
    orders = round_orders(len(names))
    for r in range(rounds):
        # whatever follows what (a GPU-bound round leaves the host idle for the next one)
        # falls on each workload alike
        for index in orders[r % len(orders)]:
            name = names[index]
            fn = fns[name]
            gpu, host, wall = figures[name]
            start.record(stream)
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            t1 = time.perf_counter()
            end.record(stream)
            end.synchronize()
            t2 = time.perf_counter()
            gpu.append(cupy.cuda.get_elapsed_time(start, end) * 1e3 / iters)
            host.append((t1 - t0) * 1e6 / iters)
            wall.append((t2 - t0) * 1e6 / iters)
            done += 1
            if on_round is not None:
                on_round(done, total)
    return {
        name: Timing(Stat.of(gpu), Stat.of(host), Stat.of(wall), iters, rounds)
        for name, (gpu, host, wall) in figures.items()
    }
