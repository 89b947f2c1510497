"""Small text formatters every renderer shares."""

from __future__ import annotations

import re

#: Control characters, but tab and newline: ESC, BEL, CR, DEL and the C1 range. Names and
#: labels from a dump may hold them (a file from someone else); the terminal must not act on
#: them, and the consoles drop them as text goes out (cli.app._PrintableConsole).
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` on one line, without control characters: what the consoles print of it (a
    tab or a line break as a space), for layouts that count characters themselves (the box
    drawing) and must count the same."""
    return CONTROL.sub("", text).replace("\t", " ").replace("\n", " ")


def format_bytes(count: int) -> str:
    """1536 -> '1.5 KiB'; exact bytes below 1 KiB."""
    if count < 1024:
        return f"{count} B"
    value = float(count)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}"
    return f"{count} B"  # unreachable
