"""Audits of captured kernel arguments: which host values capture froze.

A graph replays every kernel with the arguments its launch had while it was captured. Any
value the host worked out for that launch (a step counter, a position in a cache, a scale,
which of two buffers to read) is fixed from then on, although eager steps would pass a new
one each time. ``accelgraph audit`` captures two consecutive steps into one graph (as
``replay --unroll 2`` does), reads every kernel node's argument bytes back from the graph
(``cuda/audit.py``) and compares the first step's kernels with the second's, argument by
argument. What differs is a value a one-step graph freezes: replay passes the first step's
bytes every time. ``audit --steps N`` captures N steps and compares each later step with the
first (a value that changes every other step shows at the third); each unit is reported at
the first later step where it reads as frozen, else the first where it differs.

Everything here is computed from the *raw audit* that the GPU side writes, so a recorded
audit is read, shown and checked anywhere (``accelgraph audit FILE.json``).

Copy and memset nodes are compared too, as three 8-byte arguments each (source,
destination and size; destination, value and size): an address a step picks is frozen in a
copy as in a kernel.

Each argument that differs is cut into units: an argument of 8 bytes or less is one unit; a
larger one (a struct, such as CuPy's array arguments) is cut at the 8-byte boundaries of the
parameter space, where any pointer inside it lies. A unit that differs is read as:

- **value**: a whole argument of 2, 4 or 8 bytes that is not an address in both steps,
  where it is declared a number or a pointer (every small argument of an ``extern "C"``
  kernel, which keeps no types; a C++ kernel's types come from its mangled name): a number
  the host passed (shown as an integer or a float, whichever reads as the likelier; the
  raw bytes are in the JSON; the types are read where the audit is recorded and kept in
  it, so a saved audit reads the same with a demangler and without one); or a size or
  shape word inside an array argument of CuPy's own ``cupy_*`` kernels, whose structs are
  set in full;
- **offset**: an address into the same allocation of the state at another offset in each
  step (a row or position the host picked);
- **buffer**: an address into one state allocation in the first step and another (or
  device memory outside the state) in the second: the step picks or rebinds its buffers;
- **launch**: a kernel's grid, block or shared-memory size that differs;
- **elsewhere**: addresses in both steps into device memory the state does not hold, as a
  block the step allocates is (a different one each step; the graph keeps its own, which
  needs nothing). Not counted as frozen: the audit cannot tell such a block from a buffer
  kept outside the state;
- **unsure**: bytes inside a struct argument, a one-byte argument, or a C++ kernel's
  argument of a struct type, that are not addresses (an 8-byte unit of which one 4-byte
  half alone differs is shown as that half where it reads as a plain number and the whole
  as a float no host would pick: a functor's float beside a member of its own; beside zero
  bytes the same float reads as a plain double, and beside padding that differs too the
  unit stays whole: the bytes are in the JSON). C++
  leaves bytes a launch does not use unset (unused slots of fixed-size arrays, padding,
  the byte of an empty functor): CuPy's indexer and PyTorch's offset calculators and
  functors carry such bytes, which differ from launch to launch and are never read. Not
  counted as frozen until the effect test says otherwise:
- **read** (frozen): unsure bytes the effect test found read: the later steps' kernels, run
  with the first step's bytes there (as a one-step graph replays them), compute other
  outputs, bit for bit;
- **no_effect**: unsure bytes the effect test tried the same way, with outputs unchanged:
  bytes the kernel does not read, or a value that made no difference on this state.

The effect test (``run/audit.py``, recorded as each graph's ``effects``; the search is
:func:`effect_search`) replays the graph from a fresh state's bytes with every later
step's kernels given the first step's bytes in the units tried (the rest of their bytes
stay their own), after the graphs captured before it, and compares the outputs bit for bit
after it and after the graphs that follow it: every unit at once, then,
only where that changed them, each node's units, then each unit of a node that changed
them. Units that change the outputs only together are all read. What it cannot tell: a
value whose effect the state hides (a scale applied to zeros), and a graph whose replays
differ run to run (not tested, and said).

What it cannot see: a value that changes less often than the steps captured (every tenth
step, on a condition); what a kernel reads through a pointer (contents are
read at replay, which is right); work whose structure differs between the steps (reported,
not compared); arguments of nodes inside child graphs.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import AccelgraphError
from .demangle import demangle_many, is_mangled, parameter_types
from .profile import (
    Origin,
    _checked_origins,
    _count,
    _is_int,
    _shown,
    check_unique_names,
    document_head,
    pick_origin,
)

FORMAT = "accelgraph-audit"
VERSION = 2  # what a recording writes: each graph holds its C++ kernels' parameter types
READS = (1, 2)  # version 1 has no types: they are read from the kernels' names where shown
STEPS = 2  # steps captured into each graph by default: each later one compared with the first
MAX_STEPS = 64  # audit --steps: at most

_WORD = 8
_HEX = re.compile(r"[0-9a-fA-F]*")
_ADDRESS_MAX = 1 << 64
_MAX_ARGUMENT_BYTES = 32_764  # CUDA's parameter space
FROZEN_KINDS = ("value", "offset", "buffer", "launch", "read")
KINDS = (*FROZEN_KINDS, "elsewhere", "unsure", "no_effect")
UNJUDGED_KINDS = ("elsewhere", "unsure")
_COMPARED = ("kernel", "memcpy", "memset")  # the node kinds whose arguments are read
_NESTED = ("graph", "conditional")  # nodes whose own nodes an audit does not read
_CUPY_PREFIX = "cupy_"  # CuPy's generated kernels (elementwise and reductions)


class AuditLoadError(AccelgraphError, ValueError):
    """An audit document could not be read (the message says where and why)."""


@dataclass(frozen=True)
class Place:
    """Where an address points: into a state allocation (its paths, and how far in), into
    other device memory, or nowhere known."""

    kind: str  # "state", "device" or "none"
    paths: tuple[str, ...] = ()
    offset: int = 0

    def shown(self) -> str:
        if self.kind == "state":
            where = " = ".join(self.paths)
            return f"{where} + {self.offset:,} B" if self.offset else where
        if self.kind == "device":
            return "device memory outside the state"
        return "no known allocation"


@dataclass(frozen=True)
class Difference:
    """One unit of one kernel argument that differs between the first step and a later one."""

    node: str  # the first step's node id
    kernel: str  # the kernel's name, or the node's kind (memcpy, memset)
    argument: int  # the argument's index
    label: str  # what the argument is called, where known (a copy's "dst"), else its index
    at: int  # the unit's first byte within the argument
    size: int  # the unit's bytes
    kind: str  # "value", "offset", "buffer" or "elsewhere"
    first: str  # the first step's unit, as shown
    second: str  # the later step's (see ``step``)
    first_hex: str
    second_hex: str
    origin: Origin | None = None
    # the later step (1 is the first) whose unit "second" is: the first where it differs,
    # or the first where it reads as frozen
    step: int = 2
    # the byte of the argument where "first" and "second" start: ``at``, unless they read
    # only the 4-byte half of a struct's 8-byte unit that differs (see _half_reading)
    read_at: int | None = None

    @property
    def shown_at(self) -> int:
        return self.at if self.read_at is None else self.read_at

    @property
    def shown_size(self) -> int:
        """The bytes "first" and "second" read: 4 where they read a half, else ``size``."""
        return self.size if self.read_at is None else 4

    @property
    def frozen(self) -> bool:
        return self.kind in FROZEN_KINDS

    def what(self) -> str:
        """What replay does with it, in a few words."""
        if self.kind == "value":
            return "frozen value: replay passes the first step's every time"
        if self.kind == "offset":
            return "frozen offset: replay uses the first step's position every time"
        if self.kind == "buffer":
            return "frozen buffer: replay uses the first step's buffer every time"
        if self.kind == "launch":
            return "frozen launch shape: replay launches the first step's grid every time"
        if self.kind == "read":
            return ("frozen bytes inside a struct argument: the later steps run with the "
                    "first step's bytes there compute other outputs")
        if self.kind == "no_effect":
            return ("byte range(s) inside struct arguments that differ with no effect: the "
                    "later steps run with the first step's there compute the same outputs "
                    "(bytes a launch leaves unset, or a value that made no difference here)")
        if self.kind == "elsewhere":
            return ("address(es) into device memory outside the state, another each step "
                    "(a block the step allocates, which the graph keeps as its own, needs "
                    "nothing)")
        return ("byte range(s) inside struct or one-byte arguments that differ and are not "
                "addresses: not judged (bytes a launch leaves unset, such as unused array "
                "slots, padding and empty functors, differ this way too)")

    def to_json(self) -> dict:
        return {
            "node": self.node, "kernel": self.kernel, "argument": self.argument,
            "label": self.label, "at": self.at, "size": self.size, "kind": self.kind, "frozen": self.frozen,
            "first": self.first, "second": self.second, "read_at": self.shown_at,
            "read_size": self.shown_size, "step": self.step,
            "first_hex": self.first_hex, "second_hex": self.second_hex,
            "origin": None if self.origin is None else {
                "file": self.origin.file, "line": self.origin.line,
                "function": self.origin.function, "code": self.origin.code,
                "via": self.origin.via},
        }


@dataclass
class GraphAudit:
    name: str
    nodes: int  # nodes a step
    kernels: int  # kernel nodes a step
    copies: int  # copy and memset nodes a step
    arguments: int  # their arguments a step, all compared
    nested: int = 0  # child-graph and conditional nodes a step, whose nodes are not read
    captured: int = 0  # nodes of all steps together
    steps: int = STEPS  # steps captured, each later one compared with the first
    # C++ kernels whose parameter types could not be read (no demangler, a name it cannot
    # take apart): their small arguments are not judged
    untyped: list[str] = field(default_factory=list)
    types_recorded: bool = True  # the types are the recording's (version 2), not read here
    differences: list[Difference] = field(default_factory=list)
    mismatch: str | None = None  # why the steps could not be compared, node by node
    effects_note: str | None = None  # why the effect test tried nothing, or what it found
    effects_skipped: bool = False  # it had units to try, and tried none (the note says why)

    @property
    def frozen(self) -> list[Difference]:
        return [d for d in self.differences if d.frozen]

    def to_json(self) -> dict:
        return {
            "name": self.name, "nodes": self.nodes, "kernels": self.kernels,
            "copies": self.copies, "arguments": self.arguments, "nested": self.nested,
            "captured": self.captured, "steps": self.steps, "untyped": self.untyped,
            "mismatch": self.mismatch, "effects_note": self.effects_note,
            "effects_skipped": self.effects_skipped,
            "frozen": len(self.frozen),
            "differences": [d.to_json() for d in self.differences],
        }


@dataclass
class Audit:
    scenario: str
    params: dict
    device: str
    graphs: list[GraphAudit]
    origins_off: str | None = None  # why no node has a line
    origins_failed: str | None = None

    @property
    def frozen(self) -> int:
        return sum(len(g.frozen) for g in self.graphs)

    @property
    def mismatched(self) -> list[GraphAudit]:
        return [g for g in self.graphs if g.mismatch is not None]

    def to_json(self) -> dict:
        return {
            "scenario": self.scenario, "params": self.params, "device": self.device,
            "frozen": self.frozen, "origins_off": self.origins_off,
            "origins_failed": self.origins_failed,
            "graphs": [g.to_json() for g in self.graphs],
        }


# -- reading a value -----------------------------------------------------------------------

def shown_value(raw: bytes) -> str:
    """A unit's bytes as a number: an integer where that reads plausibly (small), a float
    where the bytes read as an ordinary one, else hex. The type is not known (kernels
    declared ``extern "C"`` keep none): the raw bytes stay in the JSON."""
    size = len(raw)
    if size in (1, 2):
        return str(int.from_bytes(raw, "little", signed=True))
    if size == 4:
        number = int.from_bytes(raw, "little", signed=True)
        real = struct.unpack("<f", raw)[0]
        small, integer_limit = 1e-30, 1 << 24
    elif size == 8:
        number = int.from_bytes(raw, "little", signed=True)
        real = struct.unpack("<d", raw)[0]
        small, integer_limit = 1e-300, 1 << 40
    else:
        return "0x" + raw[::-1].hex()
    if abs(number) < integer_limit:
        return str(number)
    if math.isfinite(real) and small < abs(real) < 1e30:
        text = f"{real:.7g}" if size == 4 else f"{real:.15g}"
        return text if any(c in text for c in ".e") else text + ".0"  # 2.0, never "2"
    return "0x" + raw[::-1].hex()


class _Places:
    """Addresses -> Place, from the state's allocations and the other device allocations
    the recording found."""

    def __init__(self, state: list[tuple[int, int, tuple[str, ...]]],
                 allocations: list[tuple[int, int]]) -> None:
        self.state = sorted(state)
        self.allocations = sorted(allocations)

    def of(self, address: int) -> Place:
        for start, size, paths in self.state:
            if start <= address < start + size:
                return Place("state", paths, address - start)
        for start, size in self.allocations:
            if start <= address < start + size:
                return Place("device")
        return Place("none")


def _units(offset: int, size: int) -> list[tuple[int, int]]:
    """(first byte, bytes) of the units an argument at ``offset`` of ``size`` bytes is cut
    into (see the module's docstring)."""
    if size <= _WORD:
        return [(0, size)]
    cuts = [0] + [k for k in range(1, size) if (offset + k) % _WORD == 0] + [size]
    return [(a, b - a) for a, b in zip(cuts, cuts[1:])]


def _judged(node: dict, index: int, at: int, size: int, whole: int,
            types: dict[str, list[str] | None]) -> bool:
    """Whether a unit that is no address is a value the host set (judged), rather than bytes
    a launch may leave unset (see the module's docstring). ``types``: the parameter types
    of each C++ kernel, from its mangled name."""
    name = node.get("name") or ""
    if size == whole:
        if whole not in (2, 4, 8):
            return False
        if not is_mangled(name):  # extern "C" (accelgraph's kernels, CuPy's RawKernels)
            return True
        # a C++ kernel's small struct (a functor: one byte of its own and padding beside a
        # scalar) is judged only where its parameter type is a number or a pointer
        found = types.get(name)
        return found is not None and index < len(found) and _is_scalar(found[index])
    if not name.startswith(_CUPY_PREFIX):
        return False
    # CuPy's kernels take arrays as structs every word of which is set (address, size,
    # shape, strides: 16 + 16 x ndim bytes); an elementwise kernel's last argument, its
    # indexer (size, shape, then the index it works on: 8 + 16 x ndim bytes), leaves its
    # index unset. Any other layout is not judged.
    last = index == len(node["args"]) - 1
    if whole % 16 == 0 and not last:
        return True
    if whole % 16 == 8 and whole >= 24 and last:
        return at < 8 + (whole - 8) // 2
    return False


_SCALARS = frozenset({
    "bool", "char", "signed char", "unsigned char", "short", "unsigned short", "int",
    "unsigned int", "long", "unsigned long", "long long", "unsigned long long", "float",
    "double", "wchar_t", "char16_t", "char32_t", "__int128", "unsigned __int128"})
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict)\b")


