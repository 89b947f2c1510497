"""The one place that imports CuPy and NVIDIA's cuda.bindings, lazily.

Nothing in accelgraph imports CuPy at module import time: `import accelgraph_cli` and
`accelgraph --help` must work on machines with no GPU. GPU code calls :func:`require_cuda`
first, which imports CuPy once and turns "no CuPy" / "no device" into one clear NoGPUError.
"""

from __future__ import annotations

import functools

from ..errors import CudaError, NoGPUError

NO_GPU_HINT = (
    "capture, replay, profile, audit, dump, smoke and diff of a scenario need a CUDA GPU and CuPy "
    "(pip install 'accelgraph[cuda12]' or 'accelgraph[cuda13]'; PyTorch scenarios "
    "'accelgraph[torch,cuda13]'); "
    "show and diff of saved dumps, saved profiles and audits, scenarios and smoke --list work "
    "without a GPU"
)


@functools.lru_cache(maxsize=1)
def require_cuda():
    """Import and return the ``cupy`` module, or raise NoGPUError saying what works without one."""
    try:
        import cupy
    except ModuleNotFoundError as exc:
        raise NoGPUError(f"CuPy is not installed: {NO_GPU_HINT}") from exc
    except Exception as exc:  # a CuPy that fails to load its CUDA libraries
        raise NoGPUError(f"CuPy is not usable ({type(exc).__name__}): {NO_GPU_HINT}") from exc
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        raise NoGPUError(f"no CUDA device is visible: {NO_GPU_HINT}") from exc
    if count < 1:
        raise NoGPUError(f"no CUDA device is visible: {NO_GPU_HINT}")
    return cupy


def gpu_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device (never raises)."""
    try:
        require_cuda()
    except NoGPUError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def bindings():
    """Return (cuda.bindings.runtime, cuda.bindings.driver), for calls CuPy does not wrap."""
    require_cuda()
    try:
        from cuda.bindings import driver, runtime
    except Exception as exc:
        raise NoGPUError(
            f"cuda.bindings is not installed ({type(exc).__name__}); install the CUDA extra: "
            "pip install 'accelgraph[cuda12]' or 'accelgraph[cuda13]'"
        ) from exc
    return runtime, driver


def check(call: str, result):
    """Unpack a cuda.bindings result tuple ``(err, *values)``; raise CudaError on failure.

    Returns None, the single value, or the tuple of values.
    """
    if isinstance(result, tuple):
        err, values = result[0], result[1:]
    else:
        err, values = result, ()
    if int(err) != 0:
        name = getattr(err, "name", str(err))
        raise CudaError(call, name)
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def device_name(device: int = 0) -> str:
    """The CUDA device's name, e.g. "NVIDIA H200"."""
    name = require_cuda().cuda.runtime.getDeviceProperties(device)["name"]
    return name.decode() if isinstance(name, bytes) else name
