"""Writing a capture's artifacts: a verbose DOT per graph and a JSON summary, atomically."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from ..errors import AccelgraphError
from ..files import (
    check_output_file,
    distinct_names,
    ensure_folder,
    is_special_file,
    mode_of,
    remove_folders,
    safe_name,
    write_bytes_atomic,
    write_error,
    write_text_atomic,
)


def default_folder(scenario_path) -> Path:
    """Where `capture` writes a scenario's artifacts without --out: .accelgraph/<file stem>/."""
    return Path(".accelgraph") / Path(str(scenario_path)).stem


def write_capture(result, out: str | None) -> Path:
    """Write ``<graph>.dot`` (verbose) for each graph and ``capture.json`` into ``out``.

    Default folder: ``.accelgraph/<scenario stem>/``. Returns the folder. Every file is
    written into a temporary folder inside it first and moved into place only once all are
    written: a write that fails (a full disk) leaves the folder as it was, and no folder this
    call made. Two graphs whose names make one file name get one each (``batch_64.dot``,
    ``batch_64-2.dot``); capture.json names each graph's file.
    """
    folder = Path(out or default_folder(result.scenario.path))
    created: list[str] = []
    ensure_folder(folder, created)
    summary = result.summary()
    names = dot_names([captured.name for captured in result.graphs])
    done = False
    staging = None
    try:
        try:
            staging = Path(tempfile.mkdtemp(prefix=".accelgraph-", dir=folder))
        except OSError as exc:
            raise write_error(folder, exc) from None
        for entry, captured, name in zip(summary["graphs"], result.graphs, names):
            with _named_as(staging, folder):
                try:
                    captured.graph.debug_dump(staging / name, flags="verbose")
                except OSError as exc:
                    raise AccelgraphError(f"cannot write {folder / name}: {exc.strerror}") from None
            entry["dot"] = name
        with _named_as(staging, folder):
            write_text_atomic(staging / "capture.json", json.dumps(summary, indent=2) + "\n")
        final = [*names, "capture.json"]
        for name in final:  # what is in the way is found before anything is moved
            if (folder / name).is_dir() and not (folder / name).is_symlink():
                raise AccelgraphError(f"cannot write {folder / name}: it is a folder")
            # (a link to a folder that does not exist, a socket: as every output is checked)
            check_output_file(folder / name)
        for name in final:
            _move(staging / name, folder / name)
        done = True
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        if not done:
            remove_folders(created)
    return folder


def _move(staged: Path, target: Path) -> None:
    """Put a written file in its place: renamed there, with the mode of the file it replaces;
    where the place is a symbolic link, a device or a named pipe, written as every output is
    (the link's target replaced, a device or pipe written into: see files.atomic_output)."""
    try:
        if target.is_symlink() or is_special_file(target):
            write_bytes_atomic(target, staged.read_bytes())
            return
        os.chmod(staged, mode_of(str(target)))
        os.replace(staged, target)
    except OSError as exc:
        raise write_error(target, exc) from None


@contextlib.contextmanager
def _named_as(staging: Path, folder: Path):
    """An error writing into the temporary folder names the file where it was to go (the
    same error: its kind sets the exit code)."""
    try:
        yield
    except AccelgraphError as exc:
        text = str(exc)
        if str(staging) in text:
            exc.args = (text.replace(str(staging), str(folder)), *exc.args[1:])
        raise


def dot_names(graph_names: list[str]) -> list[str]:
    """The file each graph's DOT is written to: its name made safe (:func:`safe_name`), and
    where that file name (letter case aside: some file systems ignore it) is taken already,
    ``-2``, ``-3``... after it."""
    return [f"{name}.dot" for name in distinct_names([safe_name(graph) for graph in graph_names])]
