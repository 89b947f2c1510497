"""accelgraph_cli.Graph on a real GPU: every method, mode and option of the API."""

import os
import sys
import threading

import pytest

from accelgraph_cli import CaptureError, Graph, GraphStateError, graph_pool_handle

pytestmark = pytest.mark.gpu


def _warm(cupy, x):
    # Compile and load CuPy's kernels outside capture: module loading is not capturable.
    x += 1
    x *= 2
    x -= 2
    cupy.cuda.get_current_stream().synchronize()


def test_context_manager_captures_and_replays_eager_equal(cupy, stream):
    x = cupy.zeros(2000, dtype=cupy.float32)
    _warm(cupy, x)
    x.fill(0)
    g = Graph()
    with g:
        x += 1
        x *= 2
    # Capturing does not run the work.
    assert float(x.sum()) == 0.0
    for _ in range(3):
        g.replay()
    stream.synchronize()
    eager = cupy.zeros(2000, dtype=cupy.float32)
    for _ in range(3):
        eager += 1
        eager *= 2
    assert cupy.array_equal(x, eager)
    assert float(x[0]) == 14.0
    assert g.is_instantiated and not g.keep_graph


def test_with_stream_and_graph_as_documented(cupy):
    x = cupy.zeros(2000)
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        _warm(cupy, x)
        x.fill(0)
    graph = Graph()
    with s, graph:
        x += 1
    graph.replay()
    cupy.cuda.Device().synchronize()
    assert float(x[0]) == 1.0


def test_keep_graph_instantiates_lazily_and_explicitly(cupy, stream):
    x = cupy.zeros(16, dtype=cupy.float32)
    _warm(cupy, x)
    x.fill(0)
    g = Graph(keep_graph=True)
    g.capture_begin()
    x += 1
    g.capture_end()
    assert g.graph_handle != 0 and not g.is_instantiated
    g.replay()  # lazy instantiate
    assert g.is_instantiated
    g2 = Graph(keep_graph=True)
    g2.capture_begin()
    x += 10
    g2.capture_end()
    g2.instantiate()
    assert g2.is_instantiated
    g2.replay()
    stream.synchronize()
    assert float(x[0]) == 11.0


def test_instantiating_again_replaces_the_executable_and_replays_right(cupy, stream):
    x = cupy.zeros(16, dtype=cupy.float32)
    _warm(cupy, x)
    x.fill(0)
    g = Graph(keep_graph=True)
    with g:
        x += 1
    g.instantiate()
    first = g.exec_handle
    g.replay()
    g.instantiate()  # a new executable from the kept graph (e.g. after editing its nodes)
    assert g.exec_handle not in (0, first)
    g.replay()
    g.replay()
    stream.synchronize()
    assert float(x[0]) == 3.0
    g.reset()
    assert not g.is_instantiated and g.graph_handle == 0
    with pytest.raises(GraphStateError, match="before any capture"):
        g.replay()
    with g:  # the same object captures again after reset
        x *= 2
    g.replay()
    stream.synchronize()
    assert float(x[0]) == 6.0


def test_keep_graph_false_drops_underlying_graph(cupy, stream):
    x = cupy.zeros(16, dtype=cupy.float32)
    _warm(cupy, x)
    g = Graph()
    with g:
        x += 1
    assert g.graph_handle == 0 and g.exec_handle != 0
    with pytest.raises(GraphStateError, match="enable_debug_mode"):
        g.debug_dump("/tmp/never.dot")
    assert not os.path.exists("/tmp/never.dot")


def test_state_errors(cupy, stream):
    g = Graph()
    with pytest.raises(GraphStateError, match="before any capture"):
        g.replay()
    with pytest.raises(GraphStateError, match="without capture_begin"):
        g.capture_end()
    x = cupy.zeros(4, dtype=cupy.float32)
    _warm(cupy, x)
    g.capture_begin()
    try:
        with pytest.raises(GraphStateError, match="twice"):
            g.capture_begin()
        with pytest.raises(GraphStateError, match="during capture"):
            g.replay()
        x += 1
    finally:
        g.capture_end()
    with pytest.raises(GraphStateError, match="reset"):
        g.capture_begin()


