"""Writing files safely: atomically (never half a file), into folders checked to be writable,
under names made safe. The one copy of these helpers: every layer writes through them."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
from pathlib import Path

from .errors import AccelgraphError


def path_kind(path: str | os.PathLike) -> str:
    """What a path given on the command line names: "file", "dir", "other" (a named pipe, a
    device) or "missing". AccelgraphError (one line, exit 2) where the path cannot even be
    looked at: a folder on the way that cannot be entered, a name too long, a loop of links.
    (pathlib's exists() and is_dir() raise those as OSError, which reads as a crash.)"""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError as exc:
        raise AccelgraphError(f"{os.fsdecode(path)}: cannot read: {exc.strerror or exc}") from None
    except ValueError:  # a NUL in the name: no file can have it
        return "missing"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"


def safe_name(name: str) -> str:
    """A graph name made safe as a file name ("batch=64" stays readable)."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", name).strip("_") or "graph"


def distinct_names(bases: list[str]) -> list[str]:
    """``bases`` as file names, each once: where a name (letter case aside: some file systems
    ignore it) is taken already, ``-2``, ``-3``... after it."""
    taken: set[str] = set()
    names = []
    for base in bases:
        name, number = base, 2
        while name.lower() in taken:
            name, number = f"{base}-{number}", number + 1
        taken.add(name.lower())
        names.append(name)
    return names


def ensure_folder(folder: str | os.PathLike, created: list[str] | None = None) -> Path:
    """Create ``folder`` if needed and check it is writable; AccelgraphError otherwise.

    Given ``created``, the missing folders are made one at a time from the top and each this
    call made is put at its front (the deepest first), so a caller can remove them again
    (:func:`remove_folders`); one that another process makes meanwhile is not this call's.
    """
    path = Path(folder)
    try:
        if created is None:
            path.mkdir(parents=True, exist_ok=True)
        else:
            _make_folders(os.fspath(folder), created)
    except OSError as exc:
        raise AccelgraphError(f"cannot create output folder {path}: {exc.strerror}") from None
    if not os.access(path, os.W_OK):
        raise AccelgraphError(f"output folder {path} is not writable")
    return path


def check_output_folder(folder: str | os.PathLike) -> None:
    """Refuse, creating nothing, a folder that could not be made or written: the options are
    checked before any work, and folders are created only when a file is about to be written.
    """
    absolute = Path(os.path.abspath(os.fspath(folder)))
    try:
        _check_name_lengths(absolute)
        try:
            os.stat(absolute)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # (else "not writable": the loop is no folder)
                raise AccelgraphError(f"cannot use output folder {folder}: a loop of symbolic "
                                      "links") from None
        existing = absolute
        while not existing.exists():
            existing = existing.parent
        if not existing.is_dir():
            raise AccelgraphError(f"cannot create output folder {folder}: {existing} is a file, "
                                  "not a folder")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise AccelgraphError(f"output folder {existing} is not writable")
    except OSError as exc:
        raise write_error(folder, exc) from None


def check_output_file(path: str | os.PathLike) -> None:
    """Refuse, creating nothing, an output file that could not be written: an existing
    folder of that name, a name too long for the file system, a folder that cannot be made.
    A device, a named pipe or an open descriptor is written into (see :func:`atomic_output`),
    so it needs only to be writable itself; a socket is refused; a symbolic link is checked
    where it points."""
    absolute = Path(os.path.abspath(os.fspath(path)))
    _refuse_python(absolute, path)
    try:
        _check_name_lengths(absolute)
        if absolute.is_dir():
            raise AccelgraphError(f"cannot write {path}: it is a folder; name a file")
        if is_special_file(absolute):
            if _is_socket(absolute):
                raise AccelgraphError(f"cannot write {path}: it is a socket; name a file, a "
                                      "device or a named pipe")
            if not os.path.exists(absolute):  # /dev/fd/9 with no descriptor 9, or >&-
                raise AccelgraphError(f"cannot write {path}: no such descriptor is open")
            if not os.access(absolute, os.W_OK):
                raise AccelgraphError(f"cannot write {path}: permission denied")
            return
        absolute = Path(_link_target(absolute, path))  # a link's target is what gets replaced
    except OSError as exc:
        raise write_error(path, exc) from None
    _refuse_python(absolute, path)  # a link to a scenario is not written through either
    check_output_folder(absolute.parent)


def _refuse_python(absolute: Path, path: str | os.PathLike) -> None:
    """No output of accelgraph is Python: `smoke --junit a.py b.py` (the option's value
    forgotten) would otherwise replace a scenario with a report."""
    if absolute.suffix.lower() == ".py":
        raise AccelgraphError(f"cannot write {path}: accelgraph writes no Python file, and "
                              "this name may be a scenario's; name the output for what it is "
                              "(.xml, .dot, .json...)")


#: Paths that name an open descriptor (``/dev/stdout`` links to ``/proc/self/fd/1``):
#: whatever file is behind it, the shell opened it (``> log``, ``>> log``), and it is written
#: through, never replaced. Group 1: the process (self, thread-self or a number); group 2:
#: the descriptor.
_DESCRIPTOR = re.compile(r"/proc/(self|thread-self|\d+)(?:/task/\d+)?/fd/(\d+)|/dev/fd/(\d+)")
_STANDARD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


def _descriptor_of(path: str | os.PathLike) -> int | None:
    """The descriptor ``path`` names, or a symbolic link on the way from it to a file names:
    its number when it is one of this process's, -1 for another process's; None for a path
    that names none."""
    current = os.path.abspath(os.fspath(path))
    for _ in range(40):  # the kernel's own limit on links followed
        if current in _STANDARD:
            return _STANDARD[current]
        match = _DESCRIPTOR.fullmatch(current)
        if match is not None:
            owner, number = match.group(1), match.group(2) or match.group(3)
            mine = owner in (None, "self", "thread-self") or owner == str(os.getpid())
            return int(number) if mine else -1
        try:
            target = os.readlink(current)
        except (OSError, ValueError):
            return None
        current = os.path.normpath(os.path.join(os.path.dirname(current), target))
    return None


def _is_socket(path) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _link_target(path, shown) -> str:
    """The file a symbolic link ``path`` leads to (``path`` itself when it is no link), to be
    replaced in its place; AccelgraphError for a loop of links, or a link into a folder that
    does not exist (which the shell would not create either)."""
    if not os.path.islink(path):
        return os.path.realpath(path)
    try:
        os.stat(path)
    except FileNotFoundError:
        target = os.path.realpath(path)
        if not os.path.isdir(os.path.dirname(target)):
            raise AccelgraphError(f"cannot write {shown}: it links to {target}, in a folder "
                                  "that does not exist") from None
        return target
    except OSError as exc:  # ELOOP: links that lead back to themselves
        raise write_error(shown, exc) from None
    return os.path.realpath(path)


def is_special_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is written into, never replaced: an existing device or named pipe
    (through any symbolic links: ``/dev/null``, a FIFO; a socket too, which
    :func:`check_output_file` refuses), or an open descriptor (``/dev/stdout``,
    ``/dev/fd/3``), whatever is behind it (a ``> log`` file too)."""
    if _descriptor_of(path) is not None:
        return True
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _check_name_lengths(absolute: Path) -> None:
    """OSError(ENAMETOOLONG) for a path with a part longer than the file system allows."""
    limit = 255
    with contextlib.suppress(OSError, ValueError):
        limit = os.pathconf("/", "PC_NAME_MAX")
    for part in absolute.parts:
        if len(os.fsencode(part)) > limit:
            raise OSError(errno.ENAMETOOLONG, f"File name too long (a name may have at most "
                          f"{limit} bytes; this one has {len(os.fsencode(part))})")


def write_error(path: str | os.PathLike, exc: OSError) -> AccelgraphError:
    """The one-line error for an output that could not be written (exit code 2): a full
    disk, a folder in the way, a name too long are the user's to fix, not bugs."""
    return AccelgraphError(f"cannot write {os.fspath(path)}: {exc.strerror or exc}")


#: What writing a file can run into that is the user's to fix (bad input, exit 2): a full disk
#: or quota, a folder in the way, a name too long, no permission, a read-only file system, a
#: failing device, a network file system gone stale or unreachable, a process or system out
#: of file descriptors or memory. Any error that names the file itself is one too (a
#: bind-mounted target that cannot be replaced, its folder removed, another file system);
#: any other OSError from the code that writes is a bug, reported as one.
_WRITE_ERRNOS = frozenset(
    getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG", "EISDIR", "ENOTDIR",
                                       "ENAMETOOLONG", "EACCES", "EPERM", "EROFS", "EEXIST",
                                       "EIO", "ESTALE", "ETIMEDOUT", "ENOLINK", "EREMOTEIO",
                                       "ENXIO", "ENODEV", "EMFILE", "ENFILE", "ENOMEM")
    if hasattr(errno, name)
)


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, suffix: str = ""):
    """Yield a temporary path beside ``path``; on success it is renamed onto ``path``, on any
    error it is removed. Whatever writes the file (Python, CUDA, Graphviz), a reader never
    sees half of it and a failure leaves nothing behind. The folder is created here, when a
    file is about to be written; an OSError (disk full, a folder in the way, a name too long)
    becomes the one-line AccelgraphError of :func:`write_error`.

    A symbolic link stays a link: the file it points to is replaced. A device, a named pipe
    or an open descriptor (``/dev/null``, a FIFO, ``/dev/stdout``) cannot be replaced without
    destroying it: the writer writes a temporary file as ever, and its bytes are then poured
    into the target (see :func:`_pour`), so every writer (CUDA and Graphviz open their path
    with truncation) appends alike."""
    if is_special_file(path):
        fd, tmp = tempfile.mkstemp(prefix=".accelgraph-", suffix=suffix)
        os.close(fd)
        try:
            yield tmp
            try:
                _pour(tmp, path)
            except BrokenPipeError:
                raise  # the reader went away: as for standard output itself (exit 141)
            except OSError as exc:  # any failure to write the target itself (EBADF too)
                raise write_error(path, exc) from None
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _write_failure(exc, path, tmp, path) from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return
    shown, path = path, _link_target(os.fspath(path), path)  # a link: replace its target
    directory = os.path.dirname(path)
    created: list[str] = []  # the folders made below: removed again if the write fails
    done = False
    try:
        try:
            _check_name_lengths(Path(os.path.abspath(os.fspath(path))))
            ensure_folder(directory, created)
            fd, tmp = tempfile.mkstemp(prefix=".accelgraph-", suffix=suffix, dir=directory)
            os.close(fd)
        except OSError as exc:
            raise write_error(shown, exc) from None
        try:
            yield tmp
            # mkstemp makes the file private (0600); the result gets the mode of the file it
            # replaces (a private 0600 file stays private), else a new file's mode
            os.chmod(tmp, mode_of(path))
            os.replace(tmp, path)
            done = True
        except OSError as exc:
            raise _write_failure(exc, shown, tmp, path, shown) from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    finally:
        if not done:
            remove_folders(created)


