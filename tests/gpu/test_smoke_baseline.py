"""smoke --baseline on the GPU: a real capture written as a baseline, compared with it, and a
baseline of another scenario's graph under the same file name refused."""

import json
from pathlib import Path

from accelgraph_cli.run import smoke

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def test_a_baseline_is_written_compared_and_never_taken_for_another_graphs(tmp_path):
    folder = tmp_path / "baselines"
    first = smoke.run_one(SCENARIOS / "saxpy.py", iters=5, rounds=1, baseline=str(folder))
    assert (first.status, first.drift) == ("ok", "new baseline"), first
    written = json.loads((folder / "saxpy.json").read_text())
    assert written["baseline_of"] == {"scenario": "saxpy", "graph": "step"}
    assert written["nodes"]  # the captured graph's model, not an empty one
    again = smoke.run_one(SCENARIOS / "saxpy.py", iters=5, rounds=1, baseline=str(folder))
    assert (again.status, again.drift) == ("ok", "none"), again
    # the same file name, recorded as another scenario's graph (a.py's graph "b" is a_b.json)
    written["baseline_of"] = {"scenario": "sax", "graph": "py"}
    (folder / "saxpy.json").write_text(json.dumps(written))
    clash = smoke.run_one(SCENARIOS / "saxpy.py", iters=5, rounds=1, baseline=str(folder),
                          update_baseline=True)
    assert clash.status == "error" and "is of graph 'py' of scenario 'sax'" in clash.message
    assert json.loads((folder / "saxpy.json").read_text()) == written  # not written over
