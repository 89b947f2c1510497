"""Shell completion of SCENARIO, PATHS and diff's A/B: bundled names, then files and folders.

Run as the shells run it: the command with typer's completion variables set, in a child."""

import os
import subprocess
import sys

import pytest
from _paths import ROOT, child_env

from accelgraph_cli.run.catalog import bundled_names


def complete(words: str, cwd, shell: str = "bash") -> list[str]:
    env = child_env(_ACCELGRAPH_COMPLETE=f"complete_{shell}")
    if shell == "bash":
        parts = words.split(" ")
        env.update(COMP_WORDS=words, COMP_CWORD=str(len(parts) - 1))
    else:
        env.update(_TYPER_COMPLETE_ARGS=words, _TYPER_COMPLETE_FISH_ACTION="get-args")
    proc = subprocess.run([sys.executable, "-m", "accelgraph_cli"], capture_output=True,
                          text=True, timeout=60, env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "mine.py").write_text("")
    (tmp_path / "model.dot").write_text("")
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "more").mkdir()
    return tmp_path


@pytest.mark.parametrize("verb", ["capture", "replay", "dump", "smoke"])
def test_a_scenario_completes_to_bundled_names_and_python_files(folder, verb):
    assert complete(f"accelgraph {verb} ml", folder) == ["mlp_decode"]
    assert complete(f"accelgraph {verb} m", folder) == (
        [n for n in bundled_names() if n.startswith("m")] + ["mine.py", "more/"])
    assert "notes.txt" not in complete(f"accelgraph {verb} ", folder)


def test_diff_completes_dumps_too(folder):
    assert complete("accelgraph diff m", folder) == (
        [n for n in bundled_names() if n.startswith("m")] + ["mine.py", "model.dot", "more/"])
    assert complete("accelgraph diff model.dot sa", folder, shell="fish") == ["saxpy"]


def test_paths_complete_inside_folders(folder):
    dumps = ROOT / "tests" / "data" / "dumps"
    got = complete(f"accelgraph diff {dumps}/chain1", folder)
    assert got == sorted(f"{dumps}/{p}" for p in os.listdir(dumps) if p.startswith("chain1"))
    assert complete(f"accelgraph smoke {ROOT}/scen", folder) == [f"{ROOT}/scenarios/"]
