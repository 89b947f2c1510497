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
callback); a record CUPTI had no buffer for is dropped and only counted, and each one
counted while the watch was on is returned as an operation that ran. Collection is on only
between :meth:`ExecutionWatch.start` and :meth:`ExecutionWatch.stop` (kernel activity slows
every kernel while on). One process has one set of activity callbacks: where CUPTI refuses a
step (as it may under another CUPTI client, such as a profiler: not yet tried), the watch
reports itself off with the reason rather than fail the capture.
"""

from __future__ import annotations

import atexit
import ctypes
import threading
import time
from dataclasses import dataclass
from typing import Any

from .. import device as _cuda

_BUFFER_BYTES = 1 << 20  # records are ~200 bytes: thousands a buffer
_KINDS = ("CONCURRENT_KERNEL", "MEMCPY", "MEMSET")
_NAME_LIMIT = 96  # characters of a kernel's name shown (torch's are long templates)
_PREPARE_JOIN_S = 10.0  # the longest a process waits at exit for CUPTI to finish loading


@dataclass(frozen=True)
class Executed:
    """One thing the device ran: a kernel, a copy or a memset, on CUPTI's stream id."""

    kind: str  # "kernel", "copy", "memset"
    name: str  # the kernel's name; for a copy its direction; for a memset "memset"
    nbytes: int  # bytes copied or set (0 for a kernel)
    stream: int
    # what per-node profiles read (the watch reads none of it):
    node: int = 0  # CUPTI's id of the graph node that ran it (0: not run by a graph)
    start: int = 0  # CUPTI's timestamps, in ns
    end: int = 0
    launch: int = 0  # the correlation id of the launch that ran it (a graph's launch)

    def describe(self) -> str:
        if self.kind == "unknown":
            return self.name
        if self.kind == "kernel":
            name = self.name if len(self.name) <= _NAME_LIMIT else self.name[:_NAME_LIMIT] + "…"
            return f"kernel {name}"
        return f"{self.name} of {self.nbytes:,} bytes"


_LOCK = threading.Lock()
_RECORDS: list[Executed] = []
_SETUP: dict[str, Any] = {"done": False, "off": None, "cupti": None}
# Where CUPTI has no buffer for a record, it drops it and counts it: work that ran all the
# same. Seen on an H200 with buffers of 0 and 64 bytes: 5 kernels ran, none was delivered, the
# global queue's count was 5 (that of the current context 0).
_DROPPED = Executed("unknown", "an operation whose activity record CUPTI dropped (no buffer "
                    "space)", 0, -1)


def _buffer_requested():
    return _BUFFER_BYTES, 0  # (no limit on records a buffer)


def _buffer_completed(activities) -> None:
    found = []
    for activity in activities:
        try:
            record = _record(activity)
        except Exception:  # a record this code cannot read still ran: count it
            record = Executed("unknown", "an activity record that could not be read", 0, -1)
        if record is not None:
            found.append(record)
    with _LOCK:
        _RECORDS.extend(found)


def _record(activity) -> Executed | None:
    cupti = _SETUP["cupti"]
    kind = activity.kind
    if kind == cupti.ActivityKind.CONCURRENT_KERNEL:
        return Executed("kernel", str(activity.name), 0, int(activity.stream_id),
                        *_placed(activity))
    if kind == cupti.ActivityKind.MEMCPY:
        try:
            direction = cupti.ActivityMemcpyKind(activity.copy_kind).name.lower()
        except ValueError:
            direction = "unknown"
        return Executed("copy", f"copy ({direction})", int(activity.bytes),
                        int(activity.stream_id), *_placed(activity))
    if kind == cupti.ActivityKind.MEMSET:
        return Executed("memset", "memset", int(activity.bytes), int(activity.stream_id),
                        *_placed(activity))
    return None


def _placed(activity) -> tuple[int, int, int, int]:
    """The graph node that ran a record's work (0 where none did: CUPTI's id of the node in
    the executable graph), when it ran, and the launch it belongs to: what per-node profiles
    read. Read leniently: a field a CUPTI version lacks is 0."""
    return tuple(int(getattr(activity, name, 0) or 0)  # type: ignore[return-value]
                 for name in ("graph_node_id", "start", "end", "correlation_id"))


_SETUP_LOCK = threading.Lock()


