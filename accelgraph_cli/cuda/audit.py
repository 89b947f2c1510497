"""The arguments capture froze into each kernel node of a graph, read back from the graph.

A graph replays each kernel with the argument bytes its launch had while capturing: a value
the host computed then (a step counter, a position, a scale) or an address it passed (a
buffer the step picked) is fixed from then on. This module reads those bytes back with the
driver API: ``cuGraphKernelNodeGetParams`` for the node's argument array (or its packed
``extra`` buffer), ``cuFuncGetParamInfo`` (``cuKernelGetParamInfo`` for a library kernel;
CUDA 12.4 and up) for where each argument lies and its size. Every pointer-sized word of an
argument that is a device address is also looked up (``cuMemGetAddressRange``): the
allocation it points into. ``model/audit.py`` compares each later step's arguments with
the first step's.

:class:`Substitution` serves the audit's effect test: it gives kernel nodes of an
executable graph other argument bytes (``cuGraphExecKernelNodeSetParams``), the later
steps' kernels some of the first step's, and puts each node's own back.
"""

from __future__ import annotations

import ctypes

from . import device as _cuda
from .nodes import graph_nodes, kernel_name, memcpy_bytes, memset_bytes, node_kind_name

# CUDA's parameter space holds at most 32,764 bytes: a kernel has fewer arguments than this.
_MAX_ARGUMENTS = 32_768
# cuLaunchKernel's ``extra`` keys
_BUFFER_END, _BUFFER_POINTER, _BUFFER_SIZE = 0, 1, 2
_WORD = 8  # a device address's size, and the alignment pointers keep in the argument buffer
# user-space addresses on x86-64 and aarch64 are below 2**48: a word above that, or in the
# first page, is a value, not an address, and is not looked up
_ADDRESS_MIN, _ADDRESS_MAX = 4096, 1 << 48


class ArgumentsUnreadable(Exception):
    """A node's arguments cannot be read (the message says why)."""


class LayoutUnknown(ArgumentsUnreadable):
    """Where a kernel's arguments lie cannot be asked: a driver or bindings older than
    CUDA 12.4, which added the query."""


def graph_arguments(graph_handle: int, node_id) -> tuple[list[dict], dict[int, tuple[int, int]]]:
    """Every top-level node of a cudaGraph_t in CUDA's order, as ``{"id", "kind"}``: kernels
    with ``"name"``, ``"grid"``, ``"block"`` and ``"args"`` (each ``{"offset", "size",
    "hex"}``), copies and memsets with ``"args"`` and their ``"labels"`` (src, dst, bytes;
    dst, value, bytes); and the allocation ``(start, size)`` behind each device address
    found in an argument's aligned words. ``node_id(position)`` names a node."""
    runtime, driver = _cuda.bindings()
    nodes = []
    ranges: dict[int, tuple[int, int] | None] = {}
    for position, handle in enumerate(graph_nodes(graph_handle)):
        kind = node_kind_name(_cuda.check("cudaGraphNodeGetType",
                                          runtime.cudaGraphNodeGetType(handle)))
        node = {"id": node_id(position), "kind": kind}
        read = _READERS.get(kind)
        if read is not None:
            node.update(read(runtime, driver, handle))
            for arg in node["args"]:
                for word in _words(arg):
                    if _ADDRESS_MIN <= word < _ADDRESS_MAX and word not in ranges:
                        ranges[word] = _allocation(driver, word)
        nodes.append(node)
    return nodes, {word: found for word, found in ranges.items() if found is not None}


def _kernel(runtime, driver, handle) -> dict:
    params = _cuda.check("cuGraphKernelNodeGetParams",
                         driver.cuGraphKernelNodeGetParams(driver.CUgraphNode(int(handle))))
    layout = _layout(driver, params)
    values = _argument_bytes(params, layout)
    return {
        "name": kernel_name(driver, params),
        "grid": [int(params.gridDimX), int(params.gridDimY), int(params.gridDimZ)],
        "block": [int(params.blockDimX), int(params.blockDimY), int(params.blockDimZ)],
        "shared_mem": int(params.sharedMemBytes),
        "args": [{"offset": offset, "size": size, "hex": value.hex()}
                 for (offset, size), value in zip(layout, values)],
    }


def _memcpy(runtime, driver, handle) -> dict:
    """A copy node's source and destination addresses and its size, as three 8-byte
    arguments (an address a step picks is frozen in a copy as in a kernel)."""
    p = _cuda.check("cudaGraphMemcpyNodeGetParams", runtime.cudaGraphMemcpyNodeGetParams(handle))
    return _named_values(("src", _address(p.srcPtr, p.srcPos)),
                         ("dst", _address(p.dstPtr, p.dstPos)), ("bytes", memcpy_bytes(p)))


def _memset(runtime, driver, handle) -> dict:
    """A memset node's destination, value and size, as three 8-byte arguments."""
    p = _cuda.check("cudaGraphMemsetNodeGetParams", runtime.cudaGraphMemsetNodeGetParams(handle))
    return _named_values(("dst", int(p.dst)), ("value", int(p.value)), ("bytes", memset_bytes(p)))


def _address(pitched, position) -> int:
    """The first byte a copy reads or writes: a pitched pointer moved to its position."""
    pitch = int(pitched.pitch)
    return (int(pitched.ptr) + int(position.x) + int(position.y) * pitch
            + int(position.z) * pitch * int(pitched.ysize))


