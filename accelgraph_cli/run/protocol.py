"""The run protocol behind `capture`, `replay`, `dump` and `smoke`.

    warm-up  : a throwaway state runs each step eagerly (compiles kernels, loads modules —
               neither is capturable), then is dropped;
    capture  : a fresh state is captured, one Graph per step, with the chosen pool and mode;
    check    : eager steps on another fresh state vs replays of the captured graphs, outputs
               compared bitwise (or within --rtol/--atol);
    timing   : eager steps vs graph replays, CUDA events + host clocks, median over rounds.

Every function here takes a loaded Scenario (see scenario.py) and returns plain dataclasses the
CLI renders and `--json` prints.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..cuda import device as _cuda
from ..cuda import pools
from ..cuda.graph import Graph
from ..cuda.nodes import node_kinds
from ..enums import CaptureErrorMode, PoolKind
from ..errors import AccelgraphError, CaptureError


@dataclass
class CapturedGraph:
    """One graph of a capture, with what it cost and what it holds."""

    name: str
    graph: Graph
    node_count: int
    kinds: dict[str, int]
    capture_ms: float  # capture_begin .. end of the step's enqueueing
    instantiate_ms: float  # capture_end (+ instantiate)
    pool_bytes: int


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
    stream: object = None

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
            "params": self.params,
            "pool": self.pool,
            "error_mode": self.error_mode,
            "nodes": self.node_count,
            "kinds": self.kinds(),
            "pool_bytes": self.pool_bytes,
            "graphs": [
                {
                    "name": g.name,
                    "nodes": g.node_count,
                    "kinds": g.kinds,
                    "capture_ms": round(g.capture_ms, 4),
                    "instantiate_ms": round(g.instantiate_ms, 4),
                    "pool_bytes": g.pool_bytes,
                }
                for g in self.graphs
            ],
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
    return pool, error_mode


def _warm_up(scenario, params, stream) -> None:
    state = scenario.make_state(params)
    for name, step in scenario.graph_steps(state).items():
        _call_step(scenario, name, step)
    stream.synchronize()


def _call_step(scenario, name, step) -> None:
    try:
        step()
    except AccelgraphError:
        raise
    except Exception as exc:
        raise scenario.error_from(exc, f"step {name!r}") from exc


def capture(
    scenario,
    params: dict,
    *,
    pool: PoolKind | str | None = None,
    error_mode: CaptureErrorMode | str | None = None,
    keep_graph: bool = False,
    warmup: bool = True,
) -> CaptureResult:
    """Warm up, then capture every step of ``scenario`` into its own Graph and instantiate it.

    ``pool``: "private" (a pool per graph), "shared" (one pool for all graphs, captured in the
    scenario's order — largest first for buckets) or "async" (stream-ordered allocation nodes).
    Debug mode is on, so each graph can be dumped and walked.
    """
    cupy = _cuda.require_cuda()
    pool, error_mode = resolve_options(scenario, pool, error_mode)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        if warmup:
            _warm_up(scenario, params, stream)
        state = scenario.make_state(params)
        steps = scenario.graph_steps(state)
        stream.synchronize()
        shared = pools.new_pool(PoolKind.PRIVATE) if pool is PoolKind.SHARED else None
        tokens = []
        captured = []
        for name, step in steps.items():
            token = shared or pools.new_pool(PoolKind.ASYNC if pool is PoolKind.ASYNC
                                             else PoolKind.PRIVATE)
            if token not in tokens:
                tokens.append(token)
            graph = Graph(keep_graph=keep_graph, pool=token, capture_error_mode=error_mode)
            graph.enable_debug_mode()
            t0 = time.perf_counter()
            graph.capture_begin()
            try:
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
            kinds = node_kinds(graph.graph_handle)
            captured.append(
                CapturedGraph(
                    name=name,
                    graph=graph,
                    node_count=sum(kinds.values()),
                    kinds=kinds,
                    capture_ms=(t1 - t0) * 1e3,
                    instantiate_ms=(t2 - t1) * 1e3,
                    pool_bytes=graph.pool_bytes(),
                )
            )
        held = [pools.get_pool(t) for t in tokens]
        if pool is PoolKind.ASYNC:
            pool_bytes = pools.graph_memory_reserved()
        else:
            pool_bytes = sum(p.bytes_held() for p in held)
    return CaptureResult(
        scenario=scenario,
        params=params,
        pool=pool,
        error_mode=error_mode,
        graphs=captured,
        pool_bytes=pool_bytes,
        state=state,
        stream=stream,
    )


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
        return (
            f"output {self.output!r}: {self.elements:,} of {self.total:,} elements differ, "
            f"largest difference {self.max_abs_diff:.6g}"
        )


@dataclass
class CheckResult:
    """Eager vs replay, compared output by output."""

    ok: bool
    outputs: list[str]
    steps: int
    mismatches: list[Mismatch]
    rtol: float
    atol: float

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "outputs": self.outputs,
            "steps": self.steps,
            "rtol": self.rtol,
            "atol": self.atol,
            "mismatches": [m.__dict__ for m in self.mismatches],
        }


def check(result: CaptureResult, *, steps: int = 2, rtol: float = 0.0, atol: float = 0.0) -> CheckResult:
    """Run ``steps`` eager steps on a fresh state and ``steps`` replays of the captured graphs
    on the captured (fresh, untouched) state; compare every output.

    Bitwise by default; with rtol/atol, |a - b| <= atol + rtol * |b| element by element.
    Call before anything else replays the captured graphs (the check needs the fresh state).
    """
    cupy = _cuda.require_cuda()
    scenario = result.scenario
    with result.stream:
        eager_state = scenario.make_state(result.params)
        eager_steps = scenario.graph_steps(eager_state)
        for _ in range(steps):
            for name, step in eager_steps.items():
                _call_step(scenario, name, step)
        for _ in range(steps):
            result.replay_all()
        result.stream.synchronize()
        expected = scenario.outputs(eager_state)
        got = scenario.outputs(result.state)
        mismatches = []
        for key in expected:
            mismatches.extend(_compare(cupy, key, expected[key], got.get(key), rtol, atol))
    return CheckResult(not mismatches, list(expected), steps, mismatches, rtol, atol)


def _compare(cupy, key, want, got, rtol, atol) -> list[Mismatch]:
    if got is None:
        return [Mismatch(key, -1, 0, 0.0, "missing from the replayed state")]
    want = cupy.asarray(want)
    got = cupy.asarray(got)
    if want.shape != got.shape or want.dtype != got.dtype:
        return [Mismatch(key, -1, int(want.size), 0.0,
                         f"shape/dtype {got.shape}/{got.dtype} != eager {want.shape}/{want.dtype}")]
    if rtol == 0 and atol == 0:
        if want.dtype.kind in "fc":
            same = (want == got) | (cupy.isnan(want) & cupy.isnan(got))
        else:
            same = want == got
    else:
        same = cupy.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    bad = int((~same).sum())
    if not bad:
        return []
    if want.dtype.kind in "fciu":
        diff = cupy.abs(got.astype(cupy.float64) - want.astype(cupy.float64))
        diff = cupy.where(cupy.isnan(diff), cupy.inf, diff)
        largest = float(diff.max())
    else:
        largest = float("nan")
    return [Mismatch(key, bad, int(want.size), largest)]


# -- timing -----------------------------------------------------------------------------------


@dataclass
class ReplayReport:
    """Eager vs graph timings (per iteration of all of the scenario's steps) and the check."""

    eager: object  # timing.Timing
    graph: object  # timing.Timing
    check: CheckResult | None
    capture: CaptureResult

    @property
    def speedup(self) -> float:
        """Eager GPU time / graph GPU time (see timing.speedup)."""
        from ..cuda.timing import speedup

        return speedup(self.eager, self.graph)

    def to_dict(self) -> dict:
        return {
            **self.capture.summary(),
            "eager": self.eager.to_dict(),
            "graph": self.graph.to_dict(),
            "speedup": self.speedup,
            "check": self.check.to_dict() if self.check else None,
        }


def time_replay(result: CaptureResult, *, iters: int, warmup: int, rounds: int, on_progress=None):
    """Time eager steps and graph replays of the same work; returns (eager, graph) Timings.

    Eager and graph rounds alternate, so clock drift during the run hits both alike.
    ``on_progress(done, total)`` is called after each round.
    """
    from ..cuda.timing import measure_interleaved

    with result.stream:
        eager_state = result.scenario.make_state(result.params)
        eager_steps = list(result.scenario.graph_steps(eager_state).values())

        def eager_iteration():
            for step in eager_steps:
                step()

        timed = measure_interleaved(
            {"eager": eager_iteration, "graph": result.replay_all},
            iters=iters, rounds=rounds, warmup=warmup, stream=result.stream,
            on_round=on_progress,
        )
    return timed["eager"], timed["graph"]


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