@pytest.mark.parametrize("keep_graph", [False, True])
def test_abort_capture_on_a_captured_graph_changes_nothing(cupy, stream, keep_graph):
    # abort_capture is a no-op when not capturing: it once marked a captured graph as not
    # captured, the next capture was accepted, and replay still ran the first graph.
    x = cupy.zeros(4, dtype=cupy.float32)
    _warm(cupy, x)
    x.fill(0)
    g = Graph(keep_graph=keep_graph)
    with g:
        x += 1
    g.abort_capture()
    assert g.is_captured and not g.is_capturing
    with pytest.raises(GraphStateError, match="reset"):
        g.capture_begin()
    g.replay()
    stream.synchronize()
    assert float(x[0]) == 1.0


def test_legacy_default_stream_refused_and_recoverable(cupy):
    g = Graph()
    with cupy.cuda.Stream.null:
        with pytest.raises(CaptureError, match="legacy default stream"):
            g.capture_begin()
    assert not g.is_capturing
    # Nothing was left capturing: the same graph captures on a real stream.
    s = cupy.cuda.Stream(non_blocking=True)
    x = cupy.zeros(4, dtype=cupy.float32)
    with s:
        _warm(cupy, x)
        x.fill(0)
        with g:
            x += 3
        g.replay()
        s.synchronize()
    assert float(x[0]) == 3.0


def test_reset_and_recapture_with_new_settings(cupy, stream):
    x = cupy.zeros(8, dtype=cupy.float32)
    _warm(cupy, x)
    x.fill(0)
    g = Graph(capture_error_mode="global")
    with g:
        x += 1
    g.replay()
    first_pool = g.pool()
    g.reset()
    assert not g.is_captured
    with pytest.raises(GraphStateError):
        g.replay()
    shared = graph_pool_handle()
    g.graph_pool = shared
    g.capture_error_mode = "relaxed"
    with g:
        x += 100
    g.replay()
    stream.synchronize()
    assert float(x[0]) == 101.0
    assert g.pool() == shared != first_pool


def test_unsafe_call_fails_in_global_and_is_allowed_in_relaxed(cupy, stream):
    x = cupy.zeros(8, dtype=cupy.float32)
    _warm(cupy, x)
    g = Graph(capture_error_mode="global")
    with pytest.raises(CaptureError) as info:
        with g:
            x += 1
            cupy.cuda.runtime.malloc(1 << 20)  # potentially unsafe: forbidden in global mode
    assert "StreamCapture" in str(info.value) or "capture" in str(info.value).lower()
    assert info.value.cause is not None
    assert not g.is_capturing and not g.is_captured

    relaxed = Graph(capture_error_mode="relaxed")
    with relaxed:
        x += 1
        ptr = cupy.cuda.runtime.malloc(1 << 20)  # allowed in relaxed mode
    cupy.cuda.runtime.free(ptr)
    x.fill(0)
    relaxed.replay()
    stream.synchronize()
    assert float(x[0]) == 1.0


def test_thread_local_mode_lets_other_threads_call_unsafe_apis(cupy, stream):
    x = cupy.zeros(8, dtype=cupy.float32)
    _warm(cupy, x)
    results = {}

    def other_thread(key):
        try:
            ptr = cupy.cuda.runtime.malloc(1 << 20)
            cupy.cuda.runtime.free(ptr)
            results[key] = "ok"
        except Exception as exc:  # cudaErrorStreamCaptureImplicit / Unsupported
            results[key] = type(exc).__name__

    g = Graph(capture_error_mode="thread_local")
    with g:
        x += 1
        t = threading.Thread(target=other_thread, args=("thread_local",))
        t.start()
        t.join()
    assert results["thread_local"] == "ok"

    g2 = Graph(capture_error_mode="global")
    try:
        with g2:
            x += 1
            t = threading.Thread(target=other_thread, args=("global",))
            t.start()
            t.join()
    except CaptureError:
        pass  # a global capture may be invalidated by the other thread's call: that is the point
    assert results["global"] != "ok"


