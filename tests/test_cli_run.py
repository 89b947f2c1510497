"""capture / replay from the command line, on a machine without a GPU: bad input is diagnosed
before any GPU is needed; a good scenario ends in one line saying what works without one."""

import json
from pathlib import Path

import pytest
from _paths import ROOT, SCENARIOS, requires_no_gpu

BAD = ROOT / "tests" / "bad_scenarios"


@requires_no_gpu
@pytest.mark.parametrize("verb", ["capture", "replay", "profile", "audit"])
def test_gpu_verbs_without_gpu_fail_in_one_line(cli, verb):
    code, out, err = cli(verb, SCENARIOS / "saxpy.py")
    assert code == 3
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "need a CUDA GPU" in err
    assert ("show and diff of saved dumps, saved profiles and audits, scenarios and smoke --list work "
            "without a GPU") in err
    assert "pip install 'accelgraph[cuda12]' or 'accelgraph[cuda13]'" in err  # not eaten as markup
    assert "Traceback" not in err + out


def test_missing_scenario_is_bad_input(cli):
    code, out, err = cli("capture", "nowhere/missing.py")
    assert code == 2
    assert "missing.py" in err
    assert "Traceback" not in err


def test_syntax_error_names_file_and_line(cli):
    bad = sorted(BAD.glob("*syntax*.py"))
    assert bad, "tests/bad_scenarios holds a syntax-error scenario"
    code, out, err = cli("capture", bad[0])
    assert code == 2
    assert f"{bad[0].name}:" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "option, words",
    [
        (["--param", "nope=1"], "nope"),
        (["--param", "n=many"], "n"),
        (["--param", "n"], "="),
        (["--pool", "managed"], "private"),
        (["--error-mode", "strict"], "relaxed"),
    ],
)
def test_bad_options_are_one_line_errors(cli, option, words):
    code, out, err = cli("capture", SCENARIOS / "elementwise_chain.py", *option)
    assert code == 2, (code, out, err)
    assert words in err
    assert "Traceback" not in err


@pytest.mark.parametrize("iters", ["0", "-5"])
def test_replay_rejects_non_positive_iters(cli, iters):
    code, out, err = cli("replay", SCENARIOS / "saxpy.py", "--iters", iters)
    assert code == 2
    assert "--iters" in err


def test_replay_without_scenario_or_record_says_to_capture_first(cli):
    code, out, err = cli("replay")
    assert code == 2
    assert "accelgraph capture" in err


def test_verbs_that_exit_1_return_1(cli, tmp_path):
    """typer.Exit codes reach the shell (click returns them instead of raising)."""
    import json

    from accelgraph_cli.model.graph_model import GraphModel, Node

    a = GraphModel([Node("n0", "kernel", "k", {"grid": (1, 1, 1)})], [])
    b = GraphModel([Node("n0", "kernel", "k", {"grid": (2, 1, 1)})], [])
    (tmp_path / "a.json").write_text(json.dumps(a.to_json()))
    (tmp_path / "b.json").write_text(json.dumps(b.to_json()))
    code, out, err = cli("diff", tmp_path / "a.json", tmp_path / "b.json")
    assert code == 1, (out, err)
    code, out, err = cli("diff", tmp_path / "a.json", tmp_path / "a.json")
    assert code == 0, (out, err)


def _write_record(tmp_path, text: str) -> None:
    """``text`` as the last capture's record (./.accelgraph/last_capture.json) in tmp_path."""
    (tmp_path / ".accelgraph").mkdir()
    (tmp_path / ".accelgraph" / "last_capture.json").write_text(text)


