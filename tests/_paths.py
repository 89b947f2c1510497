"""Paths and markers shared by the CPU tests (import as `from _paths import ...`)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
DUMPS = DATA / "dumps"
SCENARIOS = ROOT / "scenarios"


def has_gpu() -> bool:
    from accelgraph_cli.cuda.device import gpu_available

    return gpu_available()


requires_no_gpu = pytest.mark.skipif(has_gpu(), reason="checks the no-GPU behaviour; a GPU is present")