def test_bad_capture_error_mode_names_the_four():
    with pytest.raises(ValueError, match="'default', 'global', 'thread_local', 'relaxed'"):
        Graph(capture_error_mode="strict")


def test_allocation_in_global_mode_uses_the_graph_pool(cupy, stream):
    a = cupy.arange(1 << 16, dtype=cupy.float32)
    _warm(cupy, a)
    a[:] = cupy.arange(1 << 16, dtype=cupy.float32)
    a * 2 + 1  # load the out-of-place kernels eagerly: module loading is not capturable
    stream.synchronize()
    g = Graph(capture_error_mode="global")
    with g:
        y = a * 2 + 1  # new arrays allocated inside a global-mode capture
    g.replay()
    stream.synchronize()
    assert cupy.array_equal(y, cupy.arange(1 << 16, dtype=cupy.float32) * 2 + 1)
    assert g.pool_bytes() >= (1 << 16) * 4


def test_arrays_allocated_in_capture_stay_alive_with_the_graph(cupy, stream):
    a = cupy.ones(1 << 18, dtype=cupy.float32)
    _warm(cupy, a)
    expected = float(a[0]) * 3 + 1  # _warm leaves a == 2, so 7
    (a * 3) + 1  # load the out-of-place kernels eagerly: module loading is not capturable
    stream.synchronize()
    g = Graph()
    with g:
        tmp = a * 3
        out = tmp + 1
    out_ptr = out.data.ptr
    del tmp  # freed back to the graph's private pool, never to eager code
    # Eager arrays must not land on graph memory: fill them with a value replay never writes.
    eager = [cupy.full(1 << 18, -1, dtype=cupy.float32) for _ in range(4)]
    assert all(e.data.ptr != out_ptr for e in eager)
    g.replay()
    stream.synchronize()
    assert float(out[0]) == expected
    assert all(float(e[0]) == -1.0 for e in eager)


def _capture_temp_graph(cupy, a, pool):
    g = Graph(pool=pool)
    with g:
        t = a * 2  # a temporary freed inside the capture
        a_out = t + 1
        del t
    return g, a_out


def test_shared_pool_holds_less_than_private_pools(cupy, stream):
    n = 1 << 22  # 16 MiB of float32
    a = cupy.ones(n, dtype=cupy.float32)
    _warm(cupy, a)

    p1, _ = _capture_temp_graph(cupy, a, None)
    p2, _ = _capture_temp_graph(cupy, a, None)
    private_total = p1.pool_bytes() + p2.pool_bytes()

    s1 = Graph()
    with s1:
        t = a * 2
        del t
    s2 = Graph(pool=s1.pool())
    with s2:
        t = a * 2
        del t
    shared_total = s1.pool_bytes()
    assert s1.pool() == s2.pool()
    assert s2.pool_bytes() == shared_total
    assert shared_total < private_total, (shared_total, private_total)
    print(f"private pools: {private_total} B, shared pool: {shared_total} B")


def test_stream_ordered_allocation_replays_100_times(cupy, stream):
    n = 1 << 20
    src = cupy.arange(n, dtype=cupy.float32)
    out = cupy.zeros(n, dtype=cupy.float32)
    _warm(cupy, out)
    out[...] = src * 2 + 1  # load the kernels eagerly
    stream.synchronize()
    g = Graph(pool=graph_pool_handle("async"), capture_error_mode="global")
    g.enable_debug_mode()
    with g:
        tmp = src * 2  # MEM_ALLOC node
        out[...] = tmp + 1
        del tmp  # MEM_FREE node
    dot = g.debug_dot("verbose")
    assert "MEM_ALLOC" in dot and "MEM_FREE" in dot
    for _ in range(100):
        g.replay()
    stream.synchronize()
    assert cupy.array_equal(out, cupy.arange(n, dtype=cupy.float32) * 2 + 1)


