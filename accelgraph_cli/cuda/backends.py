"""The two capture backends, behind one interface: CuPy streams and PyTorch's graph API.

The run protocol (run/protocol.py) is written once against :class:`Backend`; what differs
between a CuPy scenario and a torch one is only which stream the scenario's library launches on,
which graph object captures it, where captured allocations come from, and how two device arrays
are compared. accelgraph's own device utilities (CUDA events for timing, the capture guard's
checksum kernel) run through CuPy on the same raw stream in both cases: a torch stream is
wrapped as a ``cupy.cuda.ExternalStream``.

torch is imported only by the torch backend, when a torch scenario is run.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..enums import Backend as BackendName
from ..enums import PoolKind
from ..errors import AccelgraphError
from . import device as _cuda
from . import pools


@dataclass
class Streams:
    """One CUDA stream as each library sees it."""

    handle: int  # the cudaStream_t
    cupy: Any  # a CuPy stream on it: events, accelgraph's kernels, synchronize()
    native: Any  # what the scenario's library makes current (the CuPy stream, or a torch one)


@dataclass
class Difference:
    """How two outputs differ: ``bad`` elements of ``total`` (largest |a - b|), or ``detail``
    when they cannot be compared element by element (shape or dtype)."""

    bad: int
    total: int
    largest: float
    detail: str = ""
    # bitwise only: the elements that differ all hold equal values in other bits (+0 and -0,
    # NaNs of other payloads)
    bits_only: bool = False


class Backend:
    """What the run protocol needs from a capture backend."""

    name: BackendName

    def new_streams(self) -> Streams:
        """A fresh non-blocking stream to warm up, capture and replay on."""
        raise NotImplementedError

    @contextlib.contextmanager
    def use(self, streams: Streams) -> Iterator[None]:
        """Make ``streams`` current for the scenario's library and for accelgraph's CuPy work."""
        raise NotImplementedError
        yield

    def new_pool(self, kind: PoolKind) -> tuple[int, int]:
        """A pool token for graphs of this backend."""
        raise NotImplementedError

    def new_graph(self, *, keep_graph: bool, pool, capture_error_mode):
        """A graph object with the torch.accelerator.Graph API."""
        raise NotImplementedError

    def pools_bytes(self, tokens: list, kind: PoolKind) -> int:
        """Bytes all the given pools hold, each counted once."""
        raise NotImplementedError

    def current_stream_handles(self) -> list[int]:
        """The streams work would be launched on now (for the off-stream line tracer)."""
        raise NotImplementedError

    def difference(self, want: Any, got: Any, rtol: float, atol: float) -> Difference:
        """Compare ``got`` with ``want``: bitwise (NaN equals NaN) when rtol = atol = 0, else
        |got - want| <= atol + rtol * |want| element by element."""
        raise NotImplementedError

    def copy(self, value: Any) -> Any:
        """A copy of an output, in memory of its own (queued on the current stream)."""
        raise NotImplementedError

    def fill_complement(self, target: Any, reference: Any) -> bool:
        """Fill ``target`` with the bitwise complement of ``reference`` (see snapshot)."""
        raise NotImplementedError

    def is_complement(self, got: Any, want: Any) -> bool:
        """Whether ``got`` still holds exactly the complement of ``want``."""
        raise NotImplementedError

    # Random number generators that graphs draw from (torch's CUDA generators): their seed
    # and offset are host state, which the check sets back to where eager started before
    # the replays, as it restores the state's arrays.
    has_generators = False

    def is_generator(self, obj: Any) -> bool:
        """Whether ``obj`` is a device random generator a graph must register."""
        return False

    def register_generators(self, graph: Any, generators: list[tuple[str, Any]]) -> None:
        """Register the state's own generators (path, generator) with ``graph``."""

    def rng_state(self, generators: list[tuple[str, Any]]) -> Any:
        """Where the default generator and the state's own stand now."""
        return None

    def set_rng_state(self, saved: Any, generators: list[tuple[str, Any]]) -> None:
        """Put the default generator and another state's generators (same paths) back where
        :meth:`rng_state` found them."""


