"""The errors of the DOT reader: DotParseError for text it cannot read, worded with file and line."""

from __future__ import annotations

from ..model.graph_model import ModelLoadError


class DotParseError(ModelLoadError):
    """The text is not a DOT graph this module can read; the message names file and line."""

    def __init__(self, message: str):
        # One line, whatever a damaged file put into the names quoted in the message.
        super().__init__(message.replace("\r", "\\r").replace("\n", "\\n"))


class _BrokenDotError(DotParseError):
    """Damage no DOT reader gets past (unbalanced braces or quotes, several graphs): reported
    as is, without trying pydot."""
