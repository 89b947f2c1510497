"""Bad input, every verb: one clear line on stderr, the documented exit code, no traceback,
no partial output file. Runs without a GPU (GPU verbs fail on bad input before needing one)."""

import gzip

import pytest
from _paths import DUMPS, ROOT, SCENARIOS, recorded, requires_no_gpu

BAD = ROOT / "tests" / "bad_scenarios"


def _one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one error line, got:\n{err}"
    assert "Traceback" not in err
    assert lines[0].startswith("accelgraph: error:"), lines[0]
    return lines[0]


@pytest.fixture
def files(tmp_path):
    empty = tmp_path / "empty.dot"
    empty.write_text("")
    binary = tmp_path / "binary.dot"
    binary.write_bytes(bytes(range(256)) * 8)
    not_dot = tmp_path / "notes.dot"
    not_dot.write_text("this is a shopping list, not a graph\n")
    wrong_json = tmp_path / "model.json"
    wrong_json.write_text('{"format": "accelgraph-model", "nodes": 3}')
    broken_gz = tmp_path / "dump.dot.gz"
    broken_gz.write_bytes(gzip.compress(b"digraph dot {")[:-8])
    return {
        "missing": tmp_path / "missing.dot",
        "empty": empty,
        "binary": binary,
        "not dot": not_dot,
        "wrong json": wrong_json,
        "broken gzip": broken_gz,
        "directory": tmp_path,
    }


@pytest.mark.parametrize("case", ["missing", "empty", "binary", "not dot", "wrong json",
                                  "broken gzip", "directory"])
@pytest.mark.parametrize("verb", ["show", "diff"])
def test_unreadable_graph_files(cli, files, verb, case):
    path = files[case]
    args = [verb, path] if verb == "show" else [verb, path, path]
    code, out, err = cli(*args)
    assert code == 2, (code, out, err)
    line = _one_line_error(err)
    assert path.name in line


