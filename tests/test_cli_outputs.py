"""Files the user names for output (show -o, dump --out, capture --out, smoke --junit,
smoke --baseline): a path that cannot be written is bad input (exit 2, one line), never an
internal error; a failed write leaves no file, no temporary file and no new empty folder."""

import errno
import json
import os

import pytest
from _paths import SCENARIOS, recorded, requires_no_gpu

from accelgraph_cli import files
from accelgraph_cli.errors import AccelgraphError

LONG = "x" * 300


def _one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one error line, got:\n{err}"
    assert "Traceback" not in err and "internal error" not in err, err
    assert lines[0].startswith("accelgraph: error:"), lines[0]
    return lines[0]


def _leftovers(folder):
    return sorted(p.name for p in folder.rglob(".accelgraph-*"))


OUTPUT_COMMANDS = {
    "show -o .json": lambda target: ["show", recorded("chain_basic.dot"), "-o", f"{target}.json"],
    "show -o .svg": lambda target: ["show", recorded("chain_basic.dot"), "-o", f"{target}.svg"],
    "smoke --junit": lambda target: ["smoke", SCENARIOS / "saxpy.py", "--junit", f"{target}.xml"],
    "dump --out": lambda target: ["dump", SCENARIOS / "saxpy.py", "--out", f"{target}.dot"],
}


@pytest.mark.parametrize("command", sorted(OUTPUT_COMMANDS))
def test_output_named_like_an_existing_folder_is_bad_input(cli, tmp_path, command):
    args = OUTPUT_COMMANDS[command](tmp_path / "taken")
    (tmp_path / args[-1].rsplit("/", 1)[-1]).mkdir()
    code, out, err = cli(*args)
    assert code == 2, (code, out, err)
    assert "cannot write" in _one_line_error(err) and "folder" in err
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("command", sorted(OUTPUT_COMMANDS))
def test_output_name_too_long_is_bad_input(cli, tmp_path, command):
    code, out, err = cli(*OUTPUT_COMMANDS[command](tmp_path / LONG))
    assert code == 2, (code, out, err)
    assert "File name too long" in _one_line_error(err)
    assert list(tmp_path.iterdir()) == []


def test_capture_out_that_is_a_file_is_bad_input(cli, tmp_path):
    (tmp_path / "afile").write_text("mine\n")
    code, out, err = cli("capture", SCENARIOS / "saxpy.py", "--out", tmp_path / "afile" / "sub")
    assert code == 2, (code, out, err)
    assert "is a file, not a folder" in _one_line_error(err)
    assert (tmp_path / "afile").read_text() == "mine\n"