def _same_bits(cupy, want, got):
    """Element by element: whether the two arrays hold the same bits, as "bitwise" promises
    (so +0 and -0 differ, and NaNs differ unless their payloads agree). Same shape and dtype."""
    from .snapshot import _unsigned_words

    size = want.dtype.itemsize
    want, got = cupy.ascontiguousarray(want), cupy.ascontiguousarray(got)
    words = _unsigned_words(cupy, size)
    if words is not None:
        return want.view(words) == got.view(words)
    shape = want.shape + (size // 8,)  # complex128: two words an element
    return (want.view(cupy.uint64).reshape(shape) == got.view(cupy.uint64).reshape(shape)).all(
        axis=-1)


class CupyBackend(Backend):
    """Scenarios written with CuPy (and accelgraph_cli.kernels): accelgraph's own Graph."""

    name = BackendName.CUPY

    def new_streams(self) -> Streams:
        cupy = _cuda.require_cuda()
        stream = cupy.cuda.Stream(non_blocking=True)
        return Streams(stream.ptr, stream, stream)

    @contextlib.contextmanager
    def use(self, streams: Streams) -> Iterator[None]:
        with streams.cupy:
            yield

    def new_pool(self, kind: PoolKind) -> tuple[int, int]:
        return pools.new_pool(PoolKind.ASYNC if kind is PoolKind.ASYNC else PoolKind.PRIVATE)

    def new_graph(self, *, keep_graph: bool, pool, capture_error_mode):
        from .graph import Graph

        return Graph(keep_graph=keep_graph, pool=pool, capture_error_mode=capture_error_mode)

    def pools_bytes(self, tokens: list, kind: PoolKind) -> int:
        if kind is PoolKind.ASYNC:
            return pools.graph_memory_reserved()
        return sum(pools.get_pool(t).bytes_held() for t in tokens)

    def current_stream_handles(self) -> list[int]:
        import sys

        handles = [_cuda.require_cuda().cuda.get_current_stream().ptr]
        torch = sys.modules.get("torch")  # a CuPy scenario that also calls torch
        if torch is not None and torch.cuda.is_initialized():
            handles.append(torch.cuda.current_stream().cuda_stream)
        return handles

    def difference(self, want: Any, got: Any, rtol: float, atol: float) -> Difference:
        cupy = _cuda.require_cuda()
        want, got = cupy.asarray(want), cupy.asarray(got)
        if want.shape != got.shape or want.dtype != got.dtype:
            return Difference(-1, int(want.size), 0.0,
                              f"shape/dtype {got.shape}/{got.dtype} != eager {want.shape}/{want.dtype}")
        if (rtol == 0 and atol == 0) or want.dtype.kind in "biu":
            # integers and booleans exactly, whatever the tolerance: isclose goes through
            # float64, where int64 values 1 apart near 2**62 are equal
            same = _same_bits(cupy, want, got)
        else:
            same = cupy.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        bad = int((~same).sum())
        largest, bits_only = 0.0, False
        if bad:
            largest = float("nan")
            if want.dtype.kind in "fciu":
                wide = cupy.complex128 if want.dtype.kind == "c" else cupy.float64  # |a - b|
                diff = cupy.abs(got.astype(wide) - want.astype(wide))
                largest = float(cupy.where(cupy.isnan(diff), cupy.inf, diff).max())
            if rtol == 0 and atol == 0 and want.dtype.kind in "fc":
                equal = (want == got) | (cupy.isnan(want) & cupy.isnan(got))
                bits_only = bool(equal.all())
        return Difference(bad, int(want.size), largest, bits_only=bits_only)

    def copy(self, value: Any) -> Any:
        cupy = _cuda.require_cuda()
        return cupy.array(cupy.asarray(value), copy=True)

    def fill_complement(self, target: Any, reference: Any) -> bool:
        from .snapshot import fill_complement

        return fill_complement(target, reference)

    def is_complement(self, got: Any, want: Any) -> bool:
        from .snapshot import is_complement

        return is_complement(got, want)


class TorchBackend(Backend):
    """Scenarios written in PyTorch: torch's own graph object (TorchGraph), torch's pools."""

    name = BackendName.TORCH

    def __init__(self) -> None:
        try:
            import torch
        except Exception as exc:
            raise AccelgraphError(
                f"this scenario is written in PyTorch, and torch is not usable here "
                f"({type(exc).__name__}); install it (pip install 'accelgraph[torch]')") from None
        if not torch.cuda.is_available():
            raise AccelgraphError("this scenario is written in PyTorch, and torch sees no CUDA "
                                  "device; install a CUDA build of torch")
        self.torch = torch

    def new_streams(self) -> Streams:
        cupy = _cuda.require_cuda()
        stream = self.torch.cuda.Stream()
        return Streams(stream.cuda_stream, _external(cupy, stream), stream)

    @contextlib.contextmanager
    def use(self, streams: Streams) -> Iterator[None]:
        with self.torch.cuda.stream(streams.native), streams.cupy:
            yield

    def new_pool(self, kind: PoolKind) -> tuple[int, int]:
        from .torch_graph import new_torch_pool

        return new_torch_pool()

    def new_graph(self, *, keep_graph: bool, pool, capture_error_mode):
        from .torch_graph import TorchGraph

        return TorchGraph(keep_graph=keep_graph, pool=pool, capture_error_mode=capture_error_mode)

    def pools_bytes(self, tokens: list, kind: PoolKind) -> int:
        from .torch_graph import torch_pool_bytes

        return sum(torch_pool_bytes(t) for t in tokens)

    def current_stream_handles(self) -> list[int]:
        return [self.torch.cuda.current_stream().cuda_stream,
                _cuda.require_cuda().cuda.get_current_stream().ptr]

    def difference(self, want: Any, got: Any, rtol: float, atol: float) -> Difference:
        torch = self.torch
        want = torch.as_tensor(want).detach()  # compared as values: no autograd
        got = torch.as_tensor(got, device=want.device).detach()
        if want.is_nested or got.is_nested:
            return self._nested_difference(want, got, rtol, atol)
        if want.layout is not torch.strided or got.layout is not torch.strided:
            return self._sparse_difference(want, got, rtol, atol)
        want, got = want.resolve_conj(), got.resolve_conj()  # a conjugate view: its values
        if want.shape != got.shape or want.dtype != got.dtype:
            return Difference(-1, int(want.numel()), 0.0,
                              f"shape/dtype {tuple(got.shape)}/{got.dtype} != eager "
                              f"{tuple(want.shape)}/{want.dtype}")
        if (rtol == 0 and atol == 0) or not (want.is_floating_point() or want.is_complex()):
            same = self._same_bits(want, got)  # integers and booleans exactly, as CuPy's
        else:
            same = torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        bad = int((~same).sum())
        largest, bits_only = 0.0, False
        if bad:
            largest = float("nan")
            if want.dtype != torch.bool:
                wide = torch.complex128 if want.is_complex() else torch.float64  # |a - b|
                diff = (got.to(wide) - want.to(wide)).abs()
                largest = float(torch.where(diff.isnan(), torch.inf, diff).max())
            if rtol == 0 and atol == 0 and (want.is_floating_point() or want.is_complex()):
                equal = (want == got) | (want.isnan() & got.isnan())
                bits_only = bool(equal.all())
        return Difference(bad, int(want.numel()), largest, bits_only=bits_only)

    def _sparse_difference(self, want: Any, got: Any, rtol: float, atol: float) -> Difference:
        """Two sparse tensors of one layout, part by part: indices exactly, then values (a
        densified copy of a large one would not fit)."""
        from ..run.statewalk import tensor_parts

        if want.layout is not got.layout or want.shape != got.shape:
            return Difference(-1, int(want.numel()), 0.0,
                              f"layout/shape {got.layout}/{tuple(got.shape)} != eager "
                              f"{want.layout}/{tuple(want.shape)}")
        if want.layout is self.torch.sparse_coo:  # duplicates summed, indices in order
            want, got = want.coalesce(), got.coalesce()
        found = Difference(0, 0, 0.0)
        for (name, w), (_, g) in zip(tensor_parts(want), tensor_parts(got)):
            exact = not (w.is_floating_point() or w.is_complex())
            found = self.difference(w, g, 0.0 if exact else rtol, 0.0 if exact else atol)
            if found.detail or (found.bad and exact):
                detail = found.detail or f"{found.bad} of {found.total} differ"
                return Difference(-1, found.total, 0.0, f"{name}: {detail}")
        return found  # the values'

    def _nested_difference(self, want: Any, got: Any, rtol: float, atol: float) -> Difference:
        """Two nested tensors, entry by entry: a jagged one's ragged size is tied to its
        offsets tensor, so two states built alike give shapes that never compare equal."""
        if not (want.is_nested and got.is_nested):
            return Difference(-1, 0, 0.0, f"nested {got.is_nested} != eager {want.is_nested}")
        wants, gots = want.unbind(), got.unbind()
        if len(wants) != len(gots):
            return Difference(-1, 0, 0.0, f"{len(gots)} entries != eager {len(wants)}")
        bad = total = 0
        largest, bits_only = 0.0, True
        for index, (w, g) in enumerate(zip(wants, gots)):
            found = self.difference(w, g, rtol, atol)
            if found.detail:
                return Difference(-1, total + found.total, 0.0,
                                  f"entry {index}: {found.detail}")
            bad, total = bad + found.bad, total + found.total
            if found.bad:
                # NaN (booleans: no distance) stays; max() keeps a NaN it is given first
                largest = found.largest if math.isnan(found.largest) else max(largest,
                                                                              found.largest)
                bits_only = bits_only and found.bits_only
        return Difference(bad, total, largest, bits_only=bool(bad) and bits_only)

    def _same_bits(self, want, got):
        """Element by element: whether the two hold the same bits (see _same_bits)."""
        torch = self.torch
        if want.dtype == torch.bool:
            return want == got
        pairs = want.is_complex()
        if pairs:  # real and imaginary parts, each compared as a word
            want, got = torch.view_as_real(want), torch.view_as_real(got)
        words = self._words(want)
        same = want.contiguous().view(words) == got.contiguous().view(words)
        return same.all(dim=-1) if pairs else same

    def _words(self, tensor):
        from .snapshot import torch_words

        return torch_words(self.torch, tensor.element_size())

    def copy(self, value: Any) -> Any:
        value = self.torch.as_tensor(value).detach()  # values only: no autograd graph kept
        if value.is_nested:  # a jagged clone shares its offsets and lengths: all copied
            torch = self.torch
            if value.layout is torch.jagged:
                lengths = value.lengths()
                return torch.nested.nested_tensor_from_jagged(
                    value.values().clone(), value.offsets().clone(),
                    lengths=lengths.clone() if lengths is not None else None)
            with warnings.catch_warnings():  # torch's note that this layout is a prototype
                warnings.simplefilter("ignore", UserWarning)
                return torch.nested.nested_tensor(list(value.unbind()))
        return value.clone()

    has_generators = True

    def is_generator(self, obj: Any) -> bool:
        return isinstance(obj, self.torch.Generator) and obj.device.type == "cuda"

    def register_generators(self, graph: Any, generators: list[tuple[str, Any]]) -> None:
        for _, generator in generators:
            graph.register_generator(generator)

    def rng_state(self, generators: list[tuple[str, Any]]) -> Any:
        return (self.torch.cuda.get_rng_state(),
                {path: generator.get_state() for path, generator in generators})

    def set_rng_state(self, saved: Any, generators: list[tuple[str, Any]]) -> None:
        default, own = saved
        self.torch.cuda.set_rng_state(default)
        for path, generator in generators:
            if path in own:
                generator.set_state(own[path])

    def fill_complement(self, target: Any, reference: Any) -> bool:
        if not isinstance(target, self.torch.Tensor):
            return False  # a NumPy output of a torch scenario: not filled
        # in inference mode: torch refuses an in-place write to an inference tensor outside
        # it, and allows one to a leaf that requires grad under it (no autograd applies)
        with self.torch.inference_mode():
            return self._fill_complement(target, reference)

    def _fill_complement(self, target: Any, reference: Any) -> bool:
        pairs = self._value_pairs(target, reference)
        if pairs is not None:  # sparse or nested: its values, part by part
            return bool(pairs) and all([self._fill_complement(t, r) for t, r in pairs])
        if target.shape != reference.shape or target.dtype != reference.dtype:
            return False
        if not self._plain(target) or not self._plain(reference):
            return False
        if target.is_complex():  # its real and imaginary parts, each a word
            target, reference = self._real_parts(target, reference)
        from .snapshot import one_of_each_broadcast

        target, reference = one_of_each_broadcast(target, reference)
        if target.dtype == self.torch.bool:
            target.copy_(reference.logical_not())
            return True
        words = self._words(target)
        if words is None:
            return False
        target.view(words).copy_(reference.view(words).bitwise_not())
        return True

    def is_complement(self, got: Any, want: Any) -> bool:
        if not isinstance(got, self.torch.Tensor):
            return False
        pairs = self._value_pairs(got, want)
        if pairs is not None:
            return bool(pairs) and all(self.is_complement(g, w) for g, w in pairs)
        if got.shape != want.shape or got.dtype != want.dtype:
            return False
        if not self._plain(got) or not self._plain(want):
            return False
        if want.dtype == self.torch.bool:
            return bool((got == want.logical_not()).all())
        if want.is_complex():  # as the fill wrote it
            got, want = self._real_parts(got, want)
        words = self._words(want)
        if words is None:
            return False
        return bool((got.view(words) == want.view(words).bitwise_not()).all())

    def _real_parts(self, memory: Any, values: Any) -> tuple[Any, Any]:
        """A complex tensor and the values it is filled with or compared to, each as its real
        and imaginary parts (view_as_real): a conjugate view through its plain view (its
        memory), the values conjugated to match."""
        if memory.is_conj():
            memory, values = memory.conj(), values.conj()
        return (self.torch.view_as_real(memory.resolve_conj()),
                self.torch.view_as_real(values.resolve_conj()))

    def _value_pairs(self, a: Any, b: Any) -> list | None:
        """The dense parts that hold two sparse or two nested tensors' values, paired (a
        nested one's entries; a sparse one's values): None where both are plain, [] where
        they pair up no parts (other layouts, entry counts)."""
        from ..run.statewalk import value_parts

        if self._plain(a) and self._plain(b):
            return None
        if a.layout is not b.layout and not (a.is_nested and b.is_nested):
            return []
        mine, theirs = value_parts(a), value_parts(b)
        return list(zip(mine, theirs)) if len(mine) == len(theirs) else []

    def _plain(self, tensor) -> bool:
        """A strided, not nested tensor: elements in one block of memory."""
        return tensor.layout is self.torch.strided and not tensor.is_nested


def _external(cupy, torch_stream):
    """The torch stream as a CuPy stream (same cudaStream_t), for events and accelgraph's kernels."""
    from_external = getattr(cupy.cuda.Stream, "from_external", None)
    if from_external is not None:
        try:
            return from_external(torch_stream)
        except Exception:  # a torch without the CUDA stream protocol: wrap the handle
            pass
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return cupy.cuda.ExternalStream(torch_stream.cuda_stream)


def backend_for(name: BackendName | str) -> Backend:
    """The backend a scenario's BACKEND (declared or detected) names."""
    name = BackendName.parse(name, "BACKEND")
    return TorchBackend() if name is BackendName.TORCH else CupyBackend()
