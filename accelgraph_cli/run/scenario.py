"""Scenario files: inspect them without running anything, load them, and parse --param.

A scenario is a plain Python file (see scenarios/ and the README's "Writing a scenario"):

    '''One-line summary.  (the rest of the docstring explains the workload)'''
    PARAMS = {"batch": 8, "hidden": 1024}   # literal dict: defaults and --param types
    POOL = "private"                         # optional: "private" | "shared" | "async"
    ERROR_MODE = "global"                    # optional: "global" | "thread_local" | "relaxed"
    EXPECT_EMPTY = False                     # optional: True (or graph names) if a step records nothing
    BACKEND = "cupy"                         # optional: "cupy" | "torch"; else read from the imports

    def setup(batch, hidden): ...            # eager: allocate inputs, load kernels -> state
    def step(state): ...                     # captured: enqueue work on the current stream
    # or: def steps(state) -> {name: callable}, one graph per entry
    def outputs(state): ...                  # optional: {name: array or tensor} replay must match

Two stages, so that a broken file is diagnosed on a machine without a GPU:

* :func:`inspect_scenario` reads and parses the file with :mod:`ast` and executes nothing.
* :func:`load_scenario` executes it (after inspecting) and returns a :class:`Scenario`.

Every problem is a :class:`ScenarioError` whose message is one line naming ``file:line`` and
saying what to do. This module does not import CuPy.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import itertools
import keyword
import math
import os
import re
import sys
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..enums import Backend, CaptureErrorMode, PoolKind
from ..errors import AccelgraphError, one_line
from ..files import path_kind

DEFAULT_POOL = PoolKind.PRIVATE
DEFAULT_ERROR_MODE = CaptureErrorMode.GLOBAL

_E = TypeVar("_E", PoolKind, CaptureErrorMode, Backend)
_PARAM_TYPES = (bool, int, float, str)
_PARAM_INT_BITS = 1024  # ints of more bits are refused (Python prints none past 4,300 digits)
_LONG_DECIMAL = re.compile(r"[+-]?[0-9](?:_?[0-9]){4300,}")
_TRUE_WORDS = ("true", "yes", "on", "1")
_FALSE_WORDS = ("false", "no", "off", "0")


class ScenarioError(AccelgraphError):
    """A scenario file cannot be used; ``str(error)`` is one line: ``file:line: what; fix``.

    ``path`` and ``line`` locate the problem when known. When the scenario's own code raised,
    ``__cause__`` is that exception and ``detail`` its full traceback text.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 detail: str = ""):
        if path and one_line(path) != path:  # a line break in the file's name, kept in the line
            message = message.replace(path, one_line(path))
        super().__init__(_one_line(message, keep_left=bool(path)))
        self.path = path
        self.line = line
        self.detail = detail


@dataclass(frozen=True)
class ScenarioInfo:
    """What a scenario file declares, found by parsing it (nothing is executed)."""

    path: Path
    """The file, as given (relative paths stay relative; messages show it this way)."""
    name: str
    """The file stem: ``scenarios/mlp_decode.py`` -> ``mlp_decode``."""
    summary: str
    """First line of the module docstring ("" when there is none)."""
    doc: str
    """The whole module docstring, dedented ("" when there is none)."""
    params: dict[str, bool | int | float | str]
    """PARAMS: parameter defaults, in file order ({} when the file has no PARAMS)."""
    pool: PoolKind
    """POOL, or :data:`DEFAULT_POOL` when the file does not set it."""
    error_mode: CaptureErrorMode
    """ERROR_MODE, or :data:`DEFAULT_ERROR_MODE` when the file does not set it."""
    has_outputs: bool
    """Whether the file defines ``outputs(state)``."""
    multi_graph: bool
    """True for ``steps(state)`` (one graph per entry), False for ``step(state)``; read from
    the text, True also where a branch chooses between them (loading settles it)."""
    definitions: dict[str, int] = field(default_factory=dict)
    """Line of each top-level name the contract uses (setup, step/steps, outputs, PARAMS...)."""
    expect_empty: bool | tuple[str, ...] = False
    """EXPECT_EMPTY: True when every graph may be empty, or the names of the graphs that may be
    (an empty graph is otherwise an error: its work went somewhere the capture did not see)."""
    imports: frozenset[str] = frozenset()
    """Top-level package names the file imports anywhere (``torch``, ``cupy``, ...)."""
    backend: Backend = Backend.CUPY
    """BACKEND, or the backend the imports name: torch for a file that imports torch and not
    cupy, cupy otherwise (a file importing both must say which)."""

    def expects_empty(self, graph_name: str) -> bool:
        """Whether the scenario declares that ``graph_name`` may capture no work."""
        if isinstance(self.expect_empty, tuple):
            return graph_name in self.expect_empty
        return bool(self.expect_empty)

    def line_of(self, name: str) -> int:
        """Line where ``name`` is defined, or 1 when the file does not define it."""
        return self.definitions.get(name, 1)


# --------------------------------------------------------------------------- stage 1: inspect

_CONTRACT_NAMES = ("setup", "step", "steps", "outputs", "PARAMS", "POOL", "ERROR_MODE",
                   "EXPECT_EMPTY", "BACKEND")


