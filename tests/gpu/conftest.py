"""GPU tier: every test here needs CuPy and a CUDA device; elsewhere they skip with the reason."""

import pytest

from accelgraph_cli.cuda import device as _cuda


def _gpu_skip_reason():
    try:
        _cuda.require_cuda()
    except Exception as exc:  # NoGPUError
        return f"GPU tier skipped: {exc}"
    return None


_REASON = _gpu_skip_reason()


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.gpu)
            if _REASON:
                item.add_marker(pytest.mark.skip(reason=_REASON))


@pytest.fixture
def cupy():
    return _cuda.require_cuda()


@pytest.fixture
def stream(cupy):
    """A fresh non-blocking stream, made current for the test."""
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        yield s
    s.synchronize()


@pytest.fixture
def no_watch(monkeypatch):
    """Capture without the execution watch, for a test of what the checksums, the flips and
    the check catch by themselves (where cupti-python is missing, they are all there is)."""
    from accelgraph_cli.cuda.cupti.watch import SwitchedOff
    from accelgraph_cli.run import protocol

    monkeypatch.setattr(protocol, "ExecutionWatch", SwitchedOff)