def test_async_pool_outputs_are_freed_quietly_with_or_without_a_replay(cupy, stream,
                                                                        monkeypatch):
    # An output a graph allocates and keeps (MEM_ALLOC without MEM_FREE) is backed by memory
    # only once the graph has been launched: dropped before, nothing is freed (CuPy's
    # cudaFreeAsync would fail, reported as an ignored exception); after, it is freed.
    unraised = []
    monkeypatch.setattr(sys, "unraisablehook", unraised.append)
    src = cupy.arange(1 << 16, dtype=cupy.float32)
    _warm(cupy, src)
    src * 2  # load the kernel eagerly
    stream.synchronize()
    # (replays, drop the graph before its output, synchronize before dropping the output)
    for replays, graph_first, synchronize in ((0, False, True), (0, True, False),
                                              (1, False, True), (3, True, False),
                                              (2, False, False)):
        g = Graph(pool=graph_pool_handle("async"))
        with g:
            out = src * 2
        memory = out.data.mem._owner.memory  # the MemoryAsync behind the output
        for _ in range(replays):
            g.replay()
        if synchronize:
            stream.synchronize()
            if replays:
                assert cupy.array_equal(out, src * 2)
        if graph_first:
            del g
        del out
        assert (memory.ptr != 0) is bool(replays)  # 0: CuPy frees nothing
        del memory  # a launched output is freed here
        stream.synchronize()
        if not graph_first:
            del g
    assert unraised == []


def test_an_async_keep_graph_graph_instantiates_again(cupy, stream):
    # A graph with memory nodes may have one executable at a time: instantiating again
    # replaces the executable, and the graph replays from the new one.
    src = cupy.arange(4096, dtype=cupy.float32)
    out = cupy.zeros_like(src)
    _warm(cupy, src)
    out[...] = src * 3  # load the kernels eagerly
    stream.synchronize()
    out.fill(0)
    g = Graph(keep_graph=True, pool=graph_pool_handle("async"))
    with g:
        tmp = src * 3
        out[...] = tmp
        del tmp
    g.instantiate()
    g.replay()
    g.instantiate()  # (CUDA may hand the new executable the old one's handle)
    assert g.exec_handle != 0
    out.fill(0)
    for _ in range(3):
        g.replay()
    stream.synchronize()
    assert cupy.array_equal(out, src * 3)


def test_an_async_output_outlives_its_executable_and_is_freed_after(cupy, stream,
                                                                    monkeypatch):
    # instantiate() again destroys the old executable first (CUDA allows one per graph with
    # memory nodes); the last launch's output, still held, stays readable, and dropped
    # afterwards it is freed quietly while the new executable replays.
    unraised = []
    monkeypatch.setattr(sys, "unraisablehook", unraised.append)
    src = cupy.arange(4096, dtype=cupy.float32)
    _warm(cupy, src)
    src * 3  # load the kernel eagerly
    stream.synchronize()
    g = Graph(keep_graph=True, pool=graph_pool_handle("async"))
    with g:
        out = src * 3
    g.replay()
    stream.synchronize()
    g.instantiate()
    assert cupy.array_equal(out, src * 3)
    del out
    for _ in range(3):
        g.replay()
    stream.synchronize()
    assert unraised == []


