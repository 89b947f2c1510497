"""The README's shell lines, the files they name, and which of them need a GPU.

Shared by tests/test_docs.py (the CPU tier runs every line that can run without a GPU, and
checks that the GPU lines get as far as asking for one) and tests/gpu/test_readme.py (the GPU
tier runs them all, in the README's order).
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

from _paths import DATA, DUMPS, ROOT, SCENARIOS

README = (ROOT / "README.md").read_text()

# Verbs that capture on the GPU (smoke --list and diff of saved graphs do not).
GPU_VERBS = {"capture", "replay", "dump", "smoke"}

# Shell lines that are not `accelgraph ...`, and what runs them.
OTHER_LINES = {
    "make demo": "tests/test_docs.py::test_make_demo_without_a_gpu",
    "make test": "CI (.ci/run): this very test suite",
    "make wheel": ".ci/wheel-check",
    "pip install 'dist/accelgraph-0.1.0-py3-none-any.whl[cuda13]'": ".ci/wheel-check",
}


def shell_lines() -> list[tuple[int, str]]:
    """(line number, command) for each shell line: ```sh blocks and 4-space indented blocks,
    comments dropped."""
    lines: list[tuple[int, str]] = []
    fence = None
    for number, line in enumerate(README.splitlines(), 1):
        if line.startswith("```"):
            fence = None if fence is not None else line[3:].strip()
            continue
        if fence == "sh":
            command = line
        elif fence is None and line.startswith("    ") and re.match(r"\s+(accelgraph|make) ", line):
            command = line.strip()
        else:
            continue
        words = shlex.split(command, comments=True)
        if words:
            lines.append((number, shlex.join(words)))
    return lines


def accelgraph_lines() -> list[tuple[int, list[str]]]:
    """(line number, argv after `accelgraph`) for every README line that runs accelgraph."""
    return [(n, shlex.split(c)[1:]) for n, c in shell_lines() if c.startswith("accelgraph ")]


def needs_gpu(argv: list[str]) -> bool:
    """Whether `accelgraph ARGV` captures (needs a GPU)."""
    verb = argv[0] if argv else ""
    if verb == "smoke":
        return "--list" not in argv
    if verb in ("profile", "audit"):  # a saved profile or audit (.json) is shown anywhere
        return not any(a.endswith(".json") for a in argv[1:2])
    if verb == "diff":
        sides = [a for a in argv[1:3]]
        return any(a.endswith(".py") or (SCENARIOS / f"{a}.py").exists() for a in sides)
    return verb in GPU_VERBS


def residual_source() -> str:
    """The scenario file the README writes out as residual.py."""
    blocks = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
    (source,) = [b for b in blocks if b.startswith('"""Scaled residual update')]
    return source


def prepare_workdir(folder: Path) -> None:
    """The files the README's lines name, in ``folder``: residual.py, scenarios/, and saved
    graphs (recorded on the GPU) under the names the lines use."""
    (folder / "residual.py").write_text(residual_source())
    shutil.copytree(SCENARIOS, folder / "scenarios")
    for name, dump in (
        ("graph.dot", "scenario_fork_join_verbose.dot"),
        ("before.dot", "scenario_buckets_batch8_verbose.dot"),
        ("after.dot", "scenario_buckets_batch16_verbose.dot"),
        ("a.dot", "scenario_mlp_decode_verbose.dot"),
        ("b.dot", "scenario_mlp_decode_batch16_verbose.dot"),
    ):
        shutil.copyfile(DUMPS / dump, folder / name)
    # a profile recorded on the GPU, for `profile ... --against before.json`
    shutil.copyfile(DATA / "profiles" / "mlp_decode.json", folder / "before.json")


def ok_codes(argv: list[str]) -> set[int]:
    """Exit codes that mean the line worked: diff's 1 is its verdict "different"."""
    return {0, 1} if argv[:1] == ["diff"] else {0}