@pytest.fixture
def disk_full(monkeypatch):
    """Writes through accelgraph_cli.files fail half-way with ENOSPC, as on a full disk."""
    real_open = open

    class HalfWriter:
        def __init__(self, path, mode):
            self.fh = real_open(path, mode)

        def write(self, data):
            self.fh.write(data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

    monkeypatch.setattr(files, "open", HalfWriter, raising=False)


@pytest.mark.parametrize("args", [
    ["show", recorded("chain_basic.dot"), "-o", "out/graph.json"],
    ["smoke", SCENARIOS / "saxpy.py", "--junit", "out/report.xml"],
], ids=["show -o", "smoke --junit"])
def test_disk_full_is_bad_input_and_leaves_no_file(cli, tmp_path, disk_full, args):
    code, out, err = cli(*args)
    assert code == 2, (code, out, err)
    assert "No space left on device" in _one_line_error(err)
    assert not (tmp_path / "out").exists()  # nor the folder the write made for it


@pytest.mark.parametrize("number", ["ESTALE", "ETIMEDOUT", "EMFILE", "ENOMEM"])
def test_a_network_or_resource_failure_while_writing_is_bad_input(cli, tmp_path, monkeypatch,
                                                                   number):
    # a stale NFS handle met while writing was "internal error ... this is a bug" (exit 70)
    real_open = open
    code_of = getattr(errno, number)

    class Failing:
        def __init__(self, path, mode):
            self.fh = real_open(path, mode)

        def write(self, data):
            raise OSError(code_of, os.strerror(code_of))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

    monkeypatch.setattr(files, "open", Failing, raising=False)
    code, out, err = cli("show", recorded("chain_basic.dot"), "-o", "new/graph.json")
    assert (code, out) == (2, "")
    assert _one_line_error(err) == (f"accelgraph: error: cannot write new/graph.json: "
                                    f"{os.strerror(code_of)}")
    assert not (tmp_path / "new").exists()


def test_capture_artifacts_on_a_full_disk(tmp_path, disk_full):
    """capture's writer (GPU-side up to here): a recorded dump stands in for debug_dump."""
    from accelgraph_cli.run.artifacts import write_capture

    text = recorded("chain_verbose.dot").read_text()

    class Recorded:
        def debug_dump(self, path, flags):
            files.write_text_atomic(path, text)

    class Captured:
        name, graph = "step", Recorded()

    class Result:
        graphs = [Captured()]

        def summary(self):
            return {"graphs": [{"name": "step"}]}

    with pytest.raises(AccelgraphError) as raised:
        write_capture(Result(), str(tmp_path / "art"))
    assert str(raised.value) == f"cannot write {tmp_path / 'art' / 'step.dot'}: No space left on device"
    assert not (tmp_path / "art").exists()  # the folder it made goes too


def _capture_result(names, fail_at=None):
    """A capture of graphs ``names`` whose debug_dump writes a recorded dump; the one at
    index ``fail_at`` fails as on a full disk."""
    import types

    text = recorded("chain_verbose.dot").read_text()

    def graph(index):
        def debug_dump(path, flags):
            if index == fail_at:
                raise OSError(errno.ENOSPC, "No space left on device")
            files.write_text_atomic(path, f"// graph {index}\n" + text)
        return types.SimpleNamespace(debug_dump=debug_dump)

    graphs = [types.SimpleNamespace(name=name, graph=graph(i)) for i, name in enumerate(names)]
    return types.SimpleNamespace(
        graphs=graphs, scenario=types.SimpleNamespace(path="s.py"),
        summary=lambda: {"graphs": [{"name": name} for name in names]})


def test_graphs_whose_names_make_one_file_name_get_a_file_each(tmp_path):
    # "batch 64" and "batch_64" both made batch_64.dot, "é" and "ü" both graph.dot: each
    # later graph's DOT replaced the one before, and capture.json pointed two graphs at it
    import json

    from accelgraph_cli.run.artifacts import write_capture

    names = ["batch 64", "batch_64", "é", "ü", "graph", "Batch_64"]
    folder = write_capture(_capture_result(names), str(tmp_path / "art"))
    summary = json.loads((folder / "capture.json").read_text())
    files_of = [entry["dot"] for entry in summary["graphs"]]
    assert files_of == ["batch_64.dot", "batch_64-2.dot", "graph.dot", "graph-2.dot",
                        "graph-3.dot", "Batch_64-3.dot"]
    for index, name in enumerate(files_of):
        assert (folder / name).read_text().startswith(f"// graph {index}\n")
    assert sorted(p.name for p in folder.iterdir()) == sorted([*files_of, "capture.json"])


def test_artifacts_that_cannot_all_be_written_leave_the_folder_as_it_was(tmp_path):
    # capture.json a link into a folder that does not exist: step.dot had already been
    # replaced when its move failed, though "a write that fails leaves the folder as it was".
    # Every place is checked, as every output is, before anything is moved.
    import os

    from accelgraph_cli.run.artifacts import write_capture

    folder = tmp_path / "art"
    folder.mkdir()
    (folder / "step.dot").write_text("OLD\n")
    os.symlink(tmp_path / "gone" / "capture.json", folder / "capture.json")
    with pytest.raises(AccelgraphError) as raised:
        write_capture(_capture_result(["step"]), str(folder))
    assert str(raised.value) == (f"cannot write {folder / 'capture.json'}: it links to "
                                 f"{tmp_path / 'gone' / 'capture.json'}, in a folder that does "
                                 "not exist")
    assert (folder / "step.dot").read_text() == "OLD\n"
    assert sorted(p.name for p in folder.iterdir()) == ["capture.json", "step.dot"]


def test_an_error_of_another_kind_while_writing_artifacts_keeps_its_kind(tmp_path):
    from accelgraph_cli.errors import CudaError
    from accelgraph_cli.run.artifacts import write_capture

    result = _capture_result(["step"])

    def refuse(path, flags):
        raise CudaError("cudaGraphDebugDotPrint", "cudaErrorInvalidValue", str(path))

    result.graphs[0].graph.debug_dump = refuse
    with pytest.raises(CudaError) as raised:
        write_capture(result, str(tmp_path / "art"))
    assert str(raised.value) == ("cudaGraphDebugDotPrint failed: cudaErrorInvalidValue "
                                 f"({tmp_path / 'art' / 'step.dot'})")
    assert not (tmp_path / "art").exists()


def test_a_capture_that_fails_to_write_leaves_the_folder_as_it_was(tmp_path):
    # the first graph's DOT was left written beside the old capture.json and the command
    # failed: nothing of a failed write is left now, in a folder that was there before too
    from accelgraph_cli.run.artifacts import write_capture

    folder = tmp_path / "art"
    folder.mkdir()
    (folder / "capture.json").write_text("old\n")
    (folder / "prefill.dot").write_text("old\n")
    with pytest.raises(AccelgraphError, match=r"decode\.dot: No space left on device"):
        write_capture(_capture_result(["prefill", "decode"], fail_at=1), str(folder))
    assert sorted(p.name for p in folder.iterdir()) == ["capture.json", "prefill.dot"]
    assert (folder / "prefill.dot").read_text() == "old\n"
    assert (folder / "capture.json").read_text() == "old\n"


def test_atomic_output_turns_write_errors_into_one_line_errors(tmp_path):
    target = tmp_path / "x.dot"
    with pytest.raises(AccelgraphError, match="cannot write .*x.dot: Input/output error"):
        with files.atomic_output(target) as tmp:
            raise OSError(errno.EIO, "Input/output error", tmp)
    assert list(tmp_path.iterdir()) == []
    # An OSError that is no trouble writing the file (here ECHILD, from the code inside) is
    # a bug: it is not dressed up as bad input, and the temporary file still goes.
    with pytest.raises(OSError) as raised, files.atomic_output(target):
        raise OSError(errno.ECHILD, "No child processes")
    assert raised.value.errno == errno.ECHILD and list(tmp_path.iterdir()) == []
    # Whatever the errno, an error naming the file is a failure to write it (EBUSY: the
    # target is a bind mount that os.replace cannot replace, as a CI runner's --junit file).
    with pytest.raises(AccelgraphError, match="cannot write .*x.dot: Device or resource busy"):
        with files.atomic_output(target) as tmp:
            raise OSError(errno.EBUSY, "Device or resource busy", tmp, str(target))
    assert list(tmp_path.iterdir()) == []
    target.mkdir()
    with pytest.raises(AccelgraphError, match="cannot write .*x.dot: Is a directory"):
        files.write_text_atomic(target, "digraph {}\n")
    assert [p.name for p in tmp_path.iterdir()] == ["x.dot"]


# -- folders are created only when a file is about to be written ----------------------------


def test_show_that_fails_creates_no_folder(cli, tmp_path):
    not_dot = tmp_path / "notes.txt"
    not_dot.write_text("hello\n")
    assert cli("show", tmp_path / "nonexist.dot", "-o", tmp_path / "newdir1" / "x.json")[0] == 2
    assert cli("show", not_dot, "-o", tmp_path / "newdir2" / "sub" / "x.svg")[0] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_show_creates_the_folder_it_writes_into(cli, tmp_path):
    code, out, err = cli("show", recorded("chain_basic.dot"), "-o", tmp_path / "new" / "g.json")
    assert code == 0, err
    assert json.loads((tmp_path / "new" / "g.json").read_text())["format"] == "accelgraph-model"


@requires_no_gpu
def test_gpu_verbs_without_gpu_create_no_folder(cli, tmp_path):
    assert cli("capture", "saxpy", "--out", tmp_path / "newout")[0] == 3
    assert cli("dump", "saxpy", "--out", tmp_path / "newdump" / "g.dot")[0] == 3
    assert cli("smoke", "saxpy", "--baseline", tmp_path / "newbase")[0] == 3
    assert list(tmp_path.iterdir()) == []
    # smoke --junit writes its report without a GPU: that folder is made, for the report
    assert cli("smoke", "saxpy", "--junit", tmp_path / "ci" / "report.xml")[0] == 3
    assert [p.name for p in (tmp_path / "ci").iterdir()] == ["report.xml"]


def test_every_file_of_a_multi_graph_dump_is_checked_before_any_is_written(tmp_path):
    # dump --out g.dot of a scenario with graphs "batch=1" and "batch=8" writes g_batch=1.dot
    # and g_batch=8.dot; a folder in the way of the second must fail the command before the
    # first is written. The check is in _dump_targets, which dump calls once the graphs'
    # names are known (after capture, before any write).
    from accelgraph_cli.cli.app import _dump_targets

    out = str(tmp_path / "g.dot")
    assert _dump_targets(out, ["step"]) == [out]
    assert _dump_targets(out, ["batch=1", "batch 8"]) == [
        str(tmp_path / "g_batch=1.dot"), str(tmp_path / "g_batch_8.dot")]
    (tmp_path / "g_batch_8.dot").mkdir()
    with pytest.raises(AccelgraphError, match=r"g_batch_8\.dot: it is a folder"):
        _dump_targets(out, ["batch=1", "batch 8"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g_batch_8.dot"]


def test_two_graph_names_that_make_one_file_name_are_refused(tmp_path):
    from accelgraph_cli.cli.app import _dump_targets

    with pytest.raises(AccelgraphError, match=r"'batch 8' and 'batch/8' would both be written to "
                                              r".*g_batch_8\.dot; use --graph NAME"):
        _dump_targets(str(tmp_path / "g.dot"), ["batch 8", "batch/8"])


def test_an_output_that_is_a_symbolic_link_stays_one_and_its_target_is_written(cli, tmp_path):
    target = tmp_path / "kept" / "model.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    code, out, err = cli("show", recorded("chain_basic.dot"), "-o", link)
    assert code == 0, err
    assert link.is_symlink() and json.loads(target.read_text())["format"] == "accelgraph-model"
    assert _leftovers(tmp_path) == []


def test_an_output_that_is_a_named_pipe_is_written_into_not_replaced(cli, tmp_path):
    import os
    import stat
    import threading

    pipe = tmp_path / "model.json"
    os.mkfifo(pipe)
    got = []
    reader = threading.Thread(target=lambda: got.append(pipe.read_text()), daemon=True)
    reader.start()
    code, out, err = cli("show", recorded("chain_basic.dot"), "-o", pipe)
    reader.join(timeout=10)
    assert code == 0, err
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)  # still the pipe
    assert got and json.loads(got[0])["format"] == "accelgraph-model"
    assert _leftovers(tmp_path) == []


def _device(path, minor):
    """A character device node of the memory driver (1, 3: like /dev/null; 1, 7: like
    /dev/full) in a test folder, so a regression replaces that node, never /dev's own."""
    import os
    import stat

    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
    except PermissionError:
        pytest.skip("making a device node needs root (CI runs as root)")
    return path


@requires_no_gpu
def test_a_device_is_written_into_and_a_full_one_is_a_one_line_error(cli, tmp_path):
    # smoke writes its JUnit report without a GPU (exit 3: nothing ran); into the device it
    # goes, and the device stays one (a rename onto it would have replaced it)
    import os
    import stat

    null, full = _device(tmp_path / "null", 3), _device(tmp_path / "full", 7)
    code, out, err = cli("smoke", SCENARIOS / "saxpy.py", "--junit", null)
    assert code == 3, err
    assert stat.S_ISCHR(os.stat(null).st_mode)
    code, out, err = cli("smoke", SCENARIOS / "saxpy.py", "--junit", full)
    assert code == 2 and f"cannot write {full}" in _one_line_error(err)
    assert stat.S_ISCHR(os.stat(full).st_mode)
    assert _leftovers(tmp_path) == []


def test_a_device_or_pipe_output_needs_no_writable_folder(tmp_path, monkeypatch):
    # /dev is not writable for most users; writing /dev/null needs only /dev/null itself
    # (checked, never written, here)
    import os

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    monkeypatch.setattr(files.os, "access", lambda path, mode: str(path) in ("/dev/null",
                                                                              str(pipe)))
    files.check_output_file("/dev/null")
    files.check_output_file(pipe)
    with pytest.raises(AccelgraphError, match="not writable"):
        files.check_output_file(tmp_path / "plain.json")


def test_a_loop_of_links_or_a_link_into_no_folder_is_refused_and_left_as_it_is(cli, tmp_path):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.symlink_to(two)
    two.symlink_to(one)
    code, out, err = cli("show", recorded("chain_basic.dot"), "-o", one)
    assert code == 2 and f"cannot write {one}" in _one_line_error(err)
    assert one.is_symlink() and two.is_symlink()
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere" / "deep" / "x.json")
    code, out, err = cli("show", recorded("chain_basic.dot"), "-o", dangling)
    line = _one_line_error(err)
    assert code == 2 and "in a folder that does not exist" in line and f"{dangling}:" in line
    assert not (tmp_path / "nowhere").exists() and dangling.is_symlink()


def test_a_link_to_an_unwritable_folder_is_checked_where_it_points(tmp_path, read_only):
    # the file replaced is the target, so the target's folder must be writable, not the link's
    (tmp_path / "locked").mkdir()
    read_only.append(tmp_path / "locked")
    link = tmp_path / "out.json"
    link.symlink_to(tmp_path / "locked" / "model.json")
    with pytest.raises(AccelgraphError, match="not writable"):
        files.check_output_file(link)
    files.check_output_file(tmp_path / "plain.json")


def test_a_socket_is_refused_before_any_work(tmp_path):
    import socket

    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    try:
        with pytest.raises(AccelgraphError, match="it is a socket"):
            files.check_output_file(path)
    finally:
        server.close()


def test_an_unwritable_device_is_refused_before_any_work(tmp_path, monkeypatch):
    import os

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    monkeypatch.setattr(files.os, "access", lambda path, mode: False)
    with pytest.raises(AccelgraphError, match=f"cannot write {pipe}: permission denied"):
        files.check_output_file(pipe)


def _smoke_junit_to_descriptor(tmp_path, number: int, *extra: str, **streams):
    """Run `smoke saxpy [extra] --junit LINK` in a child process, LINK being a link of the
    test's own to /proc/self/fd/NUMBER (as /dev/stdout is one to /proc/self/fd/1: a
    regression can then only ever replace this link, never /dev's), with the child's
    ``streams`` (stdin, stdout) as given. Returns (the process, the link)."""
    import subprocess
    import sys

    from _paths import child_env

    link = tmp_path / f"fd{number}"
    link.symlink_to(f"/proc/self/fd/{number}")
    proc = subprocess.run([sys.executable, "-m", "accelgraph_cli", "smoke", "saxpy", *extra,
                           "--junit", link], cwd=tmp_path, stderr=subprocess.PIPE, text=True,
                          timeout=120, env=child_env(), **streams)
    return proc, link


@requires_no_gpu
def test_junit_to_dev_stdout_appends_to_what_the_shell_opened(tmp_path):
    # `smoke --junit /dev/stdout >> log`: /dev/stdout leads to log itself, a regular file;
    # it must be written through (appended), not replaced by a new file (which lost what log
    # held) nor, as root, have /dev/stdout itself replaced
    import os

    log = tmp_path / "log.txt"
    log.write_text("existing\n")
    with open(log, "a") as stdout:
        proc, stdout_link = _smoke_junit_to_descriptor(tmp_path, 1, stdout=stdout)
    assert proc.returncode == 3, proc.stderr
    text = log.read_text()
    assert text.startswith("existing\n<?xml") and "</testsuite>" in text
    assert os.path.islink(stdout_link)


@requires_no_gpu
def test_a_report_to_stdout_under_a_fresh_redirect_is_not_written_over(tmp_path):
    # `smoke --json --junit /dev/stdout > f`: the report goes through descriptor 1 itself,
    # so the JSON printed after it follows it instead of writing over it (a second opening
    # of the file would have had an offset of its own, at 0)
    out = tmp_path / "f"
    with open(out, "w") as stdout:
        proc, _ = _smoke_junit_to_descriptor(tmp_path, 1, "--json", stdout=stdout)
    assert proc.returncode == 3, proc.stderr
    text = out.read_text()
    assert "</testsuite>" in text and '"rows"' in text
    assert text.index("</testsuite>") < text.index('"rows"')


def test_only_descriptor_paths_under_proc_are_descriptors(tmp_path):
    import os

    # a folder reached through /proc (the process's cwd) is an ordinary place to write
    assert files._descriptor_of(f"/proc/self/cwd/{tmp_path.name}.json") is None
    assert files._descriptor_of("/proc/self/fd/1") == 1
    assert files._descriptor_of("/dev/fd/3") == 3
    assert files._descriptor_of(f"/proc/{os.getpid()}/task/{os.getpid()}/fd/2") == 2
    assert files._descriptor_of("/proc/1/fd/1") == -1  # another process's
    assert files._descriptor_of("/dev/stderr") == 2
    link = tmp_path / "err"
    link.symlink_to("/dev/stderr")
    assert files._descriptor_of(link) == 2 and files.is_special_file(link)


def test_a_descriptor_that_is_not_open_says_so(tmp_path):
    with pytest.raises(AccelgraphError, match="no such descriptor is open"):
        files.check_output_file("/dev/fd/987")


@requires_no_gpu
def test_a_descriptor_open_only_for_reading_is_a_one_line_error(tmp_path):
    # /dev/stdin under `< file`: descriptor 0 cannot be written (EBADF), bad input, not a bug
    import subprocess

    source = tmp_path / "in.txt"
    source.write_text("")
    with open(source) as stdin:
        proc, stdin_link = _smoke_junit_to_descriptor(tmp_path, 0, stdin=stdin,
                                                      stdout=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stderr
    assert f"accelgraph: error: cannot write {stdin_link}" in proc.stderr
    assert "internal error" not in proc.stderr


def test_show_writes_a_gzipped_model_that_show_and_diff_read_back(cli, tmp_path):
    # show reads .json.gz and dump writes it: show --out writes it too, the same model.
    import gzip
    import json

    plain, packed = tmp_path / "g.json", tmp_path / "g.json.gz"
    assert cli("show", recorded("chain_verbose.dot"), "-o", plain)[0] == 0
    assert cli("show", recorded("chain_verbose.dot"), "-o", packed)[0] == 0
    assert json.loads(gzip.decompress(packed.read_bytes())) == json.loads(plain.read_text())
    code, out, _ = cli("diff", plain, packed)
    assert code == 0 and "identical" in out
    code, _, err = cli("show", recorded("chain_verbose.dot"), "-o", tmp_path / "g.svg.gz")
    assert code == 2 and "name a .svg, .png, .json or .json.gz file" in err


def test_an_output_written_over_a_file_keeps_that_files_permissions(cli, tmp_path):
    # the atomic replace gave every output a new file's mode: a private 0600 file came back
    # readable by everyone (0644)
    private = tmp_path / "private.json"
    private.write_text("{}\n")
    private.chmod(0o600)
    code, out, err = cli("show", recorded("chain_basic.dot"), "-o", "private.json")
    assert code == 0, err
    assert private.stat().st_mode & 0o777 == 0o600 and private.read_text() != "{}\n"
    umask = os.umask(0)
    os.umask(umask)
    code, out, err = cli("show", recorded("chain_basic.dot"), "-o", "fresh.json")
    assert code == 0 and (tmp_path / "fresh.json").stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.parametrize("out", ["loop/x.json", "loop/deeper/x.json"])
def test_an_output_folder_that_is_a_loop_of_links_says_so(cli, tmp_path, out):
    # it read "output folder .../loop is not writable"
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    code, out_text, err = cli("show", recorded("chain_basic.dot"), "--out", out)
    assert (code, out_text) == (2, "")
    folder = tmp_path / out.rsplit("/", 1)[0]
    assert _one_line_error(err) == (f"accelgraph: error: cannot use output folder {folder}: a "
                                    "loop of symbolic links")


def test_capture_artifacts_keep_links_modes_and_refuse_a_folder_in_the_way(tmp_path):
    # moved into place from the temporary folder, a linked step.dot became a file of its
    # own (the link's target left as it was) and a private file got a new file's mode
    import json

    from accelgraph_cli.run.artifacts import write_capture

    folder = tmp_path / "art"
    folder.mkdir()
    elsewhere = tmp_path / "elsewhere.dot"
    elsewhere.write_text("old\n")
    (folder / "a.dot").symlink_to(elsewhere)
    (folder / "capture.json").write_text("{}\n")
    (folder / "capture.json").chmod(0o600)
    write_capture(_capture_result(["a", "b"]), str(folder))
    assert (folder / "a.dot").is_symlink() and elsewhere.read_text().startswith("// graph 0")
    assert (folder / "capture.json").stat().st_mode & 0o777 == 0o600
    assert json.loads((folder / "capture.json").read_text())["graphs"][1]["dot"] == "b.dot"
    # a folder where a file goes: refused before anything is moved
    (folder / "b.dot").unlink()
    (folder / "b.dot").mkdir()
    before = elsewhere.read_text()
    with pytest.raises(AccelgraphError, match=r"b\.dot: it is a folder"):
        write_capture(_capture_result(["a", "b"]), str(folder))
    assert elsewhere.read_text() == before
    assert sorted(p.name for p in folder.iterdir()) == ["a.dot", "b.dot", "capture.json"]


def test_an_output_written_over_a_set_id_file_does_not_keep_the_set_id_bits(cli, tmp_path):
    target = tmp_path / "s.json"
    target.write_text("{}\n")
    target.chmod(0o4755)
    assert cli("show", recorded("chain_basic.dot"), "-o", "s.json")[0] == 0
    assert target.stat().st_mode & 0o7777 == 0o755
