"""Reading a graph file: gzip and binary sniffing, UTF-8 decoding, JSON model or DOT text."""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import re
import zlib

from ..model.graph_model import GraphModel, ModelLoadError
from .errors import DotParseError
from .scan import _DOT_START as _PARSER_START  # what parse_dot takes for a start (comments too)

_GZIP_MAGIC = b"\x1f\x8b"

# How many bytes to sniff for NUL before reading a whole file: binary files are refused
# before megabytes of them are decoded.
_SNIFF_BYTES = 64 * 1024

# A JSON document's first character (after what lstrip("\ufeff \t\r\n") would drop), found
# without copying the text.
_JSON_START = re.compile(r"[\ufeff \t\r\n]*[{\[]")
# A DOT graph's first word, as a hint for a DOT file named .json.
_DOT_START = re.compile(r"[\ufeff \t\r\n]*(?:strict\s+)?(?:di)?graph\b", re.IGNORECASE)



def load_model(path: str | os.PathLike) -> GraphModel:
    """Read a graph from a CUDA DOT dump (.dot/.gv, or any DOT) or an accelgraph JSON model.

    The format is recognised from the content (a JSON object vs DOT text, gzipped or not),
    except that a file named ``.json`` (or ``.json.gz``) must hold JSON: DOT there is refused
    with a hint to name it ``.dot``. A pipe or FIFO is read too. A model read from JSON keeps
    the ``source`` it was saved with (``"dot-verbose"``...).
    Raises ModelLoadError (DotParseError for DOT problems) with a one-line message naming
    the file: missing, unreadable, binary, not UTF-8, malformed.
    """
    name = os.fsdecode(path)  # a bytes path is named as text in messages
    text = decode_text(read_file_bytes(name), name)
    # (the bytes are not kept: a 100,000-node dump is 45 MB, not to be held while the model grows)
    return model_from_text(text, name)


def read_file_bytes(path: str | os.PathLike) -> bytes:
    """A graph file's bytes, gunzipped; ModelLoadError when missing, unreadable or binary."""
    name = os.fsdecode(path)
    if not name:
        raise ModelLoadError("an empty file name: name a DOT dump or a .json model")
    try:
        with open(name, "rb") as handle:
            return read_stream_bytes(handle, name, "file")
    except FileNotFoundError:
        raise ModelLoadError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise ModelLoadError(f"{name}: is a directory, not a graph file") from None
    except OSError as problem:
        raise ModelLoadError(f"{name}: cannot read: {problem.strerror or problem}") from None


def read_stream_bytes(handle, name: str, what: str = "data") -> bytes:
    """The bytes of an open binary stream, gunzipped; a pipe (not seekable) is read whole
    first. ``what`` names it in the message about damaged gzip ("file" or "data")."""
    seekable = handle.seekable()
    # Where reading starts (standard input redirected from a file may already be past its
    # beginning, and reading goes on from there, as any filter's would).
    start = handle.tell() if seekable else 0
    head = handle.read(_SNIFF_BYTES)
    limit = memory_limit()  # (once a read: it reads /proc and the control group's files)
    if head.startswith(_GZIP_MAGIC):
        # make fixtures stores big dumps gzipped; read them as they are.
        if seekable:
            handle.seek(start)
        else:
            handle = io.BytesIO(_read_pipe(handle, head, name, limit))
        return _gunzip(handle, name, what, limit)
    _check_head(head, name)
    if not seekable:
        return _read_pipe(handle, head, name, limit)
    if limit is not None and _size(handle) - start > limit:
        raise _too_large(name, limit)
    handle.seek(start)
    return handle.read()  # not head + the rest: that is a second copy


def _size(handle) -> int:
    """The size of a seekable stream (a regular file's, else where its end is)."""
    try:
        return os.fstat(handle.fileno()).st_size
    except (OSError, AttributeError, io.UnsupportedOperation):
        return handle.seek(0, io.SEEK_END)


def _read_pipe(handle, head: bytes, name: str, limit: int | None) -> bytes:
    """``head`` and the rest of a pipe (or of what a gzip stream unzips to), read a chunk at a
    time: one ``read()`` of a pipe that a fast writer never lets run dry returns only at its
    end, so Ctrl-C went unheard while it grew; between chunks Python acts on signals. Input
    that outgrows what this machine could read as a graph (a quarter of its available
    memory: decoding and the model take several times the bytes) is refused, rather than
    grown until the system kills the process (``limit``: :func:`memory_limit`'s)."""
    chunks, total = [], 0
    chunk = head
    while True:
        chunks.append(chunk)
        total += len(chunk)
        if limit is not None and total > limit:
            raise _too_large(name, limit)
        chunk = handle.read(_PIPE_CHUNK)
        if not chunk:
            return b"".join(chunks)


