"""diagnose.explain on synthetic exception chains and tracebacks (the GPU tier checks real ones).

Each exception here is raised through functions compiled from source with a chosen file name,
so its traceback has exactly the frames (function names, files, lines) a rule looks at: a
CuPy function named ``dot``, a scenario file two frames deep, and so on.
"""

from __future__ import annotations

import pytest

from accelgraph_cli.run.diagnose import Diagnosis, explain

RUNNER = "/site-packages/accelgraph_cli/runner.py"


def raise_through(names: list[str], exc: BaseException, filename: str = "/lib/cupy/_core.py",
                  cause: BaseException | None = None) -> BaseException:
    """Raise ``exc`` from a call chain ``names[0]() -> names[1]() -> ...`` defined in
    ``filename``; the caught exception (traceback included) is returned. ``cause`` is raised
    first and ``exc`` raised from it explicitly (``raise exc from cause``)."""
    lines = []
    for i, name in enumerate(names):
        lines.append(f"def {name}():")
        if i + 1 < len(names):
            lines.append(f"    {names[i + 1]}()")
        elif cause is None:
            lines.append("    raise EXC")
        else:
            lines.append("    raise EXC from CAUSE")
    namespace = {"EXC": exc, "CAUSE": cause}
    exec(compile("\n".join(lines) + "\n", filename, "exec"), namespace)
    return call_in_runner(namespace[names[0]])


def call_in_runner(function) -> BaseException:
    """Call ``function`` from a frame in another file (as the runner does) and return what it
    raised; only the runner's frame and those below it are in the traceback."""
    namespace: dict = {}
    exec(compile("def start(f):\n    try:\n        f()\n    except BaseException as e:\n"
                 "        return e\n", RUNNER, "exec"), namespace)
    caught = namespace["start"](function)
    assert caught is not None, "the function did not raise"
    return caught


def cuda(name: str) -> RuntimeError:
    return RuntimeError(f"{name}: operation failed")


# ----------------------------------------------------------------------- one case per rule

WHAT = {
    "legacy_stream": "work was enqueued on the legacy default stream (cupy.cuda.Stream.null) while "
    "capturing, or an unsafe call was made from another thread during a global-mode capture",
    "unjoined": "a stream forked from the capture (via an event) was not joined back before capture "
    "ended",
    "cublas": "a cuBLAS call (a @ b, cupy.dot, cupy.matmul) ran during capture; CuPy refuses cuBLAS "
    "under capture",
    "curand": "a cuRAND call (cupy.random) ran during capture; CuPy refuses it under capture",
    "other_library": "a cuSOLVER/cuSPARSE/cuTENSOR call ran during capture; CuPy refuses them under "
    "capture",
    "device_to_host": "a device-to-host copy (.get(), cupy.asnumpy, float(x), print(x)) ran during "
    "capture: it needs the result now, but captured work does not run until replay",
    "host_sync": "the host waited for the GPU (synchronize()/query) during capture: captured work "
    "does not run until replay, so there is nothing to wait for",
    "unsafe_call/malloc": "a cudaMalloc/cudaHostAlloc (outside the graph's pool) ran during a global "
    "or thread-local capture, which forbids it",
    "unsafe_call": "an operation that is not allowed while capturing ran (a synchronous CUDA call, an "
    "allocation outside the pool, a query of the capturing stream)",
    "invalidated": "the capture was invalidated by an earlier illegal operation in it",
    "isolation": "captured work depends on a stream or event outside the capture",
    "wrong_thread": "the capture was ended from a thread other than the one that began it",
}
FIX = {
    "legacy_stream": "enqueue on the current stream (do not switch to Stream.null inside step); for "
    "other threads, use --error-mode thread_local",
    "unjoined": "record an event on each side stream after its work and make the capturing stream "
    "wait on it (origin.wait_event(side.record()))",
    "cublas": "use kernels.sgemm (kernels/gemm.cu) in step, or compute it in setup",
    "curand": "draw random numbers in setup (seeded numpy) and only read them in step",
    "other_library": "move that call to setup, or write the operation as a kernel",
    "device_to_host": "keep results on the device in step (read them after replay), or do the copy in "
    "setup",
    "host_sync": "remove the synchronization from step (replay is asynchronous; synchronize after it)",
    "unsafe_call/malloc": "allocate it in setup, let CuPy allocate (the graph pool makes that legal), "
    "or use --error-mode relaxed",
    "unsafe_call": "move it to setup, or try --error-mode relaxed if the call is safe for your graph",
    "invalidated": "look for a synchronization, a host copy or an allocation in step, or a kernel used "
    "for the first time (loading its module is not capturable): move it to setup, or run step once "
    "eagerly before capturing",
    "isolation": "create events and side streams in setup and fork them from the capturing stream in "
    "step",
    "wrong_thread": "begin and end each capture in one thread",
}

