"""Graph API on the CPU: argument validation, mode mapping, states that need no GPU."""

import types
import weakref

import pytest

from accelgraph_cli import (
    CAPTURE_ERROR_MODES,
    CaptureError,
    CaptureErrorMode,
    Graph,
    GraphStateError,
    graph_pool_handle,
)
from accelgraph_cli.cuda.graph import capture_mode_value, debug_dot_flags
from accelgraph_cli.cuda.pools import get_pool


def test_mode_mapping_matches_cuda_enums():
    # cudaStreamCaptureModeGlobal=0, ThreadLocal=1, Relaxed=2; "default" is global, as PyTorch.
    assert CAPTURE_ERROR_MODES == {"default": 0, "global": 0, "thread_local": 1, "relaxed": 2}
    assert [capture_mode_value(m) for m in ("default", "global", "thread_local", "relaxed")] == [
        0, 0, 1, 2,
    ]


@pytest.mark.parametrize("bad", ["strict", "GLOBAL", "", None, 0, "threadlocal"])
def test_bad_capture_error_mode_is_a_valueerror_naming_the_four(bad):
    with pytest.raises(ValueError) as info:
        Graph(capture_error_mode=bad)
    for mode in ("default", "global", "thread_local", "relaxed"):
        assert f"'{mode}'" in str(info.value)


def test_capture_error_mode_attribute_is_validated_on_set():
    g = Graph()
    g.capture_error_mode = "relaxed"
    assert g.capture_error_mode == "relaxed"
    with pytest.raises(ValueError):
        g.capture_error_mode = "nope"
    assert g.capture_error_mode == "relaxed"


def test_defaults_follow_the_reference():
    g = Graph()
    assert g.keep_graph is False
    assert g.capture_error_mode == "default"
    assert g.graph_pool is None
    assert not g.is_capturing and not g.is_captured and not g.is_instantiated
    assert Graph(True).keep_graph is True


def test_pool_tokens_are_int_pairs_and_shared_by_value():
    g1 = Graph()
    token = g1.pool()
    assert isinstance(token, tuple) and len(token) == 2 and all(isinstance(v, int) for v in token)
    assert g1.pool() == token  # stable
    g2 = Graph(pool=token)
    assert g2.pool() == token
    assert Graph().pool() != token
    assert get_pool(graph_pool_handle("async")).kind == "async"


@pytest.mark.parametrize("bad", [(1, 2, 3), [0, 1], "pool", (0, "1"), (True, 1)])
def test_malformed_pool_tokens_are_refused(bad):
    with pytest.raises(ValueError, match="tuple\\[int, int\\]"):
        Graph(pool=bad)


def test_unknown_pool_token_is_refused():
    with pytest.raises(ValueError, match="names no pool"):
        Graph(pool=(graph_pool_handle()[0], 10**9))


def test_unknown_pool_kind_is_refused():
    for kind in ("managed", "shared"):
        with pytest.raises(ValueError, match="'private' or 'async'"):
            graph_pool_handle(kind)


def test_replay_before_capture_is_a_clear_error_without_touching_cuda():
    with pytest.raises(GraphStateError, match="before any capture"):
        Graph().replay()


def test_capture_end_without_begin_is_a_clear_error():
    with pytest.raises(GraphStateError, match="without capture_begin"):
        Graph().capture_end()


def test_instantiate_and_debug_dump_before_capture_are_clear_errors(tmp_path):
    with pytest.raises(GraphStateError, match="capture a graph first"):
        Graph(keep_graph=True).instantiate()
    with pytest.raises(GraphStateError, match="before any capture"):
        Graph().debug_dump(tmp_path / "x.dot")
    assert list(tmp_path.iterdir()) == []


def test_reset_on_an_empty_graph_is_harmless_and_settings_can_change():
    g = Graph()
    g.reset()
    g.capture_error_mode = "thread_local"
    token = graph_pool_handle()
    g.graph_pool = token
    assert g.pool() == token


def test_debug_dot_flags_by_name_and_number():
    assert debug_dot_flags("verbose") == 1
    assert debug_dot_flags("basic") == 0
    assert debug_dot_flags("kernel_params|handles") == (1 << 2) | (1 << 10)
    assert debug_dot_flags(5) == 5
    with pytest.raises(ValueError, match="unknown DOT flag"):
        debug_dot_flags("everything")
    # named as given, not as read ("-1" was echoed as "_1")
    with pytest.raises(ValueError, match="unknown DOT flag '-1'"):
        debug_dot_flags("verbose|-1")
    with pytest.raises(ValueError):
        debug_dot_flags(-1)


@pytest.fixture
def stub_cuda(monkeypatch):
    """CUDA stubbed for the capture path: stand-ins that record. Returns (the thread's
    allocator, as a one-item list; the pools held, in order)."""
    import types

    from accelgraph_cli.cuda import graph as graph_mod
    from accelgraph_cli.cuda import pools

    held = []
    capturing = set()  # the streams CUDA would say are capturing (streamIsCapturing)
    stream = types.SimpleNamespace(ptr=5, begin_capture=lambda mode: capturing.add(5))
    allocator = [None]
    memory = types.SimpleNamespace()

    class MemoryPool:
        def __init__(self, malloc):
            self.malloc = lambda size: None

        def free_all_blocks(self):
            pass

        def total_bytes(self):
            return 0

        def used_bytes(self):
            return self.total_bytes()  # what a stand-in holds is in use, unless a test says

    class MemoryAsyncPool(MemoryPool):
        def __init__(self):
            # CuPy's: a MemoryPointer at offset 0 of a MemoryAsync (ptr, size, device_id)
            self.malloc = lambda size: types.SimpleNamespace(
                mem=types.SimpleNamespace(ptr=0x7F00 + size, size=size, device_id=0))

    cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(
        get_current_stream=lambda: stream, memory=memory, MemoryPool=MemoryPool,
        MemoryAsyncPool=MemoryAsyncPool,
        UnownedMemory=lambda ptr, size, owner, device: types.SimpleNamespace(
            ptr=ptr, size=size, _owner=owner),
        MemoryPointer=lambda mem, offset: types.SimpleNamespace(mem=mem),
        runtime=types.SimpleNamespace(
            streamEndCapture=lambda ptr: capturing.discard(ptr) or 0,
            streamIsCapturing=lambda ptr: int(ptr in capturing), capturing=capturing)))
    # the thread's capture mode, exchanged around an async pool's malloc: nothing to do here
    monkeypatch.setattr(pools._CaptureMode, "exchange", staticmethod(lambda mode: 0))
    monkeypatch.setattr(graph_mod._cuda, "require_cuda", lambda: cupy)
    monkeypatch.setattr(pools._cuda, "require_cuda", lambda: cupy)
    monkeypatch.setattr(pools, "_idle_cupy_pools", [])  # where the stand-in pools go after
    monkeypatch.setattr(graph_mod, "_allocator_calls",  # CuPy's get and set of the allocator
                        lambda memory: (lambda: allocator[0],
                                        lambda value: allocator.__setitem__(0, value)))
    # the pools' state starts empty, so what a test finds there is its own doing
    for name, empty in (("_registry", {}), ("_draining", set()), ("_spare", {})):
        monkeypatch.setattr(pools, name, empty)
    monkeypatch.setattr(pools, "_spare_bytes", 0)
    monkeypatch.setattr(pools, "_idle_bytes", 0)
    hold = pools.hold
    monkeypatch.setattr(pools, "hold", lambda pool: held.append(hold(pool)) or held[-1])
    return allocator, held


def test_a_graph_captures_from_the_pool_its_token_names_whichever_way_it_got_it(stub_cuda):
    # The graph keeps the pool its token names (so a capture need not look it up again):
    # given at construction, set later, or made by pool(), the pool its capture holds (and
    # allocates from) is the one its token names. CUDA is stubbed: the stand-ins record.
    from accelgraph_cli.cuda import pools

    allocator, held = stub_cuda
    shared = graph_pool_handle()
    given, later, own = Graph(pool=shared), Graph(), Graph()
    later.graph_pool = shared
    for graph in (given, later, own):
        graph.capture_begin()
        # (checked while the capture holds the pool: one that no graph uses is forgotten)
        assert held[-1] is pools.get_pool(graph.pool())
        assert allocator[0] is held[-1].capture_allocator()
        graph.abort_capture()
    assert given.pool() == later.pool() == shared and held[0] is held[1]
    assert own.graph_pool != shared and held[2] is not held[0]
    later.graph_pool = None  # back to a pool of its own, made at its next capture
    later.capture_begin()
    assert held[-1] is get_pool(later.graph_pool) and later.graph_pool != shared
    later.abort_capture()


