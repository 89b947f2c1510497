"""Writing a capture's artifacts: a verbose DOT per graph and a JSON summary, atomically."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import AccelgraphError
from ..files import ensure_folder, safe_name, write_text_atomic


def default_folder(scenario_path) -> Path:
    """Where `capture` writes a scenario's artifacts without --out: .accelgraph/<file stem>/."""
    return Path(".accelgraph") / Path(str(scenario_path)).stem


def write_capture(result, out: str | None) -> Path:
    """Write ``<graph>.dot`` (verbose) for each graph and ``capture.json`` into ``out``.

    Default folder: ``.accelgraph/<scenario stem>/``. Returns the folder.
    """
    folder = ensure_folder(out or default_folder(result.scenario.path))
    summary = result.summary()
    for entry, captured in zip(summary["graphs"], result.graphs):
        dot = folder / f"{safe_name(captured.name)}.dot"
        try:
            captured.graph.debug_dump(dot, flags="verbose")
        except OSError as exc:
            raise AccelgraphError(f"cannot write {dot}: {exc.strerror}") from None
        entry["dot"] = dot.name
    write_text_atomic(folder / "capture.json", json.dumps(summary, indent=2) + "\n")
    return folder
