"""Launching the kernels of kernels/: programmatic dependent launch while a stream captures.

A kernel whose body begins with ``WAIT_FOR_PRIOR_GRID();`` (defined in the .cu files that use
it, see :func:`waits`) may be launched before the kernel before it in its stream has
completed: the wait holds every thread until that kernel has completed and its writes are
visible. While the current stream is capturing, on a device of compute capability 9.0 or
later, such a kernel is launched with programmatic stream serialization
(``cuLaunchKernelEx``), which the graph records as a programmatic edge. None of the kernels
lets its dependents launch early, so in a replay the next kernel is launched once every
block of the one before has exited, without waiting for that grid to complete and its
writes to be flushed (the wait covers that): mlp_decode 18.7–18.8 → 17.7–17.9 µs a replay
on an H100, the same bits (``bench/HISTORY.md``, 12-07, fifth entry).

The guarantee rests on the kernel before having completed only once what it depends on has:
true of accelgraph's kernels and of any launched without the attribute. A kernel of another
library launched with it that does not wait itself races its own predecessor, and a kernel
of accelgraph's after it could race that predecessor too.

Eager launches stay CuPy's, whatever the kernel: from Python it is the cheaper launch (a
``kernels.saxpy`` call took 9.4 µs through it against 12.3–12.6 µs through the ctypes one),
and the wait is a no-op for a kernel launched without the attribute. So a graph and the
eager steps it is checked against run the same kernels on the same data, launched two ways:
the bitwise check compares them. ``ACCELGRAPH_PDL=0`` (read at import; :func:`set_enabled`
at run time) launches every kernel as CuPy does, under capture too.

Importing this module imports neither CuPy nor the CUDA driver: CuPy is imported by the first
launch, the driver's ``cuLaunchKernelEx`` looked up by the first launch under capture.
"""

from __future__ import annotations

import ctypes
import os
import re
import threading
from typing import Any

from . import device as _cuda

PDL_ENV = "ACCELGRAPH_PDL"
"""Set to 0 (or false, no, off) to launch without programmatic dependencies, under capture
too (read at import)."""

_ENABLED = os.environ.get(PDL_ENV, "1").strip().lower() not in ("0", "false", "no", "off")
_WAIT = "WAIT_FOR_PRIOR_GRID"
_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6  # CUlaunchAttributeID (cuda.h, CUDA 12+)
_CAPTURE_ACTIVE = 1  # cudaStreamCaptureStatusActive


def set_enabled(enabled: bool) -> bool:
    """Launch with programmatic dependencies under capture (True, the default unless
    ``ACCELGRAPH_PDL=0``) or never (False); returns the previous setting. Graphs captured
    before keep the edges they were captured with."""
    global _ENABLED
    previous, _ENABLED = _ENABLED, bool(enabled)
    return previous


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|endif)\b", re.M)
_DEFINES = re.compile(r"^[ \t]*#[ \t]*(?:define|undef)[ \t]+" + _WAIT + r"\b", re.M)
# The definition every file in kernels/ carries: the wait wherever the kernel is compiled for
# compute capability 9.0 or later (the only devices launched with programmatic dependencies,
# and only kernels compiled for them: Launcher checks both), nothing elsewhere.
_DEFINITION = re.compile(
    r"^[ \t]*#[ \t]*if[ \t]+defined\(__CUDA_ARCH__\)[ \t]*&&[ \t]*__CUDA_ARCH__[ \t]*>=[ \t]*900[ \t]*\n"
    r"[ \t]*#[ \t]*define[ \t]+" + _WAIT + r"\(\)[ \t]+"
    r'asm[ \t]+volatile\("griddepcontrol\.wait;"[ \t]*:::[ \t]*"memory"\)[ \t]*\n'
    r"[ \t]*#[ \t]*else[ \t]*\n"
    r"[ \t]*#[ \t]*define[ \t]+" + _WAIT + r"\(\)[ \t]+\(\(void\)0\)[ \t]*\n"
    r"[ \t]*#[ \t]*endif\b", re.M)


