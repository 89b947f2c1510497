"""accelgraph_cli.Graph: the torch.accelerator.Graph API, implemented on CuPy streams.

A graph records the device work enqueued on a stream once and replays it later with far less
launch overhead::

    x = cupy.zeros(2000)
    stream = cupy.cuda.Stream(non_blocking=True)
    graph = Graph()
    with stream, graph:
        x += 1
    graph.replay()

This module imports CuPy only when a graph is captured, so constructing a Graph (and argument
validation) works on machines without a GPU.
"""

from __future__ import annotations

import functools
import os
import tempfile
from types import TracebackType

from .. import gcpause
from ..enums import CaptureErrorMode, PoolKind, choice
from ..errors import CaptureError, CudaError, GraphStateError
from . import device as _cuda
from . import pools

#: Capture error mode names -> cudaStreamCaptureMode values (derived from CaptureErrorMode).
#: "default" is what PyTorch uses on CUDA: global.
CAPTURE_ERROR_MODES = {mode.value: mode.cuda_value for mode in CaptureErrorMode}

#: cudaGraphDebugDotFlags by name. "verbose" asks CUDA for every detail it can print.
DEBUG_DOT_FLAGS = {
    "basic": 0,
    "verbose": 1 << 0,
    "kernel_params": 1 << 2,
    "memcpy_params": 1 << 3,
    "memset_params": 1 << 4,
    "host_params": 1 << 5,
    "event_params": 1 << 6,
    "ext_semas_signal_params": 1 << 7,
    "ext_semas_wait_params": 1 << 8,
    "kernel_attributes": 1 << 9,
    "handles": 1 << 10,
    "mem_alloc_params": 1 << 11,
    "mem_free_params": 1 << 12,
    "batch_mem_op_params": 1 << 13,
    "extra_topo_info": 1 << 14,
    "conditional_params": 1 << 15,
}

_INSTANTIATE_AUTO_FREE_ON_LAUNCH = 1  # cudaGraphInstantiateFlagAutoFreeOnLaunch

_ASYNC = PoolKind.ASYNC  # (a global: an Enum class's attribute is read through its metaclass)


def capture_mode_value(capture_error_mode: CaptureErrorMode | str) -> int:
    """The cudaStreamCaptureMode for a capture error mode (or its name); ValueError naming the four."""
    return CaptureErrorMode.parse(capture_error_mode, "capture_error_mode").cuda_value


def debug_dot_flags(flags) -> int:
    """Turn ``"verbose"``, ``"basic"``, ``"kernel_params|handles"`` or an int into the flag bits."""
    if isinstance(flags, bool):
        raise ValueError(f"flags must be a name or an int, not {flags!r}")
    if isinstance(flags, int):
        if flags < 0:
            raise ValueError(f"flags must be non-negative, got {flags}")
        return flags
    if isinstance(flags, str):
        value = 0
        for given in flags.replace(",", "|").split("|"):
            part = given.strip().lower().replace("-", "_")
            if part not in DEBUG_DOT_FLAGS:
                raise ValueError(  # the flag as given, not as normalised ("-1", not "_1")
                    f"unknown DOT flag {given.strip()!r}; known: {', '.join(DEBUG_DOT_FLAGS)}"
                )
            value |= DEBUG_DOT_FLAGS[part]
        return value
    raise ValueError(f"flags must be a name or an int, not {flags!r}")


def _release_quietly(resources: _Resources) -> None:
    """The garbage-collection path: at interpreter exit CUDA may already be gone."""
    try:
        resources.release()
    except Exception:
        pass


