"""The `accelgraph` command (typer): one short function per verb; the logic lives below it."""

from .app import app, main

__all__ = ["app", "main"]