def test_pools_no_graph_uses_are_forgotten_and_their_tokens_still_work(stub_cuda):
    # A process that captures graph after graph must not keep an object per pool for good:
    # a pool no graph uses and that holds nothing leaves the registry, and its token makes an
    # equal pool (same kind, nothing held) when it is used again. CUDA is stubbed.
    from accelgraph_cli.cuda import pools

    for kind in ("private", "async") * 50:
        graph = Graph(pool=graph_pool_handle(kind))
        graph.capture_begin()
        graph.abort_capture()  # the pool's last user lets go
        del graph
    own = Graph()
    own.capture_begin()
    own.abort_capture()
    assert not pools._registry
    for kind in ("private", "async"):
        token = graph_pool_handle(kind)
        first = Graph(pool=token)
        first.capture_begin()
        first.abort_capture()
        assert token not in pools._registry
        again = Graph(pool=token)  # the token of a dropped pool
        assert get_pool(token).kind == kind and get_pool(token).users == 0
        again.capture_begin()
        assert get_pool(token).users == 1
        # the first graph still holds the dropped pool's object: capturing again, it joins
        # the pool the token names now, so the two graphs share one pool as the token says
        first.capture_begin()
        assert get_pool(token).users == 2 and first._pool is again._pool is get_pool(token)
        first.abort_capture()
        again.abort_capture()
        assert token not in pools._registry
        looked_up = Graph(pool=token)  # a lookup that captures nothing leaves nothing behind
        looked_up.graph_pool = token
        assert looked_up.pool() == token and token not in pools._registry


def test_a_pool_that_still_holds_memory_stays_until_it_drains(stub_cuda, monkeypatch):
    # A block still in use when the last graph lets go keeps its pool registered (draining);
    # once the block is back, the next capture's sweep makes it spare and forgets the pool.
    from accelgraph_cli.cuda import pools

    token = graph_pool_handle()
    graph = Graph(pool=token)
    graph.capture_begin()
    in_use = [1024]
    monkeypatch.setattr(get_pool(token)._pool, "total_bytes", lambda: in_use[0])
    graph.abort_capture()
    assert token in pools._registry and get_pool(token) in pools._draining
    other = Graph()
    other.capture_begin()  # the sweep runs as a capture begins: the block is still in use
    assert token in pools._registry and get_pool(token) in pools._draining
    other.abort_capture()
    in_use[0] = 0  # the caller dropped the block
    other.capture_begin()
    assert token not in pools._registry and not pools._draining
    other.abort_capture()


def _free_blocks(pool, nbytes: int, monkeypatch) -> list:
    """Make a stand-in CuPy pool hold ``nbytes`` of cached, free blocks; returns the list its
    free_all_blocks() calls are noted in (each call empties it, as CuPy's does)."""
    held, calls = [nbytes], []
    monkeypatch.setattr(pool, "total_bytes", lambda: held[0])
    monkeypatch.setattr(pool, "used_bytes", lambda: 0)
    monkeypatch.setattr(pool, "free_all_blocks",
                        lambda: calls.append(held[0]) or held.__setitem__(0, 0))
    return calls


def test_a_drained_pool_with_few_free_blocks_passes_them_on_to_the_next_pool_on_its_stream(
        stub_cuda, monkeypatch):
    # Small free blocks of a pool no graph uses go on, still cached in its CuPy pool, to the
    # next private pool captured on the same stream (its allocations then stay inside CuPy);
    # until then they count as spare memory. CUDA is stubbed: the stand-in pool says what
    # it holds.
    from accelgraph_cli.cuda import pools

    stream = pools._cuda.require_cuda().cuda.get_current_stream()
    first = Graph()
    first.capture_begin()
    cupy_pool = first._pool._pool
    calls = _free_blocks(cupy_pool, 4096, monkeypatch)
    first.abort_capture()  # the last graph lets go: passed on, its blocks not made spare
    assert calls == [] and pools.spare_bytes() == 4096 and not pools._draining
    nxt = Graph()
    nxt.capture_begin()
    assert nxt._pool._pool is cupy_pool and calls == [] and pools.spare_bytes() == 0
    nxt.abort_capture()
    # captured on another stream, the next pool gets the blocks as spare memory
    stream.ptr += 1
    other = Graph()
    other.capture_begin()
    assert other._pool._pool is cupy_pool and calls == [4096] and pools.spare_bytes() == 0
    other.abort_capture()


def test_blocks_cached_for_one_stream_are_not_stranded_behind_a_newer_idle_pool(
        stub_cuda, monkeypatch):
    # An idle pool with nothing cached, newer than one with blocks cached on stream 5: a
    # capture on stream 6 takes the newer one, and the blocks cached for stream 5 become
    # spare memory then (any pool may take them), rather than wait idle for good.
    from accelgraph_cli.cuda import pools

    stream = pools._cuda.require_cuda().cuda.get_current_stream()
    empty, cached = Graph(), Graph()
    empty.capture_begin()
    cached.capture_begin()
    calls = _free_blocks(cached._pool._pool, 4096, monkeypatch)
    cached.abort_capture()
    empty.abort_capture()
    assert pools.spare_bytes() == 4096 and calls == []
    stream.ptr += 1
    other = Graph()
    other.capture_begin()
    assert calls == [4096]  # made spare (CuPy's free_all_blocks hands them to the leases)
    other.abort_capture()


def test_blocks_passed_on_whole_count_toward_the_spare_limit(stub_cuda, monkeypatch):
    # Over SPARE_LIMIT, the next capture frees spare memory first: blocks waiting in an idle
    # pool are spare memory too, so they are made spare (then freed down to the limit)
    from accelgraph_cli.cuda import pools

    small = Graph()
    small.capture_begin()
    calls = _free_blocks(small._pool._pool, 512, monkeypatch)
    small.abort_capture()
    assert calls == [] and pools.spare_bytes() == 512
    monkeypatch.setattr(pools, "SPARE_LIMIT", 100)
    nxt = Graph()
    nxt.capture_begin()  # same stream: only the limit makes them spare
    assert calls == [512]
    nxt.abort_capture()


def test_a_pool_captured_on_the_per_thread_default_stream_is_not_passed_on(stub_cuda,
                                                                          monkeypatch):
    # CuPy files the blocks of the per-thread default stream (pointer 2 in every thread) by
    # thread, so another thread's capture on "the same" stream would not find them
    from accelgraph_cli.cuda import pools

    stream = pools._cuda.require_cuda().cuda.get_current_stream()
    stream.ptr = 2
    graph = Graph()
    graph.capture_begin()
    calls = _free_blocks(graph._pool._pool, 512, monkeypatch)
    graph.abort_capture()
    assert calls == [512]


def test_pools_that_pass_on_nothing_whole(stub_cuda, monkeypatch):
    # More than PASS_ON_LIMIT bytes, or captures on two streams: the blocks become spare
    # memory when the last graph lets go, as before. release_spare makes blocks passed on
    # whole spare first, so it frees them too.
    from accelgraph_cli.cuda import pools

    big = Graph()
    big.capture_begin()
    calls = _free_blocks(big._pool._pool, pools.PASS_ON_LIMIT + 512, monkeypatch)
    big.abort_capture()
    assert calls == [pools.PASS_ON_LIMIT + 512]
    stream = pools._cuda.require_cuda().cuda.get_current_stream()
    token = graph_pool_handle()
    two = [Graph(pool=token), Graph(pool=token)]
    two[0].capture_begin()
    stream.ptr += 1
    two[1].capture_begin()  # the pool's second stream, while the first capture holds it
    calls = _free_blocks(get_pool(token)._pool, 512, monkeypatch)
    two[0].abort_capture()
    two[1].abort_capture()
    assert calls == [512]
    small = Graph()
    small.capture_begin()
    calls = _free_blocks(small._pool._pool, 512, monkeypatch)
    small.abort_capture()
    assert calls == [] and pools.spare_bytes() == 512
    pools.release_spare(0)
    assert calls == [512] and pools.spare_bytes() == 0


def test_abort_capture_when_not_capturing_leaves_a_captured_graph_captured(stub_cuda):
    # abort_capture is documented as a no-op when not capturing; it once cleared "captured",
    # so a second capture was accepted over the first and replay ran the old executable.
    # (CUDA is stubbed: the state a capture_end leaves is set as it sets it. The GPU tier
    # checks the same on a real capture.)
    graph = Graph()
    graph._captured = True
    graph.abort_capture()
    assert graph.is_captured and not graph.is_capturing
    with pytest.raises(GraphStateError, match="reset"):
        graph.capture_begin()
    # while capturing, it ends the capture and discards it
    fresh = Graph()
    fresh.capture_begin()
    fresh.abort_capture()
    assert not fresh.is_capturing and not fresh.is_captured