class _Resources:
    """The CUDA handles and pool hold a Graph owns. :meth:`release` is the one teardown path:
    ``reset()``, a failed capture and garbage collection all end here. Collection goes
    through this object's ``__del__``, which runs once the Graph is gone and never sees it, so
    it cannot resurrect it (as ``weakref.finalize`` would, without registering a finalizer
    per graph, which cost 0.85 µs a graph in a CPU loop). Unlike a finalizer it need not run
    at interpreter exit for a graph still alive then; the process's CUDA context goes with
    the process."""

    __slots__ = ("graph", "exec", "owner", "pool", "stream", "capturing", "restore_allocator",
                 "async_capture", "gc_paused")

    def __init__(self) -> None:
        self.graph = 0  # cudaGraph_t as an int, while visible (keep_graph or debug mode)
        self.exec = 0  # cudaGraphExec_t, once instantiated
        self.owner = None  # the CuPy Graph whose executable serves replay (keep_graph=False)
        self.pool = None  # pools.GraphPool held while a capture or a graph uses it
        self.stream = None  # the stream a capture runs on
        self.capturing = False
        self.restore_allocator = None  # puts back the allocator the capture replaced
        self.async_capture = None  # pools.AsyncCapture of an async-pool capture
        self.gc_paused = False  # whether this capture holds a pause of the cyclic collector

    def __del__(self, _release=_release_quietly) -> None:
        # Bound here: at interpreter exit this module's globals may already be gone.
        _release(self)

    def finish_capture(self, captured: bool) -> None:
        """Restore the allocator; without a graph, let go of the stream and the pool."""
        if self.gc_paused:  # first: nothing below may leave the collector off for good
            self.gc_paused = False
            gcpause.resume_after_capture()
        if self.restore_allocator is not None:
            self.restore_allocator()
            self.restore_allocator = None
        if not captured:  # (its allocations keep the record, closed as the capture ended)
            self.async_capture = None
        self.capturing = False
        if not captured:
            self.stream = None
            if self.pool is not None:
                pools.release(self.pool)
                self.pool = None
        if pools.deferred_frees():  # frees that waited for this capture to end
            pools.free_deferred()

    def end_capture_discarding(self) -> None:
        """End a capture in progress and discard what it recorded (no-op when not capturing)."""
        if not self.capturing:
            return
        if self.async_capture is not None:
            self.async_capture.open = False  # first: what it allocated is discarded with it
        try:
            runtime = _cuda.require_cuda().cuda.runtime
            try:
                graph = runtime.streamEndCapture(self.stream.ptr)
            except Exception:
                graph = 0  # invalidated capture: ending it is all that was needed
            if graph:
                with pools.relaxed_or_current_mode():  # (another thread may be capturing)
                    runtime.graphDestroy(graph)
        finally:
            self.finish_capture(captured=False)

    def destroy_exec(self) -> None:
        exec_, self.exec = self.exec, 0
        if exec_ and self.async_capture is not None:
            self.async_capture.free_relaunched()  # (never raises)
        # An executable CuPy instantiated lives as long as the owner; release() drops both.
        if exec_ and (self.owner is None or exec_ != int(self.owner.graphExec)):
            _cuda.require_cuda().cuda.runtime.graphExecDestroy(exec_)

    def destroy_graph(self) -> None:
        """Drop the captured graph (a graph CuPy holds goes with its owner)."""
        graph, self.graph = self.graph, 0
        if graph and self.owner is None:
            _cuda.require_cuda().cuda.runtime.graphDestroy(graph)

    def release(self) -> None:
        """Abort a capture in progress, destroy the executable and the graph, drop the CuPy
        owner and this graph's hold on its pool.

        The handles go in relaxed capture mode: a graph dropped while a global-mode capture
        runs (reset() on one graph while another captures, or the collector finding it in a
        cycle during a capture) would otherwise have each destroy refused, the executable
        leaked and CuPy print an ignored exception with its traceback. Destroying them
        waits for nothing (an executable still running is freed as it completes), so the
        capture is not disturbed."""
        try:
            self.end_capture_discarding()
        finally:
            try:
                if self.exec or self.graph or self.owner is not None:
                    with pools.relaxed_or_current_mode():
                        try:
                            self.destroy_exec()
                            self.destroy_graph()
                        finally:
                            self.owner = None  # (CuPy's Graph destroys what it holds as it dies)
            finally:  # whatever failed above, the pool and the stream are let go of
                self.async_capture = None  # (its allocations keep the record they need)
                if self.pool is not None:
                    pools.release(self.pool)
                    self.pool = None
                self.stream = None


def _held(name: str) -> property:
    """A Graph attribute that lives in its _Resources (so its teardown can reach it)."""
    return property(lambda self: getattr(self._res, name),
                    lambda self, value: setattr(self._res, name, value))


