"""What the verbs that need no GPU load at start-up, in a child interpreter.

`accelgraph show` and `diff` are meant to start fast on any machine: no GPU stack (CuPy,
torch, CUPTI) and no pydantic, which typer 0.29 and later import for every verb that has options
(about 0.08 s of CPU and 14 MB on each run; pyproject.toml keeps typer below it).
"""

import json
import subprocess
import sys
import textwrap

import pytest
from _paths import DUMPS, ROOT, child_env

HEAVY = ("cupy", "torch", "cupti", "pydantic", "pydantic_core")


def loaded_by(*argv: str) -> tuple[int, list[str]]:
    """Exit code of ``accelgraph ARGV...`` run in-process in a child, and which HEAVY top-level
    packages it left in sys.modules."""
    code = textwrap.dedent(f"""
        import contextlib, io, json, sys
        from accelgraph_cli.cli.app import main
        status = 0
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                main({list(argv)!r})
            except SystemExit as exc:
                status = exc.code or 0
        heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))
        print(json.dumps([status, heavy]))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=child_env(NO_COLOR="1", COLUMNS="100"), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    status, heavy = json.loads(proc.stdout.strip().splitlines()[-1])
    return status, heavy


@pytest.mark.parametrize("argv", [
    ("--help",),
    ("show", str(DUMPS / "scenario_saxpy_verbose.dot")),
    ("show", str(DUMPS / "forkjoin_basic.dot"), "--json"),
    ("diff", str(DUMPS / "chain_basic.dot"), str(DUMPS / "chain_verbose.dot")),
])
def test_cpu_verbs_load_no_gpu_stack_and_no_pydantic(argv):
    status, heavy = loaded_by(*argv)
    assert status in (0, 1), status  # diff exits 1 when the graphs differ
    assert heavy == [], f"accelgraph {' '.join(argv[:1])} loaded {heavy}"