def inspect_scenario(path: str | os.PathLike) -> ScenarioInfo:
    """Read and parse a scenario file and check it against the contract, executing nothing.

    Checks: the file exists and is UTF-8 Python that compiles; PARAMS is a literal dict of
    str -> int/float/bool/str whose keys ``setup`` accepts; ``setup`` exists; exactly one of
    ``step``/``steps``; POOL and ERROR_MODE, when set, are string literals naming a known kind.
    Raises :class:`ScenarioError` (one line, ``file:line``) on the first problem found.
    Cheap: no imports of the scenario, no CuPy, no GPU.
    """
    path = Path(path)
    where = str(path)
    tree = _read_python(path)

    nodes, unsettled, branched = _top_level_bindings(tree)
    definitions = {name: node.lineno for name, node in nodes.items()}
    for name in _DECLARATIONS:
        if name in unsettled:
            line = definitions.get(name, 1)
            raise ScenarioError(
                f"{where}:{line}: {name} is bound more than once, inside if/try/for/while/match "
                f"blocks; accelgraph reads {name} from the file without running it, so bind "
                f"it once, at the top level",
                path=where, line=line,
            )

    params = _parse_params_literal(where, nodes.get("PARAMS"))
    pool = _parse_choice(where, nodes.get("POOL"), "POOL", PoolKind, DEFAULT_POOL)
    error_mode = _parse_choice(
        where, nodes.get("ERROR_MODE"), "ERROR_MODE", CaptureErrorMode, DEFAULT_ERROR_MODE
    ).resolved  # PyTorch's "default" is global mode

    if "setup" not in nodes:
        raise ScenarioError(
            f"{where}:1: no setup() function; define setup(**PARAMS) that allocates the "
            f"inputs (eagerly, before capture) and returns the state step() works on",
            path=where, line=1,
        )
    has_step, has_steps = "step" in nodes, "steps" in nodes
    # (step in one branch and steps in another is checked once the file has run)
    if has_step and has_steps and not {"step", "steps"} & branched:
        later = max(definitions["step"], definitions["steps"])
        raise ScenarioError(
            f"{where}:{later}: defines both step() (line {definitions['step']}) and steps() "
            f"(line {definitions['steps']}); keep step(state) for one graph or steps(state) "
            f"returning {{name: callable}} for several",
            path=where, line=later,
        )
    if not has_step and not has_steps:
        raise ScenarioError(
            f"{where}:1: defines neither step(state) nor steps(state); add step(state), the "
            f"work to capture, or steps(state) returning {{name: callable}} for several graphs",
            path=where, line=1,
        )

    # (a function whose binding depends on what runs is checked when the file has run)
    _check_function_shapes(where, {k: v for k, v in nodes.items() if k not in unsettled},
                           params)
    expect_empty = _parse_expect_empty(where, nodes.get("EXPECT_EMPTY"))
    if isinstance(expect_empty, tuple) and has_step and not has_steps and \
            set(expect_empty) - {"step"}:
        line = definitions["EXPECT_EMPTY"]
        unknown = ", ".join(_literal(n) for n in expect_empty if n != "step")
        raise ScenarioError(
            f"{where}:{line}: EXPECT_EMPTY names {unknown}, but a scenario with step(state) has "
            f"one graph, 'step' (graph names come from steps(state)'s keys): use True or "
            f"['step']", path=where, line=line)
    imports = _imported_packages(tree)
    backend = _backend(where, nodes.get("BACKEND"), imports)
    if backend is Backend.TORCH and pool is PoolKind.ASYNC:
        line = definitions["POOL"]
        raise ScenarioError(
            f"{where}:{line}: POOL = 'async' is CuPy's stream-ordered allocator; a torch "
            f"scenario's graphs allocate from torch's caching allocator: use 'private' or "
            f"'shared'", path=where, line=line)

    doc = ast.get_docstring(tree) or ""
    summary = next((line.strip() for line in doc.splitlines() if line.strip()), "")
    return ScenarioInfo(
        path=path,
        name=path.stem,
        summary=summary,
        doc=doc,
        params=params,
        pool=pool,
        error_mode=error_mode,
        has_outputs="outputs" in nodes,
        multi_graph=has_steps,
        definitions=definitions,
        expect_empty=expect_empty,
        imports=imports,
        backend=backend,
    )


def _backend(where: str, node: ast.AST | None, imports: frozenset[str]) -> Backend:
    """BACKEND when the file sets it; else torch for a file that imports torch and not cupy,
    cupy otherwise. A file that imports both and does not say is an error."""
    if node is not None:
        return _parse_choice(where, node, "BACKEND", Backend, Backend.CUPY)
    if "torch" in imports and "cupy" in imports:
        raise ScenarioError(
            f"{where}:1: imports both torch and cupy; say which one the step launches its work "
            f"with: BACKEND = \"torch\" or BACKEND = \"cupy\"", path=where, line=1)
    return Backend.TORCH if "torch" in imports else Backend.CUPY


def check_expect_empty(info: ScenarioInfo, graph_names: list[str]) -> None:
    """Refuse EXPECT_EMPTY naming a graph the scenario does not make, once steps() has said
    which it makes: a typo would leave the empty-graph guard on where the author meant it
    off. (A step(state) file's one graph, 'step', is checked by inspect_scenario.)"""
    if not isinstance(info.expect_empty, tuple):
        return
    unknown = [name for name in info.expect_empty if name not in graph_names]
    if unknown:
        line = info.definitions.get("EXPECT_EMPTY", 1)
        raise ScenarioError(
            f"{info.path}:{line}: EXPECT_EMPTY names {', '.join(_literal(n) for n in unknown)}, "
            f"which steps() does not return; its graphs: "
            f"{_cut(', '.join(_cut(str(name)) for name in graph_names), 300)}",
            path=str(info.path), line=line)


