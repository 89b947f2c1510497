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

        return run(argv)
    except KeyboardInterrupt as exc:  # during the imports, or in the instant after the run
        terminated = type(exc).__name__ == "Terminated"
        sys.stderr.write(f"accelgraph: {'terminated' if terminated else 'interrupted'}\n")
        return 143 if terminated else 130  # ExitCode's, without importing anything more