def waits(source: str, name: str) -> bool:
    """Whether kernel ``name`` in ``source`` waits for the kernel before it before anything
    else: only such kernels are launched with programmatic dependencies, since a kernel that
    read or wrote memory before its wait could race the kernel before it. It does where the
    file defines ``WAIT_FOR_PRIOR_GRID`` as the files in kernels/ do (and nowhere else), the
    kernel is defined once, outside any ``#if``, and its body's first statement is
    ``WAIT_FOR_PRIOR_GRID();``. Comments are left out first: a definition or a wait in a
    comment does not count. Headers the file includes and options given to the compiler are
    not read: the kernels of kernels/ use neither."""
    # (a backslash at a line's end joins the next line to it, a // comment's too)
    code = _COMMENTS.sub(" ", source.replace("\\\n", ""))
    if len(_DEFINITION.findall(code)) != 1 or len(_DEFINES.findall(code)) != 2:
        return False
    kernel = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s+)?'
                        + re.escape(name) + r"\s*\(")
    found = list(kernel.finditer(code))
    if len(found) != 1:
        return False
    start = found[0].start()
    depth = 0
    for directive in _CONDITIONAL.finditer(code, 0, start):
        depth += -1 if directive.group(1) == "endif" else 1
    if depth:
        return False
    body = re.compile(r"[^)]*\)\s*\{\s*" + _WAIT + r"\s*\(\s*\)\s*;")
    return body.match(code, found[0].end()) is not None


class _Value(ctypes.Union):  # CUlaunchAttributeValue: a union of 64 bytes
    _fields_ = [("pad", ctypes.c_char * 64), ("int_value", ctypes.c_int)]


class _Attribute(ctypes.Structure):  # CUlaunchAttribute
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", _Value)]


