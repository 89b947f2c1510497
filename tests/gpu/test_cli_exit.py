"""`accelgraph capture` ending at once on the GPU: capture() starts loading CUPTI on a thread
before the scenario's setup runs, so a setup that raises ends the process while that load may
still be going on. The exit must still be the documented one: code 2, one error line."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


def test_a_setup_that_raises_exits_2_with_one_line_while_cupti_loads(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    for _ in range(3):
        proc = subprocess.run(
            [sys.executable, "-m", "accelgraph_cli", "capture",
             str(ROOT / "tests" / "bad_scenarios" / "setup_raises.py")],
            capture_output=True, text=True, cwd=tmp_path, timeout=120, env=env)
        assert proc.returncode == 2, (proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("accelgraph: error:"), proc.stderr
        assert "n must be at most 3" in lines[0]
