"""`import accelgraph_cli` and `accelgraph --help` never import CuPy; GPU calls fail clearly."""

import subprocess
import sys

# Runs in a child interpreter where importing cupy raises, as on a machine without CuPy.
BLOCK_CUPY = "import sys; sys.modules['cupy'] = None; sys.modules['cuda'] = None\n"


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCK_CUPY + code], capture_output=True, text=True, timeout=120
    )


def test_import_does_not_import_cupy():
    proc = _run(
        "import accelgraph_cli, accelgraph_cli.cli\n"
        "import sys\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('cupy', 'cupy_backends')"
        " and sys.modules[m] is not None]\n"
        "print('LOADED', loaded)\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert "LOADED []" in proc.stdout


def test_help_works_without_cupy_and_lists_verbs():
    proc = _run("from accelgraph_cli.cli import main\nraise SystemExit(main(['--help']))")
    assert proc.returncode == 0, proc.stderr
    assert "Capture, inspect and replay CUDA graphs" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_capture_without_cupy_is_one_clear_no_gpu_error():
    proc = _run(
        "from accelgraph_cli import Graph, NoGPUError\n"
        "try:\n"
        "    Graph().capture_begin()\n"
        "except NoGPUError as e:\n"
        "    print('EXIT', e.exit_code); print('MSG', e)\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert "EXIT 3" in proc.stdout
    assert "show and diff work without a GPU" in proc.stdout
