"""Capture diagnostics: turn a failed capture into what happened, where, and what to do.

CUDA reports a broken capture as an error code (cudaErrorStreamCaptureUnsupported, ...Unjoined,
...Invalidated, ...Implicit), CuPy sometimes as its own RuntimeError. Neither says which line
of the user's code did it nor how to fix it. ``explain`` looks at the exception chain (error
names, messages) and the traceback (which CuPy function was running) and returns a Diagnosis
with a cause in words, the scenario's file:line, and a suggested fix. Pure Python; the GPU
tier checks every rule on real failures (tests/broken_capture/).
"""

from __future__ import annotations

import linecache
import os
import re
import traceback
from dataclasses import dataclass

from .scenario import _message_of

_CUDA_ERROR = re.compile(r"cudaError\w+|CUDA_ERROR_\w+")


@dataclass
class Diagnosis:
    """Why a capture failed, in words."""

    cause: str  # a short key: "host_sync", "device_to_host", "cublas", ...
    what: str  # what happened, in words
    fix: str  # what to do
    where: str | None  # file:line in the scenario, when known
    cuda_error: str | None  # the CUDA error name, when there is one

    def line(self) -> str:
        at = f"{self.where}: " if self.where else ""
        err = f" [{self.cuda_error}]" if self.cuda_error else ""
        return f"{at}{self.what}{err}; fix: {self.fix}"


# (cause, test on (error names, messages, frame names/files), what, fix), most specific first.
_RULES = [
    ("legacy_stream", lambda e, m, f: "legacy default stream" in m or "StreamCaptureImplicit" in e,
     "work was enqueued on the legacy default stream (cupy.cuda.Stream.null) while capturing, or "
     "an unsafe call was made from another thread during a global-mode capture",
     "enqueue on the current stream (do not switch to Stream.null inside step); for other "
     "threads, use --error-mode thread_local"),
    ("unjoined", lambda e, m, f: "StreamCaptureUnjoined" in e,
     "a stream forked from the capture (via an event) was not joined back before capture ended",
     "record an event on each side stream after its work and make the capturing stream wait on it "
     "(origin.wait_event(side.record()))"),
    ("cublas", lambda e, m, f: "cublas" in f or "cublas" in m.lower() or
     any(name in f for name in ("matmul", "tensordot", " dot", "gemm")),
     "a cuBLAS call (a @ b, cupy.dot, cupy.matmul) ran during capture; CuPy refuses cuBLAS under "
     "capture", "use kernels.sgemm (kernels/gemm.cu) in step, or compute it in setup"),
    ("curand", lambda e, m, f: "curand" in f or "cupy/random" in f or "curand" in m.lower(),
     "a cuRAND call (cupy.random) ran during capture; CuPy refuses it under capture",
     "draw random numbers in setup (seeded numpy) and only read them in step"),
    ("other_library", lambda e, m, f: any(x in f or x in m.lower()
                                          for x in ("cusolver", "cusparse", "cutensor")),
     "a cuSOLVER/cuSPARSE/cuTENSOR call ran during capture; CuPy refuses them under capture",
     "move that call to setup, or write the operation as a kernel"),
    ("device_to_host", lambda e, m, f: any(name in f for name in (
        " get", "asnumpy", "__float__", "__int__", "__bool__", "item", "tolist", "__index__",
        "__repr__", "__str__", "__format__")) or "device to host" in m.lower()
     or "d2h" in m.lower(),
     "a device-to-host copy (.get(), cupy.asnumpy, float(x), print(x)) ran during capture: it "
     "needs the result now, but captured work does not run until replay",
     "keep results on the device in step (read them after replay), or do the copy in setup"),
    ("host_sync", lambda e, m, f: "synchronize" in f or "synchroniz" in m.lower()
     or "streamQuery" in f or "eventQuery" in f or " done" in f,
     "the host waited for the GPU (synchronize()/query) during capture: captured work does not "
     "run until replay, so there is nothing to wait for",
     "remove the synchronization from step (replay is asynchronous; synchronize after it)"),
    ("unsafe_call", lambda e, m, f: "StreamCaptureUnsupported" in e and (
        "malloc" in f.lower() or "alloc" in m.lower()),
     "a cudaMalloc/cudaHostAlloc (outside the graph's pool) ran during a global or thread-local "
     "capture, which forbids it",
     "allocate it in setup, let CuPy allocate (the graph pool makes that legal), or use "
     "--error-mode relaxed"),
    ("unsafe_call", lambda e, m, f: "StreamCaptureUnsupported" in e,
     "an operation that is not allowed while capturing ran (a synchronous CUDA call, an "
     "allocation outside the pool, a query of the capturing stream)",
     "move it to setup, or try --error-mode relaxed if the call is safe for your graph"),
    ("invalidated", lambda e, m, f: "StreamCaptureInvalidated" in e,
     "the capture was invalidated by an earlier illegal operation in it",
     "look for a synchronization, a host copy or an allocation in step, or a kernel used for the "
     "first time (loading its module is not capturable): move it to setup, or run step once "
     "eagerly before capturing"),
    ("isolation", lambda e, m, f: "StreamCaptureIsolation" in e or "StreamCaptureMerge" in e,
     "captured work depends on a stream or event outside the capture",
     "create events and side streams in setup and fork them from the capturing stream in step"),
    ("wrong_thread", lambda e, m, f: "StreamCaptureWrongThread" in e,
     "the capture was ended from a thread other than the one that began it",
     "begin and end each capture in one thread"),
]


