"""Memory pools that graphs allocate from during capture.

Three kinds, named by an opaque token (``tuple[int, int]``) as in torch.accelerator.Graph:

* ``private`` — a CuPy ``MemoryPool`` that only graph captures allocate from. Each Graph gets
  one of its own unless it is given another graph's token; graphs that share a token share the
  pool, so memory freed inside one capture is reused by the next (capture largest first).
  Memory in a graph pool is never handed to eager code, so a replay never writes memory that
  eager code was given after the capture.
* ``async`` — stream-ordered allocation (``cudaMallocAsync``): allocations made during capture
  become MEM_ALLOC/MEM_FREE nodes owned by the graph, which must then be instantiated with
  auto-free-on-launch to be replayed more than once (Graph does that).

Pool growth calls ``cudaMalloc``, which global and thread-local capture modes forbid. As PyTorch
does, the allocator switches this thread to relaxed mode around the pool's own malloc
(``cudaThreadExchangeStreamCaptureMode``), so allocating inside a global-mode capture works.
"""

from __future__ import annotations

import itertools
import threading

from ..enums import PoolKind
from . import device as _cuda

_serial = itertools.count(1)
_registry: dict[tuple[int, int], GraphPool] = {}
_lock = threading.Lock()


class GraphPool:
    """One memory pool used by graph captures; see the module docstring for the kinds.

    ``users`` counts graphs holding the pool; when the last one lets go (``Graph.reset`` or the
    graph being collected), cached blocks go back to CUDA.
    """

    def __init__(self, token: tuple[int, int], kind: PoolKind | str):
        if kind not in (PoolKind.PRIVATE, PoolKind.ASYNC):
            # "shared" is no kind of pool: it is a private pool whose token several graphs pass
            raise ValueError(f"pool kind must be 'private' or 'async' (to share a pool, pass one "
                             f"pool's token to several graphs); got {kind!r}")
        kind = PoolKind(kind)
        self.token = token
        self.kind = kind
        self.users = 0
        self._pool = None  # created on first use, so tokens can be made without a GPU call

    def _cupy_pool(self):
        if self._pool is None:
            cupy = _cuda.require_cuda()
            if self.kind is PoolKind.ASYNC:
                self._pool = cupy.cuda.MemoryAsyncPool()
            else:
                self._pool = cupy.cuda.MemoryPool()
        return self._pool

    def capture_allocator(self):
        """The allocator to install (thread-locally) for the duration of a capture."""
        pool = self._cupy_pool()
        malloc = pool.malloc
        # Private pools grow with cudaMalloc; CuPy's async pool queries cudaMemPoolGetAttribute
        # before each cudaMallocAsync (which itself becomes a MEM_ALLOC node). Global and
        # thread-local capture forbid both calls, so either way the thread goes relaxed for them.
        runtime, _ = _cuda.bindings()
        relaxed = runtime.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed
        exchange = runtime.cudaThreadExchangeStreamCaptureMode

        def malloc_relaxed(size):
            err, previous = exchange(relaxed)
            _cuda.check("cudaThreadExchangeStreamCaptureMode", (err,))
            try:
                return malloc(size)
            finally:
                exchange(previous)

        return malloc_relaxed

    def bytes_held(self) -> int:
        """Bytes of device memory this pool holds (in use plus cached)."""
        if self._pool is None:
            return 0
        if self.kind is PoolKind.ASYNC:
            return graph_memory_reserved()
        return int(self._pool.total_bytes())

    def release_cached(self) -> None:
        """Give cached, unused blocks back to CUDA."""
        if self._pool is not None and self.kind is PoolKind.PRIVATE:
            self._pool.free_all_blocks()


def new_pool(kind: PoolKind | str = PoolKind.PRIVATE) -> tuple[int, int]:
    """Create a pool and return its token. Pass it as ``Graph(pool=token)``.

    Like ``torch.cuda.graph_pool_handle()``; ``kind="async"`` asks for stream-ordered
    allocation nodes inside the graphs instead of a pool owned by the process.
    """
    token = (0, next(_serial))
    with _lock:
        _registry[token] = GraphPool(token, kind)
    return token


graph_pool_handle = new_pool


def get_pool(token) -> GraphPool:
    """The pool a token names; ValueError for anything that is not a live token."""
    if not (
        isinstance(token, tuple)
        and len(token) == 2
        and all(isinstance(part, int) and not isinstance(part, bool) for part in token)
    ):
        raise ValueError(
            f"pool must be a token from Graph.pool() or graph_pool_handle(), a tuple[int, int]; "
            f"got {token!r}"
        )
    try:
        return _registry[token]
    except KeyError:
        raise ValueError(
            f"pool {token!r} names no pool in this process: tokens come from Graph.pool() or "
            "graph_pool_handle() and cannot cross processes"
        ) from None


def acquire(token: tuple[int, int]) -> GraphPool:
    """Register one more graph as a user of the pool."""
    pool = get_pool(token)
    with _lock:
        pool.users += 1
    return pool


def release(pool: GraphPool) -> None:
    """One graph lets go of the pool; the last one out returns its cached blocks to CUDA."""
    with _lock:
        pool.users = max(0, pool.users - 1)
        last = pool.users == 0
    if last:
        pool.release_cached()


def graph_memory_reserved(device: int = 0) -> int:
    """Bytes CUDA reserves for graph allocations (MEM_ALLOC nodes) on a device."""
    return _graph_mem_attribute("cudaGraphMemAttrReservedMemCurrent", device)


def _graph_mem_attribute(name: str, device: int) -> int:
    runtime, _ = _cuda.bindings()
    attr = getattr(runtime.cudaGraphMemAttributeType, name)
    value = _cuda.check("cudaDeviceGetGraphMemAttribute",
                        runtime.cudaDeviceGetGraphMemAttribute(device, attr))
    return int(value)
