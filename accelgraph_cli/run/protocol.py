"""The run protocol behind `capture`, `replay`, `dump` and `smoke`.

    warm-up  : once the state to capture is made, a throwaway state runs each step eagerly
               (compiles kernels, loads modules — neither is capturable), then is dropped;
    capture  : the fresh state is captured, one Graph per step, with the chosen pool and mode;
    guard    : the state's device memory is checksummed before capture and after each graph's
               capture, and what the GPU ran meanwhile is read from CUPTI (the execution
               watch): a change, or anything that ran, means work ran outside the graph (an
               error), and so is a graph with no node unless the scenario says EXPECT_EMPTY;
    check    : eager steps on another fresh state vs replays of the captured graphs, the
               captured state first overwritten with the fresh state's bytes (its host arrays
               given back the bytes saved at capture; outputs the graphs allocated, and host
               outputs the state did not hold, filled with the complement of eager's), compared
               bitwise
               (or within --rtol/--atol); each graph alone, then all in order;
    timing   : eager steps vs graph replays, CUDA events + host clocks, median over rounds,
               per graph and for all graphs together.

Every function here takes a loaded Scenario (see scenario.py) and returns plain dataclasses the
CLI renders and `--json` prints.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cuda import device as _cuda
from ..cuda.backends import Backend, Streams, backend_for
from ..cuda.cupti.watch import ExecutionWatch
from ..cuda.graph import Graph
from ..cuda.nodes import node_kinds
from ..cuda.snapshot import (
    StateSnapshot,
    device_region,
    flip_back,
    flip_low_bits,
    float_allocation,
    is_device_array,
    output_paths,
    pick_allocations,
    state_regions,
)
from ..cuda.timing import Timing, measure_interleaved, speedup
from ..enums import Backend as BackendChoice
from ..enums import CaptureErrorMode, PoolKind
from ..errors import AccelgraphError, CaptureError
from . import guard
from .hostarrays import HostSave, device_and_host_arrays, held_by, is_host_array
from .scenario import ScenarioError, check_expect_empty
from .statewalk import find_arrays, value_parts


@dataclass
class CapturedGraph:
    """One graph of a capture, with what it cost and what it holds."""

    name: str
    graph: Graph  # or a TorchGraph, for torch scenarios: the same API
    node_count: int
    kinds: dict[str, int]
    capture_ms: float  # capture_begin .. end of the step's enqueueing
    instantiate_ms: float  # capture_end (+ instantiate)
    pool_bytes: int  # what this graph's pool holds after its capture (a shared pool: in total)
    pool_added: int = 0  # how much this graph's capture grew its pool


@dataclass
class CaptureResult:
    """A scenario captured in this process: its graphs, the state they read and write."""

    scenario: object
    params: dict
    pool: PoolKind
    error_mode: CaptureErrorMode
    graphs: list[CapturedGraph]
    pool_bytes: int  # all graph pools, shared ones counted once
    state: object = None
    streams: Streams | None = None  # the stream captured on, as CuPy and the backend see it
    snapshot: StateSnapshot | None = None  # checksums taken before capture (outputs flipped)
    backend: Backend | None = None
    unroll: int = 1  # steps each graph holds (one replay = this many eager steps)
    host_save: HostSave | None = None  # the state's host arrays as they were before capture
    watch: ExecutionWatch | None = None  # what the device ran while capturing (CUPTI)

    @property
    def stream(self):
        """The CuPy stream the graphs were captured on (events, synchronize)."""
        return self.streams.cupy if self.streams is not None else None

    def graph(self, name: str) -> CapturedGraph:
        """The captured graph called ``name``."""
        for g in self.graphs:
            if g.name == name:
                return g
        raise KeyError(name)

    @property
    def node_count(self) -> int:
        return sum(g.node_count for g in self.graphs)

    def kinds(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for g in self.graphs:
            for k, v in g.kinds.items():
                total[k] = total.get(k, 0) + v
        return dict(sorted(total.items()))

    def replay_all(self) -> None:
        for g in self.graphs:
            g.graph.replay()

    def summary(self) -> dict:
        """Machine-readable figures (no handles)."""
        return {
            "scenario": str(self.scenario.path),
            "backend": str(self.backend.name) if self.backend is not None else None,
            "params": self.params,
            "pool": self.pool,
            "error_mode": self.error_mode,
            "unroll": self.unroll,
            "nodes": self.node_count,
            "kinds": self.kinds(),
            "pool_bytes": self.pool_bytes,
            "guard": self.guard_summary(),
            "graphs": [
                {
                    "name": g.name,
                    "nodes": g.node_count,
                    "kinds": g.kinds,
                    "capture_ms": round(g.capture_ms, 4),
                    "instantiate_ms": round(g.instantiate_ms, 4),
                    "pool_bytes": g.pool_bytes,
                    "pool_added": g.pool_added,
                }
                for g in self.graphs
            ],
        }

    def guard_summary(self) -> dict:
        """What the capture guard checksummed and what it cost (host ms, device syncs
        included; the snapshot's with the walk that found the state's arrays and the saving
        of its host arrays)."""
        snap, watch = self.snapshot, self.watch
        watched = {"watch": "off" if watch is None or watch.off else "on",
                   "watch_off": None if watch is None else watch.off,
                   "watch_ms": 0.0 if watch is None else round(watch.ms, 4)}
        if snap is None:
            return {"arrays": 0, "bytes": 0, "snapshot_ms": 0.0, "compare_ms": 0.0, **watched}
        saved = self.host_save.take_ms if self.host_save is not None else 0.0
        return {
            "arrays": sum(len(r.paths) for r in snap.regions),
            "bytes": snap.nbytes,
            "snapshot_ms": round(snap.take_ms + saved, 4),
            "compare_ms": round(snap.compare_ms, 4),
            **watched,
        }


def resolve_options(info, pool: PoolKind | str | None,
                    error_mode: CaptureErrorMode | str | None) -> tuple[PoolKind, CaptureErrorMode]:
    """The pool and error mode to use: the option if given, else the scenario's default.

    ``info`` is a ScenarioInfo (or a Scenario, whose ``info`` is used). Names are checked here
    too, for library callers and the last-capture record (the CLI's parser checks options).
    """
    info = getattr(info, "info", info)
    try:
        pool = PoolKind.parse(pool or getattr(info, "pool", None) or PoolKind.PRIVATE, "--pool")
        error_mode = CaptureErrorMode.parse(
            error_mode or getattr(info, "error_mode", None) or CaptureErrorMode.GLOBAL,
            "--error-mode")
    except ValueError as exc:
        raise AccelgraphError(str(exc)) from None
    if pool is PoolKind.ASYNC and getattr(info, "backend", None) is BackendChoice.TORCH:
        # as the scenario's own POOL = "async" is refused (run.scenario.inspect_scenario)
        raise AccelgraphError("--pool async is CuPy's stream-ordered allocator; a torch "
                              "scenario's graphs allocate from torch's caching allocator: use "
                              "private or shared")
    return pool, error_mode


def _warm_up(scenario, params, streams: Streams):
    """Run every step once eagerly on a throwaway state (kernel compilation, module loading,
    cuBLAS workspaces, lazy initialisation: none of it is capturable). Returns that state and
    the ``(path, array)`` pairs it held before its steps ran, for :func:`_output_paths`;
    the caller drops them before capturing."""
    state = scenario.make_state(params)
    before = find_arrays(state, is_device_array)
    for name, step in scenario.graph_steps(state).items():
        _call_step(scenario, name, step)
    streams.cupy.synchronize()
    return state, before


def _output_paths(scenario, state, before: list | tuple = ()) -> list[str]:
    """The paths at which ``state``'s allocations that ``outputs(state)`` values lie in (views
    included) were held before the step ran (``before``: a state that has not run its step,
    as the captured one, holds them there) and are held now, each once: what capture
    flips besides what outputs() names before the step (an array the step stores, or
    publishes under another key). Best effort: [] when outputs() fails here too."""
    outputs = _outputs_to_flip(scenario, state)
    if not outputs:
        return []
    try:
        arrays = list(before) + find_arrays(state, is_device_array)
        values = _parts(outputs.values())
        return output_paths(values, arrays, _allocation_start)
    except Exception:  # an object CuPy cannot read: nothing is learned from it
        return []


def _allocation_start(value) -> int | None:
    found = device_region(value)
    return None if found is None else found[0]


def _generators(backend: Backend, state) -> list:
    """The (path, generator) pairs of the device random generators ``state`` holds (torch's
    CUDA ones), for the backend to register with a graph or set back; [] where the backend
    has none."""
    return find_arrays(state, backend.is_generator) if backend.has_generators else []


def _call_step(scenario, name, step) -> None:
    try:
        step()
    except AccelgraphError:
        raise
    except (Exception, SystemExit) as exc:  # (sys.exit() in a step: the scenario's error)
        raise scenario.error_from(exc, f"step {name!r}") from exc


def capture(
    scenario,
    params: dict,
    *,
    pool: PoolKind | str | None = None,
    error_mode: CaptureErrorMode | str | None = None,
    keep_graph: bool = False,
    warmup: bool = True,
    unroll: int = 1,
    origins=None,
) -> CaptureResult:
    """Warm up, then capture every step of ``scenario`` into its own Graph and instantiate it.

    ``pool``: "private" (a pool per graph), "shared" (one pool for all graphs, captured in the
    scenario's order — largest first for buckets) or "async" (stream-ordered allocation nodes).
    Debug mode is on, so each graph can be dumped and walked. ``unroll`` K > 1 captures K
    consecutive calls of each step into its graph: one replay then runs K steps, for one
    launch (what pays when launching costs as much as the step runs).
    ``origins``: a ``cuda.cupti.profile.NodeOrigins``, started
    for each graph's capture and instantiation and stopped after (profile's node origins).
    """
    if unroll < 1:
        raise AccelgraphError(f"--unroll must be 1 or more, not {unroll}")
    _cuda.require_cuda()
    pool, error_mode = resolve_options(scenario, pool, error_mode)
    ExecutionWatch.prepare()  # CUPTI loads while setup and the warm-up run
    backend = backend_for(scenario.info.backend)
    streams = backend.new_streams()
    with backend.use(streams):
        state = scenario.make_state(params)
        steps = scenario.graph_steps(state)
        check_expect_empty(scenario.info, list(steps))
        warm = None
        if warmup:
            # After the captured state is made, not before: a setup() between the warm-up and
            # the capture leaves the host's caches cold for the step's code (gpt_decode
            # captured about 1.25x slower that way on the H200). Two states exist at once
            # while it runs, as when the check replays; the throwaway's memory then stays in
            # the allocator's cache (CuPy's pool, torch's caching allocator).
            warm = _warm_up(scenario, params, streams)
        # the outputs to flip are asked for first, so that the synchronization after covers
        # any work outputs() itself queues, whatever its stream
        outputs = _outputs_to_flip(scenario, state)
        # and where the warm-up's outputs lay, before its step and after it: outputs() may
        # name only some of them before the step (an array the step stores or publishes
        # under another key; a dict the step fills)
        learned = _output_paths(scenario, *warm) if warm is not None else []
        warm = None  # dropped before capture
        # every stream: setup's work on a side stream must not race the flips below
        _cuda.require_cuda().cuda.runtime.deviceSynchronize()
        # the device arrays the guard checksums and the host bytes it does not read (saved
        # for the check), in one walk, and their regions (for the flips and the snapshot
        # alike): both counted in the guard's time
        t0 = time.perf_counter()
        arrays, host = device_and_host_arrays(state, is_device_array, walk=find_arrays)
        regions = state_regions(arrays)
        found_ms = (time.perf_counter() - t0) * 1e3
        host_save = HostSave(state, found=host)
        if learned:
            # the outputs the state already holds are also those at the paths where the
            # warm-up's state held its outputs (flipped once each, whatever names them)
            by_path = dict(arrays)
            outputs = {**{path: by_path[path] for path in learned if path in by_path},
                       **(outputs or {})}
        generators = _generators(backend, state)
        flipped: list = []
        graph = None
        watch = ExecutionWatch()
        try:
            # Outputs the state already holds are flipped while the graphs are captured, so
            # stray work that rewrites one with the value it already held still changes it.
            _flip_state_outputs(outputs, regions, flipped, streams.cupy)
            # the device was synchronized above and the flips queued on this stream: the
            # checksum kernel, queued after them, sees the state as capture finds it
            snapshot = StateSnapshot.take(arrays, streams.cupy, synchronized=True,
                                          regions=regions, spent_ms=found_ms)
            shared = backend.new_pool(PoolKind.PRIVATE) if pool is PoolKind.SHARED else None
            tokens = []
            captured = []
            for name, step in steps.items():
                token = shared or backend.new_pool(pool)
                if token not in tokens:
                    tokens.append(token)
                graph = backend.new_graph(keep_graph=keep_graph, pool=token,
                                          capture_error_mode=error_mode)
                graph.enable_debug_mode()
                backend.register_generators(graph, generators)
                held_before = backend.pools_bytes([token], pool)
                snapshot.wait()  # the before-capture checksums are done before any step runs
                # the device is idle: from here on it runs only stray work (off the
                # capturing stream, where what the graph API queues before the capture runs)
                watch.start(streams.handle)
                if origins is not None:
                    origins.start()
                t0 = time.perf_counter()
                graph.capture_begin()
                try:
                    for _ in range(unroll):
                        step()
                except BaseException as exc:
                    graph.abort_capture()
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    raise _capture_failure(scenario, name, exc) from exc
                t1 = time.perf_counter()
                try:
                    graph.capture_end()
                except CaptureError as exc:
                    raise _capture_failure(scenario, name, exc) from exc
                if keep_graph:
                    graph.instantiate()
                t2 = time.perf_counter()
                if origins is not None:
                    origins.stop()
                # what the device ran while capturing, once any stray work has finished (the
                # watch synchronizes the device), and before the compare's own kernel
                executed = watch.stop()
                snapshot.start_compare()  # its kernel runs while the nodes are counted
                kinds = node_kinds(graph.graph_handle)
                _guard(scenario, params, name, snapshot, kinds, backend, streams, executed)
                held = graph.pool_bytes()
                captured.append(
                    CapturedGraph(
                        name=name,
                        graph=graph,
                        node_count=sum(kinds.values()),
                        kinds=kinds,
                        capture_ms=(t1 - t0) * 1e3,
                        instantiate_ms=(t2 - t1) * 1e3,
                        pool_bytes=held,
                        pool_added=max(0, held - held_before),
                    )
                )
        except BaseException:
            # The error, not a second one, is the news. A Ctrl-C can land between
            # capture_begin and the step's own handler: end that capture first, or the flips
            # back would be recorded instead of run. The stream is then waited for, so no
            # copy of the snapshot's still reads a pinned buffer as it goes.
            if graph is not None:
                try:
                    graph.abort_capture()
                except Exception:
                    pass
            watch.stop()  # collection off again, whatever the records (it raises nothing)
            if origins is not None:
                origins.stop()
            _flip_back(flipped, streams.cupy, quietly=True)
            try:
                streams.cupy.synchronize()
            except Exception:
                pass
            raise
        _flip_back(flipped, streams.cupy)
        pool_bytes = backend.pools_bytes(tokens, pool)
    return CaptureResult(
        scenario=scenario,
        params=params,
        pool=pool,
        error_mode=error_mode,
        graphs=captured,
        pool_bytes=pool_bytes,
        state=state,
        streams=streams,
        snapshot=snapshot,
        backend=backend,
        unroll=unroll,
        host_save=host_save,
        watch=watch,
    )


def _outputs_to_flip(scenario, state) -> dict | None:
    """What ``outputs(state)`` returns before the step has run, when that is a dict; None
    when the scenario has no outputs() or it cannot run yet (it reads what the step
    stores: its errors are reported when the check calls it)."""
    function = getattr(scenario, "outputs_fn", None)
    try:
        outputs = function(state) if function is not None else None
    except (Exception, SystemExit):  # (reported when the check calls it)
        return None
    return outputs if isinstance(outputs, dict) else None


def _flip_state_outputs(outputs: dict | None, regions: list, flipped: list, stream) -> None:
    """Flip the lowest bit of every word of each state allocation that a floating-point
    or complex output (each part a word) lies in (``outputs(state)`` values, views
    included), appending to ``flipped`` the views to flip back with (:func:`_flip_back`) as
    each is done.

    Stray work that writes an output with the value it already holds would leave the state's
    bytes as they were, and the guard blind: a setup that runs the step once (a warm-up) and
    a step that rewrites its output from its inputs do exactly that. Flipped, the output no
    longer holds that value, so such work changes it. Capture runs nothing, so nothing but
    stray work reads the flipped values, and they differ from the true ones in the last
    place only. Whole allocations, each once, so two outputs that overlap (bucket views of one
    buffer) cannot flip a word back. Integer outputs (perhaps indices) are not flipped,
    unless they share an allocation with a float output. Where outputs() cannot run before
    the step (it reads what the step stores), ``outputs`` holds the state's arrays at the
    paths the warm-up's outputs lay at (capture's fallback); an output only the step creates
    is a graph allocation, which the check fills itself. The flips run on ``stream``, the one
    :func:`_flip_back` waits for. ``outputs``: what :func:`_outputs_to_flip` returned (asked
    before the device was synchronized, so that covers any work outputs() queues)."""
    if not outputs:
        return
    state_pointers = {region.ptr for region in regions}

    def describe(value):
        try:
            return float_allocation(value)
        except Exception:  # an object CuPy cannot read; it is not flipped
            return None

    values = _parts(outputs.values())
    allocations = pick_allocations(values, state_pointers, describe)
    if not allocations:
        return
    with stream:
        for allocation in allocations:
            view = flip_low_bits(*allocation)
            if view is not None:
                flipped.append(view)


def _flip_back(flipped: list, stream, *, quietly: bool = False) -> None:
    """Undo :func:`_flip_state_outputs` through the views it kept (the flip is its own
    inverse, and a view still reaches the memory after a state entry is rebound), then wait
    for it, so the state the caller gets is settled. ``quietly`` on the way out of a failed
    capture, where a second error would hide the first."""
    for view in flipped:
        try:
            with stream:
                flip_back(view)
        except Exception:
            if not quietly:
                raise
    if flipped:
        try:
            stream.synchronize()
        except Exception:
            if not quietly:
                raise


def _guard(scenario, params, name, snapshot, kinds, backend, streams, executed=()) -> None:
    """Refuse a capture that ran work outside its graph (state it changed, or work the
    device ran while capturing: ``executed``), or recorded nothing unexpectedly."""
    info = scenario.info
    changed = snapshot.changed()
    if changed or executed:
        where = _off_stream_lines(scenario, params, name, backend, streams)
        raise CaptureError(guard.stray_work_message(name, changed, where, info.imports,
                                                    info.backend,
                                                    [e.describe() for e in executed]))
    if not sum(kinds.values()) and not info.expects_empty(name):
        function = "steps" if info.multi_graph else "step"
        where = f"{scenario.path}:{info.line_of(function)}"
        raise CaptureError(guard.empty_graph_message(name, info.imports, where, info.backend))


def _off_stream_lines(scenario, params, name, backend, streams) -> list[str]:
    """Where the stray work came from: capture the step again on a fresh state under a line
    tracer that notes the scenario lines run while a current stream is not the capturing one
    (then the step's lines that mention a stream, when the tracer saw none)."""
    path = str(scenario.path)
    lines: list[int] = []
    try:
        with backend.use(streams):
            state = scenario.make_state(params)
            step = scenario.graph_steps(state)[name]
            streams.cupy.synchronize()
            graph = backend.new_graph(keep_graph=False, pool=backend.new_pool(PoolKind.PRIVATE),
                                      capture_error_mode=CaptureErrorMode.RELAXED)
            backend.register_generators(graph, _generators(backend, state))
            graph.capture_begin()
            try:
                with guard.trace_off_stream_lines(path, streams.handle,
                                                  backend.current_stream_handles) as lines:
                    step()
            finally:
                graph.abort_capture()
            _cuda.require_cuda().cuda.runtime.deviceSynchronize()
    except Exception:  # the diagnosis is best effort; the stray work itself is the error
        pass
    if not lines:
        function = "steps" if scenario.info.multi_graph else "step"
        try:
            lines = guard.stream_lines(Path(path).read_text(encoding="utf-8-sig"), function)
        except (OSError, ValueError):  # unreadable, or not UTF-8: no lines to name
            lines = []
    return [f"{path}:{line}" for line in lines]


# -- check ------------------------------------------------------------------------------------


@dataclass
class Mismatch:
    """One output that replay did not reproduce."""

    output: str
    elements: int  # how many elements differ (or -1 for a shape/dtype mismatch)
    total: int
    max_abs_diff: float
    detail: str = ""

    def line(self) -> str:
        if self.elements < 0:
            return f"output {self.output!r}: {self.detail}"
        text = f"output {self.output!r}: {self.elements:,} of {self.total:,} elements differ"
        if self.max_abs_diff == self.max_abs_diff:  # (NaN: no figure, as for booleans)
            text += f", largest difference {self.max_abs_diff:.6g}"
        return f"{text} ({self.detail})" if self.detail else text


NOT_WRITTEN = (
    "the replays never wrote it: it still holds the complement of eager's values that the "
    "check put there, so the graph does not compute this output"
)


@dataclass
class CheckResult:
    """Eager vs replay, compared output by output.

    ``graphs`` were replayed, in order, ``steps`` times, from the bytes eager started from.
    For several graphs, ``per_graph`` holds each graph checked alone, and ``ok`` requires
    every one of them (those that ran) and the run of all graphs in order.
    ``ran`` is False when nothing could be compared (``note`` says why).
    """

    ok: bool
    outputs: list[str]
    steps: int
    mismatches: list[Mismatch]
    rtol: float
    atol: float
    graphs: list[str] = field(default_factory=list)
    per_graph: dict[str, CheckResult] = field(default_factory=dict)
    ran: bool = True
    note: str = ""
    cannot_run_alone: bool = False  # not run because the eager step raised on its own

    @property
    def verdict(self) -> str:
        """"ok", "FAILED" or "not run"."""
        if not self.ran:
            return "not run"
        return "ok" if self.ok else "FAILED"

    def problems(self) -> list[str]:
        """One line per mismatch: each graph's own first (prefixed with its name), then the
        run of all graphs."""
        lines = [f"{name}: {m.line()}" for name, c in self.per_graph.items() for m in c.mismatches]
        prefix = "all graphs: " if self.per_graph else ""
        return lines + [prefix + m.line() for m in self.mismatches]

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "verdict": self.verdict,
            "outputs": self.outputs,
            "steps": self.steps,
            "rtol": self.rtol,
            "atol": self.atol,
            "graphs": self.graphs,
            "note": self.note,
            "mismatches": [m.__dict__ for m in self.mismatches],
            "per_graph": {name: c.to_dict() for name, c in self.per_graph.items()},
        }


