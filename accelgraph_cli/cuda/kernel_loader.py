"""Loading the CUDA kernel sources in kernels/: find them, compile them once, look kernels up.

Kernels compile once per process (NVRTC through ``cupy.RawModule``; CuPy's on-disk cache
makes later processes fast). Compile and load kernels *before* capturing (a scenario's
``setup`` calls :func:`preload`): module loading is not a stream operation and is not
something to do under capture. CuPy is imported inside the functions.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any

from ..bundled import kernels_folder
from . import device as _cuda

KERNELS_DIR_ENV = "ACCELGRAPH_KERNELS"
"""Environment variable that overrides where the .cu sources are looked up (read when a
module is loaded; a kernel already looked up in this process stays as it was)."""


_KERNEL_NAME = re.compile(
    r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s+)?(\w+)\s*\(')


class KernelError(RuntimeError):
    """A kernel source is missing or does not compile; the message names the .cu file."""


def kernels_dir() -> Path:
    """The folder holding the .cu sources: $ACCELGRAPH_KERNELS, else the bundled kernels/
    (package data in an installed accelgraph, the top-level kernels/ in a source checkout)."""
    return _kernels_dir(os.environ.get(KERNELS_DIR_ENV, ""))


@functools.cache
def _kernels_dir(override: str) -> Path:
    # Cached: get_kernel runs on every launch, and resolving a path costs system calls.
    if override:
        return Path(override).expanduser().resolve()
    return kernels_folder()


def kernel_source(filename: str) -> str:
    """The CUDA C++ text of ``filename`` (e.g. ``"gemm.cu"``) from :func:`kernels_dir`."""
    return _read_source(kernels_dir(), filename)


def _read_source(folder: Path, filename: str) -> str:
    path = folder / filename
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if not path.parent.is_dir():
            chosen = (f"{KERNELS_DIR_ENV} names it" if os.environ.get(KERNELS_DIR_ENV)
                      else "the installation is incomplete")
            raise KernelError(f"{path}: no such kernel source; the folder {path.parent} does not "
                              f"exist ({chosen})") from None
        available = sorted(p.name for p in path.parent.glob("*.cu"))
        raise KernelError(
            f"{path}: no such kernel source; available in {path.parent}: "
            f"{', '.join(available) or 'none'} (set {KERNELS_DIR_ENV} to use another folder)"
        ) from None


def kernel_names(filename: str) -> list[str]:
    """The ``extern "C" __global__`` kernel names defined in ``filename``, in source order."""
    return _KERNEL_NAME.findall(kernel_source(filename))


def load_module(filename: str, name_expressions: tuple[str, ...] = (),
                options: tuple[str, ...] = ()) -> Any:
    """Compile ``kernels/<filename>`` into a ``cupy.RawModule`` and load it on the device.

    Cached per process (per source folder, file, name expressions and options): the first call
    runs NVRTC (or reads CuPy's disk cache) and loads the module; later calls are a dict
    lookup. ``name_expressions`` are C++ template instantiations to export (they need a
    ``-std=c++NN`` option, which is added when missing); ``options`` go to NVRTC.
    Raises :class:`KernelError` with the compiler log when the source does not compile.
    """
    return _load_module(kernels_dir(), filename, tuple(name_expressions), tuple(options))


@functools.cache
def _load_module(folder: Path, filename: str, name_expressions: tuple, options: tuple) -> Any:
    cupy = _cuda.require_cuda()  # no CuPy, or no device: NoGPUError, as capture says it
    from cupy.cuda.compiler import CompileException

    source = _read_source(folder, filename)
    if name_expressions and not any("-std=c++" in option for option in options):
        options = options + ("-std=c++17",)
    module = cupy.RawModule(
        code=source, options=options, name_expressions=name_expressions or None
    )
    try:
        module.compile()  # compile and load now, not lazily at the first (maybe captured) launch
    except CompileException as error:
        raise KernelError(f"{folder / filename} failed to compile:\n{error}") from error
    _MODULE_SOURCES[id(module)] = source  # (the cache above keeps every module alive)
    return module


_MODULE_SOURCES: dict[int, str] = {}  # id of a loaded module -> the source it was compiled from
_KERNELS: dict[tuple[str, str], Any] = {}
_KERNEL_SOURCES: dict[tuple[str, str], str] = {}  # what each looked-up kernel was compiled from


def get_kernel(filename: str, name: str) -> Any:
    """The kernel ``name`` from ``kernels/<filename>`` as a loaded ``cupy.RawKernel`` (cached).

    Call it as ``kernel(grid, block, args, shared_mem=0)``: it launches on the current stream.
    Scalars in ``args`` must be NumPy scalars of the C type (``numpy.float32``,
    ``numpy.int32``): a Python float would be passed as a double.
    """
    # Runs on every launch: one dict lookup, so eager timings measure the launch, not this.
    # (So $ACCELGRAPH_KERNELS is read when a kernel is first looked up, not on every launch.)
    kernel = _KERNELS.get((filename, name))
    if kernel is None:
        module = load_module(filename)
        kernel = module.get_function(name)
        # the source first: a thread that finds the kernel finds what it was compiled from
        _KERNEL_SOURCES[(filename, name)] = _MODULE_SOURCES.get(id(module), "")
        _KERNELS[(filename, name)] = kernel
    return kernel


_LAUNCHERS: dict[tuple[str, str], Any] = {}


def launcher(filename: str, name: str) -> Any:
    """The kernel ``name`` from ``kernels/<filename>``, to launch on the current stream as
    ``launcher(grid, block, args, shared_mem=0)``: a :class:`~.launch.Launcher` (cached),
    which launches with programmatic dependencies while the stream captures where the kernel
    begins with its wait (see :mod:`.launch`), and as :func:`get_kernel`'s kernel otherwise."""
    found = _LAUNCHERS.get((filename, name))
    if found is None:
        from .launch import Launcher, waits

        kernel = get_kernel(filename, name)
        # read from the source the kernel was compiled from, not from the file as it is now
        # (another $ACCELGRAPH_KERNELS, or the file edited since the kernel was looked up)
        source = _KERNEL_SOURCES.get((filename, name))
        if source is None:
            source = kernel_source(filename)
        found = _LAUNCHERS[(filename, name)] = Launcher(kernel, waits(source, name))
    return found


def preload(*filenames: str) -> None:
    """Compile, load and look up every kernel of each file, so that nothing loads under capture.

    Scenarios call this in ``setup``: e.g. ``kernels.preload("gemm.cu", "softmax.cu")``.
    """
    for filename in filenames:
        for name in kernel_names(filename):
            launcher(filename, name).prepare()