class _Config(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [("grid_x", ctypes.c_uint), ("grid_y", ctypes.c_uint), ("grid_z", ctypes.c_uint),
                ("block_x", ctypes.c_uint), ("block_y", ctypes.c_uint),
                ("block_z", ctypes.c_uint), ("shared_bytes", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attributes", ctypes.POINTER(_Attribute)),
                ("attribute_count", ctypes.c_uint)]


class _Driver:
    """libcuda's cuLaunchKernelEx through ctypes, and the one launch attribute it is given."""

    config = _Config

    def __init__(self) -> None:
        self.launch = ctypes.CDLL("libcuda.so.1").cuLaunchKernelEx  # AttributeError: too old
        self.launch.argtypes = [ctypes.POINTER(_Config), ctypes.c_void_p,
                                ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        self.launch.restype = ctypes.c_int
        self.attribute = _Attribute()
        self.attribute.id = _ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        self.attribute.value.int_value = 1
        self.attribute_pointer = ctypes.pointer(self.attribute)


_DRIVER: dict[str, Any] = {}
_DRIVER_LOCK = threading.Lock()
_CAPABLE: dict[int, bool] = {}  # device -> whether it has programmatic dependent launch


def _driver() -> _Driver | None:
    driver = _DRIVER.get("driver", False)
    if driver is False:
        with _DRIVER_LOCK:
            try:
                driver = _Driver()
            except (OSError, AttributeError):  # no libcuda.so.1 by that name, or too old
                driver = None
            _DRIVER["driver"] = driver
    return driver


def _capable(cupy, device: int) -> bool:
    capable = _CAPABLE.get(device)
    if capable is None:
        # compute_capability: "90" for 9.0
        capable = int(cupy.cuda.Device(device).compute_capability) >= 90
        capable = _CAPABLE[device] = capable and _driver() is not None
    return capable


class Launcher:
    """Launch one kernel on CuPy's current stream: ``launcher(grid, block, args, shared_mem)``,
    as a ``cupy.RawKernel`` is called. Args are what the wrappers pass: CuPy arrays and NumPy
    ``float32``/``int32``/``uint64`` scalars; any other launch goes through CuPy."""

    __slots__ = ("kernel", "waits", "_functions", "_configs")

    def __init__(self, kernel: Any, waits: bool) -> None:
        self.kernel = kernel  # the cupy.RawKernel
        self.waits = waits
        self._functions: dict[int, int] = {}  # device -> CUfunction
        # (grid, block, shared memory, stream) -> its CUlaunchConfig, never changed once made
        # (so threads may share them)
        self._configs: dict[tuple, Any] = {}

    def __call__(self, grid, block, args, shared_mem: int = 0) -> None:
        if self.waits and _ENABLED:
            cupy = _cuda.require_cuda()
            stream = cupy.cuda.get_current_stream().ptr
            if stream:
                try:
                    capturing = cupy.cuda.runtime.streamIsCapturing(stream) == _CAPTURE_ACTIVE
                except Exception:  # (a query CUDA refuses: the launch below says what is wrong)
                    capturing = False
                if capturing:
                    device = cupy.cuda.runtime.getDevice()
                    if _capable(cupy, device) and self._programmatic(
                            cupy, device, stream, grid, block, args, shared_mem):
                        return
        self.kernel(grid, block, args, shared_mem=shared_mem)

    def prepare(self) -> None:
        """Look up, for the current device, what a launch under capture needs of the kernel,
        so that the first capture does not ask the driver for it (kernel_loader's preload
        calls this, outside any capture)."""
        if self.waits:
            self._function(_cuda.require_cuda().cuda.runtime.getDevice())

    def _function(self, device: int) -> int:
        """The kernel's CUfunction on ``device``; 0 where it was compiled for a compute
        capability below 9.0 (a CuPy whose NVRTC stops short of the device's), where its
        wait is compiled out: it is then launched as CuPy launches it."""
        compiled_for = int(getattr(self.kernel, "ptx_version", 0) or 0)
        function = int(self.kernel.kernel.ptr) if compiled_for >= 90 else 0
        self._functions[device] = function
        return function

    def _programmatic(self, cupy, device, stream, grid, block, args, shared_mem) -> bool:
        """Launch with programmatic stream serialization; False (nothing launched) where an
        argument is of a type this does not pack."""
        numpy = _numpy()
        values = []
        for arg in args:
            kind = type(arg)
            if kind is cupy.ndarray:
                values.append(arg.data.ptr)
            elif kind is numpy.float32:
                values.append(int(arg.view(numpy.uint32)))
            elif kind is numpy.int32:
                values.append(int(arg) & 0xFFFFFFFF)
            elif kind is numpy.uint64:
                values.append(int(arg))
            else:
                return False
        function = self._functions.get(device)
        if function is None:
            function = self._function(device)
        if not function:
            return False
        driver = _DRIVER["driver"]
        key = (grid, block, shared_mem, stream)
        try:
            config = self._configs.get(key)
        except TypeError:  # a grid or block given as a list
            key = config = None
        if config is None:
            config = driver.config(*_dims(grid), *_dims(block), shared_mem, stream,
                                   driver.attribute_pointer, 1)
            if key is not None:
                if len(self._configs) >= _CONFIGS_KEPT:
                    self._configs.clear()
                self._configs[key] = config
        slots, params = _buffers(len(values))
        slots[:] = values
        status = driver.launch(config, function, params, None)
        if status:
            # The device takes no more such launches in this process (a driver or device
            # that refuses them under capture); this capture has most likely failed with it
            _CAPABLE[device] = False
            error = cupy.cuda.driver.CUDADriverError(status)
            raise LaunchError(
                f"cuLaunchKernelEx with programmatic dependencies failed under capture: "
                f"{error}; later captures in this process launch as CuPy does, and "
                f"{PDL_ENV}=0 does so from the start") from error
        return True


class LaunchError(RuntimeError):
    """A launch with programmatic dependencies that CUDA refused, under capture."""


_CONFIGS_KEPT = 64  # launch configurations a kernel keeps (more: it starts again)
_LOCAL = threading.local()


def _buffers(count: int):
    """This thread's argument slots for a launch of ``count`` arguments, and the array of
    pointers to them that cuLaunchKernelEx takes: every argument in an 8-byte slot (none is
    wider, none needs more alignment). The driver copies the arguments before it returns, so
    a thread's next launch may refill them; ctypes lets go of the GIL during the call, so
    another thread's launch must not: one set a thread."""
    found = _LOCAL.__dict__.get(count)
    if found is None:
        slots = (ctypes.c_uint64 * count)()
        base = ctypes.addressof(slots)
        params = (ctypes.c_void_p * count)(*range(base, base + 8 * count, 8))
        found = _LOCAL.__dict__[count] = (slots, params)
    return found


def _numpy():
    import numpy  # (CuPy has imported it by the time a kernel is launched)

    return numpy


def _dims(dims) -> tuple[int, int, int]:
    if isinstance(dims, int):
        return dims, 1, 1
    dims = tuple(dims)
    return dims + (1,) * (3 - len(dims))
