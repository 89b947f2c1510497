"""The `accelgraph` command (typer): one short function per verb; the logic lives below it.

``main`` is the console script's entry point. It imports the command (typer, rich: most of
the start-up time) inside its own guard, so a Ctrl-C during start-up ends as a Ctrl-C later
does: one line and exit code 130, never a traceback. ``accelgraph_cli.cli.app`` is the
command's module (whichever import comes first); the typer application is its ``app``.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run `accelgraph` with ``argv`` (default: the command line); returns the exit code."""
    try:
        from .app import main as run
    except KeyboardInterrupt:
        sys.stderr.write("accelgraph: interrupted\n")
        return 130  # ExitCode.INTERRUPTED, without importing anything more
    return run(argv)
