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

No token accelgraph makes has the shape of a torch pool token (both its parts are nonzero:
:func:`is_accelgraph_token`), so a torch token given to Graph, or one of these given to
TorchGraph, is refused rather than taken for a pool of the other backend.

Pool growth calls ``cudaMalloc``, which global and thread-local capture modes forbid. As PyTorch
does, the allocator switches this thread to relaxed mode around the pool's own malloc
(``cuThreadExchangeStreamCaptureMode``), so allocating inside a global-mode capture works.

Private pools get their device memory from one raw allocator, :func:`_graph_malloc`. When the
last graph using a pool lets go of it, the pool's allocations are not freed but kept as
*spare* graph memory (by size), and the next pool that needs an allocation of that size takes
one instead of calling ``cudaMalloc`` (which costs tens of µs, more than a small graph's whole
capture). Spare memory only ever goes to graph pools, never to eager code, and only once no
graph uses it. It is freed when a ``cudaMalloc`` runs out of memory, when it exceeds
:data:`SPARE_LIMIT` (trimmed before the next capture begins, not during one) and by
:func:`release_spare`. A pool's :meth:`GraphPool.bytes_held` counts only what the pool took.

A block still in use when the last graph lets go (an output the caller kept) goes back to its
pool only when that array dies. Such *draining* pools are swept as each capture begins, so the
block becomes spare then, instead of staying for good in a pool that no graph uses (which is
what happened to every capture whose output outlived its graph). A drained pool's empty CuPy
``MemoryPool`` is kept for the next private pool, which then need not build one, and the pool
itself is forgotten (an async pool as soon as its last graph lets go): a token this process
made names an equal, empty pool of its kind when a graph is given it again, so capturing graph
after graph keeps no object per pool (only the serial of each async token, for its kind).