def _parse_expect_empty(where: str, node: ast.AST | None) -> bool | tuple[str, ...]:
    """EXPECT_EMPTY = True/False, or a literal list/tuple of graph names."""
    if node is None:
        return False
    line = node.lineno
    try:
        value = ast.literal_eval(getattr(node, "value", None))
    except (ValueError, TypeError, SyntaxError):
        value = None
    if isinstance(value, bool):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ScenarioError(
        f"{where}:{line}: EXPECT_EMPTY must be True, False, or a literal list of graph names",
        path=where, line=line,
    )


def _imported_packages(tree: ast.Module) -> frozenset[str]:
    """Top-level package names imported anywhere in the file (``import torch.nn`` -> torch)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return frozenset(names)


def _check_size(path: Path, where: str) -> None:
    """Refuse a file too big to read as a scenario before reading it: over a quarter of the
    memory available (as graph input is; a 7 GB file was read whole, over a minute, to be
    refused for its NUL bytes)."""
    from ..dot.load import memory_limit

    limit = memory_limit()
    try:
        size = path.stat().st_size
    except OSError:
        return  # reading it says why
    if limit is not None and size > limit:
        raise ScenarioError(
            f"{where}: {size:,} bytes, too large to read as a scenario here (more than a "
            "quarter of the memory this process may still take); a scenario is a small Python "
            "file", path=where)


def scenario_path_kind(path: str | os.PathLike) -> str:
    """:func:`files.path_kind` of a scenario path, a path that cannot be looked at (a folder
    on the way that cannot be entered, a name too long) refused as a ScenarioError naming it."""
    try:
        return path_kind(path)
    except AccelgraphError as exc:
        raise ScenarioError(str(exc), path=os.fsdecode(path)) from None


def _read_python(path: Path) -> ast.Module:
    """The file's syntax tree, or ScenarioError saying why it is not a readable Python file
    (missing, a folder, not .py, not UTF-8, unreadable, null bytes, a syntax error)."""
    where = str(path)
    kind = scenario_path_kind(path)
    if kind == "missing":
        raise ScenarioError(
            f"{where}: no such file; pass the path of a scenario .py file (e.g. scenarios/saxpy.py)",
            path=where,
        )
    if kind == "dir":
        raise ScenarioError(
            f"{where}: is a directory; pass one scenario .py file (smoke takes a directory)",
            path=where,
        )
    if path.suffix != ".py":
        raise ScenarioError(
            f"{where}: not a .py file; a scenario is a Python file defining setup() and step()",
            path=where,
        )
    if kind != "file":  # a named pipe would be read until someone writes to it: a hang
        raise ScenarioError(f"{where}: not a regular file; a scenario is a Python file",
                            path=where)
    _check_size(path, where)
    try:
        source = path.read_text(encoding="utf-8-sig")  # a byte-order mark, as Python allows
    except UnicodeDecodeError as error:
        raise ScenarioError(
            f"{where}: not UTF-8 text ({error.reason} at byte {error.start}); save it as UTF-8",
            path=where,
        ) from None
    except OSError as error:
        raise ScenarioError(
            f"{where}: cannot be read ({error.strerror}); check its permissions", path=where
        ) from None

    try:
        tree = ast.parse(source, filename=where)
        # What parses but does not compile ('return' or 'yield' outside a function, 'nonlocal'
        # at module level) is refused here too, not only when the file is executed.
        compile(tree, where, "exec", dont_inherit=True)
    except ValueError:  # null bytes (Python < 3.12 raises ValueError, not SyntaxError)
        raise ScenarioError(
            f"{where}: contains null bytes, so it is not Python source; save it as text",
            path=where,
        ) from None
    except SyntaxError as error:
        line = error.lineno or 1
        column = f":{error.offset}" if error.offset else ""
        raise ScenarioError(
            f"{where}:{line}{column}: syntax error: {error.msg}; fix it "
            f"(python -m py_compile {where} reports the same)",
            path=where,
            line=line,
        ) from None
    except (RecursionError, MemoryError):
        # an expression nested or chained a thousand deep: compiling the syntax tree needs
        # more depth than compiling the text does, so Python may run what this cannot check
        raise ScenarioError(
            f"{where}: an expression is nested or chained too deeply to check (a thousand "
            "levels or more); split it into smaller ones", path=where,
        ) from None
    return tree


def _cut(text: str, most: int = 60) -> str:
    """``text`` cut to ``most`` characters, an ellipsis last, as messages quote things."""
    return text if len(text) <= most else text[:most - 1] + "…"


def _literal(value, most: int = 60) -> str:
    """A value from the file as a message quotes it (:func:`_shown_value`), an integer too
    long for Python to write in decimal (a hexadecimal literal of thousands of digits)
    named by its size."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return _cut(repr(value), most)
        except ValueError:
            return f"<an integer of {value.bit_length():,} bits>"
    return _shown_value(value, most)


#: NumPy dtype kinds an output cannot have, and what they hold: no device array holds them,
#: and the compare failed on them (an internal error, exit 70). Structured and extension
#: dtypes (kind "V": bfloat16 through ml_dtypes, say) are left to the compare.
_NOT_COMPARED = {"O": "Python objects", "U": "text", "S": "bytes", "M": "dates",
                 "m": "time spans"}


def _message_of(error: BaseException) -> str:
    """``str(error)``, or what it is where that raises (``ValueError(10**5000)``: too long an
    int to write; an exception class whose ``__str__`` fails)."""
    try:
        return str(error)
    except Exception as problem:  # noqa: BLE001 - whatever the scenario's exception does
        return f"(its message cannot be written: {type(problem).__name__})"


