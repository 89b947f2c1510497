"""`import accelgraph_cli` and `accelgraph --help` never import CuPy; GPU calls fail clearly.

Each check runs in a child interpreter whose sitecustomize puts a finder first on
sys.meta_path that refuses CuPy and NVIDIA's bindings (as on a machine without them) and
records every attempt to import them, so "never imported" means not even tried — whether or
not CuPy is installed where the tests run.
"""

import os
import subprocess
import sys
import textwrap

import pytest
from _paths import ROOT, child_env

BLOCKED = ("cupy", "cupyx", "cupy_backends", "cuda", "fastrlock")

SITECUSTOMIZE = textwrap.dedent(f"""
    import atexit, os, sys

    BLOCKED = {BLOCKED!r}
    attempts = []

    class RefuseCuPy:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                attempts.append(name)
                raise ModuleNotFoundError(f"No module named {{name!r}} (blocked for this test)")
            return None

    sys.meta_path.insert(0, RefuseCuPy())
    for name in [m for m in sys.modules if m.split(".")[0] in BLOCKED]:
        del sys.modules[name]

    def report():
        with open(os.environ["ACCELGRAPH_IMPORT_LOG"], "w") as log:
            log.write("\\n".join(attempts))

    atexit.register(report)
""")


@pytest.fixture
def run_blocked(tmp_path):
    """Run ``python ARGS...`` with CuPy unimportable; returns (process, imports attempted)."""
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    log = tmp_path / "imports.log"
    env = child_env(ACCELGRAPH_IMPORT_LOG=str(log), NO_COLOR="1", COLUMNS="100",
                    PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))

    def run(*args: str):
        proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                              env=env, cwd=ROOT)
        attempted = log.read_text().split() if log.exists() else None
        return proc, attempted

    return run


def test_the_blocker_works(run_blocked):
    proc, attempted = run_blocked("-c", "import cupy")
    assert proc.returncode == 1 and "blocked for this test" in proc.stderr
    assert attempted == ["cupy"]


def test_import_does_not_import_cupy(run_blocked):
    proc, attempted = run_blocked("-c", "import accelgraph_cli, accelgraph_cli.cli")
    assert proc.returncode == 0, proc.stderr
    assert attempted == []


def test_help_works_without_cupy_and_lists_verbs(run_blocked):
    proc, attempted = run_blocked("-m", "accelgraph_cli", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "Capture, inspect and replay CUDA graphs" in proc.stdout
    for verb in ("capture", "replay", "dump", "show", "diff", "smoke"):
        assert f" {verb} " in proc.stdout, verb
    assert proc.stderr == ""
    assert attempted == []


def test_show_works_without_cupy(run_blocked):
    proc, attempted = run_blocked("-m", "accelgraph_cli", "show",
                                  str(ROOT / "tests" / "data" / "dumps" / "forkjoin_verbose.dot"))
    assert proc.returncode == 0, proc.stderr
    assert "Nodes          9  (kernel 9)" in proc.stdout
    assert attempted == []


def test_a_saved_profile_is_shown_without_cupy_or_cuda_modules(run_blocked):
    proc, attempted = run_blocked("-c", textwrap.dedent(f"""
        import sys
        from accelgraph_cli.cli.app import main
        code = main(["profile", {str(ROOT / "tests" / "data" / "profiles" / "mlp_decode.json")!r}])
        print("EXIT", code)
        print("CUDA MODULES", sorted(m for m in sys.modules if m.startswith("accelgraph_cli.cuda")))
    """))
    assert proc.returncode == 0, proc.stderr
    assert "EXIT 0" in proc.stdout and "mlp_decode.py:55" in proc.stdout
    assert "CUDA MODULES []" in proc.stdout
    assert attempted == []


def test_capture_without_cupy_is_one_clear_no_gpu_error(run_blocked):
    proc, attempted = run_blocked("-c", textwrap.dedent("""
        from accelgraph_cli import Graph, NoGPUError
        try:
            Graph().capture_begin()
        except NoGPUError as e:
            print('EXIT', e.exit_code); print('MSG', e)
    """))
    assert proc.returncode == 0, proc.stderr
    assert "EXIT 3" in proc.stdout
    assert ("show and diff of saved dumps, saved profiles and audits, scenarios and smoke --list work "
            "without a GPU") in proc.stdout
    assert attempted and attempted[0] == "cupy"  # it tried, and said what to do


def test_kernels_without_cupy_raise_no_gpu_error(run_blocked):
    # A scenario's setup calls kernels.preload: without CuPy that is the same NoGPUError a
    # capture gives (exit code 3, what works without a GPU), not a raw ModuleNotFoundError.
    proc, attempted = run_blocked("-c", textwrap.dedent("""
        from accelgraph_cli import NoGPUError, kernels
        for call in (lambda: kernels.preload("softmax.cu"),
                     lambda: kernels.get_kernel("softmax.cu", "nosuch")):
            try:
                call()
            except NoGPUError as e:
                print('EXIT', e.exit_code, str(e).startswith('CuPy is not installed'))
    """))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["EXIT 3 True", "EXIT 3 True"]
    assert attempted and attempted[0] == "cupy"
