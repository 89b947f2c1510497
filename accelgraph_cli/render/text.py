"""Small text formatters every renderer shares."""

from __future__ import annotations

import re

#: Control characters, but tab and newline: ESC, BEL, CR, DEL and the C1 range, and the
#: bidirectional controls (U+061C, U+200E/F, U+202A-E, U+2066-9), which would show the rest
#: of a line in another order than it has (a kernel named to read as another). Names and
#: labels from a dump may hold them (a file from someone else); the terminal must not act on
#: them, and the consoles drop them as text goes out (cli.app._PrintableConsole).
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                     "\u2066-\u2069]")


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