class GraphBase:
    """What Graph (CuPy) and TorchGraph (torch) share on top of their own capture_end,
    abort_capture and debug_dump: the capture error mode setting, the context manager's exit,
    debug_dump's state check and debug_dot."""

    @property
    def capture_error_mode(self) -> CaptureErrorMode:
        """The capture error mode used by the next capture (see Graph's docstring): set a mode
        or its name, not during a capture."""
        return self._capture_error_mode

    @capture_error_mode.setter
    def capture_error_mode(self, value: CaptureErrorMode | str) -> None:
        mode = CaptureErrorMode.parse(value, "capture_error_mode")
        if getattr(self, "_capturing", False):
            raise GraphStateError("capture_error_mode cannot change during a capture")
        self._capture_error_mode = mode

    def _refuse_pool_change(self) -> None:
        """GraphStateError where graph_pool may not change: during a capture, and while the
        graph holds a captured graph (its memory is in the pool pool() names: that must stay
        true). Read with getattr: a setter may run before __init__ has set them."""
        if getattr(self, "_capturing", False):
            raise GraphStateError("graph_pool cannot change during a capture")
        if getattr(self, "_captured", False):
            raise GraphStateError("graph_pool cannot change while this graph holds a captured "
                                  "graph; call reset() first")

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        """End the capture. If the body raised, discard the capture and raise CaptureError;
        KeyboardInterrupt, SystemExit and other BaseExceptions that are not Exceptions
        propagate unchanged once the capture is discarded."""
        if exc is None:
            self.capture_end()
            return False
        try:
            self.abort_capture()
        except Exception as cleanup:
            if not isinstance(exc, Exception):  # the interrupt, not the cleanup, is the news
                return False
            raise CaptureError(f"capture failed: {_describe(exc)}; discarding it failed too: "
                               f"{_describe(cleanup)}", exc) from exc
        if isinstance(exc, CaptureError) or not isinstance(exc, Exception):
            return False
        raise CaptureError(f"capture failed and was discarded: {_describe(exc)}", exc) from exc

    def _check_dumpable(self, held: bool) -> None:
        """GraphStateError unless a captured graph is there for debug_dump (``held``: this
        object still has the cudaGraph_t)."""
        if self._capturing:
            raise GraphStateError("debug_dump called during capture; call capture_end first")
        if held:
            return
        if self._captured:
            raise GraphStateError(
                "debug_dump needs the captured graph, which was dropped at instantiation: call "
                "enable_debug_mode() before capture_end, or use Graph(keep_graph=True)"
            )
        raise GraphStateError("debug_dump called before any capture: capture a graph first")

    def debug_dot(self, flags: str | int = "verbose") -> str:
        """The DOT text debug_dump would write, as a string (same requirements)."""
        fd, tmp = tempfile.mkstemp(prefix="accelgraph-", suffix=".dot")
        os.close(fd)
        try:
            self.debug_dump(tmp, flags)
            with open(tmp, encoding="utf-8", errors="replace") as fh:
                return fh.read()
        finally:
            os.unlink(tmp)


