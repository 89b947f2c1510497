"""The record of the last capture in a directory, so `replay` and `dump` can omit SCENARIO.

A small JSON file, ``.accelgraph/last_capture.json``: the scenario's path, params, pool,
error mode and keep_graph. Graphs cannot cross processes, so the verbs capture again from it.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from ..enums import CaptureErrorMode, PoolKind
from ..errors import AccelgraphError
from ..files import check_output_folder, write_error, write_text_atomic

RECORD_DIR = ".accelgraph"
RECORD_FILE = "last_capture.json"


_RECORD_LIMIT = 1 << 20  # bytes: a record is a few hundred; more is not one of accelgraph's


def check_record_path(directory: str = ".") -> None:
    """Refuse, before any GPU work, a record that could not be written: its folder not
    writable, or a folder where the record file goes. (A link or a pipe there is replaced:
    the record is accelgraph's own file, never written through.)"""
    target = record_path(directory)
    check_output_folder(target.parent)
    if target.is_dir() and not target.is_symlink():
        raise AccelgraphError(f"{target}: a folder where accelgraph keeps the record of the last "
                              "capture; remove it")


def save_record(path: str, params: dict, pool: PoolKind | str, error_mode: CaptureErrorMode | str,
                keep_graph: bool,
                directory: str = ".") -> Path:
    """Remember the last capture in ``./.accelgraph/`` so replay/dump can omit SCENARIO.
    Whatever else is at the record's path (a link, a named pipe) is replaced, not written
    through: a pipe would wait for a reader for ever, a link write over its target."""
    target = record_path(directory)
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise write_error(target, exc) from None
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        try:
            os.unlink(target)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise write_error(target, exc) from None
    return write_text_atomic(target, json.dumps({
        "scenario": os.path.abspath(path), "params": params, "pool": pool,
        "error_mode": error_mode, "keep_graph": keep_graph,
    }, indent=2) + "\n")


def load_record(directory: str = ".", given: tuple[str, ...] = ()) -> dict:
    """The last capture recorded in this directory, or AccelgraphError saying to capture first.
    ``given``: the record's keys an option overrides ("pool", "error_mode"), not checked."""
    target = record_path(directory)
    try:
        found = os.stat(target)
        if not stat.S_ISREG(found.st_mode):  # a named pipe: read() would wait for ever
            raise AccelgraphError(f"{target}: not a regular file, so not a capture record; "
                                  "remove it and capture again")
        if found.st_size > _RECORD_LIMIT:  # (read whole, a file of gigabytes took minutes)
            raise AccelgraphError(f"{target}: {found.st_size:,} bytes, too large for a capture "
                                  "record (a few hundred bytes); capture again")
        record = json.loads(target.read_text())
    except FileNotFoundError:
        raise AccelgraphError(
            "no SCENARIO given and no capture recorded here: run `accelgraph capture "
            "SCENARIO` first (on a machine with a CUDA GPU), or name the scenario"
        ) from None
    except (OSError, ValueError) as exc:
        raise AccelgraphError(f"{target}: unreadable capture record ({exc}); capture again") from None
    except RecursionError:  # JSON nested deeper than Python's decoder goes
        raise AccelgraphError(f"{target}: unreadable capture record (nested too deeply); "
                              "capture again") from None
    if not isinstance(record, dict) or "scenario" not in record:
        raise AccelgraphError(f"{target}: not a capture record; capture again")
    problem = _wrong_type(record, given)
    if problem:
        raise AccelgraphError(f"{target}: {problem}; capture again, or name the scenario")
    return record


def _wrong_type(record: dict, given: tuple[str, ...] = ()) -> str:
    """What is wrong with a hand-edited record's values ("" when nothing is), but for the
    keys in ``given``, which an option overrides."""
    if not isinstance(record["scenario"], str) or not record["scenario"]:
        return f'"scenario" must be the scenario file\'s path, got {record["scenario"]!r}'
    params = record.get("params")
    if params is not None and not isinstance(params, dict):
        return f'"params" must be an object of parameter names and values, got {params!r}'
    for key in params or {}:
        if not key.isidentifier():  # (JSON keys are strings) "a=1" would read as a=1=...
            return f'"params" key {key!r} is not a parameter name'
    for key, kind in (("pool", PoolKind), ("error_mode", CaptureErrorMode)):
        if record.get(key) is not None and key not in given:
            try:
                kind.parse(record[key], f'"{key}"')
            except ValueError as exc:
                return str(exc)
    return ""


def record_path(directory: str = ".") -> Path:
    """Where the last capture is recorded."""
    return Path(directory) / RECORD_DIR / RECORD_FILE