def _named_values(*pairs: tuple[str, int]) -> dict:
    return {"labels": [label for label, _value in pairs],
            "args": [{"offset": _WORD * i, "size": _WORD,
                      "hex": (value % (1 << 64)).to_bytes(_WORD, "little").hex()}
                     for i, (_label, value) in enumerate(pairs)]}


def _layout(driver, params) -> list[tuple[int, int]]:
    """(offset, size) of each argument, in order."""
    if int(params.func):
        call, target = "cuFuncGetParamInfo", params.func
    else:
        call, target = "cuKernelGetParamInfo", params.kern
    query = getattr(driver, call, None)
    if query is None:
        raise LayoutUnknown(f"these cuda.bindings have no {call}")
    layout = []
    for index in range(_MAX_ARGUMENTS):
        err, offset, size = query(target, index)
        if int(err) != 0:
            # past the last argument: CUDA_ERROR_INVALID_VALUE; anything else (a driver
            # without the query) leaves the layout unknown
            if getattr(err, "name", "") != "CUDA_ERROR_INVALID_VALUE":
                raise LayoutUnknown(f"{call}: {getattr(err, 'name', err)}")
            break
        layout.append((int(offset), int(size)))
    return layout


def _argument_bytes(params, layout: list[tuple[int, int]]) -> list[bytes]:
    """Each argument's bytes, from the node's argument array or its packed buffer."""
    if not layout:
        return []
    base = int(params.kernelParams)
    if base:
        slots = (ctypes.c_void_p * len(layout)).from_address(base)
        if not all(slots):
            raise ArgumentsUnreadable("the node's argument array has an empty slot")
        return [ctypes.string_at(slots[i], size) for i, (_offset, size) in enumerate(layout)]
    extra = int(params.extra)
    if not extra:
        raise ArgumentsUnreadable("the node has neither an argument array nor a packed buffer")
    buffer, length = 0, 0
    pairs = ctypes.cast(extra, ctypes.POINTER(ctypes.c_void_p))
    for i in range(0, 64, 2):
        key = pairs[i] or 0
        if key == _BUFFER_END:
            break
        if key == _BUFFER_POINTER:
            buffer = pairs[i + 1] or 0
        elif key == _BUFFER_SIZE and pairs[i + 1]:
            length = ctypes.c_size_t.from_address(pairs[i + 1]).value
    end = max(offset + size for offset, size in layout)
    if not buffer or length < end:
        raise ArgumentsUnreadable("the node's packed argument buffer is shorter than its "
                                  "arguments")
    packed = ctypes.string_at(buffer, end)
    return [packed[offset:offset + size] for offset, size in layout]


def _words(arg: dict) -> list[int]:
    """The argument's 8-byte words at 8-byte-aligned offsets of the parameter space."""
    raw = bytes.fromhex(arg["hex"])
    first = -arg["offset"] % _WORD
    return [int.from_bytes(raw[k:k + _WORD], "little")
            for k in range(first, len(raw) - _WORD + 1, _WORD)]


def _allocation(driver, address: int) -> tuple[int, int] | None:
    """(start, size) of the device allocation holding ``address``, or None if none does."""
    err, base, size = driver.cuMemGetAddressRange(driver.CUdeviceptr(address))
    return (int(base), int(size)) if int(err) == 0 else None


_READERS = {"kernel": _kernel, "memcpy": _memcpy, "memset": _memset}


class Substitution:
    """Kernel nodes of the executable graph ``exec_handle`` (instantiated from
    ``graph_handle``) run with other argument bytes, until :meth:`undo` gives them their own."""

    def __init__(self, graph_handle: int, exec_handle: int) -> None:
        if not exec_handle:
            raise ArgumentsUnreadable("the graph has no executable graph to change")
        _runtime, self._driver = _cuda.bindings()
        self._nodes = graph_nodes(graph_handle)
        self._exec = self._driver.CUgraphExec(int(exec_handle))
        self._own: dict[int, object] = {}  # position -> the node's own parameters

    def _params(self, position: int):
        return _cuda.check("cuGraphKernelNodeGetParams", self._driver.cuGraphKernelNodeGetParams(
            self._driver.CUgraphNode(int(self._nodes[position]))))

    def _set(self, position: int, params) -> None:
        _cuda.check("cuGraphExecKernelNodeSetParams", self._driver.cuGraphExecKernelNodeSetParams(
            self._exec, self._driver.CUgraphNode(int(self._nodes[position])), params))

    def give(self, position: int, args: list[bytes]) -> None:
        """The kernel node at ``position`` runs with ``args`` (each argument's bytes, in
        order, as its layout has them) from the next launch on; its function and launch
        shape stay its own."""
        if position not in self._own:
            self._own[position] = self._params(position)
        params = self._params(position)
        # the driver copies the bytes in the call: the buffers need live only until then
        buffers = [ctypes.create_string_buffer(raw, max(1, len(raw))) for raw in args]
        slots = (ctypes.c_void_p * max(1, len(buffers)))(
            *(ctypes.addressof(b) for b in buffers))
        params.kernelParams = ctypes.addressof(slots)
        params.extra = 0
        self._set(position, params)

    def undo(self) -> None:
        """Every node given other bytes gets its own back; a node that cannot (whatever
        the failure: a CUDA error, or the bindings refusing the call) is kept for the next
        call, and the first failure raised once every other node is back."""
        failed = None
        for position, params in list(self._own.items()):
            try:
                self._set(position, params)
            except Exception as exc:  # noqa: BLE001 - the other nodes are put back first
                failed = failed or exc
            else:
                del self._own[position]
        if failed is not None:
            raise failed