# PyTorch reports most capture failures with one vague message ("operation not permitted when
# stream is capturing", "operation failed due to a previous error during capture"), raised from
# C++ with no Python frame of torch's: the scenario's own line says what was called. Each rule:
# (cause, pattern on that line, what (may use the matched text as {call}), fix).
_TORCH_CAPTURE_FAILURE = re.compile(
    r"stream is capturing|during capture|during CUDA graph capture|StreamCapture|"
    r"operation not permitted when stream", re.IGNORECASE)
_TORCH_LINE_RULES = [
    ("data_dependent_shape", re.compile(r"\b(nonzero|masked_select|unique|unique_consecutive|"
                                        r"argwhere|repeat_interleave)\b|\[.*(mask|[<>]|==).*\]"),
     "{call} makes a tensor whose size depends on the data: the host must read that size, and "
     "captured work has not run yet",
     "use fixed-size operations (torch.where, multiply by the mask, a padded index list), or do "
     "it in setup"),
    ("host_read", re.compile(r"\.(item|tolist|cpu|numpy)\(\)|\.to\(\s*['\"]cpu|"
                             r"\bprint\(|\b(float|int|bool)\(|^\s*(if|while|assert)\b"),
     "{call} reads a tensor's value on the host: it waits for the GPU, but captured work does not "
     "run until replay",
     "keep the value on the device (torch.where, clamp, masks), or read it in setup or after "
     "replay"),
    ("host_sync", re.compile(r"synchronize\(|\.query\(\)|\.wait\(\)"),
     "{call} waits for the GPU during capture: captured work does not run until replay, so there "
     "is nothing to wait for",
     "remove the synchronization from step (replay is asynchronous; synchronize after it)"),
]
_PAGEABLE_COPY = "Cannot copy between CPU and CUDA tensors during CUDA graph capture"


def _torch_diagnosis(messages: str, line: str, where: str | None, errors: str
                     ) -> Diagnosis | None:
    """A Diagnosis for a failure PyTorch raised under capture, read off the scenario's line."""
    host_read = _TORCH_LINE_RULES[1][1]
    if _PAGEABLE_COPY in messages and not host_read.search(line):
        return Diagnosis(
            "pageable_copy", "a tensor made on the CPU is copied to the GPU in step: a copy from "
            "pageable host memory cannot be captured",
            "create the tensor in setup on the device (torch.tensor(..., device='cuda')), or "
            "pin it (pin_memory=True) and copy with non_blocking=True", where, None)
    if not (_TORCH_CAPTURE_FAILURE.search(messages) or _PAGEABLE_COPY in messages):
        return None
    for cause, pattern, what, fix in _TORCH_LINE_RULES:
        found = pattern.search(line)
        if found:
            call = found.group(0).strip()
            call = f"`{call}...)`" if call.endswith("(") else f"`{call}`"
            return Diagnosis(cause, what.format(call=call), fix, where,
                             errors.split()[0] if errors else None)
    return None


def explain(exc: BaseException, scenario_path: str | None = None) -> Diagnosis | None:
    """A Diagnosis for a capture failure, or None when the cause is not a capture rule
    (a plain bug in the scenario: its own message is then the best explanation)."""
    chain = _chain(exc)
    errors = " ".join(sorted({m for e in chain for m in _CUDA_ERROR.findall(_text(e))}))
    messages = " | ".join(_text(e) for e in chain)
    frames = _frames(chain)
    where, line = _where_and_line(frames, scenario_path)
    from_torch = _torch_diagnosis(messages, line, where, errors)
    if from_torch is not None:
        return from_torch
    frame_text = " " + " ".join(f"{os.path.basename(fn)}:{name} {fn} {name}" for fn, _, name in frames)
    for cause, test, what, fix in _RULES:
        if test(errors, messages, frame_text):
            return Diagnosis(cause, what, fix, _where(frames, scenario_path),
                             errors.split()[0] if errors else None)
    return None


def _chain(exc: BaseException) -> list[BaseException]:
    seen, out = set(), []
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def _text(exc: BaseException) -> str:
    # (a message that cannot be written, ValueError(10**5000), is said to be so: str()
    # raised here, and a step that raised it was an internal error, exit 70)
    return f"{type(exc).__name__}: {_message_of(exc)}"


def _frames(chain) -> list[tuple[str, int, str]]:
    frames = []
    for exc in chain:
        for fr in traceback.extract_tb(exc.__traceback__):
            frames.append((fr.filename, fr.lineno or 0, fr.name))
    return frames


def _where(frames, scenario_path) -> str | None:
    return _where_and_line(frames, scenario_path)[0]


def _where_and_line(frames, scenario_path) -> tuple[str | None, str]:
    """``file:line`` of the innermost frame in the scenario file, and that line's text."""
    if not scenario_path:
        return None, ""
    target = os.path.abspath(scenario_path)
    hits = [(fn, line) for fn, line, _ in frames if os.path.abspath(fn) == target]
    if not hits:
        return None, ""
    filename, number = hits[-1]
    return f"{scenario_path}:{number}", linecache.getline(filename, number).strip()
