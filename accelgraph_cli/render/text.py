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
    return (CONTROL.sub("", text).replace("\t", " ").replace("\n", " ")
            .replace("\u2028", " ").replace("\u2029", " "))  # Unicode's line breaks too


class NameCuts:
    """Names cut to a width, told apart: a name loses its end ("cupy_multiply__flo…": a name's
    start says most), or, where another of the names is cut too and to the same start, its
    middle: its start, "…" and its end, so that names that differ only at their end
    (sgemm_skinny_8 and sgemm_skinny_16; sgemm_splitk_reduce and sgemm_splitk_reduce_softmax)
    stay apart: "sgemm_…_8", "sgemm_…16". The end kept is a third of the width, at most 6
    characters, or, for a name that would still read like another so cut, the shortest end
    that reads like no other (nvjet names that differ before a shared "_bias_TNT"), where the
    width leaves one. Which names are so cut, and each one's end, is found once per width
    (passes over the names), so a listing of 100,000 rows cuts each in constant time."""

    def __init__(self, names=()):
        self.names = list(names)  # plain strs
        self._tails: dict[int, dict[str, int]] = {}

    def add(self, name: str) -> None:
        self.names.append(name)
        self._tails.clear()

    def _tails_for(self, width: int) -> dict[str, int]:
        """For each name that shares its start (the first width - 1 characters) with another
        name cut to this width, how many of its last characters to keep."""
        found = self._tails.get(width)
        if found is None:
            keep = max(width - 1, 0)
            groups: dict[str, set[str]] = {}
            for name in self.names:
                if len(name) > width:
                    groups.setdefault(name[:keep], set()).add(name)
            # a name shown whole that the cut start is all of but its last character also
            # reads the same ("sgemm_splitk_reduc…" beside sgemm_splitk_reduce)
            whole = {name[:keep] for name in self.names if keep <= len(name) <= width}
            crowded = [name for start, group in groups.items()
                       if len(group) > 1 or start in whole for name in group]
            shortest = min(keep // 3, 6)
            found = {}
            waiting = set(crowded)
            for tail in range(shortest, keep):  # at least one character of the start left
                if not waiting:
                    break
                forms: dict[tuple[str, str], list[str]] = {}
                for name in crowded:
                    forms.setdefault((name[:keep - tail], name[len(name) - tail:]), []).append(name)
                for alike in forms.values():  # a form no other name has at this end
                    if len(alike) == 1 and alike[0] in waiting:
                        found[alike[0]] = tail
                        waiting.discard(alike[0])
            for name in waiting:  # nothing tells it apart in this width
                found[name] = shortest
            self._tails[width] = found
        return found

    def cut(self, text, width: int):
        """``text`` (a str or a rich Text) in at most ``width`` characters."""
        if len(text) <= width:
            return text
        keep = max(width - 1, 0)
        # (below 6 characters kept, an end of 1 tells nothing apart: "cu…2")
        tail = self._tails_for(width).get(str(text)) if keep >= 6 else None
        if tail is None:
            return text[:keep] + "…"
        return text[:keep - tail] + "…" + (text[len(text) - tail:] if tail else "")


def format_bytes(count: int) -> str:
    """1536 -> '1.5 KiB'; exact bytes below 1 KiB."""
    if count < 1024:
        return f"{count} B"
    try:
        value = float(count)
    except OverflowError:  # past what a float holds (a damaged dump's 400-digit size)
        return f"{count // 1024 ** 4} TiB"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}"
    return f"{count} B"  # unreachable
