"""Record, on a GPU, the large CUDA graph dumps that `make bench` parses, shows and diffs.

    python bench/gen_big_dumps.py [OUTDIR]        # default bench/dumps; about a minute on an H200

Every file is CUDA's own cudaGraphDebugDotPrint output (through accelgraph's Graph, with the
same chain and fork/join recipes as tools/fixtures.py), gzipped:

* ``chain1k_verbose.dot.gz``, ``chain10k_verbose.dot.gz``, ``chain100k_verbose.dot.gz``:
  1,000 / 10,000 / 100,000 tiny kernels in one chain, verbose form (the 100,000 one is
  about 45 MB of DOT and compresses to about 2 MB: handles and ids are all that change);
* ``forkjoin50k_basic.dot.gz``: 5,556 fork/join layers of 3 branches on side streams joined
  back by events (50,004 kernels), basic form.

Sizes (DOT and gzipped) are printed per file; bench/dumps/MANIFEST.json records them with the
GPU, CUDA and CuPy versions.
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "bench" / "dumps"
sys.path.insert(0, str(ROOT))

from accelgraph_cli.cuda import device as _cuda  # noqa: E402 - after the sys.path line above
from accelgraph_cli.files import write_bytes_atomic  # noqa: E402
from tools.fixtures import chain, fork_join  # noqa: E402

#: (file stem, how to capture it, DOT flags, what it is)
DUMPS = [
    ("chain1k", lambda cupy: chain(cupy, 1_000), "verbose", "1,000-kernel chain"),
    ("chain10k", lambda cupy: chain(cupy, 10_000), "verbose", "10,000-kernel chain"),
    ("chain100k", lambda cupy: chain(cupy, 100_000), "verbose", "100,000-kernel chain"),
    ("forkjoin50k", lambda cupy: fork_join(cupy, 5_556, 3), "basic",
     "5,556 fork/join layers of 3 branches (50,004 kernels)"),
]


def record(out_dir: Path) -> dict:
    """Capture each graph, dump it, write it gzipped into ``out_dir``; returns the manifest."""
    cupy = _cuda.require_cuda()
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest: dict = {
        "_recorded": {
            "gpu": _cuda.device_name(),
            "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
            "cuda_driver": cupy.cuda.runtime.driverGetVersion(),
            "cupy": cupy.__version__,
            "date": time.strftime("%Y-%m-%d"),
        }
    }
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        for stem, capture, flags, what in DUMPS:
            start = time.perf_counter()
            graph = capture(cupy)
            text = graph.debug_dot(flags)
            graph.reset()
            data = text.encode()
            name = f"{stem}_{flags}.dot.gz"
            payload = gzip.compress(data, compresslevel=9, mtime=0)
            write_bytes_atomic(out_dir / name, payload)
            manifest[name] = {"what": what, "flags": flags, "bytes": len(data),
                              "gzipped_bytes": len(payload)}
            print(f"  {name:28s} {len(data):>12,d} bytes DOT  {len(payload):>11,d} bytes gzipped  "
                  f"({time.perf_counter() - start:.1f} s)  {what}", flush=True)
        stream.synchronize()
    (out_dir / "MANIFEST.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    """Record every dump into OUTDIR (default bench/dumps)."""
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else DEFAULT_OUT
    print(f"recording large dumps into {out}", flush=True)
    record(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