def test_an_output_dropped_before_more_replays_does_not_outlive_its_graph(cupy, stream):
    # Each launch makes the graph's outputs again at their one address. Dropped after the
    # first replay, the output was freed once (before any, nothing was freed); the next
    # replays made it again with no owner, and that allocation outlived the graph for good
    # (trim could not take it back: 32 MiB a graph). It is now freed with the executable.
    import gc

    from accelgraph_cli.cuda import device, pools

    runtime, _ = device.bindings()

    def held_after_trim():
        gc.collect()
        cupy.cuda.Device().synchronize()
        device.check("cudaDeviceGraphMemTrim", runtime.cudaDeviceGraphMemTrim(0))
        return pools._graph_mem_attribute("cudaGraphMemAttrUsedMemCurrent", 0)

    src = cupy.arange(1 << 20, dtype=cupy.float32)
    _warm(cupy, src)
    src * 2  # load the kernel eagerly
    before = held_after_trim()
    for launched in (True, False, True):  # the output dropped after a launch, or before any
        g = Graph(pool=graph_pool_handle("async"))
        with g:
            out = src * 2
        if launched:
            g.replay()
            stream.synchronize()
            assert cupy.array_equal(out, src * 2)
        del out
        g.replay()
        g.replay()
        del g
    assert held_after_trim() == before


def test_an_async_pool_allocation_on_a_stream_not_capturing_is_freed_as_usual(cupy, stream):
    # Inside an async-pool capture, an allocation on a side stream never joined to it is an
    # eager cudaMallocAsync, not a graph allocation: dropped, it goes back to CUDA's pool
    # even though the graph was never launched (it used to be kept, never freed), and
    # dropped during the capture, its free does not invalidate it.
    from accelgraph_cli.cuda import pools

    src = cupy.arange(4096, dtype=cupy.float32)
    _warm(cupy, src)
    token = graph_pool_handle("async")
    side = cupy.cuda.Stream(non_blocking=True)
    g = Graph(pool=token)  # global mode, which refuses a free on a stream it does not capture
    with g:
        out = src * 2  # recorded: a graph allocation
        with side:
            eager = cupy.empty(1 << 20, dtype=cupy.float32)
            dropped = cupy.empty(1 << 10, dtype=cupy.float32)
        del dropped  # freed during the capture (relaxed): the capture goes on
    side.synchronize()
    cupy_pool = pools.get_pool(token)._pool
    used = cupy_pool.used_bytes()
    assert used >= eager.nbytes
    del eager
    side.synchronize()
    assert cupy_pool.used_bytes() <= used - (1 << 22)
    g.replay()
    stream.synchronize()
    assert cupy.array_equal(out, src * 2)


def _launched_async_output(cupy, src):
    """An async-pool graph of ``src * 2`` on the current stream, replayed once and
    synchronized: (the graph, its output, now memory that CuPy may free)."""
    graph = Graph(pool=graph_pool_handle("async"))
    with graph:
        out = src * 2
    graph.replay()
    cupy.cuda.get_current_stream().synchronize()
    return graph, out


def test_dropping_a_replayed_async_output_during_a_global_capture_keeps_that_capture(cupy):
    # The output is freed (cudaFreeAsync on its own stream, which is not capturing) while
    # this thread captures another graph in global mode, which forbids that call: the free
    # goes relaxed, so the other capture is not invalidated.
    first, second = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    src = cupy.arange(1 << 16, dtype=cupy.float32)
    with first:
        src * 2  # load the kernels eagerly
        src + 1
        first.synchronize()
        g1, out = _launched_async_output(cupy, src)
    with second:
        g2 = Graph(capture_error_mode="global")
        with g2:
            y = src + 1
            del out
        g2.replay()
        second.synchronize()
    assert cupy.array_equal(y, src + 1)


def test_an_async_output_dropped_inside_the_next_capture_is_not_recorded_into_it(
        cupy, stream, monkeypatch):
    # The output of the last launch, dropped while the next graph captures on its stream:
    # CuPy's cudaFreeAsync was recorded into that graph (a MEM_FREE node freeing memory it
    # did not allocate, at every replay). The free now waits until the capture has ended.
    from accelgraph_cli.cuda import pools

    unraised = []
    monkeypatch.setattr(sys, "unraisablehook", unraised.append)
    src = cupy.arange(1 << 16, dtype=cupy.float32)
    _warm(cupy, src)
    src * 2, src + 1  # load the kernels eagerly
    stream.synchronize()
    first, out = _launched_async_output(cupy, src)
    second = Graph(keep_graph=True)
    second.enable_debug_mode()
    waiting = pools.deferred_frees()
    with second:
        y = src + 1
        del out
        assert pools.deferred_frees() == waiting + 1
    assert pools.deferred_frees() == 0  # freed as the capture ended
    assert "MEM_FREE" not in second.debug_dot("verbose")
    second.instantiate()
    for _ in range(3):
        second.replay()
        first.replay()
    stream.synchronize()
    assert cupy.array_equal(y, src + 1) and unraised == []