A drained private pool whose blocks are all free and come to at most :data:`PASS_ON_LIMIT`
bytes, and whose captures all ran on one stream (not the per-thread default stream, whose
blocks CuPy files by thread), is passed on whole instead (blocks a capture allocated on a side
stream it joined go along, within the limit): its CuPy pool, blocks still cached, goes to the
next private pool captured on that stream. A graph that allocates those sizes then takes a
cached block inside CuPy, with no Python call, as CuPy's own pool serves eager code; turning
the blocks into spare memory and taking one back through :func:`_graph_malloc` made a 4-kernel
capture that allocates its output about 6 µs slower (63.6 against 57.7 µs, H100). Until taken,
those blocks count as spare memory (:func:`spare_bytes`, the limit, :func:`release_spare`,
which makes them spare first); once taken, as memory the new pool holds, so its
:meth:`GraphPool.bytes_held` may include up to that limit of blocks its graph did not use. A
new pool captured on a stream no idle pool caches blocks for first turns the blocks of every
idle pool into spare memory (which any stream's capture takes), so none waits idle for good.

So, as with torch's graph pools: an array a graph reads must stay alive as long as the graph
is replayed. Memory whose array was dropped is reused by later captures (spare memory goes
to any graph pool), also when the array came from another graph's pool, and on any stream:
unlike CuPy's own pool, which reuses a freed block only on the stream that freed it, spare
memory carries no stream order. So drop a graph's output only once the work that reads it
has finished (a synchronize, or an event waited on), as with torch's graph pools.
"""

from __future__ import annotations

import ctypes
import threading

from ..enums import PoolKind, choice
from ..errors import CudaError
from . import device as _cuda

_issued = 0  # the last serial a token was made with (tokens up to it may name a pool again)
_async_serials: set[int] = set()  # serials of async tokens: a token's kind is checked against it
# Pools a token currently names: each made by create() or held by a graph (hold()), until no
# graph uses it and it holds no memory (then it is dropped, so a process that captures many
# graphs does not keep one object per graph for good; its token makes an equal one again).
_registry: dict[tuple[int, int], GraphPool] = {}
_lock = threading.RLock()  # re-entrant: a _Lease may be collected while it is held

SPARE_LIMIT = 1 << 30
"""Bytes of spare graph memory kept for later pools; the excess is freed before a capture."""

PASS_ON_LIMIT = 1 << 21
"""A private pool no graph uses, whose blocks are all free and hold at most this many bytes,
passes its CuPy pool on whole, blocks still cached, to the next private pool captured on the
same stream (see the module docstring)."""

_spare: dict[int, list] = {}  # size -> [cupy.cuda.Memory] no graph pool holds
_spare_bytes = 0
_draining: set = set()  # GraphPools no graph uses whose blocks were in use when the last let go
# CuPy MemoryPools of drained private pools, for new ones: (pool, stream, bytes cached), where
# stream is the one the drained pool's captures ran on (0: no blocks cached)
_idle_cupy_pools: list = []
_idle_bytes = 0  # bytes cached in _idle_cupy_pools (spare memory, counted by spare_bytes())
_RELAXED = 2  # CU_STREAM_CAPTURE_MODE_RELAXED


# A token's first part: a tag plus the kind's code, so that no torch pool token is one of
# ours (torch's graph_pool_handle() gives (0, n), its own pools are (n, 0): a part is 0 in
# each; both parts of an accelgraph token are nonzero, the serials counting from 1).
_TOKEN_TAG = 0x61670000
_KIND_CODES = {PoolKind.PRIVATE: _TOKEN_TAG + 1, PoolKind.ASYNC: _TOKEN_TAG + 2}
_CODE_KINDS = {code: kind for kind, code in _KIND_CODES.items()}

# The kinds of pool as module globals: a capture reads them several times, and each read of
# an Enum class's attribute goes through its metaclass (see enums.choice).
_PRIVATE = PoolKind.PRIVATE
_ASYNC = PoolKind.ASYNC
_PRIVATE_CODE = _KIND_CODES[_PRIVATE]


def is_accelgraph_token(token) -> bool:
    """Whether ``token`` has the shape of a pool token accelgraph makes (``Graph.pool()``,
    ``graph_pool_handle()``), as opposed to torch's; it need not name a pool of this process.
    Pure Python: no CUDA call."""
    return (
        type(token) is tuple
        and len(token) == 2
        and type(token[0]) is int
        and token[0] in _CODE_KINDS
        and isinstance(token[1], int)
        and not isinstance(token[1], bool)
        and token[1] >= 1
    )


def _looks_like_torch_token(token: tuple) -> bool:
    """A pair of ints shaped as torch's pool tokens: one part 0, the other positive."""
    first, second = token
    return first >= 0 and second >= 0 and (first == 0) != (second == 0)


class GraphPool:
    """One memory pool used by graph captures; see the module docstring for the kinds.

    ``users`` counts graphs holding the pool; when the last one lets go (``Graph.reset`` or the
    graph being collected), its cached blocks become spare graph memory, or go on with its
    CuPy pool to the next private pool (see the module docstring).
    """

    __slots__ = ("token", "kind", "users", "_pool", "_stream")

    def __init__(self, token: tuple[int, int] | None, kind: PoolKind | str):
        try:
            member = choice(PoolKind, kind, "pool kind")
        except (ValueError, TypeError):  # said below, as no kind of pool
            member = None
        if member is not _PRIVATE and member is not _ASYNC:
            # "shared" is no kind of pool: it is a private pool whose token several graphs pass
            raise ValueError(f"pool kind must be 'private' or 'async' (to share a pool, pass one "
                             f"pool's token to several graphs); got {kind!r}")
        kind = member
        self.token = token
        self.kind = kind
        self.users = 0
        self._pool = None  # created on first use, so tokens can be made without a GPU call
        # the stream (pointer) this pool's captures ran on while it held its CuPy pool; -1
        # once they ran on two (its blocks are then not passed on whole)
        self._stream = None

    def _cupy_pool(self, stream: int = 0):
        """The CuPy pool, made (or taken from the idle ones) on first use, and the stream of
        this capture noted for a private pool; under the lock, so that two threads beginning
        captures on graphs that share the pool cannot each give it a CuPy pool (the one
        overwritten would be collected, and its blocks in use made spare)."""
        with _lock:
            pool = self._pool
            if pool is None:
                cupy = _cuda.require_cuda()
                if self.kind is _ASYNC:
                    pool = cupy.cuda.MemoryAsyncPool()
                else:
                    idle = _take_idle(stream) if _idle_cupy_pools else None
                    pool = idle if idle is not None else cupy.cuda.MemoryPool(_graph_malloc)
                self._pool = pool
            seen = self._stream
            if seen != stream:
                self._stream = stream if seen is None else -1
        return pool

    def capture_allocator(self, capture: AsyncCapture | None = None, stream: int = 0):
        """The allocator to install (thread-locally) for the duration of a capture; for an
        async pool, ``capture`` is the capture's record (see AsyncCapture). ``stream``: the
        pointer of the stream the capture runs on (0: not told)."""
        pool = self._cupy_pool(stream)
        if self.kind is _PRIVATE:
            # The pool's own malloc, called by CuPy without a Python frame: a cached block costs
            # nothing more, and growth goes through _graph_malloc, which goes relaxed itself.
            return pool.malloc
        # CuPy's async pool queries cudaMemPoolGetAttribute before each cudaMallocAsync (which
        # itself becomes a MEM_ALLOC node); global and thread-local capture forbid that query.
        # Each allocation the capture records is handed out behind a _GraphAllocation, which
        # decides at its death whether CuPy may free it. One made on a stream that is not
        # capturing (a side stream never joined to the capture) is an eager allocation: its
        # keeper has no capture record, and frees it as CuPy frees it but in relaxed mode (a
        # global capture refuses a cudaFreeAsync on a stream it does not capture, and is then
        # invalidated). Kept as a graph allocation it was never freed unless the graph ran.
        global _cupy_cuda
        malloc = pool.malloc
        cuda = _cupy_cuda = _cuda.require_cuda().cuda
        current_stream = cuda.get_current_stream
        if capture is None:
            capture = AsyncCapture()

        def malloc_relaxed(size):
            with _relaxed_capture_mode():
                pointer = malloc(size)
            memory = pointer.mem
            if not memory.ptr:
                return pointer
            on = current_stream().ptr
            # (a stream CUDA cannot answer for: the legacy one while another captures, where
            # an allocation would end that capture anyway)
            eager = on != stream and not _capturing(cuda.runtime, on, unknown=True)
            keeper = _GraphAllocation(memory, None if eager else capture)
            return cuda.MemoryPointer(cuda.UnownedMemory(memory.ptr, memory.size, keeper,
                                                         memory.device_id), 0)

        return malloc_relaxed

    def bytes_held(self) -> int:
        """Bytes of device memory this pool holds (in use plus cached)."""
        pool = self._pool  # read once: a sweep in another thread may recycle it
        if pool is None:
            return 0
        if self.kind is _ASYNC:
            return graph_memory_reserved()
        return int(pool.total_bytes())

    def _release_cached(self) -> bool:
        """Give cached, unused blocks back: with the CuPy pool itself, still cached, when
        nothing in it is in use and it is small and of one stream (passed on whole, see the
        module docstring), else as spare graph memory. True when the pool then holds nothing
        (its CuPy pool, empty or passed on, goes to the idle ones for the next private pool).
        Only with ``_lock`` held and no graph using the pool."""
        global _idle_bytes
        assert self.users == 0, "a pool a graph uses keeps its blocks"
        pool = self._pool
        if pool is None or self.kind is not _PRIVATE:
            return True
        stream, self._stream = self._stream, None
        if not pool.used_bytes():
            cached = pool.total_bytes()
            # not for the per-thread default stream (pointer 2 in every thread: CuPy files
            # its blocks by thread), nor the legacy one
            if cached <= PASS_ON_LIMIT and stream is not None and stream > 2:
                # passed on whole, blocks cached (see the module docstring)
                self._pool = None
                _idle_cupy_pools.append((pool, stream if cached else 0, cached))
                _idle_bytes += cached
                return True
        pool.free_all_blocks()
        if pool.total_bytes():
            self._stream = stream
            return False
        self._pool = None
        _idle_cupy_pools.append((pool, 0, 0))
        return True


def new_pool(kind: PoolKind | str = PoolKind.PRIVATE) -> tuple[int, int]:
    """Create a pool and return its token. Pass it as ``Graph(pool=token)``.

    Like ``torch.cuda.graph_pool_handle()``; ``kind="async"`` asks for stream-ordered
    allocation nodes inside the graphs instead of a pool owned by the process.
    """
    return create(kind).token


def create(kind: PoolKind | str = PoolKind.PRIVATE) -> GraphPool:
    """:func:`new_pool`, returning the pool itself (its ``token`` names it)."""
    global _issued
    pool = GraphPool(None, kind)
    # the kind is part of the token, so a dropped pool's token makes one of its kind again
    code = _KIND_CODES[pool.kind]
    with _lock:
        serial = _issued = _issued + 1
        token = pool.token = (code, serial)
        if code != _PRIVATE_CODE:
            _async_serials.add(serial)
        _registry[token] = pool
    return pool


graph_pool_handle = new_pool


def get_pool(token) -> GraphPool:
    """The pool a token names; ValueError for anything that is not a token this process made."""
    if type(token) is tuple and len(token) == 2 and type(token[0]) is type(token[1]) is int:
        pool = _registry.get(token)  # the usual case, checked with no generator
        if pool is not None:
            return pool
    if not (
        isinstance(token, tuple)
        and len(token) == 2
        and all(isinstance(part, int) and not isinstance(part, bool) for part in token)
    ):
        raise ValueError(
            f"pool must be a token from Graph.pool() or graph_pool_handle(), a tuple[int, int]; "
            f"got {token!r}"
        )
    kind = _CODE_KINDS.get(token[0])
    if kind is None and _looks_like_torch_token(token):
        raise ValueError(
            f"pool {token!r} looks like a torch pool token: Graph takes tokens from "
            "Graph.pool() or graph_pool_handle() (TorchGraph takes torch's, from "
            "torch.cuda.graph_pool_handle() or TorchGraph.pool())"
        )
    if kind is None or not 1 <= token[1] <= _issued or \
            (token[1] in _async_serials) != (kind is _ASYNC):
        raise ValueError(
            f"pool {token!r} names no pool in this process: tokens come from Graph.pool() or "
            "graph_pool_handle() and cannot cross processes"
        )
    # A token this process made whose pool was dropped (no graph used it, it held no
    # memory): a new, empty pool of its kind is the same thing. It is registered only when a
    # graph holds it (hold()), so a lookup that captures nothing leaves nothing behind.
    pool = _registry.get(token)
    return pool if pool is not None else GraphPool(token, kind)


def hold(pool: GraphPool) -> GraphPool:
    """Register one more graph as a user of ``pool`` (before its capture begins: spare memory
    over SPARE_LIMIT is freed here, where no capture of this thread is running). Returns the
    pool the token names: ``pool`` itself, unless it was dropped while unused and its token
    has named another since (a graph keeps its pool across reset())."""
    if _deferred:  # frees that waited for a capture to end (this thread's has not begun)
        free_deferred()
    with _lock:
        if _draining:
            _sweep_draining()
        pool = _registry.setdefault(pool.token, pool)
        pool.users += 1
        over = _spare_bytes + _idle_bytes > SPARE_LIMIT
    if over:
        release_spare(SPARE_LIMIT)
    return pool


def release(pool: GraphPool) -> None:
    """One graph lets go of the pool; the last one out gives its cached blocks back (as spare
    graph memory, or passed on whole), and the pool drains (see the module docstring) while
    blocks are in use."""
    with _lock:
        pool.users = max(0, pool.users - 1)
        if pool.users == 0:
            if pool._release_cached():
                _drop(pool)
            else:
                _draining.add(pool)


def _drop(pool: GraphPool) -> None:
    """Forget a pool no graph uses and that holds nothing (with ``_lock`` held)."""
    _draining.discard(pool)
    if _registry.get(pool.token) is pool:
        del _registry[pool.token]


def _sweep_draining() -> None:
    """Blocks freed since into pools no graph uses become spare; fully drained pools leave the
    set and the registry (a pool used again leaves the set only). Called with the lock held,
    outside any capture."""
    for pool in list(_draining):
        if pool.users:
            _draining.discard(pool)
        elif pool._release_cached():
            _drop(pool)


def draining_pools() -> int:
    """How many pools no graph uses still hold blocks in use (swept before each capture)."""
    return len(_draining)


def graph_memory_reserved(device: int = 0) -> int:
    """Bytes CUDA reserves for graph allocations (MEM_ALLOC nodes) on a device."""
    return _graph_mem_attribute("cudaGraphMemAttrReservedMemCurrent", device)


def _graph_mem_attribute(name: str, device: int) -> int:
    runtime, _ = _cuda.bindings()
    attr = getattr(runtime.cudaGraphMemAttributeType, name)
    value = _cuda.check("cudaDeviceGetGraphMemAttribute",
                        runtime.cudaDeviceGetGraphMemAttribute(device, attr))
    return int(value)


# -- device memory of private pools ---------------------------------------------------------


class _CaptureMode:
    """cuThreadExchangeStreamCaptureMode through the driver library CuPy has loaded (ctypes:
    importing cuda.bindings for one call would cost a first capture ~25 ms), else through
    cuda.bindings."""

    _exchange = None

    @classmethod
    def exchange(cls, mode: int) -> int:
        if cls._exchange is None:
            cls._exchange = cls._load()
        return cls._exchange(mode)

    @staticmethod
    def _load():
        try:
            function = ctypes.CDLL("libcuda.so.1").cuThreadExchangeStreamCaptureMode
            function.argtypes = [ctypes.POINTER(ctypes.c_int)]
            function.restype = ctypes.c_int

            def exchange(mode: int) -> int:
                value = ctypes.c_int(mode)
                err = function(ctypes.byref(value))
                if err:
                    raise CudaError("cuThreadExchangeStreamCaptureMode", f"CUresult {err}")
                return value.value
        except (OSError, AttributeError):
            runtime, _ = _cuda.bindings()

            def exchange(mode: int) -> int:
                err, previous = runtime.cudaThreadExchangeStreamCaptureMode(
                    runtime.cudaStreamCaptureMode(mode))
                _cuda.check("cudaThreadExchangeStreamCaptureMode", (err,))
                return int(previous)
        return exchange


class _relaxed_capture_mode:
    """This thread in relaxed capture mode for the block (calls a capture would refuse)."""

    def __enter__(self):
        self.previous = _CaptureMode.exchange(_RELAXED)

    def __exit__(self, *exc):
        _CaptureMode.exchange(self.previous)


class relaxed_or_current_mode(_relaxed_capture_mode):
    """This thread in relaxed capture mode for the block or, where the mode cannot be switched
    (the driver call fails: at interpreter exit, say), in the mode it has: for teardown, which
    goes ahead either way, as it did before it switched modes."""

    def __enter__(self):
        try:
            super().__enter__()
        except Exception:
            self.previous = None

    def __exit__(self, *exc):
        if self.previous is not None:
            super().__exit__(*exc)


class AsyncCapture:
    """What the allocations of one async-pool capture need to know when they die: whether
    the capture is still open, and whether its graph has been launched (Graph.replay counts
    its launches). Allocations the graph does not free (an output kept after capture) are
    graph allocations: CUDA backs them with memory only once the graph has been launched,
    and freeing one before fails (cudaErrorInvalidValue)."""

    __slots__ = ("open", "launches", "stream", "dropped")

    def __init__(self) -> None:
        self.open = True
        self.launches = 0  # successful launches through Graph.replay
        self.stream = None  # the CuPy Stream of the last one (held: its handle stays valid)
        # (address, launches then) of each graph allocation whose owner is gone and whose
        # memory was freed then, or never made (no launch yet): a later launch makes it
        # again, with no owner (see free_relaunched)
        self.dropped: list = []

    @property
    def launched(self) -> bool:
        return self.launches > 0

    def free_relaunched(self) -> None:
        """Free what launches made after its owner had gone, as the graph's executable is
        destroyed. Each launch makes every allocation the graph does not free, at its one
        address; the output that owned it (and freed it once, if it died after a launch) is
        gone, so the last launch's allocation would otherwise outlive the executable for
        good (cudaDeviceGraphMemTrim cannot take it back: 32 MiB of graph memory per such
        graph, measured on an H100). Never raises."""
        dropped, self.dropped = self.dropped, []  # (one dropped meanwhile: the new list)
        launches, stream = self.launches, self.stream
        due = [address for address, at in dropped if launches > at]
        self.dropped.extend((address, launches) for address, at in dropped if launches <= at)
        for address in due:
            # the free is noted in self.dropped as it is made (see _free_graph_memory)
            _free_graph_memory([_Relaunched(address, stream)], self, address)


class _Relaunched:
    """A graph allocation a launch made again after its owner had gone: dropped, it is
    freed (cudaFreeAsync on the stream of the graph's last launch). It answers as CuPy's
    MemoryAsync does (``ptr``, 0 to free nothing; ``stream_ref()``), so the frees of both
    go one way."""

    __slots__ = ("ptr", "_stream")

    def __init__(self, address: int, stream):
        self.ptr, self._stream = address, stream

    def stream_ref(self):
        return self._stream

    def __del__(self):
        if not self.ptr:
            return
        try:
            _cupy_cuda.runtime.freeAsync(self.ptr, self._stream.ptr)
        except Exception:  # interpreter exit: the driver may be gone
            pass


class _GraphAllocation:
    """Owns one allocation made by an async-pool capture (CuPy's MemoryAsync, whose death
    calls cudaFreeAsync). Dropped while its capture is open, that free becomes the graph's
    MEM_FREE node; after the graph's first launch it frees the launch's allocation, as CuPy
    would. Dropped in between (the capture ended, the graph not launched: every output of
    `accelgraph capture`, which never replays), or after a failed capture, nothing is freed
    then: the address belongs to the graph's reservation, and CuPy's free would fail with
    cudaErrorInvalidValue, printed as an ignored exception. Which of the three is decided
    from the capture's record, with no CUDA query, so the answer holds on any thread the
    collector runs it. (Replays after its death make it again, with no owner: freed as the
    executable is destroyed, AsyncCapture.free_relaunched.)

    ``capture`` None: an eager allocation made from the pool during a capture, on a stream
    the capture does not include; freed as CuPy frees it, whenever it dies.

    A free that is due while the stream CuPy frees on is capturing (the output of the last
    launch dropped inside the next capture on its stream) waits until an accelgraph capture
    begins or ends (:func:`free_deferred`): made then, CuPy's cudaFreeAsync would be
    recorded into the graph being captured, which would free this memory at each replay."""

    __slots__ = ("memory", "capture")

    def __init__(self, memory, capture: AsyncCapture | None):
        self.memory = memory
        self.capture = capture

    def __del__(self):
        memory, self.memory = self.memory, None
        capture = self.capture
        if memory is None:
            return
        if capture is not None:
            if capture.open:
                return  # (dropped during its capture: the free CuPy makes here is recorded)
            if not capture.launched:
                # nothing to free yet; a launch would make it with no owner
                capture.dropped.append((memory.ptr, 0))
                memory.ptr = 0  # CuPy's MemoryAsync frees nothing at 0
                return
        address, held = memory.ptr, [memory]
        del memory  # held is the last reference: the free is made where it is emptied
        _free_graph_memory(held, capture, address)


_cupy_cuda = None  # cupy.cuda, noted by the first async-pool capture (no query per free)
# (MemoryAsync or _Relaunched, its capture's record or None, address) whose free waits for a
# capture of its stream to end
_deferred: list = []
_CAPTURE_IMPLICIT = 906  # cudaErrorStreamCaptureImplicit


def _free_graph_memory(held: list, capture: AsyncCapture | None, address: int) -> None:
    """Free the memory ``held`` holds, its last reference (the free is its death), in
    relaxed mode, now or, where its stream is capturing, once that capture has ended
    (free_deferred); noted in the capture's record as it is made (the launches then). A
    global-mode capture on this thread would refuse a cudaFreeAsync on a stream it does not
    capture, and be invalidated (a replayed graph's output, or an eager allocation, dropped
    while capturing)."""
    try:
        if _free_waits(held[0]):
            _deferred.append((held.pop(), capture, address))  # (no lock: see free_deferred)
            return
        if capture is not None:
            capture.dropped.append((address, capture.launches))
        with _relaxed_capture_mode():
            held.pop()  # the free
    except Exception:  # interpreter exit (the driver may be gone): nothing is freed
        if held:
            held.pop().ptr = 0  # (at 0 its death frees nothing)


def _free_waits(memory) -> bool:
    """Whether the stream ``memory`` is freed on is capturing, so that the free must wait.
    For CuPy's MemoryAsync that is the stream it was allocated on, or, once that Stream
    object is gone, this thread's current stream (as CuPy decides)."""
    cuda = _cupy_cuda
    stream = memory.stream_ref() if hasattr(memory, "stream_ref") else None
    if stream is None:
        stream = cuda.get_current_stream()
    return _capturing(cuda.runtime, stream.ptr)


def _capturing(runtime, stream: int, unknown: bool = False) -> bool:
    """Whether ``stream`` is capturing: work on it would be recorded into a capture, or
    (the legacy stream while another captures, cudaErrorStreamCaptureImplicit) end one.
    ``unknown``: the answer where CUDA gives another error."""
    try:
        return runtime.streamIsCapturing(stream) != 0
    except Exception as exc:
        return getattr(exc, "status", None) == _CAPTURE_IMPLICIT or unknown


def free_deferred() -> None:
    """Make the frees that waited for a capture of their stream to end (see
    _GraphAllocation), in relaxed mode; those whose stream still captures wait on. Graph
    calls this as each of its captures begins and ends; it never raises. (Entries are
    appended without a lock, by keepers the collector may run on any thread: the list is
    swapped out whole, so one appended meanwhile goes to the new list.)"""
    global _deferred
    due, _deferred = _deferred, []
    try:
        while due:
            # no name for the memory: its last reference is the list's, popped in relaxed mode
            capture, address = due[-1][1:]
            if _free_waits(due[-1][0]):
                _deferred.append(due.pop())
                continue
            if capture is not None:
                capture.dropped.append((address, capture.launches))
            with _relaxed_capture_mode():
                due.pop()  # the last reference: the free is made here
    except Exception:  # the driver gone (interpreter exit): they wait on, for CuPy's own
        _deferred.extend(due)
        due.clear()


def deferred_frees() -> int:
    """How many frees wait for a capture of their stream to end."""
    return len(_deferred)


class _Lease:
    """Owns a device allocation while a graph pool uses it; gives it back as spare memory
    when the pool frees it (the pool drops the UnownedMemory, which drops this)."""

    __slots__ = ("memory",)

    def __init__(self, memory):
        self.memory = memory

    def __del__(self):
        global _spare_bytes
        memory, self.memory = self.memory, None
        if memory is None:
            return
        try:
            with _lock:
                _spare.setdefault(memory.size, []).append(memory)
                _spare_bytes += memory.size
        except Exception:  # interpreter exit: the allocation is freed with its Memory
            pass


def _graph_malloc(size: int):
    """The raw allocator of every private graph pool: a spare allocation of this size, else a
    cudaMalloc in relaxed capture mode. Out of memory: spare memory is freed and the call
    retried once, then OutOfMemoryError (never CuPy's retry, which would free the pool's free
    blocks, and a graph may still use those)."""
    global _spare_bytes
    cupy = _cuda.require_cuda()
    memory = None
    with _lock:
        free = _spare.get(size)
        if free:
            memory = free.pop()
            _spare_bytes -= size
    if memory is None:
        memory = _cuda_malloc(cupy, size)
    owned = cupy.cuda.UnownedMemory(memory.ptr, size, _Lease(memory), memory.device_id)
    return cupy.cuda.MemoryPointer(owned, 0)


def _cuda_malloc(cupy, size: int):
    for attempt in (1, 2):
        try:
            with _relaxed_capture_mode():
                return cupy.cuda.Memory(size)
        except cupy.cuda.runtime.CUDARuntimeError as exc:
            if exc.status != cupy.cuda.runtime.errorMemoryAllocation:
                raise
            if attempt == 1 and release_spare(0):
                continue
            raise cupy.cuda.memory.OutOfMemoryError(size, 0, 0) from exc
    raise AssertionError("unreachable")


def spare_bytes() -> int:
    """Bytes of spare graph memory: allocations of released pools kept for later pools (also
    those cached in pools passed on whole and not yet taken)."""
    return _spare_bytes + _idle_bytes


def _take_idle(stream: int):
    """A CuPy pool of a drained private pool, for a new one whose capture runs on
    ``stream``: one with blocks cached on that stream (the newest), else the newest, once
    the blocks cached in every one have become spare memory (for _graph_malloc, on any
    stream: none stays idle behind a pool taken before it). None when there is none."""
    global _idle_bytes
    with _lock:
        idle = _idle_cupy_pools
        if not idle:
            return None
        if _idle_bytes:
            for i in range(len(idle) - 1, -1, -1):
                pool, on, cached = idle[i]
                if cached and on == stream:
                    del idle[i]
                    _idle_bytes -= cached
                    return pool
            _flush_idle()
        return idle.pop()[0]


def _flush_idle() -> None:
    """Blocks cached in pools passed on whole become spare memory (with ``_lock`` held)."""
    global _idle_bytes
    for i, (pool, _, cached) in enumerate(_idle_cupy_pools):
        if cached:
            pool.free_all_blocks()
            _idle_cupy_pools[i] = (pool, 0, 0)
    _idle_bytes = 0


def release_spare(keep: int = 0) -> int:
    """Free spare graph memory (largest first) until at most ``keep`` bytes remain; returns the
    bytes freed. Call it outside any capture (cudaFree is a synchronizing call). Blocks freed
    since into pools no graph uses are swept into spare memory first, so they count."""
    global _spare_bytes
    dropped = []
    with _lock:
        if _draining:
            _sweep_draining()
        if _idle_bytes and _spare_bytes + _idle_bytes > keep:
            _flush_idle()
        for size in sorted(_spare, reverse=True):
            free = _spare[size]
            while free and _spare_bytes > keep:
                dropped.append(free.pop())
                _spare_bytes -= size
            if not free:
                del _spare[size]
    freed = sum(memory.size for memory in dropped)
    dropped.clear()  # the Memory objects go here: cudaFree
    return freed