class Graph(GraphBase):
    """A CUDA graph captured from a CuPy stream and replayed on demand.

    Args:
        keep_graph: when False (the default), ``capture_end`` instantiates the executable graph
            and discards the underlying, editable ``cudaGraph_t``. When True, the underlying
            graph is kept after ``capture_end`` and is not instantiated then: ``instantiate()``
            does it, or the first ``replay()`` does.
        pool: a pool token (``tuple[int, int]``) from another graph's :meth:`pool` or from
            :func:`accelgraph_cli.graph_pool_handle`. Graphs given the same token allocate from
            one pool, which lowers memory use when they are replayed in capture order. None:
            this graph gets a private pool of its own. A torch pool token is refused
            (ValueError): TorchGraph takes those.
        capture_error_mode: "default" (= "global", as PyTorch does on CUDA), "global",
            "thread_local" or "relaxed"; maps to cudaStreamCaptureModeGlobal/ThreadLocal/Relaxed.
            Global forbids potentially unsafe API calls (cudaMalloc, synchronous calls) in any
            thread while this capture runs; thread_local only in this thread; relaxed allows
            them in this thread except those that conflict with capture directly.

    ``graph_pool`` and ``capture_error_mode`` are attributes: after :meth:`reset` they can be
    changed before the next capture (``graph_pool`` not while the graph holds a captured
    graph, whose memory is in the pool :meth:`pool` names).
    """

    def __init__(self, keep_graph: bool = False, *, pool: tuple[int, int] | None = None,
                 capture_error_mode: CaptureErrorMode | str = CaptureErrorMode.DEFAULT) -> None:
        # With keep_graph=False (and a private or shared pool) the capture ends through CuPy's
        # Stream.end_capture, and the CuPy Graph it returns (_res.owner) holds the executable
        # and serves replay; otherwise this object owns the raw cudaGraph_t. See instantiate().
        self._res = _Resources()
        self.keep_graph = bool(keep_graph)
        # The setters' checks without their "not during a capture" one: a new graph is not
        # capturing (going through the setters cost a capture ~1 µs).
        self._graph_pool, self._pool_entry = _checked_pool(pool)
        self._capture_error_mode = choice(CaptureErrorMode, capture_error_mode,
                                          "capture_error_mode")
        self._debug = False
        self._captured = False

    _graph = _held("graph")
    _exec = _held("exec")
    _pool = _held("pool")
    _capturing = _held("capturing")

    # -- settings -------------------------------------------------------------------------

    @property
    def graph_pool(self):
        """The pool token the next capture allocates from (None: a private pool); set it
        before a capture, or after reset(), not while this graph holds a captured graph."""
        return self._graph_pool

    @graph_pool.setter
    def graph_pool(self, value) -> None:
        value, entry = _checked_pool(value)
        self._refuse_pool_change()
        self._graph_pool, self._pool_entry = value, entry

    @property
    def is_capturing(self) -> bool:
        """True between capture_begin and capture_end."""
        return self._capturing

    @property
    def is_captured(self) -> bool:
        """True once a capture has ended and until reset()."""
        return self._captured

    @property
    def is_instantiated(self) -> bool:
        """True once an executable graph exists (replay will not instantiate)."""
        return bool(self._exec)

    # -- capture --------------------------------------------------------------------------

    def pool(self) -> tuple[int, int]:
        """An opaque token naming this graph's memory pool.

        Pass it as ``pool=`` to another Graph to hint that they share it. Asking before the
        first capture creates this graph's private pool, so graphs can be set up to share one
        before either is captured.
        """
        if self._graph_pool is None:
            entry = pools.create(PoolKind.PRIVATE)
            self._graph_pool, self._pool_entry = entry.token, entry
        return self._graph_pool

    def capture_begin(self) -> None:
        """Start capturing the work enqueued on the current CuPy stream.

        Uses the pool and capture error mode set on this graph. Everything enqueued on that
        stream afterwards is recorded, not run, until :meth:`capture_end`. Allocations made by
        CuPy in this thread during the capture come from the graph's pool.

        Raises GraphStateError if this graph is capturing or already holds a graph (call
        :meth:`reset` first), CaptureError on the legacy default stream (CUDA cannot capture it:
        use ``with cupy.cuda.Stream(non_blocking=True):``) or when CUDA refuses to begin.
        """
        res = self._res  # read once: capture is a hot path (serving captures dozens of graphs)
        if res.capturing:
            raise GraphStateError("capture_begin called twice: this graph is already capturing")
        if self._captured:
            raise GraphStateError(
                "this graph already holds a captured graph; call reset() before capturing again"
            )
        cupy = _cuda.require_cuda()
        stream = cupy.cuda.get_current_stream()
        if stream.ptr == 0:
            raise CaptureError(
                "cannot capture on the legacy default stream: CUDA forbids it; capture on a "
                "stream of your own, e.g. `with cupy.cuda.Stream(non_blocking=True), graph:`"
            )
        mode = self._capture_error_mode.cuda_value
        if self._debug and not self.keep_graph:
            _cupy_keeps_captured_graph(cupy)  # learn it now: it captures, so not mid-capture
        if self._pool_entry is None:
            self.pool()
        pool = self._pool_entry = pools.hold(self._pool_entry)
        capture = pools.AsyncCapture() if pool.kind is _ASYNC else None
        restore_allocator = None
        # No cyclic collection while capturing: garbage it would find then (a graph left in
        # a cycle) is destroyed through CUDA calls a global-mode capture forbids, each
        # refused and invalidating the capture. It runs after.
        gcpause.pause_for_capture()
        try:  # (from here on the pool is held: a failure lets go of it)
            restore_allocator = _use_allocator(cupy, pool.capture_allocator(capture, stream.ptr))
            stream.begin_capture(mode)
        except BaseException as exc:  # (an interrupt too: nothing may stay paused or held)
            gcpause.resume_after_capture()
            if restore_allocator is not None:
                restore_allocator()
            pools.release(pool)
            if not isinstance(exc, Exception):
                raise
            raise CaptureError(f"CUDA refused to begin capture: {_describe(exc)}", exc) from exc
        res.pool = pool
        res.stream = stream
        res.restore_allocator = restore_allocator
        res.async_capture = capture
        res.gc_paused = True
        res.capturing = True

    def capture_end(self) -> None:
        """Stop capturing on the stream the capture began on; the graph can then be replayed.

        With ``keep_graph=False`` this also instantiates the executable graph (the cost of
        instantiation is paid here, not at the first replay) and drops the underlying graph
        unless debug mode is on. If CUDA reports the capture invalid (an illegal call was made
        during it), the partial graph is discarded and CaptureError is raised; the graph is then
        empty and can capture again.
        """
        res = self._res
        if not res.capturing:
            raise GraphStateError("capture_end called without capture_begin")
        stream = res.stream
        through_cupy = (
            not self.keep_graph
            and res.pool.kind is not _ASYNC
            and (not self._debug or _KEEPS_GRAPH.get("value") is True)
        )
        try:
            try:
                if through_cupy:
                    owner = stream.end_capture()
                    graph = int(owner.graph)  # 0 where this CuPy drops it (not in debug mode)
                else:
                    owner = None
                    graph = _cuda.require_cuda().cuda.runtime.streamEndCapture(stream.ptr)
            finally:
                if res.async_capture is not None:  # at once: nothing frees into it any more
                    res.async_capture.open = False
        except Exception as exc:
            self._finish_capture(captured=False)
            raise CaptureError(
                f"capture failed and was discarded: {_describe(exc)}; an operation during the "
                "capture was illegal in this capture error mode", exc
            ) from exc
        res.owner = owner
        res.graph = graph
        self._finish_capture(captured=True)
        if not self.keep_graph:
            try:
                self.instantiate()
            finally:
                if not self._debug:
                    res.destroy_graph()

    def abort_capture(self) -> None:
        """End a capture in progress and discard what it recorded (no-op when not capturing).

        The context manager calls this when the body raises; call it yourself when using
        capture_begin/capture_end directly and something fails in between, or every later CUDA
        call on that stream will fail.
        """
        if not self._capturing:
            return  # a graph captured before stays captured (and refuses a second capture)
        self._res.end_capture_discarding()
        self._captured = False

    def _finish_capture(self, captured: bool) -> None:
        self._res.finish_capture(captured)
        self._captured = captured

    def __del__(self) -> None:
        # CuPy's launch, bound as this graph's replay (instantiate), holds CuPy's Graph, the
        # owner of the executable: let go of it first, so that the owner dies with this
        # graph's resources, in relaxed capture mode (_Resources.release), and not after
        # them as this object's attributes are cleared, where a global-mode capture under
        # way would refuse its destroy (and be invalidated by it).
        self.__dict__.pop("replay", None)

    def __enter__(self) -> Graph:
        """Synchronize the device, then begin capture on the current stream."""
        cupy = _cuda.require_cuda()
        # As the reference does: no earlier work may still be in flight when capture starts.
        cupy.cuda.Device().synchronize()
        self.capture_begin()
        return self

    # -- executable graph -----------------------------------------------------------------

    def instantiate(self) -> None:
        """Build the executable graph from the captured one.

        Called by ``capture_end`` when keep_graph is False, or by the first ``replay`` when
        keep_graph is True and instantiate was not called. Instantiating again (keep_graph)
        replaces the executable graph (with an async pool the old one is destroyed first: CUDA
        allows a graph with memory nodes one executable at a time). With keep_graph=False and a
        private pool, CuPy builds the executable and its launch serves as ``replay`` (the
        fastest launch Python has).
        Otherwise the executable is built with auto-free-on-launch, so graphs captured with an
        async pool (MEM_ALLOC/MEM_FREE nodes) replay any number of times. A raw
        cudaMallocAsync made during a private-pool capture is not covered: use
        ``Graph(pool=graph_pool_handle("async"))`` for stream-ordered allocation.
        Cost: roughly proportional to the node count (tens of ms for 10,000 nodes).
        """
        res = self._res
        if res.capturing:
            raise GraphStateError("instantiate called during capture; call capture_end first")
        owner = res.owner
        if owner is not None and not res.exec:
            # keep_graph=False with a private pool: the capture ended through CuPy, which
            # instantiates (at end_capture, or here through Graph.upload, by CuPy version), and
            # CuPy's launch becomes this graph's replay. Replay is the hot path (a 1-node graph
            # launches in ~2 µs, bound by the host): CuPy's launch looks up the current stream
            # and calls cudaGraphLaunch in C, with no Python frame; a Python replay measured
            # ~0.25 µs (7-13 %) slower per call on the H200. (CuPy 14 instantiates inside
            # end_capture, so a graph CUDA refuses to instantiate fails there, as CaptureError.)
            try:
                if not owner.graphExec:
                    owner.upload(res.stream)
            except Exception as exc:
                raise CudaError("cudaGraphInstantiate", _describe(exc)) from exc
            res.exec = int(owner.graphExec)
            self.__dict__["replay"] = owner.launch
            return
        if not self._graph:
            if self._exec:
                return  # instantiated in capture_end and the editable graph was dropped
            raise GraphStateError("nothing to instantiate: capture a graph first")
        # keep_graph=True, async pools, or instantiating again: the executable is ours, built
        # with auto-free-on-launch (stream-ordered allocations need it to replay more than
        # once), launched through a closure bound here.
        cupy = _cuda.require_cuda()
        runtime, _ = _cuda.bindings()
        capture = res.async_capture
        if capture is not None:
            # A graph with memory nodes may have one executable at a time: the old one goes
            # first (otherwise it is kept until the new one exists)
            self._destroy_exec()
        graph_exec = _cuda.check(
            "cudaGraphInstantiateWithFlags",
            runtime.cudaGraphInstantiateWithFlags(self._graph, _INSTANTIATE_AUTO_FREE_ON_LAUNCH),
        )
        self._destroy_exec()
        self._exec = int(graph_exec)
        self.__dict__["replay"] = _fast_replay(
            cupy.cuda.runtime.graphLaunch, self._exec, cupy.cuda.get_current_stream, capture
        )

    def replay(self) -> None:
        """Run the captured work again, on the current stream (asynchronously).

        Instantiates first if keep_graph is True and instantiate() was not called. Raises
        GraphStateError before any capture, during a capture, or after reset(). Cost: one
        cudaGraphLaunch (a few µs of host time, whatever the node count).
        """
        self._prepare_replay()
        self.replay()  # the fast path instantiate() installed on this instance

    def _prepare_replay(self) -> None:
        if self._capturing:
            raise GraphStateError("replay called during capture; call capture_end first")
        if not self._graph:
            raise GraphStateError("replay called before any capture: capture a graph first")
        self.instantiate()

    def reset(self) -> None:
        """Delete the graph held by this object; it can then be captured again.

        Releases this graph's hold on its pool: once no graph uses a pool, its blocks become
        spare graph memory for later captures as the arrays in them are dropped (so arrays
        this graph allocated and another graph reads must stay alive while that graph is
        replayed). ``graph_pool`` and ``capture_error_mode`` may be changed afterwards. A
        capture in progress is aborted. Debug mode stays as it was.
        """
        self.__dict__.pop("replay", None)
        try:
            self._res.release()
        finally:
            self._captured = False

    def _destroy_exec(self) -> None:
        self.__dict__.pop("replay", None)
        self._res.destroy_exec()

    # -- memory and debugging -------------------------------------------------------------

    def pool_bytes(self) -> int:
        """Bytes held by this graph's pool (shared pools count once, for every sharer)."""
        if self._pool is None:
            return 0
        return self._pool.bytes_held()

    @property
    def pool_kind(self) -> PoolKind | None:
        """PoolKind.PRIVATE or PoolKind.ASYNC once captured; None before."""
        return self._pool.kind if self._pool is not None else None

    def enable_debug_mode(self) -> None:
        """Keep the underlying graph after instantiation so that :meth:`debug_dump` works.

        Call before ``capture_end``. Graphs built with ``keep_graph=True`` can always be dumped.
        Cost: the memory of the cudaGraph_t (small; about 0.5 KB a node).
        """
        self._debug = True

    @property
    def debug_mode(self) -> bool:
        """Whether enable_debug_mode() was called."""
        return self._debug

    def debug_dump(self, path: str | os.PathLike, flags: str | int = "verbose") -> str:
        """Write the captured graph to ``path`` as Graphviz DOT, as cudaGraphDebugDotPrint writes it.

        ``flags``: "verbose" (every detail, the default), "basic", names joined by "|" (see
        accelgraph_cli.cuda.graph.DEBUG_DOT_FLAGS) or an int. Needs the underlying graph: call
        enable_debug_mode() before capture_end or construct the Graph with keep_graph=True;
        otherwise GraphStateError says so. The file is written atomically: a reader never sees
        half of it. Returns the path.
        """
        graph = self._dumpable_graph()
        bits = debug_dot_flags(flags)
        from ..files import atomic_output

        path = os.fspath(path)
        with atomic_output(path, suffix=".dot") as tmp:
            _write_dot(graph, tmp, bits)
        return path

    @property
    def graph_handle(self) -> int:
        """The underlying cudaGraph_t as an int (0 when not held)."""
        return self._graph

    @property
    def exec_handle(self) -> int:
        """The cudaGraphExec_t as an int (0 before instantiation). With an async pool, launch
        through :meth:`replay`: outputs of a graph launched only through this handle are
        never freed (accelgraph frees a graph allocation only once replay has launched it)."""
        return self._exec

    def _dumpable_graph(self) -> int:
        self._check_dumpable(held=bool(self._graph))
        return self._graph

    def __repr__(self) -> str:
        state = (
            "capturing" if self._capturing
            else "instantiated" if self._exec
            else "captured" if self._captured
            else "empty"
        )
        return (
            f"Graph({state}, keep_graph={self.keep_graph}, pool={self._graph_pool}, "
            f"capture_error_mode={self._capture_error_mode.value!r})"
        )


