"""CPU tier: scenario files are inspected, loaded and parametrized without a GPU or CuPy.

The broken files under tests/bad_scenarios/ mark the line where their error is with a
comment containing ERROR-LINE, so these tests check that every message points there.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _paths import child_env

from accelgraph_cli import kernels
from accelgraph_cli.enums import ExitCode
from accelgraph_cli.errors import AccelgraphError
from accelgraph_cli.run.scenario import (
    Scenario,
    ScenarioError,
    format_params,
    inspect_scenario,
    load_scenario,
    parse_params,
)

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "scenarios"
BAD = Path(__file__).resolve().parent / "bad_scenarios"


def marked_line(path: Path, tag: str = "") -> int:
    """1-based line of the comment 'ERROR-LINE[ tag]' in ``path``."""
    marker = "ERROR-LINE" + (f" {tag}" if tag else "")
    lines = [n for n, text in enumerate(path.read_text().splitlines(), 1) if marker in text]
    assert len(lines) == 1, f"{path.name}: expected one {marker!r} marker, found {lines}"
    return lines[0]


def expect_error(call, path: Path, line: int | None) -> ScenarioError:
    with pytest.raises(ScenarioError) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message, f"message is not one line: {message!r}"
    assert path.name in message, message
    if line is not None:
        assert f"{path.name}:{line}" in message, message
        assert caught.value.line == line
        assert caught.value.path == str(path)  # the CLI and JSON report read these two
    return caught.value


# --------------------------------------------------------------------------- real scenarios

EXPECTED = {
    # name: (params, pool, error_mode, multi_graph, summary prefix)
    "elementwise_chain": ({"n": 1000, "size": 1024}, "private", "global", False,
                          "Launch-bound chain"),
    "saxpy": ({"n": 1048576, "a": 0.5}, "private", "global", False, "One SAXPY"),
    "mlp_decode": ({"batch": 8, "hidden": 1024}, "private", "global", False,
                   "Decode-step MLP"),
    "jacobi": ({"n": 512, "iterations": 20}, "private", "global", False, "Jacobi relaxation"),
    "fork_join": ({"branches": 4, "batch": 16, "hidden": 1024}, "private", "global", False,
                  "Fork/join across streams"),
    "memory_ops": ({"n": 65536}, "private", "global", False, "Memory nodes"),
    "stream_ordered_alloc": ({"rows": 256, "cols": 1024}, "async", "global", False,
                             "Stream-ordered allocation"),
    "buckets": ({"buckets": "64,32,16,8,1", "hidden": 1024}, "shared", "global", True,
                "Batch-size buckets"),
    "layernorm": ({"rows": 512, "cols": 768, "eps": 1e-05}, "private", "global", False,
                  "LayerNorm then softmax"),
    "gpt_decode": ({"batch": 8, "seq": 512, "dim": 1024, "heads": 16, "layers": 2}, "private",
                   "global", False, "GPT-style decode step in bf16"),
    "torch_buckets": ({"buckets": "256,128,64,32,16,8,4,2,1", "hidden": 1024}, "shared",
                      "global", True, "vLLM-style batch buckets in PyTorch"),
    "train_step": ({"batch": 64, "dim": 512, "hidden": 2048, "lr": 0.001}, "private", "global",
                   False, "A whole training step in PyTorch"),
}


def test_every_scenario_file_is_listed_here():
    found = sorted(p.stem for p in SCENARIOS.glob("*.py"))
    assert found == sorted(EXPECTED), "add new scenarios to EXPECTED with their defaults"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_inspect_real_scenario(name):
    params, pool, error_mode, multi_graph, summary = EXPECTED[name]
    info = inspect_scenario(SCENARIOS / f"{name}.py")
    assert info.name == name
    assert info.params == params
    assert [type(v) for v in info.params.values()] == [type(v) for v in params.values()]
    assert info.pool == pool
    assert info.error_mode == error_mode
    assert info.multi_graph is multi_graph
    assert info.has_outputs is True
    assert info.summary.startswith(summary)
    # The docstring explains the workload beyond its summary line, including its graph.
    assert len(info.doc.splitlines()) > 3 and "Graph" in info.doc
    assert info.line_of("setup") > 1


def test_inspect_does_not_execute_or_import(tmp_path):
    flag = tmp_path / "executed"
    path = tmp_path / "side_effect.py"
    path.write_text(textwrap.dedent(f'''\
        """Would write a file if executed."""
        import cupy_not_installed_here
        open({str(flag)!r}, "w").write("ran")
        PARAMS = {{"k": 2}}

        def setup(k):
            return {{}}

        def step(state):
            pass
        '''))
    info = inspect_scenario(path)
    assert info.params == {"k": 2}
    assert info.summary == "Would write a file if executed."
    assert not flag.exists()


def test_importing_scenario_and_kernels_does_not_import_cupy():
    """The CLI imports these on machines without a GPU; checked in a fresh interpreter."""
    code = (
        "import sys, accelgraph_cli.run.scenario as s, accelgraph_cli.kernels as k\n"
        "s.inspect_scenario('scenarios/mlp_decode.py')\n"
        "k.kernel_names('gemm.cu')\n"
        "assert 'cupy' not in sys.modules, 'cupy was imported'\n"
    )
    env = child_env(PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", code], check=False, cwd=REPO, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


UNCAPTURABLE_CALLS = ("asnumpy", "synchronize", "dot", "matmul", "random", "get")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_captured_code_avoids_host_syncs_and_cublas(name):
    """Outside setup(), scenarios must not sync the host, copy to it or call cuBLAS/cuRAND."""
    tree = ast.parse((SCENARIOS / f"{name}.py").read_text())
    for function in tree.body:
        if not isinstance(function, ast.FunctionDef) or function.name == "setup":
            continue
        for node in ast.walk(function):
            assert not isinstance(node, ast.MatMult), f"{name}.{function.name}: a @ b is cuBLAS"
            if isinstance(node, ast.Attribute) and node.attr in UNCAPTURABLE_CALLS:
                # dict.get(key) is fine; array.get() (a D2H copy) is not.
                parent_calls = [
                    c for c in ast.walk(function)
                    if isinstance(c, ast.Call) and c.func is node
                ]
                if node.attr == "get" and all(c.args for c in parent_calls):
                    continue
                pytest.fail(f"{name}.{function.name} line {node.lineno}: .{node.attr}")


# --------------------------------------------------------------------------- broken files

@pytest.mark.parametrize(
    "filename, expected_words",
    [
        ("syntax_error.py", ["syntax error", "expected ':'"]),
        ("both_step_and_steps.py", ["both step()", "steps()"]),
        ("nonliteral_params.py", ["PARAMS", "literal"]),
        ("params_not_a_dict.py", ["PARAMS", "literal dict"]),
        ("bad_param_value.py", ["PARAMS['shape']", "tuple", "int, float, bool or str"]),
        ("bad_pool.py", ["POOL", "'privte'", "'private', 'shared', 'async'"]),
        ("bad_error_mode.py", ["ERROR_MODE", "'strict'", "'global'"]),
        ("params_not_in_setup.py", ["'depth'", "setup()"]),
        ("step_without_state.py", ["step()", "one argument"]),
    ],
)
def test_inspect_reports_file_and_line(filename, expected_words):
    path = BAD / filename
    error = expect_error(lambda: inspect_scenario(path), path, marked_line(path))
    for word in expected_words:
        assert word in str(error)


def test_syntax_error_names_the_column():
    path = BAD / "syntax_error.py"
    error = expect_error(lambda: inspect_scenario(path), path, marked_line(path))
    assert f"syntax_error.py:{marked_line(path)}:" in str(error)
    # python's column for the missing ':' is after "def step(state)"
    column = int(str(error).split(":")[2])
    assert column >= len("def step(state)")


def test_no_step_and_no_setup_point_at_line_1_and_say_what_to_add():
    path = BAD / "no_step.py"
    error = expect_error(lambda: inspect_scenario(path), path, 1)
    assert "neither step(state) nor steps(state)" in str(error)
    path = BAD / "no_setup.py"
    error = expect_error(lambda: inspect_scenario(path), path, 1)
    assert "no setup()" in str(error)


def test_missing_file_directory_and_wrong_suffix(tmp_path):
    missing = tmp_path / "nope.py"
    error = expect_error(lambda: inspect_scenario(missing), missing, None)
    assert "no such file" in str(error)

    error = expect_error(lambda: inspect_scenario(tmp_path), tmp_path, None)
    assert "directory" in str(error)

    text = tmp_path / "notes.txt"
    text.write_text("PARAMS = {}\n")
    error = expect_error(lambda: inspect_scenario(text), text, None)
    assert "not a .py file" in str(error)

    binary = tmp_path / "latin1.py"
    binary.write_bytes(b'"""caf\xe9"""\n')
    error = expect_error(lambda: inspect_scenario(binary), binary, None)
    assert "UTF-8" in str(error)

    nulls = tmp_path / "nulls.py"
    nulls.write_bytes(b"PARAMS = {}\x00\n")
    expect_error(lambda: inspect_scenario(nulls), nulls, None)


def test_load_reports_the_failing_import_line():
    path = BAD / "import_error.py"
    inspect_scenario(path)  # the file itself is well-formed
    error = expect_error(lambda: load_scenario(path), path, marked_line(path))
    assert "ModuleNotFoundError" in str(error)
    assert "accelgraph_no_such_module_for_tests" in str(error)
    assert isinstance(error.__cause__, ModuleNotFoundError)
    assert "Traceback" in error.detail


def test_setup_and_step_exceptions_name_the_scenario_line():
    path = BAD / "setup_raises.py"
    scenario = load_scenario(path)
    error = expect_error(lambda: scenario.make_state(), path, marked_line(path, "setup"))
    assert "setup() raised ValueError: n must be at most 3, got 4" in str(error)

    state = scenario.make_state({"n": 2})
    assert state == {"n": 2}
    run = scenario.graph_steps(state)["step"]
    error = expect_error(run, path, marked_line(path, "step"))
    assert "step() raised KeyError" in str(error) and "'missing'" in str(error)


def test_steps_must_return_a_dict():
    path = BAD / "steps_not_a_dict.py"
    scenario = load_scenario(path)
    state = scenario.make_state()
    error = expect_error(lambda: scenario.graph_steps(state), path, marked_line(path))
    assert "returned list" in str(error)


def test_make_state_rejects_unknown_params():
    path = BAD / "setup_raises.py"
    scenario = load_scenario(path)
    with pytest.raises(ScenarioError, match=r"unknown parameter 'm'.*n \(int, default 4\)"):
        scenario.make_state({"m": 1})


# --------------------------------------------------------------------------- loading

GOOD = '''\
"""A CPU-only scenario for loader tests.