def _too_large(name: str, limit: int) -> ModelLoadError:
    return ModelLoadError(
        f"{name}: more than {limit / 2**20:,.0f} MiB, too large for the memory this process "
        "can use (input over a quarter of the memory it may still take is refused: reading it "
        "as a graph takes several times its size)")


# How much of a pipe to read a call (between two chances for Ctrl-C to be heard).
_PIPE_CHUNK = 4 * 2**20


def memory_limit() -> int | None:
    """A quarter of the memory available now, or None where the system does not say (no
    limit then: free pages alone would refuse what the page cache could make room for).
    Available is Linux's MemAvailable, or less where this process's control group allows less
    (a container's memory limit, which MemAvailable does not show), or less where its
    address space is capped (``ulimit -v``, as batch schedulers set it: the cap less what
    the process has mapped already)."""
    available = [_meminfo_available(), _cgroup_room(), _address_space_room()]
    known = [value for value in available if value is not None and value > 0]
    return min(known) // 4 if known else None


def _meminfo_available() -> int | None:
    return _proc_bytes("/proc/meminfo", b"MemAvailable:")


def _proc_bytes(path: str, key: bytes) -> int | None:
    """The "``key`` N kB" line of a /proc file, in bytes; None where it cannot be read."""
    try:
        with open(path, "rb") as info:
            for line in info:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _address_space_room() -> int | None:
    """What this process may still map under its address-space cap (RLIMIT_AS), or None
    where it has none. Without the cap's room counted, input that outgrew it ended in a
    MemoryError, not in the message that says the input is too large."""
    try:
        import resource

        cap = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError, AttributeError):
        return None
    if cap == resource.RLIM_INFINITY or cap < 0:
        return None
    # (unreadable: the cap alone, room over-counted by what is mapped, the MemoryError path)
    mapped = _proc_bytes("/proc/self/status", b"VmSize:") or 0
    # a cap lowered below what is mapped already leaves room only in what is mapped: no
    # bound that can be told (every input refused would be wrong for a small one)
    return cap - mapped if cap > mapped else None


# (limit, usage, statistics, page cache's key in them) of cgroup v2, then v1; a limit of
# "max" (or v1's huge number) is none.
_CGROUP_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current",
                  "/sys/fs/cgroup/memory.stat", b"file"),
                 ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                  "/sys/fs/cgroup/memory/memory.usage_in_bytes",
                  "/sys/fs/cgroup/memory/memory.stat", b"total_cache"))


def _cgroup_room() -> int | None:
    """What this process's memory control group lets it allocate still, or None (no limit, or
    no control group files). Its usage counts the page cache, which the kernel gives back
    when the group needs room: that part is not taken as used."""
    for limit_file, usage_file, stat_file, cache_key in _CGROUP_FILES:
        try:
            with open(limit_file, "rb") as f:
                limit = f.read().strip()
            with open(usage_file, "rb") as f:
                usage = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if limit == b"max" or not limit.isdigit() or int(limit) >= 2**60:
            return None
        return int(limit) - usage + _cgroup_stat(stat_file, cache_key)
    return None


def _cgroup_stat(path: str, key: bytes) -> int:
    """One value of a control group's memory.stat (0 where it cannot be read)."""
    try:
        with open(path, "rb") as f:
            for line in f:
                name, _, value = line.partition(b" ")
                if name == key:
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


_UNSET = object()


def _gunzip(handle, name: str, what: str = "file", limit=_UNSET) -> bytes:
    if limit is _UNSET:
        limit = memory_limit()
    start = handle.tell()
    try:
        with gzip.GzipFile(fileobj=handle, mode="rb") as unzipped:
            head = unzipped.read(_SNIFF_BYTES)
        _check_head(head, name)  # before the rest is gunzipped: 9 MB of gzip can hold 2 GB
        handle.seek(start)
        with gzip.GzipFile(fileobj=handle, mode="rb") as unzipped:
            # a chunk at a time, as a pipe is: the memory limit holds for what it unzips to
            return _read_pipe(unzipped, b"", name, limit)
    except (OSError, EOFError, zlib.error) as problem:
        raise DotParseError(f"{name}: damaged gzip {what} ({problem})") from None


def _check_head(head: bytes, name: str) -> None:
    """Refuse, from a file's first bytes (gunzipped), what its first lines already show is no
    graph, before the rest is read: a binary file, or text whose first word starts neither
    JSON nor DOT (the message is the one reading the whole file would give; a file named
    .json is left to the JSON reader, and anything the head cannot settle is read whole)."""
    _refuse_nul(head, name)
    cut = head.rfind(b"\n")  # whole lines: a cut character or word would mislead
    if cut < 0 or _named_json(name):
        return
    try:
        text = head[:cut + 1].decode("utf-8-sig")
    except UnicodeDecodeError:
        return  # reading the whole file reports it
    stripped = text.lstrip("\ufeff \t\r\n")
    if (not stripped or stripped[0] in "{[" or _PARSER_START.match(stripped)
            or stripped.rstrip().lower() == "strict"):  # (its "digraph" may come next)
        return
    model_from_text(text, name)  # raises the not-a-graph error of the whole file


