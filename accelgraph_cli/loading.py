"""Reading a graph file for show/diff: .dot, .json, and either gzipped (.gz)."""

from __future__ import annotations

import gzip
import os

from .model import GraphModel, ModelLoadError


def load_graph_file(path: str | os.PathLike) -> GraphModel:
    """A GraphModel from a CUDA DOT dump or an accelgraph JSON model, gzipped or not.

    Raises ModelLoadError (exit code 2) with one line naming the file.
    """
    from .dotparse import load_model, load_model_bytes

    name = os.fspath(path)
    if not name.endswith(".gz"):
        return load_model(name)
    try:
        with gzip.open(name, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise ModelLoadError(f"{name}: no such file") from None
    except (OSError, EOFError) as exc:
        raise ModelLoadError(f"{name}: not a readable gzip file ({exc})") from None
    return load_model_bytes(data, name)