It has two graphs and outputs, and imports a helper module from its own folder.
"""
import helper_beside_scenario as helper

PARAMS = {"scale": 2, "label": "x"}
POOL = "shared"
ERROR_MODE = "default"


def setup(scale, label):
    return {"scale": scale, "label": label, "log": []}


def steps(state):
    return {
        "big": lambda: state["log"].append(("big", helper.twice(state["scale"]))),
        "small": lambda: state["log"].append(("small", state["scale"])),
    }


def outputs(state):
    return {"log": helper.FakeArray(state["log"])}
'''

HELPER = '''\
def twice(x):
    return 2 * x


class FakeArray(list):
    shape = (0,)
    dtype = "float32"
'''


@pytest.fixture
def good_scenario(tmp_path) -> Path:
    (tmp_path / "helper_beside_scenario.py").write_text(HELPER)
    path = tmp_path / "good.py"
    path.write_text(GOOD)
    return path


def test_load_multi_graph_scenario(good_scenario):
    scenario = load_scenario(good_scenario)
    assert isinstance(scenario, Scenario)
    assert scenario.name == "good"
    assert scenario.info.multi_graph and scenario.info.has_outputs
    assert scenario.info.pool == "shared"
    assert scenario.info.error_mode == "global"  # PyTorch's "default" is global mode
    assert scenario.params == {"scale": 2, "label": "x"}

    state = scenario.make_state(parse_params(scenario.params, ["scale=5"]))
    graphs = scenario.graph_steps(state)
    assert list(graphs) == ["big", "small"]  # capture order is the dict's order
    for run in graphs.values():
        run()
    assert state["log"] == [("big", 10), ("small", 5)]
    assert scenario.outputs(state) == {"log": [("big", 10), ("small", 5)]}


def test_each_load_is_a_fresh_module(good_scenario):
    first, second = load_scenario(good_scenario), load_scenario(good_scenario)
    assert first.module is not second.module
    assert first.module.__name__ != second.module.__name__
    assert first.setup is not second.setup


def test_single_graph_scenario_and_missing_outputs(tmp_path):
    path = tmp_path / "single.py"
    path.write_text('"""One graph."""\nPARAMS = {}\n\ndef setup():\n    return [0]\n\n'
                    "def step(state):\n    state[0] += 1\n")
    scenario = load_scenario(path)
    state = scenario.make_state()
    graphs = scenario.graph_steps(state)
    assert list(graphs) == ["step"]
    graphs["step"]()
    graphs["step"]()
    assert state == [2]
    assert scenario.outputs(state) == {}
    assert not scenario.info.has_outputs


def test_outputs_must_be_arrays(tmp_path):
    path = tmp_path / "outs.py"
    path.write_text('"""Bad outputs."""\ndef setup():\n    return {}\n\ndef step(state):\n'
                    "    pass\n\ndef outputs(state):\n    return {'y': 3}\n")
    scenario = load_scenario(path)
    error = expect_error(lambda: scenario.outputs({}), path, 8)
    assert "outputs()['y'] is int" in str(error)


def test_setup_parameter_missing_from_params(tmp_path):
    path = tmp_path / "missing_param.py"
    path.write_text('"""x"""\nPARAMS = {"a": 1}\n\ndef setup(a, b):\n    return {}\n\n'
                    "def step(state):\n    pass\n")
    error = expect_error(lambda: inspect_scenario(path), path, 4)
    assert "'b' has no default and is not in PARAMS" in str(error)


@pytest.mark.parametrize(
    "signature, accepted",
    [
        ("state", True),
        ("state=None", True),  # one positional, optional: still takes the state
        ("*a", True),  # varargs take it
        ("state, extra=1", True),
        ("state, *, flag=False", True),
        ("", False),
        ("state, extra", False),  # two required positionals
        ("*, state", False),  # keyword-only: the state is passed positionally
        ("state, *, flag", False),  # a required keyword-only parameter is never passed
        ("**kw", False),
    ],
)
def test_step_signature_must_take_the_state(tmp_path, signature, accepted):
    path = tmp_path / "sig.py"
    path.write_text(f'"""x"""\nPARAMS = {{}}\n\ndef setup():\n    return {{}}\n\n'
                    f"def step({signature}):\n    pass\n")
    if accepted:
        assert inspect_scenario(path).name == "sig"
    else:
        error = expect_error(lambda: inspect_scenario(path), path, 7)
        assert str(error) == (
            f"{path}:7: step() must take exactly one argument, the state setup() returned: "
            "def step(state)"
        )


def test_setup_with_kwargs_accepts_any_params(tmp_path):
    path = tmp_path / "kwargs.py"
    path.write_text('"""x"""\nPARAMS = {"a": 1, "b": "s"}\n\ndef setup(**params):\n'
                    "    return params\n\ndef step(state):\n    pass\n")
    scenario = load_scenario(path)
    assert scenario.make_state({"b": "t"}) == {"a": 1, "b": "t"}


def test_scenario_error_is_a_cli_error_with_exit_code_2():
    error = ScenarioError("x.py:3: bad")
    assert isinstance(error, AccelgraphError)
    assert error.exit_code == ExitCode.BAD_INPUT == 2


# --------------------------------------------------------------------------- kernel sources
# kernels.py compiles with CuPy on the GPU; finding and listing sources needs no GPU.


def test_kernel_sources_export_the_kernels_the_wrappers_launch():
    assert kernels.kernel_names("gemm.cu") == [
        "sgemm_tiled", "sgemm_skinny_1", "sgemm_skinny_2", "sgemm_skinny_4", "sgemm_skinny_8",
        "sgemm_skinny_16", "sgemm_splitk_reduce", "sgemm_128x128", "bias_gelu", "bias_gelu4"]
    assert kernels.kernel_names("saxpy.cu") == ["saxpy", "saxpy4"]
    assert kernels.kernel_names("elementwise.cu") == ["add_mod1", "add_mod1_4", "axpby", "axpby4"]
    assert kernels.kernel_names("softmax.cu") == [
        "softmax_rows", "sgemm_splitk_reduce_softmax", "layernorm_rows", "softmax_rows_warp",
        "layernorm_rows_warp"]
    assert kernels.kernel_names("stencil.cu") == ["jacobi_step", "jacobi_step4"]
    assert kernels.kernels_dir() == REPO / "kernels"


def test_the_wrappers_constants_match_the_kernel_sources():
    # Sizes the launch wrappers decide with, against the #defines of the kernels they launch.
    import re

    from accelgraph_cli.cuda import kernels as launch

    def define(filename, name):
        text = (REPO / "kernels" / filename).read_text()
        return int(re.search(rf"^#define {name} (\d+)", text, re.MULTILINE).group(1))

    assert launch._ROW_BLOCK == define("softmax.cu", "ROW_BLOCK")
    assert launch._SOFTMAX_FUSED_COLS == 4 * define("softmax.cu", "ROW_BLOCK") * define(
        "softmax.cu", "REDUCE_VECS")
    assert launch._SKINNY_COLS == define("gemm.cu", "SK_COLS")
    assert launch._GEMM_TILE == define("gemm.cu", "GEMM_TILE")


def test_every_kernel_a_scenario_preloads_exists():
    sources = {p.name for p in (REPO / "kernels").glob("*.cu")}
    for path in SCENARIOS.glob("*.py"):
        for call in ast.walk(ast.parse(path.read_text())):
            if isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "preload":
                named = {arg.value for arg in call.args}
                assert named <= sources, f"{path.name} preloads {named - sources}"


def test_kernels_dir_override_and_missing_source(tmp_path, monkeypatch):
    (tmp_path / "mine.cu").write_text('extern "C" __global__ void twice(float* x) {}\n')
    monkeypatch.setenv(kernels.KERNELS_DIR_ENV, str(tmp_path))
    assert kernels.kernels_dir() == tmp_path.resolve()
    assert kernels.kernel_names("mine.cu") == ["twice"]
    with pytest.raises(kernels.KernelError, match=r"nope\.cu: no such kernel source.*mine\.cu"):
        kernels.kernel_source("nope.cu")
    # a folder that does not exist is named as such, with what chose it
    monkeypatch.setenv(kernels.KERNELS_DIR_ENV, str(tmp_path / "gone"))
    with pytest.raises(kernels.KernelError) as info:
        kernels.kernel_source("softmax.cu")
    assert str(info.value) == (f"{tmp_path / 'gone' / 'softmax.cu'}: no such kernel source; the "
                               f"folder {tmp_path / 'gone'} does not exist "
                               f"({kernels.KERNELS_DIR_ENV} names it)")


# --------------------------------------------------------------------------- parse_params

DEFAULTS = {"batch": 8, "lr": 0.5, "fused": True, "buckets": "64,32"}


@pytest.mark.parametrize(
    "override, key, value",
    [
        ("batch=16", "batch", 16),
        ("batch= 16 ", "batch", 16),
        ("batch=-3", "batch", -3),
        ("batch=1_000", "batch", 1000),
        ("batch=0x10", "batch", 16),
        ("batch=08", "batch", 8),
        ("lr=0.25", "lr", 0.25),
        ("lr=1e-3", "lr", 0.001),
        ("lr=3", "lr", 3.0),
        ("fused=false", "fused", False),
        ("fused=No", "fused", False),
        ("fused=0", "fused", False),
        ("fused=off", "fused", False),
        ("fused=TRUE", "fused", True),
        ("fused=yes", "fused", True),
        ("fused=1", "fused", True),
        ("fused=on", "fused", True),
        ("fused= On ", "fused", True),
        ("batch=0b101", "batch", 5),
        ("batch=0o17", "batch", 15),
        ("batch=-0x10", "batch", -16),
        ("buckets= a b ", "buckets", " a b "),
        ("buckets=16,8,1", "buckets", "16,8,1"),
        ("buckets=a=b", "buckets", "a=b"),
        ("buckets=", "buckets", ""),
    ],
)
def test_parse_params_types(override, key, value):
    params = parse_params(DEFAULTS, [override])
    assert params == {**DEFAULTS, key: value}
    assert list(params) == list(DEFAULTS)  # the defaults' order, whatever was overridden
    assert type(params[key]) is type(DEFAULTS[key])
    assert DEFAULTS == {"batch": 8, "lr": 0.5, "fused": True, "buckets": "64,32"}  # not modified


def test_parse_params_does_not_mutate_defaults_and_last_wins():
    defaults = dict(DEFAULTS)
    params = parse_params(defaults, ["batch=1", "batch=2"])
    assert params["batch"] == 2
    assert defaults == DEFAULTS
    assert parse_params(defaults, []) == DEFAULTS


def test_parse_params_unknown_key_lists_known_keys():
    with pytest.raises(ScenarioError) as caught:
        parse_params(DEFAULTS, ["bach=4"])
    message = str(caught.value)
    assert "unknown key 'bach'" in message
    for key in DEFAULTS:
        assert key in message


@pytest.mark.parametrize(
    "override, words",
    [
        ("batch=eight", ["batch", "an int", "'eight'"]),
        ("batch=1.5", ["batch", "an int", "'1.5'"]),
        ("lr=fast", ["lr", "a finite float", "'fast'"]),
        ("fused=maybe", ["fused", "a bool", "'maybe'"]),
    ],
)
def test_parse_params_bad_value(override, words):
    with pytest.raises(ScenarioError) as caught:
        parse_params(DEFAULTS, [override])
    for word in words:
        assert word in str(caught.value)


@pytest.mark.parametrize("override", ["batch", "=4", ""])
def test_parse_params_needs_key_equals_value(override):
    with pytest.raises(ScenarioError, match="expected KEY=VALUE"):
        parse_params(DEFAULTS, [override])


def test_format_params_round_trips():
    text = format_params(DEFAULTS)
    assert text == "batch=8 lr=0.5 fused=True buckets=64,32"
    assert parse_params(DEFAULTS, text.split()) == DEFAULTS


STEPS_HEAD = '"""x"""\ndef setup():\n    return {}\n\ndef steps(state):\n'


@pytest.mark.parametrize(
    "returned, problem",
    [
        ("{'a': 1}", "steps() entry 'a' -> 1 is not str -> callable; map each graph name to a "
                     "function of no arguments"),
        ("{2: print}", "steps() entry 2 -> <built-in function print> is not str -> callable; map each "
                       "graph name to a function of no arguments"),
        ("{}", "steps() returned dict; return a non-empty dict {graph name: callable taking no "
               "arguments}"),
    ],
)
def test_steps_entries_must_be_named_callables(tmp_path, returned, problem):
    path = tmp_path / "multi.py"
    path.write_text(STEPS_HEAD + f"    return {returned}\n")
    scenario = load_scenario(path)
    error = expect_error(lambda: scenario.graph_steps({}), path, 5)
    assert str(error) == f"{path}:5: {problem}"


def test_steps_and_outputs_errors_name_the_call_that_raised(tmp_path):
    path = tmp_path / "raising.py"
    path.write_text(STEPS_HEAD + "    return {'a': lambda: 1 / 0}\n\n"
                    "def outputs(state):\n    return {'y': state['missing']}\n")
    scenario = load_scenario(path)
    graphs = scenario.graph_steps({})
    error = expect_error(graphs["a"], path, 6)
    assert str(error).startswith(f"{path}:6: steps()['a'] raised ZeroDivisionError")
    error = expect_error(lambda: scenario.outputs({}), path, 9)
    assert str(error).startswith(f"{path}:9: outputs() raised KeyError")


@pytest.mark.parametrize(
    "returned, problem",
    [
        ("[1]", "outputs() returned list; return a dict {name: cupy array}"),
        # (the key named: "returned dict; return a dict" did not say what was wrong)
        ("{1: 2}", "outputs() returned a dict with the key 1 (int); name each output with a str"),
        ("{'y': type('A', (), {'shape': (1,)})()}", "outputs()['y'] is A, not an array; return device "
                                                    "arrays"),
        # (an internal error in the compare, exit 70, before)
        ("{'y': __import__('numpy').array([None, 1])}",
         "outputs()['y'] holds Python objects (dtype object), which replay cannot reproduce nor "
         "the check compare; return arrays of numbers"),
        ("{'y': __import__('numpy').array(['a'])}",
         "outputs()['y'] holds text (dtype <U1), which replay cannot reproduce nor the check "
         "compare; return arrays of numbers"),
        ("{'y': __import__('numpy').array(['2026-12-08'], dtype='datetime64[D]')}",
         "outputs()['y'] holds dates (dtype datetime64[D]), which replay cannot reproduce nor "
         "the check compare; return arrays of numbers"),
    ],
)
def test_outputs_must_be_a_dict_of_arrays(tmp_path, returned, problem):
    path = tmp_path / "outs.py"
    path.write_text('"""x"""\ndef setup():\n    return {}\n\ndef step(state):\n    pass\n\n'
                    f"def outputs(state):\n    return {returned}\n")
    scenario = load_scenario(path)
    error = expect_error(lambda: scenario.outputs({}), path, 8)
    assert str(error) == f"{path}:8: {problem}"


def test_a_byte_order_mark_is_python_and_so_is_a_scenario(tmp_path):
    # Some editors save UTF-8 with a BOM; Python (py_compile) accepts it, so must we.
    path = tmp_path / "bom.py"
    path.write_bytes(b'\xef\xbb\xbf"""With a BOM."""\r\nimport cupy\r\n\r\n'
                     b"def setup():\r\n    return {}\r\n\r\ndef step(state):\r\n    pass\r\n")
    info = inspect_scenario(path)
    assert info.summary == "With a BOM." and not info.multi_graph


@pytest.mark.parametrize("binding, name", [("step = None", "step"), ("setup = 5", "setup"),
                                           ("outputs = 'y'", "outputs")])
def test_a_contract_name_bound_to_a_constant_is_refused(tmp_path, binding, name):
    body = {"setup": "def setup():\n    return {}\n", "step": "def step(state):\n    pass\n",
            "outputs": ""}
    body[name] = binding + "\n"
    path = tmp_path / "const.py"
    path.write_text('"""Doc."""\n' + "".join(body.values()))
    with pytest.raises(ScenarioError, match=f"const.py:\\d+: {name} is bound to .*, not a "
                       f"function; define it with def {name}"):
        inspect_scenario(path)


def test_a_positional_only_setup_parameter_named_in_params_says_so(tmp_path):
    path = tmp_path / "posonly.py"
    path.write_text('"""Doc."""\nPARAMS = {"n": 4}\n\ndef setup(n, /, *args):\n    return {}\n\n'
                    "def step(state):\n    pass\n")
    with pytest.raises(ScenarioError, match="setup\\(\\) parameter 'n' is positional-only"):
        inspect_scenario(path)


def test_outputs_none_is_a_scenario_without_outputs_not_an_error(tmp_path):
    path = tmp_path / "fallback.py"
    path.write_text('"""Doc."""\ntry:\n    from helpers import outputs\nexcept ImportError:\n'
                    "    outputs = None\n\ndef setup():\n    return {}\n\ndef step(state):\n"
                    "    pass\n")
    inspect_scenario(path)  # as loading takes it: no outputs
    # and once it has run: no outputs (has_outputs stayed True, so replay ran the check, which
    # said "not run", exit 1, and smoke failed the scenario)
    loaded = load_scenario(path)
    assert loaded.outputs_fn is None and not loaded.info.has_outputs
    path.write_text('"""Doc."""\nstep: object = None\n\ndef setup():\n    return {}\n')
    with pytest.raises(ScenarioError, match="step is bound to None, not a function"):
        inspect_scenario(path)


@pytest.mark.parametrize("params, words", [
    ('{"n": {[1]: 2}}', "PARAMS holds an expression"),
    ('{"n": {[1], 2}}', "PARAMS holds an expression"),
])
def test_unhashable_params_values_are_a_scenario_error(tmp_path, params, words):
    # ast.literal_eval raises TypeError for a set or dict with a list in it: that was an
    # internal error (exit 70), not the file's one-line error.
    path = tmp_path / "unhashable.py"
    path.write_text(f"PARAMS = {params}\n\ndef setup(n):\n    return {{}}\n\n\ndef step(state):\n"
                    "    pass\n")
    error = expect_error(lambda: inspect_scenario(path), path, 1)
    assert words in str(error)


def test_an_expression_too_deep_to_check_is_a_scenario_error(tmp_path):
    # Python runs a line of 1,000 additions; compiling its syntax tree, as the checks do,
    # needs more depth (RecursionError: an internal error, exit 70, before).
    path = tmp_path / "deep.py"
    path.write_text("def setup():\n    return {}\n\n\ndef step(state):\n    a = 1\n"
                    f"    x = {'+'.join(['a'] * 1000)}\n")
    error = expect_error(lambda: inspect_scenario(path), path, None)
    assert str(error) == (f"{path}: an expression is nested or chained too deeply to check (a "
                          "thousand levels or more); split it into smaller ones")


def test_an_infinite_params_default_is_a_scenario_error(tmp_path):
    # `scenarios --json` printed Infinity, which no strict JSON parser reads.
    path = tmp_path / "inf.py"
    path.write_text('PARAMS = {"x": 1e999}\n\ndef setup(x):\n    return {}\n\n\ndef step(state):\n'
                    "    pass\n")
    error = expect_error(lambda: inspect_scenario(path), path, 1)
    assert str(error).endswith("PARAMS['x'] is inf; use a finite number")


def test_a_named_pipe_is_not_read_as_a_scenario(tmp_path):
    # `capture pipe.py` waited for a writer for ever.
    import os

    path = tmp_path / "pipe.py"
    os.mkfifo(path)
    error = expect_error(lambda: inspect_scenario(path), path, None)
    assert str(error) == f"{path}: not a regular file; a scenario is a Python file"


def test_a_long_chained_params_value_is_quoted_short(tmp_path):
    # 500 chained additions in PARAMS: too deep for literal_eval, and ast.unparse, which
    # quoted it in the message, recursed too deep as well (internal error, exit 70).
    path = tmp_path / "chained.py"
    path.write_text(f"PARAMS = {{'x': {'+'.join(['1'] * 500)}}}\n\ndef setup(x):\n    return {{}}\n"
                    "\n\ndef step(state):\n    pass\n")
    error = expect_error(lambda: inspect_scenario(path), path, 1)
    assert "PARAMS holds an expression ('x': " in str(error) and len(str(error)) < 400