def _write_dot(graph: int, path: str, flags: int) -> None:
    runtime, _ = _cuda.bindings()
    try:
        result = runtime.cudaGraphDebugDotPrint(graph, path.encode(), flags)
    except TypeError:  # bindings versions differ on str vs bytes for char*
        result = runtime.cudaGraphDebugDotPrint(graph, path, flags)
    _cuda.check("cudaGraphDebugDotPrint", result)


#: Whether this CuPy's Stream.end_capture keeps the cudaGraph_t next to the executable it
#: builds (CuPy 14 does). Learned once, by capturing nothing on a scratch stream.
_KEEPS_GRAPH: dict[str, bool] = {}


def _cupy_keeps_captured_graph(cupy) -> bool:
    if "value" not in _KEEPS_GRAPH:
        scratch = cupy.cuda.Stream(non_blocking=True)
        scratch.begin_capture()
        empty = scratch.end_capture()
        _KEEPS_GRAPH["value"] = bool(empty.graph)
        del empty
    return _KEEPS_GRAPH["value"]


def _checked_pool(value) -> tuple:
    """``value`` (a pool token, or None for a private pool) and the pool it names (None for
    None), once pools.get_pool has checked its shape and that the pool is alive. The graph
    keeps the pool, so its captures need not look the token up again."""
    return value, (pools.get_pool(value) if value is not None else None)