def test_truncated_recorded_dump(cli, tmp_path):
    text = recorded("forkjoin_verbose.dot").read_text()
    cut = tmp_path / "cut.dot"
    cut.write_text(text[: len(text) // 2])
    code, out, err = cli("show", cut)
    assert code == 2
    assert "cut.dot" in _one_line_error(err)


SCENARIO_CASES = {
    "syntax error": (BAD / "syntax_error.py", "syntax_error.py:"),
    "no step": (BAD / "no_step.py", "no_step.py"),
    "missing file": (ROOT / "nowhere.py", "nowhere.py"),
    "not python": (SCENARIOS.parent / "README.md", "README.md"),
}


@pytest.mark.parametrize("case", sorted(SCENARIO_CASES))
@pytest.mark.parametrize("verb", ["capture", "replay", "dump", "smoke"])
def test_bad_scenario_files(cli, tmp_path, verb, case):
    path, words = SCENARIO_CASES[case]
    assert case in ("missing file",) or path.is_file(), f"{path} belongs to the checkout"
    args = {
        "capture": ["capture", path],
        "replay": ["replay", path],
        "dump": ["dump", path, "--out", tmp_path / "g.dot"],
        "smoke": ["smoke", path],
    }[verb]
    code, out, err = cli(*args)
    if verb == "smoke" and case in ("syntax error", "no step", "not python"):
        # smoke reports per scenario; without a GPU it stops first with exit 3.
        assert code in (1, 3), (code, err)
        return
    assert code == 2, (code, out, err)
    assert words in _one_line_error(err)
    assert not (tmp_path / "g.dot").exists()


@pytest.mark.parametrize(
    "args, words",
    [
        (["replay", SCENARIOS / "saxpy.py", "--iters", "0"], "--iters"),
        (["replay", SCENARIOS / "saxpy.py", "--iters", "-3"], "--iters"),
        (["replay", SCENARIOS / "saxpy.py", "--rounds", "0"], "--rounds"),
        (["replay", SCENARIOS / "saxpy.py", "--rtol", "-1"], "--rtol"),
        # a tolerance of inf would pass any finite difference, nan no comparison at all
        (["replay", SCENARIOS / "saxpy.py", "--atol", "inf"], "'--atol': inf is not a finite"),
        (["replay", SCENARIOS / "saxpy.py", "--rtol", "nan"], "'--rtol': nan is not a finite"),
        (["capture", SCENARIOS / "saxpy.py", "--pool", "unified"], "--pool"),
        (["capture", SCENARIOS / "saxpy.py", "--error-mode", "loose"], "relaxed"),
        (["capture", SCENARIOS / "saxpy.py", "--param", "n=lots"], "n"),
        (["capture", SCENARIOS / "saxpy.py", "--param", "nonsense=1"], "nonsense"),
        (["dump", SCENARIOS / "saxpy.py", "--out", "g.dot", "--format", "pdf"], "--format"),
        (["dump", SCENARIOS / "saxpy.py", "--out", "g.dot", "--flags", "everything"], "--flags"),
        (["smoke", "--iters", "0"], "--iters"),
        (["show", DUMPS / "x.dot", "--limit", "0"], "--limit"),
        (["capture"], "SCENARIO"),
        (["frobnicate"], "frobnicate"),
        # click names no command for an option left without its value: the verb's help is
        # still pointed to
        (["show", recorded("chain_basic.dot"), "--out"], "requires an argument. (see accelgraph "
                                                         "show --help)"),
        (["diff", recorded("chain_basic.dot"), recorded("chain_basic.dot"), "--ignore", ""],
         "--ignore '': an empty parameter name"),
        (["diff", recorded("chain_basic.dot"), recorded("chain_basic.dot"), "--ignore", "grid,"],
         "--ignore 'grid,': an empty parameter name"),
    ],
)
def test_bad_options(cli, args, words):
    code, out, err = cli(*args)
    assert code == 2, (code, out, err)
    assert words.lower() in _one_line_error(err).lower()


@pytest.mark.parametrize("name, fmt, message", [
    ("g.svg", [], "--out g.svg: the suffix names svg but --format is dot; add --format svg, or "
                  "name a .dot file"),
    ("g.dot", ["--format", "json"], "--out g.dot: the suffix names dot but --format is json; use "
                                    "--format dot, or name a .json file"),
])
def test_dump_refuses_a_suffix_of_another_format_before_any_gpu_work(cli, tmp_path, name, fmt,
                                                                     message):
    code, out, err = cli("dump", "saxpy", "--out", tmp_path / "new" / name, *fmt)
    assert (code, out) == (2, "")
    assert _one_line_error(err) == f"accelgraph: error: {message}".replace(
        f"--out {name}", f"--out {tmp_path / 'new' / name}")
    assert not (tmp_path / "new").exists()


@requires_no_gpu
@pytest.mark.parametrize("name, fmt", [("g.txt", []), ("g.json", ["-f", "json"]),
                                       ("g.dot", [])])
def test_dump_takes_a_matching_or_unknown_suffix_as_far_as_the_gpu(cli, tmp_path, name, fmt):
    code, out, err = cli("dump", "saxpy", "--out", tmp_path / name, *fmt)
    assert code == 3, err  # the arguments are right: it stops only for want of a GPU


def test_unwritable_out(cli, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    code, out, err = cli("capture", SCENARIOS / "saxpy.py", "--out", blocker / "sub")
    assert code == 2
    assert "a-file" in _one_line_error(err)
    code, out, err = cli("dump", SCENARIOS / "saxpy.py", "--out", blocker / "sub" / "g.dot")
    assert code == 2
    assert "a-file" in _one_line_error(err)


def test_a_json_model_with_a_number_too_long_for_python_is_bad_input(cli, tmp_path):
    # json.loads refuses to convert an integer of more than 4,300 digits (a ValueError of
    # its own, not a JSONDecodeError): invalid JSON, as any other, not a bug.
    import json

    _, saved, _ = cli("show", recorded("chain_basic.dot"), "--json")
    model = json.loads(saved)
    model["nodes"][0]["params"] = {"shared_mem": 0}
    text = json.dumps(model).replace('"shared_mem": 0', '"shared_mem": ' + "9" * 5000, 1)
    path = tmp_path / "big.json"
    path.write_text(text)
    code, _, err = cli("show", path)
    assert code == 2
    assert "big.json: invalid JSON: Exceeds the limit" in _one_line_error(err)


def test_a_limit_or_a_depth_past_anything_the_graph_holds_shows_all_of_it(cli):
    # A --limit past what Python's islice takes was an internal error, and a huge --depth
    # walked on long after the graph's ends had been reached.
    _, whole, _ = cli("show", recorded("chain_basic.dot"))
    code, out, err = cli("show", recorded("chain_basic.dot"), "--limit", "9" * 25)
    assert (code, err) == (0, "") and out == whole
    _, near, _ = cli("show", recorded("forkjoin_basic.dot"), "--focus", "3", "--depth", "100")
    code, out, err = cli("show", recorded("forkjoin_basic.dot"), "--focus", "3",
                         "--depth", str(10**18))
    assert (code, err) == (0, "") and out == near


@pytest.mark.parametrize("tolerance", [{"rtol": float("inf")}, {"atol": float("nan")},
                                       {"atol": -1e-9}])
def test_the_library_check_refuses_a_tolerance_that_would_pass_anything(tolerance):
    # the check's own guard, for callers of the library (the CLI refuses these first); it
    # refuses before it looks at the capture, so none is needed here
    from accelgraph_cli.errors import AccelgraphError
    from accelgraph_cli.run import protocol

    with pytest.raises(AccelgraphError, match="must be a finite number >= 0"):
        protocol.check(None, **tolerance)


@pytest.mark.parametrize("steps", [0, -1, True, 1.5])
def test_the_library_check_refuses_fewer_than_one_step(steps):
    # with no round to compare, the check's copies of eager's outputs were indexed empty
    # (IndexError); the CLI's --check-steps has min=1, library callers had no guard
    from accelgraph_cli.errors import AccelgraphError
    from accelgraph_cli.run import protocol

    with pytest.raises(AccelgraphError, match="steps must be an int >= 1"):
        protocol.check(None, steps=steps)


@pytest.mark.parametrize("args", [["replay"], ["dump", "-o", "g.dot"]])
def test_a_verb_with_no_capture_recorded_says_capture_needs_a_gpu(cli, args):
    # The message sent people to `accelgraph capture`, which on a machine without a GPU
    # then failed too (exit 3): it now says where capture runs.
    code, out, err = cli(*args)
    assert (code, out) == (2, "")
    assert _one_line_error(err) == (
        "accelgraph: error: no SCENARIO given and no capture recorded here: run `accelgraph "
        "capture SCENARIO` first (on a machine with a CUDA GPU), or name the scenario")


LONG = "a" * 5000  # longer than any file system takes a name


@pytest.mark.parametrize("args", [("diff", f"{LONG}.dot", f"{LONG}.dot"),
                                  ("smoke", "--list", f"{LONG}.py"), ("capture", f"{LONG}.py"),
                                  ("replay", LONG), ("smoke", "--baseline", LONG, "saxpy")])
def test_a_path_too_long_to_look_at_is_bad_input(cli, args):
    # pathlib's exists() raises for a name too long: it read as a bug (exit 70)
    code, out, err = cli(*args)
    assert (code, out) == (2, "")
    assert _one_line_error(err).endswith(": cannot read: File name too long")


@pytest.mark.parametrize("args", [("diff", "locked/k.dot", "locked/k.dot"),
                                  ("smoke", "--list", "locked/s.py"), ("smoke", "--list", "locked"),
                                  ("capture", "locked/s.py"), ("diff", "locked/s.py", "saxpy")])
def test_a_path_in_a_folder_that_cannot_be_entered_is_bad_input(cli, tmp_path, monkeypatch,
                                                                 args):
    # As a user without the right to enter a folder (root passes any permission check, so
    # the refusal is made here): exists() and is_dir() raised PermissionError, exit 70.
    import errno
    import os

    locked = tmp_path / "locked"
    locked.mkdir()
    real_stat, real_listdir = os.stat, os.listdir

    def refused(path):
        text = os.fsdecode(path)
        return text.startswith("locked/") or text.startswith(str(locked) + os.sep)

    def stat(path, *a, **k):
        if refused(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_stat(path, *a, **k)

    def listdir(path="."):
        if os.fsdecode(path) in ("locked", str(locked)):
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_listdir(path)

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "listdir", listdir)
    code, out, err = cli(*args)
    assert (code, out) == (2, "")
    assert _one_line_error(err).endswith(": cannot read: Permission denied")


def test_a_named_pipe_given_to_smoke_is_a_scenario_that_cannot_be_read(cli, tmp_path):
    # It was "no such file or folder" (exit 2); found in a folder it was already this row.
    import os

    os.mkfifo(tmp_path / "pipe.py")
    code, out, err = cli("smoke", "--list", "pipe.py")
    assert code == 1
    assert "not a regular file" in out + err


def test_a_size_past_what_a_float_holds_is_shown_not_a_crash(cli, tmp_path):
    # A damaged dump's 400-digit size made `show` and `diff` fail on float() (exit 70).
    text = recorded("memops_verbose.dot").read_text()
    huge = "9" * 400
    damaged = tmp_path / "huge.dot"
    damaged.write_text(text.replace("| 0 | 0 | 1 | 262144 | 1}}}", f"| 0 | 0 | 1 | {huge} | 1}}}}}}"))
    code, out, err = cli("show", damaged)
    assert (code, err) == (0, "")
    code, out, err = cli("diff", damaged, recorded("memops_verbose.dot"))
    assert code == 1 and err == ""
    from accelgraph_cli.render.text import format_bytes

    assert format_bytes(10**400) == f"{10**400 // 1024**4} TiB"
    assert format_bytes(3 * 1024**4) == "3.0 TiB"


def _nested_model(levels: int):
    from accelgraph_cli.model.graph_model import GraphModel, Node

    graph = GraphModel([Node("k", "kernel", "leaf", {})], [], source="dot-basic")
    for level in range(levels):
        graph = GraphModel([Node(f"g{level}", "graph", None, {}, child=graph)], [],
                           source="dot-basic")
    return graph


def test_child_graphs_nested_past_the_limit_are_refused_as_the_file_is_read(cli, tmp_path):
    # show and diff recurse per level of nesting: 400 levels was a RecursionError (exit 70),
    # and `show --out x.json` of 300 levels wrote a model that `diff` could not read.
    import json

    from accelgraph_cli.dot.load import MAX_NESTING

    deepest, deeper = tmp_path / "deepest.json", tmp_path / "deeper.json"
    deepest.write_text(json.dumps(_nested_model(MAX_NESTING).to_json()))
    deeper.write_text(json.dumps(_nested_model(MAX_NESTING + 1).to_json()))
    assert cli("show", deepest)[0] == 0
    assert cli("diff", deepest, deepest)[0] == 0
    code, out, err = cli("show", deeper)
    assert (code, out) == (2, "")
    assert f"nested {MAX_NESTING + 1} levels deep" in _one_line_error(err)
    assert cli("diff", deepest, deeper)[0] == 2


def test_a_baseline_nested_too_deeply_is_read_as_an_unreadable_baseline(tmp_path):
    from accelgraph_cli.run import smoke

    deep = tmp_path / "saxpy.json"
    deep.write_text("[" * 20000)
    assert smoke._baseline_document(deep) is None  # RecursionError escaped (exit 70)


def test_a_capture_record_nested_too_deeply_is_a_bad_record(cli, tmp_path):
    (tmp_path / ".accelgraph").mkdir()
    (tmp_path / ".accelgraph" / "last_capture.json").write_text("[" * 20000)
    code, out, err = cli("replay")
    assert (code, out) == (2, "")
    assert "unreadable capture record (nested too deeply)" in _one_line_error(err)


def test_running_out_of_memory_on_an_input_is_bad_input_not_a_bug(cli, monkeypatch):
    # a 34 KB DOT file of edge statements expands to millions of edges
    from accelgraph_cli.dot import parse

    def parse_dot(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(parse, "parse_dot", parse_dot)
    code, out, err = cli("show", recorded("chain_basic.dot"))
    assert (code, out) == (2, "")
    assert _one_line_error(err).startswith("accelgraph: error: ran out of memory")


def test_the_gpu_running_out_of_memory_is_not_called_a_large_input(cli, monkeypatch):
    # CuPy's OutOfMemoryError is a MemoryError too: it names the GPU, not the input file
    from accelgraph_cli.dot import parse

    class OutOfMemoryError(MemoryError):
        pass

    OutOfMemoryError.__module__ = "cupy.cuda.memory"

    def parse_dot(*args, **kwargs):
        raise OutOfMemoryError("Out of memory allocating 1,024 bytes")

    monkeypatch.setattr(parse, "parse_dot", parse_dot)
    code, out, err = cli("show", recorded("chain_basic.dot"))
    assert (code, out) == (2, "")
    assert _one_line_error(err).startswith(
        "accelgraph: error: the GPU ran out of memory (Out of memory allocating 1,024 bytes)")


_BODY = '"""A scenario."""\n\ndef setup():\n    return {}\n\ndef step(state):\n    pass\n'
_HUGE_HEX = "0x" + "f" * 4000  # Python reads it; repr() refuses: over 4,300 decimal digits


@pytest.mark.parametrize("tail, said", [
    (f"step = {_HUGE_HEX}\n", "step is bound to <an integer of 16,000 bits>, not a function"),
    (f"setup = {_HUGE_HEX}\n", "setup is bound to <an integer of 16,000 bits>, not a function"),
    (f"PARAMS = {{{_HUGE_HEX}: 1}}\n",
     "PARAMS key <an integer of 16,000 bits> is not a valid parameter name"),
])
def test_an_integer_too_long_to_print_is_the_files_error_not_a_crash(cli, tmp_path, tail, said):
    # repr() of it raised ValueError inside the message: exit 70, and a whole folder's
    # `smoke --list` lost with it.
    folder = tmp_path / "scen"
    folder.mkdir()
    (folder / "big.py").write_text(_BODY + tail)
    (folder / "good.py").write_text(_BODY)
    code, out, err = cli("smoke", "--list", "scen")  # (the cli fixture runs in tmp_path)
    assert (code, err) == (1, "")
    rows = out.splitlines()
    assert rows[0].startswith("scen/big.py   error: line ") and said in rows[0], rows
    assert rows[1].split() == ["scen/good.py", "A", "scenario."]


def test_a_line_break_in_a_scenario_files_name_keeps_its_error_whole(cli, tmp_path):
    # "accelgraph: error: n2/br [+2 more lines]": the name's break cut the message at it.
    (tmp_path / "br\nok.py").write_text('"""x."""\ndef setup(:\n    pass\n')
    code, out, err = cli("capture", "br\nok.py")  # (the cli fixture runs in tmp_path)
    assert (code, out) == (2, "")
    assert err == ("accelgraph: error: br\\nok.py:2:11: syntax error: invalid syntax; "
                   "fix it (python -m py_compile br\\nok.py reports the same)\n")
    (tmp_path / "new\u2028line.py").write_text(_BODY)
    code, out, err = cli("smoke", "--list", "new\u2028line.py", "br\nok.py")
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        "new\\u2028line.py  A scenario.",
        "br\\nok.py         error: line 2, column 11: syntax error: invalid syntax; "
        "fix it (python -m py_compile br\\nok.py reports the same)"]


def test_pythons_warnings_about_the_scenarios_text_are_one_line_each(tmp_path):
    # SyntaxWarning printed the file's line raw below it: ESC and BEL from the file reached
    # the terminal. (A child process: in this one pytest catches warnings before they print.)
    import subprocess
    import sys

    from _paths import child_env

    (tmp_path / "warns.py").write_text(
        _BODY + '\ndef later(state):\n    assert (state, "\\x1b]0;title\\x07")\n'
        "    return state is 1\n")
    proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", "smoke", "--list", "warns.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=child_env())
    assert proc.returncode == 0
    assert proc.stderr.splitlines() == [
        "warning: warns.py:10: SyntaxWarning: assertion is always true, perhaps remove "
        "parentheses?",
        'warning: warns.py:11: SyntaxWarning: "is" with a literal. Did you mean "=="?']
    assert proc.stdout.split() == ["warns.py", "A", "scenario."]


def test_a_named_pipe_for_the_capture_record_is_refused_not_read(tmp_path):
    # `replay` with no SCENARIO read .accelgraph/last_capture.json: a FIFO there waited for
    # ever for a writer. (A child process with a time limit: a hang fails the test.)
    import os
    import subprocess
    import sys

    from _paths import child_env

    (tmp_path / ".accelgraph").mkdir()
    os.mkfifo(tmp_path / ".accelgraph" / "last_capture.json")
    for verb in (["replay"], ["dump", "-o", "x.dot"]):
        proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", *verb], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60, env=child_env())
        assert (proc.returncode, proc.stdout) == (2, "")
        assert proc.stderr == ("accelgraph: error: .accelgraph/last_capture.json: not a regular "
                               "file, so not a capture record; remove it and capture again\n")


@pytest.mark.parametrize("args", [["capture", "saxpy"], ["smoke", "--junit", "r.xml"]])
def test_a_removed_working_folder_is_bad_input_not_a_bug(tmp_path, args):
    # os.getcwd() raised FileNotFoundError deep inside: "internal error", exit 70.
    import subprocess
    import sys

    from _paths import child_env

    gone = tmp_path / "gone"
    gone.mkdir()
    script = ("import os, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
              "from accelgraph_cli.cli.app import main; sys.exit(main(sys.argv[2:]))")
    proc = subprocess.run([sys.executable, "-c", script, str(gone), *args], capture_output=True,
                          text=True, timeout=120, env=child_env())
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("accelgraph: error: the current folder no longer exists (removed "
                           "while the shell was in it), so no relative path can be read or "
                           "written here; cd to a folder that exists\n")


def test_a_scenario_name_that_starts_with_a_space_keeps_it_in_the_error(cli, tmp_path):
    # " saxpy: no such file, ...; bundled: ... saxpy ..." read "saxpy: no such file".
    code, out, err = cli("capture", " saxpy")
    assert (code, out) == (2, "")
    assert err.startswith("accelgraph: error:  saxpy: no such file, and no bundled scenario")
    (tmp_path / " lead.py").write_text('"""x."""\ndef setup(:\n    pass\n')
    code, out, err = cli("capture", " lead.py")
    assert err.startswith("accelgraph: error:  lead.py:2:11: syntax error")


def test_warnings_still_reach_a_caller_that_records_them(cli, tmp_path):
    # main() changes how a printed warning is written, not where warnings go: under
    # pytest.warns (or any catch_warnings(record=True)) they stay the caller's.
    (tmp_path / "warns.py").write_text(_BODY + "\ndef later(state):\n    return state is 1\n")
    with pytest.warns(SyntaxWarning, match='"is" with a literal'):
        code, out, err = cli("smoke", "--list", "warns.py")
    assert (code, err) == (0, "")


def test_main_puts_pythons_warning_format_back(capsys):
    import warnings

    from accelgraph_cli.cli import app

    before = warnings.formatwarning
    assert app.main(["--version"]) == 0  # (which also forgets the warnings a run wrote)
    assert warnings.formatwarning is before
    shown = [app._format_warning(SyntaxWarning("always true\x1b]0;t\x07"), SyntaxWarning,
                                 "a\nb.py", 3) for _ in range(2)]
    # a scenario's text is compiled twice in a run: its warning written once
    assert shown == ["warning: a\\nb.py:3: SyntaxWarning: always true]0;t\n", ""]
    assert app._format_warning("another", SyntaxWarning, "a\nb.py", 3) == (
        "warning: a\\nb.py:3: SyntaxWarning: another\n")


def test_an_exception_whose_message_cannot_be_written_is_still_one_line(tmp_path):
    # setup() raising ValueError(10**5000): str() of it raises inside the error's own making.
    from accelgraph_cli.run.scenario import ScenarioError, load_scenario

    path = tmp_path / "raises.py"
    path.write_text('"""x."""\ndef setup():\n    raise ValueError(10**5000)\n\n'
                    "def step(state):\n    pass\n")
    scenario = load_scenario(path)
    with pytest.raises(ScenarioError) as caught:
        scenario.make_state()
    assert str(caught.value) == (f"{path}:3: setup() raised ValueError: (its message cannot be "
                                 "written: ValueError)")


def test_every_line_break_python_knows_is_escaped_in_a_name():
    from accelgraph_cli.errors import one_line

    name = "a\nb\rc\x0bd\x0ce\x1cf\x1dg\x1eh\x85i\u2028j\u2029k"
    assert len(name.splitlines()) == 11
    assert one_line(name) == "a\\nb\\rc\\x0bd\\x0ce\\x1cf\\x1dg\\x1eh\\x85i\\u2028j\\u2029k"
    assert len(one_line(name).splitlines()) == 1


def test_a_scenario_file_over_the_memory_limit_is_refused_unread(cli, tmp_path, monkeypatch):
    # a 7 GB .py was read whole (73 s) before its NUL bytes were reported
    from accelgraph_cli.dot import load

    (tmp_path / "big.py").write_text(_BODY + "#" * 1000 + "\n")
    size = (tmp_path / "big.py").stat().st_size
    monkeypatch.setattr(load, "memory_limit", lambda: size - 1)
    code, out, err = cli("smoke", "--list", "big.py")
    assert (code, err) == (1, "")
    assert out.strip() == (f"big.py  error: {size:,} bytes, too large to read as a scenario here "
                           "(more than a quarter of the memory this process may still take); "
                           "a scenario is a small Python file")
    code, out, err = cli("capture", "big.py")
    assert (code, out) == (2, "")
    assert err.startswith(f"accelgraph: error: big.py: {size:,} bytes, too large")
    monkeypatch.setattr(load, "memory_limit", lambda: size)
    code, out, err = cli("smoke", "--list", "big.py")
    assert (code, out.split()) == (0, ["big.py", "A", "scenario."])


def test_a_long_param_key_is_cut_in_its_error(cli):
    # a 100,000-character key was echoed whole, twice, where a bad value is cut to 60
    key = "k" * 100_000
    code, out, err = cli("capture", "saxpy", "--param", f"{key}=1")
    assert (code, out) == (2, "")
    assert err.startswith(f"accelgraph: error: --param '{'k' * 58}…: unknown key '{'k' * 58}…; "
                          "known keys: ")
    assert len(err) < 600


_LONG = "k" * 5000


@pytest.mark.parametrize("tail, said", [
    (f'PARAMS = {{"{_LONG}": 1e999}}\n', f"PARAMS['{'k' * 58}…] is inf; use a finite number"),
    (f'PARAMS = {{"{_LONG}": 1, "{_LONG}": 2}}\n', f"PARAMS lists '{'k' * 58}… twice; keep one"),
    (f'PARAMS = {{"{_LONG}": [1]}}\n', f"PARAMS['{'k' * 58}…] is list [1]; use an int"),
    (f'PARAMS = {{"{_LONG}": 0x{"f" * 300}}}\n',
     f"PARAMS['{'k' * 58}…] is an integer of 1,200 bits"),
    (f'EXPECT_EMPTY = ["{_LONG}"]\n',
     f"EXPECT_EMPTY names '{'k' * 58}…, but a scenario with step(state) has one graph"),
])
def test_long_names_from_the_file_are_cut_in_its_errors(cli, tmp_path, tail, said):
    # each was echoed whole (5,000 characters, some twice) where a value is cut to 60
    (tmp_path / "long.py").write_text(_BODY.replace("def setup():", "def setup(**params):")
                                      + tail)
    code, out, err = cli("capture", "long.py")
    assert (code, out) == (2, "")
    assert said in err
    assert len(err) < 600


def test_a_garbled_dump_whose_sizes_multiply_past_any_memory_is_shown(cli, tmp_path):
    # dimensions of 1,500 digits each multiplied to a size Python will not write in decimal:
    # show, show --json and diff exited 70 ("this is a bug")
    text = recorded("memops_verbose.dot").read_text()
    huge = "9" * 1500
    garbled = text.replace("| 0 | 1 | 262144 | 1}}}", f"| 0 | {huge} | {huge} | {huge}}}}}}}", 1)
    assert garbled != text
    (tmp_path / "m.dot").write_text(garbled)
    code, out, err = cli("show", "m.dot")
    assert code == 0 and "memset" in out
    code, out, err = cli("show", "m.dot", "--json")
    assert code == 0 and huge in out
    code, out, err = cli("diff", "m.dot", str(recorded("memops_verbose.dot")))
    assert code in (0, 1) and "internal error" not in err


def test_the_capture_record_replaces_a_pipe_or_a_link_at_its_path(tmp_path):
    # save_record wrote into what was there: a named pipe waited for a reader for ever, a
    # link had its target overwritten with the record
    import os
    import threading

    from accelgraph_cli.run.record import load_record, record_path, save_record

    (tmp_path / ".accelgraph").mkdir()
    target = record_path(str(tmp_path))
    os.mkfifo(target)
    done = []
    writer = threading.Thread(target=lambda: done.append(
        save_record("s.py", {"n": 1}, "private", "global", False, directory=str(tmp_path))),
        daemon=True)
    writer.start()
    writer.join(30)
    assert done and target.is_file() and not target.is_symlink()
    assert load_record(str(tmp_path))["params"] == {"n": 1}
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    target.unlink()
    target.symlink_to(victim)
    save_record("s.py", {"n": 2}, "private", "global", False, directory=str(tmp_path))
    assert victim.read_text() == "keep me\n"
    assert not target.is_symlink() and load_record(str(tmp_path))["params"] == {"n": 2}


def test_a_folder_at_the_record_path_is_refused_before_any_capture(tmp_path):
    from accelgraph_cli.errors import AccelgraphError
    from accelgraph_cli.run.record import check_record_path, record_path

    (tmp_path / ".accelgraph" / "last_capture.json").mkdir(parents=True)
    with pytest.raises(AccelgraphError, match="a folder where accelgraph keeps the record"):
        check_record_path(str(tmp_path))
    record_path(str(tmp_path)).rmdir()
    check_record_path(str(tmp_path))  # nothing there: fine


def test_a_capture_record_too_large_to_be_one_is_refused_unread(cli, tmp_path):
    # an 8 GB file there was read whole (82 s, 16.8 GB) before it was called no record
    (tmp_path / ".accelgraph").mkdir()
    with open(tmp_path / ".accelgraph" / "last_capture.json", "wb") as big:
        big.truncate(8 << 30)  # sparse: no disk used
    code, out, err = cli("replay")
    assert (code, out) == (2, "")
    assert _one_line_error(err) == (
        f"accelgraph: error: .accelgraph/last_capture.json: {8 << 30:,} bytes, too large for a "
        "capture record (a few hundred bytes); capture again")


@pytest.mark.parametrize("number, reason", [
    ("NaN", "NaN is not a JSON value"), ("Infinity", "Infinity is not a JSON value"),
    ("-Infinity", "-Infinity is not a JSON value"),
    ("1e999", "1e999 is past the range of a double"),
    ("-2.5e400", "-2.5e400 is past the range of a double"),
])
def test_a_json_model_holding_a_number_json_has_not_is_invalid_json(cli, tmp_path, number,
                                                                    reason):
    # Python's reader takes NaN and Infinity, and reads 1e999 as infinity; show --json and
    # -o then wrote them back out as NaN or Infinity, which no JSON reader takes
    _, saved, _ = cli("show", recorded("kinds_verbose.dot"), "--json")
    assert '"hit_ratio": 0.0' in saved.replace("access_policy_window_", "")
    (tmp_path / "m.json").write_text(
        saved.replace('"access_policy_window_hit_ratio": 0.0',
                      f'"access_policy_window_hit_ratio": {number}', 1))
    code, out, err = cli("show", "m.json", "--json")
    assert (code, out) == (2, "")
    assert _one_line_error(err) == f"accelgraph: error: m.json: invalid JSON: {reason}"


def test_a_dump_number_past_a_doubles_range_stays_as_written(cli, tmp_path):
    # "1.0e999" read as float('inf') went out of show --json as Infinity, which is no JSON
    import json

    text = recorded("memops_verbose.dot").read_text()
    garbled = text.replace("| 0 | 1 | 262144 | 1}}}", "| 1.0e999 | 1 | 262144 | 1}}}", 1)
    assert garbled != text
    (tmp_path / "m.dot").write_text(garbled)
    code, out, err = cli("show", "m.dot", "--json")
    assert code == 0, err

    def refuse(name):
        raise ValueError(name)

    document = json.loads(out, parse_constant=refuse)
    (memset,) = [n for n in document["nodes"] if n["kind"] == "memset"]
    assert memset["params"]["value"] == "1.0e999"
    code, out, err = cli("show", "m.dot", "-o", "m.json")
    assert code == 0 and cli("show", "m.json")[0] == 0