def _is_scalar(parameter: str) -> bool:
    """Whether a C++ parameter type is a number or a pointer (every byte set by a launch)."""
    bare = " ".join(_QUALIFIERS.sub(" ", parameter).split())
    return bare in _SCALARS or bare.endswith("*")


def _recorded_types(raw: dict, first: list, where: str) -> dict[str, list[str] | None]:
    """A graph's "types" as a recording wrote them (see :func:`recorded_types`), checked
    to name every C++ kernel of the first step (``first``)."""
    types = raw["types"]
    if not isinstance(types, dict) or not all(
            isinstance(name, str) and (found is None or (
                isinstance(found, list) and all(isinstance(t, str) for t in found)))
            for name, found in types.items()):
        raise AuditLoadError(f"{where}: 'types' must map each C++ kernel's name to its "
                             "parameter types, or null")
    missing = sorted({n["name"] for n in first if is_mangled(n.get("name"))} - types.keys())
    if missing:
        raise AuditLoadError(f"{where}: 'types' lacks the kernel {missing[0]!r}")
    return types


def _parameter_types(nodes: list) -> dict[str, list[str] | None]:
    """Each C++ kernel name's parameter types (one demangler run for the graph)."""
    mangled = {n["name"] for n in nodes if is_mangled(n.get("name"))}
    readable = demangle_many(mangled)
    return {name: parameter_types(readable.get(name, name)) for name in mangled}