def mode_of(path: str) -> int:
    """The permission bits for the file written at ``path``: those of the regular file there
    now, else what a new file gets (0666 less the umask)."""
    try:
        found = os.stat(path)
    except OSError:
        found = None
    if found is not None and stat.S_ISREG(found.st_mode):
        return stat.S_IMODE(found.st_mode) & 0o777  # (no set-user or set-group id passed on)
    return 0o666 & ~_umask()


def missing_folders(directory: str) -> list[str]:
    """The folders of ``directory``'s path that do not exist yet, the deepest first (as
    :func:`remove_folders` takes them)."""
    missing = []
    current = os.path.abspath(directory or ".")
    while not os.path.lexists(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return missing


def _make_folders(directory: str, created: list[str]) -> None:
    """ensure_folder's tracked mkdir: see there."""
    for folder in reversed(missing_folders(directory)):
        try:
            os.mkdir(folder)
        except FileExistsError:
            continue
        created.insert(0, folder)


def remove_folders(folders: list[str]) -> None:
    """Remove the folders a failed write made (deepest first), as long as they are empty: a
    failure leaves no folder behind that was not there before (``folders`` as
    :func:`ensure_folder` lists them)."""
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            return


def _write_failure(exc: OSError, shown, *own) -> AccelgraphError:
    """The one-line error for an OSError met while writing ``shown``: a known write failure
    (:data:`_WRITE_ERRNOS`) or any error naming one of its ``own`` files (the output, its
    temporary file); any other re-raised as it is, a bug to be reported as one."""
    names = {os.fspath(n) for n in (exc.filename, exc.filename2) if n is not None}
    if exc.errno not in _WRITE_ERRNOS and not names & {os.fspath(n) for n in own}:
        raise exc
    return write_error(shown, exc)


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file and a rename."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file and a rename: never half a file
    (into a device, pipe or descriptor: see :func:`atomic_output`)."""
    path = Path(path)
    with atomic_output(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
    return path


def _pour(source: str, target: str | os.PathLike) -> None:
    """Append the bytes of the file ``source`` to the device, pipe or descriptor ``target``.
    One of this process's descriptors (``/dev/stdout``, ``/dev/fd/3``) is written through
    that very descriptor, after what Python buffered for it: opened anew it would have an
    offset of its own, and what is printed after it (a table under ``> log``) would write
    over it. Anything else is opened for appending."""
    import shutil
    import sys

    number = _descriptor_of(target)
    with open(source, "rb") as data:
        if number is not None and number >= 0:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None and _fileno(stream) == number:
                    stream.flush()
            while chunk := data.read(1 << 16):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(number, view):]
            return
        with open(target, "ab") as out:
            shutil.copyfileobj(data, out)


def _fileno(stream) -> int | None:
    try:
        return stream.fileno()
    except (OSError, ValueError, AttributeError):
        return None


def _umask() -> int:
    """The process's umask (read by setting it and setting it back: there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