def test_debug_dump_writes_cuda_dot_with_kernel_names(cupy, stream, tmp_path):
    x = cupy.zeros(64, dtype=cupy.float32)
    _warm(cupy, x)
    g = Graph()
    g.enable_debug_mode()
    with g:
        x += 1
        x *= 2
    path = tmp_path / "g.dot"
    g.debug_dump(path)
    text = path.read_text()
    assert text.startswith("digraph")
    assert "cupy_add" in text and "cupy_multiply" in text
    basic = tmp_path / "basic.dot"
    g.debug_dump(basic, flags="basic")
    assert basic.read_text().startswith("digraph")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".accelgraph-")] == []
    kept = Graph(keep_graph=True)
    with kept:
        x += 1
    assert "cupy_add" in kept.debug_dot()


def test_failure_in_body_recovers_and_process_captures_again(cupy, stream):
    x = cupy.zeros(32, dtype=cupy.float32)
    _warm(cupy, x)
    x.fill(0)
    g = Graph()
    with pytest.raises(CaptureError) as info:
        with g:
            x += 1
            raise ZeroDivisionError("scenario bug")
    assert isinstance(info.value.cause, ZeroDivisionError)
    assert cupy.cuda.runtime.streamIsCapturing(stream.ptr) == 0
    # D2H copy during capture: refused by CuPy/CUDA, recovered from.
    g_bad = Graph()
    with pytest.raises(CaptureError):
        with g_bad:
            x += 1
            x.get()
    # The same process (and the same Graph objects) capture and replay again.
    ok = Graph()
    with ok:
        x += 5
    ok.replay()
    g.capture_begin()
    x += 1
    g.capture_end()
    g.replay()
    stream.synchronize()
    assert float(x[0]) == 6.0


def test_reset_releases_pool(cupy, stream):
    a = cupy.ones(1 << 22, dtype=cupy.float32)
    _warm(cupy, a)
    g = Graph()
    with g:
        t = a * 2
        del t
    assert g.pool_bytes() >= (1 << 22) * 4
    pool = g._pool
    g.reset()
    assert g.pool_bytes() == 0
    assert pool.bytes_held() == 0


def test_released_pool_memory_is_reused_by_the_next_graph_not_by_eager_code(cupy, stream):
    import gc

    from accelgraph_cli.cuda import pools

    gc.collect()
    pools.release_spare(0)  # with earlier tests' draining pools swept: no spare memory left
    a = cupy.ones(1 << 20, dtype=cupy.float32)
    _warm(cupy, a)
    g = Graph()
    with g:
        t = a * 2
        ptr = t.data.ptr
        del t
    held = g.pool_bytes()
    assert held >= (1 << 20) * 4 and pools.spare_bytes() == 0
    g.reset()
    assert pools.spare_bytes() == held  # kept for graphs, not freed, not given to eager code
    eager = a * 3  # CuPy's own pool never hands out spare graph memory
    assert eager.data.ptr != ptr
    g2 = Graph()
    with g2:
        t = a * 2
        reused = t.data.ptr
        del t
    assert reused == ptr and pools.spare_bytes() == 0  # the next capture took it: no cudaMalloc
    assert g2.pool_bytes() == held
    g2.replay()
    stream.synchronize()
    g2.reset()
    assert pools.release_spare(0) == held and pools.spare_bytes() == 0