def _difference(node: dict, index: int, at: int, whole: int, first: bytes, second: bytes,
                places: _Places, origin: Origin | None,
                types: dict[str, list[str] | None], step: int) -> Difference:
    """One unit that differs, read (see the module's docstring); ``whole``: the argument's
    size; ``second``: the unit at ``step``, a later step where it differs."""
    kind = "value" if _judged(node, index, at, len(first), whole, types) else "unsure"
    first_shown, second_shown = shown_value(first), shown_value(second)
    if len(first) == _WORD:
        a = places.of(int.from_bytes(first, "little"))
        b = places.of(int.from_bytes(second, "little"))
        address = None
        if a.kind == "state" and b.kind == "state":
            address = "offset" if a.paths == b.paths else "buffer"
        elif "state" in (a.kind, b.kind) and "none" not in (a.kind, b.kind):
            address = "buffer"
        elif a.kind == "device" and b.kind == "device":
            address = "elsewhere"
        if address is not None:
            kind, first_shown, second_shown = address, a.shown(), b.shown()
    read_at = None
    if kind == "unsure":
        half = _half_reading(first, second, first_shown, second_shown)
        if half is not None:
            offset, first_shown, second_shown = half
            read_at = at + offset
    labels = node.get("labels") or []
    return Difference(
        node=node["id"], kernel=_kernel_name(node), argument=index,
        label=labels[index] if index < len(labels) else str(index), at=at, size=len(first),
        kind=kind, first=first_shown, second=second_shown, first_hex=first.hex(),
        second_hex=second.hex(), origin=origin, step=step, read_at=read_at)


