"""The `accelgraph` command: one short function per verb, the logic lives in the library.

Exit codes (every verb): 0 ok; 1 a check failed / graphs differ; 2 bad input (file, option,
scenario, illegal call during capture); 3 no usable CUDA GPU; 70 internal error (a bug in
accelgraph); 130 interrupted (Ctrl-C); 141 standard output closed by its reader (``| head``);
143 terminated (SIGTERM).

Text from outside (paths, labels, kernel names, option values, exception texts) is never read
as rich markup: both consoles have markup off, and renderers build ``rich.text.Text``.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import math
import os
import signal
import stat
import sys
import warnings
from enum import Enum
from pathlib import Path
from typing import Any, NamedTuple

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperArgument, TyperCommand

from .. import __version__
from ..enums import CaptureErrorMode, ExitCode, PoolKind
from ..errors import AccelgraphError, one_line
from ..gcpause import cyclic_gc_paused
from ..render.text import CONTROL


class _Command(TyperCommand):
    """A verb whose usage line names arguments as `SCENARIO` / `[SCENARIO]` (the README's
    spelling) rather than typer's `{scenario}`."""

    @staticmethod
    def _argument_name(param, usage: bool = False) -> str:
        """`SCENARIO`, `PATHS...`; in the usage line an optional one in brackets."""
        name = (param.metavar or param.name or "").upper()
        if usage and not param.required:
            name = f"[{name}]"
        return name + ("..." if param.nargs != 1 else "")

    def collect_usage_pieces(self, ctx) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                pieces.append(self._argument_name(param, usage=True))
        return pieces

    def format_options(self, ctx, formatter) -> None:
        """Arguments listed as the usage line names them (`SCENARIO`, `PATHS...`), without the
        Python type newer typer appends (`SCENARIO <str>`, `PATHS <list[str]>`)."""
        sections: dict[str, list] = {"Arguments": [], "Options": []}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if isinstance(param, TyperArgument):
                record = (self._argument_name(param), record[1])
            sections["Arguments" if isinstance(param, TyperArgument) else "Options"].append(record)
        for title, records in sections.items():
            if records:
                with formatter.section(title):
                    formatter.write_dl(records)


app = typer.Typer(
    name="accelgraph",
    help=(
        "Capture, inspect and replay CUDA graphs.\n\n"
        "GPU verbs (capture, replay, profile, audit, dump, smoke) need a CUDA GPU and CuPy "
        "(exit 3 without one). On any machine: smoke --list, scenarios, show and diff of "
        "saved dumps, profile of a saved profile and audit of a saved audit."
    ),
    no_args_is_help=True,
    # Plain click help: rewrapped docstrings, defaults shown, no `<bool>` type column.
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
command = app.command  # every verb: @command(cls=_Command)

class _StderrFile:
    """Standard error as the error console writes it: the stream in use at each write (tests
    swap it), and a write that fails (``2>/dev/full``, a closed descriptor) dropped, since
    there is nowhere left to report it: the command's exit code still tells what happened."""

    def write(self, text: str) -> int:
        stream = sys.stderr
        if stream is None:
            return len(text)
        try:
            return stream.write(text)
        except (OSError, ValueError):
            _drop_pending(stream)
            return len(text)

    def flush(self) -> None:
        stream = sys.stderr
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            _drop_pending(stream)

    def isatty(self) -> bool:
        stream = sys.stderr
        try:
            return stream is not None and stream.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        return sys.stderr.fileno()

    @property
    def encoding(self) -> str:
        return getattr(sys.stderr, "encoding", None) or "utf-8"


def _drop_pending(stream) -> None:
    """A standard stream that cannot be written: point its descriptor at the null device and
    drop what it still holds, so the interpreter's last flush cannot fail again."""
    _to_devnull(stream)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        stream.flush()


class _PrintableConsole(Console):
    """A console that prints no control character that came from the data (a node's name,
    a label, a file name): a dump from someone else must not retitle, recolour or write to
    the clipboard of the terminal it is shown in. They are dropped as the text goes out,
    after the layout, which gave them no width; rich's own control codes (styles, cursor
    moves of a progress display) are not in the text and pass."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # rich takes COLUMNS=0 (or LINES=0) as a width of 0 and then prints nothing at all,
        # error lines included; a size of 0 means unknown, as a terminal reporting 0 does
        if self._width is not None and self._width <= 0:
            self._width = None
        if self._height is not None and self._height <= 0:
            self._height = None

    def _render_buffer(self, buffer) -> str:
        return super()._render_buffer(
            segment if segment.control or not CONTROL.search(segment.text)
            else segment._replace(text=CONTROL.sub("", segment.text))
            for segment in buffer)


# markup=False: a file named "[red]x.dot" prints as itself, and "[/]" cannot crash a print.
err_console = _PrintableConsole(file=_StderrFile(), highlight=False, markup=False)


def fail(message: str, code: int = ExitCode.BAD_INPUT) -> typer.Exit:
    """Print one error line to stderr and return the Exit to raise. A line break inside the
    message (from a file name, say) is written as ``\\n``, so the error stays one line."""
    line = Text("accelgraph: error:", style="bold red")
    line.append(" " + one_line(message))
    err_console.print(line, soft_wrap=True)
    return typer.Exit(code)


class StdoutClosed(BaseException):
    """Standard output's reader went away (``accelgraph show x.dot | head``). A BaseException,
    so no ``except Exception`` on the way up reports it as a failure: the command ends quietly
    with ExitCode.STDOUT_CLOSED, its ``finally`` clauses (temporary files) run on the way."""


class _StdoutConsole(_PrintableConsole):
    def on_broken_pipe(self) -> None:  # rich's own exits with 1, which reads as a verdict
        self.quiet = True
        raise StdoutClosed


# What accelgraph's own drawings and tables print that an 8-bit output encoding may lack,
# written with one ASCII character each instead, so that the layout keeps its widths:
# output redirected or shown in latin-1 or cp1252 is drawn, not an internal error halfway
# through.
_PLAIN_CHARS = {**dict.fromkeys("┌┐└┘├┤┬┴┼", "+"), "─": "-", "│": "|", "…": ".", "→": ">",
                "–": "-", "—": "-", "◀": "<", "Δ": "d", "×": "x", "·": ".", "µ": "u"}
_PLAIN = "accelgraph-plain"


def _plain(error: UnicodeEncodeError) -> tuple[str, int]:
    from rich.cells import cell_len

    text = error.object[error.start:error.end]
    # anything else as one "?" per cell it takes (two for a wide character, none for a
    # combining mark), as the layout counted it
    return "".join(_PLAIN_CHARS.get(ch) or "?" * cell_len(ch) for ch in text), error.end


codecs.register_error(_PLAIN, _plain)


class _StdoutFile:
    """Standard output as echo() and rich's console write it: a write that fails for any
    reason but a reader that has gone (a full device, a descriptor opened read-only, a
    terminal hung up) is the one error line "cannot write standard output", exit 2."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._guarded(self._stream.write, text)
        except UnicodeEncodeError:  # an output encoding without box drawing (latin-1, cp1252)
            encoding = self._stream.encoding
            return self._guarded(self._stream.write,
                                 text.encode(encoding, _PLAIN).decode(encoding))

    def flush(self) -> None:
        self._guarded(self._stream.flush)

    @staticmethod
    def _guarded(call, *args):
        try:
            return call(*args)
        except BrokenPipeError:
            raise  # the reader has gone: exit 141 (echo, rich's on_broken_pipe)
        except OSError as exc:
            from ..files import write_error

            raise write_error("standard output", exc) from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


class _NoStdout:
    """Standard output for a process started without one (``>&-``: Python's sys.stdout is
    None): a write fails as writing to a closed descriptor does, so output that has nowhere
    to go is the error "cannot write standard output" (exit 2), as for any other standard
    output that cannot be written, never lost behind exit 0."""

    encoding = "utf-8"
    errors = "strict"
    closed = False

    def write(self, text: str) -> int:
        if not text:
            return 0
        return self.fileno()

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        import errno

        raise OSError(errno.EBADF, os.strerror(errno.EBADF))


_NO_STDOUT = _NoStdout()


def _real_stdout():
    """What accelgraph's own output goes to: sys.stdout (the one the run started with, in
    a --json run, see _run), or, in a process started without one, a stream whose writes
    fail (sys.stdout itself stays None, so a scenario's or a library's print() still goes
    nowhere, as Python has it)."""
    held = _json_stdout[0]
    if held is not None:
        return held
    return sys.stdout if sys.stdout is not None else _NO_STDOUT


# While a --json command runs: the standard output its JSON goes to. sys.stdout points at
# standard error meanwhile, so that what a scenario or a library print()s cannot corrupt
# the JSON (it did: `print("loading...")` in setup() came before it, and no reader took it).
_json_stdout: list = [None]


def json_text(value: Any, **options: Any) -> str:
    """``value`` as JSON for standard output: a number JSON cannot hold (NaN, an infinity:
    the largest difference of a mismatch with a NaN on one side, say) is written as null, so
    that every JSON reader takes it (Python's own json would write NaN and Infinity)."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:
        return json.dumps(_nonfinite_as_null(value), allow_nan=False, **options)


def _nonfinite_as_null(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _nonfinite_as_null(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_nonfinite_as_null(item) for item in value]
    return value


def echo(text: str) -> None:
    """Print ``text`` and a newline on standard output (JSON, --version): StdoutClosed when
    the reader has gone."""
    out = _StdoutFile(_real_stdout())
    text += "\n"
    try:
        # In pieces, each flushed: one large write that the reader stops reading part way
        # through (`| head -c 100`) is reported as written by Python's buffered writer, and
        # the command would end 0 with its output cut short.
        for start in range(0, len(text), _ECHO_PIECE):
            out.write(text[start:start + _ECHO_PIECE])
            out.flush()
    except (BrokenPipeError, ValueError):  # ValueError: closed inside this process
        raise StdoutClosed from None


_ECHO_PIECE = 1 << 16  # characters per write: a pipe's usual buffer


class Terminated(KeyboardInterrupt):
    """SIGTERM (``timeout``, a CI job cancelled, ``kill``): raised in the main thread so the
    command unwinds as for Ctrl-C — what catches Ctrl-C (a capture in progress, smoke's
    report, replay's rounds) catches it too — and ends with 143 instead of 130. ``seen``
    remembers it for the exit code: typer turns every KeyboardInterrupt into exit 130."""

    seen = False


def _on_sigterm(signum, frame) -> None:
    # One SIGTERM unwinds the command, cleaning up on the way; a second one ends the process
    # at once, as SIGTERM does by default (never a process that ignores it: the first
    # Terminated may have been swallowed by code that catches everything).
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    Terminated.seen = True
    raise Terminated


def interrupted_code(exc: BaseException | None = None) -> ExitCode:
    """130 for Ctrl-C, 143 for SIGTERM."""
    if isinstance(exc, Terminated) or Terminated.seen:
        return ExitCode.TERMINATED
    return ExitCode.INTERRUPTED


def _say_stopped(exc: BaseException | None = None) -> ExitCode:
    """The one line for a run stopped by Ctrl-C or SIGTERM; returns its exit code."""
    code = interrupted_code(exc)
    err_console.print("accelgraph: terminated" if code == ExitCode.TERMINATED
                      else "accelgraph: interrupted")
    return code


_interrupt_told: list[bool] = [False]  # a verb already said it was interrupted, and how far


def interrupted_exit(exc: BaseException, message: str | None = None) -> typer.Exit:
    """The exit for a verb that caught Ctrl-C or SIGTERM and says so itself (``message`` on
    stderr, or its own report): main then adds no line of its own."""
    if message is not None:
        err_console.print(message)
    _interrupt_told[0] = True
    return typer.Exit(interrupted_code(exc))


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null, so the interpreter's last flush of what is still
    buffered cannot fail again (Python's documented answer to SIGPIPE)."""
    _to_devnull(_real_stdout())


def _to_devnull(stream) -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        fd = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)


def version_callback(value: bool) -> None:
    if value:
        echo(f"accelgraph {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=version_callback, is_eager=True, help="Print the version."
    ),
) -> None:
    """Capture, inspect and replay CUDA graphs."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `accelgraph` script: run the app, mapping errors to exit codes.

    Exit codes never lie: an unexpected exception (a bug) is one line and exit 70, never 0 or 1
    (which `diff` and the checks give a meaning) and never a traceback.
    """
    previous = _NOT_INSTALLED
    Terminated.seen = False
    _interrupt_told[0] = False
    formatted_before = warnings.formatwarning
    # How a printed warning is written; one that is recorded (pytest, catch_warnings) is not
    # formatted, and stays the recorder's.
    warnings.formatwarning = _format_warning
    _warned.clear()
    try:
        previous = _catch_sigterm()
        code = _run(argv)
        if Terminated.seen and code != ExitCode.TERMINATED:
            # SIGTERM came, and something swallowed its Terminated: the run did not finish
            # as asked, whatever it went on to return
            return _say_stopped()
        return code
    except Terminated:  # between the handler's install and _run's own except clauses
        return ExitCode.TERMINATED
    finally:
        if previous is not _NOT_INSTALLED:
            # None: a handler installed from C, which Python cannot put back; the default then
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
        Terminated.seen = False
        if warnings.formatwarning is _format_warning:
            warnings.formatwarning = formatted_before