U = "cudaErrorStreamCaptureUnsupported"
# (case id, frames, file of the frames, exception, expected rule, expected CUDA error name)
CASES = [
    ("legacy message", ["launch"], None, RuntimeError("work on the legacy default stream"),
     "legacy_stream", None),
    ("implicit", ["launch"], None, cuda("cudaErrorStreamCaptureImplicit"), "legacy_stream",
     "cudaErrorStreamCaptureImplicit"),
    ("unjoined", ["capture_end"], None, cuda("cudaErrorStreamCaptureUnjoined"), "unjoined",
     "cudaErrorStreamCaptureUnjoined"),
    ("cublas file", ["call"], "/lib/cupy_backends/cuda/libs/cublas.py", RuntimeError("x"), "cublas",
     None),
    ("cublas message", ["call"], None, RuntimeError("CUBLAS_STATUS_NOT_SUPPORTED"), "cublas", None),
    ("matmul frame", ["matmul"], None, RuntimeError("x"), "cublas", None),
    ("tensordot frame", ["tensordot"], None, RuntimeError("x"), "cublas", None),
    ("dot frame", ["dot"], None, RuntimeError("x"), "cublas", None),
    ("gemm frame", ["gemm"], None, RuntimeError("x"), "cublas", None),
    ("curand file", ["call"], "/lib/cupy_backends/cuda/libs/curand.py", RuntimeError("x"), "curand",
     None),
    ("cupy/random file", ["normal"], "/lib/cupy/random/_generator.py", RuntimeError("x"), "curand",
     None),
    ("curand message", ["call"], None, RuntimeError("cuRAND refused"), "curand", None),
    ("cusolver file", ["call"], "/lib/cupy_backends/cuda/libs/cusolver.py", RuntimeError("x"),
     "other_library", None),
    ("cusparse message", ["call"], None, RuntimeError("cuSPARSE failed"), "other_library", None),
    ("cutensor message", ["call"], None, RuntimeError("CUTENSOR_STATUS"), "other_library", None),
    *[(f"{name} frame", [name], None, RuntimeError("x"), "device_to_host", None)
      for name in ("get", "asnumpy", "__float__", "__int__", "__bool__", "item", "tolist",
                   "__index__", "__repr__", "__str__", "__format__")],
    ("device to host message", ["call"], None, RuntimeError("a Device To Host copy"),
     "device_to_host", None),
    ("d2h message", ["call"], None, RuntimeError("D2H refused"), "device_to_host", None),
    ("synchronize frame", ["synchronize"], None, RuntimeError("x"), "host_sync", None),
    ("synchronizing message", ["call"], None, RuntimeError("Synchronizing is not allowed"),
     "host_sync", None),
    ("streamQuery frame", ["streamQuery"], None, RuntimeError("x"), "host_sync", None),
    ("eventQuery frame", ["eventQuery"], None, RuntimeError("x"), "host_sync", None),
    ("done frame", ["done"], None, RuntimeError("x"), "host_sync", None),
    ("malloc frame", ["cudaMalloc"], None, cuda(U), "unsafe_call/malloc", U),
    ("MALLOC frame", ["MALLOC_ASYNC"], None, cuda(U), "unsafe_call/malloc", U),
    ("alloc message", ["call"], None, RuntimeError(f"{U}: cudaHostAlloc"), "unsafe_call/malloc", U),
    ("unsupported", ["call"], None, cuda(U), "unsafe_call", U),
    ("invalidated", ["call"], None, cuda("cudaErrorStreamCaptureInvalidated"), "invalidated",
     "cudaErrorStreamCaptureInvalidated"),
    ("isolation", ["call"], None, cuda("cudaErrorStreamCaptureIsolation"), "isolation",
     "cudaErrorStreamCaptureIsolation"),
    ("merge", ["call"], None, cuda("cudaErrorStreamCaptureMerge"), "isolation",
     "cudaErrorStreamCaptureMerge"),
    ("wrong thread", ["call"], None, cuda("cudaErrorStreamCaptureWrongThread"), "wrong_thread",
     "cudaErrorStreamCaptureWrongThread"),
    ("driver name", ["call"], None, cuda("CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD"), None, None),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_each_rule_on_its_own_evidence(case):
    _, frames, filename, exc, rule, error_name = case
    caught = raise_through(frames, exc, filename or "/lib/cupy/_core.py")
    diagnosis = explain(caught)
    if rule is None:
        assert diagnosis is None
        return
    assert diagnosis == Diagnosis(rule.split("/")[0], WHAT[rule], FIX[rule], None, error_name)


@pytest.mark.parametrize("type_name, rule", [("CUBLASError", "cublas"), ("CURANDError", "curand"),
                                             ("CUSOLVERError", "other_library")])
def test_the_exception_type_name_is_evidence_too(type_name, rule):
    # CuPy raises cupy_backends...cublas.CUBLASError("CUBLAS_STATUS_..."): the library's name
    # can be in the type alone.
    error_type = type(type_name, (RuntimeError,), {})
    assert explain(raise_through(["call"], error_type("status 14"))).cause == rule


def test_driver_error_names_are_found_too():
    # CUDA_ERROR_* names count as CUDA errors (the cause then comes from the other evidence).
    diagnosis = explain(raise_through(["synchronize"], cuda("CUDA_ERROR_ILLEGAL_STATE")))
    assert (diagnosis.cause, diagnosis.cuda_error) == ("host_sync", "CUDA_ERROR_ILLEGAL_STATE")


def test_a_plain_bug_is_not_a_capture_rule():
    assert explain(raise_through(["step"], KeyError("weights"))) is None
    assert explain(raise_through(["undot", "adot"], ValueError("x"))) is None


def test_frame_named_dot_is_cublas_but_a_name_containing_dot_inside_is_not():
    assert explain(raise_through(["forward", "dot"], ValueError("x"))).cause == "cublas"
    # " dot" must start a name: "undot" is not cupy.dot
    assert explain(raise_through(["undot"], ValueError("x"))) is None


def test_two_cuda_error_names_rule_order_decides_the_cause_first_name_is_reported():
    both = RuntimeError("cudaErrorStreamCaptureUnsupported, then cudaErrorStreamCaptureInvalidated")
    diagnosis = explain(raise_through(["call"], both))
    # Unsupported is the more specific rule; the name reported is the first in sorted order.
    assert diagnosis.cause == "unsafe_call"
    assert diagnosis.what == WHAT["unsafe_call"]
    assert diagnosis.cuda_error == "cudaErrorStreamCaptureInvalidated"
    unjoined_and_invalidated = RuntimeError(
        "cudaErrorStreamCaptureUnjoined; later cudaErrorStreamCaptureInvalidated")
    diagnosis = explain(raise_through(["call"], unjoined_and_invalidated))
    assert (diagnosis.cause, diagnosis.cuda_error) == ("unjoined", "cudaErrorStreamCaptureInvalidated")


def scenario(tmp_path, body: str):
    path = tmp_path / "my_scenario.py"
    path.write_text(body)
    namespace: dict = {}
    exec(compile(body, str(path), "exec"), namespace)
    return path, namespace


def test_where_is_the_innermost_frame_in_the_scenario_file(tmp_path):
    path, ns = scenario(tmp_path, (
        "def helper(x):\n"
        "    x.synchronize()\n"  # line 2: the innermost scenario frame
        "\n"
        "def middle(x):\n"
        "    helper(x)\n"  # line 5
        "\n"
        "def step(state):\n"
        "    middle(state)\n"  # line 8: outermost scenario frame
    ))

    class Stream:
        def synchronize(self):
            raise RuntimeError("cudaErrorStreamCaptureUnsupported: operation not permitted")

    caught = call_in_runner(lambda: ns["step"](Stream()))
    diagnosis = explain(caught, str(path))
    assert diagnosis.where == f"{path}:2"
    assert diagnosis.cause == "host_sync"
    # A capture error with the scenario's line in hand: the line names the call.
    assert diagnosis.line() == (
        f"{path}:2: `synchronize(...)` waits for the GPU during capture: captured work does not run "
        f"until replay, so there is nothing to wait for [cudaErrorStreamCaptureUnsupported]; fix: "
        f"{FIX['host_sync']}"
    )
    # The same path given relative to the working directory still matches the frames.
    relative = tmp_path.name + "/" + path.name
    import os

    old = os.getcwd()
    os.chdir(tmp_path.parent)
    try:
        assert explain(caught, relative).where == f"{relative}:2"
    finally:
        os.chdir(old)
    # Without a scenario path, or with another file, there is no "where".
    assert explain(caught).where is None
    assert explain(caught, str(tmp_path / "other.py")).where is None


def test_cause_reached_only_through_implicit_chaining(tmp_path):
    path, ns = scenario(tmp_path, (
        "def step(state):\n"
        "    try:\n"
        "        state.capture()\n"  # line 3
        "    except RuntimeError:\n"
        "        raise ValueError('cleanup failed')\n"  # line 5: during handling, no 'from'
    ))

    class State:
        def capture(self):
            raise RuntimeError("cudaErrorStreamCaptureUnjoined: unjoined")

    caught = call_in_runner(lambda: ns["step"](State()))
    assert caught.__cause__ is None and isinstance(caught.__context__, RuntimeError)
    diagnosis = explain(caught, str(path))
    assert (diagnosis.cause, diagnosis.cuda_error) == ("unjoined", "cudaErrorStreamCaptureUnjoined")
    # The chain is walked outer first, so the inner exception's frames come last: line 3.
    assert diagnosis.where == f"{path}:3"


def test_explicit_cause_is_followed_before_context():
    cause = raise_through(["launch"], cuda("cudaErrorStreamCaptureWrongThread"))
    outer = raise_through(["wrapper"], RuntimeError("capture failed"), cause=cause)
    assert outer.__cause__ is cause
    assert explain(outer).cause == "wrong_thread"


def test_a_chain_that_loops_back_ends():
    first, second = RuntimeError("a"), RuntimeError("cudaErrorStreamCaptureInvalidated")
    first.__context__, second.__context__ = second, first
    assert explain(first).cause == "invalidated"


def test_line_without_where_or_error_name():
    d = Diagnosis("cublas", "what happened", "what to do", None, None)
    assert d.line() == "what happened; fix: what to do"
    d = Diagnosis("cublas", "what happened", "what to do", "s.py:3", "cudaErrorX")
    assert d.line() == "s.py:3: what happened [cudaErrorX]; fix: what to do"


def test_an_exception_whose_message_cannot_be_written_is_still_explained():
    # str(ValueError(10**5000)) raises (too long an int to write): explain() raised with it,
    # and a step raising such an exception during capture was an internal error (exit 70)
    assert explain(ValueError(10**5000), "s.py") is None  # no rule's evidence, and no error
    error = RuntimeError("cudaErrorStreamCaptureUnsupported")
    error.__context__ = ValueError(10**5000)
    assert explain(error, "s.py") is not None  # the chain is still read