def _half_reading(first: bytes, second: bytes, first_shown: str,
                  second_shown: str) -> tuple[int, str, str] | None:
    """(offset, first, second) reading only the 4-byte half of an 8-byte struct unit that
    differs, where the whole reads as a float in one step and, in one step, as no number a
    host would pick (nor as a float32 widened to a double), and the half as a plain number
    in both steps; else None. A struct keeps a float or an int beside other members
    (PyTorch's functors put a scalar at byte 4, after a one-byte member and padding): read
    with its neighbour as one 8-byte number it shows as 0.00781250002921752 where the float
    is 1.0. Left whole: an integer (an int64, a size), hex (an address's shape), a double
    that reads plainly (0.00025, 1.0), and halves that read alike or not plainly either (a
    double 1/3 whose high half alone changed)."""
    if len(first) != _WORD or not (_is_float_text(first_shown) or _is_float_text(second_shown)):
        return None
    if _plain(first_shown) and _plain(second_shown):
        return None
    if _widened_float32(first) and _widened_float32(second):
        return None  # a double made from a float32 (a float32 tensor's .item()): 0.001f
    differ = [h for h in (0, 4) if first[h:h + 4] != second[h:h + 4]]
    if len(differ) != 1:
        return None
    h = differ[0]
    half = shown_value(first[h:h + 4]), shown_value(second[h:h + 4])
    if half[0] == half[1] or not (_plain(half[0]) and _plain(half[1])):
        return None
    return (h, *half)


