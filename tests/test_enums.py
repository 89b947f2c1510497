"""One enum per vocabulary: the parser refuses what it does not name, --help lists the
choices, and the library, the scenario contract and JSON use the same values."""

from __future__ import annotations

import json

import pytest
from _paths import SCENARIOS

from accelgraph_cli import CAPTURE_ERROR_MODES, CaptureErrorMode, ExitCode, Graph, PoolKind
from accelgraph_cli.cli.app import DumpFormat
from accelgraph_cli.cuda.pools import GraphPool
from accelgraph_cli.errors import AccelgraphError
from accelgraph_cli.run.protocol import resolve_options
from accelgraph_cli.run.scenario import ScenarioError, inspect_scenario

SAXPY = SCENARIOS / "saxpy.py"


def test_the_vocabularies():
    assert [k.value for k in PoolKind] == ["private", "shared", "async"]
    assert [m.value for m in CaptureErrorMode] == ["default", "global", "thread_local", "relaxed"]
    assert {e.name: int(e) for e in ExitCode} == {
        "OK": 0, "FAILED": 1, "BAD_INPUT": 2, "NO_GPU": 3, "INTERNAL": 70, "INTERRUPTED": 130,
        "STDOUT_CLOSED": 141, "TERMINATED": 143}
    # cudaStreamCaptureModeGlobal/ThreadLocal/Relaxed; PyTorch's "default" is global
    assert {m.value: m.cuda_value for m in CaptureErrorMode} == CAPTURE_ERROR_MODES == {
        "default": 0, "global": 0, "thread_local": 1, "relaxed": 2}
    assert CaptureErrorMode.DEFAULT.resolved is CaptureErrorMode.GLOBAL


def test_members_print_and_serialise_as_their_values():
    assert f"{PoolKind.SHARED}" == str(PoolKind.SHARED) == "shared"
    assert f"{CaptureErrorMode.THREAD_LOCAL}" == "thread_local"
    assert json.loads(json.dumps({"pool": PoolKind.ASYNC, "code": ExitCode.NO_GPU})) == {
        "pool": "async", "code": 3}


CHOICES = {
    "--pool": [k.value for k in PoolKind],
    "--error-mode": [m.value for m in CaptureErrorMode],
    "--format": [f.value for f in DumpFormat],
}


@pytest.mark.parametrize("verb, option", [
    ("capture", "--pool"), ("capture", "--error-mode"), ("replay", "--pool"),
    ("replay", "--error-mode"), ("dump", "--pool"), ("dump", "--format"), ("diff", "--error-mode"),
])
def test_the_parser_refuses_a_bad_choice_in_one_line_listing_the_valid_ones(cli, tmp_path, verb,
                                                                           option):
    args = {"capture": [SAXPY], "replay": [SAXPY], "dump": [SAXPY, "--out", tmp_path / "g.dot"],
            "diff": [SAXPY, SAXPY]}[verb]
    code, out, err = cli(verb, *args, option, "bogus")
    assert code == ExitCode.BAD_INPUT
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert option in lines[0] and "bogus" in lines[0]
    for choice in CHOICES[option]:
        assert choice in lines[0]
    assert not (tmp_path / "g.dot").exists()


@pytest.mark.parametrize("verb, option", [("capture", "--pool"), ("capture", "--error-mode"),
                                          ("dump", "--format")])
def test_help_lists_the_choices(cli, monkeypatch, verb, option):
    monkeypatch.setenv("COLUMNS", "200")  # wide enough that no choice list wraps
    code, out, err = cli(verb, "--help")
    assert code == 0
    assert "|".join(CHOICES[option]) in out.replace(" ", "")


def test_the_library_takes_members_or_values_and_refuses_the_rest():
    assert Graph(capture_error_mode="relaxed").capture_error_mode is CaptureErrorMode.RELAXED
    with pytest.raises(ValueError, match="'default', 'global', 'thread_local', 'relaxed'"):
        Graph(capture_error_mode="strict")
    assert resolve_options(inspect_scenario(SAXPY), "shared", None) == (
        PoolKind.SHARED, CaptureErrorMode.GLOBAL)
    with pytest.raises(AccelgraphError, match="'private', 'shared', 'async'"):
        resolve_options(inspect_scenario(SAXPY), "managed", None)
    assert GraphPool((0, 1), "async").kind is PoolKind.ASYNC
    with pytest.raises(ValueError, match="'private' or 'async'"):
        GraphPool((0, 2), PoolKind.SHARED)


def test_the_scenario_contract_uses_the_same_names(tmp_path):
    path = tmp_path / "s.py"
    path.write_text('"""s"""\nPOOL = "managed"\n\ndef setup():\n    return 0\n\n'
                    "def step(state):\n    pass\n")
    with pytest.raises(ScenarioError, match="'private', 'shared', 'async'"):
        inspect_scenario(path)
    path.write_text(path.read_text().replace('"managed"', '"async"'))
    assert inspect_scenario(path).pool is PoolKind.ASYNC


def test_a_value_and_its_member_parse_alike_and_lookalikes_do_not():
    for member in (*PoolKind, *CaptureErrorMode):
        assert type(member).parse(member.value, "x") is member
        assert type(member).parse(member, "x") is member
    for bad in ("Private", " global", "private ", b"private"):
        with pytest.raises(ValueError, match="must be one of"):
            PoolKind.parse(bad, "pool")


def test_a_pool_kind_is_taken_from_anything_that_names_one_and_shared_is_refused():
    import enum

    import numpy

    class Spelled(str):
        pass

    class Theirs(str, enum.Enum):
        ASYNC = "async"

    for kind, want in [("private", PoolKind.PRIVATE), (Spelled("private"), PoolKind.PRIVATE),
                       (numpy.str_("async"), PoolKind.ASYNC), (Theirs.ASYNC, PoolKind.ASYNC),
                       (PoolKind.ASYNC, PoolKind.ASYNC)]:
        assert GraphPool((0, 3), kind).kind is want
    for kind in ("shared", PoolKind.SHARED, Spelled("shared"), "Private", 3, None, ["private"]):
        with pytest.raises(ValueError, match="'private' or 'async'"):
            GraphPool((0, 4), kind)


def test_an_async_pool_is_refused_for_a_torch_scenario_whether_file_or_option_says_it(
        cli, tmp_path):
    path = tmp_path / "t.py"
    path.write_text('"""t"""\nimport torch\n\ndef setup():\n    return {}\n\n'
                    "def step(state):\n    pass\n")
    with pytest.raises(AccelgraphError, match="--pool async is CuPy's stream-ordered"):
        resolve_options(inspect_scenario(path), "async", None)
    assert resolve_options(inspect_scenario(path), "shared", None)[0] is PoolKind.SHARED
    code, out, err = cli("capture", path, "--pool", "async")  # before any GPU work
    assert code == 2 and "use private or shared" in err
