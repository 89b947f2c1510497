"""The helpers that exist once: atomic writes, the last-capture record, speedup."""

from __future__ import annotations

import json
import os

from accelgraph_cli.cuda.timing import Stat, Timing, speedup
from accelgraph_cli.enums import CaptureErrorMode, PoolKind
from accelgraph_cli.files import write_bytes_atomic, write_text_atomic
from accelgraph_cli.run.record import load_record, save_record


def test_atomic_writes_leave_the_file_and_nothing_else(tmp_path):
    text_file = write_text_atomic(tmp_path / "sub" / "a.txt", "héllo\n")
    bytes_file = write_bytes_atomic(tmp_path / "sub" / "b.bin", b"\x00\x01")
    assert text_file.read_text(encoding="utf-8") == "héllo\n"
    assert bytes_file.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["a.txt", "b.bin"]


def test_the_capture_record_round_trips_with_the_enum_values(tmp_path):
    target = save_record("scenarios/saxpy.py", {"n": 8}, PoolKind.SHARED,
                         CaptureErrorMode.RELAXED, True, directory=str(tmp_path))
    assert json.loads(target.read_text())["pool"] == "shared"
    record = load_record(str(tmp_path))
    assert record["params"] == {"n": 8} and record["error_mode"] == "relaxed"
    assert record["scenario"].endswith("saxpy.py") and record["keep_graph"] is True


def _timing(gpu_median: float) -> Timing:
    stat = Stat.of([gpu_median])
    return Timing(stat, stat, stat, iters=10, rounds=1)


def test_speedup_is_eager_over_graph_rounded_once():
    assert speedup(_timing(10.0), _timing(3.0)) == 3.3333
    assert speedup(_timing(10.0), _timing(0.0)) == 0.0  # nothing measurable, and valid JSON


def test_atomic_output_gives_the_file_the_mode_a_new_file_gets(tmp_path):
    import os
    import stat

    from accelgraph_cli.files import write_text_atomic

    old = os.umask(0o027)
    try:
        target = write_text_atomic(tmp_path / "out.dot", "digraph {}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert target.read_text() == "digraph {}\n"


def test_a_failed_write_leaves_no_folder_it_made(tmp_path):
    # A folder in the path is created only when the file is written: a write that fails
    # (here a full disk, as the writer would meet it) removes the folders it made, and only
    # those; a write that succeeds keeps them.
    import errno

    import pytest

    from accelgraph_cli.errors import AccelgraphError
    from accelgraph_cli.files import atomic_output, write_text_atomic

    (tmp_path / "there").mkdir()
    target = tmp_path / "there" / "a" / "b" / "out.json"
    with pytest.raises(AccelgraphError, match="No space left on device"):
        with atomic_output(target) as tmp:
            with open(tmp, "w") as fh:
                fh.write("{")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), tmp)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["there"]
    with pytest.raises(KeyboardInterrupt):
        with atomic_output(target):
            raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["there"]
    write_text_atomic(target, "{}\n")
    assert target.read_text() == "{}\n"