def _widened_float32(raw: bytes) -> bool:
    """Whether 8 bytes are a double that a plain float32 value was widened to (0.001f reads
    as 0.00100000004749745 as a double, plainly as a float32): halving or doubling it
    changes only its high half, which by itself reads as another float (0.814)."""
    real = struct.unpack("<d", raw)[0]
    if not (math.isfinite(real) and abs(real) < 3.4e38):
        return False
    narrow = struct.pack("<f", real)
    return struct.unpack("<f", narrow)[0] == real and _plain(shown_value(narrow))


def _is_float_text(text: str) -> bool:
    return not text.startswith("0x") and any(c in text for c in ".e")


_PLAIN_DIGITS = 6  # a float32 a host picks (1.0, 0.125, 1e-05) needs no more


def _plain(text: str) -> bool:
    """Whether a number as :func:`shown_value` shows it reads as one a host would pick: an
    integer under 2**24, or a float of at most 6 significant digits; hex never."""
    if text.startswith("0x"):
        return False
    if not _is_float_text(text):
        return abs(int(text)) < 1 << 24
    mantissa = text.lstrip("-").split("e")[0].replace(".", "").lstrip("0").rstrip("0")
    return len(mantissa) <= _PLAIN_DIGITS


def _kernel_name(node: dict) -> str:
    """The kernel's name as the driver gives it (mangled where it is C++), else the node's
    kind."""
    return node.get("name") or node["kind"]


# -- the document --------------------------------------------------------------------------