def _shown(node: ast.AST, most: int = 60) -> str:
    """An expression as a message quotes it: its source, cut to ``most`` characters (a
    chain of hundreds of terms is too deep for ast.unparse, which recurses)."""
    try:
        text = ast.unparse(node)
    except (RecursionError, MemoryError, ValueError):  # ValueError: an int too long to print
        return "…"
    return _cut(text, most)


_DECLARATIONS = ("PARAMS", "POOL", "ERROR_MODE", "EXPECT_EMPTY", "BACKEND")  # read, never run


def _top_level_bindings(tree: ast.Module) -> tuple[dict[str, ast.AST], set[str], set[str]]:
    """The statement that last binds each contract name at module level, the names whose
    binding the file's text does not settle, and the names bound inside a block.

    Looks into top-level if/try/with/for/while/match blocks (``try: import x`` patterns) but
    not into functions or classes. A later binding wins, as when Python runs the file. A
    name bound inside an if/try/for/while/match block and bound (or deleted) anywhere else
    too is *unsettled*: which binding holds depends on what runs (``except ImportError:
    step = None`` beside a ``def step``). An annotation without a value binds nothing; a
    top-level ``del`` unbinds.
    """
    found: dict[str, ast.AST] = {}
    bindings: dict[str, int] = {}
    branched: set[str] = set()

    def bind(name: str, node: ast.AST | None, in_branch: bool) -> None:
        if name not in _CONTRACT_NAMES:
            return
        bindings[name] = bindings.get(name, 0) + 1
        if in_branch:
            branched.add(name)
        if node is None:  # deleted
            if not in_branch:
                found.pop(name, None)
        else:
            found[name] = node

    def visit(statements: list[ast.stmt], in_branch: bool) -> None:
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bind(node.name, node, in_branch)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    for name in _target_names(target):
                        bind(name, node, in_branch)
            elif isinstance(node, ast.AnnAssign):
                if node.value is not None:  # `step: Callable` alone binds nothing
                    for name in _target_names(node.target):
                        bind(name, node, in_branch)
            elif isinstance(node, ast.AugAssign):
                for name in _target_names(node.target):
                    bind(name, node, in_branch)
            elif isinstance(node, ast.Delete):
                for target in node.targets:
                    for name in _target_names(target):
                        bind(name, None, in_branch)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    bind(alias.asname or alias.name.split(".")[0], node, in_branch)
            elif isinstance(node, ast.If):
                visit(node.body, True)
                visit(node.orelse, True)
            elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
                visit(node.body, True)
                for handler in node.handlers:
                    visit(handler.body, True)
                visit(node.orelse, True)
                visit(node.finalbody, in_branch)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                visit(node.body, in_branch)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                visit(node.body, True)
                visit(node.orelse, True)
            elif type(node).__name__ == "Match":
                for case in node.cases:
                    visit(case.body, True)

    visit(tree.body, False)
    unsettled = {name for name in branched if bindings[name] > 1}
    return found, unsettled, branched


def _target_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _target_names(element)]
    return []


def _parse_params_literal(where: str, node: ast.AST | None) -> dict[str, Any]:
    if node is None:
        return {}
    line = node.lineno
    example = 'PARAMS = {"batch": 8, "hidden": 1024}'
    value_node = getattr(node, "value", None)
    if not isinstance(node, (ast.Assign, ast.AnnAssign)) or not isinstance(value_node, ast.Dict):
        raise ScenarioError(
            f"{where}:{line}: PARAMS must be assigned a literal dict such as {example}, "
            f"written out in the file (no names, calls or comprehensions)",
            path=where, line=line,
        )
    params: dict[str, Any] = {}
    for key_node, value_node_item in zip(value_node.keys, value_node.values):
        item_line = getattr(key_node or value_node_item, "lineno", line)
        if key_node is None:
            raise ScenarioError(
                f"{where}:{item_line}: PARAMS cannot use ** unpacking; write every key out, "
                f"e.g. {example}",
                path=where, line=item_line,
            )
        try:
            key = ast.literal_eval(key_node)
            value = ast.literal_eval(value_node_item)
        except (ValueError, TypeError, RecursionError, MemoryError):  # TypeError: {[1]: 2}
            raise ScenarioError(
                f"{where}:{item_line}: PARAMS holds an expression "
                f"({_shown(key_node)}: {_shown(value_node_item)}); use literal "
                f"keys and values only, e.g. {example}",
                path=where, line=item_line,
            ) from None
        if not isinstance(key, str) or not key.isidentifier() or keyword.iskeyword(key):
            raise ScenarioError(
                f"{where}:{item_line}: PARAMS key {_literal(key)} is not a valid parameter name; "
                f"use identifier strings (they become setup()'s keyword arguments)",
                path=where, line=item_line,
            )
        if not isinstance(value, _PARAM_TYPES):
            raise ScenarioError(
                f"{where}:{item_line}: PARAMS[{_literal(key)}] is {type(value).__name__} "
                f"{_shown(value_node_item)}; "
                f"use an int, float, bool or str literal (--param {_cut(key)}=... parses to its type)",
                path=where, line=item_line,
            )
        if isinstance(value, int) and value.bit_length() > _PARAM_INT_BITS:
            # (Python prints no int of more than 4,300 digits: every report would fail)
            raise ScenarioError(
                f"{where}:{item_line}: PARAMS[{_literal(key)}] is an integer of "
                f"{value.bit_length():,} bits; use one of at most {_PARAM_INT_BITS} bits",
                path=where, line=item_line,
            )
        if isinstance(value, float) and not math.isfinite(value):
            # (JSON has no infinity: `scenarios --json` would print what no parser reads)
            raise ScenarioError(
                f"{where}:{item_line}: PARAMS[{_literal(key)}] is {value!r}; use a finite number",
                path=where, line=item_line,
            )
        if key in params:
            raise ScenarioError(
                f"{where}:{item_line}: PARAMS lists {_literal(key)} twice; keep one",
                path=where, line=item_line,
            )
        params[key] = value
    return params