def test_graphs_captured_one_after_another_leave_no_pool_behind(cupy, stream):
    # Each graph's private pool is forgotten once no graph uses it and its memory is back,
    # also when the step's output outlived its graph (it drains when the next capture begins).
    import gc

    from accelgraph_cli.cuda import pools

    gc.collect()
    pools.release_spare(0)
    a = cupy.ones(1 << 16, dtype=cupy.float32)
    _warm(cupy, a)
    before = set(pools._registry)
    for _ in range(20):
        graph = Graph()
        with graph:
            out = a * 2  # rebinding frees the previous graph's output
        graph.replay()
        stream.synchronize()
        graph.reset()
    del out, graph
    last = Graph()
    with last:
        t = a * 2
        del t
    last.reset()
    assert not set(pools._registry) - before
    assert pools.release_spare(0) > 0  # their memory went to spare graph memory, not lost


def test_an_output_that_outlives_its_graph_returns_as_spare_memory(cupy, stream, monkeypatch):
    # A step's output kept after its graph is gone (what a caller that reads results does):
    # its block goes back to a pool no graph uses. That pool drains before the next capture,
    # so the block becomes spare and the next graph takes it: no cudaMalloc per capture and
    # no memory stranded in dead pools.
    import gc

    from accelgraph_cli.cuda import pools

    gc.collect()  # arrays of earlier tests held only by reference cycles die now, not later
    pools.release_spare(0)  # sweeps their pools first: spare memory starts empty
    a = cupy.ones(1 << 20, dtype=cupy.float32)
    _warm(cupy, a)
    g = Graph()
    with g:
        kept = a * 2
    ptr = kept.data.ptr
    draining = pools.draining_pools()  # pools of earlier tests whose arrays still live
    g.reset()
    assert pools.draining_pools() == draining + 1 and pools.spare_bytes() == 0  # kept lives
    del kept  # back to its pool, which no graph uses
    mallocs = []
    real_malloc = pools._cuda_malloc
    monkeypatch.setattr(pools, "_cuda_malloc",
                        lambda *args: mallocs.append(args) or real_malloc(*args))
    outputs, loop_pools = [], []
    for _ in range(6):
        graph = Graph()
        with graph:
            out = a * 2
        outputs.append(out.data.ptr)
        loop_pools.append(pools.get_pool(graph.pool()))
        graph.replay()
        stream.synchronize()
        graph.reset()
        assert float(out[0]) == 4.0  # _warm left a at 2 and the replay wrote 2 * 2
        # `out` lives on into the next capture, as `kept` did; rebinding it there frees it
    # The first capture takes kept's block. The second needs another (the first output is
    # alive until the step rebinds it): one cudaMalloc. From then on the two blocks alternate.
    assert outputs[0] == ptr and len(mallocs) == 1 and len(set(outputs)) == 2
    assert outputs[2:] == outputs[:2] * 2
    del out, graph
    last = Graph()
    with last:
        kept = a * 2
    last.reset()
    # every pool of the loop was swept when this capture began (their outputs were gone)
    assert not any(pool.bytes_held() for pool in loop_pools)
    assert pools.get_pool(last.pool()).bytes_held() > 0  # kept is still in use
    del kept  # into the pool of `last`, which no graph uses: release_spare sweeps it too
    assert pools.release_spare(0) >= 2 * 4 * (1 << 20)  # the loop's other block and kept's
    assert pools.get_pool(last.pool()).bytes_held() == 0