def check(result: CaptureResult, *, steps: int = 2, rtol: float = 0.0, atol: float = 0.0) -> CheckResult:
    """Does replaying the graphs compute what running the steps eagerly computes?

    Eager: ``steps`` rounds of the steps on a fresh state. Graph: the fresh state's bytes are
    first copied over the state the graphs were captured on (so both start from the same
    bytes, whatever capture or earlier replays left there; its host arrays get back the
    bytes saved at capture), every output that the graphs allocated (and a host output the
    state did not hold) is filled with the bitwise complement of eager's value (so an output the graph
    never writes cannot match by luck), and the graphs are replayed ``steps`` times. Outputs
    are compared after each replay with eager's after the same round (a copy of each is kept
    on the device: ``steps`` copies of the outputs), bitwise by default; with rtol/atol,
    |a - b| <= atol + rtol * |b| for floating-point outputs, integers exactly.
    Several graphs: each alone, then all in order. May be called at any time after capture.
    AccelgraphError for a tolerance that is negative or not finite (inf would pass anything),
    or fewer than one step.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise AccelgraphError(f"steps must be an int >= 1, not {steps!r}")
    for name, value in (("rtol", rtol), ("atol", atol)):
        if not (math.isfinite(value) and value >= 0):
            raise AccelgraphError(f"{name} must be a finite number >= 0, not {value}")
    names = [g.name for g in result.graphs]
    per_graph: dict[str, CheckResult] = {}
    if len(names) > 1:
        for index, name in enumerate(names):
            alone = _check_run(result, [name], steps, rtol, atol, alone=True)
            if index and not alone.ok:
                # a step that cannot run on a fresh state (a decode step needs its prefill),
                # or whose graph reads what the graphs before it leave (memory they
                # allocated, which no fresh state has): alone after the graphs before it,
                # run once, so that a value it froze at capture still shows in its own
                # repeated replays. A graph wrong both ways keeps its own failure.
                after = _check_run(result, [name], steps, rtol, atol, alone=True,
                                   prefix=names[:index])
                # a graph that failed alone keeps that failure unless it passes after
                # them; one not run alone (no output to compare, or its step raised) takes
                # whatever the check after them gives, a failure included
                if after.ok or not alone.ran:
                    first = f"alone after {', '.join(names[:index])} once: on a fresh state"
                    if alone.ran:
                        after.note = (f"{first} its replay differs from its step (it may "
                                      f"read what they leave, as memory their graphs "
                                      f"allocated)")
                    elif not alone.cannot_run_alone and after.ran:
                        after.note = f"{first} the check was not run ({alone.note})"
                    alone = after
            per_graph[name] = alone
    overall = _check_run(result, names, steps, rtol, atol, alone=False)
    overall.per_graph = per_graph
    overall.ok = overall.ok and all(c.ok for c in per_graph.values() if c.ran)
    return overall


def _check_run(result: CaptureResult, names: list[str], steps: int, rtol: float, atol: float,
               *, alone: bool, prefix: list[str] = ()) -> CheckResult:
    """``names`` run ``steps`` times, eagerly and replayed, from the same bytes; ``prefix``:
    graphs run once first, both ways (for a graph checked alone that cannot run, or was not
    run or failed, on a fresh state: check() says which in the note where it was not the
    first)."""
    scenario, backend = result.scenario, result.backend

    def not_run(note: str) -> CheckResult:
        return CheckResult(False, [], steps, [], rtol, atol, names, ran=False, note=note)

    with backend.use(result.streams):
        eager_state, eager_steps = fresh_state(result)
        # the captured state gets eager's starting bytes, before eager changes them:
        # restored, the bytes of its host arrays left alone; unwritable, of those it could
        # not write
        restored, unwritable = start_from(result, find_arrays(eager_state, is_device_array)) \
            if result.snapshot is not None else ([], [])
        # where eager starts drawing random numbers (torch's CUDA generators): the replays
        # start there too, as from eager's starting bytes
        rng = backend.rng_state(_generators(backend, eager_state))

        def eager_round() -> None:  # as one replay of the graphs: `unroll` steps each
            for _ in range(result.unroll):
                for name in names:
                    _call_step(scenario, name, eager_steps[name])

        # Eager's outputs after each round, copied as it ends, to be compared with the
        # replays' after each replay: the final state alone can agree where a step did not
        # (the next step overwrites it; a host value the warm-up moved on lines the graph's
        # frozen copy up with eager's last step).
        rounds: list[dict] = []
        start: dict = {}  # checked alone: eager's outputs before its steps, where it has them
        for index in range(steps):
            try:
                if not index:
                    for name in prefix:
                        for _ in range(result.unroll):  # as one replay of its graph
                            _call_step(scenario, name, eager_steps[name])
                    if alone:
                        start = _outputs_copied(backend, scenario, eager_state)
                eager_round()
            except AccelgraphError as exc:
                if not alone:
                    raise
                after = f" after {', '.join(prefix)}" if prefix else ""
                skipped = not_run(f"this step cannot run alone{after} ({exc}); checked with "
                                  "the others")
                skipped.cannot_run_alone = True
                return skipped
            # every stream, not only the capture's: an eager step may launch on a side stream
            # it never joins (the check must still be right about such a scenario), and
            # eager's outputs are read from here on, on this stream
            _cuda.require_cuda().cuda.runtime.deviceSynchronize()
            expected = scenario.outputs(eager_state)
            if not index:
                if not expected:
                    return not_run("outputs() returned no array to compare")
                if not any(_elements(value) for value in expected.values()):
                    return not_run("every array outputs() returned is empty: nothing to "
                                   "compare")
            # Copied before anything replays: a replay may write the memory eager's outputs
            # lie in (an outputs() that hands back one buffer it keeps for every state; a
            # block the step freed during capture, which the graph still writes and eager's
            # output was then given), and would then rewrite what it is compared with.
            rounds.append({key: backend.copy(value) for key, value in expected.items()})
            if not index:
                shared = _shared_outputs(result, expected)
                if shared:
                    return not_run(_shared_outputs_note(shared))
                stale = _unrestored_outputs(result, unwritable)
                if stale:
                    return not_run(f"outputs() gives host memory the check cannot write for "
                                   f"{', '.join(map(repr, stale))} (a read-only array): it "
                                   f"cannot start the replays from eager's bytes there; have "
                                   f"the state hold a writable array over it")
        poisoned = _fill_outputs_graphs_allocated(result, rounds[0], restored)
        # Checked alone, an output eager's steps leave as it was (one only a later graph
        # writes, as decode's logits after prefill) and that the replays never write either
        # (still the complement the fill put there) is one both runs leave: not a mismatch.
        # Only alone: the run of all graphs in order compares every output.
        untouched = _left_as_it_was(backend, start, rounds) & poisoned
        if backend.has_generators:
            backend.set_rng_state(rng, _generators(backend, result.state))
        graphs = [result.graph(name).graph for name in names]
        for name in prefix:
            result.graph(name).graph.replay()
        mismatches: list[Mismatch] = []
        left: set[str] = set()  # outputs both runs left as they were
        for index, expected in enumerate(rounds):
            for graph in graphs:
                graph.replay()
            result.stream.synchronize()
            got = scenario.outputs(result.state)
            for key in expected:
                found = _compare(backend, key, expected[key], got.get(key), rtol, atol)
                if (found and key in untouched
                        and backend.is_complement(got[key], expected[key])):
                    left.add(key)
                    continue
                if (found and not index and key in poisoned
                        and backend.is_complement(got[key], expected[key])):
                    found[0].detail = NOT_WRITTEN
                if found and index + 1 < steps and found[0].detail != NOT_WRITTEN:
                    where = f"after replay {index + 1} of {steps}"
                    found[0].detail = f"{found[0].detail}; {where}" if found[0].detail else where
                mismatches.extend(found)
            if mismatches:  # the first round that differs
                break
    note = f"alone after {', '.join(prefix)} once: it cannot run on a fresh state" if prefix \
        else ""
    if left and not mismatches:
        if left == set(rounds[-1]):
            return not_run("its steps write no output (each left as it was, eagerly and "
                           "replayed): checked with the others")
        names_left = ", ".join(repr(key) for key in sorted(left))
        note = "; ".join(filter(None, [note, f"{names_left} left as it was by its steps, "
                                             f"eagerly and replayed: compared with the others"]))
    return CheckResult(not mismatches, list(rounds[-1]), steps, mismatches, rtol, atol, names,
                       note=note)


def fresh_state(result: CaptureResult) -> tuple[Any, dict]:
    """A fresh state (``setup()`` again) and its steps, for the check or another run from
    the same starting bytes. Its steps() and outputs() are asked before it is walked, as
    capture asks them of its state before its walk: one that makes a buffer in the state
    on its first call (a cached derived output, a per-graph workspace) has then made it in
    both. Called inside ``result.backend.use(result.streams)``."""
    state = result.scenario.make_state(result.params)
    steps = captured_steps(result, state)
    _outputs_to_flip(result.scenario, state)
    return state, steps


def captured_steps(result: CaptureResult, state) -> dict:
    """``steps(state)`` of another state than the captured one, which must name every graph
    that was captured (they were looked up by name: a KeyError, exit 70, where a steps()
    named its graphs after a counter or the state's contents)."""
    scenario = result.scenario
    steps = scenario.graph_steps(state)
    missing = [g.name for g in result.graphs if g.name not in steps]
    if missing:
        line = scenario.info.line_of("steps")
        where = f"{scenario.path}:{line}" if line else f"{scenario.path}"
        raise ScenarioError(
            f"{where}: steps() named graphs {sorted(steps)!r} for a fresh state, not "
            f"{missing!r}, which it named for the captured one; it must name the same graphs "
            "for every state (accelgraph calls setup() and steps() again to check and time "
            "the graphs)", path=str(scenario.path), line=line)
    return steps


def start_from(result: CaptureResult, arrays: list) -> tuple[list, list]:
    """The captured state given a fresh state's starting bytes (``arrays``: its device
    arrays, as ``find_arrays`` lists them), once setup's work on any stream is done (as
    capture waits for it before the flips); its host arrays (pinned buffers a graph's copy
    writes, which stray work during capture may have left holding what a step writes
    there) get back the bytes they held before capture. Returns (the bytes of the host
    arrays left alone, those of the ones it could not write), as ``HostSave.restore``;
    nothing where capture saved no state."""
    if result.snapshot is None:
        return [], []
    _cuda.require_cuda().cuda.runtime.deviceSynchronize()
    result.snapshot.restore_from(arrays)
    return result.host_save.restore() if result.host_save is not None else ([], [])


def _outputs_copied(backend: Backend, scenario, state) -> dict:
    """A copy of each of ``outputs(state)`` now, once the device's work is done; {} where
    outputs() raises or gives what cannot be copied (a state that has no outputs yet)."""
    try:
        _cuda.require_cuda().cuda.runtime.deviceSynchronize()
        return {key: backend.copy(value) for key, value in scenario.outputs(state).items()}
    except (Exception, SystemExit):
        return {}


def _left_as_it_was(backend: Backend, start: dict, rounds: list[dict]) -> set[str]:
    """The outputs whose every round (``rounds``) holds, bit for bit, what ``start`` held
    before the steps: outputs the steps never changed."""
    return {key for key in rounds[0] if key in start
            and all(not _compare(backend, key, start[key], r[key], 0.0, 0.0) for r in rounds)}


def _shared_outputs(result: CaptureResult, expected: dict) -> list[str]:
    """The outputs of a fresh state (``expected``, eager's after its first round, already
    copied) that lie in the captured state's memory: one buffer for both. Asked of the
    snapshot, not of outputs(): the captured state's outputs may be memory a graph
    allocated, mapped only during a launch (an async pool), and none has run yet. Only for
    an output that lies in an allocation the captured state holds are the captured state's
    outputs asked for too, where no async pool is used: bytes no array of the state reaches
    (the tail of a workspace both states use), which the restore does not reach and the
    fill leaves alone. A host output is shared where its span of bytes overlaps a host
    array the captured state holds."""
    snap = result.snapshot
    if snap is None:
        return []
    covered = [key for key in expected if _covered(snap, expected[key])]
    theirs = (_parts(_outputs_quietly(result.scenario, result.state).values())
              if covered and result.pool is not PoolKind.ASYNC else [])
    shared = [key for key in expected
              if any(snap.shares(part, theirs if key in covered else ())
                     for part in value_parts(expected[key]))]
    # a host output (a pinned buffer, a NumPy view of one): shared where it reaches a byte of
    # a host array the captured state held before capture (one buffer every setup() hands
    # out), as capture's save found them
    held = result.host_save.held if result.host_save is not None else []
    return shared + [key for key in expected if held_by(held, expected[key])]


def _parts(values) -> list:
    """The dense parts of outputs (each output's :func:`value_parts`), in order."""
    return [part for value in values for part in value_parts(value)]


def _covered(snapshot, value) -> bool:
    """Whether an output's elements lie in the snapshot's allocations (a sparse or nested
    tensor's: any of its dense parts')."""
    return any(snapshot.covers(part) for part in value_parts(value))


def _unrestored_outputs(result: CaptureResult, unwritable: list) -> list[str]:
    """The captured state's host outputs that reach a byte of ``unwritable`` (host arrays
    of the state the restore could not write): they may still hold what stray work wrote
    during capture, and the fill does not reach them either."""
    if not unwritable:
        return []
    theirs = _outputs_quietly(result.scenario, result.state)
    return [key for key, value in theirs.items() if held_by(unwritable, value)]


def _outputs_quietly(scenario, state) -> dict:
    """``outputs(state)`` as the check reads it (checked to be a dict of arrays), or {} where
    that raises (the check reports its errors itself)."""
    try:
        return scenario.outputs(state)
    except Exception:
        return {}


def _elements(value) -> int:
    """How many elements an output holds (a torch tensor's numel(), an array's size)."""
    if getattr(value, "is_nested", False):  # a jagged tensor: its entries' elements
        return sum(int(entry.numel()) for entry in value.unbind())
    numel = getattr(value, "numel", None)
    if callable(numel):
        return int(numel())
    return int(getattr(value, "size", 1))


def _shared_outputs_note(keys: list[str]) -> str:
    names = ", ".join(repr(key) for key in keys)
    return (f"outputs() gives the same memory for {names} in a fresh state as in the captured "
            f"one (setup() hands out an array it keeps between calls?): eager and replay would "
            f"both write that one buffer, and comparing it with itself proves nothing; have "
            f"setup() allocate its outputs afresh each call")


def _fill_outputs_graphs_allocated(result: CaptureResult, expected: dict,
                                   restored: list = ()) -> set[str]:
    """Fill the outputs the graphs allocated (memory outside the pre-capture state), and the
    host outputs in no host array the state held before capture (neither restored nor too
    large to save), with the complement of eager's values. Returns the names of the outputs
    so filled."""
    poisoned: set[str] = set()
    snapshot = result.snapshot
    if snapshot is None:
        return poisoned
    # Memory a graph's MEM_ALLOC node owns is mapped only while a launch holds it: writing
    # it from outside the graph is not safe, so async-pool device outputs are not filled.
    async_pool = result.pool is PoolKind.ASYNC
    current = result.scenario.outputs(result.state)
    for key, want in expected.items():
        target = current.get(key)
        if target is None:
            continue
        if is_host_array(target):
            # one in host arrays the check restored, or that were too large to save
            # (``restored``: their bytes), is left alone: a graph may read it; one the
            # state did not hold before capture is filled
            if held_by(restored, target):
                continue
        elif async_pool or _covered(snapshot, target):
            continue
        if result.backend.fill_complement(target, want):
            poisoned.add(key)
    return poisoned


def _compare(backend: Backend, key: str, want, got, rtol: float, atol: float) -> list[Mismatch]:
    if got is None:
        return [Mismatch(key, -1, 0, 0.0, "missing from the replayed state")]
    found = backend.difference(want, got, rtol, atol)
    if found.detail:
        return [Mismatch(key, -1, found.total, 0.0, found.detail)]
    if not found.bad:
        return []
    detail = ""
    if found.bits_only:
        detail = "equal values in other bits: +0 against -0, or NaNs of other payloads"
    return [Mismatch(key, found.bad, found.total, found.largest, detail)]


# -- timing -----------------------------------------------------------------------------------


@dataclass
class GraphTiming:
    """One graph's replay against its own step run eagerly."""

    name: str
    nodes: int
    eager: Timing
    graph: Timing

    @property
    def speedup(self) -> float:
        return speedup(self.eager, self.graph)

    def to_dict(self) -> dict:
        return {"name": self.name, "nodes": self.nodes, "eager": self.eager.to_dict(),
                "graph": self.graph.to_dict(), "speedup": self.speedup}


@dataclass
class ReplayReport:
    """Eager vs graph timings (per iteration of all of the scenario's steps), the same per
    graph, and the check."""

    eager: Timing
    graph: Timing
    check: CheckResult | None
    capture: CaptureResult
    per_graph: list[GraphTiming] = field(default_factory=list)

    @property
    def speedup(self) -> float:
        """Eager GPU time / graph GPU time (see timing.speedup)."""
        return speedup(self.eager, self.graph)

    def to_dict(self) -> dict:
        return {
            **self.capture.summary(),
            "eager": self.eager.to_dict(),
            "graph": self.graph.to_dict(),
            "speedup": self.speedup,
            "per_graph": [g.to_dict() for g in self.per_graph],
            "check": self.check.to_dict() if self.check else None,
        }


def time_replay(result: CaptureResult, *, iters: int, warmup: int, rounds: int,
                on_progress=None) -> tuple[Timing, Timing, list[GraphTiming]]:
    """Time eager steps and graph replays of the same work: all graphs together, and (for
    several graphs) each graph against its own step. Returns (eager, graph, per graph).

    All workloads' rounds are interleaved, so clock drift during the run hits them alike.
    ``on_progress(done, total)`` is called after each round.
    """
    with result.backend.use(result.streams):
        eager_state = result.scenario.make_state(result.params)
        eager_steps = captured_steps(result, eager_state)
        step_list = list(eager_steps.values())

        def eager_iteration():
            for step in step_list:
                step()

        workloads = {("eager", ""): eager_iteration, ("graph", ""): result.replay_all}
        if len(result.graphs) > 1:
            for g in result.graphs:
                workloads[("eager", g.name)] = eager_steps[g.name]
                workloads[("graph", g.name)] = g.graph.replay
        timed = measure_interleaved(workloads, iters=iters, rounds=rounds, warmup=warmup,
                                    stream=result.stream, on_round=on_progress)
    eager, graph = timed[("eager", "")], timed[("graph", "")]
    if len(result.graphs) == 1:
        only = result.graphs[0]
        return eager, graph, [GraphTiming(only.name, only.node_count, eager, graph)]
    per_graph = [GraphTiming(g.name, g.node_count, timed[("eager", g.name)],
                             timed[("graph", g.name)]) for g in result.graphs]
    return eager, graph, per_graph


# -- helpers ----------------------------------------------------------------------------------


def _capture_failure(scenario, name: str, exc: BaseException) -> CaptureError:
    """A CaptureError that says what went wrong in words, where, and what to do."""
    from .diagnose import explain

    cause = exc
    while isinstance(cause, AccelgraphError) and (cause.__cause__ or getattr(cause, "cause", None)):
        cause = getattr(cause, "cause", None) or cause.__cause__
    diagnosis = explain(exc, str(scenario.path))
    if diagnosis is not None:
        if diagnosis.where is None:
            step_name = "steps" if scenario.info.multi_graph else "step"
            diagnosis.where = f"{scenario.path}:{scenario.info.line_of(step_name)}"
        return CaptureError(f"capture of {name!r} failed: {diagnosis.line()}", cause)
    if isinstance(exc, AccelgraphError):
        detail = str(exc)
    else:
        detail = str(scenario.error_from(exc, f"step {name!r}"))
    return CaptureError(f"capture of {name!r} failed: {detail}", cause)


@dataclass
class UnrollReport:
    """Per-step timings of eager steps, a one-step graph and a graph of ``unroll`` steps."""

    eager: Timing
    graph: Timing  # the one-step graph, per step (= per launch)
    unrolled: Timing  # the unrolled graph, per step (its launch time / unroll)
    unroll: int
    check: CheckResult | None
    capture: CaptureResult  # of the unrolled graph
    one_step: CaptureResult
    one_step_check: CheckResult | None = None  # the one-step graph's own (timed beside it)

    @property
    def ok(self) -> bool:
        """Both graphs' checks passed (False when either was not run; True without checks)."""
        return all(c.ok for c in (self.check, self.one_step_check) if c is not None)

    @property
    def speedup(self) -> float:
        """Eager / unrolled graph, per step (GPU time medians)."""
        return speedup(self.eager, self.unrolled)

    @property
    def over_one_step(self) -> float:
        """Unrolled per-step GPU time / one-step graph GPU time (below 1: unrolling pays)."""
        g = self.graph.gpu_us.median
        return round(self.unrolled.gpu_us.median / g, 4) if g else 0.0

    def to_dict(self) -> dict:
        return {
            **self.capture.summary(),
            "one_step_capture": self.one_step.summary(),
            "eager": self.eager.to_dict(),
            "graph": self.graph.to_dict(),
            "unrolled": self.unrolled.to_dict(),
            "speedup": self.speedup,
            "unrolled_over_one_step": self.over_one_step,
            "check": self.check.to_dict() if self.check else None,
            "one_step_check": self.one_step_check.to_dict() if self.one_step_check else None,
        }


def time_unrolled(one_step: CaptureResult, unrolled: CaptureResult, *, iters: int, warmup: int,
                  rounds: int, on_progress=None) -> tuple[Timing, Timing, Timing]:
    """Per-step timings of eager steps, one-step replays and unrolled replays (each launch of
    the unrolled graph runs ``unrolled.unroll`` steps; eager and the one-step graph are timed
    in calls of that many steps too, ``iters // unroll`` calls a round; figures are per step).
    Rounds interleaved, on one stream."""
    k = unrolled.unroll
    with one_step.backend.use(one_step.streams):
        eager_state = one_step.scenario.make_state(one_step.params)
        step_list = list(one_step.scenario.graph_steps(eager_state).values())

        def eager_iteration():
            for step in step_list:
                step()

        def k_times(fn):
            def run():
                for _ in range(k):
                    fn()
            return run

        # every workload runs k steps per timed call, so all three take their rounds in turn
        timed = measure_interleaved(
            {"eager": k_times(eager_iteration), "graph": k_times(one_step.replay_all),
             "unrolled": unrolled.replay_all},
            iters=max(1, iters // k), rounds=rounds, warmup=max(1, warmup // k),
            stream=one_step.stream, on_round=on_progress)
    return timed["eager"].per(k), timed["graph"].per(k), timed["unrolled"].per(k)