def _parse_choice(where: str, node: ast.AST | None, name: str, choices: type[_E],
                  default: _E) -> _E:
    if node is None:
        return default
    line = node.lineno
    listed = ", ".join(repr(choice.value) for choice in choices)
    value_node = getattr(node, "value", None)
    value = None
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(value_node, ast.Constant):
        value = value_node.value
    if not isinstance(value, str):
        raise ScenarioError(
            f"{where}:{line}: {name} must be a string literal, one of {listed}",
            path=where, line=line,
        )
    try:
        return choices(value)
    except ValueError:
        raise ScenarioError(
            f"{where}:{line}: {name} = {_literal(value)} is not one of {listed}; use one of those "
            f"(or remove {name} to get '{default}')",
            path=where, line=line,
        ) from None


def _check_function_shapes(where: str, nodes: dict[str, ast.AST], params: dict) -> None:
    """Catch signature mistakes that would otherwise surface as a TypeError on the GPU box."""
    for name in ("setup", "step", "steps", "outputs"):
        node = nodes.get(name)
        bound = isinstance(node, (ast.Assign, ast.AnnAssign))
        value = getattr(node, "value", None) if bound else None
        if isinstance(value, ast.Constant) and not (name == "outputs" and value.value is None):
            # step = None, setup = 5: never callable (outputs = None means none, as loading
            # takes it: an `except ImportError: outputs = None` fallback)
            raise ScenarioError(
                f"{where}:{node.lineno}: {name} is bound to {_literal(value.value)}, not a function; "
                f"define it with def {name}(...)",
                path=where, line=node.lineno,
            )
        if isinstance(node, ast.AsyncFunctionDef):
            raise ScenarioError(
                f"{where}:{node.lineno}: {name}() is async; make it a plain def "
                f"(CUDA work is enqueued synchronously on the current stream)",
                path=where, line=node.lineno,
            )
        if isinstance(node, ast.ClassDef):
            raise ScenarioError(
                f"{where}:{node.lineno}: {name} is a class; define it as a function",
                path=where, line=node.lineno,
            )

    for name in ("step", "steps", "outputs"):
        args = _written_signature(nodes.get(name))
        if args is not None and not _accepts_one_positional(args):
            node = nodes[name]
            raise ScenarioError(
                f"{where}:{node.lineno}: {name}() must take exactly one argument, the state "
                f"setup() returned: def {name}(state)",
                path=where, line=node.lineno,
            )

    setup = nodes.get("setup")
    args = _written_signature(setup)
    if args is None:
        return  # bound by import, a decorator or another call: checked when it is called
    # Positional parameters with a default are the last len(args.defaults) of them. One that
    # is positional-only fails when it has none or PARAMS names it (first: PARAMS naming it
    # would otherwise hide why); with a default and not in PARAMS, setup(**params) runs.
    positional = args.posonlyargs + args.args
    first_default = len(positional) - len(args.defaults)
    for index, arg in enumerate(args.posonlyargs):
        if index < first_default or arg.arg in params:
            raise ScenarioError(
                f"{where}:{setup.lineno}: setup() parameter {arg.arg!r} is positional-only; "
                f"setup is called with keywords (setup(**params)), so remove the '/'",
                path=where, line=setup.lineno,
            )
    keyword_names = [a.arg for a in args.args + args.kwonlyargs]
    if args.kwarg is None:
        for key in params:
            if key not in keyword_names:
                line = nodes["PARAMS"].lineno
                raise ScenarioError(
                    f"{where}:{line}: PARAMS has {key!r} but setup() (line {setup.lineno}) "
                    f"takes no parameter {key!r}; add it to setup's parameters or drop it "
                    f"from PARAMS",
                    path=where, line=line,
                )
    required = [a.arg for a in args.args[: max(0, first_default - len(args.posonlyargs))]]
    required += [
        a.arg for a, default in zip(args.kwonlyargs, args.kw_defaults) if default is None
    ]
    for name in required:
        if name not in params:
            raise ScenarioError(
                f"{where}:{setup.lineno}: setup() parameter {name!r} has no default and is "
                f"not in PARAMS; add {name!r} to PARAMS (or give it a default)",
                path=where, line=setup.lineno,
            )


def _written_signature(node: ast.AST | None) -> ast.arguments | None:
    """The parameters a contract function is called with, where the file shows them: an
    undecorated ``def`` or a lambda bound to the name (a decorator may change them)."""
    if isinstance(node, ast.FunctionDef) and not node.decorator_list:
        return node.args
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Lambda):
        return node.value.args
    return None


def _accepts_one_positional(args: ast.arguments) -> bool:
    positional = args.posonlyargs + args.args
    required = len(positional) - len(args.defaults)
    required_kwonly = sum(1 for default in args.kw_defaults if default is None)
    if required_kwonly:
        return False
    return required <= 1 and (len(positional) >= 1 or args.vararg is not None)


# --------------------------------------------------------------------------- stage 2: load

_module_counter = itertools.count()