@functools.lru_cache(maxsize=1)
def _allocator_calls(memory) -> tuple:
    """CuPy's (get, set) of the thread's allocator in ``cupy.cuda.memory``, looked up once
    (None for either this CuPy lacks)."""
    return (getattr(memory, "_get_thread_local_allocator", None),
            getattr(memory, "_set_thread_local_allocator", None))


def _use_allocator(cupy, allocator):
    """Make ``allocator`` this thread's CuPy allocator; returns the call that puts the
    previous one back. What ``cupy.cuda.using_allocator`` does, through the two functions it
    calls, without building a generator context per capture; through using_allocator itself
    where this CuPy lacks them."""
    get, set_ = _allocator_calls(cupy.cuda.memory)
    if get is None or set_ is None:
        context = cupy.cuda.using_allocator(allocator)
        context.__enter__()
        return lambda: context.__exit__(None, None, None)
    previous = get()
    set_(allocator)
    return lambda: set_(previous)


def _fast_replay(launch, graph_exec: int, current_stream, capture=None):
    if capture is None:
        def replay() -> None:
            launch(graph_exec, current_stream().ptr)
    else:
        def replay() -> None:
            stream = current_stream()
            launch(graph_exec, stream.ptr)
            capture.launches += 1  # launched: its outputs are memory now, which CuPy may free
            capture.stream = stream  # the last launch's, for AsyncCapture.free_relaunched

    replay.__doc__ = Graph.replay.__doc__
    return replay


def _describe(exc: BaseException) -> str:
    """One line naming an exception: its type and first message line."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    if isinstance(exc, CudaError):
        return first
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
