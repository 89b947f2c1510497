"""The capture guard: a device checksum of a scenario's state, to prove capture ran nothing.

Capturing a stream records work and runs none of it, so the state a scenario's steps read and
write must be bit for bit the same after capture as before. When it is not, some of the step's
work ran eagerly *outside* the graph (on another stream, or a library's own stream) and the
graph is missing it. ``StateSnapshot`` takes every device array the state holds (found by
``run.statewalk.find_arrays`` with :func:`is_device_array`), checksums them all in one pass
(one kernel launch per 65,535 allocations) before capture and again after it, and names the
state paths whose checksum moved. Before capture, one kernel launch; after it, one device
synchronization and one launch: the kernel reads the table of allocations from pinned host
memory and writes its sums straight back into it, so no table is uploaded and no result
copied back (on a device that cannot map host memory, the table goes over by a copy and the
sums come back by one). No copy of the state is kept, on the device or the host.

Each block of the kernel sums, modulo 2**64, splitmix64(word ^ salt(position)) over the 8-byte
words of its allocation that it reads (the same words in both passes: the grid is fixed per
snapshot), and each block's sum is compared: order-dependent through the salt, deterministic
(a sum does not depend on the order in which threads add), and any change to one word changes
its block's sum unless two 64-bit mixes cancel exactly (about one chance in 2**64).

``restore_from(fresh_arrays)`` copies another state's allocations (the correctness check's
eager starting state) into the captured state's, so replays start from exactly the bytes
eager starts from. Allocations, not arrays: views share one allocation and are counted once;
the snapshot holds each allocation, so memory freed during capture is not reused while it is
checked. CuPy arrays, CUDA torch tensors and raw CuPy memory (a ``MemoryPointer``) are read alike,
as raw device memory.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import AccelgraphError
from . import device as _cuda

_H2D = 1  # cudaMemcpyHostToDevice
_D2H = 2  # cudaMemcpyDeviceToHost
_D2D = 3  # cudaMemcpyDeviceToDevice
_CAN_MAP_HOST_MEMORY = 19  # cudaDevAttrCanMapHostMemory
_UNIFIED_ADDRESSING = 41  # cudaDevAttrUnifiedAddressing
_THREADS = 256
_GRID_Y_MAX = 65535  # regions one checksum launch covers (gridDim.y's limit)

_CHECKSUM_SOURCE = r"""
__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// One sum per block: region first + blockIdx.y (a launch covers at most 65,535 regions, the
// grid's y limit), its blocks along x striding over the region's words. table is pinned host
// memory the device reads and writes: n pointers, n sizes, then the blocks' sums, gridDim.x a
// region, n regions a slot (slot 0 before capture, 1 after).
extern "C" __global__ void region_checksums(unsigned long long* table, int n, int slot,
                                            int first) {
    const unsigned int r = first + blockIdx.y;
    __shared__ unsigned long long region[2];
    if (threadIdx.x == 0) {  // one read of host memory per block
        region[0] = table[r];
        region[1] = table[n + r];
    }
    __syncthreads();
    const unsigned char* base = (const unsigned char*)region[0];
    const unsigned long long size = region[1];
    // an allocation not 8-byte aligned (rare: allocators align to 256 B or more) is read
    // byte by byte by one thread, below
    const unsigned long long words = ((unsigned long long)base & 7) ? 0 : size / 8;
    const unsigned long long* data = (const unsigned long long*)base;
    unsigned long long acc = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    // word i's salt is i * K + C: carried as a running value (one add a word, where a 64-bit
    // multiply costs several integer instructions), with eight streaming loads in flight per
    // thread (each word is read once: no reason to keep it in L2), then the rest one at a time
    const unsigned long long K = 0x9e3779b97f4a7c15ULL;
    const unsigned long long salt_step = stride * K;
    unsigned long long salt = i * K + 0x632be59bd9b4e019ULL;
    for (; i + 7 * stride < words; i += 8 * stride) {
        unsigned long long w[8];
#pragma unroll
        for (int q = 0; q < 8; ++q) w[q] = __ldcs(data + i + q * stride);
#pragma unroll
        for (int q = 0; q < 8; ++q) {
            acc += mix64(w[q] ^ salt);
            salt += salt_step;
        }
    }
    for (; i < words; i += stride) {
        acc += mix64(__ldcs(data + i) ^ salt);
        salt += salt_step;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {  // the bytes after the last whole word
        for (unsigned long long b = words * 8; b < size; ++b) {
            acc += mix64(((unsigned long long)base[b] << 8) ^ (b * 0xd6e8feb86659fd93ULL));
        }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        acc += __shfl_down_sync(0xffffffffu, acc, offset);
    }
    __shared__ unsigned long long partial[32];
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long total = 0;
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) total += partial[w];
        table[2ULL * n + ((unsigned long long)slot * n + r) * gridDim.x + blockIdx.x] = total;
    }
}
"""


@functools.lru_cache(maxsize=1)
def _checksum_kernel():
    cupy = _cuda.require_cuda()
    return cupy.RawKernel(_CHECKSUM_SOURCE, "region_checksums")


_DEVICES: dict[int, tuple] = {}  # device -> (kernel function, maps host memory)


def _for_device(device: int) -> tuple[Any, bool]:
    """The checksum kernel's function loaded on ``device`` (launched with its stream given:
    no stream context entered and left around a launch), and whether the device reads and
    writes pinned host memory in place (unified addressing and mapped host memory; where
    not, the table goes to the device and the sums come back by copies)."""
    found = _DEVICES.get(device)
    if found is None:
        runtime = _cuda.require_cuda().cuda.runtime
        maps = bool(runtime.deviceGetAttribute(_CAN_MAP_HOST_MEMORY, device)
                    and runtime.deviceGetAttribute(_UNIFIED_ADDRESSING, device))
        found = _DEVICES[device] = (_checksum_kernel().kernel, maps)
    return found


@dataclass
class Region:
    """One device allocation the state holds, and the state paths that reach it."""

    ptr: int
    size: int
    owner: Any  # keeps the allocation alive while the snapshot exists
    paths: list[str] = field(default_factory=list)


def device_region(obj: Any) -> tuple[int, int, Any] | None:
    """(pointer, bytes, owner) of the device allocation behind a CuPy array, CUDA tensor or
    raw CuPy memory (:func:`_is_raw_memory`: a pointer stands for its whole allocation).

    None for anything else (host arrays, CPU tensors, empty arrays).
    """
    cupy = _cuda.require_cuda()
    if isinstance(obj, cupy.ndarray):
        obj = obj.data  # its MemoryPointer
    if isinstance(obj, cupy.cuda.MemoryPointer):
        mem = obj.mem
        if mem is None or not mem.size:
            return None
        return int(mem.ptr), int(mem.size), mem
    if isinstance(obj, cupy.cuda.memory.BaseMemory):
        return (int(obj.ptr), int(obj.size), obj) if obj.size else None
    if _is_cuda_tensor(obj):
        storage = obj.untyped_storage()
        if not storage.nbytes():
            return None
        return int(storage.data_ptr()), int(storage.nbytes()), storage
    return None


def extent(ptr: int, shape, strides, itemsize: int) -> tuple[int, int]:
    """[first byte, last byte + 1) of an array with data pointer ``ptr``, ``shape``,
    ``strides`` in bytes (negative and zero ones too) and ``itemsize``; an empty array
    spans nothing."""
    lo = hi = ptr
    for n, stride in zip(shape, strides):
        if not n:
            return ptr, ptr
        if stride > 0:
            hi += stride * (n - 1)
        else:
            lo += stride * (n - 1)
    return lo, hi + itemsize


def array_extent(obj: Any) -> tuple[int, int] | None:
    """The bytes a CuPy array or CUDA tensor (a view too) reaches, as :func:`extent`; raw
    memory's whole allocation when it starts there. None for anything else, for an empty
    one, and for a ``MemoryPointer`` into the middle of an allocation (it does not say how
    many bytes from there it is meant to reach)."""
    cupy = _cuda.require_cuda()
    if isinstance(obj, cupy.ndarray):
        if not obj.size:
            return None
        return extent(int(obj.data.ptr), obj.shape, obj.strides, obj.itemsize)
    if _is_raw_memory(obj):
        found = device_region(obj)
        if found is None or found[0] != _start(obj):
            return None
        return found[0], found[0] + found[1]
    if _is_cuda_tensor(obj):
        if not obj.numel():
            return None
        size = obj.element_size()
        return extent(int(obj.data_ptr()), tuple(obj.shape), [s * size for s in obj.stride()],
                      size)
    return None


def _extent_quietly(obj: Any) -> tuple[int, int] | None:
    """:func:`array_extent`, None for an object it cannot read."""
    try:
        return array_extent(obj)
    except Exception:
        return None


def _is_cuda_tensor(obj: Any) -> bool:
    """A CUDA torch tensor with memory of its own, a subclass of torch.Tensor too (a
    scenario's own, a quantized weight class that keeps its data in the tensor), asked
    without importing torch: a process that never imported it holds no tensor. A wrapper
    subclass (``_make_wrapper_subclass``: its data is in the tensors it holds, and it has no
    storage to read) is not one: the walk goes on into what it holds. Nor is a sparse or
    nested tensor (no storage of one piece): the walk goes on into the dense tensors it is
    made of, which are guarded."""
    torch = sys.modules.get("torch")
    tensor = getattr(torch, "Tensor", None) if torch is not None else None
    if tensor is None or not isinstance(obj, tensor) or getattr(obj, "is_cuda", False) is not True:
        return False
    if obj.layout is not torch.strided or obj.is_nested:  # no storage of one piece to read
        return False
    if type(obj) is tensor or type(obj) is torch.nn.Parameter:
        return True
    try:
        storage = obj.untyped_storage()
        return storage.data_ptr() != 0 and storage.nbytes() > 0
    except Exception:
        return False


def _as_cupy(cupy, array: Any) -> Any:
    """A CuPy view of a CuPy array or a CUDA tensor, as words of its element size (bfloat16
    and the float8s have no CuPy dtype; a complex tensor is read as its real and imaginary
    parts), detached: no autograd rule applies."""
    if isinstance(array, cupy.ndarray):
        return array
    torch = sys.modules["torch"]
    tensor = array.detach()
    if tensor.is_complex():
        tensor = torch.view_as_real(tensor)
    return cupy.asarray(tensor.view(torch_words(torch, tensor.element_size())))


def is_device_array(obj: Any) -> bool:
    """True for a CuPy array, a CUDA torch tensor or raw CuPy device memory (what the
    snapshot covers)."""
    cupy = _cuda.require_cuda()
    return isinstance(obj, cupy.ndarray) or _is_cuda_tensor(obj) or _is_raw_memory(obj)


def _is_raw_memory(obj: Any) -> bool:
    """CuPy device memory held as it is handed out, with no array over it: a
    ``MemoryPointer`` (``cupy.cuda.alloc``, ``array.data``) or a memory object
    (``cupy.cuda.Memory``, a pool's block). A kernel can take either as a pointer argument,
    so the guard checksums and restores its whole allocation. (Pinned host memory is
    another class: the host-array watch reads it.)"""
    cupy = sys.modules.get("cupy")
    return cupy is not None and isinstance(obj, (cupy.cuda.MemoryPointer,
                                                 cupy.cuda.memory.BaseMemory))


def _start(obj: Any) -> int:
    """The device address a CuPy array, CUDA tensor or raw memory starts at."""
    if hasattr(obj, "data_ptr"):
        return int(obj.data_ptr())
    data = getattr(obj, "data", None)
    return int(data.ptr if data is not None and hasattr(data, "ptr") else obj.ptr)


def state_regions(arrays: list[tuple[str, Any]]) -> list[Region]:
    """The device allocations behind ``(path, array)`` pairs, each with the paths reaching it."""
    by_ptr: dict[int, Region] = {}
    for path, array in arrays:
        found = device_region(array)
        if found is None:
            continue
        ptr, size, owner = found
        region = by_ptr.get(ptr)
        if region is None:
            region = by_ptr[ptr] = Region(ptr, size, owner)
        region.paths.append(path)
    return list(by_ptr.values())


_TABLES_LOCK = threading.RLock()
# Pinned host tables free for a snapshot to use, as (uint64 array, address) pairs.
# Re-entrant lock: a snapshot's __del__ gives its table back, and the collector can run it on
# a thread that is inside _table_for.
_TABLES: list = []
# (stream, table) of snapshots dropped while a kernel of theirs may still be queued: kept
# here, never freed (CuPy's pinned pool would hand the memory on at once, to a copy or a
# snapshot, while the kernel still reads it and writes its sums there), and moved to _TABLES
# once the stream has finished.
_PARKED: list = []


def _table_for(words: int) -> tuple[Any, int]:
    """A pinned host buffer of at least ``words`` uint64s, which the device reads and writes
    in place (pinned memory is mapped into every device's address space), and its address:
    one from the free list, else a new one (pinned memory costs far more to allocate than a
    check). Whoever took it gives it back with :func:`_give_back_table` once no kernel can
    still use it."""
    import numpy

    with _TABLES_LOCK:
        if _PARKED:
            _unpark()
        for i, (table, _) in enumerate(_TABLES):
            if table.size >= words:
                return _TABLES.pop(i)
    cupy = _cuda.require_cuda()
    size = max(words, 1024)
    memory = cupy.cuda.alloc_pinned_memory(size * 8)
    table = numpy.frombuffer(memory, dtype=numpy.uint64, count=size)
    return table, int(table.ctypes.data)


def _give_back_table(table: tuple[Any, int]) -> None:
    with _TABLES_LOCK:
        _TABLES.append(table)


def _unpark() -> None:
    """Parked tables whose stream has finished go back to the free list (lock held). Asks
    each parked table's stream (cudaStreamQuery), so it runs where snapshots are taken,
    outside any capture; a stream kept busy keeps its table parked."""
    waiting = []
    for stream, table in _PARKED:
        try:
            done = stream.done
        except Exception:  # a stream that cannot be asked stays parked
            done = False
        if done:
            _TABLES.append(table)
        else:
            waiting.append((stream, table))
    _PARKED[:] = waiting


class StateSnapshot:
    """Checksums of every allocation a state holds, taken before capture.

    Cost: before capture, one kernel that reads the state (its sums land in pinned host
    memory, the table the kernel read its allocations from); after, a device synchronization
    and the same kernel again. No copy of the state; no upload and no copy back where the
    device maps host memory (a copy each way where it does not).
    """

    def __init__(self, regions: list[Region], stream: Any,
                 arrays: list[tuple[str, Any]] | None = None):
        self.regions = regions
        # the (path, array) pairs the regions came from, as they were before capture
        self.arrays = list(arrays) if arrays is not None else []
        self._extents: list | None = None  # their byte extents, when shares() first asks
        self.stream = stream
        self.take_ms = 0.0
        self.compare_ms = 0.0
        self._pending = False  # before-capture checksums launched, not yet waited for
        # A kernel that uses the table may be queued and not yet waited for: set before one is
        # queued, cleared after a synchronization of the stream. Only the table of a snapshot
        # with none goes back to the free list.
        self._in_flight = False
        self._comparing = False  # after-capture checksums launched, not yet read
        n = len(regions)
        # Blocks along x, the same for every allocation: enough that each thread reads about
        # 32 words of the largest, at most 2,048, and at most 32,768 in all but 8 an
        # allocation (the blocks of a small allocation find little or nothing to read). On an
        # H100, a pass over mlp_decode's 33.6 MB (4 allocations) took 20.3 µs so, 26.2 µs with
        # one block per 1,024 words; 16 MB and 299 x 64 KB 42.3 µs, 58.1 µs with 27 blocks an
        # allocation, 78.2 µs with 256; the same for 28 allocations of a GPT block (37 µs).
        largest = max((r.size // 8 for r in regions), default=0)  # in words
        self._blocks = max(1, min(-(-largest // (_THREADS * 32)), 2048,
                                  max(8, 32768 // max(1, n))))
        # The table: n pointers, n sizes, then one sum per block for each of the two passes,
        # then (host only) the kernel's arguments, packed for cuLaunchKernel (_pack_launches).
        words = 2 * n + 2 * n * self._blocks
        launches = -(-n // _GRID_Y_MAX)
        self._table, self._address = _table_for(words + 4 + 9 * launches) if n else (None, 0)
        self._function, self._device_table = None, None
        # per launch: the regions it covers (grid y), its argument arrays' addresses (slots 0, 1)
        self._launches: list = []
        if n:
            cupy = _cuda.require_cuda()
            self._function, maps = _for_device(cupy.cuda.runtime.getDevice())
            if not maps:  # the kernel's table on the device, copied to and from the host's
                with stream:  # CuPy's pool then reuses its block only after this stream's work
                    self._device_table = cupy.empty(words, dtype=cupy.uint64)

    @classmethod
    def take(cls, arrays: list[tuple[str, Any]], stream: Any, *, synchronized: bool = False,
             regions: list[Region] | None = None, spent_ms: float = 0.0) -> StateSnapshot:
        """Start checksumming the allocations behind a state's ``(path, array)`` pairs, once all
        device work so far is done. Call :meth:`wait` before anything may run stray work (the
        first capture): host work in between overlaps the checksum kernel. The sums stay in
        the snapshot's table until :meth:`changed`.

        ``synchronized``: the caller has synchronized the device (on this thread, so CUDA's
        context is current for the launch) since the state was last written on another
        stream, and queued any later write on ``stream`` (so the kernel, queued there too,
        runs after it): the snapshot then skips its own synchronization.
        ``regions``: ``state_regions(arrays)``, where the caller has them already;
        ``spent_ms``: the host time the caller spent on them, counted in :attr:`take_ms`.
        """
        cupy = _cuda.require_cuda()
        t0 = time.perf_counter()
        snapshot = cls(state_regions(arrays) if regions is None else regions, stream, arrays)
        if not synchronized:
            cupy.cuda.runtime.deviceSynchronize()
        n = len(snapshot.regions)
        if n:
            snapshot._table[:2 * n] = ([r.ptr for r in snapshot.regions]
                                       + [r.size for r in snapshot.regions])
            snapshot._pack_launches()
            snapshot._in_flight = True
            try:
                if snapshot._device_table is not None:
                    cupy.cuda.runtime.memcpyAsync(snapshot._device_table.data.ptr,
                                                  snapshot._address, 16 * n, _H2D, stream.ptr)
                snapshot._launch(0)
            except BaseException:
                stream.synchronize()  # no kernel is left that reads or writes the table
                snapshot._in_flight = False
                raise
        snapshot._pending = True
        snapshot.take_ms = (time.perf_counter() - t0) * 1e3 + spent_ms
        return snapshot

    def __del__(self) -> None:
        # The table goes back for the next snapshot once no kernel of this one can still use
        # it; one with a kernel perhaps still queued is parked until its stream has finished
        # (nothing here waits: the collector may run this anywhere, even during a capture).
        table, self._table = getattr(self, "_table", None), None
        if table is None:
            return
        try:
            if getattr(self, "_in_flight", True):
                with _TABLES_LOCK:
                    _PARKED.append((self.stream, (table, self._address)))
            else:
                _give_back_table((table, self._address))
        except Exception:  # interpreter exit
            pass

    def wait(self) -> None:
        """Block until the before-capture checksums are computed (no work started later can
        race them). Idempotent."""
        if self._pending:
            t0 = time.perf_counter()
            self.stream.synchronize()
            self._pending = self._in_flight = False
            self.take_ms += (time.perf_counter() - t0) * 1e3

    @property
    def nbytes(self) -> int:
        return sum(r.size for r in self.regions)

    def _launch(self, slot: int) -> None:
        """Queue the checksum kernel for ``slot`` (0 before capture, 1 after) on the stream:
        cuLaunchKernel with the arguments :meth:`_pack_launches` wrote (CuPy's kernel call,
        which converts each argument on every call, cost 9 to 18 µs a launch on the
        capture's cold path, H100)."""
        launch = _cuda.require_cuda().cuda.driver.launchKernel
        function, stream = self._function.ptr, self.stream.ptr
        for grid_y, params in self._launches:
            launch(function, self._blocks, grid_y, 1, _THREADS, 1, 1, 0, stream,
                   params[slot], 0)

    def _pack_launches(self) -> None:
        """Write the kernel's arguments into the host table, after the sums, for each launch
        and both slots: the values (the table the kernel reads, the region count, the two
        slots, the launch's first region, each in a word of its own: an int argument is read
        from its word's first four bytes, little-endian as the host is), then for each slot
        the four pointers cuLaunchKernel reads them through. One assignment, no object a
        launch."""
        n = len(self.regions)
        base = 2 * n + 2 * n * self._blocks
        word = self._address + 8 * base  # the first argument word's address
        kernel_table = (self._address if self._device_table is None
                        else self._device_table.data.ptr)
        values = [kernel_table, n, 0, 1]
        for j, first in enumerate(range(0, n, _GRID_Y_MAX)):
            at = word + 8 * (4 + 9 * j)  # this launch's first region
            values += [first, word, word + 8, word + 16, at, word, word + 8, word + 24, at]
            self._launches.append((min(_GRID_Y_MAX, n - first), (at + 8, at + 40)))
        self._table[base:base + len(values)] = values

    def start_compare(self) -> None:
        """Once all device work is done, start the after-capture checksums (host work can
        then overlap them until :meth:`changed`)."""
        n = len(self.regions)
        self.wait()
        if not n:
            return
        runtime = _cuda.require_cuda().cuda.runtime
        t0 = time.perf_counter()
        runtime.deviceSynchronize()  # stray work on any stream has finished
        self._in_flight = True
        self._launch(1)
        if self._device_table is not None:  # both passes' sums back to the host's table
            runtime.memcpyAsync(self._address + 16 * n, self._device_table.data.ptr + 16 * n,
                                16 * n * self._blocks, _D2H, self.stream.ptr)
        self._comparing = True
        self.compare_ms += (time.perf_counter() - t0) * 1e3

    def changed(self) -> list[str]:
        """State paths whose memory differs from the snapshot, once all device work is done
        (starts the compare if :meth:`start_compare` was not called)."""
        n = len(self.regions)
        if not n:
            self.wait()
            return []
        if not self._comparing:
            self.start_compare()
        t0 = time.perf_counter()
        self.stream.synchronize()
        self._in_flight = self._comparing = False
        per_slot = n * self._blocks
        sums = self._table[2 * n:2 * n + 2 * per_slot]
        before, now = sums[:per_slot], sums[per_slot:]
        # bytes compared in one C call: a NumPy comparison cost 3x as long on the cold path
        # right after capture (37 against 12 µs, H100)
        if before.tobytes() == now.tobytes():
            paths = []
        else:
            moved = (before != now).reshape(n, self._blocks).any(axis=1)
            paths = [path for region, differs in zip(self.regions, moved) if differs
                     for path in region.paths]
        self.compare_ms += (time.perf_counter() - t0) * 1e3
        return paths

    def restore_from(self, fresh_arrays: list[tuple[str, Any]]) -> None:
        """Copy a fresh state's allocations over the captured state's (on the snapshot's
        stream), so the captured state holds exactly the bytes the fresh one holds now.

        ``fresh_arrays`` are the ``(path, array)`` pairs of a state from the same setup with
        the same parameters: the same paths reach allocations of the same sizes.
        AccelgraphError when they do not. An allocation both states hold (one buffer that
        every setup() takes a slot of, as a paged KV cache hands blocks out) is copied array
        by array, each of the fresh state's into the captured state's at its path; an array
        both states hold, the same bytes, is left as it is.
        """
        cupy = _cuda.require_cuda()
        fresh = dict(fresh_arrays)
        mine = None
        for region in self.regions:
            source = fresh.get(region.paths[0])
            found = device_region(source) if source is not None else None
            if found is None or found[1] != region.size:
                raise AccelgraphError(
                    f"setup() built a different state the second time: {region.paths[0]} is "
                    f"missing or has another size; setup must build the same arrays for the "
                    f"same parameters"
                )
            if found[0] != region.ptr:
                cupy.cuda.runtime.memcpyAsync(region.ptr, found[0], region.size, _D2D,
                                              self.stream.ptr)
                continue
            if mine is None:
                mine = dict(self.arrays)
            arrays_here = None  # the bytes the captured state's arrays here reach, if asked
            for path in region.paths:
                target, source = mine.get(path), fresh.get(path)
                if source is None or target is None or target is source:
                    continue  # (a slot the fresh state does not hold: nothing to copy)
                if _is_raw_memory(target) or _is_raw_memory(source):
                    if arrays_here is None:  # each dealt with in this loop: a raw pointer
                        # into one of them (a slot held as an array and as its .data) is too
                        arrays_here = [e for e in (array_extent(mine[p]) for p in region.paths
                                                   if p in mine and not _is_raw_memory(mine[p]))
                                       if e]
                    start = _start(target)
                    if start == _start(source) or any(lo <= start < hi for lo, hi in arrays_here):
                        continue  # the same bytes, or bytes an array's copy restores
                    raise AccelgraphError(
                        f"cannot restore {path}: it is raw memory (a MemoryPointer) into a "
                        f"buffer both states hold, and a pointer does not say how many bytes "
                        f"it reaches; hold that slot as an array (cupy.ndarray(shape, dtype, "
                        f"memptr=pointer)) so its bytes can be copied")
                there, here = array_extent(target), array_extent(source)
                if there is None or here is None or (here[0] < there[1] and there[0] < here[1]):
                    continue  # bytes both states hold: nothing to copy them from
                self._copy_array(target, source, path)

    def _copy_array(self, target: Any, source: Any, path: str) -> None:
        """``source``'s elements into ``target`` (same shape and dtype), on the snapshot's
        stream, as raw device memory: a torch tensor is read through a CuPy view of it, so
        no autograd rule (a leaf that requires grad, an inference-mode tensor) applies."""
        cupy = _cuda.require_cuda()
        if tuple(target.shape) != tuple(source.shape) or target.dtype != source.dtype:
            raise AccelgraphError(
                f"setup() built a different state the second time: {path} has another shape "
                f"or dtype; setup must build the same arrays for the same parameters")
        with self.stream:
            cupy.copyto(_as_cupy(cupy, target), _as_cupy(cupy, source))

    def covers(self, array: Any) -> bool:
        """Whether ``array``'s memory lies in one of the snapshot's allocations."""
        if device_region(array) is None:
            return False
        ptr = _start(array)
        return any(r.ptr <= ptr < r.ptr + r.size for r in self.regions)

    def shares(self, array: Any, also: list | tuple = ()) -> bool:
        """Whether ``array`` reaches a byte that an array of the snapshot's state reached
        before capture, or one of ``also`` reaches (the captured state's outputs now) — the
        bytes, not only the allocation: two slots of one buffer share none."""
        found = array_extent(array)
        if found is None:
            return False
        lo, hi = found
        if self._extents is None:  # the state's, once: they do not change
            self._extents = [e for e in map(_extent_quietly, (a for _, a in self.arrays)) if e]
        for other in self._extents + [_extent_quietly(a) for a in also]:
            if other is not None and lo < other[1] and other[0] < hi:
                return True
        return False


def float_allocation(value: Any) -> tuple[int, int, int, Any] | None:
    """(pointer, bytes, item size, owner) of the allocation behind a floating-point or
    complex CuPy array or CUDA tensor (a view too: its whole allocation; a complex one's item
    is each part, a float); None for anything else."""
    cupy = _cuda.require_cuda()
    if isinstance(value, cupy.ndarray):
        if value.dtype.kind not in "fc":
            return None
        itemsize = value.dtype.itemsize // (2 if value.dtype.kind == "c" else 1)
    elif _is_cuda_tensor(value) and (value.is_floating_point() or value.is_complex()):
        itemsize = value.element_size() // (2 if value.is_complex() else 1)
    else:
        return None
    found = device_region(value)
    return None if found is None else (found[0], found[1], itemsize, found[2])


def pick_allocations(values: list, state_pointers: set[int], describe) -> list[tuple]:
    """The allocations (``describe(value)``: pointer, bytes, item size, owner; None to skip)
    behind ``values`` that the state holds (pointer in ``state_pointers``), each once, in
    the order first seen, with the smallest item size of the values in it (a float64 view
    and float32 data in one buffer: every float32 word is then flipped). Allocations whose
    bytes overlap are merged into one (their owners kept as a tuple): two windows of one
    buffer that were wrapped apart (``cupy.asarray`` of two ``__cuda_array_interface__``
    objects gives each its own allocation, starting where the window does) must not flip
    the bytes they share twice, which would leave those bytes as they were. An allocation
    whose start is not aligned to its item size is left out."""
    found: dict[int, list] = {}
    for value in values:
        described = describe(value)
        if described is None or described[0] not in state_pointers:
            continue
        seen = found.get(described[0])
        if seen is None:
            found[described[0]] = [*described[:3], [described[3]], len(found)]
        else:
            seen[1] = max(seen[1], described[1])
            seen[2] = min(seen[2], described[2])
            if not any(described[3] is kept for kept in seen[3]):
                seen[3].append(described[3])
    merged: list[list] = []
    for item in sorted(found.values(), key=lambda a: a[0]):
        last = merged[-1] if merged else None
        if last is not None and item[0] < last[0] + last[1]:  # overlaps the one before
            last[1] = max(last[1], item[0] + item[1] - last[0])
            last[2] = min(last[2], item[2])
            last[3].extend(o for o in item[3] if not any(o is kept for kept in last[3]))
            last[4] = min(last[4], item[4])
        else:
            merged.append(item)
    merged.sort(key=lambda a: a[4])
    return [(a[0], a[1], a[2], a[3][0] if len(a[3]) == 1 else tuple(a[3]))
            for a in merged if a[0] % a[2] == 0]


def output_paths(values: list, arrays: list[tuple[str, Any]], start) -> list[str]:
    """The paths of ``arrays`` (``(path, array)`` pairs, as the state walk gives them) whose
    allocation a value of ``values`` lies in, each once, in the order the values come (and
    for one allocation, the walk's order): every path, not only the first, since another
    state may hold something else at the first (a placeholder the step replaces).
    ``start(x)`` is the address of the allocation ``x`` lies in (None to skip it)."""
    by_start: dict[int, list[str]] = {}
    for path, array in arrays:
        where = start(array)
        if where is not None:
            by_start.setdefault(where, []).append(path)
    paths: list[str] = []
    for value in values:
        where = start(value)
        for path in (by_start.get(where, []) if where is not None else []):
            if path not in paths:
                paths.append(path)
    return paths


def flip_low_bits(ptr: int, size: int, itemsize: int, owner: Any) -> Any:
    """Flip the lowest bit of every ``itemsize``-byte word of an allocation, in place, on
    the current stream; returns the view to flip it back with (:func:`flip_back`), or None
    when the allocation holds no whole word. A float so flipped differs from what it was in
    its last place only (zero becomes the smallest subnormal, an infinity a NaN): stray work
    that reads it computes nothing wild, where a complement would read NaNs and huge values."""
    cupy = _cuda.require_cuda()
    words = _unsigned_words(cupy, itemsize)
    count = size // itemsize
    if words is None or not count:
        return None
    memory = cupy.cuda.UnownedMemory(ptr, count * itemsize, owner)
    view = cupy.ndarray((count,), dtype=words, memptr=cupy.cuda.MemoryPointer(memory, 0))
    flip_back(view)
    return view


def flip_back(view: Any) -> None:
    """Flip the lowest bit of every word of ``view`` (a :func:`flip_low_bits` view) again."""
    cupy = _cuda.require_cuda()
    cupy.bitwise_xor(view, view.dtype.type(1), out=view)


def fill_complement(target: Any, reference: Any) -> bool:
    """Fill ``target`` with the bitwise complement of ``reference`` (same shape and dtype).

    Every element then differs from the reference, so an output the graph does not write
    cannot match eager by luck. A NumPy target (host memory a graph's copy writes), or a CPU
    tensor through NumPy, is filled in place; a complex one part by part. Returns False
    (nothing written) when the arrays differ in shape or dtype or the dtype has no
    same-sized integer view.
    """
    cupy = _cuda.require_cuda()
    import numpy

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(target, torch.Tensor) and target.device.type == "cpu":
        try:  # a CPU tensor: its memory, through NumPy
            target = target.detach().numpy()
        except (RuntimeError, TypeError):  # a dtype NumPy lacks (bfloat16): not filled
            return False
    if isinstance(target, numpy.ndarray):  # host memory (pinned, as a copy node writes): here
        if not target.flags.writeable:
            return False
        xp, reference = numpy, cupy.asnumpy(reference)
    else:
        xp, target, reference = cupy, cupy.asarray(target), cupy.asarray(reference)
    if target.shape != reference.shape or target.dtype != reference.dtype:
        return False
    target, reference = one_of_each_broadcast(target, reference)
    if target.dtype.kind == "c":  # its real and imaginary parts, each a word
        return (_fill_words(xp, target.real, reference.real)
                and _fill_words(xp, target.imag, reference.imag))
    return _fill_words(xp, target, reference)


def _fill_words(xp, target: Any, reference: Any) -> bool:
    if target.dtype == xp.bool_:
        target[...] = ~reference
        return True
    words = _unsigned_words(xp, target.dtype.itemsize)
    if words is None:
        return False
    target.view(words)[...] = ~reference.view(words)
    return True


def is_complement(got: Any, want: Any) -> bool:
    """Whether ``got`` holds exactly the bitwise complement of ``want`` (what
    :func:`fill_complement` wrote): the replay never wrote it."""
    cupy = _cuda.require_cuda()
    got, want = cupy.asarray(got), cupy.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if want.dtype.kind == "c":
        return (_complement_words(cupy, got.real, want.real)
                and _complement_words(cupy, got.imag, want.imag))
    return _complement_words(cupy, got, want)


def _complement_words(cupy, got: Any, want: Any) -> bool:
    if want.dtype == cupy.bool_:
        return bool((got == ~want).all())
    words = _unsigned_words(cupy, want.dtype.itemsize)
    if words is None:
        return False
    return bool((got.view(words) == ~want.view(words)).all())


def one_of_each_broadcast(target, reference):
    """``target`` and ``reference`` narrowed to one element along every dimension in which
    ``target`` repeats one element (stride 0: an expanded or broadcast view): its memory
    holds one value there, which cannot take a different complement per position (torch
    refuses to write such a view at all). CuPy and NumPy arrays and torch tensors alike."""
    stride = getattr(target, "stride", None)
    strides = stride() if callable(stride) else target.strides
    for dim, (size, step) in enumerate(zip(target.shape, strides)):
        if step == 0 and size > 1:
            first = (slice(None),) * dim + (slice(0, 1),)
            target, reference = target[first], reference[first]
    return target, reference


def torch_words(torch, itemsize: int):
    """The torch integer dtype of ``itemsize`` bytes, to read a tensor's elements as words
    (None for other sizes)."""
    return {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}.get(itemsize)


def _unsigned_words(cupy, itemsize: int):
    """The unsigned integer dtype of ``itemsize`` bytes (None for other sizes)."""
    return {1: cupy.uint8, 2: cupy.uint16, 4: cupy.uint32, 8: cupy.uint64}.get(itemsize)
