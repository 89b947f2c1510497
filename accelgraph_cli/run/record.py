"""The record of the last capture in a directory, so `replay` and `dump` can omit SCENARIO.

A small JSON file, ``.accelgraph/last_capture.json``: the scenario's path, params, pool,
error mode and keep_graph. Graphs cannot cross processes, so the verbs capture again from it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..enums import CaptureErrorMode, PoolKind
from ..errors import AccelgraphError
from ..files import write_text_atomic

RECORD_DIR = ".accelgraph"
RECORD_FILE = "last_capture.json"


def save_record(path: str, params: dict, pool: PoolKind | str, error_mode: CaptureErrorMode | str,
                keep_graph: bool,
                directory: str = ".") -> Path:
    """Remember the last capture in ``./.accelgraph/`` so replay/dump can omit SCENARIO."""
    return write_text_atomic(Path(directory) / RECORD_DIR / RECORD_FILE, json.dumps({
        "scenario": os.path.abspath(path), "params": params, "pool": pool,
        "error_mode": error_mode, "keep_graph": keep_graph,
    }, indent=2) + "\n")


def load_record(directory: str = ".") -> dict:
    """The last capture recorded in this directory, or AccelgraphError saying to capture first."""
    target = Path(directory) / RECORD_DIR / RECORD_FILE
    try:
        record = json.loads(target.read_text())
    except FileNotFoundError:
        raise AccelgraphError(
            "no SCENARIO given and no capture recorded here: run `accelgraph capture "
            "SCENARIO` first, or name the scenario"
        ) from None
    except (OSError, ValueError) as exc:
        raise AccelgraphError(f"{target}: unreadable capture record ({exc}); capture again") from None
    if not isinstance(record, dict) or "scenario" not in record:
        raise AccelgraphError(f"{target}: not a capture record; capture again")
    return record
