"""Host arrays a scenario's state holds: pinned buffers a graph's copy node writes.

The capture guard and the check's restore read device memory. A state may also hold host
memory a graph writes (a device-to-host copy into a pinned buffer, which a host scheduler
polls), and stray work during capture can leave such a buffer holding what eager's first step
writes: a graph with no copy at all would then match eager there. So capture saves the
state's host arrays (:class:`HostSave`), each run of the check first writes them back, and
the check's complement fill (meant for memory a graph allocated) leaves alone the host
arrays so restored: a graph may read them too.

Host code only: a NumPy array, or a CPU torch tensor asked of ``sys.modules`` (a process that
never imported torch holds none); tested on any machine.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from ..cuda.snapshot import extent, one_of_each_broadcast
from .statewalk import find_arrays


def is_host_array(obj: Any) -> bool:
    """A NumPy array of numbers (not of Python objects), or a strided CPU torch tensor that
    is not nested: host memory in one block."""
    import numpy

    if isinstance(obj, numpy.ndarray):
        return obj.dtype.kind != "O"
    torch = sys.modules.get("torch")
    return (torch is not None and isinstance(obj, torch.Tensor) and obj.device.type == "cpu"
            and obj.layout is torch.strided and not obj.is_nested)


def _is_pinned_buffer(obj: Any) -> bool:
    """CuPy's page-locked buffer (``cupy.cuda.alloc_pinned_memory``), held as it is handed
    out: what a graph's copy node writes, with no array over it."""
    cupy = sys.modules.get("cupy")
    return cupy is not None and isinstance(obj, cupy.cuda.PinnedMemoryPointer)


def host_extent(obj: Any) -> tuple[int, int] | None:
    """[first byte, last byte + 1) of a host array (:func:`is_host_array`, a view too); None
    for an empty one."""
    import numpy

    if isinstance(obj, numpy.ndarray):
        if not obj.size:
            return None
        return extent(obj.__array_interface__["data"][0], obj.shape, obj.strides, obj.itemsize)
    if not obj.numel():
        return None
    size = obj.element_size()
    return extent(obj.data_ptr(), tuple(obj.shape), [s * size for s in obj.stride()], size)


def host_arrays(state: Any) -> list[tuple[str, Any]]:
    """The ``(path, array)`` pairs of the host arrays ``state`` holds; a pinned buffer CuPy
    handed out, as the bytes it reaches (a NumPy array of uint8 over them)."""
    return device_and_host_arrays(state, lambda obj: False)[1]


def device_and_host_arrays(state: Any, is_device: Callable[[Any], bool], *,
                           walk: Callable = find_arrays
                           ) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """The ``(path, array)`` pairs of ``state``'s device arrays (``is_device``) and of its host
    arrays (as :func:`host_arrays` gives them), found in one walk of the state (capture needs
    both once setup is done, where a walk is slow: one walk there, not two). The walk goes
    into neither kind of array, so an array held only as an attribute set on another array
    is not found (as :func:`~accelgraph_cli.run.statewalk.find_arrays` does not go into the
    arrays it reports). ``walk``: :func:`~accelgraph_cli.run.statewalk.find_arrays`, or
    what stands for it."""
    import numpy

    host_ids: set[int] = set()

    def either(obj: Any) -> bool:
        if is_device(obj):
            return True
        if is_host_array(obj) or _is_pinned_buffer(obj):
            host_ids.add(id(obj))  # (the objects found stay alive in the walk's result)
            return True
        return False

    device, host = [], []
    for path, obj in walk(state, either):
        if id(obj) not in host_ids:
            device.append((path, obj))
        else:
            host.append((path, numpy.frombuffer(obj, numpy.uint8) if _is_pinned_buffer(obj)
                         else obj))
    return device, host


SAVE_LIMIT = 64 << 20
"""Host arrays larger than this (bytes) are not saved at capture, nor restored: a state may
hold CPU copies of weights, or a dataset, which the check would copy at every run."""

