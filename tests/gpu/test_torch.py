"""The PyTorch backend on the GPU: TorchGraph's API, torch scenarios captured, replayed and
checked through torch's own graph object, torch capture failures explained, memory per pool."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the torch backend needs torch")

from accelgraph_cli import CaptureError, GraphStateError, TorchGraph  # noqa: E402
from accelgraph_cli.cuda.live import model_from_graph  # noqa: E402
from accelgraph_cli.dot.parse import parse_dot  # noqa: E402
from accelgraph_cli.enums import Backend, PoolKind  # noqa: E402
from accelgraph_cli.run import protocol as runner  # noqa: E402
from accelgraph_cli.run import smoke  # noqa: E402
from accelgraph_cli.run.scenario import load_scenario, parse_params  # noqa: E402

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
TORCH_SCENARIOS = ["gpt_decode", "torch_buckets", "train_step"]


def _capture(path, *overrides, **options):
    scen = load_scenario(path)
    return runner.capture(scen, parse_params(scen.info.params, list(overrides)), **options)


def _warmed_side_stream():
    """A torch side stream and x = ones(1024) on the GPU, with x * 2 + 1's kernels warmed."""
    side = torch.cuda.Stream()
    x = torch.ones(1024, device="cuda")
    with torch.cuda.stream(side):
        (x * 2).add_(1)  # warm the kernels
    torch.cuda.synchronize()
    return side, x


def _write(tmp_path, name, body):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return path


@pytest.mark.parametrize("name", TORCH_SCENARIOS)
def test_torch_scenarios_capture_replay_and_check_bitwise(name, capsys):
    result = _capture(ROOT / "scenarios" / f"{name}.py")
    assert result.backend.name is Backend.TORCH
    assert all(g.node_count > 0 and type(g.graph) is TorchGraph for g in result.graphs)
    assert all(g.kinds.get("kernel", 0) > 0 for g in result.graphs)
    checked = runner.check(result)
    assert checked.ok, checked.problems()
    eager, graph, per_graph = runner.time_replay(result, iters=20, warmup=3, rounds=3)
    with capsys.disabled():
        print(f"\n{name}: {result.node_count} nodes in {len(result.graphs)} graph(s), eager "
              f"{eager.gpu_us.median:.1f} µs, graph {graph.gpu_us.median:.1f} µs, pool "
              f"{result.pool_bytes:,} B, guard {result.guard_summary()}")
    assert graph.gpu_us.median > 0 and len(per_graph) == len(result.graphs)


def test_gpt_decode_graph_holds_gemms_attention_and_layernorm():
    result = _capture(ROOT / "scenarios" / "gpt_decode.py", "layers=1", "seq=128")
    model = model_from_graph(result.graphs[0].graph.graph_handle)
    names = " ".join(n.name or "" for n in model.nodes).lower()
    assert "layer_norm" in names
    assert "flash" in names or "attention" in names or "fmha" in names, names[:500]
    text = result.graphs[0].graph.debug_dot("verbose")
    parsed = parse_dot(text)
    assert len(parsed.nodes) == result.graphs[0].node_count


def test_train_step_replays_train_the_model():
    result = _capture(ROOT / "scenarios" / "train_step.py")
    graph = result.graphs[0].graph
    weight = result.state["model"][2].weight
    losses = []
    for _ in range(20):
        graph.replay()
        losses.append(float(result.state["loss"]))
    assert losses[-1] < losses[0], losses
    before = weight.detach().clone()
    graph.replay()
    torch.cuda.synchronize()
    assert not torch.equal(before, weight)


def test_torch_buckets_shared_pool_holds_less_than_private(capsys):
    shared = _capture(ROOT / "scenarios" / "torch_buckets.py")
    private = _capture(ROOT / "scenarios" / "torch_buckets.py", pool="private")
    largest = max(g.pool_added for g in private.graphs)
    with capsys.disabled():
        print(f"\ntorch buckets: shared {shared.pool_bytes:,} B, private {private.pool_bytes:,} B,"
              f" largest graph {largest:,} B; per graph added (shared): "
              f"{[g.pool_added for g in shared.graphs]}")
    assert len(shared.graphs) == 9
    assert shared.pool_bytes < private.pool_bytes
    assert shared.graphs[0].pool_added > 0
    assert runner.check(shared).ok


