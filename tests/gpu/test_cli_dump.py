"""`accelgraph dump` on the GPU: gzipped DOT and JSON, one file per graph, read back by show."""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

from accelgraph_cli.dot.load import load_model

ROOT = Path(__file__).resolve().parents[2]


def _accelgraph(tmp_path, *args):
    # this checkout's code, whatever else an installed accelgraph points at
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", *map(str, args)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=180, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_dump_writes_gzipped_dot_that_show_reads(tmp_path):
    plain, packed = tmp_path / "g.dot", tmp_path / "g.dot.gz"
    assert _accelgraph(tmp_path, "dump", "saxpy", "-o", plain, "--no-render").returncode == 0
    assert _accelgraph(tmp_path, "dump", "saxpy", "-o", packed, "--no-render").returncode == 0
    raw = packed.read_bytes()
    assert raw[:2] == b"\x1f\x8b"  # gzip, not DOT text under a .gz name
    text = gzip.decompress(raw).decode()
    assert text.startswith("digraph")
    # the same graph (addresses differ between captures; the structure does not)
    a, b = load_model(plain), load_model(packed)
    assert [n.kind for n in a.nodes] == [n.kind for n in b.nodes] and len(a.edges) == len(b.edges)
    shown = _accelgraph(tmp_path, "show", packed, "--json")
    assert shown.returncode == 0 and len(json.loads(shown.stdout)["nodes"]) == len(b.nodes)


def test_dump_of_several_graphs_gzipped_json_names_each_file(tmp_path):
    proc = _accelgraph(tmp_path, "dump", "buckets", "-o", tmp_path / "b.json.gz", "-f", "json",
                       "--no-render")
    assert proc.returncode == 0, proc.stderr
    written = sorted(p.name for p in tmp_path.glob("b_*.json.gz"))
    assert written == sorted(f"b_batch{n}.json.gz" for n in (64, 32, 16, 8, 1)), written
    for path in tmp_path.glob("b_*.json.gz"):
        model = json.loads(gzip.decompress(path.read_bytes()))
        assert model["nodes"] and load_model(path).nodes


def test_capture_with_an_async_pool_ends_quietly(tmp_path):
    # buckets keeps each graph's output: a graph allocation (MEM_ALLOC, no MEM_FREE) of a graph
    # `capture` never launches; freeing it at exit used to print CuPy's ignored
    # cudaErrorInvalidValue tracebacks, one per output
    proc = _accelgraph(tmp_path, "capture", "buckets", "--pool", "async")
    assert proc.returncode == 0, proc.stderr
    assert "Exception ignored" not in proc.stderr and "cudaError" not in proc.stderr, proc.stderr
