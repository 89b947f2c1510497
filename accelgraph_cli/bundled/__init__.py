"""The CUDA sources and scenarios that ship with accelgraph, found wherever accelgraph runs.

The top-level ``kernels/`` and ``scenarios/`` folders of the source tree are the only copies.
Building a wheel maps them into this package (pyproject's ``package-dir``:
``accelgraph_cli.bundled.kernels = "kernels"``, likewise scenarios), so an installed
accelgraph reads them here as package data through :mod:`importlib.resources`. Run from a
source checkout (``PYTHONPATH=$PWD``, or an editable install) this package holds no copy, and
the folders are read where they are in the tree.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

#: The source checkout this package sits in, when it sits in one.
_SOURCE_TREE = Path(__file__).resolve().parents[2]


def _folder(name: str) -> Path:
    packaged = resources.files(__name__).joinpath(name)
    # A wheel installs unzipped, so the resource is a real folder: CuPy's compiler and the
    # scenario loader read files by path.
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    return _SOURCE_TREE / name


def kernels_folder() -> Path:
    """The folder holding the bundled ``.cu`` sources (``gemm.cu``, ``softmax.cu``...)."""
    return _folder("kernels")


def scenarios_folder() -> Path:
    """The folder holding the bundled scenario files (``mlp_decode.py``, ``saxpy.py``...)."""
    return _folder("scenarios")
