"""Graphs that are wrong on purpose (tests/wrong_graphs/) must never earn "check: ok".

Each file builds a graph that computes something other than its eager steps (or a check that
would compare nothing), in a way that once got past the check: an outputs() that hands both
states one buffer, a graph writing a block the step released (and eager's output was then
given), a torch module's private output tensor, an output 16 links deep under an async pool,
a decode step that cannot run alone, a one-step graph shown beside an unrolled one, host
random numbers and counters whose frozen values agree with eager's last step, int64 outputs
under a tolerance, outputs that are all empty, an outputs() that names nothing before the
first step, two windows of one buffer that another library handed out, an output at
workspace bytes no state array reaches, a decode step with no output on a fresh state, and
an output published under a key setup() declares as None, a complex output and a pinned
host output that stray work wrote once (also through a read-only view), one pinned buffer
every setup() hands out, a jagged output stray work wrote once, and a sparse output's values
that stray work rewrote with the bits they held.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from accelgraph_cli import CaptureError
from accelgraph_cli.run import protocol as runner
from accelgraph_cli.run.scenario import load_scenario, parse_params

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
WRONG = ROOT / "tests" / "wrong_graphs"
HAS_TORCH = importlib.util.find_spec("torch") is not None

# stem -> (capture options, check options, "refused", "failed" or "not run")
CASES = {
    "staging_outputs": ({}, {}, "failed"),  # a module-level buffer, outside every state
    "dangling_scratch": ({}, {}, "failed"),
    "deep_state": ({"pool": "async"}, {}, "refused"),
    "decode_needs_prefill": ({}, {}, "failed"),
    "torch_private_shared_out": ({}, {}, "not run"),  # an output both states share
    "torch_dangling_scratch": ({}, {}, "failed"),
    "global_rng_dropout": ({}, {}, "failed"),
    "torch_cpu_rng_noise": ({}, {}, "failed"),
    "every_third_step": ({}, {"steps": 4}, "failed"),
    "int64_keys_atol": ({}, {"atol": 1e-6}, "failed"),
    "finished_rows_empty": ({}, {}, "not run"),
    "results_dict_outputs": ({}, {}, "refused"),  # outputs() names nothing before the step
    "overlapping_windows": ({}, {}, "refused"),  # two windows of one buffer, wrapped apart
    "workspace_tail": ({}, {}, "not run"),  # both states' output: bytes no state array reaches
    "decode_active_rows": ({}, {}, "failed"),  # decode: not run alone, FAILED after prefill
    "published_output": ({}, {}, "refused"),  # a placeholder at the output's first path
    "torch_rope_side_complex": ({}, {}, "failed"),  # a complex output, never filled before
    "host_stop_flags": ({}, {}, "failed"),  # a host output, filled on a device copy before
    "host_flags_one_buffer": ({}, {}, "not run"),  # one pinned buffer every setup() hands out
    "host_flags_readonly": ({}, {}, "failed"),  # a read-only view over a pinned buffer
    "torch_ragged_side_rope": ({}, {}, "failed"),  # a jagged output, never filled before
    "torch_sparse_prefilled_side": ({}, {}, "refused"),  # sparse values, never flipped before
}
# Stray work that changes no state array (it writes a temporary, a host buffer, an output
# only the step stores): the execution watch refuses these at capture. The outcome above is
# what the checksums, the flips and the check give without the watch (no cupti-python), and
# is tested that way too.
WATCH_REFUSES = {"torch_rope_side_complex", "host_stop_flags", "host_flags_one_buffer",
                 "host_flags_readonly", "torch_ragged_side_rope"}


@pytest.mark.parametrize("stem", sorted(CASES))
def test_a_wrong_graph_never_earns_check_ok(stem, request):
    if stem.startswith("torch_") and not HAS_TORCH:
        pytest.skip("torch is not installed")
    options, check_options, outcome = CASES[stem]
    scen = load_scenario(WRONG / f"{stem}.py")
    params = parse_params(scen.info.params, [])
    if stem in WATCH_REFUSES:
        with pytest.raises(CaptureError, match=r"the GPU ran \d+ operation\(s\) while capturing"):
            runner.capture(scen, params, **options)
        request.getfixturevalue("no_watch")  # and without the watch: the outcome above
    if outcome == "refused":
        with pytest.raises(CaptureError, match="ran work outside the graph"):
            runner.capture(scen, params, **options)
        return
    checked = runner.check(runner.capture(scen, params, **options), **check_options)
    assert not checked.ok, checked.to_dict()
    assert checked.verdict == ("not run" if outcome == "not run" else "FAILED"), checked.to_dict()
    if stem == "decode_needs_prefill":  # in order it is right; decode alone, after prefill, not
        decode = checked.per_graph["decode"]
        assert decode.ran and not decode.ok and not checked.mismatches, checked.to_dict()
        assert "after prefill" in decode.note


def test_replay_unroll_checks_the_one_step_graph_it_shows(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "accelgraph_cli", "replay", str(WRONG / "unroll_one_step.py"),
         "--unroll", "2", "--iters", "4", "--rounds", "1"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "check: ok" in proc.stdout  # the 2-step graph is right...
    assert "check of the one-step graph: FAILED" in proc.stdout  # ...the one shown beside it not
