"""The README documents every verb and every option, and its shell lines work: docs stay true
as the CLI grows (in the manner of sqlite-utils' tests/test_docs.py).

Every `accelgraph ...` line in the README runs here: lines that need no GPU must succeed; the
ones that capture must get as far as asking for a GPU (exit 3, not 2: the arguments are right).
The GPU tier (tests/gpu/test_readme.py) runs those for real.
"""

import json
import re
import subprocess

import pytest
import typer
from _paths import MANIFEST, ROOT, has_gpu, recorded
from _readme import (
    OTHER_LINES,
    README,
    accelgraph_lines,
    needs_gpu,
    ok_codes,
    prepare_workdir,
    shell_lines,
)

from accelgraph_cli.cli.app import app

ROOT_COMMAND = typer.main.get_command(app)
COMMANDS = ROOT_COMMAND.commands

# The README section that documents each verb.
SECTIONS = {"capture": "capture", "replay": "replay", "profile": "profile",
            "audit": "audit", "dump": "dump and show",
            "show": "dump and show", "diff": "diff", "scenarios": "scenarios", "smoke": "smoke"}


def section(verb: str) -> str:
    title = SECTIONS[verb]
    match = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^##)", README, re.DOTALL | re.MULTILINE)
    assert match, f"README has no '### {title}' section"
    return match.group(1)


def options(command):
    for param in command.params:
        for opt in list(getattr(param, "opts", [])) + list(getattr(param, "secondary_opts", [])):
            if opt.startswith("-") and opt not in ("--help", "-h"):
                yield param, opt


def test_readme_opens_with_the_two_setup_commands():
    first_block = README.split("```", 2)[1]
    assert "make demo" in first_block and "make test" in first_block


def test_readme_says_how_to_run_accelgraph_after_make():
    opening = README.split("## Install")[0]
    assert "`.venv/bin/accelgraph`" in opening
    assert "`source .venv/bin/activate`" in opening


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_verb_is_documented(name):
    assert re.search(rf"accelgraph {name}\b", README), f"README never shows `accelgraph {name}`"


@pytest.mark.parametrize(
    "name, option",
    sorted((name, opt) for name, command in COMMANDS.items() for _, opt in options(command)),
)
def test_every_option_is_documented_in_its_verbs_section(name, option):
    if option.startswith("--"):
        assert option in section(name), f"`accelgraph {name} {option}` is not in its README section"
    else:
        assert f"`{option}`" in README, f"the short flag {option} of `{name}` is not in the README"


@pytest.mark.parametrize("option", [opt for _, opt in options(ROOT_COMMAND)])
def test_every_top_level_option_is_documented(option):
    assert f"accelgraph {option}" in README


@pytest.mark.parametrize(
    "name, option, default",
    sorted(
        (name, opt, param.default)
        for name, command in COMMANDS.items()
        for param, opt in options(command)
        if opt.startswith("--") and isinstance(param.default, int) and not isinstance(param.default, bool)
        and param.opts[0] == opt
    ),
)
def test_numeric_defaults_are_stated_in_readme_and_help(name, option, default):
    assert re.search(rf"{option} {default}\b", section(name)), \
        f"README's {name} section does not state `{option} {default}`"
    help_text = " ".join(COMMANDS[name].get_help(typer.Context(COMMANDS[name], info_name=name)).split())
    assert re.search(rf"{option} .*?\[default: {default}\b", help_text), help_text


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_verb_has_help_text(name):
    assert (COMMANDS[name].help or "").strip(), f"{name} has no docstring"


def test_every_shell_line_is_accounted_for():
    others = {command for _, command in shell_lines() if not command.startswith("accelgraph ")}
    assert others == set(OTHER_LINES)
    wheel_check = (ROOT / ".ci" / "wheel-check").read_text()
    assert "make -s -C \"$work/src\" wheel" in wheel_check and "pip install" in wheel_check
    # and make wheel builds afresh: no build/ left from an earlier build
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nwheel:\n", 1)[1].split("\n\n", 1)[0]
    assert "rm -rf build" in recipe and recipe.index("rm -rf build") < recipe.index("pip wheel")


