"""accelgraph_cli.TorchGraph: the same graph API as :class:`accelgraph_cli.Graph`, on PyTorch.

For scenarios written in PyTorch. Captures through PyTorch's own graph object,
``torch.cuda.CUDAGraph(keep_graph=True)`` (torch 2.8 or later: keep_graph came in 2.8;
torch 2.11, the version tested, has no ``torch.accelerator.Graph``), so torch's caching
allocator, its RNG (philox offsets) and its libraries (cuBLAS workspaces, SDPA) behave
under capture exactly as they do in ``torch.cuda.graph``. The underlying ``cudaGraph_t`` is
always kept (torch's ``raw_cuda_graph()``), so ``debug_dump``, the live node walk, ``dump``
and ``diff`` work the same way as for CuPy graphs.

Pools are torch's: a token from ``torch.cuda.graph_pool_handle()`` (or another TorchGraph's
:meth:`pool`). Graphs given the same token share one pool of torch's caching allocator.
There is no stream-ordered ("async") pool on this backend: torch's allocator serves capture.
A token of accelgraph's own pools (``Graph.pool()``, ``graph_pool_handle()``) is refused.

torch is imported when a TorchGraph is constructed, never by ``import accelgraph_cli``.
"""

from __future__ import annotations

import os
from typing import Any

from .. import gcpause
from ..enums import CaptureErrorMode, PoolKind
from ..errors import CaptureError, GraphStateError, NoGPUError
from . import pools
from .graph import GraphBase, _describe


def _torch():
    try:
        import torch
    except ModuleNotFoundError as exc:
        if exc.name != "torch":  # torch is there, but something it imports is not
            raise NoGPUError(f"torch is not usable ({exc}): TorchGraph needs a working "
                             "PyTorch") from exc
        raise NoGPUError("torch is not installed: TorchGraph captures work written in PyTorch "
                         "(pip install 'accelgraph[torch,cuda13]' or '[torch,cuda12]'); "
                         "Graph captures CuPy work") from exc
    except Exception as exc:  # a torch that fails to load its libraries
        raise NoGPUError(f"torch is not usable ({type(exc).__name__}: {exc}): TorchGraph needs "
                         "a working PyTorch") from exc
    return torch


def _left_behind(error: Exception | None) -> str:
    """The end of a refusal's message when undoing the failed capture failed too."""
    if error is None:
        return ""
    return (f" (and its capture could not be ended: {_describe(error)}; this stream cannot "
            "be used until it is)")


def new_torch_pool() -> tuple[int, int]:
    """A fresh pool token for torch graphs (``torch.cuda.graph_pool_handle()``)."""
    return tuple(_torch().cuda.graph_pool_handle())


def torch_pool_bytes(pool: tuple[int, int]) -> int:
    """Bytes torch's caching allocator holds in segments of the graph pool ``pool``."""
    torch = _torch()
    total = 0
    for segment in torch.cuda.memory_snapshot():
        if tuple(segment.get("segment_pool_id", ())) == tuple(pool):
            total += int(segment.get("total_size", 0))
    return total


