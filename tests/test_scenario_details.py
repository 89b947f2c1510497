"""CPU tier: the scenario loader's details, each pinned exactly.

What a scenario file declares (read statically), the whole text of every error with its
``path`` and ``line`` (the CLI and the JSON report read those two), and what loading does
to ``sys.path``, ``sys.modules`` and the module it builds. Scenario files are written to
tmp_path; nothing here needs a GPU, CuPy or torch.
"""

from __future__ import annotations

import errno
import pathlib
import re
import sys
import textwrap
import traceback
import uuid
from pathlib import Path

import pytest

from accelgraph_cli.enums import Backend, CaptureErrorMode, PoolKind
from accelgraph_cli.run.scenario import (
    ScenarioError,
    inspect_scenario,
    load_scenario,
    located_error,
    parse_params,
)

TAIL = "def setup():\n    return {}\n\n\ndef step(state):\n    pass\n"


def write(tmp_path: Path, text: str, name: str = "s.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def error_of(call) -> ScenarioError:
    with pytest.raises(ScenarioError) as caught:
        call()
    return caught.value


def check(error: ScenarioError, message: str, path: Path | str | None, line: int | None):
    """The whole message, and the path and line the error carries."""
    assert str(error) == message
    assert error.path == (None if path is None else str(path))
    assert error.line == line


# --------------------------------------------------------------------------- inspect: errors

CHOICES = "'private', 'shared', 'async'"
MODES = "'default', 'global', 'thread_local', 'relaxed'"
EXAMPLE = 'PARAMS = {"batch": 8, "hidden": 1024}'


@pytest.mark.parametrize("head, line, problem", [
    ("POOL = 'privte'\n", 1,
     f"POOL = 'privte' is not one of {CHOICES}; use one of those (or remove POOL to get "
     "'private')"),
    ("x = 1\nPOOL = 3\n", 2, f"POOL must be a string literal, one of {CHOICES}"),
    ("POOL = shared_pool\n", 1, f"POOL must be a string literal, one of {CHOICES}"),
    ("POOL: str = 'shared'\nPOOL += 'x'\n", 2, f"POOL must be a string literal, one of {CHOICES}"),
    ("def POOL():\n    pass\n", 1, f"POOL must be a string literal, one of {CHOICES}"),
    ("ERROR_MODE = 'strict'\n", 1,
     f"ERROR_MODE = 'strict' is not one of {MODES}; use one of those (or remove ERROR_MODE to "
     "get 'global')"),
    ("\nERROR_MODE = None\n", 2, f"ERROR_MODE must be a string literal, one of {MODES}"),
    ("EXPECT_EMPTY = 'step'\n", 1,
     "EXPECT_EMPTY must be True, False, or a literal list of graph names"),
    ("EXPECT_EMPTY = ['a', 1]\n", 1,
     "EXPECT_EMPTY must be True, False, or a literal list of graph names"),
    ("x = 2\ndef EXPECT_EMPTY():\n    pass\n", 2,
     "EXPECT_EMPTY must be True, False, or a literal list of graph names"),
    ("import cupy\nimport torch.nn\n", 1,
     'imports both torch and cupy; say which one the step launches its work with: '
     'BACKEND = "torch" or BACKEND = "cupy"'),
    ("from torch import nn\nfrom cupy.cuda import runtime\n", 1,
     'imports both torch and cupy; say which one the step launches its work with: '
     'BACKEND = "torch" or BACKEND = "cupy"'),
    ("import torch\n\nPOOL = 'async'\n", 3,
     "POOL = 'async' is CuPy's stream-ordered allocator; a torch scenario's graphs allocate "
     "from torch's caching allocator: use 'private' or 'shared'"),
    ("PARAMS = make_params()\n", 1,
     f"PARAMS must be assigned a literal dict such as {EXAMPLE}, written out in the file "
     "(no names, calls or comprehensions)"),
    ("def PARAMS():\n    pass\n", 1,
     f"PARAMS must be assigned a literal dict such as {EXAMPLE}, written out in the file "
     "(no names, calls or comprehensions)"),
    ("BASE = {}\nPARAMS = {\n    'a': 1,\n    **BASE,\n}\n", 4,
     f"PARAMS cannot use ** unpacking; write every key out, e.g. {EXAMPLE}"),
    ("PARAMS = {'n': 2 ** 3}\n", 1,
     f"PARAMS holds an expression ('n': 2 ** 3); use literal keys and values only, e.g. "
     f"{EXAMPLE}"),
    ("PARAMS = {\n    'class': 1}\n", 2,
     "PARAMS key 'class' is not a valid parameter name; use identifier strings (they become "
     "setup()'s keyword arguments)"),
    ("PARAMS = {1: 2}\n", 1,
     "PARAMS key 1 is not a valid parameter name; use identifier strings (they become "
     "setup()'s keyword arguments)"),
    ("PARAMS = {'a b': 2}\n", 1,
     "PARAMS key 'a b' is not a valid parameter name; use identifier strings (they become "
     "setup()'s keyword arguments)"),
    # The line of an entry is its key's, where key and value are on different lines.
    ("PARAMS = {\n    'shape':\n        (2, 3),\n}\n", 2,
     "PARAMS['shape'] is tuple (2, 3); use an int, float, bool or str literal "
     "(--param shape=... parses to its type)"),
    ("PARAMS = {\n    'n': 1,\n    'n': 2,\n}\n", 3, "PARAMS lists 'n' twice; keep one"),
])
def test_declaration_errors_name_the_file_line_and_fix(tmp_path, head, line, problem):
    path = write(tmp_path, head + "\n\n" + TAIL)
    check(error_of(lambda: inspect_scenario(path)), f"{path}:{line}: {problem}", path, line)


# setup's own line in the tail below is 3 (after a one-line PARAMS and a blank line).
@pytest.mark.parametrize("params, setup, problem", [
    ("{}", "def setup(a, /):", "setup() parameter 'a' is positional-only; setup is called with "
                               "keywords (setup(**params)), so remove the '/'"),
    ("{}", "def setup(*, n):", "setup() parameter 'n' has no default and is not in PARAMS; add "
                               "'n' to PARAMS (or give it a default)"),
    ("{'a': 1}", "def setup(a, b, c=3):", "setup() parameter 'b' has no default and is not in "
                                          "PARAMS; add 'b' to PARAMS (or give it a default)"),
])
def test_setup_signature_errors_point_at_setup(tmp_path, params, setup, problem):
    path = write(tmp_path, f"PARAMS = {params}\n\n{setup}\n    return {{}}\n\n"
                           "def step(state):\n    pass\n")
    check(error_of(lambda: inspect_scenario(path)), f"{path}:3: {problem}", path, 3)


@pytest.mark.parametrize("params, setup", [
    ("{'a': 1}", "def setup(a, b=2):"),  # b has a default: not required
    ("{'n': 1}", "def setup(*, n, m=2):"),  # keyword-only, one with a default
    ("{'n': 1, 'm': 5}", "def setup(n, *, m):"),
    ("{}", "def setup(*, m=2):"),
])
def test_setup_signatures_that_fit_params_are_accepted(tmp_path, params, setup):
    path = write(tmp_path, f"PARAMS = {params}\n\n{setup}\n    return {{}}\n\n"
                           "def step(state):\n    pass\n")
    assert inspect_scenario(path).params == eval(params)  # noqa: S307 (a literal of this test)


@pytest.mark.parametrize("name, code, problem", [
    ("setup", "async def setup():\n    return {}\n\ndef step(state):\n    pass\n",
     "setup() is async; make it a plain def (CUDA work is enqueued synchronously on the "
     "current stream)"),
    ("step", "def setup():\n    return {}\n\nasync def step(state):\n    pass\n",
     "step() is async; make it a plain def (CUDA work is enqueued synchronously on the "
     "current stream)"),
    ("steps", "def setup():\n    return {}\n\nasync def steps(state):\n    pass\n",
     "steps() is async; make it a plain def (CUDA work is enqueued synchronously on the "
     "current stream)"),
    ("outputs", TAIL + "\nasync def outputs(state):\n    pass\n",
     "outputs() is async; make it a plain def (CUDA work is enqueued synchronously on the "
     "current stream)"),
    ("setup", "class setup:\n    pass\n\ndef step(state):\n    pass\n",
     "setup is a class; define it as a function"),
    ("step", "def setup():\n    return {}\n\nclass step:\n    pass\n",
     "step is a class; define it as a function"),
    ("steps", "def setup():\n    return {}\n\nclass steps:\n    pass\n",
     "steps is a class; define it as a function"),
    ("outputs", TAIL + "\nclass outputs:\n    pass\n", "outputs is a class; define it as a function"),
    ("steps", "def setup():\n    return {}\n\ndef steps():\n    pass\n",
     "steps() must take exactly one argument, the state setup() returned: def steps(state)"),
    ("outputs", TAIL + "\ndef outputs(state, other):\n    pass\n",
     "outputs() must take exactly one argument, the state setup() returned: def outputs(state)"),
])
def test_contract_functions_must_be_plain_functions_of_the_state(tmp_path, name, code, problem):
    path = write(tmp_path, code)
    line = [n for n, text in enumerate(code.splitlines(), 1)
            if re.match(rf"(async def|def|class) {name}\b", text)][0]
    check(error_of(lambda: inspect_scenario(path)), f"{path}:{line}: {problem}", path, line)


def test_file_errors_carry_the_path_and_no_line(tmp_path, monkeypatch):
    missing = tmp_path / "nope.py"
    check(error_of(lambda: inspect_scenario(missing)),
          f"{missing}: no such file; pass the path of a scenario .py file (e.g. "
          "scenarios/saxpy.py)", missing, None)
    check(error_of(lambda: inspect_scenario(tmp_path)),
          f"{tmp_path}: is a directory; pass one scenario .py file (smoke takes a directory)",
          tmp_path, None)
    text = write(tmp_path, "PARAMS = {}\n", "notes.txt")
    check(error_of(lambda: inspect_scenario(text)),
          f"{text}: not a .py file; a scenario is a Python file defining setup() and step()",
          text, None)
    latin1 = tmp_path / "latin1.py"
    latin1.write_bytes(b'"""caf\xe9"""\n')
    check(error_of(lambda: inspect_scenario(latin1)),
          f"{latin1}: not UTF-8 text (invalid continuation byte at byte 6); save it as UTF-8",
          latin1, None)
    nulls = tmp_path / "nulls.py"
    nulls.write_bytes(b"PARAMS = {}\x00\n")
    if sys.version_info >= (3, 11, 4):  # ast.parse raises SyntaxError with no line number
        check(error_of(lambda: inspect_scenario(nulls)),
              f"{nulls}:1: syntax error: source code string cannot contain null bytes; fix it "
              f"(python -m py_compile {nulls} reports the same)", nulls, 1)
    else:  # ValueError
        check(error_of(lambda: inspect_scenario(nulls)),
              f"{nulls}: contains null bytes, so it is not Python source; save it as text",
              nulls, None)

    locked = write(tmp_path, TAIL, "locked.py")

    def refuse(self, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(pathlib.Path, "read_text", refuse)
    check(error_of(lambda: inspect_scenario(locked)),
          f"{locked}: cannot be read (Permission denied); check its permissions", locked, None)


def test_a_syntax_error_names_line_and_column(tmp_path):
    path = write(tmp_path, "x = 1\nPARAMS = {'a': }\n")
    check(error_of(lambda: inspect_scenario(path)),
          f"{path}:2:14: syntax error: expression expected after dictionary key and ':'; fix it "
          f"(python -m py_compile {path} reports the same)", path, 2)


@pytest.mark.parametrize("statement, column, problem", [
    ("return 1", 1, "'return' outside function"),
    ("yield 2", 1, "'yield' outside function"),
    ("nonlocal x", 1, "nonlocal declaration not allowed at module level"),
    # As `python` says it: not the message of a file with postponed annotations.
    ("x: (yield)", 5, "'yield' outside function"),
])
def test_what_parses_but_does_not_compile_is_refused_by_inspect(tmp_path, statement, column,
                                                                 problem):
    """Found before loading (on a machine without a GPU), as a syntax error of the file."""
    path = write(tmp_path, TAIL + "\n" + statement + "\n")
    error = error_of(lambda: inspect_scenario(path))
    check(error, f"{path}:8:{column}: syntax error: {problem}; fix it "
                 f"(python -m py_compile {path} reports the same)", path, 8)
    check(error_of(lambda: load_scenario(path)), str(error), path, 8)


def test_a_syntax_warning_while_inspecting_names_the_scenario_file(tmp_path):
    path = write(tmp_path, 'PATTERN = "\\d+"\n' + TAIL)
    # A DeprecationWarning before Python 3.12, a SyntaxWarning from 3.12 on.
    with pytest.warns((DeprecationWarning, SyntaxWarning)) as warned:
        inspect_scenario(path)
    assert [(w.filename, w.lineno) for w in warned] == [(str(path), 1)]


def test_inspect_errors_have_no_detail_text():
    assert ScenarioError("x.py:1: bad").detail == ""
    error = ScenarioError("x.py:1: bad\nmore", path="x.py", line=1)
    assert (str(error), error.path, error.line, error.detail) == (
        "x.py:1: bad [+1 more lines]", "x.py", 1, "")


# --------------------------------------------------------------------------- inspect: values

def test_a_file_without_a_docstring_has_an_empty_summary_and_doc(tmp_path):
    path = write(tmp_path, TAIL)
    info = inspect_scenario(path)
    assert (info.summary, info.doc) == ("", "")
    assert (info.pool, info.error_mode, info.params) == (PoolKind.PRIVATE,
                                                         CaptureErrorMode.GLOBAL, {})
    assert info.expect_empty is False
    assert info.line_of("outputs") == 1  # not defined: line 1
    assert info.definitions == {"setup": 1, "step": 5}


def test_the_summary_is_the_first_non_blank_line_of_the_docstring(tmp_path):
    path = write(tmp_path, '"""\n\n   Title line.  \nMore text.\n"""\n' + TAIL)
    info = inspect_scenario(path)
    assert info.summary == "Title line."
    assert info.doc == "   Title line.  \nMore text."


@pytest.mark.parametrize("value, expected", [
    ("True", True),
    ("False", False),
    ("['big', 'small']", ("big", "small")),
    ("('big',)", ("big",)),
    ("[]", ()),
])
def test_expect_empty_values(tmp_path, value, expected):
    # graph names are a steps(state) file's keys (a step(state) file has one graph, 'step')
    tail = TAIL.replace("def step(state)", "def steps(state)")
    path = write(tmp_path, f"EXPECT_EMPTY = {value}\n" + tail)
    info = inspect_scenario(path)
    assert info.expect_empty == expected
    assert type(info.expect_empty) is type(expected)
    assert info.definitions["EXPECT_EMPTY"] == 1


@pytest.mark.parametrize("imports, packages, backend", [
    ("from torch.nn import functional\n", {"torch"}, Backend.TORCH),
    ("import cupy.cuda.runtime as rt, numpy\n", {"cupy", "numpy"}, Backend.CUPY),
    ("from . import helper\nfrom .torch import x\n", set(), Backend.CUPY),
    ("def later():\n    import torch.cuda\n", {"torch"}, Backend.TORCH),
])
def test_imports_and_the_backend_they_imply(tmp_path, imports, packages, backend):
    path = write(tmp_path, imports + TAIL)
    info = inspect_scenario(path)
    assert info.imports == frozenset(packages)
    assert info.backend is backend


def test_params_are_read_in_file_order_with_their_types(tmp_path):
    path = write(tmp_path, "PARAMS: dict = {\n    'n': 8,\n    'lr': 1e-3,\n    'on': True,\n"
                           "    'act': 'gelu',\n    'neg': -2,\n}\n\n"
                           "def setup(n, lr, on, act, neg):\n    return {}\n\n"
                           "def step(state):\n    pass\n")
    info = inspect_scenario(path)
    assert list(info.params.items()) == [("n", 8), ("lr", 0.001), ("on", True),
                                         ("act", "gelu"), ("neg", -2)]
    assert [type(v) for v in info.params.values()] == [int, float, bool, str, int]
    assert info.definitions == {"PARAMS": 1, "setup": 9, "step": 12}


def test_declarations_are_found_in_top_level_blocks(tmp_path):
    path = write(tmp_path, """\
        import os
        if os.environ.get("NEVER"):
            pass
        else:
            ERROR_MODE = "thread_local"
        try:
            import setup.tools
        except ImportError:
            POOL = "shared"
        else:
            pass
        finally:
            EXPECT_EMPTY = True
        with open(os.devnull) as f:
            step, other = (lambda state: None), 1
        """)
    info = inspect_scenario(path)
    assert info.definitions == {"POOL": 9, "ERROR_MODE": 5, "setup": 7, "EXPECT_EMPTY": 13,
                                "step": 15}
    assert (info.pool, info.error_mode, info.expect_empty) == (PoolKind.SHARED,
                                                                CaptureErrorMode.THREAD_LOCAL,
                                                                True)


@pytest.mark.parametrize("name, first, second", [
    ("ERROR_MODE", '"relaxed"', '"thread_local"'),
    ("POOL", '"private"', '"shared"'),
    ("PARAMS", "{'a': 1}", "{'a': 'one'}"),
])
@pytest.mark.parametrize("shape", ["if", "try", "top"])
def test_a_declaration_bound_in_alternatives_is_refused(tmp_path, name, first, second, shape):
    # Which binding holds depends on what runs, and declarations are read without running
    # the file: the last one in the text is not necessarily Python's (a run once used the
    # else branch's PARAMS after the if branch ran).
    blocks = {
        "if": f"import os\nif os.environ.get('X'):\n    {name} = {first}\nelse:\n"
              f"    {name} = {second}\n",
        "try": f"try:\n    import helpers\n    {name} = {first}\nexcept ImportError:\n"
               f"    {name} = {second}\n",
        "top": f"{name} = {first}\nimport os\nif os.environ.get('X'):\n    {name} = {second}\n",
    }
    path = write(tmp_path, '"""Doc."""\n' + blocks[shape] + TAIL.replace("setup()", "setup(a=1)"))
    line = 6 if shape != "top" else 5
    check(error_of(lambda: inspect_scenario(path)),
          f"{path}:{line}: {name} is bound more than once, inside if/try/for/while/match "
          f"blocks; accelgraph reads {name} from the file without running it, so bind it once, "
          f"at the top level", path, line)


@pytest.mark.parametrize("code, definitions", [
    ("from helpers import setup\nimport stepping as step\n",
     {"setup": 1, "step": 2}),
    ("try:\n    pass\nexcept* ValueError:\n    from helpers import setup\n"
     "else:\n    from helpers import steps\n", {"setup": 4, "steps": 6}),
    ("try:\n    from helpers import setup\nexcept* ValueError:\n    pass\n"
     "finally:\n    from helpers import step\n", {"setup": 2, "step": 6}),
    ("if True:\n    from helpers import setup\n    (a, (b, step)) = 1, (2, print)\n",
     {"setup": 2, "step": 3}),
    ("with open('x'):\n    from helpers import setup\nsteps: object = print\n",
     {"setup": 2, "steps": 3}),
    ("def setup():\n    pass\nclass Later:\n    def step(self, state):\n        pass\n"
     "step = Later().step\n", {"setup": 1, "step": 6}),
])
def test_contract_names_bound_by_import_or_assignment(tmp_path, code, definitions):
    path = write(tmp_path, code)
    assert inspect_scenario(path).definitions == definitions


# --------------------------------------------------------------------------- load

def _helper_name() -> str:
    """A module name no earlier import in this process can have cached."""
    return f"helper_{uuid.uuid4().hex}"


def test_an_outputs_the_file_only_imports_still_gets_the_check(tmp_path, monkeypatch):
    # `from helpers import *` brings outputs() in where the text does not show it: the CLI
    # read has_outputs from the text, skipped the check and exited 0 with "check: not run".
    monkeypatch.setattr(sys, "path", list(sys.path))
    helper = _helper_name()
    (tmp_path / f"{helper}.py").write_text("def outputs(state):\n    return {}\n")
    path = write(tmp_path, f"from {helper} import *  # noqa: F403\n" + TAIL)
    assert not inspect_scenario(path).has_outputs  # the text alone cannot tell
    scenario = load_scenario(path)
    assert scenario.info.has_outputs and scenario.outputs_fn is not None
    # and never the other way: a def outputs the text shows stays known, so a file that
    # leaves it undefined once run gets "check: not run" (exit 1), not a skipped check
    hidden = write(tmp_path, "if False:\n    def outputs(state):\n        return {}\n" + TAIL,
                   name="hidden.py")
    assert inspect_scenario(hidden).has_outputs
    loaded = load_scenario(hidden)
    assert loaded.info.has_outputs and loaded.outputs_fn is None


def test_load_puts_the_scenario_folder_first_on_sys_path(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    helper = _helper_name()
    (tmp_path / f"{helper}.py").write_text("VALUE = 42\n")
    path = write(tmp_path, f"import {helper}\n" + TAIL + "\ndef outputs(state):\n    return {}\n")
    scenario = load_scenario(path)
    assert sys.path[0] == str(tmp_path.resolve())
    assert sys.path.count(str(tmp_path.resolve())) == 1
    assert getattr(scenario.module, helper).VALUE == 42
    load_scenario(path)  # a second load does not add the folder again
    assert sys.path.count(str(tmp_path.resolve())) == 1


def test_the_loaded_module_is_registered_with_its_file_and_docstring(tmp_path):
    path = write(tmp_path, '''\
        """A scenario with a dataclass (dataclasses look the module up in sys.modules)."""
        import dataclasses
        from pathlib import Path

        HERE = Path(__file__).parent


        @dataclasses.dataclass
        class State:
            n: int


        def setup():
            return State(3)


        def step(state):
            pass
        ''', name="my-scen.v1.py")
    scenario = load_scenario(path)
    module = scenario.module
    assert re.fullmatch(r"_accelgraph_scenario_\d+_my_scen_v1", module.__name__), module.__name__
    assert sys.modules[module.__name__] is module
    assert module.__file__ == str(path.resolve())
    assert module.HERE == tmp_path.resolve()
    assert module.__doc__ == ("A scenario with a dataclass (dataclasses look the module up in "
                              "sys.modules).")
    assert scenario.make_state() == module.State(3)


def test_annotations_are_evaluated_as_python_evaluates_them(tmp_path):
    """The loader's own `from __future__ import annotations` does not reach the scenario."""
    path = write(tmp_path, "def setup() -> dict:\n    return {}\n\n"
                           "def step(state: dict) -> None:\n    pass\n")
    scenario = load_scenario(path)
    assert scenario.setup.__annotations__ == {"return": dict}
    assert scenario.step.__annotations__ == {"state": dict, "return": None}


def test_a_module_without_a_docstring_has_none(tmp_path):
    path = write(tmp_path, TAIL, name="plain_é.py")
    module = load_scenario(path).module
    assert module.__doc__ is None
    assert re.fullmatch(r"_accelgraph_scenario_\d+_plain_é", module.__name__), module.__name__


def test_a_scenario_that_fails_to_import_leaves_no_module_behind(tmp_path):
    path = write(tmp_path, TAIL + "\n\nraise RuntimeError('no GPU here')\n", name="fails_once.py")
    error = error_of(lambda: load_scenario(path))
    check(error, f"{path}:9: importing the scenario raised RuntimeError: no GPU here", path, 9)
    assert [name for name in sys.modules if name.endswith("_fails_once")] == []
    assert isinstance(error.__cause__, RuntimeError)
    assert error.detail == "".join(traceback.format_exception(error.__cause__))
    assert error.detail.startswith("Traceback (most recent call last):\n")
    assert error.detail.endswith("RuntimeError: no GPU here\n")


def test_a_contract_name_that_is_not_a_function_is_refused_at_load(tmp_path):
    path = write(tmp_path, TAIL + "\n\noutputs = {'y': 1}\n")
    check(error_of(lambda: load_scenario(path)),
          f"{path}:9: outputs is dict, not a function; define it with def outputs(...)", path, 9)
    path = write(tmp_path, TAIL + "\n\nglobals()['outputs'] = 3\n", name="dynamic.py")
    check(error_of(lambda: load_scenario(path)),
          f"{path}:1: outputs is int, not a function; define it with def outputs(...)", path, 1)


def test_make_state_rejects_unknown_params_exactly(tmp_path):
    path = write(tmp_path, "PARAMS = {'n': 4, 'act': 'gelu'}\n\ndef setup(n, act):\n"
                           "    return n\n\ndef step(state):\n    pass\n")
    scenario = load_scenario(path)
    check(error_of(lambda: scenario.make_state({"m": 1})),
          f"{path}: unknown parameter 'm'; known: n (int, default 4), act (str, default 'gelu')",
          path, None)
    bare = write(tmp_path, TAIL, name="bare.py")
    scenario = load_scenario(bare)
    check(error_of(lambda: scenario.make_state({"m": 1})),
          f"{bare}: unknown parameter 'm'; known: none (this scenario has no PARAMS)", bare, None)


# --------------------------------------------------------------------------- errors of running code

def test_steps_raising_is_named_steps(tmp_path):
    path = write(tmp_path, "def setup():\n    return {}\n\ndef steps(state):\n"
                           "    return {'a': state['nope']}\n")
    scenario = load_scenario(path)
    check(error_of(lambda: scenario.graph_steps({})),
          f"{path}:5: steps() raised KeyError: 'nope'", path, 5)


@pytest.mark.parametrize("where", ["setup", "step", "steps", "outputs"])
def test_sys_exit_in_scenario_code_is_the_scenario_s_error(tmp_path, where):
    # sys.exit() in setup(), a step, steps() or outputs() went past every handler (they
    # caught Exception): `capture` and `replay` ended with exit 0 and no word, and `smoke`
    # stopped at that scenario with no table and no report. It is the scenario's error now,
    # as sys.exit() at import already was.
    bodies = {name: "    return {}" if name == "setup" else
              "    return {'a': lambda: None}" if name == "steps" else
              "    return {}" if name == "outputs" else "    pass"
              for name in ("setup", "step", "steps", "outputs")}
    bodies[where] = "    import sys\n    sys.exit(0)"
    text = "".join(f"def {name}({'' if name == 'setup' else 'state'}):\n{body}\n\n"
                   for name, body in bodies.items() if name != ("step" if where == "steps"
                                                                   else "steps"))
    path = write(tmp_path, text)
    scenario = load_scenario(path)
    line = text.splitlines().index("    sys.exit(0)") + 1
    calls = {"setup": lambda: scenario.make_state({}),
             "step": lambda: scenario.graph_steps({})["step"](),
             "steps": lambda: scenario.graph_steps({}),
             "outputs": lambda: scenario.outputs({})}
    check(error_of(calls[where]), f"{path}:{line}: {where}() raised SystemExit: 0", path, line)


@pytest.mark.parametrize("raise_line, message", [
    ("raise ValueError()", "(no message)"),
    ("raise ValueError('  ')", "(no message)"),
    ("raise ValueError('first\\n\\n  second\\nthird')", "first [+2 more lines]"),
    ("raise ValueError('first\\nsecond')", "first [+1 more lines]"),
])
def test_messages_of_raised_errors_are_one_line(tmp_path, raise_line, message):
    path = write(tmp_path, f"def setup():\n    return {{}}\n\ndef step(state):\n    {raise_line}\n")
    run = load_scenario(path).graph_steps({})["step"]
    check(error_of(run), f"{path}:5: step() raised ValueError: {message}", path, 5)


def test_an_error_raised_deeper_names_both_places(tmp_path):
    helper = _helper_name()
    (tmp_path / f"{helper}.py").write_text("def boom(x):\n    raise ValueError(f'bad {x}')\n")
    path = write(tmp_path, f"import {helper}\n\ndef setup():\n    return {{}}\n\n"
                           f"def step(state):\n    {helper}.boom(3)\n")
    run = load_scenario(path).graph_steps({})["step"]
    check(error_of(run), f"{path}:7: step() raised ValueError: bad 3 (raised in {helper}.py:2)",
          path, 7)


def test_an_error_raised_with_no_scenario_frame_names_the_file_alone(tmp_path):
    helper = _helper_name()
    (tmp_path / f"{helper}.py").write_text("def step(state):\n    raise ValueError('deep')\n")
    path = write(tmp_path, f"from {helper} import step\n\ndef setup():\n    return {{}}\n")
    run = load_scenario(path).graph_steps({})["step"]
    check(error_of(run), f"{path}: step() raised ValueError: deep (raised in {helper}.py:2)",
          path, None)


def test_a_syntax_error_raised_by_scenario_code_keeps_the_scenario_line(tmp_path):
    path = write(tmp_path, "def setup():\n    return {}\n\ndef step(state):\n"
                           "    compile('x +', 'generated', 'exec')\n")
    run = load_scenario(path).graph_steps({})["step"]
    error = error_of(run)
    check(error, f"{path}:5: step() raised SyntaxError: invalid syntax (generated, line 1)",
          path, 5)


def test_a_syntax_error_in_other_text_gives_no_scenario_line(tmp_path):
    """Line 1 of a generated text is not line 1 of the scenario."""
    helper = _helper_name()
    (tmp_path / f"{helper}.py").write_text("def step(state):\n"
                                           "    compile('x +', 'generated', 'exec')\n")
    path = write(tmp_path, f"from {helper} import step\n\ndef setup():\n    return {{}}\n")
    run = load_scenario(path).graph_steps({})["step"]
    check(error_of(run), f"{path}: step() raised SyntaxError: invalid syntax (generated, line 1) "
                         f"(raised in {helper}.py:2)", path, None)


def test_a_syntax_error_of_the_scenario_file_itself_gives_its_line(tmp_path):
    path = write(tmp_path, TAIL)
    error = SyntaxError("invalid syntax", (str(path), 3, 5, "    return {\n"))
    check(located_error(path, error, "importing the scenario"),
          f"{path}:3: importing the scenario raised SyntaxError: invalid syntax (s.py, line 3)",
          path, 3)


# --------------------------------------------------------------------------- parse_params

DEFAULTS = {"batch": 8, "lr": 0.5, "fused": True, "act": "gelu"}
KNOWN = ("batch (int, default 8), lr (float, default 0.5), fused (bool, default True), "
         "act (str, default 'gelu')")


@pytest.mark.parametrize("override, message", [
    ("batch", f"--param 'batch': expected KEY=VALUE, e.g. --param batch=8; known keys: {KNOWN}"),
    ("=4", f"--param '=4': expected KEY=VALUE, e.g. --param batch=8; known keys: {KNOWN}"),
    ("bach=4", f"--param 'bach=4': unknown key 'bach'; known keys: {KNOWN}"),
    ("batch=eight", "--param batch='eight': batch expects an int (e.g. 8) like its default 8, "
                    "got 'eight'"),
    ("lr=fast", "--param lr='fast': lr expects a finite float (e.g. 0.5) like its default 0.5, "
                "got 'fast'"),
    ("fused=maybe", "--param fused='maybe': fused expects a bool (true/false, yes/no, on/off, "
                    "1/0) like its default True, got 'maybe'"),
    # JSON has no infinity: the capture's record and --json would hold what no parser reads
    ("lr=inf", "--param lr='inf': lr expects a finite float (e.g. 0.5) like its default 0.5, "
               "got 'inf'"),
    ("lr=nan", "--param lr='nan': lr expects a finite float (e.g. 0.5) like its default 0.5, "
               "got 'nan'"),
])
def test_parse_params_errors_exactly(override, message):
    check(error_of(lambda: parse_params(DEFAULTS, [override])), message, None, None)


def test_parse_params_without_params_says_there_are_none():
    check(error_of(lambda: parse_params({}, ["x"])),
          "--param 'x': expected KEY=VALUE, e.g. --param batch=8; known keys: none (this "
          "scenario has no PARAMS)", None, None)


# Files Python runs as valid scenarios: the static check must accept them, and loading must
# give the same step it will call.
@pytest.mark.parametrize("text", [
    # contract functions defined inside top-level for / while / match blocks
    "PARAMS = {}\ndef setup():\n    return {}\nfor _ in range(1):\n    def step(state):\n"
    "        return 'for'\n",
    "PARAMS = {}\ndef setup():\n    return {}\nwhile True:\n    def step(state):\n"
    "        return 'while'\n    break\n",
    "import sys\nPARAMS = {}\ndef setup():\n    return {}\nmatch sys.platform:\n"
    "    case _:\n        def step(state):\n            return 'match'\n",
    # a positional-only setup parameter with a default that PARAMS does not name
    "PARAMS = {'n': 2}\ndef setup(scale=1, /, n=2):\n    return {}\n"
    "def step(state):\n    return 'posonly'\n",
    # positional defaults that begin before the '/'
    "PARAMS = {}\ndef setup(a=1, /, b=2, c=3):\n    return {}\n"
    "def step(state):\n    return 'defaults'\n",
    # a decorator that changes the signature Python calls
    "import functools\nPARAMS = {}\ndef setup():\n    return {}\ndef bound(fn):\n"
    "    @functools.wraps(fn)\n    def wrapper(state):\n        return fn(state, 'decorated')\n"
    "    return wrapper\n@bound\ndef step(state, word):\n    return word\n",
])
def test_valid_files_that_define_the_contract_in_other_shapes_pass(tmp_path, text):
    path = write(tmp_path, '"""Doc."""\n' + text)
    inspect_scenario(path)
    scenario = load_scenario(path)
    state = scenario.make_state(scenario.params)
    (step,) = scenario.graph_steps(state).values()
    # each step returns the word of its case: the step Python defined last is the one called
    assert step() == re.findall(r"'(\w+)'", text)[-1]


@pytest.mark.parametrize("text, line, problem", [
    ("PARAMS = {}\ndef setup():\n    return {}\nstep = lambda: None\n", 5,
     "step() must take exactly one argument, the state setup() returned: def step(state)"),
    ("PARAMS = {'n': 1}\nsetup = lambda m: {}\ndef step(state):\n    pass\n", 2,
     "PARAMS has 'n' but setup() (line 3) takes no parameter 'n'; add it to setup's "
     "parameters or drop it from PARAMS"),
])
def test_lambdas_bound_to_contract_names_are_checked_as_defs_are(tmp_path, text, line, problem):
    path = write(tmp_path, '"""Doc."""\n' + text)
    check(error_of(lambda: inspect_scenario(path)), f"{path}:{line}: {problem}", path, line)


def test_integers_too_long_to_print_are_refused_where_they_are_written(tmp_path):
    # Python prints no int of more than 4,300 digits: such a default used to end every report
    # (smoke --list --json, scenarios) in an internal error, exit 70
    huge = "0x" + "f" * 4000
    path = write(tmp_path, f'"""Doc."""\nPARAMS = {{"n": {huge}}}\n' + TAIL.replace("setup()",
                                                                                "setup(n)"))
    check(error_of(lambda: inspect_scenario(path)),
          f"{path}:2: PARAMS['n'] is an integer of 16,000 bits; use one of at most 1024 bits",
          path, 2)
    listed = write(tmp_path, f'"""Doc."""\nPARAMS = {{"n": [{huge}]}}\n' + TAIL, "listed.py")
    check(error_of(lambda: inspect_scenario(listed)),
          f"{listed}:2: PARAMS['n'] is list …; use an int, float, bool or str literal "
          f"(--param n=... parses to its type)", listed, 2)
    with pytest.raises(ScenarioError) as caught:
        parse_params({"n": 8}, [f"n={huge}"])
    assert str(caught.value) == "--param n=...: an integer of 16,000 bits; n takes one of at " \
                                "most 1024 bits"
    with pytest.raises(ScenarioError) as caught:
        parse_params({"n": 8}, ["n=" + "x" * 100])
    assert str(caught.value) == (f"--param n='{'x' * 59}…': n expects an int (e.g. 8) like its "
                                 f"default 8, got '{'x' * 59}…'")
    assert parse_params({"n": 8}, ["n=" + "0x" + "f" * 256]) == {"n": 2**1024 - 1}
    with pytest.raises(ScenarioError) as caught:  # decimal, past what int() reads
        parse_params({"n": 8}, ["n=" + "9" * 5000])
    assert str(caught.value) == "--param n=...: an integer of more than 4,300 digits; n " \
                                "takes one of at most 1024 bits"


@pytest.mark.parametrize("text, line, problem", [
    # bindings the text cannot settle are checked once the file has run
    ("PARAMS = {}\ndef setup():\n    return {}\ntry:\n    import no_such_helper_module\n"
     "    def step(state):\n        pass\nexcept ImportError:\n    step = None\n", 10,
     "neither step nor steps is defined once the file has run; keep step(state) for one "
     "graph or steps(state) returning {name: callable} for several"),
    ("PARAMS = {}\ntry:\n    from no_such_helper_module import setup\nexcept ImportError:\n"
     "    pass\ndef step(state):\n    pass\n", 4,
     "setup is not defined once the file has run (the branch that binds it did not run, or "
     "it was deleted); define setup(**PARAMS)"),
    ("PARAMS = {'a': 1}\nPARAMS['a'] = 2\ndef setup(a):\n    return {}\ndef step(state):\n"
     "    pass\n", 2,
     "PARAMS is {'a': 2} once the file has run, not the literal accelgraph reads from the "
     "file without running it ({'a': 1}); bind PARAMS once, as a literal, and leave it as "
     "written"),
])
def test_what_the_text_leaves_open_is_checked_when_the_file_has_run(tmp_path, text, line,
                                                                     problem):
    path = write(tmp_path, '"""Doc."""\n' + text)
    inspect_scenario(path)  # the text alone passes
    check(error_of(lambda: load_scenario(path)), f"{path}:{line}: {problem}", path, line)


@pytest.mark.parametrize("text", [
    "from typing import Callable\nPARAMS = {}\ndef setup():\n    return {}\nstep: Callable\n",
    "PARAMS = {}\ndef setup():\n    return {}\ndef step(state):\n    pass\ndel step\n",
])
def test_an_annotation_or_a_deleted_def_defines_no_step(tmp_path, text):
    path = write(tmp_path, '"""Doc."""\n' + text)
    check(error_of(lambda: inspect_scenario(path)),
          f"{path}:1: defines neither step(state) nor steps(state); add step(state), the work "
          f"to capture, or steps(state) returning {{name: callable}} for several graphs",
          path, 1)


@pytest.mark.parametrize("multi", ["", "1"])
def test_step_or_steps_chosen_by_a_branch_is_the_one_the_run_bound(tmp_path, monkeypatch,
                                                                     multi):
    monkeypatch.setenv("ACCELGRAPH_TEST_MULTI", multi)
    path = write(tmp_path, '"""Doc."""\nimport os\nPARAMS = {}\ndef setup():\n    return {}\n'
                           "if os.environ.get('ACCELGRAPH_TEST_MULTI'):\n"
                           "    def steps(state):\n        return {'a': lambda: 'many'}\n"
                           "else:\n    def step(state):\n        return 'one'\n")
    scenario = load_scenario(path)
    (name, step), = scenario.graph_steps(scenario.make_state()).items()
    assert (name, step(), scenario.info.multi_graph) == (("a", "many", True) if multi
                                                          else ("step", "one", False))


def test_a_decorated_setup_that_cannot_take_params_says_so_at_its_definition(tmp_path):
    path = write(tmp_path, '"""Doc."""\nimport functools\nPARAMS = {"batch": 4}\n'
                           "def keep(fn):\n    @functools.wraps(fn)\n    def wrapper():\n"
                           "        return fn()\n    return wrapper\n@keep\ndef setup(batch):\n"
                           "    return {}\ndef step(state):\n    pass\n")
    scenario = load_scenario(path)  # the decorator's signature is the run's to check
    check(error_of(lambda: scenario.make_state()),
          f"{path}:10: setup() cannot be called as accelgraph calls it, setup(batch=...): "
          f"TypeError: setup() got an unexpected keyword argument 'batch'", path, 10)


def test_a_steps_entry_that_wants_arguments_says_how_it_is_called(tmp_path):
    path = write(tmp_path, '"""Doc."""\nPARAMS = {}\ndef setup():\n    return {}\n'
                           "def steps(state):\n    return {'a': lambda x: None}\n")
    scenario = load_scenario(path)
    entry = scenario.graph_steps(scenario.make_state())["a"]
    check(error_of(entry),
          f"{path}:5: steps()['a'] cannot be called as accelgraph calls it, steps()['a'](): "
          "TypeError: steps.<locals>.<lambda>() missing 1 required positional argument: 'x'",
          path, 5)


@pytest.mark.parametrize("step", ["functools.partial(operator.add, 'x')", "len"])
def test_a_type_error_raised_inside_a_c_function_is_not_called_a_signature_error(tmp_path,
                                                                                step):
    # C code adds no frame to the traceback: the error looks raised by the call itself
    path = write(tmp_path, '"""Doc."""\nimport functools\nimport operator\nPARAMS = {}\n'
                           f"def setup():\n    return 5\nstep = {step}\n")
    scenario = load_scenario(path)
    (call,) = scenario.graph_steps(scenario.make_state()).values()
    message = str(error_of(call))
    assert "step() raised TypeError: " in message and "cannot be called" not in message


@pytest.mark.parametrize("assignment", ["PARAMS['a'] = 1.0", "PARAMS['a'] = Weird()"])
def test_params_changed_to_an_equal_value_of_another_type_or_an_uncomparable_one(tmp_path,
                                                                                assignment):
    path = write(tmp_path, '"""Doc."""\nclass Weird:\n    def __eq__(self, other):\n'
                           "        raise ValueError('ambiguous')\n    def __repr__(self):\n"
                           "        return 'Weird()'\n"
                           f"PARAMS = {{'a': 1}}\n{assignment}\n"
                           "def setup(a):\n    return {}\ndef step(state):\n    pass\n")
    with pytest.raises(ScenarioError, match="PARAMS is .* once the file has run"):
        load_scenario(path)


def test_sys_exit_in_a_step_the_runner_calls_is_the_scenario_s_error(tmp_path):
    # The warm-up and the check's eager steps call the step through protocol._call_step,
    # which let SystemExit through as well.
    import sys

    from accelgraph_cli.run.protocol import _call_step

    path = write(tmp_path, "def setup():\n    return {}\n\ndef step(state):\n    pass\n")
    scenario = load_scenario(path)

    def exits():
        sys.exit(3)

    error = error_of(lambda: _call_step(scenario, "step", exits))
    assert str(error).startswith(f"{path}: step 'step' raised SystemExit: 3 (raised in ")


def test_steps_that_name_other_graphs_for_a_fresh_state_is_the_scenario_s_error(tmp_path):
    # The check and the timing call setup() and steps() again and look each captured graph
    # up by name: a steps() that names its graphs after a counter raised KeyError (exit 70).
    import types

    from accelgraph_cli.run.protocol import captured_steps

    path = write(tmp_path, "CALLS = [0]\n\ndef setup():\n    return {}\n\ndef steps(state):\n"
                           "    CALLS[0] += 1\n    return {f'batch{CALLS[0]}': lambda: None}\n")
    scenario = load_scenario(path)
    result = types.SimpleNamespace(scenario=scenario,
                                   graphs=[types.SimpleNamespace(name="batch1")])
    assert list(captured_steps(result, {})) == ["batch1"]  # the same names: as steps() gave
    check(error_of(lambda: captured_steps(result, {})),
          f"{path}:6: steps() named graphs ['batch2'] for a fresh state, not ['batch1'], which "
          "it named for the captured one; it must name the same graphs for every state "
          "(accelgraph calls setup() and steps() again to check and time the graphs)", path, 6)
