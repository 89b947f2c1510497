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

    @property
    def spread(self) -> float:
        """(max - min) / median: the relative spread over rounds."""
        return (self.max - self.min) / self.median if self.median else 0.0

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

    def to_dict(self) -> dict:
        return {
            "gpu_us": self.gpu_us.to_dict(),
            "host_us": self.host_us.to_dict(),
            "wall_us": self.wall_us.to_dict(),
            "iters": self.iters,
            "rounds": self.rounds,
        }


def measure(fn, *, iters: int, rounds: int, warmup: int, stream, on_round=None) -> Timing:
    """Time ``fn()`` (which enqueues work on ``stream``) per iteration.

    The device time of a round is the time between CUDA events recorded before the first and
    after the last call, so it includes the gaps a launch-bound workload leaves on the GPU:
    exactly what graphs remove. Host time is the time to submit the calls; wall time includes
    the final synchronization.
    """
    import cupy  # imported by the caller's require_cuda already

    for _ in range(warmup):
        fn()
    stream.synchronize()
    start = cupy.cuda.Event()
    end = cupy.cuda.Event()
    gpu, host, wall = [], [], []
    for r in range(rounds):
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
        if on_round is not None:
            on_round(r + 1, rounds)
    return Timing(Stat.of(gpu), Stat.of(host), Stat.of(wall), iters, rounds)