_warned: set[str] = set()  # the warning lines this run printed


def _format_warning(message, category, filename, lineno, line=None) -> str:
    """A printed warning (Python's about a scenario's text, a library's) as one line, once a
    run (a scenario's text is compiled twice: inspected, then run); "" for a repeat. Python's
    own form quotes the source line below it raw, control characters and all: here line
    breaks are escaped and control characters dropped, as in everything accelgraph prints."""
    from ..render.text import CONTROL

    text = CONTROL.sub("", f"warning: {one_line(filename)}:{lineno}: {category.__name__}: "
                           f"{one_line(message)}")
    if text in _warned:
        return ""
    _warned.add(text)
    return text + "\n"


_NOT_INSTALLED = object()


def _catch_sigterm():
    """Turn SIGTERM into Terminated for the command's run; the handler it replaced (None when
    it was installed from C), or _NOT_INSTALLED where signals cannot be set (outside the
    main thread)."""
    try:
        return signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:
        return _NOT_INSTALLED


def _run(argv: list[str] | None) -> int:
    args = sys.argv[1:] if argv is None else argv
    # click prints --help itself and writes nothing when there is no sys.stdout: for a help
    # asked of a process without one, its writes fail as accelgraph's own do. Only then, and
    # only while click runs (a --help runs no command, so no scenario's print() meets it).
    asks_help = any(arg in ("--help", "-h") for arg in args)
    no_stdout = sys.stdout is None and asks_help
    if no_stdout:
        sys.stdout = _NO_STDOUT
    json_run = sys.stdout is not None and "--json" in args and not asks_help
    if json_run:
        _json_stdout[0], sys.stdout = sys.stdout, sys.stderr
    try:
        # Without standalone mode, click returns a command's typer.Exit code instead of raising.
        code = app(args=argv, prog_name="accelgraph", standalone_mode=False)
    except AccelgraphError as exc:
        fail(str(exc), exc.exit_code)
        return exc.exit_code
    except typer.Exit as exc:
        return exc.exit_code
    except StdoutClosed:
        _silence_stdout()
        return ExitCode.STDOUT_CLOSED
    except SystemExit as exc:
        # click's own output (--help) hitting a closed stdout: it wraps sys.stdout so the last
        # flush is quiet and exits 1, which would read as a verdict
        if exc.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            _silence_stdout()
            return ExitCode.STDOUT_CLOSED
        raise
    except (KeyboardInterrupt, typer.Abort) as exc:
        return _say_stopped(exc)
    except Exception as exc:
        # Usage errors from typer's click (bad option value, missing argument): one line.
        if callable(getattr(exc, "format_message", None)) and hasattr(exc, "exit_code"):
            # Newer typer validates through pydantic, which puts "Value error, " before the
            # choice's own message ("--pool: Value error, 'x' is not one of ..."): noise.
            message = exc.format_message().replace(": Value error, ", ": ")
            if type(exc).__name__ == "NoArgsIsHelpError":
                # Bare `accelgraph`: the help is the answer, not an error.
                try:
                    echo(message)
                except StdoutClosed:
                    _silence_stdout()
                    return ExitCode.STDOUT_CLOSED
                except AccelgraphError as error:  # a standard output that cannot be written
                    fail(str(error), error.exit_code)
                    return error.exit_code
                return ExitCode.OK
            ctx = getattr(exc, "ctx", None)
            where = (f" (see {ctx.command_path} --help)" if ctx is not None
                     else _help_hint(args))
            fail(f"{message}{where}", ExitCode.BAD_INPUT)
            return ExitCode.BAD_INPUT
        if _stdout_full(exc):  # click's own output (--help) into > /dev/full or a full disk
            from ..files import write_error

            fail(str(write_error("standard output", exc)), ExitCode.BAD_INPUT)
            return ExitCode.BAD_INPUT
        if isinstance(exc, MemoryError):  # too large for this machine, not a bug
            if type(exc).__module__.startswith("cupy"):  # CuPy's OutOfMemoryError: the GPU's
                detail = " ".join(str(exc).split())[:200]
                fail(f"the GPU ran out of memory ({detail}); run the scenario smaller (--param) "
                     "or on a GPU with more memory", ExitCode.BAD_INPUT)
            else:
                fail("ran out of memory: the input is too large for this machine (a DOT file "
                     "whose edge statements expand to millions of edges, a .gz that "
                     "decompresses to gigabytes)", ExitCode.BAD_INPUT)
            return ExitCode.BAD_INPUT
        if isinstance(exc, FileNotFoundError) and exc.filename is None and _working_folder_gone():
            fail("the current folder no longer exists (removed while the shell was in it), so "
                 "no relative path can be read or written here; cd to a folder that exists",
                 ExitCode.BAD_INPUT)
            return ExitCode.BAD_INPUT
        return internal_error(exc)
    finally:
        if json_run:
            sys.stdout, _json_stdout[0] = _json_stdout[0], None
        if no_stdout:
            sys.stdout = None
    if code == ExitCode.INTERRUPTED and not _interrupt_told[0]:
        # typer's own exit 130 for a KeyboardInterrupt (Ctrl-C, or SIGTERM's Terminated):
        # one line, as everywhere else
        return _say_stopped()
    return code if isinstance(code, int) else 0


def _help_hint(argv: list[str]) -> str:
    """Where to look, for a usage error click raises without its context (an option given
    no value: "Option '--out' requires an argument."): the verb's help, else the tool's."""
    verbs = getattr(typer.main.get_command(app), "commands", {})
    verb = next((arg for arg in argv if isinstance(arg, str) and arg in verbs), None)
    return f" (see accelgraph {verb} --help)" if verb else " (see accelgraph --help)"


def _stdout_full(exc: BaseException) -> bool:
    """An OSError of a full device with no file named, or of a bad descriptor while standard
    output is one that cannot be written: what click's own output (--help) raises into
    > /dev/full, onto a full disk, into a standard output opened read-only (``1</dev/null``)
    or closed (``>&-``) (echo and the console name standard output themselves; files
    accelgraph writes are named in theirs)."""
    import errno

    if not isinstance(exc, OSError) or exc.filename is not None:
        return False
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return exc.errno == errno.EBADF and _stdout_unwritable()


