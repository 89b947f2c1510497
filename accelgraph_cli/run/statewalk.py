"""Finding the device arrays a scenario's state holds, wherever they sit in it.

A scenario's ``setup`` returns any Python value: a dict of arrays, nested dicts and lists, a
small object with attributes, a torch module with parameters and buffers. The capture guard
(``snapshot``) needs every device array in it, named the way a user reads the state
(``state["w1"]``, ``state["y"]["batch8"]``, ``state["model"].fc1.weight``), so that "this changed
during capture" names what changed; a sparse or nested torch tensor through the dense tensors
it is made of (``state["adj"].values()``). Pure Python: what counts as an array is the caller's
predicate, so this module imports no CUDA library and is tested with NumPy arrays.
"""

from __future__ import annotations

import collections
import functools
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

MAX_DEPTH = 64
"""Containers nested deeper than this are not searched (an array 16 links down a linked list
is found; the limit keeps a pathological state from exhausting the walk's recursion)."""

# A torch module's own tables: walked through named_parameters/named_buffers/named_modules
_MODULE_TABLES = frozenset({"_parameters", "_buffers", "_modules"})


def _module_attribute(name: str) -> bool:
    """Whether a module attribute is searched: not torch's tables of parameters, buffers and
    submodules (walked above), nor its hook tables (keyed by a counter torch shares across
    modules, so the same hook's path would differ between two states built alike), nor
    dunders."""
    return not (name in _MODULE_TABLES or name.startswith("__")
                or (name.startswith("_") and "hook" in name))

# Objects with a __dict__ that are code or machinery, not data: never searched.
_OPAQUE = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
           type, types.CodeType, types.FrameType, types.GeneratorType)


def find_arrays(state: Any, is_array: Callable[[Any], bool], root: str = "state"
                ) -> list[tuple[str, Any]]:
    """Every object in ``state`` for which ``is_array`` holds, with the path that reaches it.

    Searched: dict values, list, tuple and deque items, a module's parameters and buffers
    (anything with ``named_parameters()`` and ``named_buffers()``, as torch.nn.Module has),
    then the plain attributes of it and its submodules, the arguments a ``functools.partial``
    binds, and the attributes of other objects (``vars(obj)`` and ``__slots__``; callable
    ones too; functions, methods, classes and modules are not searched). An array is not
    searched further, except for its gradient (``.grad`` of a leaf tensor, as
    ``state.fc1.weight.grad``). Each object is reported once, under the first path that
    reaches it (dict order, then list order), so an array held under two keys is one entry;
    cycles end.
    """
    found: list[tuple[str, Any]] = []
    # id -> object: each object seen is kept alive while the walk runs, so that the id of a
    # part made on the fly (a sparse tensor's values()) cannot come back for another
    seen: dict[int, Any] = {}
    for path, obj in _walk(state, root, 0, is_array, seen):
        found.append((path, obj))
    return found


def _walk(obj: Any, path: str, depth: int, is_array: Callable[[Any], bool],
          seen: dict[int, Any]) -> Iterator[tuple[str, Any]]:
    if obj is None or isinstance(obj, (str, bytes, int, float, complex, bool)):
        return
    if id(obj) in seen:
        return
    seen[id(obj)] = obj
    if is_array(obj):
        yield path, obj
        # a leaf tensor's gradient (torch's .grad, which training steps accumulate into in
        # place); not asked of a non-leaf tensor, where torch warns that it holds none
        if getattr(obj, "is_leaf", False) is True:
            grad = getattr(obj, "grad", None)
            if grad is not None:
                yield from _walk(grad, f"{path}.grad", depth + 1, is_array, seen)
        return
    if depth >= MAX_DEPTH or isinstance(obj, _OPAQUE):
        return
    parts = tensor_parts(obj)
    if parts is not None:  # a sparse or nested tensor: the dense tensors it is made of
        for name, part in parts:
            yield from _walk(part, f"{path}.{name}", depth + 1, is_array, seen)
        return
    if _is_module(obj):
        for kind in ("named_parameters", "named_buffers"):
            for name, tensor in getattr(obj, kind)():
                yield from _walk(tensor, f"{path}.{name}", depth + 1, is_array, seen)
        # then what the module and its submodules hold as plain attributes (a cache kept as
        # self.kv = torch.zeros(...), or self._out, not registered as a buffer), not torch's
        # own tables (_module_attribute)
        named = getattr(obj, "named_modules", None)
        for prefix, module in (named() if callable(named) else [("", obj)]):
            where = f"{path}.{prefix}" if prefix else path
            for name, value in list(getattr(module, "__dict__", {}).items()):
                if _module_attribute(name):
                    yield from _walk(value, f"{where}.{name}", depth + 1, is_array, seen)
        return
    if isinstance(obj, dict):
        for index, (key, value) in enumerate(list(obj.items())):
            yield from _walk(value, f"{path}[{_key(key, index)}]", depth + 1, is_array, seen)
    elif isinstance(obj, (list, tuple, collections.deque)):
        for index, value in enumerate(obj):
            yield from _walk(value, f"{path}[{index}]", depth + 1, is_array, seen)
    else:
        if isinstance(obj, functools.partial):
            # a function kept with arguments bound (a step as functools.partial(run, weights)):
            # first the arguments, which its attributes do not hold
            for index, value in enumerate(obj.args):
                yield from _walk(value, f"{path}.args[{index}]", depth + 1, is_array, seen)
            for index, (key, value) in enumerate(list(obj.keywords.items())):
                yield from _walk(value, f"{path}.keywords[{_key(key, index)}]", depth + 1,
                                 is_array, seen)
        # a plain object's attributes, also an object that is callable (a step kept as an
        # instance with __call__, a partial) or keeps them in __slots__ (functions, methods,
        # classes and modules were left out above)
        for name, value in _attributes(obj):
            if not name.startswith("__"):
                yield from _walk(value, f"{path}.{name}", depth + 1, is_array, seen)