def graph_audit(raw: dict, places_state: list, scenario: str = "",
                steps: int = STEPS, version: int = VERSION) -> GraphAudit:
    """The audit of one graph from its raw document, of ``steps`` steps, as the audit's
    format ``version`` has it (version 2 keeps the C++ kernels' types, 1 does not)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise AuditLoadError("each graph must be an object with a 'name'")
    where = f"graph {raw['name']!r}"
    nodes = raw.get("nodes")
    if not isinstance(nodes, list):
        raise AuditLoadError(f"{where}: 'nodes' must be a list")
    for position, node in enumerate(nodes):
        _check_node(node, f"{where}: node {position}")
    allocations = raw.get("allocations", [])
    if not isinstance(allocations, list) or not all(
        isinstance(a, list) and len(a) == 2 and all(_is_int(v) and 0 <= v < _ADDRESS_MAX for v in a)
        for a in allocations
    ):
        raise AuditLoadError(f"{where}: 'allocations' must be [start, size] pairs of addresses")
    try:
        origins, codes = _checked_origins(raw, where)
    except AccelgraphError as exc:
        raise AuditLoadError(str(exc)) from None
    places = _Places(places_state, [tuple(a) for a in allocations])
    per = len(nodes) // steps
    first, later = nodes[:per], [nodes[k * per:(k + 1) * per] for k in range(1, steps)]
    compared = [n for n in first if "args" in n]
    audit = GraphAudit(name=raw["name"], nodes=per,
                       kernels=sum(n["kind"] == "kernel" for n in first),
                       copies=sum(n["kind"] in ("memcpy", "memset") for n in first),
                       arguments=sum(len(n["args"]) for n in compared),
                       nested=sum(n["kind"] in _NESTED for n in first), captured=len(nodes),
                       steps=steps)
    audit.mismatch = _mismatch(first, later, len(nodes), steps)
    if audit.mismatch is not None:
        return audit
    if ("types" in raw) != (version >= 2):
        raise AuditLoadError(f"{where}: 'types' " + ("missing: version 2 records each C++ "
                             "kernel's parameter types" if version >= 2 else
                             "in a version 1 audit, which has none"))
    types = _recorded_types(raw, first, where) if version >= 2 else _parameter_types(first)
    audit.types_recorded = version >= 2
    audit.untyped = sorted(name for name, found in types.items() if found is None)
    for position, a in enumerate(first):
        if "args" not in a:
            continue
        twins = [step[position] for step in later]  # the node in each later step
        stack = (origins.get(a["id"]) or {}).get("stack") or []
        origin = pick_origin(stack, scenario, codes)
        for key in ("grid", "block", "shared_mem"):
            step, b = next(((k, b) for k, b in enumerate(twins, 2) if a.get(key) != b.get(key)),
                           (0, None))
            if step:
                audit.differences.append(Difference(
                    node=a["id"], kernel=_kernel_name(a), argument=-1, label=key, at=0, size=0,
                    kind="launch", first=_shape(a.get(key)), second=_shape(b.get(key)),
                    first_hex="", second_hex="", origin=origin, step=step))
        for index, arg_a in enumerate(a["args"]):
            others = [b["args"][index]["hex"] for b in twins]
            if all(other == arg_a["hex"] for other in others):
                continue
            raw_a = bytes.fromhex(arg_a["hex"])
            raws = [bytes.fromhex(other) for other in others]
            for at, size in _units(arg_a["offset"], arg_a["size"]):
                unit_a = raw_a[at:at + size]
                # each later step that differs read on its own (an address outside the state
                # at step 2 may be a state buffer at step 3): the first frozen reading shown,
                # else the first
                found = [_difference(a, index, at, arg_a["size"], unit_a, r[at:at + size],
                                     places, origin, types, k)
                         for k, r in enumerate(raws, 2) if r[at:at + size] != unit_a]
                if found:
                    audit.differences.append(next((d for d in found if d.frozen), found[0]))
    _apply_effects(audit, raw.get("effects"), first, where)
    return audit


def recorded_types(nodes: list, steps: int = STEPS) -> dict[str, list[str] | None]:
    """What a recording keeps of the C++ kernels of the first of ``steps`` steps
    (``nodes``: all of them): each mangled name's parameter types, or None where the
    demangler here cannot read them. A saved audit is judged by these wherever it is read,
    with a demangler or without one."""
    return _parameter_types(nodes[:len(nodes) // steps])


def effect_candidates(raw: dict, state: list[dict],
                      steps: int = STEPS) -> dict[int, list[tuple[int, int, int]]]:
    """For the effect test: each first-step kernel node (by position) with unsure units
    (units that differ, are not addresses, and are no value by their argument's type), each
    unit as (argument, first byte, bytes). ``raw``: a raw graph without effects, with its
    "types" where the recording has them (else judged by the demangler here); ``state``:
    the raw audit's state allocations; ``steps``: the steps captured."""
    audit = graph_audit({**raw, "effects": None}, _regions(state), steps=steps,
                        version=VERSION if "types" in raw else 1)
    position = {n["id"]: p for p, n in enumerate(raw["nodes"])}
    found: dict[int, list[tuple[int, int, int]]] = {}
    for d in audit.differences:
        if d.kind == "unsure" and raw["nodes"][position[d.node]]["kind"] == "kernel":
            found.setdefault(position[d.node], []).append((d.argument, d.at, d.size))
    return found


def effect_search(candidates: dict[int, list[tuple]], differs) -> tuple[list, str | None]:
    """Which candidate units (``{position: [unit, ...]}``) change the outputs, as (position,
    unit) pairs, and a note or None. ``differs(chosen)`` replays with the ``chosen`` units
    given the first step's bytes and says whether the outputs changed. All at once first
    (one replay where nothing is read); where they change, each node's units; where a
    node's change, each of its units alone. Units that change the outputs only together
    are all returned, and the note says so."""
    if not differs(candidates):
        return [], None
    changed: list = []
    note = None
    together = "some units change the outputs only together, and are all shown as read"
    for p, units in sorted(candidates.items()):
        if not differs({p: units}):
            continue
        alone = units if len(units) == 1 else [u for u in units if differs({p: [u]})]
        if not alone:
            alone, note = units, together
        changed += [(p, u) for u in alone]
    if not changed:
        changed, note = [(p, u) for p, units in sorted(candidates.items()) for u in units], together
    return changed, note


def _apply_effects(audit: GraphAudit, effects: Any, first: list, where: str) -> None:
    """The effect test's findings (``{"tested": [[node, argument, at], ...], "changed": [...],
    "note": str or null}``) turn the unsure units it tried into read or no_effect (a value
    judged by its type stays a value, whatever its effect)."""
    if effects is None:
        return
    ids = {n["id"] for n in first}

    def units(key: str) -> set:
        value = effects.get(key)
        if not isinstance(value, list) or not all(
                isinstance(u, list) and len(u) == 3 and isinstance(u[0], str) and u[0] in ids
                and _is_int(u[1]) and _is_int(u[2]) for u in value):
            raise AuditLoadError(f"{where}: 'effects' {key!r} must list [node, argument, "
                                 "byte] of the first step's nodes")
        return {tuple(u) for u in value}

    if not isinstance(effects, dict):
        raise AuditLoadError(f"{where}: 'effects' must be an object")
    tested, changed = units("tested"), units("changed")
    note = effects.get("note")
    if not changed <= tested or not (note is None or isinstance(note, str)):
        raise AuditLoadError(f"{where}: 'effects' must list changed units among those tested, "
                             "with a note or null")
    audit.effects_note = note
    audit.effects_skipped = not tested
    for i, d in enumerate(audit.differences):
        unit = (d.node, d.argument, d.at)
        if d.kind == "unsure" and unit in tested:
            audit.differences[i] = replace(d, kind="read" if unit in changed else "no_effect")


def _shape(value: Any) -> str:
    """A grid, block or shared-memory size as shown: 64x1x1, 4096."""
    if isinstance(value, list):
        return "x".join(str(v) for v in value)
    return "–" if value is None else str(value)


def _check_node(node: Any, where: str) -> None:
    if not isinstance(node, dict) or not isinstance(node.get("id"), str) \
            or not isinstance(node.get("kind"), str):
        raise AuditLoadError(f"{where}: must be an object with an 'id' and a 'kind'")
    if node["kind"] in _COMPARED and "args" not in node:
        raise AuditLoadError(f"{where}: a {node['kind']} node's 'args' must be a list")
    if "args" not in node:
        return
    if node["kind"] not in _COMPARED:
        raise AuditLoadError(f"{where}: a {node['kind']} node has no arguments an audit reads")
    name = node.get("name")
    if name is not None and not isinstance(name, str):
        raise AuditLoadError(f"{where}: 'name' must be the kernel's name or null")
    args = node.get("args")
    if not isinstance(args, list):
        raise AuditLoadError(f"{where}: 'args' must be a list")
    for key, count in (("grid", 3), ("block", 3), ("shared_mem", 0)):
        value = node.get(key)
        ok = value is None or (_is_int(value) and value >= 0 if count == 0 else
                               isinstance(value, list) and len(value) == count and
                               all(_is_int(v) and v >= 0 for v in value))
        if not ok:
            raise AuditLoadError(f"{where}: {key!r} must be "
                                 + ("a byte count" if count == 0 else "three counts"))
    labels = node.get("labels", [])
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels) or \
            len(labels) not in (0, len(args)):
        raise AuditLoadError(f"{where}: 'labels' must name each argument")
    for index, arg in enumerate(args):
        ok = isinstance(arg, dict) and _is_int(arg.get("offset")) and _is_int(arg.get("size")) \
            and isinstance(arg.get("hex"), str)
        if ok:
            ok = 0 <= arg["offset"] and 0 < arg["size"] and \
                arg["offset"] + arg["size"] <= _MAX_ARGUMENT_BYTES and \
                len(arg["hex"]) == 2 * arg["size"]
        if ok:
            ok = _HEX.fullmatch(arg["hex"]) is not None
        if not ok:
            raise AuditLoadError(
                f"{where}: argument {index} must be {{offset, size, hex}}: offset and size in "
                f"bytes within CUDA's {_MAX_ARGUMENT_BYTES:,}-byte parameter space, hex of "
                f"that many bytes, not {_shown(arg)}")


