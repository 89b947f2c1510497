"""Writing files safely: atomically (never half a file), into folders checked to be writable,
under names made safe. The one copy of these helpers: every layer writes through them."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

from .errors import AccelgraphError


def safe_name(name: str) -> str:
    """A graph name made safe as a file name ("batch=64" stays readable)."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", name).strip("_") or "graph"


def ensure_folder(folder: str | os.PathLike) -> Path:
    """Create ``folder`` if needed and check it is writable; AccelgraphError otherwise."""
    path = Path(folder)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AccelgraphError(f"cannot create output folder {path}: {exc.strerror}") from None
    if not os.access(path, os.W_OK):
        raise AccelgraphError(f"output folder {path} is not writable")
    return path


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, suffix: str = ""):
    """Yield a temporary path beside ``path``; on success it is renamed onto ``path``, on any
    error it is removed. Whatever writes the file (Python, CUDA, Graphviz), a reader never
    sees half of it and a failure leaves nothing behind."""
    directory = os.path.dirname(os.path.abspath(os.fspath(path)))
    fd, tmp = tempfile.mkstemp(prefix=".accelgraph-", suffix=suffix, dir=directory)
    os.close(fd)
    try:
        yield tmp
        # mkstemp makes the file private (0600); the result gets the mode any new file would
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file and a rename."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file and a rename: never half a file."""
    path = Path(path)
    ensure_folder(path.parent if str(path.parent) else ".")
    with atomic_output(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
    return path


def _umask() -> int:
    """The process's umask (read by setting it and setting it back: there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
