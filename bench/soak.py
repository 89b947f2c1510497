"""Soak: a million replays of a small graph, device and host memory measured before and after.

    python bench/soak.py [--replays 1000000] [--json PATH]

Memory must stay flat: replay allocates nothing. Device memory from cudaMemGetInfo (the whole
device's used bytes), host memory as this process's resident set (ru_maxrss is a peak, so
/proc/self/statm is read where it exists).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accelgraph_cli import Graph  # noqa: E402
from accelgraph_cli.cuda.device import require_cuda  # noqa: E402


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replays", type=int, default=1_000_000)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    cupy = require_cuda()
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        x = cupy.zeros(1024, dtype=cupy.float32)
        x += 1
        x *= 1
        g = Graph()
        with g:
            x += 1
            x *= 0.5
        for _ in range(1000):
            g.replay()
        stream.synchronize()
        free0, total = cupy.cuda.runtime.memGetInfo()
        rss0 = rss_bytes()
        t0 = time.perf_counter()
        done = 0
        try:
            for i in range(args.replays):
                g.replay()
                if i % 100_000 == 99_999:
                    stream.synchronize()
                done = i + 1
        except KeyboardInterrupt:
            print(f"interrupted after {done:,} replays")
        stream.synchronize()
        seconds = time.perf_counter() - t0
        free1, _ = cupy.cuda.runtime.memGetInfo()
        rss1 = rss_bytes()
    report = {
        "replays": done, "seconds": seconds, "us_per_replay": seconds * 1e6 / max(done, 1),
        "device_used_before": total - free0, "device_used_after": total - free1,
        "device_delta": (total - free1) - (total - free0),
        "host_rss_before": rss0, "host_rss_after": rss1, "host_delta": rss1 - rss0,
        "value_ok": bool(float(x[0]) < 2.0),  # x -> (x + 1) / 2 converges to 1
    }
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
