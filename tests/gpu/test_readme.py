"""The README's lines that capture, run for real on the GPU, in the README's order.

The CPU tier (tests/test_docs.py) runs the lines that need no GPU and checks these get as far
as asking for one; here each must succeed (diff: 0 or 1, its verdict), in one working folder
holding the files the lines name (tests/_readme.py), so `replay` without a SCENARIO uses the
capture the line before it recorded.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: _paths, _readme

from _readme import accelgraph_lines, needs_gpu, ok_codes, prepare_workdir  # noqa: E402

from accelgraph_cli.cli.app import main  # noqa: E402

pytestmark = pytest.mark.gpu


def test_every_readme_line_that_captures_succeeds(tmp_path, monkeypatch, capsys):
    prepare_workdir(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    ran = []
    for line, argv in accelgraph_lines():
        if not needs_gpu(argv):
            continue
        code = main(argv)
        out, err = capsys.readouterr()
        assert code in ok_codes(argv), f"README line {line}: accelgraph {' '.join(argv)}\n{err}"
        assert out.strip(), f"README line {line} printed nothing"
        ran.append(argv[0])
    assert {"capture", "replay", "dump", "smoke", "diff"} <= set(ran)
    assert (tmp_path / "graph.dot").read_text().startswith("digraph")
    assert (tmp_path / "residual.dot").read_text().startswith("digraph")
    assert "<testsuite" in (tmp_path / "report.xml").read_text()
