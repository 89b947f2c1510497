"""accelgraph as a process in a pipeline: standard output closed by its reader (`| head`),
signals. Each test starts `python -m accelgraph_cli` in a temporary directory."""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from _paths import child_env, recorded, requires_no_gpu


def _run_into_closed_pipe(tmp_path, *args):
    """Run accelgraph with its standard output a pipe nobody reads any more."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to stdout now fails with EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", *map(str, args)],
                              stdout=write_end, stderr=subprocess.PIPE, text=True,
                              cwd=tmp_path, env=child_env(),
                              timeout=120)
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr


@pytest.mark.parametrize("args", [
    ["show", "chain1k_verbose.dot"],
    ["show", "--json", "chain_verbose.dot"],
    ["scenarios"],
    ["scenarios", "--json"],
    ["diff", "chain_verbose.dot", "forkjoin_basic.dot"],
    ["diff", "--json", "chain_verbose.dot", "forkjoin_basic.dot"],
    ["smoke", "--list"],
    ["--version"],
    ["--help"],
    ["show", "--help"],
], ids=" ".join)
def test_closed_stdout_ends_quietly_with_141_not_a_verdict(tmp_path, args):
    args = [recorded(a) if a.endswith(".dot") else a for a in args]
    code, err = _run_into_closed_pipe(tmp_path, *args)
    assert code == 141, (code, err)  # 128 + SIGPIPE, as Unix tools end; never 0/1, never 70
    assert err == ""


@pytest.mark.parametrize("args", [
    ["show", "--json", "chain1k_verbose.dot"],
    ["diff", "--json", "chain1k_verbose.dot", "chain_verbose.dot"],
], ids=" ".join)
def test_a_reader_that_stops_part_way_through_a_large_output_gives_141(tmp_path, args):
    # The reader takes the first bytes and goes (`| head -c 100`): the rest of the JSON, far
    # more than a pipe holds, can no longer be written, so the output is cut short and the
    # exit code must say so (one large write used to be reported as written: exit 0, or 1
    # for diff, which reads as its "different" verdict).
    args = [recorded(a) if a.endswith(".dot") else a for a in args]
    proc = subprocess.Popen([sys.executable, "-m", "accelgraph_cli", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
                            env=child_env())
    try:
        head = proc.stdout.read(100)
        proc.stdout.close()
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert head.startswith(b"{")
    assert code == 141, (code, err)
    assert err == ""


def test_closed_stdout_still_leaves_whole_files_and_no_temporary_ones(tmp_path):
    code, err = _run_into_closed_pipe(tmp_path, "show", recorded("chain1k_verbose.dot"),
                                      "-o", tmp_path / "g.json")
    assert code == 141, err
    assert len(json.loads((tmp_path / "g.json").read_text())["nodes"]) == 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]


_INTERRUPT_ON_IMPORT = """
import sys

class CtrlC:  # Ctrl-C arrives while `name` is being imported
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            raise KeyboardInterrupt