def _setup(retry_later: bool = False) -> str | None:
    """Register the activity callbacks once; why the watch is off here, or None.

    ``retry_later`` (the loading thread): an import that fails there is not taken as the
    answer; the next call (the watch's start, on the capturing thread) imports again and
    keeps what that finds. An import on a thread of its own runs beside the main thread's
    imports, and what fails beside them must not switch the watch off for the process."""
    with _SETUP_LOCK:
        if not _SETUP["done"]:
            try:
                from cupti import cupti
            except Exception as exc:  # not installed, or its library does not load
                if retry_later:
                    return None
                _SETUP["done"] = True
                _SETUP["off"] = f"cupti-python is not available ({type(exc).__name__})"
                return _SETUP["off"]
            _SETUP["done"] = True
            try:
                cupti.activity_register_callbacks(_buffer_requested, _buffer_completed)
            except Exception as exc:  # another CUPTI client holds the callbacks
                _SETUP["off"] = f"CUPTI's activity callbacks are taken ({exc})"
                return _SETUP["off"]
            _SETUP["cupti"] = cupti
        return _SETUP["off"]


def _dropped(cupti) -> int | None:
    """Records CUPTI dropped for want of buffer space since the last call (its global queue,
    where every record goes); None where CUPTI cannot say (the watch then goes on without the
    count, as it did before it read one)."""
    count = ctypes.c_size_t(0)
    try:
        cupti.activity_get_num_dropped_records(0, 0, ctypes.addressof(count))
    except Exception:
        return None
    return count.value


def _stream_id(cupti, handle: int) -> int:
    """CUPTI's id of the stream ``handle`` in the current context."""
    context = _cuda.require_cuda().cuda.driver.ctxGetCurrent()
    return int(cupti.get_stream_id_ex(int(context), int(handle), 0))


_PREPARE_LOCK = threading.Lock()
_PREPARING: list[threading.Thread] = []  # the loading thread, once started


def prepare() -> threading.Thread | None:
    """Load CUPTI and register its callbacks on a thread of their own, so that the first
    capture of a process can overlap that (about 0.1 s, measured through the CLI) with the
    scenario's setup and warm-up (both run in one interpreter, so the overlap is partial).
    :meth:`ExecutionWatch.start` waits for it where it is still running (the setup's lock).
    Returns the thread where this call started it; None where one was started before or
    setup is done."""
    with _PREPARE_LOCK:
        if _SETUP["done"] or _PREPARING:
            return None
        thread = threading.Thread(target=_setup, args=(True,), name="accelgraph-cupti-setup",
                                  daemon=True)
        _PREPARING.append(thread)
        thread.start()
    # a process that ends at once (a setup that raises: exit 2) lets the load finish first,
    # rather than have the interpreter shut down around a library still initializing
    atexit.register(_join_at_exit, thread)
    return thread


def _join_at_exit(thread: threading.Thread) -> None:
    try:
        thread.join(_PREPARE_JOIN_S)
    except KeyboardInterrupt:  # a second Ctrl-C while exiting: exit without waiting
        pass


def unavailable() -> str | None:
    """Why the watch cannot run in this process, or None where it can."""
    return _setup()


def cupti_module():
    """CUPTI's Python module, loaded and set up: for other CUPTI users of this process (the
    profile's callbacks), once :func:`unavailable` has said None."""
    return _SETUP["cupti"]