def _mismatch(first: list, later: list[list], total: int, steps: int) -> str | None:
    """Why the steps' nodes cannot be compared one by one with the first step's, or None."""
    if total % steps:
        return (f"{total} node(s) in all, which {steps} alike steps cannot make: a later step "
                "made a different graph from the first (its structure depends on a host "
                "value, such as a step counter)")
    for step, nodes in enumerate(later, 2):
        for position, (a, b) in enumerate(zip(first, nodes)):
            same = a["kind"] == b["kind"] and a.get("name") == b.get("name") and \
                [(x["offset"], x["size"]) for x in a.get("args", [])] == \
                [(y["offset"], y["size"]) for y in b.get("args", [])]
            if not same:
                return (f"node {position} of the first step is {_node_label(a)}, of step "
                        f"{step} {_node_label(b)}: a later step made a different graph from "
                        "the first (its structure depends on a host value)")
    return None


def _regions(state: list[dict]) -> list[tuple[int, int, tuple[str, ...]]]:
    """A raw audit's state allocations as graph_audit places addresses against them:
    (start, size, paths)."""
    return [(e["start"], e["size"], tuple(e["paths"])) for e in state]


def _node_label(node: dict) -> str:
    return _kernel_name(node) if node["kind"] == "kernel" else f"a {node['kind']} node"