def test_a_token_is_refused_with_the_other_kind(stub_cuda):
    # A token's kind is part of it: the same serial with the other kind names no pool.
    private, asynchronous = graph_pool_handle("private"), graph_pool_handle("async")
    for token in ((asynchronous[0], private[1]), (private[0], asynchronous[1])):
        with pytest.raises(ValueError, match="names no pool"):
            Graph(pool=token)
    assert get_pool(private).kind == "private" and get_pool(asynchronous).kind == "async"


@pytest.mark.parametrize("token", [("private", 10**9), ("async", 10**9), (2, 1), (-1, 1),
                                   (0, 0), ("private", -1)])
def test_tokens_this_process_never_made_are_refused(token):
    if isinstance(token[0], str):  # the first part of a token of that kind
        token = (graph_pool_handle(token[0])[0], token[1])
    with pytest.raises(ValueError, match="names no pool"):
        Graph(pool=token)


def test_a_pool_token_of_the_other_backend_is_refused(monkeypatch):
    # torch's graph_pool_handle() gives (0, n) and its own pools are (n, 0), n from 1; an
    # accelgraph token was (0, serial) or (1, serial), so Graph(pool=<torch token>) shared
    # an accelgraph pool without a word. Neither backend takes the other's tokens now.
    import types

    from accelgraph_cli.cuda import pools, torch_graph

    ours = [graph_pool_handle("private"), graph_pool_handle("async"), Graph().pool()]
    serials = [token[1] for token in ours]
    torch_shaped = [(0, n) for n in [1, *serials]] + [(n, 0) for n in [1, *serials]]
    graph = Graph()
    refused = r"looks like a torch pool token: Graph takes tokens from Graph\.pool\(\) or " \
              r"graph_pool_handle\(\)"
    for token in torch_shaped:
        with pytest.raises(ValueError, match=refused):
            Graph(pool=token)
        with pytest.raises(ValueError, match=refused):
            graph.graph_pool = token
    assert graph.graph_pool is None
    for token in ours:  # (plain pairs of ints, as torch's are)
        assert pools.is_accelgraph_token(token) and 0 not in token
        assert type(token) is tuple and all(type(part) is int for part in token)
    assert not any(pools.is_accelgraph_token(token) for token in torch_shaped)
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(
        CUDAGraph=lambda keep_graph: types.SimpleNamespace(), graph_pool_handle=lambda: (0, 7)))
    monkeypatch.setattr(torch_graph, "_torch", lambda: fake)
    torch_made = torch_graph.TorchGraph()
    refused = r"is an accelgraph pool token .*: TorchGraph takes tokens from " \
              r"torch\.cuda\.graph_pool_handle\(\) or TorchGraph\.pool\(\)"
    for token in ours:
        with pytest.raises(ValueError, match=refused):
            torch_graph.TorchGraph(pool=token)
        for value in (token, list(token)):
            with pytest.raises(ValueError, match=refused):
                torch_made.graph_pool = value
    assert torch_made.graph_pool is None
    for token in torch_shaped:
        assert torch_graph.TorchGraph(pool=token).graph_pool == token