class ExecutionWatch:
    """Collect what the device runs between :meth:`start` and :meth:`stop`, on any stream
    but the capturing one.

    ``start`` where the device is idle; :meth:`stop` synchronizes the device before it reads
    the records (those of work still running would come late). Both are safe to call where
    the watch is off: it then records nothing, and :attr:`off` says why. One watch at a time
    in a process: CUPTI's activity switches are process-wide (two threads capturing at once
    would share them).

    Work on the capturing stream itself is left out: once the capture has begun, nothing
    launched there runs (it is recorded), so what runs there was queued before the capture
    began — by the graph API itself (torch's capture_begin sets its random generators' seed
    and offset with two fill kernels on that stream, just before the capture starts). Where
    that stream's id cannot be read, the watch is off rather than blame those kernels.
    """

    prepare = staticmethod(prepare)  # CUPTI loaded ahead, on a thread (capture() calls it)

    def __init__(self) -> None:
        self.off: str | None = "not started"
        self.ms = 0.0  # host time spent starting and stopping (its synchronization too), in ms
        self._on: list = []  # the activity kinds enabled (or being enabled)
        self._capturing: int | None = None  # the capturing stream (cudaStream_t), left out
        self._ids: dict[int, int] = {}  # CUPTI's id of each capturing stream asked for
        self._counting = False  # whether CUPTI's count of dropped records was reset at start
        self.dropped = 0  # records CUPTI dropped in the last window (stop() counts them)
        self._failed: str | None = None  # why records could not be read (later starts: off)

    def start(self, capturing_stream: int | None = None) -> None:
        """Start collecting; ``capturing_stream``: the cudaStream_t the graph is captured on,
        whose records are left out."""
        t0 = time.perf_counter()
        # once a window could not be watched, the watch stays off for the rest of the capture
        # call (one watch serves its graphs): the guard's summary then says why, whichever
        # graph it happened to
        self.off = self._failed or _setup()
        if self.off is None:
            cupti = _SETUP["cupti"]
            with _LOCK:
                _RECORDS.clear()
            # its CUPTI id is asked for at stop, only where something ran, and once a
            # stream: the call cost about 20 µs a capture (H100); a CuPy capture's window
            # runs nothing, a torch capture's its two seed fills on that stream
            self._capturing = capturing_stream
            # the count starts again: only this window's drops count
            self._counting = _dropped(cupti) is not None
            try:
                for name in _KINDS:
                    kind = getattr(cupti.ActivityKind, name)
                    self._on.append(kind)  # before enabling: an interrupt still undoes it
                    cupti.activity_enable(kind)
            except Exception as exc:  # another CUPTI client (a profiler) holds activity
                self._disable()
                self.off = self._failed = f"CUPTI activity could not be enabled ({exc})"
        self.ms += (time.perf_counter() - t0) * 1e3

    def stop(self) -> list[Executed]:
        """Synchronize the device, then return what it ran since :meth:`start` on any stream
        but the capturing one; [] where the watch is off (or could not read its records: it
        then says so in :attr:`off`). Idempotent."""
        if not self._on:
            return []
        t0 = time.perf_counter()
        cupti = _SETUP["cupti"]
        dropped = None
        try:
            _cuda.require_cuda().cuda.runtime.deviceSynchronize()  # stray work has finished
            cupti.activity_flush_all(1)  # forced: every buffer, complete or not
            if self._counting:
                dropped = _dropped(cupti)
        except Exception as exc:
            self.off = self._failed = f"CUPTI's records could not be read ({exc})"
        finally:
            self._disable()
        with _LOCK:
            found, _RECORDS[:] = list(_RECORDS), []
        skip = None
        if found and self.off is None and self._capturing is not None:
            try:
                skip = self._ids.get(self._capturing)
                if skip is None:
                    skip = self._ids[self._capturing] = _stream_id(cupti, self._capturing)
            except Exception as exc:  # rather than blame what the graph API queued there
                self.off = self._failed = f"CUPTI could not name the capturing stream ({exc})"
        self.ms += (time.perf_counter() - t0) * 1e3
        self.dropped = dropped or 0
        if self.off is not None:
            return []
        # A record CUPTI dropped (it had no buffer for it) is work that ran, on a stream it
        # does not name: counted as stray, as an unreadable record is, though it may have been
        # work queued on the capturing stream before the capture began (torch's seed fills)
        return [e for e in found if e.stream != skip] + [_DROPPED] * (dropped or 0)

    def _disable(self) -> None:
        cupti = _SETUP["cupti"]
        while self._on:
            kind = self._on.pop()
            try:
                cupti.activity_disable(kind)
            except Exception:  # disabling what another client turned off: nothing to do
                pass


class SwitchedOff:
    """A watch that never collects, with the reason in :attr:`off`: what capture() uses in
    place of :class:`ExecutionWatch` where a caller switches the watch off (the bench's
    guard-off way, the GPU tier's tests of the other defenses)."""

    off = "switched off"
    ms = 0.0

    @staticmethod
    def prepare() -> None:  # nothing to load
        return None

    def start(self, capturing_stream: int | None = None) -> None:
        pass

    def stop(self) -> list[Executed]:
        return []