class TorchGraph(GraphBase):
    """A CUDA graph captured from a torch stream and replayed on demand.

    Same constructor and methods as :class:`accelgraph_cli.Graph` (see its docstring for the
    meaning of ``keep_graph``, ``pool`` and ``capture_error_mode``); ``pool`` is a torch pool
    token. Capture with a torch side stream current (``with torch.cuda.stream(s):``): CUDA
    cannot capture the legacy default stream.
    """

    def __init__(self, keep_graph: bool = False, *, pool: tuple[int, int] | None = None,
                 capture_error_mode: CaptureErrorMode | str = CaptureErrorMode.DEFAULT) -> None:
        torch = _torch()
        self.keep_graph = bool(keep_graph)
        self.graph_pool = pool
        # the pool token was made by this graph for its own capture and never handed out
        # (by pool() or graph_pool): reset() then drops it, see there
        self._pool_private_to_us = False
        self.capture_error_mode = capture_error_mode
        self._debug = False
        try:
            self._graph = torch.cuda.CUDAGraph(keep_graph=True)
        except TypeError as exc:  # keep_graph came in torch 2.8
            version = getattr(torch, "__version__", "")
            raise NoGPUError(
                f"TorchGraph needs torch >= 2.8 (torch.cuda.CUDAGraph(keep_graph=True)); this "
                f"is torch {version or 'of an older version'}: pip install 'torch>=2.8'"
            ) from exc
        self._capturing = False
        self._captured = False
        self._instantiated = False
        self._stream: Any = None
        self._generators: list = []  # registered with every torch graph object this one makes
        self._gc_paused = False  # whether this capture holds a pause of the cyclic collector

    def register_generator(self, generator) -> None:
        """Let the graph draw from ``generator``, a CUDA ``torch.Generator`` of the
        scenario's own (torch's default generators need no registering): torch then keeps
        its seed and offset for each replay as for the default one. Before capture_begin;
        it holds for every later capture of this object (reset() included)."""
        if self._capturing:
            raise GraphStateError("register_generator called during capture; register "
                                  "generators before capture_begin")
        register = getattr(self._torch_graph(), "register_generator_state", None)
        if register is None:
            raise NoGPUError("this torch cannot register a generator with a graph "
                             "(torch.cuda.CUDAGraph.register_generator_state); pip install "
                             "'torch>=2.8'")
        register(generator)
        self._generators.append(generator)

    @property
    def graph_pool(self) -> tuple[int, int] | None:
        """The torch pool token the next capture allocates from (None: one made for it); set
        it before a capture, or after reset(), not while this graph holds a captured graph.
        Read, the token counts as handed out, as from pool(): reset() keeps it."""
        self._pool_private_to_us = False
        return self._graph_pool

    @graph_pool.setter
    def graph_pool(self, value) -> None:
        token = None
        if value is not None:
            try:
                token = tuple(value)
            except TypeError:
                token = ()
            if len(token) != 2 or not all(isinstance(v, int) and not isinstance(v, bool)
                                          for v in token):
                raise ValueError(f"pool must be a torch pool token (two integers, from "
                                 f"torch.cuda.graph_pool_handle() or TorchGraph.pool()), "
                                 f"not {value!r}")
            if pools.is_accelgraph_token(token):
                raise ValueError(f"pool {token!r} is an accelgraph pool token (Graph.pool(), "
                                 "graph_pool_handle()): TorchGraph takes tokens from "
                                 "torch.cuda.graph_pool_handle() or TorchGraph.pool()")
        self._refuse_pool_change()
        self._graph_pool = token
        self._pool_private_to_us = False

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
        """True once an executable graph exists."""
        return self._instantiated

    def pool(self) -> tuple[int, int]:
        """The token of this graph's pool (made now if none was given): pass it as ``pool=``
        to another TorchGraph to share the pool."""
        token = self._capture_pool()
        self._pool_private_to_us = False  # handed out: others may capture into it
        return token

    def _capture_pool(self) -> tuple[int, int]:
        """The token the next capture allocates from, made now (this graph's own) if none."""
        if self._graph_pool is None:
            self._graph_pool = new_torch_pool()
            self._pool_private_to_us = True
        return self._graph_pool

    def capture_begin(self) -> None:
        """Start capturing the work enqueued on torch's current stream, allocating from this
        graph's pool, in this graph's capture error mode."""
        if self._capturing:
            raise GraphStateError("capture_begin called twice: this graph is already capturing")
        if self._captured:
            raise GraphStateError(
                "this graph already holds a captured graph; call reset() before capturing again")
        torch = _torch()
        stream = torch.cuda.current_stream()
        if stream.cuda_stream == 0:
            raise CaptureError(
                "cannot capture on the legacy default stream: CUDA forbids it; capture on a "
                "stream of your own, e.g. `with torch.cuda.stream(torch.cuda.Stream()):`")
        if torch.cuda.is_current_stream_capturing():
            # Asked first: torch 2.11's capture_begin on a capturing stream fails half-way
            # through registering its RNG generators, and the torch graph object it leaves
            # aborts the process when it is destroyed.
            raise CaptureError(
                "cannot begin capture: the current stream is capturing already (a capture "
                "this graph did not begin is in progress on it); end that capture first, or "
                "capture on another stream")
        mode = self.capture_error_mode.resolved.value
        graph = self._torch_graph()
        self._stream = stream  # (a failed begin's discard reads it, then clears it)
        # No cyclic collection while capturing, as for Graph: a torch graph the collector
        # found in a cycle would be destroyed mid-capture (see _drop_torch_graph).
        gcpause.pause_for_capture()
        self._gc_paused = True
        try:
            graph.capture_begin(pool=self._capture_pool(), capture_error_mode=mode)
        except BaseException as exc:
            if not isinstance(exc, Exception):  # an interrupt: undone, then passed on
                self._discard_failed_capture()
                raise
            # torch may have got part of the way: a capture it began on the stream (which was
            # not capturing before: asked above) is ended, its RNG generators' capture and
            # the pool routing are undone, and a fresh torch graph object replaces the failed
            # one. What cannot be undone is named after the refusal.
            left = self._discard_failed_capture()
            if "use_count > 0" in str(exc):  # torch's allocator: the pool was released
                raise CaptureError(
                    f"cannot capture into pool {self._graph_pool}: every graph that used it "
                    f"was reset, so torch released it, and tensors its captures allocated "
                    f"still hold its memory; give this graph a new pool token "
                    f"(torch.cuda.graph_pool_handle())" + _left_behind(left), exc) from exc
            raise CaptureError(f"CUDA refused to begin capture: {_describe(exc)}"
                               + _left_behind(left), exc) from exc
        self._capturing = True

    def capture_end(self) -> None:
        """Stop capturing on the stream the capture began on, whichever stream is current
        now (as Graph does); with keep_graph=False also instantiate."""
        if not self._capturing:
            raise GraphStateError("capture_end called without capture_begin")
        try:
            self._end_torch_capture()
        except Exception as exc:
            left = self._discard_failed_capture()
            raise CaptureError(
                f"capture failed and was discarded: {_describe(exc)}; an operation during the "
                "capture was illegal in this capture error mode" + _left_behind(left),
                exc) from exc
        self._capturing = False
        self._captured = True
        self._resume_collector()
        if not self.keep_graph:
            self.instantiate()

    def abort_capture(self) -> None:
        """End a capture in progress and discard it (no-op when not capturing). The graph is
        left not capturing whatever happens; where the stream's capture could not be ended
        (that needs cuda.bindings), the first error of that is raised after."""
        self._abort(replace=True)

    def _abort(self, replace: bool) -> None:
        """abort_capture; ``replace``: a fresh torch graph object takes the discarded one's
        place (not for a graph being torn down, see __del__)."""
        if not self._capturing:
            return
        try:
            self._end_torch_capture()
        except Exception as exc:
            left = self._discard_failed_capture(replace)  # an invalidated capture
            if left is not None:
                raise left from exc
        else:
            try:
                self._capturing = False
                self._fresh_graph(replace)
            finally:
                self._resume_collector()

    def _discard_failed_capture(self, replace: bool = True) -> Exception | None:
        """After torch's capture_begin or capture_end failed: end the stream's capture where
        torch left it running, undo torch's setup, and leave this object not capturing, with
        a fresh torch graph, even where one of those steps fails (ending the stream's capture
        needs cuda.bindings: NoGPUError without them). Returns the first error of those steps
        (None when all went through); reset() or a new capture works either way."""
        first = None
        try:
            for undo in (self._end_stream_capture, self._repair_after_failed_capture):
                try:
                    undo()
                except Exception as exc:
                    first = first or exc
            self._capturing = False
            self._fresh_graph(replace)
        finally:
            self._resume_collector()
        return first

    def _resume_collector(self) -> None:
        """The capture is over (however it ended): its pause of the collector ends."""
        if self._gc_paused:
            self._gc_paused = False
            gcpause.resume_after_capture()

    def _end_torch_capture(self) -> None:
        """torch's capture_end, with the capture's stream current: torch ends a capture only
        on the stream it began on (no switch when it is current already, the usual case)."""
        torch = _torch()
        if torch.cuda.current_stream().cuda_stream != self._stream.cuda_stream:
            with torch.cuda.stream(self._stream):
                self._graph.capture_end()
        else:
            self._graph.capture_end()

    def _end_stream_capture(self) -> None:
        """If the stream is still capturing (torch gave up half-way), end that capture."""
        from . import device

        if self._stream is None:
            return
        runtime, _ = device.bindings()
        handle = self._stream.cuda_stream
        err, status = runtime.cudaStreamIsCapturing(handle)
        if int(err) == 0 and int(status) != 0:  # active or invalidated
            err, graph = runtime.cudaStreamEndCapture(handle)
            if int(err) == 0 and graph:
                with pools.relaxed_or_current_mode():  # (another graph may be capturing)
                    runtime.cudaGraphDestroy(graph)

    def _repair_after_failed_capture(self) -> None:
        """Undo what torch's capture_begin set up and a failed capture_begin or capture_end
        never undid.

        When cudaStreamEndCapture fails (the capture was invalidated by an illegal call),
        torch's capture_end raises before it stops routing the thread's allocations to the
        graph pool and before it ends the RNG generators' capture, so every later
        torch.randn would fail with "Offset increment outside graph capture". When
        torch's capture_begin raises after it has begun both (its RNG prologue and the pool
        routing may come before what failed), the same holds. Both are reset here, so the
        process can run and capture again. (capture_begin refuses a stream that is capturing
        already before torch is asked: see there.) The generators get fresh state objects
        with the same seed and offset: graphs captured before keep the old ones, so their
        replays no longer advance the offsets eager code draws from (as after any capture
        torch could not finish).
        """
        torch = _torch()
        device = torch.cuda.current_device()
        pool = self._graph_pool
        end_pool = getattr(torch._C, "_cuda_endAllocateToPool", None) or getattr(
            torch._C, "_cuda_endAllocateCurrentStreamToPool", None)
        if end_pool is not None and pool is not None:
            try:
                end_pool(device, pool)
            except Exception:
                pass  # routing already ended (capture_end got that far)
        for generator in [*torch.cuda.default_generators, *self._generators]:
            try:
                # a fresh generator state with the same seed and offset, not capturing
                generator.graphsafe_set_state(generator.clone_state())
            except Exception:
                pass

    def _fresh_graph(self, replace: bool = True) -> None:
        """A new torch graph object in place of the one held (``replace``; else none), the
        old one let go of in relaxed mode, and this graph left empty, even where making the
        new one fails (its error is raised after)."""
        graph = None
        try:
            if replace:
                graph = _torch().cuda.CUDAGraph(keep_graph=True)
                for generator in self._generators:
                    graph.register_generator_state(generator)
        finally:
            self.__dict__.pop("replay", None)  # (torch's bound replay holds the old graph)
            self._drop_torch_graph(graph)
            self._captured = False
            self._instantiated = False
            self._stream = None

    def _torch_graph(self):
        """torch's graph object, made again where making it after a discarded capture
        failed (see _fresh_graph)."""
        if self._graph is None:
            self._fresh_graph()
        return self._graph

    def _drop_torch_graph(self, replacement) -> None:
        """Let go of torch's graph object (``replacement`` takes its place): its executable
        and graph are destroyed then, by torch, in relaxed capture mode. A graph dropped,
        collected or reset while another captures in global mode would otherwise have those
        destroys refused, which invalidates the capture under way."""
        with pools.relaxed_or_current_mode():
            self._graph = replacement

    def __del__(self) -> None:
        # Dropped or collected: a capture still running is discarded (its stream would stay
        # capturing, and the collector paused), and torch's graph object goes in relaxed
        # mode (see _drop_torch_graph). At interpreter exit the driver may be gone.
        try:
            if getattr(self, "_capturing", False):
                self._abort(replace=False)
        except Exception:
            pass
        finally:
            try:
                if getattr(self, "_gc_paused", False):
                    self._resume_collector()
                self.__dict__.pop("replay", None)
                if self.__dict__.get("_graph") is not None:
                    self._drop_torch_graph(None)
            except Exception:
                pass

    def __enter__(self) -> TorchGraph:
        """Synchronize the device, then begin capture on torch's current stream."""
        _torch().cuda.synchronize()
        self.capture_begin()
        return self

    def instantiate(self) -> None:
        """Build the executable graph (torch's ``instantiate``); again replaces it."""
        if self._capturing:
            raise GraphStateError("instantiate called during capture; call capture_end first")
        if not self._captured:
            raise GraphStateError("nothing to instantiate: capture a graph first")
        self._graph.instantiate()
        self._instantiated = True
        self.__dict__["replay"] = self._graph.replay

    def replay(self) -> None:
        """Run the captured work again on torch's current stream (instantiating first if
        needed). Cost: torch's CUDAGraph.replay, one cudaGraphLaunch."""
        if self._capturing:
            raise GraphStateError("replay called during capture; call capture_end first")
        if not self._captured:
            raise GraphStateError("replay called before any capture: capture a graph first")
        self.instantiate()
        self.replay()

    def reset(self) -> None:
        """Delete the graph held by this object; it can then capture again. A pool token this
        graph made for itself and never handed out (``pool()`` not called, ``graph_pool``
        not read, none given) is dropped, and the next capture makes a new one: torch
        releases a pool once no graph uses it, and refuses to capture into a released pool
        while its memory is still held (by tensors a capture allocated)."""
        if self._capturing:
            self.abort_capture()
        self.__dict__.pop("replay", None)
        if self._graph is not None:  # (None where making a fresh one failed)
            with pools.relaxed_or_current_mode():  # (see _drop_torch_graph)
                self._graph.reset()
        self._fresh_graph()
        if self._pool_private_to_us:
            self._graph_pool, self._pool_private_to_us = None, False

    def pool_bytes(self) -> int:
        """Bytes torch's allocator holds in this graph's pool (shared pools count once for
        every sharer)."""
        return torch_pool_bytes(self._graph_pool) if self._graph_pool is not None else 0

    def enable_debug_mode(self) -> None:
        """Recorded for API parity: a TorchGraph always keeps its cudaGraph_t (torch's
        keep_graph=True), so debug_dump works with or without it, and torch's own debug mode
        (which only adds warnings to its debug_dump) is not turned on."""
        self._debug = True

    @property
    def debug_mode(self) -> bool:
        """Whether enable_debug_mode() was called."""
        return self._debug

    @property
    def pool_kind(self) -> PoolKind | None:
        """PoolKind.PRIVATE from capture_begin on (torch's caching allocator serves the
        capture, in a pool of its own or one shared by token); None before, as
        Graph.pool_kind."""
        return PoolKind.PRIVATE if self._capturing or self._captured else None

    @property
    def graph_handle(self) -> int:
        """The captured cudaGraph_t (torch's raw_cuda_graph) as an int; 0 before a capture has
        ended (as Graph.graph_handle)."""
        if not self._captured:
            return 0
        return int(self._graph.raw_cuda_graph())

    @property
    def exec_handle(self) -> int:
        """The cudaGraphExec_t, once instantiated (0 before)."""
        return int(self._graph.raw_cuda_graph_exec()) if self._instantiated else 0

    def debug_dump(self, path: str | os.PathLike, flags: str | int = "verbose") -> str:
        """Write the graph as Graphviz DOT, as cudaGraphDebugDotPrint writes it (atomically).
        Same flags as Graph.debug_dump. Returns the path."""
        from ..files import atomic_output
        from .graph import _write_dot, debug_dot_flags

        self._check_dumpable(held=self._captured)  # (a TorchGraph keeps its cudaGraph_t)
        bits = debug_dot_flags(flags)
        path = os.fspath(path)
        with atomic_output(path, suffix=".dot") as tmp:
            _write_dot(self.graph_handle, tmp, bits)
        return path

    def __repr__(self) -> str:
        state = "capturing" if self._capturing else "captured" if self._captured else "empty"
        return (f"TorchGraph({state}, keep_graph={self.keep_graph}, "
                f"capture_error_mode={self.capture_error_mode.value!r})")