def test_the_smoke_help_explains_the_table_and_ctrl_c():
    help_text = " ".join(COMMANDS["smoke"].help.split())
    assert "drift: none / changed / new baseline with --baseline" in help_text
    assert "Ctrl-C stops at once (the scenario in flight is dropped)" in help_text
    assert "Ctrl-C stops at once (the scenario in flight is dropped)" in " ".join(README.split())


CPU_LINES = [(n, argv) for n, argv in accelgraph_lines() if not needs_gpu(argv)]
GPU_LINES = [(n, argv) for n, argv in accelgraph_lines() if needs_gpu(argv)]


def test_the_readme_has_lines_of_both_kinds():
    assert len(CPU_LINES) >= 5 and len(GPU_LINES) >= 8


@pytest.mark.parametrize("line, argv", CPU_LINES, ids=[" ".join(a) for _, a in CPU_LINES])
def test_readme_line_runs_without_a_gpu(cli, tmp_path, line, argv):
    prepare_workdir(tmp_path)
    code, out, err = cli(*argv)
    assert code in ok_codes(argv), f"README line {line}: accelgraph {' '.join(argv)}\n{err}"
    assert out.strip(), f"README line {line} printed nothing"


@pytest.mark.skipif(has_gpu(), reason="a GPU is present: the GPU tier runs these lines for real")
@pytest.mark.parametrize("line, argv", GPU_LINES, ids=[" ".join(a) for _, a in GPU_LINES])
def test_readme_gpu_line_is_well_formed(cli, tmp_path, line, argv):
    """Without a GPU, a line that captures gets past every argument check and stops at the
    GPU (exit 3); a wrong option or missing file would be exit 2."""
    prepare_workdir(tmp_path)
    record = tmp_path / ".accelgraph" / "last_capture.json"
    record.parent.mkdir()
    record.write_text(json.dumps({"scenario": str(tmp_path / "scenarios" / "mlp_decode.py"),
                                  "params": {}, "pool": "private", "error_mode": "global"}))
    code, out, err = cli(*argv)
    assert code == 3, f"README line {line}: accelgraph {' '.join(argv)}\n{err}"
    assert "need a CUDA GPU" in err
    if "--junit" in argv:
        report = (tmp_path / argv[argv.index("--junit") + 1]).read_text()
        assert report.count("<skipped message=") == len(list((tmp_path / "scenarios").glob("[!_]*.py")))


@pytest.mark.skipif(has_gpu(), reason="a GPU is present: make demo captures there")
def test_make_demo_without_a_gpu():
    up_to_date = subprocess.run(["make", "-q", ".venv/.installed"], cwd=ROOT, capture_output=True)
    if up_to_date.returncode != 0:
        pytest.skip("no up-to-date .venv here (make test makes one)")
    result = subprocess.run(["make", "-s", "demo"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("No CUDA GPU here: make demo captures, replays and dumps")
    recorded_kinds = json.loads(MANIFEST.read_text())["scenario_fork_join_verbose.dot"]["kinds"]
    assert recorded_kinds == {"kernel": 16}  # as make fixtures recorded it
    assert "Nodes          16  (kernel 16)" in result.stdout


def test_the_readme_example_of_saved_graphs_from_python_runs(tmp_path, monkeypatch, capsys):
    # The README's Python example, run as written on two recorded dumps named as it names
    # them: the names it imports exist at the top of the package, and its calls work.
    import gzip

    from accelgraph_cli.dot.parse import load_model

    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    (example,) = [block for block in blocks if "load_model(" in block]
    (tmp_path / "before.dot").write_bytes(recorded("forkjoin_verbose.dot").read_bytes())
    after = load_model(recorded("chain_verbose.dot")).to_json()
    (tmp_path / "after.json.gz").write_bytes(gzip.compress(json.dumps(after).encode()))
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(example, "README.md", "exec"), scope)
    assert scope["d"].identical is False and scope["report"]["identical"] is False
    assert capsys.readouterr().out.splitlines()[0] == "9 8"  # the fork/join: nodes, edges


def test_the_recorded_dumps_the_readme_names_exist():
    # "No GPU here?" points at recorded dumps by path: a re-recording must keep them.
    named = set(re.findall(r"tests/data/dumps/[\w.]+\.dot(?:\.gz)?", README))
    assert len(named) >= 2
    assert [name for name in sorted(named) if not (ROOT / name).is_file()] == []