def test_a_small_pool_no_graph_uses_passes_its_blocks_on_cached(cupy, stream):
    # The pattern of a small graph captured again and again, its output read after its
    # graph is gone: the block goes on in its CuPy pool, still cached, to the next private
    # pool captured on the same stream, whose allocation takes it inside CuPy (no spare
    # memory in between). On another stream the next pool gets it as spare memory.
    import gc

    from accelgraph_cli.cuda import pools

    gc.collect()
    pools.release_spare(0)
    a = cupy.ones(1024, dtype=cupy.float32)
    _warm(cupy, a)
    g = Graph()
    with g:
        out = a * 2
    ptr, cupy_pool = out.data.ptr, g._pool._pool
    g.replay()
    stream.synchronize()
    del out  # back to the pool, cached
    g.reset()  # the last graph lets go: every block free and few, so passed on whole
    assert pools.spare_bytes() == 4096 and not pools._spare
    g2 = Graph()
    with g2:
        out2 = a * 3
    assert g2._pool._pool is cupy_pool and out2.data.ptr == ptr and pools.spare_bytes() == 0
    g2.replay()
    stream.synchronize()
    assert float(out2[0]) == 6.0  # _warm left a at 2
    del out2
    g2.reset()
    other = cupy.cuda.Stream(non_blocking=True)
    with other:
        g3 = Graph()
        with g3:
            out3 = a * 4
        g3.replay()
        other.synchronize()
    assert out3.data.ptr == ptr and pools.spare_bytes() == 0  # made spare, then taken
    assert float(out3[0]) == 8.0
    del out3
    g3.reset()
    assert pools.release_spare(0) == 4096 and pools.spare_bytes() == 0


def test_garbage_collection_takes_the_same_teardown_path_as_reset(cupy, stream):
    import gc

    a = cupy.ones(1 << 22, dtype=cupy.float32)
    _warm(cupy, a)
    for keep_graph in (False, True):
        g = Graph(keep_graph=keep_graph)
        with g:
            t = a * 2
            del t
        g.replay()
        pool = g._pool
        assert pool.users == 1 and pool.bytes_held() >= (1 << 22) * 4
        del g
        gc.collect()
        assert pool.users == 0 and pool.bytes_held() == 0
    # a graph dropped in the middle of a capture ends that capture: the stream captures again
    g = Graph()
    g.capture_begin()
    _ = a + 1
    del g, _
    gc.collect()
    again = Graph()
    with again:
        b = a + 3
    again.replay()
    stream.synchronize()
    assert float(b[0]) == 5.0  # _warm left a at (1 + 1) * 2 - 2 = 2


@pytest.mark.parametrize("keep_graph", [False, True])
@pytest.mark.parametrize("how", ["reset", "collected"])
def test_a_graph_dropped_during_another_global_capture_is_destroyed_quietly(
        cupy, stream, monkeypatch, keep_graph, how):
    # Seen in the GPU tier: a graph the collector found in a cycle while another graph
    # captured in global mode. Its destroy calls were refused there
    # (cudaErrorStreamCaptureUnsupported), which invalidated that capture; the executable
    # leaked, and CuPy's Graph printed "Exception ignored in:
    # 'cupy.cuda.graph.Graph.__dealloc__'" with a traceback. They go in relaxed mode, CuPy's
    # Graph (keep_graph=False) too, though its launch is the graph's replay: nothing is
    # printed, and the capture under way is not disturbed.
    import gc

    a = cupy.ones(1 << 16, dtype=cupy.float32)
    _warm(cupy, a)
    ignored = []
    monkeypatch.setattr(sys, "unraisablehook", ignored.append)
    old = Graph(keep_graph=keep_graph)
    with old:
        _ = a * 2
    old.replay()
    if how == "collected":
        old.cycle = old  # only the collector can free it now
    gc.collect()  # (garbage of earlier tests, which a collection during the capture would meet)
    new = Graph(capture_error_mode="global")
    new.capture_begin()
    b = a + 3
    if how == "reset":
        old.reset()
    else:
        del old
        assert not gc.isenabled()  # no collection runs by itself while capturing
        assert gc.collect() > 0  # (asked for: it runs, and finds the graph)
    new.capture_end()
    new.replay()
    stream.synchronize()
    assert [(hook.exc_type, str(hook.exc_value)) for hook in ignored] == []
    assert float(b[0]) == 5.0 and float(b[-1]) == 5.0  # _warm left a at 2