@pytest.mark.parametrize("record, words", [
    ({"scenario": 5}, '"scenario" must be'),
    ({"scenario": None}, '"scenario" must be'),
    ({"scenario": ["a"]}, '"scenario" must be'),
    ({"scenario": "saxpy", "params": "x"}, '"params" must be'),
    ({"scenario": "saxpy", "params": [1]}, '"params" must be'),
    ({"scenario": "saxpy", "pool": 5}, '"pool" must be one of'),
    ({"scenario": "saxpy", "error_mode": "bogus"}, '"error_mode" must be one of'),
    ({"scenario": "saxpy", "params": {"nosuch": 1}}, "the last capture's param 'nosuch=1': unknown key"),
    ({"scenario": "saxpy", "params": {"n": "many"}}, "the last capture's param n='many'"),
    ({"scenario": "moved.py"}, "the last capture's scenario moved.py no longer exists"),
    # (a link that leads to itself exists; it did read "no longer exists")
    ({"scenario": "loop.py"}, "the last capture's scenario: "),
    ({"scenario": "/dev/null"}, "the last capture's scenario: /dev/null: "),
    ({"scenario": "saxpy", "params": {"n=1": 5}}, '"params" key \'n=1\' is not a parameter name'),
])
@pytest.mark.parametrize("verb", ["replay", "dump"])
def test_hand_edited_capture_record_is_bad_input(cli, tmp_path, verb, record, words):
    import json

    _write_record(tmp_path, json.dumps(record))
    (tmp_path / "loop.py").symlink_to(tmp_path / "loop.py")
    code, out, err = cli(verb, *(["--out", "g.dot"] if verb == "dump" else []))
    assert code == 2, (code, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "last_capture.json: " in err and words in err and "--param" not in err
    assert "capture again" in err


@requires_no_gpu
@pytest.mark.parametrize("verb", ["replay", "dump"])
def test_param_overrides_a_bad_value_the_record_holds(cli, tmp_path, verb):
    # --param overrides what the last capture recorded, a value that no longer parses too:
    # the recorded one is not read at all, so this gets as far as the GPU.
    _write_record(tmp_path,
                  '{"scenario": "saxpy", "params": {"n": "many", "a": 2.0}}')
    args = ["--out", "g.dot"] if verb == "dump" else []
    assert cli(verb, "--param", "n=5", *args)[0] == 3
    code, out, err = cli(verb, "--param", "a=1", *args)  # the bad one not overridden
    assert code == 2 and "the last capture's param n='many'" in err


@requires_no_gpu
@pytest.mark.parametrize("verb", ["replay", "dump"])
def test_an_option_overrides_a_bad_pool_or_mode_the_record_holds(cli, tmp_path, verb):
    # As --param does for a recorded value: the recorded one is not read, so this gets as
    # far as the GPU; not overridden, it is the record's error.
    _write_record(tmp_path,
                  '{"scenario": "saxpy", "pool": "nope", "error_mode": "bogus"}')
    args = ["--out", "g.dot"] if verb == "dump" else []
    assert cli(verb, "--pool", "shared", "--error-mode", "relaxed", *args)[0] == 3
    code, out, err = cli(verb, "--pool", "shared", *args)
    assert code == 2 and "last_capture.json: " in err and '"error_mode" must be one of' in err


@pytest.mark.parametrize("verb", ["replay", "dump"])
def test_a_recorded_pool_a_torch_scenario_refuses_names_the_record(cli, tmp_path, verb):
    # The record's pool (async) no longer suits the scenario (now written in torch): that is
    # the record's error, not a --pool the user never gave.
    scenario = tmp_path / "tor.py"
    scenario.write_text((SCENARIOS / "torch_buckets.py").read_text())
    _write_record(tmp_path,
                  json.dumps({"scenario": str(scenario), "pool": "async"}))
    code, out, err = cli(verb, *(["--out", "g.dot"] if verb == "dump" else []))
    assert code == 2, err
    assert err.startswith("accelgraph: error: ") and "last_capture.json: the last capture's " \
        "options: --pool async is CuPy's stream-ordered allocator" in err
    assert "capture again, or name the scenario" in err


@pytest.mark.parametrize("out", [None, "elsewhere"])
def test_capture_refuses_a_folder_it_cannot_write_before_the_gpu(cli, tmp_path, read_only, out):
    # The artifacts go to .accelgraph/<scenario>/ (or --out) and the record of the capture to
    # ./.accelgraph/ whatever --out says: both are checked before any GPU work.
    read_only.append(tmp_path)
    args = ["--out", tmp_path.parent / f"{tmp_path.name}-out"] if out else []
    code, out_text, err = cli("capture", "saxpy", *args)
    assert (code, out_text) == (2, ""), err
    assert "not writable" in err
    assert not (tmp_path / ".accelgraph").exists()


@requires_no_gpu
def test_a_record_with_no_params_still_reaches_the_gpu(cli, tmp_path):
    _write_record(tmp_path,
                  '{"scenario": "saxpy", "params": null, "pool": null}')
    assert cli("replay")[0] == 3


@pytest.mark.parametrize("args", [["nosuchscenario", "saxpy"], ["saxpy", "nosuchscenario"],
                                  ["nosuchscenario", "nosuch.dot"]])
def test_diff_of_a_name_that_is_neither_file_nor_scenario_lists_the_bundled_names(cli, args):
    code, out, err = cli("diff", *args)
    assert code == 2, (code, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "nosuchscenario: no such file, and no bundled scenario" in err and "saxpy" in err


@pytest.mark.parametrize("verb", ["capture", "replay", "dump", "smoke"])
def test_a_missing_path_to_a_bundled_scenario_points_to_its_name(cli, tmp_path, verb):
    # the README's `accelgraph capture scenarios/mlp_decode.py`, run outside a checkout
    args = [verb, "scenarios/mlp_decode.py"] + (["--out", str(tmp_path / "g.dot")]
                                                if verb == "dump" else [])
    code, out, err = cli(*args)
    assert (code, out) == (2, "")
    assert err == ("accelgraph: error: scenarios/mlp_decode.py: no such file; the bundled "
                   "scenario 'mlp_decode' runs by its name: `mlp_decode`\n")


def test_diff_of_a_missing_dot_file_says_no_such_file(cli):
    code, out, err = cli("diff", "gone.dot", "saxpy")
    assert code == 2 and err.strip() == "accelgraph: error: gone.dot: no such file"


@pytest.fixture
def mixed_folder(tmp_path):
    """A folder of scenarios: one good, one with a syntax error."""
    mix = tmp_path / "mix"
    mix.mkdir()
    (mix / "saxpy.py").write_text((SCENARIOS / "saxpy.py").read_text())
    (mix / "broken.py").write_text(sorted(BAD.glob("*syntax*.py"))[0].read_text())
    return mix


def test_smoke_list_lists_every_file_and_marks_the_broken_one(cli, mixed_folder):
    code, out, err = cli("smoke", "--list", mixed_folder)
    assert code == 1, (code, err)  # as a smoke run reports the broken file: a failed scenario
    assert err == ""
    broken, good = out.splitlines()
    assert broken.startswith(f"{mixed_folder / 'broken.py'}  error: line ") and "syntax error" in broken
    # the row names the file; its error does not start with it again
    assert broken.split("  error: ", 1)[1].startswith("line 9, column 18: syntax error")
    assert good.startswith(f"{mixed_folder / 'saxpy.py'}   One SAXPY")


def test_smoke_list_json_marks_the_broken_one(cli, mixed_folder):
    import json

    code, out, err = cli("smoke", "--list", "--json", mixed_folder)
    assert code == 1, err
    broken, good = json.loads(out)
    assert broken["name"] == "broken" and "syntax error" in broken["error"]
    assert good["name"] == "saxpy" and "error" not in good and good["params"]["n"] > 0


@pytest.mark.parametrize("kind", ["file", "folder"])
@pytest.mark.parametrize("verb", ["capture", "smoke"])
def test_a_path_named_like_a_bundled_scenario_says_what_it_hides(cli, tmp_path, kind, verb):
    if kind == "file":
        (tmp_path / "saxpy").write_text("not a scenario\n")
    else:
        (tmp_path / "saxpy").mkdir()  # e.g. `capture saxpy -o saxpy` made it
    code, out, err = cli(verb, "saxpy")
    assert (code, out) == (2, ""), err
    assert f"saxpy: this {kind} is not a scenario (.py), and its name hides the bundled " \
           "scenario saxpy; to run that one, give its path:" in err
    bundled = err.rsplit("give its path: ", 1)[1].strip()
    assert Path(bundled).name == "saxpy.py" and (tmp_path / bundled).is_file()  # as given


@pytest.mark.parametrize("verb", ["replay", "dump"])
def test_a_pool_the_user_gives_is_not_blamed_on_the_record(cli, tmp_path, verb):
    # The record holds private; --pool async, given now, does not suit a torch scenario:
    # that is the option's error, not the record's.
    scenario = tmp_path / "tor.py"
    scenario.write_text((SCENARIOS / "torch_buckets.py").read_text())
    _write_record(tmp_path, json.dumps(
        {"scenario": str(scenario), "pool": "private", "error_mode": "global"}))
    code, out, err = cli(verb, "--pool", "async", *(["--out", "g.dot"] if verb == "dump" else []))
    assert code == 2 and err.startswith("accelgraph: error: --pool async is CuPy's"), err


@pytest.mark.parametrize("verb", ["replay", "dump"])
def test_a_bad_param_over_a_record_quotes_the_scenarios_own_defaults(cli, tmp_path, verb):
    # The record's values are applied first; an error about --param lists the keys with the
    # defaults the scenario declares, not the recorded values as "default".
    _write_record(tmp_path,
                  '{"scenario": "saxpy", "params": {"n": 4096, "a": 3.5}}')
    args = ["--out", "g.dot"] if verb == "dump" else []
    code, out, err = cli(verb, "--param", "nope=1", *args)
    assert code == 2 and "unknown key 'nope'" in err, err
    assert "n (int, default 1048576), a (float, default 0.5)" in err, err
    code, out, err = cli(verb, "--param", "a=x", *args)
    assert code == 2 and "like its default 0.5, got 'x'" in err, err
