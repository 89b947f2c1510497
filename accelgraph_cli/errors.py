"""Errors accelgraph raises, each with the exit code the CLI maps it to.

Every error carries a one-line message a user can act on: what failed, where, what to do.
"""

from __future__ import annotations

from .enums import ExitCode

_LINE_BREAKS = str.maketrans({"\r": "\\r", "\n": "\\n", "\x0b": "\\x0b", "\x0c": "\\x0c",
                              "\x1c": "\\x1c", "\x1d": "\\x1d", "\x1e": "\\x1e",
                              "\x85": "\\x85", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def one_line(text) -> str:
    """``text`` (a file name, a message holding one) with every character Python's
    ``splitlines`` breaks a line at written as an escape (``\\n``, ``\\r``, ``\\u2028``...): a
    line that names a file stays one line, whatever the name."""
    return str(text).translate(_LINE_BREAKS)


class AccelgraphError(Exception):
    """Base class: an error with a one-line message and the CLI exit code it maps to."""

    exit_code: ExitCode = ExitCode.BAD_INPUT


class NoGPUError(AccelgraphError):
    """What a GPU verb or capture needs is missing: CuPy or NVIDIA's cuda-bindings is not
    installed or not usable, no CUDA device is visible, or (TorchGraph, torch scenarios)
    torch is not installed or not usable. The message says which, and what works without."""

    exit_code = ExitCode.NO_GPU


class GraphStateError(AccelgraphError, RuntimeError):
    """A Graph method was called in a state that does not allow it (e.g. replay before capture)."""


class CaptureError(AccelgraphError, RuntimeError):
    """A capture failed. The capture was ended, its partial graph discarded and the allocator
    restored, so the process can capture again. ``cause`` is the original exception."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause


class CudaError(AccelgraphError, RuntimeError):
    """A CUDA call failed; the message carries the CUDA error name."""

    def __init__(self, call: str, error_name: str, detail: str = "") -> None:
        self.call = call
        self.error_name = error_name
        super().__init__(f"{call} failed: {error_name}" + (f" ({detail})" if detail else ""))
