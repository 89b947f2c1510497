"""The execution watch: every kernel, copy and memset the device ran while a graph was
captured, from CUPTI's activity records.

Capturing a stream records work and runs none of it. So, once the device is idle before a
capture (the guard synchronizes it), anything the device executes until the capture ends
ran *outside* the graph: a kernel launched on another stream, a library's private stream,
work the step waits for from the host. The guard's checksums see such work only where it
changes memory the state reaches; the watch sees it wherever it writes (a temporary the
step allocates, a library's own buffer, nothing at all).

CUPTI delivers activity records in buffers it asks the process for; the records are turned
into :class:`Executed` values as each buffer completes (the buffer is CUPTI's again after the
callback). Collection is on only between :meth:`ExecutionWatch.start` and
:meth:`ExecutionWatch.stop` (kernel activity slows every kernel while on). One process has
one set of activity callbacks: under another CUPTI client (Nsight Systems, torch's profiler)
enabling fails, and the watch reports itself off with the reason rather than fail the
capture.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

_BUFFER_BYTES = 1 << 20  # records are ~200 bytes: thousands a buffer
_KINDS = ("CONCURRENT_KERNEL", "MEMCPY", "MEMSET")
_NAME_LIMIT = 96  # characters of a kernel's name shown (torch's are long templates)


@dataclass(frozen=True)
class Executed:
    """One thing the device ran: a kernel, a copy or a memset, on CUPTI's stream id."""

    kind: str  # "kernel", "copy", "memset"
    name: str  # the kernel's name; for a copy its direction; for a memset "memset"
    nbytes: int  # bytes copied or set (0 for a kernel)
    stream: int

    def describe(self) -> str:
        if self.kind == "kernel":
            name = self.name if len(self.name) <= _NAME_LIMIT else self.name[:_NAME_LIMIT] + "…"
            return f"kernel {name}"
        return f"{self.name} of {self.nbytes:,} bytes"


_LOCK = threading.Lock()
_RECORDS: list[Executed] = []
_SETUP: dict[str, Any] = {"done": False, "off": None, "cupti": None}


def _buffer_requested():
    return _BUFFER_BYTES, 0  # (no limit on records a buffer)


def _buffer_completed(activities) -> None:
    cupti = _SETUP["cupti"]
    found = []
    for activity in activities:
        kind = activity.kind
        if kind == cupti.ActivityKind.CONCURRENT_KERNEL:
            found.append(Executed("kernel", str(activity.name), 0, int(activity.stream_id)))
        elif kind == cupti.ActivityKind.MEMCPY:
            try:
                direction = cupti.ActivityMemcpyKind(activity.copy_kind).name.lower()
            except ValueError:
                direction = "unknown"
            found.append(Executed("copy", f"copy ({direction})", int(activity.bytes),
                                  int(activity.stream_id)))
        elif kind == cupti.ActivityKind.MEMSET:
            found.append(Executed("memset", "memset", int(activity.bytes),
                                  int(activity.stream_id)))
    with _LOCK:
        _RECORDS.extend(found)


_SETUP_LOCK = threading.Lock()


def _setup() -> str | None:
    """Register the activity callbacks once; why the watch is off here, or None."""
    with _SETUP_LOCK:
        return _setup_locked()


def _setup_locked() -> str | None:
    if not _SETUP["done"]:
        _SETUP["done"] = True
        try:
            from cupti import cupti
        except Exception as exc:  # not installed, or its library does not load
            _SETUP["off"] = f"cupti-python is not available ({type(exc).__name__})"
            return _SETUP["off"]
        try:
            cupti.activity_register_callbacks(_buffer_requested, _buffer_completed)
        except Exception as exc:  # another CUPTI client holds the callbacks
            _SETUP["off"] = f"CUPTI's activity callbacks are taken ({exc})"
            return _SETUP["off"]
        _SETUP["cupti"] = cupti
    return _SETUP["off"]


def _stream_id(cupti, handle: int | None) -> int | None:
    """CUPTI's id of the stream ``handle`` in the current context (None where unknown: then
    no stream's records are left out)."""
    if handle is None:
        return None
    try:
        from .. import device as _cuda

        context = _cuda.require_cuda().cuda.driver.ctxGetCurrent()
        return int(cupti.get_stream_id_ex(int(context), int(handle), 0))
    except Exception:
        return None


def unavailable() -> str | None:
    """Why the watch cannot run in this process, or None where it can."""
    return _setup()



class ExecutionWatch:
    """Collect what the device runs between :meth:`start` and :meth:`stop`, on any stream
    but the capturing one.

    ``start`` where the device is idle; ``stop`` once it has synchronized again (records of
    work still running would come late). Both are safe to call where the watch is off: it
    then records nothing, and :attr:`off` says why.

    Work on the capturing stream itself is left out: once the capture has begun, nothing
    launched there runs (it is recorded), so what runs there was queued before the capture
    began — by the graph API itself (torch's capture_begin sets its random generators' seed
    and offset with two fill kernels on that stream, just before the capture starts).
    """

    def __init__(self) -> None:
        self.off: str | None = None
        self.ms = 0.0  # host time spent starting and stopping, in ms
        self._on: list = []  # the activity kinds enabled
        self._skip: int | None = None  # CUPTI's id of the capturing stream

    def start(self, capturing_stream: int | None = None) -> None:
        """Start collecting; ``capturing_stream``: the cudaStream_t the graph is captured on,
        whose records are left out."""
        import time

        t0 = time.perf_counter()
        self.off = _setup()
        if self.off is None:
            cupti = _SETUP["cupti"]
            with _LOCK:
                _RECORDS.clear()
            self._skip = _stream_id(cupti, capturing_stream)
            try:
                for name in _KINDS:
                    kind = getattr(cupti.ActivityKind, name)
                    cupti.activity_enable(kind)
                    self._on.append(kind)
            except Exception as exc:  # another CUPTI client (a profiler) holds activity
                self._disable()
                self.off = f"CUPTI activity could not be enabled ({exc})"
        self.ms += (time.perf_counter() - t0) * 1e3

    def stop(self) -> list[Executed]:
        """What the device ran since :meth:`start` (call once the device has synchronized);
        [] where the watch is off. Idempotent."""
        import time

        if not self._on:
            return []
        t0 = time.perf_counter()
        cupti = _SETUP["cupti"]
        try:
            cupti.activity_flush_all(1)  # forced: every buffer, complete or not
        finally:
            self._disable()
        with _LOCK:
            found, _RECORDS[:] = list(_RECORDS), []
        self.ms += (time.perf_counter() - t0) * 1e3
        return [e for e in found if e.stream != self._skip]

    def _disable(self) -> None:
        cupti = _SETUP["cupti"]
        while self._on:
            kind = self._on.pop()
            try:
                cupti.activity_disable(kind)
            except Exception:  # disabling what another client turned off: nothing to do
                pass