def load_model_bytes(data: bytes, filename: str = "<bytes>") -> GraphModel:
    """``load_model`` for bytes already in memory (stdin, tests): JSON model or DOT text."""
    return model_from_text(decode_text(data, filename), filename)


def model_from_text(text: str, filename: str) -> GraphModel:
    """The graph in decoded text: a JSON model, or DOT."""
    if not text or text.isspace():  # either format: say so whatever the file is named
        raise DotParseError(f"{filename}: empty file, not a DOT or JSON graph")
    if _JSON_START.match(text) or _named_json(filename):
        model = _load_json(text, filename)
    else:
        from .parse import parse_dot  # here, not above: parse re-exports this module's names

        model = parse_dot(text, filename=filename)
    levels = model.nesting_depth() - 1
    if levels > MAX_NESTING:
        raise ModelLoadError(
            f"{filename}: not read: child graphs nested {levels} levels deep; accelgraph reads "
            f"at most {MAX_NESTING} levels (showing, saving and comparing a graph walk its "
            f"nesting; CUDA's own graphs nest a few)")
    return model


MAX_NESTING = 100
"""Levels of child graphs (and conditional bodies) nested in one another that a file may
have; deeper ones are refused as it is read: rendering, saving and diffing a graph recurse
once or a few times per level."""


def decode_text(data: bytes, filename: str = "<bytes>") -> str:
    """UTF-8 text of a file's bytes, or DotParseError for binary / non-UTF-8 content."""
    _refuse_nul(data, filename)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as problem:
        line = data.count(b"\n", 0, problem.start) + 1
        raise DotParseError(
            f"{filename}:{line}: not UTF-8 text (byte 0x{data[problem.start]:02x}); not a DOT or JSON graph"
        ) from None


def _refuse_nul(data: bytes, filename: str) -> None:
    if b"\x00" in data:
        raise DotParseError(f"{filename}: binary file (NUL bytes), not a DOT or JSON graph")


def _named_json(filename: str) -> bool:
    """Whether the file's name says JSON (``.json``, ``.json.gz``): its content is then read
    as JSON whatever it starts with, so ``42`` or ``null`` is "not an accelgraph model", not
    "not a DOT graph"."""
    name = filename.lower()
    return name.endswith(".json") or name.endswith(".json.gz")


def loads_json(text: str):
    """``text`` read as JSON, as JSON has it: NaN, Infinity and numbers past a double's
    range, which Python's reader takes, raise ValueError (what reads accelgraph's models and
    baselines)."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)


def read_json_document(path: str, noun: str, error: type[Exception]):
    """The JSON document in a saved file (a profile, an audit; gzipped or not), with one
    ``error`` naming the file for a missing, unreadable or malformed one."""
    if os.path.isdir(path):
        raise error(f"{path}: is a directory, not a saved {noun}")
    try:
        text = decode_text(read_file_bytes(path), path)
    except ModelLoadError as exc:
        raise error(str(exc)) from None
    try:
        return loads_json(text)
    except json.JSONDecodeError as exc:
        raise error(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    except RecursionError:
        raise error(f"{path}: JSON nested too deeply to be {_article(noun)} {noun}") from None
    except ValueError as exc:
        raise error(f"{path}: not JSON ({exc})") from None


def _article(noun: str) -> str:
    return "an" if noun[:1] in "aeiou" else "a"


def _no_constant(name: str):
    """NaN, Infinity and -Infinity, which Python's reader takes and JSON has not: refused
    (accelgraph writes none, and would write them back out, no JSON)."""
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    """A JSON number as a float, refused where a double cannot hold it (1e999 would be read
    as infinity, and written back out as Infinity)."""
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text[:40]} is past the range of a double")
    return number


def _load_json(text: str, filename: str) -> GraphModel:
    try:
        document = loads_json(text)
    except json.JSONDecodeError as problem:
        # msg alone can end in "starting at": the position is in lineno and colno
        where = f"line {problem.lineno}, column {problem.colno}"
        reason = f"{problem.msg} {where}" if problem.msg.endswith(" at") else f"{problem.msg} at {where}"
        hint = ("; it looks like DOT: name it .dot (a .json file is read as JSON)"
                if _DOT_START.match(text) else "")
        raise ModelLoadError(f"{filename}:{problem.lineno}: invalid JSON: {reason}{hint}") from None
    except RecursionError:
        raise ModelLoadError(f"{filename}: invalid JSON: nested too deeply") from None
    except ValueError as problem:  # Python's limit on the digits of an integer it converts
        reason = str(problem).split(";")[0] or type(problem).__name__
        raise ModelLoadError(f"{filename}: invalid JSON: {reason}") from None
    return GraphModel.from_json(document, where=filename)
