"""Demangling C++ kernel names (``_Z...``) with a maintained demangler, never by hand.

The demangler is binutils' (or LLVM's) ``c++filt``, run ONCE per batch with every name on
stdin. If ``c++filt`` is absent, the ``cxxfilt`` package (libstdc++'s ``__cxa_demangle`` via
ctypes) is used when it happens to be installed; it is not a dependency because it has not
been released since 2021 and runs ``ldconfig`` at import. With neither, names stay as
written and ``demangler_name()`` returns None so the renderer can say so.

Results are cached per process: graphs repeat the same few kernels thousands of times.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable

# Itanium ABI mangled names; CUDA writes nothing else for C++ kernels on Linux.
_MANGLED_PREFIXES = ("_Z", "__Z")

_cache: dict[str, str] = {}
_backend: tuple[str, object] | None = None  # ("c++filt", path) / ("cxxfilt", module) / ("", None)

# A graph can hold hundreds of thousands of names; the pipe takes them in one go, but a hung
# tool must not hang the CLI.
_CXXFILT_TIMEOUT_S = 30


def is_mangled(name: str | None) -> bool:
    """Whether a name looks like an Itanium C++ mangled symbol."""
    return bool(name) and name.startswith(_MANGLED_PREFIXES)


def _find_backend() -> tuple[str, object]:
    global _backend
    if _backend is None:
        for tool in ("c++filt", "llvm-cxxfilt"):
            path = shutil.which(tool)
            if path:
                _backend = ("c++filt", path)
                break
        else:
            try:
                import cxxfilt  # optional: see module docstring

                _backend = ("cxxfilt", cxxfilt)
            except Exception:  # noqa: BLE001 - ImportError, or its ctypes lookup failing
                _backend = ("", None)
    return _backend


def demangler_name() -> str | None:
    """The demangler in use ("c++filt" path or "cxxfilt"), or None when names stay mangled."""
    kind, handle = _find_backend()
    if kind == "c++filt":
        return str(handle)
    return kind or None


def demangle_many(names: Iterable[str | None]) -> dict[str, str]:
    """Demangle every mangled name in ``names`` at once; returns {name: demangled}.

    Only names that are mangled and that the demangler changes appear in the result; a name
    the demangler rejects, or every name when no demangler exists, is left out.
    """
    wanted = {n for n in names if is_mangled(n)}
    todo = sorted(n for n in wanted if n not in _cache)
    if todo:
        _cache.update(_run_demangler(todo))
    return {n: _cache[n] for n in wanted if _cache.get(n, n) != n}


def _run_demangler(names: list[str]) -> dict[str, str]:
    kind, handle = _find_backend()
    if kind == "c++filt":
        # One name per line in, one per line out: c++filt keeps the line structure. Names
        # with newlines cannot come from a DOT label, but guard so lines stay aligned.
        safe = [n for n in names if "\n" not in n and "\r" not in n]
        try:
            result = subprocess.run(
                [str(handle)],
                input="\n".join(safe) + "\n",
                capture_output=True,
                text=True,
                timeout=_CXXFILT_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return {n: n for n in names}
        lines = result.stdout.split("\n")
        if result.returncode != 0 or len(lines) < len(safe):
            return {n: n for n in names}
        demangled = {n: n for n in names}
        demangled.update(zip(safe, lines))
        return demangled
    if kind == "cxxfilt":
        demangled = {}
        for n in names:
            try:
                demangled[n] = handle.demangle(n)
            except Exception:  # noqa: BLE001 - it raises its own InvalidName for odd symbols
                demangled[n] = n
        return demangled
    return {n: n for n in names}


def short_kernel_name(demangled: str, max_len: int = 60) -> str:
    """A readable short form of a (demangled) kernel name for one-line listings.

    ``void at::native::elementwise_kernel<128, 4, at::native::Foo<float>>(int, F)`` becomes
    ``at::native::elementwise_kernel<128, 4, …>``: drop the return type and the parameter
    list, keep the qualified name and as many template arguments as fit ``max_len``.
    """
    text = demangled.strip().replace("(anonymous namespace)", "(anon)")
    text = _strip_parameter_list(text)
    text = _strip_return_type(text)
    if len(text) <= max_len:
        return text
    lt = text.find("<")
    if lt == -1 or lt >= max_len - 3:
        return text[: max_len - 1] + "…"
    # Keep whole top-level template arguments while they fit, then elide the rest.
    head, args = text[: lt + 1], _split_top_level(text[lt + 1 : _matching_close(text, lt)])
    kept = []
    for arg in args:
        candidate = head + ", ".join(kept + [arg]) + ", …>"
        if len(candidate) > max_len:
            break
        kept.append(arg)
    shortened = head + ", ".join(kept + ["…"]) + ">"
    return shortened if len(shortened) <= max_len else text[: max_len - 1] + "…"


def parameter_types(demangled: str) -> list[str] | None:
    """The parameter types of a demangled function name, in order: ``void k<4>(int, float
    const*)`` gives ``["int", "float const*"]``; None where the name has no parameter list
    (a name left mangled, an ``extern "C"`` one)."""
    text = demangled.strip()
    head = _strip_parameter_list(text)
    if head == text:
        return None
    inner = text[len(head):].strip()
    if not (inner.startswith("(") and inner.endswith(")")):
        return None
    types = _split_top_level(inner[1:-1])
    return [] if types == ["void"] else types


def _matching_close(text: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(text)):
        c = text[i]
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
            if depth == 0:
                return i
    return len(text)


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts


def _strip_parameter_list(text: str) -> str:
    # The parameter list is the last top-level "(...)" that closes the name: scan from the end.
    if not text.endswith(")"):
        return text
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        c = text[i]
        if c in ")>":
            depth += 1
        elif c in "(<":
            depth -= 1
            if depth == 0:
                # "(anonymous namespace)" and operator() are part of names, not parameters.
                return text[:i].rstrip() if i > 0 else text
    return text


def _strip_return_type(text: str) -> str:
    # A return type is separated from the name by a space outside any brackets.
    depth = 0
    for i, c in enumerate(text):
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth -= 1
        elif c == " " and depth == 0:
            rest = text[i + 1 :]
            # "(anonymous namespace)::f" has its space inside brackets; "unsigned int" style
            # return types are all before the last top-level space.
            return _strip_return_type(rest) if rest else text
    return text