_SPARSE_PARTS = {"sparse_coo": ("_indices", "_values"),
                 "sparse_csr": ("crow_indices", "col_indices", "values"),
                 "sparse_csc": ("ccol_indices", "row_indices", "values"),
                 "sparse_bsr": ("crow_indices", "col_indices", "values"),
                 "sparse_bsc": ("ccol_indices", "row_indices", "values")}


def tensor_parts(obj: Any) -> list[tuple[str, Any]] | None:
    """The dense tensors a sparse or nested torch tensor is made of, each with how a path
    names it (``values()``, ``crow_indices()``; a jagged one's ``values()``, ``offsets()``
    and ``lengths()``; a strided nested one's entries, ``unbind()[i]``); None for anything
    else. torch is asked of ``sys.modules``: a process that never imported it holds none."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(obj, torch.Tensor):
        return None
    if obj.is_nested:
        if obj.layout is torch.jagged:
            found = [("values()", obj.values()), ("offsets()", obj.offsets())]
            lengths = obj.lengths()
            return found + ([("lengths()", lengths)] if lengths is not None else [])
        return [(f"unbind()[{i}]", entry) for i, entry in enumerate(obj.unbind())]
    names = _SPARSE_PARTS.get(str(obj.layout).removeprefix("torch."))
    if names is None:
        return None
    return [(f"{name}()", getattr(obj, name)()) for name in names]


def value_parts(obj: Any) -> list:
    """Where an output's elements lie, as dense tensors: a sparse tensor's values, a nested
    one's entries (views of its memory); the output itself for anything else."""
    parts = tensor_parts(obj)
    if parts is None:
        return [obj]
    if obj.is_nested:
        return list(obj.unbind())
    return [part for name, part in parts if name in ("values()", "_values()")]


def _attributes(obj: Any) -> list[tuple[str, Any]]:
    """(name, value) of an object's instance attributes: its __dict__, then its __slots__
    over the class's bases, each read through the slot's own descriptor (a property a
    subclass puts over it is not run), under the name it is stored by (``__buf`` of class S
    is ``_S__buf``, as in a __dict__); a slot never set is left out."""
    found = list(vars(obj).items()) if hasattr(obj, "__dict__") else []
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            if name.startswith("__") and not name.endswith("__"):  # private: name-mangled
                name = f"_{cls.__name__.lstrip('_')}{name}"
            descriptor = cls.__dict__.get(name)
            try:
                value = descriptor.__get__(obj, type(obj))
            except Exception:  # not set (AttributeError), or not a slot's descriptor
                continue
            found.append((name, value))
    return found


def _is_module(obj: Any) -> bool:
    return callable(getattr(obj, "named_parameters", None)) and callable(
        getattr(obj, "named_buffers", None))


def _key(key: Any, index: int) -> str:
    """How a dict key shows in a path: its repr for plain keys; for others (an optimizer's
    state is keyed by parameter tensors) the type and position, which is the same for two
    states built alike and short enough to read."""
    if isinstance(key, (str, int, float, bool)) and len(repr(key)) <= 60:
        return repr(key)
    return f"<{type(key).__name__} #{index}>"
