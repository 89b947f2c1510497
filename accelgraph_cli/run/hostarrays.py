"""Host arrays a scenario's state holds: pinned buffers a graph's copy node writes.

The capture guard and the check's restore read device memory. A state may also hold host
memory a graph writes (a device-to-host copy into a pinned buffer, which a host scheduler
polls), and stray work during capture can leave such a buffer holding what eager's first step
writes: a graph with no copy at all would then match eager there. So before the check's eager
steps run, the captured state's host arrays get the fresh state's bytes, as its device arrays
do, and the check's complement fill (meant for memory a graph allocated) leaves alone the host
arrays the captured state holds: a graph may read them too.

Host code only: a NumPy array, or a CPU torch tensor asked of ``sys.modules`` (a process that
never imported torch holds none); tested on any machine.
"""

from __future__ import annotations

import sys
from typing import Any

from ..cuda.snapshot import extent
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
    """The ``(path, array)`` pairs of the host arrays ``state`` holds."""
    return find_arrays(state, is_host_array)


def restore_host_arrays(captured: list[tuple[str, Any]], fresh: list[tuple[str, Any]]
                        ) -> list[str]:
    """Copy each fresh host array over the captured state's at the same path, where both
    have one of the same shape and dtype, the captured one is writable and the two are not
    the same memory (one buffer both states hold keeps its bytes). Returns the paths copied.
    The caller has synchronized the device: no copy a graph or a step queued still writes
    them."""
    theirs = dict(fresh)
    copied = []
    for path, target in captured:
        source = theirs.get(path)
        if source is None or type(source) is not type(target):
            continue
        if tuple(source.shape) != tuple(target.shape) or source.dtype != target.dtype:
            continue
        mine, other = host_extent(target), host_extent(source)
        if mine is None or (other is not None and mine[0] < other[1] and other[0] < mine[1]):
            continue
        if _copy(target, source):
            copied.append(path)
    return copied


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


def _copy(target: Any, source: Any) -> bool:
    import numpy

    if isinstance(target, numpy.ndarray):
        if not target.flags.writeable:
            return False
        numpy.copyto(target, source)
        return True
    torch = sys.modules["torch"]
    # in inference mode: torch refuses an in-place write to an inference tensor outside it,
    # and allows one to a leaf that requires grad under it (no autograd applies)
    with torch.inference_mode():
        target.copy_(source)
    return True