sys.meta_path.insert(0, CtrlC())
sys.argv = ["accelgraph", "--help"]
{entry}
"""

ENTRIES = {
    "python -m accelgraph_cli": "import runpy; runpy.run_module('accelgraph_cli', run_name='__main__')",
    "console script": "from accelgraph_cli.cli import main; sys.exit(main())",  # what pip writes
}


@pytest.mark.parametrize("module", ["typer", "rich.console", "accelgraph_cli.enums"])
@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_ctrl_c_during_start_up_is_one_line_and_130(tmp_path, entry, module):
    code = _INTERRUPT_ON_IMPORT.format(module=module, entry=ENTRIES[entry])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env=child_env(), timeout=60)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr == "accelgraph: interrupted\n"


def test_importing_the_package_imports_nothing_else():
    code = ("import sys, accelgraph_cli; "
            "print(sorted(m for m in sys.modules if m.startswith('accelgraph_cli')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=child_env(), timeout=60)
    assert proc.stdout.split() == ["['accelgraph_cli']"], proc.stderr
    from accelgraph_cli import ExitCode, Graph  # loaded on first use

    assert ExitCode.INTERRUPTED == 130 and Graph.__name__ == "Graph"


def test_the_package_lists_its_lazy_names_and_the_cli_module_is_one_thing():
    import types

    import accelgraph_cli
    from accelgraph_cli import cli

    assert {"Graph", "ExitCode", "graph_pool_handle"} <= set(dir(accelgraph_cli))
    cli.main(["--version"])
    # accelgraph_cli.cli.app is the command's module whatever imported it first (a package
    # attribute of the same name would be replaced by the module at its first import)
    assert isinstance(cli.app, types.ModuleType)
    from accelgraph_cli.cli.app import app

    assert type(app).__name__ == "Typer"


@pytest.mark.parametrize("args", [["--version"], ["show", str(recorded("chain_basic.dot")), "--json"],
                                  ["show", str(recorded("chain_basic.dot"))], ["--help"], []])
def test_a_closed_standard_output_is_output_that_cannot_be_written(tmp_path, args):
    # Started with `>&-`: Python has no sys.stdout at all. What the command prints has nowhere
    # to go: the error that any standard output that cannot be written is, never exit 0.
    proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", *args], cwd=tmp_path,
                          stdin=subprocess.DEVNULL, stdout=None, stderr=subprocess.PIPE,
                          text=True, timeout=120, env=child_env(),
                          preexec_fn=lambda: os.close(1))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "accelgraph: error: cannot write standard output: Bad file descriptor"]


UNWRITABLE_STDOUT = {
    # opened read-only (`1</dev/null`): every write fails with EBADF
    "read-only": (os.devnull, "r", "Bad file descriptor"),
    "full device": ("/dev/full", "w", "No space left on device"),  # `> /dev/full`
}


@pytest.mark.parametrize("target", sorted(UNWRITABLE_STDOUT))
@pytest.mark.parametrize("args", [["--version"], ["show", str(recorded("chain_basic.dot"))],
                                  ["show", str(recorded("chain_basic.dot")), "--json"],
                                  ["--help"], ["show", "--help"], []])
def test_standard_output_that_cannot_be_written_is_bad_input_not_a_bug(tmp_path, args, target):
    # Through echo() (--version, --json) and through rich's console (the listing) alike.
    path, mode, reason = UNWRITABLE_STDOUT[target]
    if not os.path.exists(path):
        pytest.skip(f"no {path} here")
    with open(path, mode) as stdout:
        proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", *args], cwd=tmp_path,
                              stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120,
                              env=child_env())
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"accelgraph: error: cannot write standard output: {reason}"]


@requires_no_gpu
def test_smoke_json_without_a_gpu_into_a_full_stdout_is_a_lost_report(tmp_path):
    # The report CI reads cannot be written: bad input (exit 2), as for an unwritable
    # --junit and for every other verb's standard output, never a quiet exit 3.
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", "smoke", "--json"],
                              cwd=tmp_path, stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=120, env=child_env())
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line == "accelgraph: error: cannot write standard output: No space left on device"


@pytest.mark.parametrize("stderr", ["full device", "closed"])
@pytest.mark.parametrize("args, code", [(["show", "missing.dot"], 2), (["show", "--limit", "x", "a.dot"], 2),
                                        (["diff", str(recorded("chain_basic.dot")),
                                          str(recorded("chain_verbose.dot")), "--limit", "1"], 0)])
def test_a_standard_error_that_cannot_be_written_keeps_the_exit_code(tmp_path, args, code, stderr):
    # The error line has nowhere to go (`2>/dev/full`, `2>&-`), but the exit code still says
    # what happened: 2 for bad input, not 1 (which diff gives a meaning) from a failed print.
    if stderr == "full device" and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with contextlib.ExitStack() as stack:
        full = stack.enter_context(open("/dev/full", "w")) if stderr == "full device" else None
        proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", *args], cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=full, timeout=120,
                              env=child_env(),
                              preexec_fn=None if full else (lambda: os.close(2)))
    assert proc.returncode == code


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz (dot) not installed")
def test_sigterm_while_graphviz_draws_removes_the_temporary_file(tmp_path):
    import signal
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "accelgraph_cli", "show", str(recorded("forkjoin_wide_basic.dot")),
         "-o", "fjw.svg"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        cwd=tmp_path, env=child_env())
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".accelgraph-*.svg")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(tmp_path.glob(".accelgraph-*.svg")), "Graphviz never started drawing"
        proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=30)[1]
    finally:
        proc.kill()
    assert proc.returncode == 143, err  # 128 + SIGTERM
    assert list(tmp_path.iterdir()) == []
    lines = err.splitlines()
    assert lines[0].startswith("warning: drawing 22,500 nodes with Graphviz may take many minutes")
    assert "-o FILE.json" in lines[0]
    assert lines[1:] == ["accelgraph: terminated"]


def test_only_large_drawings_are_announced_as_slow():
    from accelgraph_cli.dot.draw import SLOW_DRAWING_NODES, slow_drawing_warning
    from accelgraph_cli.dot.parse import load_model

    assert slow_drawing_warning(load_model(recorded("chain1k_verbose.dot")), "x") == ""
    assert SLOW_DRAWING_NODES < 10_000
    assert "10,000 nodes" in slow_drawing_warning(load_model(recorded("chain10k_basic.dot")), "x")


def test_control_characters_from_a_dump_or_a_file_name_never_reach_the_terminal(cli, tmp_path):
    # A dump from someone else must not retitle (OSC 0), recolour or ring the terminal it is
    # shown in: the characters are dropped as the text goes out, and the drawing stays
    # aligned (they had no width in the layout).
    dump = tmp_path / "esc.dot"
    dump.write_text('digraph { "a\x1b]0;pwned\x07b" -> "c\x1b[31mred\x9b2J" }')
    code, out, err = cli("show", dump)
    assert code == 0, err
    assert not any(ch in out + err for ch in "\x1b\x07\x9b")  # C1's CSI too
    assert "a]0;pwnedb" in out and "c[31mred2J" in out
    lines = out.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("┌"))
    box = lines[top:top + 4]  # the first node's box: border, two lines of text, border
    assert "a]0;pwnedb" in box[1] and len({len(line.rstrip()) for line in box}) == 1, box
    # a right-to-left override would print the rest of a name backwards (reading as another)
    dump.write_text('digraph { "run\u202egnp.ed\u2066x\u2069\u200f" -> "b" }')
    code, out, err = cli("show", dump)
    assert code == 0 and "rungnp.edx" in out, err
    assert not any(ch in out for ch in "\u202e\u2066\u2069\u200f")
    named = tmp_path / "x\x1b[31my.dot"
    named.write_text('digraph { a -> b }')
    code, out, err = cli("show", named)
    assert code == 0 and "\x1b" not in err and "x[31my.dot" in err  # the generic-DOT note
    code, out, err = cli("show", tmp_path / "gone\x1b]0;t\x07.dot")
    assert code == 2 and "\x1b" not in err and "\x07" not in err


def test_a_line_break_in_a_node_id_or_name_does_not_split_a_row(cli, tmp_path):
    # DOT ids and labels may hold line breaks and tabs; printed as they were, the rest of
    # the id landed on a line of its own under the row
    dump, more = tmp_path / "breaks.dot", tmp_path / "more.dot"
    dump.write_text('digraph G { "x\ny" -> c; "k\tz" [label="a\nb"]; "u\u2028v"; }\n')
    more.write_text('digraph G { "x\ny" -> c; "k\tz" [label="a\nb"]; "u\u2028v"; "q\nr"; }\n')
    code, out, err = cli("show", dump)
    assert code == 0, err
    assert not any(line.strip() in ("y", "b") for line in out.splitlines()), out
    assert any(line.split()[:2] == ["x", "y"] for line in out.splitlines()), out
    assert "\u2028" not in out and any("u v" in line for line in out.splitlines()), out
    code, out, err = cli("diff", dump, more)  # the node added, on its row
    assert code == 1, err
    assert not any(line.strip() == "r" for line in out.splitlines()), out
    assert any(line.startswith("+") and "q r" in line for line in out.splitlines()), out


def test_the_consoles_own_styles_still_pass():
    import io

    from rich.text import Text

    from accelgraph_cli.cli.app import _PrintableConsole

    buffer = io.StringIO()
    console = _PrintableConsole(file=buffer, force_terminal=True, color_system="standard")
    console.print(Text("a\x1b]0;x\x07b", style="red"))
    printed = buffer.getvalue()
    assert "\x1b[31m" in printed and "a]0;xb" in printed and "\x1b]0" not in printed


@pytest.mark.parametrize("stdin, reason", [("closed", "it is closed"),
                                           ("write-only", "Bad file descriptor")])
def test_standard_input_that_cannot_be_read_is_bad_input(tmp_path, stdin, reason):
    # `show - <&-` and `show - 0>file`: one line, exit 2, not an internal error.
    with contextlib.ExitStack() as stack:
        kwargs = {"preexec_fn": lambda: os.close(0)} if stdin == "closed" else {
            "stdin": stack.enter_context(open(tmp_path / "w.txt", "w"))}
        proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", "show", "-"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, env=child_env(),
                              **kwargs)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"accelgraph: error: <stdin>: cannot read standard input: {reason}"]


@pytest.mark.parametrize("sides", [("-", "/dev/stdin"), ("/dev/stdin", "/dev/stdin")])
def test_diff_refuses_standard_input_named_twice(tmp_path, sides):
    # The second side found the pipe the first had drained: "/dev/stdin: empty file".
    proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", "diff", *sides], cwd=tmp_path,
                          input=recorded("chain_basic.dot").read_bytes(), capture_output=True,
                          timeout=120, env=child_env())
    names = " and ".join("<stdin>" if side == "-" else side for side in sides)
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert proc.stderr.decode() == (f"accelgraph: error: A and B are the same pipe ({names}), "
                                    "which can be read once; give a file for one of them\n")


_FLOOD = r"""
import os, sys
out = sys.stdout.buffer
out.write(b"digraph {\n" + b"a -> b;\n" * 200000)  # 1.6 MB: written once the reader reads
out.flush()
sys.stderr.write("flooding\n")
sys.stderr.flush()
os.execvp("yes", ["yes", "a -> b;"])  # faster than any reader: the pipe never runs dry
"""


@pytest.mark.skipif(shutil.which("yes") is None, reason="needs the yes command")
def test_ctrl_c_stops_show_reading_a_pipe_that_never_runs_dry(tmp_path):
    # `yes 'a -> b;' | accelgraph show -`: one read() of a pipe a fast writer keeps full
    # returned only at its end, so Ctrl-C went unheard while the input grew (until the
    # system killed the process, silently). Read a chunk at a time, it is heard at once.
    # The child's address space is capped (4 GiB), so a reader that does not stop runs out
    # of memory in seconds (exit 2) rather than taking the machine's.
    import resource

    def capped():
        resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))

    writer = subprocess.Popen([sys.executable, "-c", _FLOOD], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "accelgraph_cli", "show", "-"],
                                stdin=writer.stdout, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=child_env(),
                                preexec_fn=capped)
        writer.stdout.close()
        assert writer.stderr.readline() == b"flooding\n"  # accelgraph is reading
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail("show - went on reading for 30 s after Ctrl-C")
        took = time.monotonic() - sent
    finally:
        writer.kill()
        writer.wait()
    assert (proc.returncode, out, err) == (130, "", "accelgraph: interrupted\n")
    # heard between two reads: at once (0.05 s here); a read to the end of the pipe went on
    # until the memory cap ended it (seconds), or was heard only when the pipe happened to
    # run dry. test_ctrl_c_is_heard_while_a_pipe_that_never_runs_dry_is_read (in-process,
    # no race) is the one that always tells.
    assert took < 3, f"Ctrl-C heard {took:.1f} s after it was sent"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_diff_refuses_one_fifo_named_twice_before_opening_it(tmp_path):
    # `diff ff ff` waited for ever: the first side drained the FIFO, the second opened it
    # again and waited for a writer. Refused from stat(), which opens nothing (in a child
    # process with a time limit: if it did open the FIFO, the test fails, it does not hang).
    os.mkfifo(tmp_path / "ff")
    proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", "diff", "ff", "ff"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env=child_env())
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("accelgraph: error: A and B are the same pipe (ff and ff), which can "
                           "be read once; give a file for one of them\n")


def test_without_a_standard_output_only_accelgraphs_own_output_fails(monkeypatch, tmp_path):
    # In a process that has no sys.stdout, what accelgraph prints fails (exit 2), but
    # sys.stdout stays None throughout: a scenario's or a library's print(), and the caller's
    # own after main() returns, go nowhere as Python has them, and raise nothing.
    from accelgraph_cli import cli

    monkeypatch.setattr(sys, "stdout", None)
    assert cli.main(["--help"]) == 2
    assert sys.stdout is None
    assert cli.main(["show", str(recorded("chain_basic.dot")), "-o", str(tmp_path / "g.json")]) == 2
    assert sys.stdout is None and (tmp_path / "g.json").exists()
    print("nowhere to go")  # no error: print() of a process without standard output


@pytest.mark.parametrize("args, words", [
    (["show", "nosuch.dot"], "accelgraph: error: nosuch.dot: no such file"),
    (["show", "chain_verbose.dot"], "Nodes"),
], ids=["an error line", "a listing"])
def test_columns_zero_is_an_unknown_width_not_no_output(tmp_path, args, words):
    # rich took COLUMNS=0 for a width of 0 and printed nothing, error lines included
    args = [recorded(a) if a == "chain_verbose.dot" else a for a in args]
    proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", *map(str, args)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env=child_env(COLUMNS="0", LINES="0"))
    assert words in proc.stdout + proc.stderr, (proc.returncode, proc.stdout, proc.stderr)


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252", "ascii"])
def test_output_to_an_encoding_without_box_drawing_is_drawn_in_ascii(encoding, tmp_path):
    # A latin-1 or cp1252 terminal: the box drawing, "…" and "Δ" cannot be written, and
    # show/diff ended in an internal error halfway through their output. One ASCII character
    # stands for each, so the boxes stay aligned.
    def run(*args):
        env = {**child_env(), "PYTHONIOENCODING": encoding, "COLUMNS": "100"}
        proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", *map(str, args)],
                              capture_output=True, timeout=120, env=env)
        return proc.returncode, proc.stdout.decode(encoding), proc.stderr.decode(encoding)

    code, out, err = run("show", recorded("forkjoin_verbose.dot"))
    assert (code, err) == (0, "")
    box = [line for line in out.splitlines() if "#0 kernel" in line][0]
    assert box.lstrip().startswith("| #0 kernel") and "+-----------------------+" in out
    # the cut name keeps the box's width ("…" where the encoding has it, as cp1252 does)
    assert "| cupy_multiply__floa" + ("…" if encoding == "cp1252" else ".") + "  |" in out
    code, out, err = run("diff", recorded("chain1k_verbose.dot"), recorded("chain10k_verbose.dot.gz"))
    assert code == 1 and "internal error" not in err, err
    assert "+9,000 added" in out and out.splitlines()[3].rstrip().endswith("d")
    # a name from the data the encoding lacks: "?" for each cell it takes (a wide character
    # two, a combining accent none), so its box keeps its width
    wide = tmp_path / "wide.dot"
    wide.write_text('digraph G {\n "\u6838a\u0301" -> b;\n}\n', encoding="utf-8")
    code, out, err = run("show", wide)
    assert code == 0, err
    box = [line for line in out.splitlines() if line.startswith(("+", "|"))][:4]
    assert box[1] == "| ??a unknown |" and len({len(line) for line in box}) == 1, box