def load_audit(document: Any, where: str = "<audit>") -> Audit:
    """An Audit from a raw audit document (as ``audit --out`` writes it)."""
    graphs, scenario, params = document_head(document, where, (FORMAT, READS, "audit"),
                                             AuditLoadError)
    try:
        steps = _count(document, "steps", where)
    except AccelgraphError as exc:
        raise AuditLoadError(str(exc)) from None
    if document["version"] == 1 and steps != STEPS:  # version 1 compared two, always
        raise AuditLoadError(f"{where}: a version 1 audit compares {STEPS} steps, not {steps}")
    if not STEPS <= steps <= MAX_STEPS:
        raise AuditLoadError(f"{where}: an audit compares {STEPS} to {MAX_STEPS} steps, not "
                             f"{steps}")
    state = document.get("state", [])
    if not isinstance(state, list):
        raise AuditLoadError(f"{where}: 'state' must be a list of allocations")
    for entry in state:
        ok = isinstance(entry, dict) and _is_int(entry.get("start")) and \
            _is_int(entry.get("size")) and isinstance(entry.get("paths"), list) and \
            entry["paths"] and all(isinstance(p, str) and p for p in entry["paths"])
        if not ok or not (0 <= entry["start"] < _ADDRESS_MAX and 0 < entry["size"]):
            raise AuditLoadError(f"{where}: each state allocation must be {{paths, start, "
                                 f"size}}, not {_shown(entry)}")
    regions = _regions(state)
    try:
        audits = [graph_audit(g, regions, scenario, steps, document["version"]) for g in graphs]
    except AuditLoadError as exc:
        raise AuditLoadError(f"{where}: {exc}") from None
    check_unique_names([g.name for g in audits], where, AuditLoadError)
    off, failed = document.get("origins_off"), document.get("origins_failed")
    return Audit(scenario=scenario, params=params, device=str(document.get("device") or ""),
                 graphs=audits, origins_off=None if off is None else str(off),
                 origins_failed=None if failed is None else str(failed))