def test_torch_graph_api_pools_keep_graph_reset_and_dump(tmp_path):
    stream = torch.cuda.Stream()
    x = torch.ones(1024, device="cuda")
    with torch.cuda.stream(stream):
        (x * 2).add_(1)  # warm the kernels
        torch.cuda.synchronize()
        g1 = TorchGraph(keep_graph=True, capture_error_mode="thread_local")
        # as Graph: no handle and no pool kind before a capture, and debug_dump says why not
        assert g1.graph_handle == 0 and g1.pool_kind is None
        with pytest.raises(GraphStateError, match="before any capture"):
            g1.debug_dump(tmp_path / "early.dot")
        with g1:
            y = x * 2 + 1
            with pytest.raises(GraphStateError, match="during capture"):
                g1.debug_dump(tmp_path / "during.dot")
            assert g1.pool_kind is PoolKind.PRIVATE and g1.graph_handle == 0
        assert g1.is_captured and not g1.is_instantiated
        assert g1.graph_handle != 0 and g1.pool_kind is PoolKind.PRIVATE
        assert not (tmp_path / "early.dot").exists() and not (tmp_path / "during.dot").exists()
        g1.replay()
        assert g1.is_instantiated
        g2 = TorchGraph(pool=g1.pool())
        g2.capture_begin()
        z = y * 3
        g2.capture_end()
        assert g2.pool() == g1.pool() and g2.is_instantiated
        x.fill_(2)
        g1.replay()
        g2.replay()
        torch.cuda.synchronize()
        assert float(z[0]) == 15.0
        path = g1.debug_dump(tmp_path / "g1.dot")
        assert "digraph" in Path(path).read_text()
        g1.reset()
        with pytest.raises(GraphStateError):
            g1.replay()
        with g1:
            w = x + 5
        g1.replay()
        torch.cuda.synchronize()
        assert float(w[0]) == 7.0
    with pytest.raises(CaptureError, match="legacy default stream"):
        TorchGraph().capture_begin()


def test_torch_graph_capture_ends_on_the_stream_it_began_on():
    # capture_end called after `with torch.cuda.stream(s):` has exited: torch refused to end
    # the capture on the now-current stream ("Capture must end on the same stream it began
    # on"), and the valid capture was discarded as a failed one.
    side, x = _warmed_side_stream()
    graph = TorchGraph()
    with torch.cuda.stream(side):
        graph.capture_begin()
        y = x * 2 + 1
    assert torch.cuda.current_stream() != side
    graph.capture_end()
    assert graph.is_captured and graph.is_instantiated and not graph.is_capturing
    assert torch.cuda.current_stream() != side  # left as the caller had it
    x.fill_(3)
    with torch.cuda.stream(side):
        graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, torch.full_like(y, 7.0))


def test_a_torch_capture_on_a_stream_that_captures_already_is_refused(cupy):
    # torch's capture_begin on a capturing stream raises half-way through registering its
    # RNG generators, and its graph object then aborts the process when destroyed. TorchGraph
    # refuses first: one CaptureError, and torch (randn, a new capture) works afterwards.
    runtime = cupy.cuda.runtime
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.randn(1024, device="cuda")  # warm: the generator, the kernels
        torch.cuda.synchronize()
        graph = TorchGraph()
        runtime.streamBeginCapture(side.cuda_stream)
        try:
            with pytest.raises(CaptureError, match="current stream is capturing already"):
                graph.capture_begin()
        finally:
            ended = runtime.streamEndCapture(side.cuda_stream)
            if ended:
                runtime.graphDestroy(ended)
        assert not graph.is_capturing and not graph.is_captured
        a = torch.randn(1024, device="cuda")
        with graph:
            b = torch.randn(1024, device="cuda") + a
        graph.replay()
        first = b.clone()
        graph.replay()
        torch.cuda.synchronize()
    assert not torch.equal(first, b)  # philox offsets advance per replay
    del graph  # destroyed here, in the test: no abort