@dataclass
class Scenario:
    """A loaded scenario: its :class:`ScenarioInfo` plus the callables of the contract."""

    info: ScenarioInfo
    module: types.ModuleType
    setup: Callable[..., Any]
    step: Callable[[Any], Any] | None
    steps: Callable[[Any], dict] | None
    outputs_fn: Callable[[Any], dict] | None

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def path(self) -> Path:
        return self.info.path

    @property
    def params(self) -> dict[str, Any]:
        """Parameter defaults (a fresh copy; safe to modify)."""
        return dict(self.info.params)

    def make_state(self, params: dict[str, Any] | None = None) -> Any:
        """Run ``setup(**params)`` eagerly and return the state it builds.

        ``params`` is the result of :func:`parse_params` (or None for the defaults); keys it
        lacks take their defaults. An exception in setup becomes a :class:`ScenarioError`
        naming the scenario's file:line. Costs whatever setup costs (allocation, H2D copies,
        kernel compilation on the first call in a process).
        """
        merged = dict(self.info.params)
        for key, value in (params or {}).items():
            if key not in merged:
                raise ScenarioError(
                    f"{self.info.path}: unknown parameter {key!r}; known: "
                    f"{_known_keys(self.info.params)}",
                    path=str(self.info.path),
                )
            merged[key] = value
        return self._call(self.setup, "setup()", **merged)

    def graph_steps(self, state: Any) -> dict[str, Callable[[], Any]]:
        """The work to capture, as {graph name: zero-argument callable}, in capture order.

        ``{"step": ...}`` for a ``step(state)`` scenario; for a ``steps(state)`` scenario,
        the dict it returns. Each callable, when it raises, raises a :class:`ScenarioError`
        naming the scenario's file:line (the original exception is its ``__cause__``).
        """
        if self.step is not None:
            return {"step": functools.partial(self._call, self.step, "step()", state)}
        line = self.info.line_of("steps")
        graphs = self._call(self.steps, "steps()", state)
        if not isinstance(graphs, dict) or not graphs:
            raise ScenarioError(
                f"{self.info.path}:{line}: steps() returned {type(graphs).__name__}; return a "
                f"non-empty dict {{graph name: callable taking no arguments}}",
                path=str(self.info.path), line=line,
            )
        wrapped = {}
        for key, call in graphs.items():
            if not isinstance(key, str) or not callable(call):
                raise ScenarioError(
                    f"{self.info.path}:{line}: steps() entry {_literal(key)} -> {_literal(call)} is not "
                    f"str -> callable; map each graph name to a function of no arguments",
                    path=str(self.info.path), line=line,
                )
            wrapped[key] = functools.partial(self._call, call, f"steps()[{key!r}]")
        return wrapped

    def outputs(self, state: Any) -> dict[str, Any]:
        """``outputs(state)``: the arrays replay must reproduce ({} when not defined)."""
        if self.outputs_fn is None:
            return {}
        result = self._call(self.outputs_fn, "outputs()", state)
        line = self.info.line_of("outputs")
        if not isinstance(result, dict):
            raise ScenarioError(
                f"{self.info.path}:{line}: outputs() returned {type(result).__name__}; "
                f"return a dict {{name: cupy array}}",
                path=str(self.info.path), line=line,
            )
        for key in result:
            if not isinstance(key, str):  # ("returned dict; return a dict" said nothing)
                raise ScenarioError(
                    f"{self.info.path}:{line}: outputs() returned a dict with the key "
                    f"{_literal(key)} ({type(key).__name__}); name each output with a str",
                    path=str(self.info.path), line=line,
                )
        for key, value in result.items():
            if not hasattr(value, "shape") or not hasattr(value, "dtype"):
                raise ScenarioError(
                    f"{self.info.path}:{line}: outputs()[{_literal(key)}] is "
                    f"{type(value).__name__}, not an array; return device arrays",
                    path=str(self.info.path), line=line,
                )
            kind = getattr(value.dtype, "kind", None)  # (torch's dtypes have none)
            if kind in _NOT_COMPARED:  # a NumPy array of objects, text or dates
                raise ScenarioError(
                    f"{self.info.path}:{line}: outputs()[{_literal(key)}] holds "
                    f"{_NOT_COMPARED[kind]} (dtype {value.dtype}), which replay cannot "
                    f"reproduce nor the check compare; return arrays of numbers",
                    path=str(self.info.path), line=line,
                )
        return result

    def error_from(self, error: BaseException, during: str) -> ScenarioError:
        """A one-line :class:`ScenarioError` for an exception raised by the scenario's code.

        Names the innermost frame in the scenario file (and, when the exception came from
        deeper code such as kernels.py, where it was raised). For runners that call scenario
        code themselves.
        """
        return located_error(self.info.path, error, during)

    def _call(self, function: Callable, during: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except ScenarioError:
            raise
        except (Exception, SystemExit) as error:  # (sys.exit() in a scenario: its error)
            if isinstance(error, TypeError) and _refuses(function, args, kwargs):
                # the function's parameters do not take what accelgraph passes (a
                # decorator's, or a binding that depends on what ran: the static check left
                # it to here)
                raise self._signature_error(error, during, args, kwargs) from error
            raise self.error_from(error, during) from error

    def _signature_error(self, error: TypeError, during: str, args: tuple,
                         kwargs: dict) -> ScenarioError:
        name = during.split("(")[0]
        line = self.info.line_of(name) if name in _CONTRACT_NAMES else None
        if "[" in during:  # a steps() entry, called with no arguments
            passed = f"{during}()"
        elif kwargs:
            passed = f"{name}({', '.join(f'{key}=...' for key in kwargs)})"
        else:
            passed = f"{name}({', '.join('state' for _ in args)})" if name in (
                "step", "steps", "outputs") else f"{during} with {len(args)} argument(s)"
        where = f"{self.info.path}:{line}" if line else f"{self.info.path}"
        return ScenarioError(
            f"{where}: {during} cannot be called as accelgraph calls it, {passed}: "
            f"TypeError: {_one_line(_message_of(error))}",
            path=str(self.info.path), line=line)


def load_scenario(path: str | os.PathLike) -> Scenario:
    """Inspect, then execute a scenario file as a fresh module and return a :class:`Scenario`.

    Each call executes the file again under a unique module name, so two loads never share
    module state. The file's folder is put on ``sys.path`` so that it can import helper
    modules beside it. An exception while executing it (a failing import, say) becomes a
    :class:`ScenarioError` naming the file:line that raised it.
    """
    info = inspect_scenario(path)
    where = str(info.path)
    source = info.path.read_text(encoding="utf-8-sig")
    folder = str(info.path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)

    module_name = f"_accelgraph_scenario_{next(_module_counter)}_{_safe_identifier(info.name)}"
    module = types.ModuleType(module_name, info.doc or None)
    module.__file__ = str(info.path.resolve())
    sys.modules[module_name] = module  # dataclasses and pickling look modules up here
    try:
        # Compiled from the text already inspected; no __pycache__ is written beside it.
        # dont_inherit: this module's own `from __future__ import annotations` must not apply
        # to the scenario (its annotations would become strings, unlike under `python`).
        exec(compile(source, where, "exec", dont_inherit=True), module.__dict__)  # noqa: S102
    except (Exception, SystemExit) as error:
        sys.modules.pop(module_name, None)
        raise located_error(info.path, error, "importing the scenario") from error

    def member(name: str) -> Callable | None:
        value = getattr(module, name, None)
        if value is not None and not callable(value):
            line = info.line_of(name)
            raise ScenarioError(
                f"{where}:{line}: {name} is {type(value).__name__}, not a function; "
                f"define it with def {name}(...)",
                path=where, line=line,
            )
        return value

    setup, step, steps = member("setup"), member("step"), member("steps")
    # What the text did not settle (a binding inside a branch, a del, a binding the check
    # could not see), as the file's run left it:
    if setup is None:
        raise ScenarioError(
            f"{where}:{info.line_of('setup')}: setup is not defined once the file has run (the "
            f"branch that binds it did not run, or it was deleted); define setup(**PARAMS)",
            path=where, line=info.line_of("setup"))
    if (step is None) == (steps is None):
        line = max(info.line_of("step"), info.line_of("steps"))
        what = "neither step nor steps is" if step is None else "both step and steps are"
        raise ScenarioError(
            f"{where}:{line}: {what} defined once the file has run; keep step(state) for one "
            f"graph or steps(state) returning {{name: callable}} for several",
            path=where, line=line)
    declared = getattr(module, "PARAMS", info.params)
    if not _same_params(declared, info.params):
        line = info.line_of("PARAMS")
        raise ScenarioError(
            f"{where}:{line}: PARAMS is {_shown_value(declared)} once the file has run, not "
            f"the literal accelgraph reads from the file without running it "
            f"({_shown_value(info.params)}); bind PARAMS once, as a literal, and leave it as "
            f"written", path=where, line=line)
    if info.multi_graph != (steps is not None):
        info = dataclasses.replace(info, multi_graph=steps is not None)
    outputs = member("outputs")
    if outputs is not None and not info.has_outputs:
        # an outputs() the file imports or makes, which the text alone does not show: the
        # check must run (the CLI skips it for a scenario with none). Never the other way: a
        # def outputs the text shows that is not there once the file has run is left to the
        # check, which then says it was not run.
        info = dataclasses.replace(info, has_outputs=True)
    elif outputs is None and info.has_outputs and "outputs" in vars(module):
        # bound to None once the file has run (`outputs = None` where an import of one
        # failed): a scenario without outputs, as inspecting it says, not a check not run
        info = dataclasses.replace(info, has_outputs=False)
    return Scenario(
        info=info,
        module=module,
        setup=setup,
        step=step,
        steps=steps,
        outputs_fn=outputs,
    )


def _same_params(value: Any, params: dict) -> bool:
    """Whether ``value`` (PARAMS once the file has run) is ``params`` (the literal read from
    the file): the same keys in the same order, values equal and of the same type."""
    if not isinstance(value, dict) or list(value) != list(params):
        return False
    try:
        return all(type(value[key]) is type(default) and bool(value[key] == default)
                   for key, default in params.items())
    except Exception:  # a value whose comparison raises (an array)
        return False


def _refuses(function: Callable, args: tuple, kwargs: dict) -> bool:
    """Whether ``function``'s own signature refuses these arguments (its decorator's, not
    the function under it; False where it has none to read, a C function's)."""
    try:
        inspect.signature(function, follow_wrapped=False).bind(*args, **kwargs)
    except TypeError:
        return True
    except ValueError:  # no signature
        return False
    return False


def _shown_value(value: Any, most: int = 60) -> str:
    """A value as a message quotes it, cut to ``most`` characters."""
    try:
        text = repr(value)
    except Exception:  # an int too long to print, a repr that raises
        text = f"a {type(value).__name__}"
    return _cut(text, most)


def located_error(path: str | os.PathLike, error: BaseException, during: str) -> ScenarioError:
    """Turn an exception raised while running a scenario's code into a one-line ScenarioError.

    The location is the innermost traceback frame in the scenario file ``path``; when the
    exception was raised deeper (a library), that place is named too, e.g.
    ``scenarios/jacobi.py:31: setup() raised ValueError: ... (raised in kernels.py:210)``.
    """
    scenario_file = os.path.realpath(os.fspath(path))
    frames = traceback.extract_tb(error.__traceback__)
    in_scenario = [f for f in frames if os.path.realpath(f.filename) == scenario_file]
    line = in_scenario[-1].lineno if in_scenario else None
    if (line is None and isinstance(error, SyntaxError) and error.lineno and error.filename
            and os.path.realpath(error.filename) == scenario_file):
        line = error.lineno  # the scenario's own text did not compile
    where = f"{path}:{line}" if line else f"{path}"
    message = _one_line(_message_of(error)) or "(no message)"
    text = f"{where}: {during} raised {type(error).__name__}: {message}"
    if frames and (not in_scenario or frames[-1] is not in_scenario[-1]):
        deepest = frames[-1]
        text += f" (raised in {Path(deepest.filename).name}:{deepest.lineno})"
    detail = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return ScenarioError(text, path=str(path), line=line, detail=detail)


# --------------------------------------------------------------------------- parameters


def parse_params(defaults: dict[str, Any], overrides: list[str] | tuple[str, ...],
                 source: str = "--param", *, declared: dict[str, Any] | None = None) -> dict:
    """Apply ``--param key=value`` strings to ``defaults``; values parse to the default's type.

    int accepts ``8``, ``-3``, ``1_000`` and ``0x10``; float anything ``float()`` takes; bool
    true/false, yes/no, on/off, 1/0 (any case); str takes the text as is. A later override of
    the same key wins. Returns a new dict; raises :class:`ScenarioError` for a missing ``=``,
    an unknown key (listing the known ones) or a value that does not parse. ``source`` names
    where the overrides came from in those messages. ``declared``: the scenario's PARAMS, which
    those messages quote as the defaults, where ``defaults`` holds values applied before (a
    record's, an earlier option's); ``defaults`` itself when None.
    """
    params = dict(defaults)
    declared = defaults if declared is None else declared
    for item in overrides:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ScenarioError(
                f"{source} {_shown_value(item)}: expected KEY=VALUE, e.g. "
                f"{source if source.startswith('--') else '--param'} batch=8; "
                f"known keys: {_known_keys(declared)}"
            )
        if key not in defaults:
            raise ScenarioError(
                f"{source} {_shown_value(item)}: unknown key {_shown_value(key)}; known keys: "
                f"{_known_keys(declared)}"
            )
        params[key] = _parse_value(key, text, declared.get(key, defaults[key]), source)
    return params


def format_params(params: dict[str, Any]) -> str:
    """``{"batch": 8, "act": "gelu"}`` -> ``"batch=8 act=gelu"`` (the --param spelling)."""
    return " ".join(f"{key}={value}" for key, value in params.items())


def _parse_value(key: str, text: str, default: Any, source: str = "--param") -> Any:
    kind = type(default)
    stripped = text.strip()
    try:
        if kind is bool:
            lowered = stripped.lower()
            if lowered in _TRUE_WORDS:
                return True
            if lowered in _FALSE_WORDS:
                return False
            raise ValueError(text)
        if kind is int:
            try:
                value = int(stripped)  # decimal, also "08" and "1_000"
            except ValueError:
                if _LONG_DECIMAL.fullmatch(stripped):  # past Python's 4,300-digit limit
                    raise ScenarioError(
                        f"{source} {key}=...: an integer of more than 4,300 digits; {key} "
                        f"takes one of at most {_PARAM_INT_BITS} bits") from None
                value = int(stripped, 0)  # 0x10, 0o17, 0b101
            if value.bit_length() > _PARAM_INT_BITS:
                raise ScenarioError(
                    f"{source} {key}=...: an integer of {value.bit_length():,} bits; {key} "
                    f"takes one of at most {_PARAM_INT_BITS} bits"
                )
            return value
        if kind is float:
            value = float(stripped)
            if not math.isfinite(value):  # as for a PARAMS default: JSON has no infinity
                raise ValueError(text)
            return value
        return text
    except ValueError:
        expected = {
            bool: "a bool (true/false, yes/no, on/off, 1/0)",
            int: "an int (e.g. 8)",
            float: "a finite float (e.g. 0.5)",
        }[kind]
        shown = repr(_cut(text))
        raise ScenarioError(
            f"{source} {key}={shown}: {key} expects {expected} like its default "
            f"{default!r}, got {shown}"
        ) from None


def _known_keys(defaults: dict[str, Any]) -> str:
    if not defaults:
        return "none (this scenario has no PARAMS)"
    return ", ".join(f"{key} ({type(value).__name__}, default {value!r})"
                     for key, value in defaults.items())


def _one_line(text: str, keep_left: bool = False) -> str:
    """The first line of ``text`` that is not blank, and how many more there are.
    ``keep_left``: its leading spaces kept (a message that starts with a file's name, which
    may begin with a space)."""
    lines = [line.rstrip() if keep_left else line.strip()
             for line in str(text).splitlines() if line.strip()]
    if len(lines) <= 1:
        return lines[0] if lines else ""
    return f"{lines[0]} [+{len(lines) - 1} more lines]"


def _safe_identifier(text: str) -> str:
    cleaned = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in text)
    return cleaned or "scenario"
