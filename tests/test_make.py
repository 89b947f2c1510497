"""The Makefile: `make` alone lists the targets, the GPU targets use the venv where there is one
and write nothing outside the checkout, fixtures without a GPU end in one line, bench results
land where git ignores them."""

import re
import subprocess

import pytest
from _paths import ROOT, has_gpu

MAKEFILE = (ROOT / "Makefile").read_text()
PHONY = re.search(r"^\.PHONY: (.*)$", MAKEFILE, re.MULTILINE).group(1).split()


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_bare_make_prints_the_help():
    bare, help_ = make(), make("help")
    assert bare.returncode == help_.returncode == 0
    assert bare.stdout == help_.stdout
    listed = re.findall(r"^   make ([\w-]+)", bare.stdout, re.MULTILINE)
    assert set(listed) == set(PHONY) - {"graphviz"}  # graphviz is a step of install
    assert "make test-cpu  the CPU tier alone" in bare.stdout
    assert ".venv/bin/accelgraph" in bare.stdout


@pytest.mark.parametrize("target", ["test-gpu", "fixtures", "bench"])
def test_gpu_targets_use_the_venv_and_stay_in_the_checkout(target):
    dry = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    commands = dry.stdout
    if (ROOT / ".venv" / "bin" / "python").exists():
        assert ".venv/bin/python" in commands
        assert " python3 -m pytest" not in commands and " python3 -m tools" not in commands
    # nothing is written outside the checkout (which may itself live under /tmp)
    outside = commands.replace(str(ROOT), "<checkout>")
    assert "/tmp" not in outside
    assert "TMPDIR=<checkout>/.gpu-tmp" in outside
    assert f"TMPDIR={ROOT}/.gpu-tmp" in commands
    for folder in (".gpu-site/x", ".gpu-tmp/x", "bench/results/local/x.json"):
        ignored = subprocess.run(["git", "check-ignore", "-q", folder], cwd=ROOT)
        assert ignored.returncode == 0, f"{folder} is not ignored by git"


@pytest.mark.skipif(has_gpu(), reason="checks the no-GPU behaviour; a GPU is present")
def test_fixtures_without_a_gpu_is_one_line(capsys):
    from tools.fixtures import main

    assert main(["tests/data"]) == 3
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("make fixtures: nothing recorded, tests/data/dumps left as it is: ")
