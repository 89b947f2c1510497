"""The vocabularies accelgraph's options, library calls and JSON share, each defined once.

Typer options are typed with these enums, so ``--help`` lists the choices and the parser
refuses anything else; the library takes a member or its value (``"private"``); JSON and
messages show the value (members are ``str`` / ``int`` subclasses and print as their value).
"""

from __future__ import annotations

from enum import Enum, IntEnum


class _Choice(str, Enum):
    """A str enum that prints as its value (``f"{PoolKind.PRIVATE}"`` is ``private``)."""

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, value: object, what: str) -> _Choice:
        """The member ``value`` names; ValueError naming ``what`` and every choice otherwise."""
        if type(value) is cls:  # a member already (every Graph() gets one): no lookup
            return value
        if type(value) is str:  # a value ("private"): the map's lookup, not Enum's call
            member = cls._value2member_map_.get(value)  # (which took 4x as long)
            if member is not None:
                return member
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(repr(m.value) for m in cls)
            raise ValueError(f"{what} must be one of {choices}; got {value!r}") from None


class PoolKind(_Choice):
    """Where allocations made during a capture come from."""

    PRIVATE = "private"
    """A CuPy MemoryPool per graph, used only by graph captures (the default)."""
    SHARED = "shared"
    """One private pool shared by several graphs, captured in order (largest first)."""
    ASYNC = "async"
    """Stream-ordered allocation: allocations become MEM_ALLOC/MEM_FREE nodes of the graph."""


class CaptureErrorMode(_Choice):
    """cudaStreamCaptureMode, spelled as torch's ``capture_error_mode``."""

    DEFAULT = "default"
    """PyTorch's default on CUDA: global."""
    GLOBAL = "global"
    """Potentially unsafe calls (cudaMalloc, synchronous calls) fail in any thread."""
    THREAD_LOCAL = "thread_local"
    """... fail only in the capturing thread."""
    RELAXED = "relaxed"
    """... are allowed, except those that conflict with capture directly."""

    @property
    def cuda_value(self) -> int:
        """The cudaStreamCaptureMode value: Global 0 (and "default"), ThreadLocal 1, Relaxed 2."""
        return _CUDA_CAPTURE_MODE[self]

    @property
    def resolved(self) -> CaptureErrorMode:
        """The mode "default" stands for (global); every other mode is itself."""
        return CaptureErrorMode.GLOBAL if self is CaptureErrorMode.DEFAULT else self


_CUDA_CAPTURE_MODE = {
    CaptureErrorMode.DEFAULT: 0,
    CaptureErrorMode.GLOBAL: 0,
    CaptureErrorMode.THREAD_LOCAL: 1,
    CaptureErrorMode.RELAXED: 2,
}


class Backend(_Choice):
    """Which library a scenario's step launches its work with, and so which graph captures it."""

    CUPY = "cupy"
    """CuPy arrays and accelgraph_cli.kernels; captured by accelgraph's Graph on CuPy streams."""
    TORCH = "torch"
    """PyTorch tensors and modules; captured through torch's own graph API (TorchGraph)."""


# Each choice's members by member or value (a member hashes and compares as its value).
_MEMBERS = {cls: {member: member for member in cls} for cls in (PoolKind, CaptureErrorMode, Backend)}


def choice(cls: type[_Choice], value: object, what: str) -> _Choice:
    """``cls.parse(value, what)``, a member or its exact value looked up in a module dict:
    every read of an Enum class's attribute (``cls.parse``, ``cls._value2member_map_``,
    ``cls.ASYNC``) goes through its metaclass, about 70 ns warm and more on the cold path a
    capture runs, which reads a pool kind and a capture mode each time."""
    if type(value) is str or type(value) is cls:
        member = _MEMBERS[cls].get(value)
        if member is not None:
            return member
    return cls.parse(value, what)


class ExitCode(IntEnum):
    """Exit codes shared by every verb (documented in the README)."""

    OK = 0
    FAILED = 1
    """A check failed, a smoke scenario failed, or `diff` found a difference."""
    BAD_INPUT = 2
    """A bad file or option, a scenario that raises, an illegal call during capture."""
    NO_GPU = 3
    """The verb needs a CUDA GPU and none is usable."""
    INTERNAL = 70
    """A bug in accelgraph: an unexpected exception (EX_SOFTWARE), never read as a verdict."""
    INTERRUPTED = 130
    """Ctrl-C."""
    STDOUT_CLOSED = 141
    """The reader of standard output went away (``| head``): 128 + SIGPIPE, as Unix tools end."""
    TERMINATED = 143
    """SIGTERM (128 + 15): stopped from outside; temporary files removed."""