def _stdout_unwritable() -> bool:
    """Whether standard output is missing, closed or opened for reading only."""
    if sys.stdout is None or sys.stdout is _NO_STDOUT:
        return True
    try:
        import fcntl  # POSIX only; elsewhere a bad descriptor is not blamed on standard output
    except ImportError:
        return False
    try:
        flags = fcntl.fcntl(sys.stdout.fileno(), fcntl.F_GETFL)
    except (OSError, ValueError, AttributeError):
        return True
    return flags & os.O_ACCMODE == os.O_RDONLY


def _working_folder_gone() -> bool:
    """Whether the process's current folder was removed (os.getcwd() cannot name it)."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def internal_error(exc: BaseException) -> int:
    """One line for a bug in accelgraph, exit 70 (ExitCode.INTERNAL)."""
    detail = " ".join(str(exc).split()) or "(no message)"
    fail(f"internal error: {type(exc).__name__}: {detail[:300]} — this is a bug in accelgraph; "
         "please report it with the command that caused it", ExitCode.INTERNAL)
    return ExitCode.INTERNAL


# -- shared options -------------------------------------------------------------------------

PARAM_OPTION = typer.Option(
    [], "--param", "-p", metavar="K=V",
    help="Override a scenario parameter (repeatable); parsed to the default's type.",
)
POOL_OPTION = typer.Option(
    None, "--pool",
    help="Memory pool: a private pool per graph, one pool shared by all graphs (captured in "
    "order, largest first), or stream-ordered allocation nodes. Default: the scenario's POOL, "
    "else private.",
)
MODE_OPTION = typer.Option(
    None, "--error-mode",
    help="Capture error mode. Default: the scenario's ERROR_MODE, else global.",
)


class _Chosen(NamedTuple):
    """A scenario and its options, checked without a GPU (what _scenario_options returns)."""

    path: Path
    info: Any  # run.scenario.ScenarioInfo
    values: dict
    pool: PoolKind
    error_mode: CaptureErrorMode


def _scenario_and_options(scenario_path, params, pool, error_mode):
    """Check the scenario file and options (no GPU needed), then load it (GPU needed): the
    scenario, its parameter values, pool and capture error mode."""
    return _load_chosen(_scenario_options(scenario_path, params, pool, error_mode))


def _load_chosen(chosen: _Chosen):
    """Load a checked scenario (GPU needed): as _scenario_and_options returns it."""
    from ..cuda import device as _cuda
    from ..run.scenario import load_scenario

    _cuda.require_cuda()
    return load_scenario(chosen.path), chosen.values, chosen.pool, chosen.error_mode


def _scenario_options(scenario_path, params, pool, error_mode, side_params=()) -> _Chosen:
    """The scenario file and options, checked (no GPU needed).

    Without a SCENARIO, the last capture recorded in this directory is used, with its
    parameters, pool and mode; options given now override them (a recorded parameter given
    again is not read at all). ``side_params``: (option, [KEY=VALUE...]) applied after
    ``params``, each named as its own option in errors (diff's --a-param, --b-param).
    """
    from ..run import protocol as runner
    from ..run import scenario as scenario_mod
    from ..run.catalog import resolve_scenario
    from ..run.record import load_record, record_path

    recorded: list[str] = []
    from_record = scenario_path is None
    options_recorded = False  # the pool is the record's, not an option given now
    if from_record:
        record = load_record(given=tuple(k for k, v in (("pool", pool), ("error_mode", error_mode))
                                         if v))
        scenario_path = record["scenario"]
        given = {item.partition("=")[0].strip() for item in params}
        recorded = [f"{k}={v}" for k, v in (record.get("params") or {}).items()
                    if k not in given]
        # (a recorded mode was checked by load_record: only a pool can be refused below)
        options_recorded = not pool and record.get("pool") is not None
        pool = pool or record.get("pool")
        error_mode = error_mode or record.get("error_mode")
    try:
        scenario_path = resolve_scenario(scenario_path)
    except scenario_mod.ScenarioError as exc:
        if not from_record:
            raise
        # the user named no file: say where the name came from
        if not os.path.lexists(scenario_path):
            raise AccelgraphError(
                f"{record_path()}: the last capture's scenario {scenario_path} no longer "
                "exists; capture again, or name the scenario") from None
        raise AccelgraphError(f"{record_path()}: the last capture's scenario: {exc}; capture "
                              "again, or name the scenario") from None
    try:
        info = scenario_mod.inspect_scenario(scenario_path)
    except scenario_mod.ScenarioError as exc:
        if not from_record:
            raise
        raise AccelgraphError(f"{record_path()}: the last capture's scenario: {exc}; capture "
                              "again, or name the scenario") from None
    defaults = info.params
    if recorded:  # a stale record is not blamed on a --param the user never gave
        try:
            defaults = scenario_mod.parse_params(
                defaults, recorded, source=f"{record_path()}: the last capture's param")
        except scenario_mod.ScenarioError as exc:
            raise AccelgraphError(f"{exc}; capture again, or name the scenario") from None
    # --param on top of the record; errors quote the scenario's own defaults
    values = scenario_mod.parse_params(defaults, list(params), declared=info.params)
    for option, items in side_params:
        values = scenario_mod.parse_params(values, list(items), source=option,
                                           declared=info.params)
    try:
        pool, error_mode = runner.resolve_options(info, pool, error_mode)
    except AccelgraphError as exc:
        if not options_recorded:
            raise
        # not an option the user gave: the record's pool or mode (the scenario changed since)
        raise AccelgraphError(f"{record_path()}: the last capture's options: {exc}; capture "
                              "again, or name the scenario") from None
    return _Chosen(scenario_path, info, values, pool, error_mode)


def _stdout() -> Console:
    return _StdoutConsole(highlight=False, markup=False, file=_StdoutFile(_real_stdout()))


def _finite(value: float) -> float:
    """A tolerance is a finite number: inf would let every finite difference pass the check,
    and nan compares with nothing."""
    if not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number (a tolerance of {value} "
                                 "would let a wrong graph pass the check)")
    return value


def _complete_paths(incomplete: str, suffixes: tuple[str, ...]) -> list[str]:
    """Folders and files with one of ``suffixes`` whose path starts with ``incomplete``."""
    folder, _, start = incomplete.rpartition("/")
    base = Path(folder or ".")
    if folder == "" and incomplete.startswith("/"):
        base = Path("/")
    found = []
    try:
        for entry in sorted(base.iterdir()):
            if not entry.name.startswith(start) or (entry.name.startswith(".") and not start):
                continue
            shown = f"{folder}/{entry.name}" if folder or incomplete.startswith("/") else entry.name
            if entry.is_dir():
                found.append(shown + "/")
            elif entry.name.endswith(suffixes):
                found.append(shown)
    except OSError:
        pass
    return found


def _completer(suffixes: tuple[str, ...]):
    """Shell completion of an argument that takes a bundled scenario's name or a file with
    one of ``suffixes``: the names that match, then files and folders."""
    def complete(incomplete: str) -> list[str]:
        from ..run.catalog import bundled_names

        names = ([] if "/" in incomplete else
                 [n for n in bundled_names() if n.startswith(incomplete)])
        return names + _complete_paths(incomplete, suffixes)

    return complete


_complete_scenario = _completer((".py",))  # SCENARIO, smoke's PATHS
_complete_graph = _completer((".py", ".dot", ".gv", ".json", ".gz"))  # diff's A and B


@command(cls=_Command, short_help="Capture a scenario into CUDA graphs (GPU).")
def capture(
    scenario: str = typer.Argument(..., metavar="SCENARIO",
        help="Scenario file (Python), or the name of a bundled "
        "scenario (see `accelgraph scenarios`).", autocompletion=_complete_scenario),
    param: list[str] = PARAM_OPTION,
    pool: PoolKind = POOL_OPTION,
    error_mode: CaptureErrorMode = MODE_OPTION,
    keep_graph: bool = typer.Option(
        False, "--keep-graph", help="Keep the editable graph and instantiate explicitly "
        "(timed apart from capture_end)."),
    out: str = typer.Option(
        None, "--out", "-o", metavar="DIR", help="Folder for the artifacts: a verbose .dot per graph and "
        "capture.json. Default: .accelgraph/<scenario name>/"),
    json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Capture a scenario into CUDA graphs and report what they hold and cost.

    Warms up (compiles kernels, grows the pool), captures each of the scenario's steps with
    the chosen pool and error mode, instantiates, and prints nodes per kind, capture and
    instantiate time and pool bytes. Records the capture so `replay` and `dump` without a
    SCENARIO use it. Needs a CUDA GPU (exit 3 without one; the scenario file and the options
    are checked first).
    """
    from .. import files
    from ..render import run as render_run
    from ..run import artifacts
    from ..run import protocol as runner
    from ..run.catalog import resolve_scenario
    from ..run.record import check_record_path, save_record

    _refuse_empty(("--out", out, "folder"))
    # Where it will write, checked before any GPU work: the artifacts' folder (--out, or
    # the default under ./.accelgraph/) and the record of this capture (./.accelgraph/).
    files.check_output_folder(out if out is not None
                              else artifacts.default_folder(resolve_scenario(scenario)))
    check_record_path()
    scen, values, pool, error_mode = _scenario_and_options(scenario, param, pool, error_mode)
    result = runner.capture(scen, values, pool=pool, error_mode=error_mode, keep_graph=keep_graph)
    folder = artifacts.write_capture(result, out)
    save_record(str(scen.path), values, pool, error_mode, keep_graph)
    if json_out:
        echo(json_text({**result.summary(), "artifacts": str(folder)}, indent=2))
    else:
        render_run.print_capture(_stdout(), result, folder)


@command(cls=_Command, short_help="Time graph replay against eager, and check it (GPU).")
def replay(
    ctx: typer.Context,
    scenario: str = typer.Argument(None, metavar="SCENARIO",
        help="Scenario file or bundled scenario name; default: "
        "the last capture here.", autocompletion=_complete_scenario),
    iters: int = typer.Option(1000, "--iters", "-n", min=1, metavar="N",
                              help="Iterations per round."),
    warmup: int = typer.Option(20, "--warmup", min=0, metavar="W", help="Untimed iterations first."),
    rounds: int = typer.Option(5, "--rounds", min=1, metavar="R",
                               help="Timed rounds (median, spread)."),
    check: bool = typer.Option(True, "--check/--no-check",
                               help="Compare replay's outputs with eager's (needs outputs())."),
    check_steps: int = typer.Option(2, "--check-steps", min=1, metavar="K",
                                    help="Steps run eagerly and replayed; the outputs are "
                                    "compared after each (a copy of eager's outputs is kept "
                                    "on the GPU per replay)."),
    rtol: float = typer.Option(0.0, "--rtol", min=0.0, metavar="X", callback=_finite,
                               help="Relative tolerance (0: bitwise)."),
    atol: float = typer.Option(0.0, "--atol", min=0.0, metavar="Y", callback=_finite,
                               help="Absolute tolerance (0: bitwise)."),
    param: list[str] = PARAM_OPTION,
    pool: PoolKind = POOL_OPTION,
    error_mode: CaptureErrorMode = MODE_OPTION,
    json_out: bool = typer.Option(False, "--json", help="Print every figure as JSON."),
    unroll: int = typer.Option(1, "--unroll", min=1, metavar="K", help="Also capture K "
                               "consecutive steps into one graph and report its time per step "
                               "beside the one-step graph and eager; the check then compares "
                               "K eager steps with one unrolled replay, and checks the one-step "
                               "graph too. 1: off."),
) -> None:
    """Time graph replay against eager execution, and check replay computes what eager does.

    GPU time per iteration (CUDA events), host submit time and wall time, as the median and
    spread over rounds, and the speedup. The check runs eager from one fresh state and
    capture+replay from another and compares outputs bitwise (or within --rtol/--atol).
    Exit 1 when the check fails. Needs a CUDA GPU (exit 3 without one).
    """
    from ..render import run as render_run
    from ..run import protocol as runner

    if not check:
        unused = _given_options(ctx, "check_steps", "rtol", "atol")
        if unused:
            raise AccelgraphError(f"{', '.join(unused)} set{'s' if len(unused) == 1 else ''} "
                                  "how the check compares; --no-check turns the check off: use "
                                  "one or the other")
    scen, values, pool, error_mode = _scenario_and_options(scenario, param, pool, error_mode)
    if unroll > 1:
        _replay_unrolled(scen, values, pool, error_mode, unroll=unroll, iters=iters,
                         warmup=warmup, rounds=rounds, check=check, check_steps=check_steps,
                         rtol=rtol, atol=atol, json_out=json_out)
        return
    result = runner.capture(scen, values, pool=pool, error_mode=error_mode)
    checked = None
    if check and scen.info.has_outputs:
        checked = runner.check(result, steps=check_steps, rtol=rtol, atol=atol)
    rounds_done = [0, 2 * rounds]
    with render_run.progress(_stdout(), "timing eager vs graph", enabled=not json_out) as tick:

        def progress(done, total):
            rounds_done[:] = [done, total]
            tick(done, total)

        try:
            eager, graph, per_graph = runner.time_replay(result, iters=iters, warmup=warmup, rounds=rounds,
                                              on_progress=progress)
        except KeyboardInterrupt as exc:
            verdict = "not run" if checked is None else checked.verdict
            raise interrupted_exit(exc, f"accelgraph: interrupted after {rounds_done[0]} of "
                                        f"{rounds_done[1]} timed rounds (eager and graph in "
                                        f"turn); check: {verdict}") from None
    report = runner.ReplayReport(eager, graph, checked, result, per_graph)
    if json_out:
        echo(json_text(report.to_dict(), indent=2))
    else:
        render_run.print_replay(_stdout(), report)
    if checked is not None and not checked.ok:
        raise typer.Exit(ExitCode.FAILED)


MAX_PROFILE_ITERS = 10_000  # model.profile.MAX_ITERS (not imported for --help)


@command(cls=_Command, short_help="What each node of a graph costs, and which line made it (GPU).")
def profile(
    ctx: typer.Context,
    scenario: str = typer.Argument(None, metavar="SCENARIO",
        help="Scenario file or bundled scenario name (default: the last capture here), or a "
        "profile saved with --out (.json or .json.gz: shown again, no GPU needed).",
        autocompletion=_completer((".py", ".json", ".gz"))),
    iters: int = typer.Option(200, "--iters", "-n", min=1, max=MAX_PROFILE_ITERS, metavar="N",
                              help="Replays traced (and as many timed untraced)."),
    top: int = typer.Option(0, "--top", min=0, metavar="K",
                            help="Show the K nodes with the most own time a graph (0: all)."),
    param: list[str] = PARAM_OPTION,
    pool: PoolKind = POOL_OPTION,
    error_mode: CaptureErrorMode = MODE_OPTION,
    out: str = typer.Option(None, "--out", "-o", metavar="FILE",
                            help="Also save the raw profile (JSON), to show again anywhere."),
    against: str = typer.Option(None, "--against", "-a", metavar="FILE.json",
                                help="Show this profile beside a saved one (before), node by "
                                "node: their graphs must have the same nodes."),
    json_out: bool = typer.Option(False, "--json", help="Print the per-node figures as JSON."),
) -> None:
    """Replay each graph under CUPTI and show what each node cost on the GPU and which line
    of the scenario made it.

    Captures as `capture` does (guard included), with CUPTI's graph callbacks on to learn the
    Python line that created each node; then replays each graph N times with CUPTI's kernel,
    copy and memset records on, and N times with them off (CUDA events). Per node: own time
    (what it added once its inputs were ready), its share of the replay's busy time, its
    span (start to end, waits inside included) and the line that made it. Needs a CUDA GPU
    and cupti-python (exit 3 without a GPU); a saved profile (.json) is shown anywhere.
    """
    from ..model.profile import ProfileLoadError
    from ..render import profile as render_profile
    from ..render import run as render_run
    from ..run import profile as run_profile

    _refuse_empty(("--out", out, "file"), ("--against", against, "file"))
    if json_out and _given(ctx, "top"):
        raise AccelgraphError("--top shortens the table; --json prints every node: use one or "
                              "the other")
    if against is not None and _given(ctx, "top"):
        raise AccelgraphError("--top shortens one profile's table; --against shows every node "
                              "of both: use one or the other")
    before = None
    if against is not None:  # read first: a bad file is said before any GPU work
        from ..model.graph_model import ModelLoadError

        for other, what in ((scenario, "the profile shown"), (out, "--out")):
            if other is not None and _same_file(against, other):
                raise AccelgraphError(f"--against {against} is also {what}: compare two "
                                      "profiles (an earlier one saved elsewhere)")
        try:
            before = run_profile.read_profile(against)
        except (ProfileLoadError, ModelLoadError) as exc:
            raise AccelgraphError(f"--against: {exc}") from None
    if _saved(ctx, scenario, "profile", "iters", "param", "pool", "error_mode", "out"):
        loaded = run_profile.read_profile(scenario)
    else:
        from .. import files
        from ..model.profile import load_profile

        _check_json_out(out, "profile")
        scen, values, pool, error_mode = _scenario_and_options(scenario, param, pool, error_mode)
        with render_run.progress(_stdout(), "replaying under CUPTI",
                                     enabled=not json_out) as tick:
            document = run_profile.record_profile(scen, values, pool=pool,
                                                  error_mode=error_mode, iters=iters,
                                                  on_graph=tick)
        if out is not None:  # first: what the GPU measured is kept, whatever follows
            files.write_text_atomic(out, json.dumps(document, indent=1) + "\n")
        try:
            loaded = load_profile(document, str(scen.path))
        except ProfileLoadError as exc:
            raise AccelgraphError(f"the profile recorded cannot be read: {exc}") from None
    if before is not None:
        from ..model.profile import ProfileCompareError, compare

        try:
            changes = compare(before, loaded)
        except ProfileCompareError as exc:
            raise AccelgraphError(f"--against {against}: {exc}") from None
        shown = scenario or loaded.scenario
        if json_out:
            echo(json_text({"before": against, "after": shown,
                             "device": [before.device, loaded.device],
                             "graphs": [c.to_json() for c in changes]}, indent=2))
        else:
            render_profile.print_comparison(_stdout(), before, loaded, changes, against, shown)
    elif json_out:
        echo(json_text(loaded.to_json(), indent=2))
    else:
        render_profile.print_profile(_stdout(), loaded, top)
    if out is not None and not json_out:
        echo(f"raw profile written to {out}")


@command(cls=_Command, short_help="Which host values capture froze into the kernels (GPU).")
def audit(
    ctx: typer.Context,
    scenario: str = typer.Argument(None, metavar="SCENARIO",
        help="Scenario file or bundled scenario name (default: the last capture here), or an "
        "audit saved with --out (.json or .json.gz: shown again, no GPU needed).",
        autocompletion=_completer((".py", ".json", ".gz"))),
    param: list[str] = PARAM_OPTION,
    pool: PoolKind = POOL_OPTION,
    error_mode: CaptureErrorMode = MODE_OPTION,
    out: str = typer.Option(None, "--out", "-o", metavar="FILE",
                            help="Also save the raw audit (JSON), to show again anywhere."),
    json_out: bool = typer.Option(False, "--json", help="Print the audit as JSON."),
    # model/audit.py's STEPS and MAX_STEPS (not imported for --help; a test holds them equal)
    steps: int = typer.Option(2, "--steps", min=2, max=64, metavar="N",
        help="Consecutive steps captured into each graph (2 to 64), each compared with the "
        "first: more finds a value that changes less often than every step."),
) -> None:
    """Find the kernel arguments a graph freezes: values and buffers the host picks anew
    each step, which replay passes as the first step had them.

    Captures as `capture` does (guard included), with two consecutive steps in each graph
    (--steps N for more), reads every kernel, copy and memset node's arguments back from the
    graph, and compares the first step's nodes with each later step's. A number that
    differs (a step counter, a scale), an address that moves within a state array (a
    position) or to another array (swapped buffers), or a grid that differs is frozen by a
    one-step graph: listed with the line that launched the kernel, exit 1. Parts of struct
    arguments that differ without being addresses (bytes C++ leaves unset differ so) are
    tried: the graph is replayed from a fresh state with the later steps given the first
    step's bytes there, and they are frozen where the outputs change. Exit 0 when nothing
    is frozen. Needs a CUDA GPU (exit 3 without one); CUPTI (cupti-python) adds each
    kernel's line. A saved audit (.json) is shown anywhere.
    """
    from ..model.audit import AuditLoadError
    from ..render import audit as render_audit
    from ..render import run as render_run
    from ..run import audit as run_audit

    _refuse_empty(("--out", out, "file"))
    if _saved(ctx, scenario, "audit", "param", "pool", "error_mode", "out", "steps"):
        loaded = run_audit.read_audit(scenario)
    else:
        from .. import files
        from ..model.audit import load_audit

        _check_json_out(out, "audit")
        scen, values, pool, error_mode = _scenario_and_options(scenario, param, pool, error_mode)
        what = "capturing two steps" if steps == 2 else f"capturing {steps} steps"
        with render_run.progress(_stdout(), what, enabled=not json_out):
            document = run_audit.record_audit(scen, values, pool=pool, error_mode=error_mode,
                                              steps=steps)
        if out is not None:  # first: what the GPU recorded is kept, whatever follows
            files.write_text_atomic(out, json.dumps(document, indent=1) + "\n")
        try:
            loaded = load_audit(document, str(scen.path))
        except AuditLoadError as exc:
            raise AccelgraphError(f"the audit recorded cannot be read: {exc}") from None
    if json_out:
        passed, line = render_audit.verdict(loaded)
        echo(json_text({**loaded.to_json(), "passed": passed, "verdict": line}, indent=2))
    else:
        passed = render_audit.print_audit(_stdout(), loaded)
        if out is not None:
            echo(f"raw audit written to {out}")
    if not passed:
        raise typer.Exit(int(ExitCode.FAILED))


def _saved(ctx: typer.Context, scenario: str | None, verb: str, *new_options: str) -> bool:
    """Whether SCENARIO names a document ``verb --out`` saved (.json, .json.gz), shown as it
    was recorded: the options of a new one are refused with it."""
    if scenario is None or not scenario.lower().endswith((".json", ".json.gz")):
        return False
    given = _given_options(ctx, *new_options)
    if given:
        raise AccelgraphError(f"{', '.join(given)}: options of a new {verb}; {scenario} is a "
                              "saved one, shown as it was recorded")
    return True


def _check_json_out(out: str | None, verb: str) -> None:
    """``--out`` of a profile or audit: a writable JSON file (checked before any GPU work)."""
    from .. import files

    if out is None:
        return
    article = "an" if verb[0] in "aeiou" else "a"
    if not out.lower().endswith(".json"):
        raise AccelgraphError(f"--out {out}: {article} {verb} is saved as JSON; name it .json "
                              f"({verb} FILE.json shows it again)")
    files.check_output_file(out)


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name one file (one that need not exist yet: by its real path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _replay_unrolled(scen, values, pool, error_mode, *, unroll, iters, warmup, rounds, check,
                     check_steps, rtol, atol, json_out) -> None:
    """`replay --unroll K`: a one-step graph and a K-step graph, timed per step with eager."""
    from ..render import run as render_run
    from ..run import protocol as runner

    one_step = runner.capture(scen, values, pool=pool, error_mode=error_mode)
    unrolled = runner.capture(scen, values, pool=pool, error_mode=error_mode, unroll=unroll)
    checked = checked_one = None
    if check and scen.info.has_outputs:
        checked = runner.check(unrolled, steps=check_steps, rtol=rtol, atol=atol)
        # the one-step graph is timed and shown beside it: checked as well
        checked_one = runner.check(one_step, steps=check_steps, rtol=rtol, atol=atol)
    try:
        eager, graph, per_step = runner.time_unrolled(one_step, unrolled, iters=iters,
                                                      warmup=warmup, rounds=rounds)
    except KeyboardInterrupt as exc:
        verdict = "not run" if checked is None else next(
            (c.verdict for c in (checked, checked_one) if c.verdict != "ok"), "ok")
        raise interrupted_exit(
            exc, f"accelgraph: interrupted while timing; check: {verdict}") from None
    report = runner.UnrollReport(eager, graph, per_step, unroll, checked, unrolled, one_step,
                                 checked_one)
    if json_out:
        echo(json_text(report.to_dict(), indent=2))
    else:
        render_run.print_unrolled(_stdout(), report)
    if not report.ok:
        raise typer.Exit(ExitCode.FAILED)


# -- inspection -----------------------------------------------------------------------------

LIMIT_OPTION = typer.Option(200, "--limit", min=1, metavar="N", help="Most listing lines to print.")
FOCUS_OPTION = typer.Option(None, "--focus", metavar="NODE",
                            help="Draw the neighbourhood of this node instead of the whole graph: "
                            "#3 or 3 (node 3 of the top graph, as the listing shows it), g10#0 (a "
                            "node of a nested graph), or a full id such as graph_0_node_3.")
DEPTH_OPTION = typer.Option(None, "--depth", min=0, metavar="K",
                            help="Edges up and down from the --focus node to draw (default 2; "
                            "only with --focus).")


def _print_model(model, source: str, limit: int, focus: tuple | None = None, depth: int = 2,
                 saved_model: bool = False, undirected: bool = False) -> None:
    """Notes on stderr, then the summary and the drawing/listing (or a focused drawing)."""
    from ..render import graph as render

    console = _stdout()
    if model.source == "dot-generic" and not saved_model:
        err_console.print(f"note: {one_line(source)} is not a CUDA graph dump; parsed generically "
                          "(node kinds unknown)", soft_wrap=True)
    if undirected:
        err_console.print(f"note: {one_line(source)} is an undirected graph (graph {{ a -- b }}); each edge "
                          "is drawn pointing from the node written first", soft_wrap=True)
    console.print(render.render_summary(model, saved_model=saved_model))
    console.print()
    if focus is not None:
        graph, node_id = focus
        console.print(render.render_focus(graph, node_id, depth, nested=graph is not model))
    else:
        console.print(render.render_graph_or_listing(model, limit=limit))


def _resolve_node(model, focus: str) -> tuple:
    """(graph, node id) for a --focus value, or the error naming the forms it takes."""
    from ..render.graph import find_nodes, node_label

    hits = find_nodes(model, focus)
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        labels = ", ".join(node_label(model, graph, node_id) for graph, node_id in hits[:5])
        more = f" and {len(hits) - 5} more" if len(hits) > 5 else ""
        raise AccelgraphError(f"--focus {focus!r}: {len(hits)} nodes match ({labels}{more}); "
                              "give one of them as the listing shows it")
    if not model.nodes:
        raise AccelgraphError(f"--focus {focus!r}: the graph has no nodes")
    # the example comes from the graph the value names (g10#5: CUDA's graph 10) when the
    # file holds it, else from the top graph
    graph = model
    if "#" in focus:
        wanted = focus.split("#", 1)[0] + "#"
        graph = next((g for g in model.walk() if g.nodes and node_label(
            model, g, g.nodes[-1].id).startswith(wanted)), model)
    first, last = graph.nodes[0].id, graph.nodes[-1].id
    raise AccelgraphError(f"--focus {focus!r}: no such node; name one as the listing shows it "
                          f"(here {node_label(model, graph, first)} … "
                          f"{node_label(model, graph, last)}) or by its full id (such as {last})")


@command(cls=_Command, short_help="Render a saved CUDA graph dump (no GPU needed).")
def show(
    ctx: typer.Context,
    file: str = typer.Argument(..., metavar="FILE", help="A graph dump (.dot from any CUDA "
                               "program) or an accelgraph .json model; gzipped (.gz) is fine; "
                               "- reads standard input."),
    limit: int = LIMIT_OPTION,
    focus: str = FOCUS_OPTION,
    depth: int = DEPTH_OPTION,
    out: str = typer.Option(None, "--out", "-o", metavar="FILE",
                            help="Also write the graph to FILE: .svg or .png (drawn with "
                            "Graphviz, kinds coloured, as dump --format does) or .json or "
                            ".json.gz (the graph model)."),
    json_out: bool = typer.Option(False, "--json", help="Print the graph model as JSON."),
) -> None:
    """Render a saved CUDA graph dump in the terminal. No GPU needed.

    Reads DOT written by cudaGraphDebugDotPrint (CuPy, PyTorch's debug_dump, cuda.core, C++)
    in its basic or verbose form, or a JSON model (show -o FILE.json, dump --format json).
    Prints a summary (nodes
    per kind, edges, levels, width, critical path, memory), then a drawing for small graphs
    and a listing in topological order with long runs of identical nodes collapsed.
    """
    from ..dot.read import read_graph

    if json_out and focus is not None:
        raise AccelgraphError("--focus draws a neighbourhood in the terminal; --json prints the "
                              "whole model: use one or the other")
    if json_out and _given(ctx, "limit"):
        raise AccelgraphError("--limit shortens the listing in the terminal; --json prints the "
                              "whole model: use one or the other")
    if depth is not None and focus is None:
        raise AccelgraphError("--depth applies to --focus NODE; without --focus the whole graph "
                              "is drawn")
    if focus is not None and _given(ctx, "limit"):
        raise AccelgraphError("--limit shortens the listing of the whole graph; --focus draws "
                              "one node's neighbourhood, with no listing: use one or the other "
                              "(--depth sets how far the neighbourhood reaches)")
    _refuse_empty(("--out", out, "file"))
    out_format = _picture_format(out) if out is not None else None
    with cyclic_gc_paused():  # the whole command: see gcpause's docstring
        loaded = read_graph(file)
        model = loaded.model
        target = _resolve_node(model, focus) if focus is not None else None  # before any output
        if out is not None:
            _write_picture(model, out, out_format)
        if json_out:
            echo(json_text(model.to_json(), indent=2))
            return
        _print_model(model, loaded.name, limit, target, 2 if depth is None else depth,
                     saved_model=loaded.saved_model, undirected=loaded.undirected)


def _picture_format(out: str) -> str:
    """The format `show --out` writes, from the suffix; Graphviz checked before any reading."""
    ext = _split_ext(out)[1].lower()
    fmt = "json.gz" if ext == ".json.gz" else _PICTURE_FORMATS.get(ext)
    if fmt is None:
        raise AccelgraphError(f"--out {out}: name a .svg, .png, .json or .json.gz file (the "
                              "suffix picks the format)")
    from .. import files

    files.check_output_file(out)  # creates nothing: the folder is made when the file is written
    if fmt in ("svg", "png"):
        from ..dot.draw import SHOW_INSTEAD, require_graphviz

        require_graphviz(SHOW_INSTEAD)
    return fmt


def _write_picture(model, out: str, fmt: str) -> None:

    if fmt in ("json", "json.gz"):
        _write_text_file(out, json.dumps(model.to_json(), indent=2) + "\n")  # as dump writes it
    else:
        from ..dot.draw import render_image

        _warn_if_slow(model, "-o FILE.json writes the graph model at once")
        render_image(model, out, fmt)
    total = model.total_nodes()
    inside = total - len(model.nodes)
    err_console.print(f"wrote {one_line(out)} ({total:,} node{'s' if total != 1 else ''}"
                      f"{f', {inside:,} of them in nested graphs' if inside else ''})",
                      soft_wrap=True)


def _write_text_file(target: str, text: str) -> None:
    """Write a DOT dump or a JSON model, gzipped when the name ends in .gz (show and diff read
    it as it is; no timestamp, so the same graph gives the same bytes)."""
    from .. import files

    data = text.encode("utf-8")
    if target.lower().endswith(".gz"):
        import gzip

        data = gzip.compress(data, mtime=0)
    files.write_bytes_atomic(target, data)


def _warn_if_slow(model, instead: str) -> None:
    from ..dot.draw import slow_drawing_warning

    warning = slow_drawing_warning(model, instead)
    if warning:
        err_console.print(warning, soft_wrap=True)


class DumpFormat(str, Enum):
    """What `dump --format` writes."""

    DOT = "dot"
    JSON = "json"
    SVG = "svg"
    PNG = "png"

    def __str__(self) -> str:
        return self.value


@command(cls=_Command, short_help="Capture a scenario and write its graph to a file (GPU).")
def dump(
    ctx: typer.Context,
    scenario: str = typer.Argument(None, metavar="SCENARIO",
        help="Scenario file or bundled scenario name; default: "
        "the last capture here.", autocompletion=_complete_scenario),
    out: str = typer.Option(..., "--out", "-o", metavar="FILE", help="File to write (one per graph for "
                            "multi-graph scenarios: NAME_<graph>.EXT)."),
    flags: str = typer.Option("verbose", "--flags", metavar="FLAGS",
        help="CUDA DOT detail: verbose, basic, or "
        "names joined by | (kernel_params|memcpy_params|handles...)."),
    fmt: DumpFormat = typer.Option(DumpFormat.DOT, "--format", "-f",
                            help="dot: CUDA's DOT as written; json: the graph model; svg/png: "
                            "drawn with Graphviz, kinds coloured."),
    graph_name: str = typer.Option(None, "--graph", metavar="NAME", help="Only this graph of a multi-graph "
                                   "scenario. Default: every graph, a file each."),
    param: list[str] = PARAM_OPTION,
    pool: PoolKind = POOL_OPTION,
    error_mode: CaptureErrorMode = MODE_OPTION,
    limit: int = LIMIT_OPTION,
    render_it: bool = typer.Option(True, "--render/--no-render",
                                   help="Render the graph in the terminal after writing."),
) -> None:
    """Capture a scenario and write its graph: CUDA's DOT, a JSON model or a drawing.

    Captures with the same pool and mode options as `capture`, writes the file atomically and
    renders the graph in the terminal. Needs a CUDA GPU (exit 3 without one); `show` reads a
    saved dump anywhere.
    """
    from .. import files
    from ..cuda import graph as graph_mod
    from ..dot.parse import parse_dot
    from ..run import protocol as runner

    if not render_it and _given(ctx, "limit"):
        raise AccelgraphError("--limit shortens the rendering in the terminal; --no-render "
                              "renders nothing: use one or the other")
    try:
        graph_mod.debug_dot_flags(flags)
    except ValueError as exc:
        raise AccelgraphError(f"--flags: {exc}") from None
    _refuse_empty(("--out", out, "file"), required=True)
    _check_dump_suffix(out, fmt)
    files.check_output_file(out)  # before any GPU work; creates nothing
    chosen = _scenario_options(scenario, param, pool, error_mode)
    _check_graph_name(graph_name, chosen.info)
    if fmt in (DumpFormat.SVG, DumpFormat.PNG):
        from ..dot.draw import require_graphviz

        require_graphviz()
    scen, values, pool, error_mode = _load_chosen(chosen)
    result = runner.capture(scen, values, pool=pool, error_mode=error_mode)
    graphs = result.graphs
    if graph_name is not None:
        graphs = [g for g in graphs if g.name == graph_name]
        if not graphs:
            names = ", ".join(g.name for g in result.graphs)
            raise AccelgraphError(f"--graph {graph_name!r}: no such graph; this scenario has {names}")
    targets = _dump_targets(out, [captured.name for captured in graphs])
    # A failure part way (a full disk at the third graph) takes back the files this dump
    # made: what it says it wrote is said once all are written
    new = {target for target in targets if not os.path.lexists(target)}
    # the folders on the way, made as the files are written: removed again too
    missing = sorted({folder for target in targets
                      for folder in files.missing_folders(os.path.dirname(os.path.abspath(target)))},
                     key=lambda folder: folder.count(os.sep), reverse=True)
    written = []
    try:
        for captured, target in zip(graphs, targets):
            text = captured.graph.debug_dot(flags if fmt is DumpFormat.DOT else "verbose")
            model = parse_dot(text, filename=target)
            if fmt in (DumpFormat.DOT, DumpFormat.JSON):
                _write_text_file(target, json.dumps(model.to_json(), indent=2) + "\n"
                                 if fmt is DumpFormat.JSON else text)
            else:
                from ..dot.draw import render_image

                _warn_if_slow(model, "--format dot or json writes the graph at once")
                render_image(model, target, fmt)
            written.append((captured, target, model))
    except BaseException:
        for _, target, _ in written:
            if target in new:
                with contextlib.suppress(OSError):
                    os.unlink(target)
        files.remove_folders(missing)
        raise
    for captured, target, model in written:
        err_console.print(f"wrote {one_line(target)} ({captured.name}: {captured.node_count:,} nodes)")
        if render_it:
            _print_model(model, target, limit)


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the option ``name`` was given on the command line (not left at its default).
    By the source's name: typer may bring a click of its own, with its own enum."""
    return getattr(ctx.get_parameter_source(name), "name", None) == "COMMANDLINE"


def _given_options(ctx: typer.Context, *names: str) -> list[str]:
    """Those of the options ``names`` (parameter names: check_steps) given on the command
    line, spelled as they are given (--check-steps), in the order named."""
    return [f"--{name.replace('_', '-')}" for name in names if _given(ctx, name)]


def _check_graph_name(graph_name: str | None, info) -> None:
    """Refuse, before capture, --graph naming anything but "step" for a one-graph scenario (a
    multi-graph scenario's names come from its steps(), known only once it runs)."""
    if graph_name not in (None, "step") and not info.multi_graph:
        raise AccelgraphError(f"--graph {graph_name!r}: no such graph; {info.path.name} has "
                              "one graph, step")


def _dump_targets(out: str, names: list[str]) -> list[str]:
    """The file each graph goes to (``out`` itself for one graph), every one checked before
    any is written: a folder in the way of the third file must not leave the first two
    written and the command failed. Two graph names that make the same file name are refused."""
    from .. import files

    targets = [_per_graph_path(out, name, len(names)) for name in names]
    seen: dict[str, str] = {}
    for name, target in zip(names, targets):
        key = os.path.normcase(os.path.abspath(target))
        if key in seen:
            raise AccelgraphError(
                f"graphs {seen[key]!r} and {name!r} would both be written to {target}; "
                f"use --graph NAME to dump one at a time")
        seen[key] = name
        if target != out:
            files.check_output_file(target)
    return targets


_DUMP_SUFFIXES = {".dot": DumpFormat.DOT, ".gv": DumpFormat.DOT, ".json": DumpFormat.JSON,
                  ".svg": DumpFormat.SVG, ".png": DumpFormat.PNG}
# what `show --out` writes, by suffix: every dump format but CUDA's own DOT
_PICTURE_FORMATS = {suffix: fmt.value for suffix, fmt in _DUMP_SUFFIXES.items()
                    if fmt is not DumpFormat.DOT}


def _check_dump_suffix(out: str, fmt: DumpFormat) -> None:
    """Refuse, before any GPU work, a file whose suffix names another format than --format
    writes (`-o graph.svg` with the default dot would be DOT text in a .svg file), a gzipped
    name for a drawing, and `-`: dump writes files."""
    if out == "-":
        raise AccelgraphError("--out -: dump writes files, not standard output; name a file "
                              "(e.g. -o graph.dot), which `accelgraph show` then reads")
    ext = _split_ext(out)[1].lower()
    if ext.endswith(".gz") and _DUMP_SUFFIXES.get(ext[:-3]) not in (DumpFormat.DOT,
                                                                    DumpFormat.JSON):
        raise AccelgraphError(f"--out {out}: only DOT and JSON are written gzipped; name a "
                              f".dot.gz or .json.gz file, or a .{fmt} file")
    named = _DUMP_SUFFIXES.get(ext.removesuffix(".gz"))
    if named is not None and named is not fmt:
        # "add" where --format was left at its default, "use" where it was given
        verb = "use" if fmt is not DumpFormat.DOT else "add"
        raise AccelgraphError(
            f"--out {out}: the suffix names {named} but --format is {fmt}; {verb} --format "
            f"{named}, or name a .{fmt} file"
        )


def _per_graph_path(out: str, name: str, count: int) -> str:
    if count == 1:
        return out
    from ..files import safe_name

    root, ext = _split_ext(out)
    return f"{root}_{safe_name(name)}{ext}"


def _split_ext(path: str) -> tuple[str, str]:
    """(root, suffix), a gzipped dump's two suffixes as one: graph.dot.gz -> graph, .dot.gz
    (only a suffix dump writes before the .gz: run.v2.gz -> run.v2, .gz)."""
    root, ext = os.path.splitext(path)
    if ext.lower() == ".gz":
        inner_root, inner = os.path.splitext(root)
        if inner.lower() in _DUMP_SUFFIXES:
            return inner_root, inner + ext
    return root, ext


@command(cls=_Command, short_help="List the bundled scenarios (no GPU needed).")
def scenarios(
    json_out: bool = typer.Option(False, "--json", help="Print the list as JSON."),
) -> None:
    """List the bundled scenarios and what each one captures. No GPU needed.

    Every verb that takes a SCENARIO takes one of these names as well as a file:
    `accelgraph replay mlp_decode --iters 100`.
    """
    from ..run.catalog import bundled_scenarios

    _print_scenarios(bundled_scenarios(), json_out, paths=False)


def _print_scenarios(infos, json_out: bool, paths: bool) -> None:
    """One line per scenario: its name (or path) and the first line of its docstring."""
    if json_out:
        echo(json_text([_scenario_json(i) for i in infos], indent=2))
        return
    _print_rows([(str(i.path) if paths else i.name, _summary_text(i)) for i in infos])


def _summary_text(info) -> Text:
    """A scenario's summary as a listing shows it; a scenario without one says where it goes."""
    if info.summary:
        return Text(f"  {info.summary}")
    return Text("  (no summary: the first line of the file's docstring is its summary)",
                style="dim")


def _scenario_json(info) -> dict:
    return {"name": info.name, "path": str(info.path), "summary": info.summary,
            "params": info.params, "pool": info.pool, "error_mode": info.error_mode,
            "graphs": "steps" if info.multi_graph else "step", "backend": info.backend.value}


def _print_rows(rows) -> None:
    """One line per (label, text): the labels in bold, padded to one width."""
    rows = [(one_line(label), text) for label, text in rows]  # a file's name keeps its row
    width = max((len(label) for label, _ in rows), default=0)
    console = _stdout()
    for label, text in rows:
        console.print(Text.assemble((f"{label:<{width}}", "bold"), text), soft_wrap=True)


def _check_baseline_folder(folder: str, update: bool) -> None:
    """Refuse, before any work, a --baseline folder that smoke could not use: one it must
    write (--update-baseline, or one that does not exist yet) and cannot, or an existing one
    it cannot read. Comparing with saved baselines only reads them, so a read-only folder of
    committed baselines serves; a baseline missing from it makes that scenario's row an
    error, saying the file cannot be written."""
    from ..files import check_output_folder, path_kind

    path = Path(folder)
    # (a folder on the way that cannot be entered, a name too long: one line, exit 2)
    kind = "missing" if update else path_kind(path)
    if kind == "missing":
        check_output_folder(folder)
    elif kind != "dir":
        raise AccelgraphError(f"--baseline {folder}: a file, not a folder of baselines")
    elif not os.access(path, os.R_OK | os.X_OK):
        raise AccelgraphError(f"--baseline {folder}: this folder cannot be read")


def _refuse_empty(*options: tuple[str, str | None, str], required: bool = False) -> None:
    """An option given an empty name (``--junit "$REPORT"`` with the variable unset) is
    refused: taken as not given, the report would silently not be written. Each option
    comes as (name, value, what it names: "file" or "folder"); ``required``: the verb needs
    the option, so leaving it out is no way out."""
    for option, value, what in options:
        if value == "":
            raise AccelgraphError(f"{option} was given an empty name (an unset variable?); "
                                  f"name a {what}" + ("" if required else
                                                     ", or leave the option out"))


def _list_smoke(paths, json_out: bool) -> None:
    """`smoke --list`: every file, a broken one with its one-line error (as a smoke run would
    report it, and with the same exit code 1), the others as _print_scenarios shows them."""
    from ..bundled import scenarios_folder
    from ..run.smoke import inspect_files

    entries = inspect_files(paths)
    if json_out:
        echo(json_text([_scenario_json(info) if info else
                         {"name": Path(path).stem, "path": str(path), "error": error}
                         for path, info, error in entries], indent=2))
    else:
        # a bundled scenario by its name, as `scenarios` lists it and verbs take it (installed,
        # its path is deep inside site-packages); a file of one's own by its path
        bundled = os.path.realpath(scenarios_folder())  # realpath: a loop of links is no error
        _print_rows([(Path(path).stem if os.path.dirname(os.path.realpath(path)) == bundled
                      else str(path),
                      _summary_text(info) if info else
                      Text(f"  error: {_without_path(error, path)}", style="red"))
                     for path, info, error in entries])
    if any(error for _, _, error in entries):
        raise typer.Exit(ExitCode.FAILED)


def _without_path(error: str, path) -> str:
    """A file's error as its row of a listing shows it: the row names the file already, so
    ``PATH:3: message`` reads ``line 3: message``."""
    prefix = f"{one_line(path)}:"  # (as ScenarioError writes a line break in the name)
    if not error.startswith(prefix):
        return error
    where, sep, rest = error[len(prefix):].partition(": ")
    line, _, column = where.partition(":")
    if not (sep and line.isdigit() and (not column or column.isdigit())):
        return error[len(prefix):].lstrip()
    return f"line {line}{f', column {column}' if column else ''}: {rest}"


@command(cls=_Command, short_help="Capture, replay and check every scenario: CI (GPU).")
def smoke(
    ctx: typer.Context,
    paths: list[str] = typer.Argument(None, metavar="PATHS",
        help="Scenario files, folders or bundled scenario "
        "names (default: every bundled scenario).", autocompletion=_complete_scenario),
    iters: int = typer.Option(50, "--iters", "-n", min=1, metavar="N",
                              help="Timed iterations per round."),
    rounds: int = typer.Option(3, "--rounds", min=1, metavar="R", help="Timed rounds."),
    junit: str = typer.Option(None, "--junit", metavar="FILE", help="Write a JUnit XML report "
                              "here (without a GPU too: every scenario skipped, with the "
                              "reason, and a file that cannot be a scenario an error)."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    baseline: str = typer.Option(None, "--baseline", metavar="DIR", help="Folder of saved graph models: fail "
                                 "on structural drift from them."),
    update_baseline: bool = typer.Option(False, "--update-baseline",
                                         help="Write the current graphs as the baseline."),
    list_only: bool = typer.Option(False, "--list", help="List the scenarios that would run, "
                                   "with their summaries, and stop (no GPU needed)."),
) -> None:
    """Capture, replay and check every scenario under PATHS: for CI on GPU runners.

    One failing scenario does not stop the others. Prints a table (scenario, status, nodes,
    capture ms, speedup, check, drift: none / changed / new baseline with --baseline, - without);
    exit 0 when all passed, 1 when any failed, 3 without a GPU (1 even then when a file cannot
    be a scenario: that needs no GPU to find). Ctrl-C stops at once (the
    scenario in flight is dropped), still prints the table of those that finished and writes
    --junit marked interrupted; exit 130.
    """
    from ..cuda import device as _cuda
    from ..files import check_output_file, write_text_atomic
    from ..render import run as render_run
    from ..run import smoke as smoke_mod

    if list_only:
        unused = _given_options(ctx, "iters", "rounds", "junit", "baseline", "update_baseline")
        if unused:
            raise AccelgraphError(f"--list only lists the scenarios (with --json, as JSON): "
                                  f"{', '.join(unused)} would be ignored; drop "
                                  f"{'it' if len(unused) == 1 else 'them'} or --list")
        _list_smoke(smoke_mod.discover(paths), json_out)
        return
    _refuse_empty(("--junit", junit, "file"), ("--baseline", baseline, "folder"))
    files = smoke_mod.discover(paths)
    if update_baseline and not baseline:
        raise AccelgraphError("--update-baseline needs --baseline DIR")
    if baseline:
        _check_baseline_folder(baseline, update_baseline)
        clashes = smoke_mod.baseline_clashes(files)
        if clashes:
            names = "; ".join(" and ".join(str(p) for p in group) for group in clashes)
            raise AccelgraphError(f"--baseline: {names} would share baseline files (they are "
                                  f"named after the file's name); rename one, or run them "
                                  f"with a --baseline folder each")
    if junit:
        check_output_file(junit)
    try:
        _cuda.require_cuda()
    except AccelgraphError as exc:
        # What needs no GPU is still checked: a file that cannot be a scenario is an error
        # (exit 1, as a run would report it), so a CI job without a GPU still catches it.
        errors = smoke_mod.static_errors(files)
        if junit:  # CI uploads the report whatever happened: say why nothing ran
            write_text_atomic(junit, smoke_mod.junit_not_run(files, str(exc), errors))
            broken = f", {len(errors)} with errors" if errors else ""
            err_console.print(f"wrote {one_line(junit)} ({len(files) - len(errors)} scenario(s) skipped: "
                              f"no usable GPU{broken})", soft_wrap=True)
        if json_out:  # the same for a CI job that reads the JSON: every scenario, and why
            try:  # a report that cannot be written is lost: exit 2, as for --junit
                echo(json_text(smoke_mod.json_not_run(files, str(exc), errors), indent=2))
            except StdoutClosed:  # the reader went away: nothing is lost that it wanted
                _silence_stdout()
        if not errors:
            raise
        for message in errors.values():
            fail(message)
        others = len(files) - len(errors)
        rest = ("and nothing could run here" if not others else
                "the other did not run either" if others == 1 else
                "the others did not run either")
        raise fail(f"{len(errors)} of {len(files)} scenario file(s) cannot be run (above); "
                   f"{rest}: {exc}", ExitCode.FAILED) from None
    console = _stdout()
    rows, interrupted = [], None
    with render_run.progress(console, "smoke", enabled=not json_out) as tick:
        try:
            for i, path in enumerate(files):
                tick(i, len(files))
                rows.append(smoke_mod.run_one(path, iters=iters, rounds=rounds, baseline=baseline,
                                              update_baseline=update_baseline))
            tick(len(files), len(files))
        except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: report what ran, then stop
            interrupted = exc
    if junit:
        write_text_atomic(junit, smoke_mod.junit_xml(rows, interrupted is not None))
    if json_out:
        echo(json_text(smoke_mod.json_report(rows, len(files), interrupted is not None), indent=2))
    else:
        render_run.print_smoke(console, rows, len(files), interrupted is not None)
    if interrupted is not None:  # the report above says so ("interrupted after N of M")
        raise interrupted_exit(interrupted)
    if not all(r.ok for r in rows):
        raise typer.Exit(ExitCode.FAILED)


@command(cls=_Command, short_help="What changed between two graphs (saved: no GPU).")
def diff(
    ctx: typer.Context,
    a: str = typer.Argument(..., metavar="A", help="Graph A: a .dot dump, a .json model, a "
                            "scenario .py, or a bundled scenario's name; - reads standard input "
                            "(for one side).", autocompletion=_complete_graph),
    b: str = typer.Argument(..., metavar="B", help="Graph B: the same choices.",
                            autocompletion=_complete_graph),
    ignore: list[str] = typer.Option([], "--ignore", metavar="PARAM",
                                     help="Parameter to leave out of matching and the report "
                                     "(repeatable or comma-separated: grid,block,bytes...)."),
    param: list[str] = typer.Option([], "--param", "-p", metavar="K=V",
                                    help="Scenario parameter for both sides (scenarios only)."),
    a_param: list[str] = typer.Option([], "--a-param", metavar="K=V",
                                      help="Scenario parameter for side A only."),
    b_param: list[str] = typer.Option([], "--b-param", metavar="K=V",
                                      help="Scenario parameter for side B only."),
    graph_name: str = typer.Option(None, "--graph", metavar="NAME", help="Which graph of a multi-graph "
                                   "scenario (default: its only graph)."),
    pool: PoolKind = POOL_OPTION,
    error_mode: CaptureErrorMode = MODE_OPTION,
    limit: int = typer.Option(20, "--limit", min=1, metavar="N", help="Most items listed per section."),
    json_out: bool = typer.Option(False, "--json", help="Print the diff as JSON."),
) -> None:
    """What changed between two CUDA graphs: nodes added, removed, changed; edges; shape.

    Nodes are matched by what they do (kind, kernel name as written, launch dimensions, bytes,
    copy direction; never pointers) and where they sit in the graph, so renumbered dumps and
    basic-vs-verbose dumps of one graph are identical. A scenario is captured (GPU), so
    `diff scenarios/mlp_decode.py scenarios/mlp_decode.py --a-param batch=8 --b-param batch=16`
    shows what the batch size does. Exit 0: same; 1: different; 2: an input could not be read;
    3: a scenario to capture and no GPU.
    """
    from ..diff.structural import diff_models
    from ..dot.read import STDIN
    from ..render.diff import render_diff
    from ..run.catalog import is_scenario_argument, resolve_scenario

    if json_out and _given(ctx, "limit"):
        raise AccelgraphError("--limit shortens the lists in the terminal; --json prints every "
                              "item: use one or the other")
    for item in ignore:
        if not all(part.strip() for part in item.split(",")):
            raise AccelgraphError(f"--ignore {item!r}: an empty parameter name; name one "
                                  "(--ignore grid) or several, comma-separated")
    ignored = {part.strip() for item in ignore for part in item.split(",")}
    if a == b == STDIN:
        raise AccelgraphError("A and B are both - (standard input); give a file for one of them")
    if _one_pipe(a, b):  # `- /dev/stdin`, or a FIFO named twice: the first side would drain it
        raise AccelgraphError(f"A and B are the same pipe ({_side_name(a)} and {_side_name(b)}), "
                              "which can be read once; give a file for one of them")
    for which, side in (("A", a), ("B", b)):  # before anything is read or captured
        if not side.strip():
            raise AccelgraphError(f"{which} is an empty name: give a saved graph (a DOT dump "
                                  "or a .json model), a scenario, or - for standard input")
        if side != STDIN and not os.path.splitext(side)[1] and not os.path.exists(side):
            resolve_scenario(side)  # neither a file nor a bundled name: the error lists them
    if not (is_scenario_argument(a) or is_scenario_argument(b)):
        given = [name for name, value in (("--graph", graph_name), ("--pool", pool),
                                          ("--error-mode", error_mode),
                                          ("--param", param or None)) if value is not None]
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            raise AccelgraphError(f"{'/'.join(given)} {verb} to scenarios (captured first); "
                                  f"{a} and {b} are saved graphs")
    chosen = []  # per side: its scenario and options (None for a saved graph)
    sides = ((a, ("--a-param", list(a_param))), (b, ("--b-param", list(b_param))))
    for side, side_params in sides:  # both sides' options, before either is read or captured
        if side != STDIN and is_scenario_argument(side):
            chosen.append(_scenario_options(side, list(param), pool, error_mode, [side_params]))
            _check_graph_name(graph_name, chosen[-1].info)
        elif side_params[1]:  # --param, for both sides, goes to the one that is a scenario
            raise AccelgraphError(f"{side_params[0]} applies to a scenario, not "
                                  f"{_side_name(side)}, a saved graph")
        else:
            chosen.append(None)
    with cyclic_gc_paused():  # the whole command: see gcpause's docstring
        # saved graphs first: a bad file is reported as one before a scenario is captured
        # (or before the lack of a GPU is), whichever side it is on
        models = [None, None]
        for captured in (False, True):
            for k, side in enumerate((a, b)):
                if (chosen[k] is not None) is captured:
                    models[k] = _diff_side(side, chosen[k], graph_name)
        side_a, side_b = models
        _check_ignored(ignored, side_a, side_b)
        result = diff_models(side_a, side_b, ignore=ignored)
        if json_out:
            echo(json_text(result.to_json(), indent=2))
        else:
            _stdout().print(render_diff(result, limit=limit, label_a=_side_name(a),
                                        label_b=_side_name(b)))
    raise typer.Exit(result.exit_code)


def _check_ignored(ignored: set, *models) -> None:
    """--ignore names parameters the graphs carry; anything else is a typo, named with the
    parameters there are."""
    from ..model.graph_model import UNSTABLE_PARAM_PREFIXES, stable_params

    if not ignored:
        return  # nothing to check: no need to read every node's parameters
    never = sorted(key for key in ignored if key.startswith(UNSTABLE_PARAM_PREFIXES))
    if never:
        raise AccelgraphError(
            f"--ignore {','.join(never)}: pointers and handles ("
            f"{', '.join(p + '*' for p in UNSTABLE_PARAM_PREFIXES)}) differ from one capture to "
            "the next and are never compared, so there is nothing to ignore")
    known = {key for model in models for graph in model.walk() for node in graph.nodes
             for key in stable_params(node)}
    unknown = sorted(ignored - known)
    if unknown:
        choices = ", ".join(sorted(known)) or "none (no node carries parameters)"
        raise AccelgraphError(f"--ignore {','.join(unknown)}: no node of either graph has "
                              f"{'that parameter' if len(unknown) == 1 else 'those parameters'}; "
                              f"parameters here: {choices}")


def _one_pipe(a: str, b: str) -> bool:
    """Whether the sides ``a`` and ``b`` (paths, or - for standard input) are one pipe, FIFO
    or socket (two names of a regular file are two reads of the same bytes; fine)."""
    from ..dot.read import STDIN

    def pipe(side: str):
        try:
            found = os.fstat(0) if side == STDIN else os.stat(side)  # stat opens no FIFO
        except (OSError, ValueError):
            return None
        if not (stat.S_ISFIFO(found.st_mode) or stat.S_ISSOCK(found.st_mode)):
            return None
        return found.st_dev, found.st_ino

    first = pipe(a)
    return first is not None and first == pipe(b)


def _side_name(path: str) -> str:
    from ..dot.read import STDIN

    return "<stdin>" if path == STDIN else one_line(path)


def _diff_side(path: str, chosen: _Chosen | None, graph_name):
    """A GraphModel for one side of a diff: a file (or - for stdin) is read; a scenario is
    captured with the options ``chosen`` for it (None for a saved graph)."""
    from ..dot.parse import parse_dot
    from ..dot.read import read_graph

    if chosen is None:
        return read_graph(path).model  # (diff refused --param for it already)
    from ..run import protocol as runner

    scen, values, pool, error_mode = _load_chosen(chosen)
    result = runner.capture(scen, values, pool=pool, error_mode=error_mode)
    graphs = {g.name: g for g in result.graphs}
    if graph_name is None and len(graphs) > 1:
        raise AccelgraphError(f"{path} captures {len(graphs)} graphs ({', '.join(graphs)}); "
                              "pick one with --graph")
    chosen = graphs.get(graph_name) if graph_name else next(iter(graphs.values()))
    if chosen is None:
        raise AccelgraphError(f"--graph {graph_name!r}: {path} has {', '.join(graphs)}")
    return parse_dot(chosen.graph.debug_dot("verbose"), filename=f"{path} ({chosen.name})")
