"""`make fixtures`: record, on a GPU, the DOT dumps the CPU tests and benchmarks read.

Run as ``python -m tools.fixtures DIR`` from the repository root (``make fixtures`` passes tests/data). Every
file written here comes from CUDA itself (cudaGraphDebugDotPrint through accelgraph's Graph,
or PyTorch's debug_dump), so the CPU tier exercises real CUDA output. Files over 1 MB are
gzipped. A manifest (``dumps/MANIFEST.json``) records what each file holds as measured here:
node counts per kind, edges, the GPU, CUDA and CuPy versions.
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from pathlib import Path

from accelgraph_cli.cuda import device as _cuda
from accelgraph_cli.cuda.graph import Graph
from accelgraph_cli.cuda.nodes import graph_nodes, node_kinds
from accelgraph_cli.cuda.pools import graph_pool_handle
from accelgraph_cli.files import write_bytes_atomic

BIG = 1_000_000  # bytes above which a dump is stored gzipped


def _warm(cupy, *arrays):
    for a in arrays:
        a += 0
        a *= 1
    cupy.cuda.get_current_stream().synchronize()


def chain(cupy, n: int) -> Graph:
    """n tiny in-place kernels: the launch-bound case graphs exist for."""
    x = cupy.ones(1024, dtype=cupy.float32)
    _warm(cupy, x)
    g = Graph(keep_graph=True)
    with g:
        for i in range(n):
            if i % 2:
                x *= 1.0001
            else:
                x += 0.5
    g._keep = x
    return g


def fork_join(cupy, layers: int = 1, branches: int = 3) -> Graph:
    """Fork/join across side streams with events: parallel branches joined back, per layer."""
    origin = cupy.cuda.get_current_stream()
    sides = [cupy.cuda.Stream(non_blocking=True) for _ in range(branches)]
    bufs = [cupy.ones(4096, dtype=cupy.float32) for _ in range(branches)]
    acc = cupy.zeros(4096, dtype=cupy.float32)
    _warm(cupy, acc, *bufs)
    for b in bufs:
        with sides[0]:
            b *= 1.0
            cupy.sqrt(b, out=b)
    sides[0].synchronize()
    g = Graph(keep_graph=True)
    with g:
        for _ in range(layers):
            fork = origin.record()
            joins = []
            for side, buf in zip(sides, bufs):
                side.wait_event(fork)
                with side:
                    buf *= 1.5
                    cupy.sqrt(buf, out=buf)
                joins.append(side.record())
            for e in joins:
                origin.wait_event(e)
            for buf in bufs:
                acc += buf
    g._keep = (sides, bufs, acc)
    return g


def memory_ops(cupy) -> Graph:
    """memset, device-to-device copy, host-to-device copy from pinned memory, a host node."""
    import numpy as np

    runtime = cupy.cuda.runtime
    n = 1 << 16
    src = cupy.arange(n, dtype=cupy.float32)
    dst = cupy.empty(n, dtype=cupy.float32)
    staging = cupy.empty(n, dtype=cupy.float32)
    pinned = cupy.cuda.alloc_pinned_memory(n * 4)
    host = np.frombuffer(pinned, dtype=np.float32, count=n)
    host[:] = np.arange(n, dtype=np.float32)
    _warm(cupy, dst)
    calls = []
    from accelgraph_cli.cuda.host_function import HostFunction

    host_fn = HostFunction(lambda: calls.append(1))  # replay-safe, unlike launch_host_func
    g = Graph(keep_graph=True)
    with g:
        stream = cupy.cuda.get_current_stream()
        runtime.memsetAsync(dst.data.ptr, 0, n * 4, stream.ptr)
        runtime.memcpyAsync(dst.data.ptr, src.data.ptr, n * 4, runtime.memcpyDeviceToDevice,
                            stream.ptr)
        runtime.memcpyAsync(staging.data.ptr, pinned.ptr, n * 4, runtime.memcpyHostToDevice,
                            stream.ptr)
        host_fn.launch(stream)
        dst += staging
    g._keep = (src, dst, staging, pinned, calls, host_fn)
    return g


def stream_ordered_alloc(cupy) -> Graph:
    """Temporaries allocated and freed inside the graph: MEM_ALLOC / MEM_FREE nodes."""
    a = cupy.arange(1 << 20, dtype=cupy.float32)
    out = cupy.zeros(1 << 20, dtype=cupy.float32)
    _warm(cupy, out)
    g = Graph(keep_graph=True, pool=graph_pool_handle("async"))
    with g:
        t1 = a * 2
        t2 = t1 + a
        del t1
        out[...] = t2
        del t2
    g._keep = (a, out)
    return g


def kinds(cupy) -> Graph:
    """Node kinds stream capture alone does not make: external event record/wait, an empty
    node and a child graph node, added with the CUDA graph API to a kept captured graph."""
    runtime, _ = _cuda.bindings()
    x = cupy.ones(256, dtype=cupy.float32)
    _warm(cupy, x)
    child = Graph(keep_graph=True)
    with child:
        x *= 2
        x += 1
    event = _cuda.check("cudaEventCreate", runtime.cudaEventCreate())
    g = Graph(keep_graph=True)
    with g:
        stream = cupy.cuda.get_current_stream()
        x += 1
        _cuda.check("cudaEventRecordWithFlags", runtime.cudaEventRecordWithFlags(
            event, stream.ptr, getattr(runtime, "cudaEventRecordExternal", 1)))
        _cuda.check("cudaStreamWaitEvent", runtime.cudaStreamWaitEvent(
            stream.ptr, event, getattr(runtime, "cudaEventWaitExternal", 1)))
        x *= 3
    graph = g.graph_handle
    last = graph_nodes(graph)[-1]
    empty = _cuda.check("cudaGraphAddEmptyNode", runtime.cudaGraphAddEmptyNode(graph, [last], 1))
    _cuda.check("cudaGraphAddChildGraphNode",
                runtime.cudaGraphAddChildGraphNode(graph, [empty], 1, child.graph_handle))
    g._keep = (x, child, event)
    return g


def conditional(cupy, kind: str = "If", bodies: int = 1) -> Graph:
    """A conditional node (IF, CUDA 12.4+; IF with an else body, or SWITCH, CUDA 12.8+) after
    a captured kernel, each of its ``bodies`` holding a memset (body i sets the value i),
    added with cudaGraphAddNode to a kept captured graph. Recorded for the dump only: the
    graph is never launched, so no kernel sets the condition."""
    runtime, _ = _cuda.bindings()
    x = cupy.ones(256, dtype=cupy.float32)
    _warm(cupy, x)
    g = Graph(keep_graph=True)
    with g:
        x += 1
    graph = g.graph_handle
    last = graph_nodes(graph)[-1]
    handle = _cuda.check("cudaGraphConditionalHandleCreate",
                         runtime.cudaGraphConditionalHandleCreate(graph, 1, 1))  # AssignDefault
    params = runtime.cudaGraphNodeParams()
    params.type = runtime.cudaGraphNodeType.cudaGraphNodeTypeConditional
    params.conditional.handle = handle
    params.conditional.type = getattr(runtime.cudaGraphConditionalNodeType,
                                      f"cudaGraphCondType{kind}")
    params.conditional.size = bodies
    try:  # CUDA 13 bindings take edge data; CUDA 12's do not
        result = runtime.cudaGraphAddNode(graph, [last], None, 1, params)
    except TypeError:
        result = runtime.cudaGraphAddNode(graph, [last], 1, params)
    _cuda.check("cudaGraphAddNode", result)
    for index in range(bodies):
        body = params.conditional.phGraph_out[index]
        memset = runtime.cudaMemsetParams()
        memset.dst = x.data.ptr
        memset.value = index
        memset.elementSize = 4
        memset.width = x.size
        memset.height = 1
        memset.pitch = 0
        _cuda.check("cudaGraphAddMemsetNode",
                    runtime.cudaGraphAddMemsetNode(body, None, 0, memset))
    g._keep = (x,)
    return g


def torch_mlp(path: Path) -> bool:
    """PyTorch's own debug_dump of a small MLP captured with torch.cuda.CUDAGraph."""
    try:
        import torch
    except Exception:
        return False
    if not torch.cuda.is_available():
        return False
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 32), torch.nn.Softmax(-1)
    ).cuda()
    x = torch.randn(8, 64, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(side)
    try:  # torch >= 2.10 drops the cudaGraph_t at capture end unless asked to keep it
        graph = torch.cuda.CUDAGraph(keep_graph=True)
    except TypeError:
        graph = torch.cuda.CUDAGraph()
    graph.enable_debug_mode()
    with torch.cuda.graph(graph):
        model(x)
    graph.debug_dump(str(path))
    return path.exists()


def _write(dump_dir: Path, name: str, text: str, manifest: dict, info: dict) -> None:
    data = text.encode()
    if len(data) > BIG:
        name += ".gz"
        payload = gzip.compress(data, mtime=0)
    else:
        payload = data
    write_bytes_atomic(dump_dir / name, payload)
    manifest[name] = {**info, "bytes": len(data)}
    print(f"  {name:34s} {len(data):>10,d} bytes  {info.get('what', '')}", flush=True)


def record(out_dir: str) -> dict:
    """Record every fixture into ``out_dir/dumps``; returns the manifest."""
    cupy = _cuda.require_cuda()
    dump_dir = Path(out_dir) / "dumps"
    dump_dir.mkdir(parents=True, exist_ok=True)
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
        recipes = [
            ("chain", lambda: chain(cupy, 6), "6-kernel chain (add/multiply alternating)"),
            ("chain1k", lambda: chain(cupy, 1000), "1,000-kernel chain"),
            ("chain10k", lambda: chain(cupy, 10_000), "10,000-kernel chain"),
            ("forkjoin", lambda: fork_join(cupy, 1, 3), "fork/join: 3 side streams, events"),
            ("forkjoin_wide", lambda: fork_join(cupy, 2500, 3),
             "2,500 fork/join layers of 3 branches (10,000 nodes)"),
            ("memops", lambda: memory_ops(cupy), "memset, D2D, H2D (pinned), host node, kernel"),
            ("asyncalloc", lambda: stream_ordered_alloc(cupy), "MEM_ALLOC / MEM_FREE nodes"),
            ("kinds", lambda: kinds(cupy), "event record/wait, empty, child graph nodes"),
            ("conditional", lambda: conditional(cupy), "conditional IF node, memset in its body"),
            ("conditional_ifelse", lambda: conditional(cupy, "If", 2),
             "conditional IF node with an else body, a memset in each"),
            ("conditional_switch", lambda: conditional(cupy, "Switch", 3),
             "conditional SWITCH node of 3 bodies, a memset in each"),
        ]
        # conditional nodes need CUDA 12.4+ (an else body or SWITCH 12.8+) and its bindings:
        # skipped, said, if not
        optional = {"conditional", "conditional_ifelse", "conditional_switch"}
        for name, make, what in recipes:
            try:
                graph = make()
            except Exception as exc:
                if name not in optional:
                    raise
                print(f"  {name}: not recorded ({type(exc).__name__}: {exc})", flush=True)
                continue
            # What CUDA itself says the graph holds (top level), for the parser tests.
            kinds_here = node_kinds(graph.graph_handle)
            for flags in ("basic", "verbose"):
                text = graph.debug_dot(flags)
                _write(dump_dir, f"{name}_{flags}.dot", text, manifest,
                       {"what": what, "flags": flags, "kinds": kinds_here})
            graph.reset()
        stream.synchronize()
    torch_path = dump_dir / "torch_mlp.dot"
    if torch_mlp(torch_path):
        manifest["torch_mlp.dot"] = {
            "what": "PyTorch CUDAGraph.debug_dump of Linear-GELU-Linear-Softmax, batch 8",
            "flags": "torch default (verbose)", "bytes": torch_path.stat().st_size,
        }
        print(f"  torch_mlp.dot {torch_path.stat().st_size:,d} bytes", flush=True)
    record_scenarios(Path(out_dir), manifest)
    (dump_dir / "MANIFEST.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


#: Scenario captures recorded besides the defaults: (scenario stem, --param overrides, tag).
SCENARIO_VARIANTS = [
    ("mlp_decode", ["batch=16"], "batch16"),
    ("elementwise_chain", ["n=1200"], "n1200"),
]


def record_scenarios(out_dir: Path, manifest: dict) -> None:
    """Capture every bundled scenario with its defaults (and a few variants) and dump each graph
    (basic and verbose); a short check and replay timing are printed as a sanity check."""
    from accelgraph_cli.run import protocol as runner
    from accelgraph_cli.run.scenario import load_scenario, parse_params

    root = Path(__file__).resolve().parent.parent / "scenarios"
    dump_dir = out_dir / "dumps"
    jobs = [(p.stem, [], "") for p in sorted(root.glob("*.py"))] + SCENARIO_VARIANTS
    for stem, overrides, tag in jobs:
        label = stem + (f"_{tag}" if tag else "")
        try:
            scen = load_scenario(root / f"{stem}.py")
            params = parse_params(scen.info.params, overrides)
            result = runner.capture(scen, params)
            for captured in result.graphs:
                graph_tag = "" if captured.name == "step" else "_" + captured.name.replace("=", "")
                for flags in ("basic", "verbose"):
                    text = captured.graph.debug_dot(flags)
                    _write(dump_dir, f"scenario_{label}{graph_tag}_{flags}.dot", text, manifest,
                           {"what": f"scenarios/{stem}.py {' '.join(overrides)}".strip(),
                            "graph": captured.name, "flags": flags,
                            "kinds": captured.kinds})
            checked = runner.check(result) if scen.info.has_outputs else None
            eager, graph, _ = runner.time_replay(result, iters=50, warmup=5, rounds=3)
            report = runner.ReplayReport(eager, graph, checked, result).to_dict()
            print(f"  {label}: speedup {report['speedup']:.2f}x "
                  f"check {'ok' if checked is None or checked.ok else 'FAILED'}", flush=True)
        except Exception as exc:  # one broken scenario must not stop the others
            print(f"  {label}: FAILED {type(exc).__name__}: {exc}", flush=True)
            manifest.setdefault("_failed", {})[label] = f"{type(exc).__name__}: {exc}"


#: Scenarios whose per-node profiles are recorded (`accelgraph profile`), with their replays.
PROFILED = [("mlp_decode", 50), ("fork_join", 50), ("memory_ops", 50), ("gpt_decode", 20),
            ("train_step", 10)]


def record_profiles(out_dir: Path) -> None:
    """Record raw per-node profiles (CUPTI) of a few bundled scenarios into
    ``out_dir/profiles``: what the CPU tier's profile tests read."""
    from accelgraph_cli.run.profile import record_profile

    root = Path(__file__).resolve().parent.parent / "scenarios"
    _record_documents(out_dir / "profiles", "profile",
                      [(root / f"{stem}.py", lambda scen, params, n=iters: record_profile(
                          scen, params, iters=n)) for stem, iters in PROFILED])


def _record_documents(folder: Path, what: str, jobs: list) -> None:
    """Each (scenario path, record(scenario, params) -> document) job's document, saved as
    ``folder/<stem>.json`` with the GPU and date it was recorded on."""
    from accelgraph_cli.run.scenario import load_scenario

    folder.mkdir(parents=True, exist_ok=True)
    for path, record_one in jobs:
        scen = load_scenario(path)
        try:
            document = record_one(scen, dict(scen.info.params))
        except Exception as exc:  # torch missing: said, and the others still recorded
            print(f"  {what} {path.stem}: not recorded ({type(exc).__name__}: {exc})",
                  flush=True)
            continue
        document["recorded"] = {"gpu": _cuda.device_name(), "date": time.strftime("%Y-%m-%d")}
        text = json.dumps(document, indent=None, separators=(",", ":")) + "\n"
        write_bytes_atomic(folder / f"{path.stem}.json", text.encode())
        print(f"  {folder.name}/{path.stem}.json {len(text):,d} bytes", flush=True)


#: What `accelgraph audit` is recorded on: bundled scenarios (nothing frozen) and the examples
#: of each kind of frozen argument (tests/frozen_values).
AUDITED = ("scenarios/mlp_decode.py", "scenarios/buckets.py", "scenarios/gpt_decode.py",
           "tests/frozen_values/host_counter.py", "tests/frozen_values/swapped_buffers.py",
           "tests/frozen_values/decode_position.py", "tests/frozen_values/growing_slice.py",
           "tests/frozen_values/scheduled_lr.py", "tests/frozen_values/functor_alpha.py",
           "tests/frozen_values/decode_after_prefill.py", "tests/frozen_values/seen_later.py",
           "tests/frozen_values/every_other_step.py")
#: Audits recorded with more steps than two (``audit --steps``): what the value needs to show.
AUDIT_STEPS = {"every_other_step": 3}


def record_audits(out_dir: Path) -> None:
    """Record raw audits of captured kernel arguments into ``out_dir/audits``: what the CPU
    tier's audit tests read."""
    from accelgraph_cli.run.audit import record_audit

    root = Path(__file__).resolve().parent.parent
    _record_documents(out_dir / "audits", "audit",
                      [(root / relative, lambda scen, params, n=AUDIT_STEPS.get(
                          Path(relative).stem, 2): record_audit(scen, params, steps=n))
                       for relative in AUDITED])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = argv[0] if argv else "tests/data"
    from accelgraph_cli.errors import NoGPUError

    try:
        _cuda.require_cuda()
    except NoGPUError as exc:
        # One line, no traceback: the committed fixtures stay as they are.
        print(f"make fixtures: nothing recorded, {out}/dumps left as it is: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    only = {"profiles": record_profiles, "audits": record_audits}
    if argv[1:] and argv[1] in only:  # one kind alone (`make fixtures` records everything)
        only[argv[1]](Path(out))
        return 0
    print(f"recording fixtures into {out}/dumps", flush=True)
    record(out)
    record_profiles(Path(out))
    record_audits(Path(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