def test_a_torch_graph_without_torch_is_one_clear_error(monkeypatch):
    # Not a ModuleNotFoundError from deep inside: the error the package gives for a capture
    # the machine cannot make, naming what to install.
    import sys

    from accelgraph_cli import NoGPUError, TorchGraph

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` fails, as without it
    with pytest.raises(NoGPUError, match=r"torch is not installed.*accelgraph\[torch,cuda13\]"):
        TorchGraph()


def test_a_torch_that_fails_to_load_is_not_called_missing(monkeypatch, tmp_path):
    # An installed torch whose own import fails (a CUDA library missing) is "not usable",
    # with the cause kept: "not installed" would send the user to the wrong fix.
    import sys

    from accelgraph_cli import NoGPUError, TorchGraph

    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(
        'raise ImportError("libtorch_cuda.so: cannot open shared object file")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    with pytest.raises(NoGPUError, match=r"torch is not usable \(ImportError: libtorch_cuda") as info:
        TorchGraph()
    assert isinstance(info.value.__cause__, ImportError)


def test_torch_graph_settings_are_checked_as_graph_s_are(monkeypatch):
    # TorchGraph has Graph's constructor and settings: a mode set later as a string was kept
    # as the string and capture_begin failed with AttributeError; a bad pool got through.
    import types

    from accelgraph_cli.cuda import torch_graph

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(
        CUDAGraph=lambda keep_graph: types.SimpleNamespace(), graph_pool_handle=lambda: (0, 7)))
    monkeypatch.setattr(torch_graph, "_torch", lambda: fake)
    graph = torch_graph.TorchGraph(capture_error_mode="global")
    assert graph.capture_error_mode is CaptureErrorMode.GLOBAL
    graph.capture_error_mode = "relaxed"
    assert graph.capture_error_mode is CaptureErrorMode.RELAXED
    with pytest.raises(ValueError, match="must be one of 'default', 'global'"):
        graph.capture_error_mode = "bad"
    for bad in (5, "ab", (1, 2, 3), (1, "2"), (True, 1)):
        with pytest.raises(ValueError, match="torch pool token"):
            torch_graph.TorchGraph(pool=bad)
    assert torch_graph.TorchGraph(pool=[3, 4]).graph_pool == (3, 4)
    assert graph.pool() == (0, 7) and graph.graph_pool == (0, 7)
    graph._capturing = True  # as capture_begin leaves it
    with pytest.raises(GraphStateError, match="during a capture"):
        graph.capture_error_mode = "global"
    with pytest.raises(GraphStateError, match="during a capture"):
        graph.graph_pool = (0, 8)


@pytest.fixture
def fake_torch(monkeypatch):
    """torch as TorchGraph uses it, stubbed: stand-ins that note each call in ``log``.
    Returns (the fake torch, the log, the current stream as a one-item list)."""
    import contextlib

    from accelgraph_cli.cuda import torch_graph

    log = []
    current = [types.SimpleNamespace(cuda_stream=5)]

    class CUDAGraph:
        def __init__(self, keep_graph=False):
            log.append("new graph")

        def capture_begin(self, pool=None, capture_error_mode="global"):
            log.append(("capture_begin", pool, capture_error_mode, current[0].cuda_stream))

        def capture_end(self):
            log.append(("capture_end", current[0].cuda_stream))

        def instantiate(self):
            log.append("instantiate")

        def replay(self):
            log.append("replay")

        def reset(self):
            log.append("reset")

    @contextlib.contextmanager
    def stream(s):
        previous, current[0] = current[0], s
        log.append(("stream", s.cuda_stream))
        try:
            yield
        finally:
            current[0] = previous

    def note(*what):
        return lambda *args: log.append((*what, *args))

    generator = types.SimpleNamespace(clone_state=lambda: "state",
                                      graphsafe_set_state=note("set_state"))
    handles = iter(range(7, 1000))
    fake = types.SimpleNamespace(
        cuda=types.SimpleNamespace(
            CUDAGraph=CUDAGraph, graph_pool_handle=lambda: (0, next(handles)),
            synchronize=lambda: None, current_stream=lambda: current[0],
            is_current_stream_capturing=lambda: bool(getattr(current[0], "capturing", False)),
            current_device=lambda: 0, default_generators=[generator], stream=stream),
        _C=types.SimpleNamespace(_cuda_endAllocateToPool=note("end_pool")))
    monkeypatch.setattr(torch_graph, "_torch", lambda: fake)
    return fake, log, current


@pytest.mark.parametrize("open_, launched, freed", [
    (True, False, True),  # dropped during its capture: the graph's MEM_FREE node
    (False, True, True),  # after a launch: the launch's allocation, freed as CuPy would
    (True, True, True),
    (False, False, False),  # captured, never launched (or a failed capture): nothing to free
])
def test_an_async_capture_allocation_is_freed_only_where_cuda_can_free_it(async_frees, open_,
                                                                          launched, freed):
    # What _GraphAllocation decides at the death of an allocation an async-pool capture
    # made (the GPU tier checks it against CUDA: test_async_pool_outputs_are_freed_...).
    import types

    from accelgraph_cli.cuda import pools

    capture = pools.AsyncCapture()
    capture.open, capture.launches = open_, int(launched)
    memory = types.SimpleNamespace(ptr=0x7F0000)
    keeper = pools._GraphAllocation(memory, capture)
    del keeper
    assert memory.ptr == (0x7F0000 if freed else 0)  # 0: CuPy's MemoryAsync frees nothing


def test_an_eager_allocation_from_an_async_pool_is_freed_whenever_it_dies(async_frees):
    # no capture record: an allocation on a stream the capture did not include
    import types

    from accelgraph_cli.cuda import pools

    memory = types.SimpleNamespace(ptr=0x7F0000)
    keeper = pools._GraphAllocation(memory, None)
    del keeper
    assert memory.ptr == 0x7F0000  # left for CuPy's free (0 would free nothing)


class _Stream:
    def __init__(self, ptr):
        self.ptr = ptr


class _MemoryAsync:
    """CuPy's MemoryAsync as _GraphAllocation sees it: a weak reference to the stream it frees
    on (dead once that Stream object is gone); notes the capture mode and the streams then
    capturing when CuPy would free it."""

    def __init__(self, stream, freed, state):
        self.ptr = 0x7F0000
        self.stream_ref = (lambda: None) if stream is None else weakref.ref(stream)
        self.freed, self.state = freed, state

    def __del__(self):
        if self.ptr:  # (CuPy frees nothing at 0)
            self.freed.append((self.state["mode"], frozenset(self.state["capturing"])))


@pytest.fixture
def async_frees(monkeypatch):
    """pools' view of CUDA for async frees, stubbed: which streams capture, this thread's
    capture mode and current stream; returns (state, freed, make) where make(stream) is a
    launched output's keeper on that stream (None: its Stream object is gone)."""
    import types

    from accelgraph_cli.cuda import pools

    state = {"mode": 0, "capturing": set(), "current": _Stream(5), "implicit": set()}
    freed = []

    class CUDARuntimeError(Exception):
        def __init__(self, status):
            self.status = status

    def is_capturing(ptr):
        if ptr in state["implicit"]:
            raise CUDARuntimeError(state["implicit_status"])
        return int(ptr in state["capturing"])

    def exchange(value):
        previous, state["mode"] = state["mode"], value
        return previous

    def free_async(address, stream):  # a raw cudaFreeAsync (AsyncCapture.free_relaunched)
        freed.append((state["mode"], frozenset(state["capturing"]), address, stream))

    monkeypatch.setattr(pools, "_cupy_cuda", types.SimpleNamespace(
        get_current_stream=lambda: state["current"],
        runtime=types.SimpleNamespace(streamIsCapturing=is_capturing, freeAsync=free_async,
                                      CUDARuntimeError=CUDARuntimeError)))
    monkeypatch.setattr(pools._CaptureMode, "exchange", staticmethod(exchange))
    monkeypatch.setattr(pools, "_deferred", [])
    record = pools.AsyncCapture()
    record.open, record.launches = False, 1

    def make(stream):
        return pools._GraphAllocation(_MemoryAsync(stream, freed, state), record)

    return state, freed, make


def test_a_launched_output_is_freed_only_once_the_stream_it_frees_on_stops_capturing(
        async_frees):
    # The output of an async graph's last launch, dropped inside the next capture on its
    # stream: CuPy's cudaFreeAsync there would be recorded into the new graph, which would
    # free it at each replay. It waits (free_deferred), then is freed in relaxed mode.
    from accelgraph_cli.cuda import pools

    state, freed, make = async_frees
    relaxed = pools._RELAXED
    own, side = _Stream(7), _Stream(9)
    state["capturing"] |= {7, 9}
    keepers = [make(own), make(side), make(None)]  # None: freed on the current stream (5)
    del keepers[2]
    assert freed == [(relaxed, frozenset({7, 9}))]  # 5 is not capturing: freed at once
    del keepers[:]
    assert freed[1:] == [] and pools.deferred_frees() == 2
    state["capturing"].discard(7)
    pools.free_deferred()  # 9 still captures: its free waits on
    assert freed[1:] == [(relaxed, frozenset({9}))] and pools.deferred_frees() == 1
    state["current"] = _Stream(9)
    state["capturing"].clear()
    late = make(None)
    state["capturing"].add(9)
    del late  # its Stream object is gone: CuPy frees on the current stream, capturing
    assert len(freed) == 2 and pools.deferred_frees() == 2
    state["capturing"].clear()
    pools.free_deferred()
    assert freed[2:] == [(relaxed, frozenset())] * 2 and pools.deferred_frees() == 0
    assert state["mode"] == 0  # the thread's own mode is back


@pytest.mark.parametrize("status, waits", [(906, True), (400, False)])
def test_a_free_on_the_legacy_stream_waits_while_another_stream_captures(async_frees, status,
                                                                         waits):
    # cudaStreamIsCapturing on the legacy stream while another stream captures: 906
    # (cudaErrorStreamCaptureImplicit), and a free there would end that capture. Any other
    # error is CuPy's to meet: the free goes ahead.
    from accelgraph_cli.cuda import pools

    state, freed, make = async_frees
    legacy = _Stream(0)
    state["implicit"].add(0)
    state["implicit_status"] = status
    keeper = make(legacy)
    del keeper
    assert (freed == [], pools.deferred_frees()) == ((True, 1) if waits else (False, 0))


def test_an_output_freed_then_made_again_by_a_launch_is_freed_with_the_executable(
        async_frees):
    # Each launch makes the graph's outputs again at their one address. An output dropped
    # after a launch is freed once (CuPy); launched again, the graph makes it anew with no
    # owner, and it outlived the executable for good (32 MiB of graph memory a graph, H100).
    from accelgraph_cli.cuda import pools

    state, freed, make = async_frees
    relaxed = pools._RELAXED
    record = make(_Stream(5)).capture  # (the keeper dies here: freed after no launch yet)
    record.launches, record.stream = 1, _Stream(5)
    freed.clear()
    record.dropped.clear()
    dropped, kept = make(_Stream(5)), make(_Stream(5))
    del dropped  # freed by CuPy after launch 1
    assert freed == [(relaxed, frozenset())] and record.dropped == [(0x7F0000, 1)]
    record.free_relaunched()  # no launch since: nothing was made again
    assert len(freed) == 1
    record.launches, record.stream = 3, _Stream(6)  # two more launches, the last on 6
    record.free_relaunched()
    assert freed[1:] == [(relaxed, frozenset(), 0x7F0000, 6)]
    record.free_relaunched()  # each is freed once
    assert len(freed) == 2 and record.dropped == [(0x7F0000, 3)]
    record.launches = 4
    state["capturing"].add(6)  # the last launch's stream captures: the free waits
    record.free_relaunched()
    assert len(freed) == 2 and pools.deferred_frees() == 1
    state["capturing"].clear()
    pools.free_deferred()
    assert freed[2:] == [(relaxed, frozenset(), 0x7F0000, 6)] and state["mode"] == 0
    del kept


def test_a_graphs_capture_makes_the_frees_that_waited_as_it_begins_and_ends(stub_cuda,
                                                                            monkeypatch):
    # The wiring: Graph.capture_begin (pools.hold) and every end of a capture drain them.
    from accelgraph_cli.cuda import pools

    drained = []
    monkeypatch.setattr(pools, "free_deferred", lambda: drained.append("drained"))
    monkeypatch.setattr(pools, "_deferred", ["waiting"])
    graph = Graph(keep_graph=True)
    graph.capture_begin()
    assert drained == ["drained"]
    graph.capture_end()
    assert drained == ["drained"] * 2
    graph.reset()
    graph.capture_begin()
    graph.abort_capture()
    assert drained == ["drained"] * 4


def test_an_async_graphs_first_successful_replay_marks_its_capture_launched():
    import types

    from accelgraph_cli.cuda import graph as graph_mod
    from accelgraph_cli.cuda import pools

    launches = []

    def launch(graph_exec, stream):
        if not launches:
            launches.append("refused")
            raise RuntimeError("cudaErrorLaunchFailure")
        launches.append((graph_exec, stream))

    capture = pools.AsyncCapture()
    capture.open = False
    replay = graph_mod._fast_replay(launch, 11, lambda: types.SimpleNamespace(ptr=22), capture)
    with pytest.raises(RuntimeError):
        replay()
    assert not capture.launched  # a launch that failed allocated nothing
    replay()
    assert capture.launched and launches[-1] == (11, 22)
    assert capture.launches == 1  # the refused launch is not counted


@pytest.mark.parametrize("dropped_after", [0, 1])
def test_replays_after_an_output_was_dropped_free_it_once_as_the_executable_goes(
        async_frees, monkeypatch, dropped_after):
    # The wiring: replay() counts launches and notes the last one's stream; destroying the
    # executable frees, once, on that stream, what launches made after the output was gone
    # (dropped before any launch, 0: nothing was freed then; after one, 1: freed then),
    # and graphExecDestroy follows even where that free fails.
    from accelgraph_cli.cuda import graph as graph_mod
    from accelgraph_cli.cuda import pools

    state, freed, make = async_frees
    destroyed = []
    monkeypatch.setattr(graph_mod._cuda, "require_cuda", lambda: types.SimpleNamespace(
        cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(
            graphExecDestroy=destroyed.append))))
    out = make(_Stream(5))
    record = out.capture
    record.launches = 0
    streams = [_Stream(5), _Stream(6)]
    replay = graph_mod._fast_replay(lambda graph_exec, stream: None, 11,
                                    lambda: streams[record.launches % 2], record)
    for _ in range(dropped_after):
        replay()
    del out  # dropped: freed once if launched
    assert len(freed) == dropped_after
    replay()
    replay()  # the last on stream 5 or 6
    resources = graph_mod._Resources()
    resources.exec, resources.async_capture = 7, record
    resources.destroy_exec()
    last = streams[(dropped_after + 1) % 2].ptr
    assert freed[dropped_after:] == [(pools._RELAXED, frozenset(), 0x7F0000, last)]
    assert destroyed == [7] and record.launches == dropped_after + 2
    resources.exec = 8  # instantiated again, no launch since: nothing more to free
    resources.destroy_exec()
    assert len(freed) == dropped_after + 1 and destroyed == [7, 8]
    # a free that cannot be made as it must (the driver gone at interpreter exit) is not
    # made at all: never outside relaxed mode, nor behind a capture's back
    monkeypatch.setattr(pools, "_free_waits", lambda memory: 1 / 0)
    record.launches += 1
    resources.exec = 9
    resources.destroy_exec()
    assert len(freed) == dropped_after + 1 and destroyed == [7, 8, 9]
    assert record.dropped == []  # nothing freed, nothing noted


@pytest.mark.parametrize("ending", ["capture_end", "abort_capture", "reset", "end_fails",
                                    "reset_after_capture"])
def test_an_async_captures_record_is_closed_however_the_capture_ends(stub_cuda, monkeypatch,
                                                                      ending):
    # The wiring around _GraphAllocation (CUDA stubbed): each allocation an async-pool
    # capture makes carries the capture's record; open while the capture runs (a free then
    # is the graph's MEM_FREE node), closed by every way the capture ends, so an output
    # dropped afterwards, before any launch, frees nothing.
    from accelgraph_cli.cuda import graph as graph_mod

    allocator, _ = stub_cuda
    graph = Graph(keep_graph=True, pool=graph_pool_handle("async"))
    graph.capture_begin()
    kept = allocator[0](256)
    during = allocator[0](512)
    record = kept.mem._owner.capture
    assert during.mem._owner.capture is record and record.open and not record.launched
    asyncmem = during.mem._owner.memory
    del during  # dropped during the capture: CuPy's free goes ahead (recorded)
    assert asyncmem.ptr == 0x7F00 + 512
    runtime = graph_mod._cuda.require_cuda().cuda.runtime
    open_at_end = []

    def end_capture(ptr):
        open_at_end.append(record.open)
        if ending == "end_fails":
            raise RuntimeError("cudaErrorStreamCaptureInvalidated")
        return 0

    monkeypatch.setattr(runtime, "streamEndCapture", end_capture)
    if ending == "end_fails":
        with pytest.raises(CaptureError):
            graph.capture_end()
    elif ending == "reset_after_capture":
        graph.capture_end()
        graph.reset()
    else:
        getattr(graph, ending)()
    # a capture that ends keeps its record open until CUDA has ended it (a free until then
    # is recorded); one that is discarded closes it first
    assert open_at_end == [ending in ("capture_end", "end_fails", "reset_after_capture")]
    assert not record.open and not record.launched and not graph.is_capturing
    memory = kept.mem._owner.memory
    del kept  # never launched: nothing to free
    assert memory.ptr == 0
    assert graph._res.async_capture is (record if ending == "capture_end" else None)


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_inside_with_graph_is_not_turned_into_a_capture_error(stub_cuda,
                                                                           interrupt):
    # Ctrl-C (or sys.exit) in the body of `with graph:` came out as CaptureError, an
    # Exception, so `except Exception` handlers swallowed the interrupt. The capture is
    # discarded and the interrupt propagates as it is. CUDA is stubbed.
    from accelgraph_cli.cuda import graph as graph_mod

    _, held = stub_cuda
    cupy = graph_mod._cuda.require_cuda()
    cupy.cuda.Device = lambda: types.SimpleNamespace(synchronize=lambda: None)
    graph = Graph()
    with pytest.raises(interrupt):
        with graph:
            raise interrupt()
    assert not graph.is_capturing and not graph.is_captured and held[-1].users == 0
    with pytest.raises(CaptureError) as info:  # an Exception is still a CaptureError
        with graph:
            raise ValueError("bad")
    assert isinstance(info.value.__cause__, ValueError) and not graph.is_capturing
    # with no capture running (abort_capture does nothing), the exit lets it through too
    idle = Graph()
    with pytest.raises(interrupt):
        try:
            raise interrupt()
        except BaseException as exc:
            if not idle.__exit__(type(exc), exc, exc.__traceback__):
                raise


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_inside_with_torch_graph_is_not_turned_into_a_capture_error(
        fake_torch, interrupt):
    from accelgraph_cli.cuda import torch_graph

    _, log, _ = fake_torch
    graph = torch_graph.TorchGraph()
    with pytest.raises(interrupt):
        with graph:
            raise interrupt()
    assert not graph.is_capturing and not graph.is_captured
    assert [entry[0] for entry in log if type(entry) is tuple] == ["capture_begin",
                                                                   "capture_end"]
    with pytest.raises(CaptureError):
        with graph:
            raise ValueError("bad")


def test_a_torch_older_than_2_8_is_one_clear_error(fake_torch):
    # torch.cuda.CUDAGraph(keep_graph=True) came in torch 2.8: an older one failed with a
    # TypeError from inside TorchGraph() while the torch extra asked for torch>=2.4.
    from accelgraph_cli import NoGPUError
    from accelgraph_cli.cuda import torch_graph

    fake, _, _ = fake_torch

    class CUDAGraph:  # torch 2.7's takes no arguments
        def __init__(self):
            pass

    fake.cuda.CUDAGraph = CUDAGraph
    fake.__version__ = "2.7.1+cu126"
    with pytest.raises(NoGPUError, match=r"torch >= 2\.8.*this is torch 2\.7\.1") as info:
        torch_graph.TorchGraph()
    assert isinstance(info.value.__cause__, TypeError)



def test_a_torch_capture_ends_on_the_stream_it_began_on(fake_torch):
    # Begun inside `with torch.cuda.stream(s):` and ended after it, the capture ended with
    # another stream current: torch refuses that ("Capture must end on the same stream it
    # began on") and the capture was discarded. It ends with its own stream current now,
    # and the current stream is left as it was. (The GPU tier does it on torch itself.)
    from accelgraph_cli.cuda import torch_graph

    fake, log, current = fake_torch
    side, default = types.SimpleNamespace(cuda_stream=9), current[0]
    graph = torch_graph.TorchGraph(keep_graph=True)
    with fake.cuda.stream(side):
        graph.capture_begin()
    graph.capture_end()
    assert [e for e in log if type(e) is tuple and e[0].startswith("capture")] == [
        ("capture_begin", graph.pool(), "global", 9), ("capture_end", 9)]
    assert graph.is_captured and current[0] is default
    # on its own stream, no stream switch is made for it
    graph.reset()
    log.clear()
    graph.capture_begin()
    graph.capture_end()
    assert [e for e in log if type(e) is tuple] == [
        ("capture_begin", graph.pool(), "global", 5), ("capture_end", 5)]
    # abort_capture ends it the same way (not through the repairs of a failed capture)
    graph.reset()
    log.clear()
    with fake.cuda.stream(side):
        graph.capture_begin()
    graph.abort_capture()
    assert [e for e in log if type(e) is tuple][2:] == [("stream", 9), ("capture_end", 9)]
    assert not graph.is_capturing and not graph.is_captured and current[0] is default


def test_a_torch_capture_that_cannot_begin_is_undone(fake_torch, monkeypatch):
    # torch's capture_begin may begin the RNG generators' capture and route allocations to
    # the pool before what fails; TorchGraph raised CaptureError and left both set (every
    # later torch.randn failed). They are undone now, as after a failed capture_end, and a
    # capture torch began on the stream is ended (the stream was not capturing before:
    # capture_begin asks first).
    from accelgraph_cli.cuda import torch_graph

    fake, log, _ = fake_torch
    refusals = ["CUDA error: out of memory"]

    class Refusing(fake.cuda.CUDAGraph):
        def capture_begin(self, pool=None, capture_error_mode="global"):
            super().capture_begin(pool, capture_error_mode)
            if refusals:
                raise RuntimeError(refusals.pop())

    fake.cuda.CUDAGraph = Refusing
    monkeypatch.setattr(torch_graph.TorchGraph, "_end_stream_capture",
                        lambda self: log.append("stream capture ended"))
    graph = torch_graph.TorchGraph()
    failed = graph._graph
    log.clear()
    with pytest.raises(CaptureError, match="CUDA refused to begin capture: RuntimeError"):
        graph.capture_begin()
    pool = graph.pool()
    assert log == [("capture_begin", pool, "global", 5), "stream capture ended",
                   ("end_pool", 0, pool), ("set_state", "state"), "new graph"]
    assert graph._graph is not failed and not graph.is_capturing and not graph.is_captured
    log.clear()
    graph.capture_begin()  # the graph captures again
    graph.capture_end()
    assert graph.is_captured and "stream capture ended" not in log


def test_a_torch_capture_on_a_stream_that_captures_already_is_refused_first(fake_torch):
    # torch's own capture_begin on a capturing stream fails half-way through registering its
    # RNG generators, and the torch graph object left so aborts the process as it is
    # destroyed (torch 2.11, on the GPU). TorchGraph asks first and never calls it.
    import types

    from accelgraph_cli.cuda import torch_graph

    _, log, current = fake_torch
    graph = torch_graph.TorchGraph()
    current[0] = types.SimpleNamespace(cuda_stream=9, capturing=True)
    log.clear()
    with pytest.raises(CaptureError, match="current stream is capturing already"):
        graph.capture_begin()
    assert log == [] and not graph.is_capturing
    current[0] = types.SimpleNamespace(cuda_stream=9)
    graph.capture_begin()  # once that capture has ended, this graph captures
    assert graph.is_capturing


@pytest.mark.parametrize("ending", ["capture_end", "abort_capture"])
def test_a_failed_torch_capture_that_cannot_be_ended_still_leaves_the_graph_usable(
        fake_torch, monkeypatch, ending):
    # After torch's capture_end fails, TorchGraph ends the stream's capture itself, through
    # cuda.bindings; without them that raises NoGPUError, and the graph stayed "capturing"
    # for good: reset() and every new capture_begin failed the same way. The graph is reset
    # now (not capturing, a fresh torch graph, torch's setup undone) however that step fails,
    # and the error still comes out: named in capture_end's CaptureError (the error a failed
    # capture raises), raised itself by abort_capture.
    from accelgraph_cli import NoGPUError
    from accelgraph_cli.cuda import device, torch_graph

    fake, log, _ = fake_torch
    invalidated = [True]

    class Invalidated(fake.cuda.CUDAGraph):
        def capture_end(self):
            super().capture_end()
            if invalidated[0]:
                raise RuntimeError("CUDA error: operation failed due to a previous error "
                                   "during capture")

    def no_bindings():
        raise NoGPUError("cuda.bindings is not installed (ModuleNotFoundError)")

    fake.cuda.CUDAGraph = Invalidated
    monkeypatch.setattr(device, "bindings", no_bindings)
    graph = torch_graph.TorchGraph()
    graph.capture_begin()
    failed = graph._graph
    log.clear()
    raised = (CaptureError, r"illegal.*could not be ended: NoGPUError: cuda.bindings") \
        if ending == "capture_end" else (NoGPUError, "cuda.bindings")
    with pytest.raises(raised[0], match=raised[1]):
        getattr(graph, ending)()
    assert not graph.is_capturing and not graph.is_captured and graph._graph is not failed
    assert ("end_pool", 0, graph.pool()) in log and ("set_state", "state") in log
    graph.reset()
    invalidated[0] = False
    graph.capture_begin()
    graph.capture_end()
    assert graph.is_captured


@pytest.mark.parametrize("body", [KeyboardInterrupt, ValueError])
def test_a_with_graph_whose_capture_cannot_be_discarded_still_reports_the_body(
        fake_torch, monkeypatch, body):
    # The body raised and abort_capture failed as well (the capture invalidated, no
    # cuda.bindings to end it): that second error replaced the first, so a Ctrl-C came out
    # as NoGPUError, which `except Exception` swallows. The interrupt now propagates as
    # itself; an error of the body comes out as CaptureError naming both.
    from accelgraph_cli import NoGPUError
    from accelgraph_cli.cuda import device, torch_graph

    fake, _, _ = fake_torch

    class Invalidated(fake.cuda.CUDAGraph):
        def capture_end(self):
            raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    def no_bindings():
        raise NoGPUError("cuda.bindings is not installed (ModuleNotFoundError)")

    fake.cuda.CUDAGraph = Invalidated
    monkeypatch.setattr(device, "bindings", no_bindings)
    graph = torch_graph.TorchGraph()
    expected = (KeyboardInterrupt, "^bad$") if body is KeyboardInterrupt else \
        (CaptureError, r"capture failed: ValueError: bad.*discarding it failed too: NoGPUError")
    with pytest.raises(expected[0], match=expected[1]):
        with graph:
            raise body("bad")
    assert not graph.is_capturing


def test_a_pool_that_cannot_give_a_capture_its_allocator_is_let_go(stub_cuda, monkeypatch):
    # capture_begin holds the pool, then asks it for the capture's allocator (which may make
    # the CuPy pool, and fail): that ran outside the part that lets go of the pool on a
    # failure, so the pool kept one user too many for good and the caller got the raw error.
    # CUDA is stubbed.
    from accelgraph_cli.cuda import pools

    allocator, held = stub_cuda
    token = graph_pool_handle()
    other = Graph(pool=token)
    other.capture_begin()  # holds the pool: it must stay registered and held once
    installed = allocator[0]
    refusals = [RuntimeError("out of memory allocating the pool")]
    capture_allocator = pools.GraphPool.capture_allocator

    def refusing(self, *args):
        if refusals:
            raise refusals.pop()
        return capture_allocator(self, *args)

    monkeypatch.setattr(pools.GraphPool, "capture_allocator", refusing)
    graph = Graph(pool=token)
    with pytest.raises(CaptureError, match="CUDA refused to begin capture: RuntimeError: out "
                                           "of memory") as info:
        graph.capture_begin()
    assert isinstance(info.value.__cause__, RuntimeError)
    assert get_pool(token).users == 1 and allocator[0] is installed
    assert not graph.is_capturing and not graph.is_captured
    other.abort_capture()
    assert token not in pools._registry  # its last user let go: nothing keeps it
    graph.capture_begin()  # the graph captures again
    assert held[-1].users == 1 and allocator[0] is held[-1].capture_allocator()
    graph.abort_capture()
    assert held[-1].users == 0 and allocator[0] is None
    # CUDA refusing the capture itself, once the allocator is in place: it is put back
    stream = pools._cuda.require_cuda().cuda.get_current_stream()
    monkeypatch.setattr(stream, "begin_capture", lambda mode: 1 / 0)
    with pytest.raises(CaptureError, match="refused to begin capture: ZeroDivisionError"):
        graph.capture_begin()
    assert held[-1].users == 0 and allocator[0] is None and not graph.is_capturing


def test_graph_pool_cannot_change_while_the_graph_holds_a_capture(stub_cuda):
    # Set on a graph holding a capture, graph_pool changed what pool() returned but not the
    # pool the captured graph's memory is in, so Graph(pool=g.pool()) did not share it.
    # It changes after reset(), as the reference says. CUDA is stubbed.
    graph = Graph(keep_graph=True)
    graph.capture_begin()
    graph.capture_end()
    captured_in, other = graph.pool(), graph_pool_handle()
    with pytest.raises(GraphStateError, match=r"holds a captured graph; call reset\(\) first"):
        graph.graph_pool = other
    with pytest.raises(GraphStateError, match="reset"):
        graph.graph_pool = None
    assert graph.pool() == captured_in and graph._pool is get_pool(captured_in)
    graph.reset()
    graph.graph_pool = other
    assert graph.pool() == other


def test_a_torch_graphs_pool_cannot_change_while_it_holds_a_capture(fake_torch):
    from accelgraph_cli.cuda import torch_graph

    torch_made = torch_graph.TorchGraph()
    torch_made.capture_begin()
    torch_made.capture_end()
    captured_in = torch_made.pool()
    with pytest.raises(GraphStateError, match=r"holds a captured graph; call reset\(\) first"):
        torch_made.graph_pool = (0, 99)
    assert torch_made.pool() == captured_in
    torch_made.reset()
    torch_made.graph_pool = (0, 99)
    assert torch_made.pool() == (0, 99)


def test_a_graph_is_destroyed_in_relaxed_capture_mode(async_frees, monkeypatch):
    # A graph dropped while a global-mode capture runs (reset() of one graph as another
    # captures, or the collector finding it in a cycle then): in the thread's global mode
    # each destroy was refused (cudaErrorStreamCaptureUnsupported), the executable leaked and
    # CuPy printed its Graph's ignored exception with a traceback (seen in the GPU tier).
    # The executable, the graph and the CuPy owner now go in relaxed mode, the thread's mode
    # put back after; a graph with nothing to destroy leaves the mode alone.
    from accelgraph_cli.cuda import graph as graph_mod
    from accelgraph_cli.cuda import pools

    state = async_frees[0]
    done = []

    def destroy(what):
        return lambda handle: done.append((what, handle, state["mode"]))

    monkeypatch.setattr(graph_mod._cuda, "require_cuda", lambda: types.SimpleNamespace(
        cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(
            graphExecDestroy=destroy("exec"), graphDestroy=destroy("graph")))))

    class Owner:  # CuPy's Graph: destroys the executable it instantiated as it dies
        graphExec = 21

        def __del__(self):
            done.append(("owner", self.graphExec, state["mode"]))

    relaxed = pools._RELAXED
    kept = graph_mod._Resources()  # keep_graph=True: accelgraph destroys both itself
    kept.exec, kept.graph = 7, 8
    kept.release()
    assert done == [("exec", 7, relaxed), ("graph", 8, relaxed)] and state["mode"] == 0
    owned = graph_mod._Resources()  # the executable is CuPy's owner's
    owned.exec, owned.owner = 21, Owner()
    state["mode"] = 1  # (whatever the thread's mode was, it is put back)
    owned.release()
    assert done[2:] == [("owner", 21, relaxed)] and state["mode"] == 1
    assert (owned.exec, owned.graph, owned.owner) == (0, 0, None)

    exchanges = []
    monkeypatch.setattr(pools._CaptureMode, "exchange",
                        staticmethod(lambda mode: exchanges.append(mode) or 0))
    graph_mod._Resources().release()  # never captured: nothing to destroy, no exchange
    kept.release()  # released already
    assert exchanges == [] and len(done) == 3


def _thread_capture_mode(monkeypatch) -> list:
    """The thread's capture mode as the stand-in exchange keeps it: a one-item list, 0
    (global) at first."""
    from accelgraph_cli.cuda import pools

    mode = [0]

    def exchange(value):
        previous, mode[0] = mode[0], value
        return previous

    monkeypatch.setattr(pools._CaptureMode, "exchange", staticmethod(exchange))
    return mode


@pytest.fixture
def collector(monkeypatch):
    """The collector's state as a test finds it: on, no capture pausing it; put back after."""
    import gc

    from accelgraph_cli import gcpause

    monkeypatch.setattr(gcpause, "_captures", 0)
    monkeypatch.setattr(gcpause, "_on_after_captures", False)
    monkeypatch.setattr(gcpause, "_pauses_that_disabled", 0)
    gc.enable()
    yield gcpause
    gc.enable()


@pytest.mark.parametrize("ending", ["capture_end", "abort_capture", "reset", "end_fails",
                                    "dropped", "begin_fails", "discard_fails"])
def test_no_cyclic_collection_runs_while_a_graph_captures(stub_cuda, monkeypatch, collector,
                                                          ending):
    # Garbage the collector finds during a global-mode capture (a graph left in a cycle) is
    # destroyed through calls such a capture refuses, and is invalidated by (GPU tier). The
    # collector is off from capture_begin until the capture ends, however it ends (the
    # discarded graph's destroy failing too), and back on after; one off before stays off.
    import gc

    from accelgraph_cli.cuda import graph as graph_mod
    from accelgraph_cli.cuda import pools

    runtime = graph_mod._cuda.require_cuda().cuda.runtime
    stream = graph_mod._cuda.require_cuda().cuda.get_current_stream()

    def end_capture(ptr):
        if ending == "end_fails":
            raise RuntimeError("cudaErrorStreamCaptureInvalidated")
        return 77 if ending == "discard_fails" else 0

    modes, mode = [], _thread_capture_mode(monkeypatch)

    def refused(*args):
        modes.append(mode[0])
        raise RuntimeError("cudaErrorStreamCaptureUnsupported")

    monkeypatch.setattr(runtime, "streamEndCapture", end_capture)
    monkeypatch.setattr(runtime, "graphDestroy", refused, raising=False)
    if ending == "begin_fails":
        monkeypatch.setattr(stream, "begin_capture", refused)
    for on_before in (True, False):
        (gc.enable if on_before else gc.disable)()
        graph = Graph(keep_graph=True)
        if ending == "begin_fails":
            with pytest.raises(CaptureError):
                graph.capture_begin()
        else:
            graph.capture_begin()
            assert not gc.isenabled() and collector._captures == 1
            if ending == "end_fails":
                with pytest.raises(CaptureError):
                    graph.capture_end()
            elif ending == "discard_fails":
                pool = graph._res.pool
                with pytest.raises(RuntimeError):
                    graph.abort_capture()
                assert not graph.is_capturing and pool.users == 0  # let go of all the same
                assert modes[-1] == pools._RELAXED and mode == [0]  # (another may capture)
            elif ending == "dropped":
                del graph
            else:
                getattr(graph, ending)()
        assert gc.isenabled() is on_before and collector._captures == 0
    assert pools.deferred_frees() == 0


def test_overlapping_captures_keep_the_collector_off_until_the_last_ends(stub_cuda, monkeypatch,
                                                                       collector):
    # Two captures at once (two threads, or two streams of one): the collector is on again
    # when the last ends, not the first. A pause of the offline commands (cyclic_gc_paused)
    # that ends while a capture runs leaves it off until that capture ends, and one that
    # asks for collection inside it (cyclic_gc_resumed, around pydot) gets none then.
    import gc
    import types

    from accelgraph_cli.cuda import graph as graph_mod

    cuda = graph_mod._cuda.require_cuda().cuda
    streams = [cuda.get_current_stream(),
               types.SimpleNamespace(ptr=6, begin_capture=lambda mode: None)]
    monkeypatch.setattr(cuda, "get_current_stream", lambda: streams[0])
    first, second = Graph(keep_graph=True), Graph(keep_graph=True)
    first.capture_begin()
    streams[0] = streams[1]
    second.capture_begin()
    first.capture_end()
    assert not gc.isenabled() and second.is_capturing
    second.capture_end()
    assert gc.isenabled()

    with collector.cyclic_gc_paused():
        third = Graph(keep_graph=True)
        third.capture_begin()
        with collector.cyclic_gc_resumed():  # (pydot inside an offline pause)
            assert not gc.isenabled()  # the capture's pause holds
    assert not gc.isenabled()  # the block ended, the capture runs on
    third.abort_capture()
    assert gc.isenabled() and collector._captures == 0

    with collector.cyclic_gc_paused():
        with collector.cyclic_gc_resumed():
            fourth = Graph(keep_graph=True)
            fourth.capture_begin()  # finds the collector on, the resumed block's doing
        fourth.capture_end()
        assert not gc.isenabled()  # off as the pause around wants, not on
    assert gc.isenabled() and collector._captures == 0


def test_an_interrupt_as_a_capture_begins_leaves_nothing_paused_or_held(stub_cuda, monkeypatch,
                                                                        collector):
    # Ctrl-C inside capture_begin (CUDA's begin, the allocator swap): the interrupt goes on
    # as it is, and the collector, the pool and the allocator are as they were.
    import gc

    from accelgraph_cli.cuda import graph as graph_mod

    allocator, held = stub_cuda
    stream = graph_mod._cuda.require_cuda().cuda.get_current_stream()

    def interrupted(mode):
        raise KeyboardInterrupt

    monkeypatch.setattr(stream, "begin_capture", interrupted)
    graph = Graph()
    with pytest.raises(KeyboardInterrupt):
        graph.capture_begin()
    assert gc.isenabled() and collector._captures == 0
    assert held[-1].users == 0 and allocator[0] is None and not graph.is_capturing


def test_a_graph_whose_capture_mode_cannot_be_switched_is_released_all_the_same(
        async_frees, monkeypatch):
    # The thread's mode cannot be switched to relaxed (the driver call fails: at interpreter
    # exit, say): the handles are destroyed in the mode it has, as before the switch, and
    # the pool is let go of; a destroy that fails still lets go of the owner and the pool.
    from accelgraph_cli.cuda import graph as graph_mod
    from accelgraph_cli.cuda import pools

    done = []

    def destroy(handle):
        done.append(handle)
        if handle == 9:
            raise RuntimeError("cudaErrorInvalidValue")

    monkeypatch.setattr(graph_mod._cuda, "require_cuda", lambda: types.SimpleNamespace(
        cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(
            graphExecDestroy=destroy, graphDestroy=destroy))))

    def no_exchange(mode):
        raise RuntimeError("CUDA_ERROR_DEINITIALIZED")

    monkeypatch.setattr(pools._CaptureMode, "exchange", staticmethod(no_exchange))
    released = []
    monkeypatch.setattr(pools, "release", released.append)
    resources = graph_mod._Resources()
    resources.exec, resources.graph, resources.pool = 7, 8, "pool"
    resources.release()
    assert done == [7, 8] and released == ["pool"] and resources.pool is None
    failing = graph_mod._Resources()
    failing.exec, failing.owner, failing.pool = 9, types.SimpleNamespace(graphExec=10), "other"
    with pytest.raises(RuntimeError):
        failing.release()
    assert failing.owner is None and released == ["pool", "other"] and failing.exec == 0


@pytest.mark.parametrize("how", ["dropped", "collected", "reset"])
def test_cupys_graph_dies_in_relaxed_mode_however_the_graph_goes(stub_cuda, monkeypatch, how):
    # keep_graph=False: the capture ends through CuPy, whose Graph (the owner) holds the
    # executable, and the owner's launch becomes this graph's replay. That bound method held
    # the owner past the resources' relaxed release when the graph was dropped or
    # collected: the owner died after, in the thread's own mode, and during another
    # global-mode capture its destroy was refused and invalidated that capture (GPU tier).
    import gc

    from accelgraph_cli.cuda import graph as graph_mod
    from accelgraph_cli.cuda import pools

    mode = _thread_capture_mode(monkeypatch)
    died = []

    class Owner:  # CuPy's Graph
        graph, graphExec = 0, 31

        def launch(self, stream=None):
            pass

        def __del__(self):
            died.append(mode[0])

    stream = graph_mod._cuda.require_cuda().cuda.get_current_stream()
    monkeypatch.setattr(stream, "end_capture", lambda: Owner(), raising=False)
    graph = Graph()
    graph.capture_begin()
    graph.capture_end()
    assert graph.replay.__self__.graphExec == 31 and graph.exec_handle == 31
    if how == "dropped":
        del graph
    elif how == "collected":
        graph.cycle = graph
        del graph
        gc.collect()
    else:
        graph.reset()
    assert died == [pools._RELAXED] and mode == [0]


@pytest.mark.parametrize("ending", ["capture_end", "abort_capture", "reset", "end_fails",
                                    "begin_fails", "interrupted", "dropped"])
def test_no_cyclic_collection_runs_while_a_torch_graph_captures(fake_torch, monkeypatch,
                                                                collector, ending):
    # As for Graph: torch destroys a graph the collector finds in a cycle through calls a
    # global-mode capture refuses (invalidating it). TorchGraph had no pause at all. The
    # collector is off from capture_begin until the capture ends, however it ends (torch
    # refusing to begin or end, an interrupt in torch's capture_begin, the graph dropped while
    # it captures), and back as it was before.
    import gc

    from accelgraph_cli.cuda import torch_graph

    fake, log, _ = fake_torch
    monkeypatch.setattr(torch_graph.TorchGraph, "_end_stream_capture",
                        lambda self: log.append("stream capture ended"))

    class Failing(fake.cuda.CUDAGraph):
        def capture_begin(self, pool=None, capture_error_mode="global"):
            super().capture_begin(pool, capture_error_mode)
            if ending == "begin_fails":
                raise RuntimeError("CUDA error: operation not permitted")
            if ending == "interrupted":
                raise KeyboardInterrupt

        def capture_end(self):
            super().capture_end()
            if ending == "end_fails":
                raise RuntimeError("CUDA error: operation failed due to a previous error "
                                   "during capture")

    fake.cuda.CUDAGraph = Failing
    for on_before, other in ((True, False), (False, False), (True, True)):
        (gc.enable if on_before else gc.disable)()
        if other:  # another capture's pause runs through this one: resumed once, not twice
            collector.pause_for_capture()
        graph = torch_graph.TorchGraph()
        if ending in ("begin_fails", "interrupted"):
            with pytest.raises(CaptureError if ending == "begin_fails" else KeyboardInterrupt):
                graph.capture_begin()
            assert not graph.is_capturing and "stream capture ended" in log
        else:
            graph.capture_begin()
            assert not gc.isenabled() and collector._captures == 1 + other
            if ending == "end_fails":
                with pytest.raises(CaptureError):
                    graph.capture_end()
            elif ending == "dropped":
                log.clear()
                del graph  # its capture is ended (torch's capture_end), not left running
                assert log == [("capture_end", 5)]  # (and no torch graph made to replace it)
            else:
                getattr(graph, ending)()
        assert collector._captures == other
        if other:
            assert not gc.isenabled()
            collector.resume_after_capture()
        assert gc.isenabled() is on_before and collector._captures == 0
        log.clear()


def test_a_torch_graph_whose_replacement_cannot_be_made_is_left_empty(fake_torch, monkeypatch,
                                                                        collector):
    # A discarded capture's torch graph object is replaced by a new one; where making that
    # fails, the old one (its capture ended) was kept, with the graph saying "not captured":
    # the next capture_begin reused it. It is let go of now whatever happens, and the next
    # capture makes one.
    from accelgraph_cli.cuda import torch_graph

    fake, log, _ = fake_torch
    graph = torch_graph.TorchGraph()
    graph.capture_begin()
    discarded = graph._graph
    made = fake.cuda.CUDAGraph

    def broken(keep_graph=False):
        raise RuntimeError("CUDA error: out of memory")

    fake.cuda.CUDAGraph = broken
    with pytest.raises(RuntimeError, match="out of memory"):
        graph.abort_capture()
    assert graph._graph is None and not graph.is_capturing and not graph.is_captured
    assert collector._captures == 0
    fake.cuda.CUDAGraph = made
    graph.capture_begin()
    graph.capture_end()
    assert graph.is_captured and graph._graph is not discarded


@pytest.mark.parametrize("how", ["dropped", "collected", "reset", "aborted"])
def test_a_torch_graph_is_destroyed_in_relaxed_mode(fake_torch, monkeypatch, collector, how):
    # torch destroys its graph and executable as its graph object dies, or in its reset().
    # Dropped, collected or reset while another graph captures in global mode, those
    # destroys were made in that mode: refused, and the capture under way invalidated (as
    # for Graph on the GPU). They are made in relaxed mode now, and the thread's mode is put
    # back after; torch's bound replay (the graph's fast path) does not keep the object
    # alive past that.
    import gc

    from accelgraph_cli.cuda import pools, torch_graph

    fake, log, _ = fake_torch
    mode = _thread_capture_mode(monkeypatch)
    modes = []

    class Noting(fake.cuda.CUDAGraph):
        def reset(self):
            modes.append(("reset", mode[0]))

        def __del__(self):
            modes.append(("died", mode[0]))

    fake.cuda.CUDAGraph = Noting
    graph = torch_graph.TorchGraph()
    graph.capture_begin()
    if how == "aborted":  # the capture discarded: torch's graph object is replaced
        graph.abort_capture()
        assert modes == [("died", pools._RELAXED)] and mode == [0]
        return
    graph.capture_end()  # (instantiates: replay is torch's, bound)
    assert graph.replay.__self__ is graph._graph
    if how == "dropped":
        del graph
        expected = [("died", pools._RELAXED)]
    elif how == "collected":
        graph.cycle = graph
        del graph
        assert modes == []
        gc.collect()
        expected = [("died", pools._RELAXED)]
    else:
        graph.reset()
        expected = [("reset", pools._RELAXED), ("died", pools._RELAXED)]
    assert modes == expected and mode == [0]
