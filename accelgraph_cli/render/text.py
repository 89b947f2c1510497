"""Small text formatters every renderer shares."""

from __future__ import annotations


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
