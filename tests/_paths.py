"""Paths, markers and helpers shared by the CPU tests (import as `from _paths import ...`)."""

import os
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
# ACCELGRAPH_DUMPS points the tests at another recording (default: the committed one).
DUMPS = Path(os.environ.get("ACCELGRAPH_DUMPS", DATA / "dumps"))
MANIFEST = DUMPS / "MANIFEST.json"  # written last by `make fixtures`
SCENARIOS = ROOT / "scenarios"


def has_gpu() -> bool:
    from accelgraph_cli.cuda.device import gpu_available

    return gpu_available()


requires_no_gpu = pytest.mark.skipif(has_gpu(), reason="checks the no-GPU behaviour; a GPU is present")


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child `python` a test starts: this one, with ``PYTHONPATH`` at the
    checkout (``extra`` on top), and without mutmut's ``MUTANT_UNDER_TEST``, which makes the
    child record or run mutants and look for mutmut's settings in its own working folder
    (`make mutate` then stops before checking a single mutant)."""
    env = {key: value for key, value in os.environ.items() if key != "MUTANT_UNDER_TEST"}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def missing_recording(what: Path | str) -> NoReturn:
    """Fail (never skip) a test whose recorded dump is absent: the dumps are committed, so a
    missing one is a broken checkout, and a skip would hide every parser check behind it."""
    pytest.fail(
        f"{what} is missing: the recorded dumps are part of the checkout; restore them "
        "(git checkout -- tests/data/dumps) or record them on a GPU machine (make fixtures)",
        pytrace=False,
    )


def recorded(name: str) -> Path:
    """The recorded dump ``name`` (or ``name.gz``) in DUMPS; fails the test when it is absent."""
    for candidate in (DUMPS / name, DUMPS / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    missing_recording(DUMPS / name)


def text_of(renderable, width: int = 100) -> str:
    """What a pipe shows of a rich renderable at ``width`` columns: plain text, lines rstripped."""
    from rich.console import Console

    console = Console(width=width, force_terminal=False, no_color=True, record=True)
    console.print(renderable)
    return "\n".join(line.rstrip() for line in console.export_text().splitlines())


def styles_of(renderable, width: int = 100) -> list[tuple[str, str]]:
    """What a colour terminal gets beyond the text: every styled piece as (text, style), in
    order, the style as rich resolves it (a name rich does not know resolves to "none").
    Unstyled text and unstyled blanks are left out; neighbouring pieces of one style on one
    line, with nothing unstyled between them, are joined."""
    from rich.console import Console

    console = Console(width=width, force_terminal=True, color_system="truecolor", no_color=False)
    pieces: list[tuple[str, str]] = []
    joinable = False
    for segment in console.render(renderable):
        style = str(segment.style) if segment.style else "none"
        if style == "none" or segment.control or "\n" in segment.text or (
            not segment.text.strip() and not _visible_blank(style)
        ):
            joinable = joinable and not segment.text.strip() and "\n" not in segment.text and style != "none"
            continue
        if joinable and pieces[-1][1] == style:
            pieces[-1] = (pieces[-1][0] + segment.text, style)
        else:
            pieces.append((segment.text, style))
        joinable = True
    return pieces


def _visible_blank(style: str) -> bool:
    return any(word in style for word in ("reverse", " on ", "underline"))
