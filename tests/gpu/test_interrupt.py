"""Ctrl-C during `replay` and `smoke`: exit code 130, a summary of what ran, no traceback."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


def _interrupt(args, after_s, tmp_path):
    """Run `accelgraph ARGS`, send SIGINT after `after_s` seconds; (rc, stdout, stderr, ran_s)."""
    proc = subprocess.Popen([sys.executable, "-m", "accelgraph_cli", *args], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                [str(ROOT), os.environ.get("PYTHONPATH", "")])})
    t0 = time.monotonic()
    time.sleep(after_s)
    assert proc.poll() is None, "finished before the interrupt: make the run longer"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err, time.monotonic() - t0


def test_ctrl_c_during_replay_timing_reports_rounds_done(tmp_path):
    # 1,000-kernel steps, 500 iterations a round, 100 rounds: minutes of timing; interrupt at 10 s
    code, out, err, ran = _interrupt(
        ["replay", str(ROOT / "scenarios" / "elementwise_chain.py"), "--iters", "500",
         "--rounds", "100", "--no-check"], 10, tmp_path)
    assert code == 130, (out, err)
    assert "Traceback" not in err
    assert "interrupted after" in err and "timed rounds" in err, err
    assert ran < 40


def test_ctrl_c_during_smoke_prints_the_table_of_what_ran(tmp_path):
    junit = tmp_path / "smoke.xml"
    code, out, err, _ = _interrupt(
        ["smoke", str(ROOT / "scenarios"), "--iters", "400", "--rounds", "40",
         "--junit", str(junit)], 12, tmp_path)
    assert code == 130, (out, err)
    assert "Traceback" not in err
    assert "interrupted after" in out, out
    assert "interrupted before all scenarios ran" in junit.read_text()