@pytest.mark.parametrize("line, cause, words", [
    ("v = state['x'].sum().item()", "item()", "reads a tensor's value on the host"),
    ("v = state['x'].cpu()", "cpu()", "reads a tensor's value on the host"),
    ("print(state['x'])", "print(", "reads a tensor's value on the host"),
    ("torch.cuda.synchronize()", "synchronize(", "waits for the GPU"),
    ("v = torch.nonzero(state['x'])", "nonzero", "size depends on the data"),
    ("v = state['x'][state['x'] > 3]", "[state['x'] > 3]", "size depends on the data"),
    ("v = torch.ones(16).to('cuda')", "pageable", "pageable host memory"),
])
def test_torch_capture_failures_name_the_call_and_line_and_recover(tmp_path, line, cause, words):
    path = _write(tmp_path, "bad_torch", f'''
        """A torch step with an illegal call under capture."""
        import torch
        def setup():
            return {{"x": torch.arange(16, dtype=torch.float32, device="cuda")}}
        def step(state):
            y = state["x"] * 2
            {line}
    ''')
    with pytest.raises(CaptureError) as info:
        _capture(path)
    message = str(info.value)
    assert "bad_torch.py:8" in message, message
    assert words in message, message
    assert "\n" not in message
    # the process still captures, replays and checks a torch scenario
    good = _capture(ROOT / "scenarios" / "gpt_decode.py", "layers=1", "seq=64")
    assert runner.check(good).ok


def test_broken_torch_scenario_is_an_error_in_smoke_and_the_cli():
    path = ROOT / "tests" / "broken_capture" / "torch_item.py"
    row = smoke.run_one(path, iters=2, rounds=1)
    assert row.status == "error" and "torch_item.py:" in row.message, row
    assert ".item()" in row.message
    proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", "replay", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", "capture", "gpt_decode",
                           "--param", "layers=1", "--json"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert '"backend": "torch"' in proc.stdout


def test_dropout_under_capture_draws_new_numbers_each_replay(tmp_path):
    path = _write(tmp_path, "dropout", '''
        """Dropout inside the captured step: torch's philox offsets advance per replay."""
        import torch
        from torch.nn import functional as F
        EXPECT_EMPTY = False
        def setup():
            torch.manual_seed(3)
            return {"x": torch.ones(4096, device="cuda")}
        def step(state):
            state["y"] = F.dropout(state["x"], p=0.5, training=True)
    ''')
    result = _capture(path)
    graph = result.graphs[0].graph
    graph.replay()
    first = result.state["y"].clone()
    graph.replay()
    second = result.state["y"].clone()
    torch.cuda.synchronize()
    assert 0 < int((first == 0).sum()) < 4096
    assert not torch.equal(first, second)


def test_a_registered_generator_draws_in_replays_what_it_draws_eagerly():
    # torch 2.11 refuses a generator of one's own inside a capture ("Attempt to increase
    # offset for a CUDA generator not in capture mode") unless it is registered with the graph
    side = torch.cuda.Stream()
    gen = torch.Generator(device="cuda")
    gen.manual_seed(7)
    out = torch.empty(4096, device="cuda")
    with torch.cuda.stream(side):
        out.copy_(torch.rand(4096, device="cuda", generator=gen))  # warm the kernels
    torch.cuda.synchronize()
    graph = TorchGraph()
    graph.register_generator(gen)
    with torch.cuda.stream(side):
        graph.capture_begin()
        with pytest.raises(GraphStateError, match="before capture_begin"):
            graph.register_generator(gen)
        out.copy_(torch.rand(4096, device="cuda", generator=gen))
        graph.capture_end()
    start = gen.get_state()
    with torch.cuda.stream(side):
        eager = [torch.rand(4096, device="cuda", generator=gen) for _ in range(2)]
        gen.set_state(start)
        replays = []
        for _ in range(2):
            graph.replay()
            replays.append(out.clone())
    torch.cuda.synchronize()
    assert not torch.equal(replays[0], replays[1])  # the offset advances per replay
    assert all(torch.equal(a, b) for a, b in zip(eager, replays))
    graph.reset()  # the registration holds for the next capture of this object
    with torch.cuda.stream(side):
        graph.capture_begin()
        out.copy_(torch.rand(4096, device="cuda", generator=gen))
        graph.capture_end()


