"""The `accelgraph` command (typer): one short function per verb; the logic lives below it.

``main`` is the console script's entry point. It imports the command (typer, rich: most of
the start-up time) inside its own guard, so a Ctrl-C during start-up ends as a Ctrl-C later
does: one line and exit code 130, never a traceback.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run `accelgraph` with ``argv`` (default: the command line); returns the exit code."""
    try:
        run = _load()
    except KeyboardInterrupt:
        sys.stderr.write("accelgraph: interrupted\n")
        return 130  # ExitCode.INTERRUPTED, without importing anything more
    return run(argv)


def _load():
    """Import the command; ``app`` here is then the typer application (importing the module
    ``.app`` makes this package's ``app`` that module until it is set again)."""
    from .app import app
    from .app import main as run

    globals()["app"] = app
    return run


def __getattr__(name: str):
    if name == "app":  # the typer application, for tests and completion
        _load()
        return globals()["app"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["app", "main"]
