"""HostFunction: a Python callable enqueued on a stream, captured as a graph HOST node."""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable
from typing import Any

from ..errors import CudaError

# CUhostFn: void (*)(void* user_data). ctypes takes the GIL when CUDA calls it.
_HOST_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@functools.cache
def _libcuda() -> Any:
    name = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
    lib = ctypes.CDLL(name)
    lib.cuLaunchHostFunc.argtypes = [ctypes.c_void_p, _HOST_FN, ctypes.c_void_p]
    lib.cuLaunchHostFunc.restype = ctypes.c_int
    return lib


class HostFunction:
    """A Python callable that can be enqueued on a stream and captured as a graph HOST node.

    Why not ``cupy.cuda.Stream.launch_host_func``: CuPy hands CUDA a reference that its
    trampoline releases after the *first* call. Eagerly that is right; in a graph the host node
    runs on every replay, so the second replay would use a freed Python object. Here the
    C callback is owned by this object, which must outlive every graph that calls it (keep it
    in the scenario state).

    The callback runs on a CUDA driver thread with the GIL held; it must not call CUDA
    (no CuPy) and should be quick: the stream waits for it.
    """

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self._c_callback = _HOST_FN(self._trampoline)
        _libcuda()  # load the driver library now, not under capture

    def _trampoline(self, _user_data) -> None:
        self.callback()

    def launch(self, stream: Any = None) -> None:
        """Enqueue the callback on ``stream`` (default: CuPy's current stream); returns at once.

        Under stream capture this adds a HOST node instead of running anything.
        """
        import cupy

        if stream is None:
            stream = cupy.cuda.get_current_stream()
        status = _libcuda().cuLaunchHostFunc(ctypes.c_void_p(stream.ptr), self._c_callback, None)
        if status != 0:
            raise CudaError("cuLaunchHostFunc", f"CUresult {status}")