SAVE_TOTAL = 256 << 20
"""At most this many bytes of host arrays are saved for one capture, in the state's order
(views of one buffer count each); an array that would pass the total is treated as one over
:data:`SAVE_LIMIT` (a smaller one after it may still be saved)."""


class HostSave:
    """The captured state's host arrays as they were before capture, kept to give them back
    their bytes before each run of the check (as the restore gives the device arrays eager's
    starting bytes): their own bytes, not a fresh state's, so a table of the state's own
    device pointers stays right. Taken once the device is synchronized after setup."""

    def __init__(self, state: Any, *, found: list[tuple[str, Any]] | None = None):
        """``found``: the state's host arrays as :func:`host_arrays` gives them, where the
        caller has walked the state already (:func:`device_and_host_arrays`)."""
        t0 = time.perf_counter()
        self.saved: list[tuple[str, Any, Any]] = []
        self.unsaved: list[tuple[int, int]] = []  # the bytes of those too large to save
        self.held: list[tuple[int, int]] = []  # the bytes of every one, saved or not
        total = 0
        for path, array in host_arrays(state) if found is None else found:
            reach = host_extent(array)
            if reach is not None:
                self.held.append(reach)
            nbytes = int(array.nbytes)  # a torch tensor's too: numel() * element_size()
            if nbytes <= SAVE_LIMIT and total + nbytes <= SAVE_TOTAL:
                self.saved.append((path, array, _copy_of(array)))
                total += nbytes
            elif reach is not None:
                self.unsaved.append(reach)
        self.take_ms = (time.perf_counter() - t0) * 1e3  # counted with the guard's snapshot

    def restore(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """Write each saved array back. The caller has synchronized the device: no copy a
        graph or a step queued still writes them. Returns the bytes of the state's host
        arrays that the check leaves alone (restored, or too large to save: a graph may read
        them), and those it could not write (a read-only array; a view torch refuses to
        write; one whose shape changed in place) that no array it wrote covers: outputs
        there the check cannot give their starting bytes."""
        done, refused = [], []
        for _, target, saved in self.saved:
            found = host_extent(target)
            if found is not None:
                (done if _copy(target, saved) else refused).append(found)
        # one restored through another array over the same bytes (the buffer under a
        # read-only view) was written all the same
        return done + self.unsaved, [r for r in refused
                                     if not any(c[0] <= r[0] and r[1] <= c[1] for c in done)]


def held_by(extents: list[tuple[int, int]], array: Any) -> bool:
    """Whether host array ``array`` reaches a byte of one of ``extents`` (those of the host
    arrays a state holds); False for anything that is not a host array."""
    if not is_host_array(array):
        return False
    found = host_extent(array)
    if found is None:
        return False
    lo, hi = found
    return any(lo < other[1] and other[0] < hi for other in extents)


def _copy_of(array: Any) -> Any:
    """A copy of a host array in memory of its own (a torch tensor's, detached)."""
    import numpy

    if isinstance(array, numpy.ndarray):
        return numpy.array(array, copy=True)
    return array.detach().clone()


def _copy(target: Any, source: Any) -> bool:
    """``source``'s elements into ``target``; False where ``target`` cannot be written."""
    import numpy

    if tuple(target.shape) != tuple(source.shape):  # reshaped in place since it was saved
        return False
    # an expanded view (stride 0) holds one element along that dimension: written once
    target, source = one_of_each_broadcast(target, source)
    if isinstance(target, numpy.ndarray):
        if not target.flags.writeable:
            return False
        numpy.copyto(target, source)
        return True
    torch = sys.modules["torch"]
    try:
        # in inference mode: torch refuses an in-place write to an inference tensor outside
        # it, and allows one to a leaf that requires grad under it (no autograd applies)
        with torch.inference_mode():
            target.copy_(source)
    except RuntimeError:  # a view torch will not write (one element at several positions)
        return False
    return True