def test_a_reset_graph_captures_again_into_a_pool_of_its_own_and_a_released_pool_is_named():
    # torch releases a pool once no graph uses it; capturing into it again while a tensor a
    # capture allocated still holds its memory trips an internal assert in torch's allocator
    side, x = _warmed_side_stream()
    graph = TorchGraph()
    with torch.cuda.stream(side):
        with graph:
            y = x * 2 + 1  # allocated in the graph's pool, kept alive here
        graph.reset()
        assert graph.graph_pool is None  # its own token, never handed out: dropped
        with graph:
            z = x * 3
        graph.replay()
        token = graph.graph_pool  # read: handed out, kept across reset (as pool() gives it)
        graph.reset()
        assert graph.graph_pool == token
        with pytest.raises(CaptureError, match="every graph that used it was reset"):
            graph.capture_begin()
        assert not graph.is_capturing
        graph.graph_pool = torch.cuda.graph_pool_handle()
        with graph:
            w = x + 5
        graph.replay()
    torch.cuda.synchronize()
    assert y.numel() == 1024  # (kept alive: its memory holds the first pool; never replayed)
    assert float(z[0]) == 3.0 and float(w[0]) == 6.0


@pytest.mark.parametrize("how", ["dropped", "collected", "reset"])
@pytest.mark.parametrize("keep_graph", [False, True])
def test_a_torch_graph_dropped_during_another_global_capture_is_destroyed_quietly(
        monkeypatch, capfd, keep_graph, how):
    # As for Graph (test_graph.py): torch destroys a graph's executable and graph as its
    # graph object dies or is reset; during another graph's global-mode capture those calls
    # are made in relaxed mode, and no collection runs by itself while a TorchGraph captures.
    import gc
    import warnings

    side, x = _warmed_side_stream()
    ignored = []
    monkeypatch.setattr(sys, "unraisablehook", ignored.append)
    with torch.cuda.stream(side):
        old = TorchGraph(keep_graph=keep_graph)
        with old:
            _ = x * 2
        old.replay()
        if how == "collected":
            old.cycle = old  # only the collector can free it now
        gc.collect()
        new = TorchGraph(capture_error_mode="global")
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            new.capture_begin()
            y = x + 3
            if how == "reset":
                old.reset()
            else:
                del old
                assert not gc.isenabled()  # no collection runs by itself while capturing
                gc.collect()  # (asked for: it runs, and may find the graph)
            new.capture_end()
        new.replay()
        torch.cuda.synchronize()
    assert gc.isenabled()
    assert [(hook.exc_type, str(hook.exc_value)) for hook in ignored] == []
    # torch's destructor warns of a refused destroy on stderr, its reset() as a warning
    assert [str(w.message) for w in warned] == []
    assert "Warning" not in capfd.readouterr().err
    assert float(y[0]) == 4.0 and float(y[-1]) == 4.0


def test_a_torch_graph_dropped_while_it_captures_ends_its_capture():
    # Dropped mid-capture, a TorchGraph left its stream capturing (every later call on it
    # failed) and, with the collector's pause, the collector off. Its capture is discarded
    # as it dies now: the stream works, and the collector is back on.
    import gc

    side, x = _warmed_side_stream()
    with torch.cuda.stream(side):
        graph = TorchGraph()
        graph.capture_begin()
        _ = x * 2
        del graph
        assert not torch.cuda.is_current_stream_capturing() and gc.isenabled()
        y = x + 1
        again = TorchGraph()
        with again:
            z = x * 5
        again.replay()
        torch.cuda.synchronize()
    assert float(y[0]) == 2.0 and float(z[0]) == 5.0
