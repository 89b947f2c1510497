"""CUDA's node labels, parsed one at a time: the record and line forms, fields to params.

This is the reference for what a label means; templates.py reuses it once per label shape.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field

from ..model.graph_model import CHECKED_PARAMS, Node, is_count, param_problem, to_jsonable

# ------------------------------------------------------------------ CUDA's dialect
#
# What cudaGraphDebugDotPrint writes (CUDA 13, read from dumps recorded on an H200):
# * one ``subgraph cluster_N { label="graph_N" ... }`` per CUDA graph, all at the top level;
#   a child-graph node's label names its graph ("1\ngraph_21\n") — no edge leads into the
#   child's cluster;
# * basic (flags 0): line labels "K\nWORD\n(detail)\n". Kernels are octagons labelled with
#   their name; MEMSET details "(value,bytes)", MEMCPY "(DtoD,bytes)" ("UtoU": default);
# * verbose (flags 1): kernels, memsets, memcpys and batch mem ops get record labels
#   "{KERNEL | {ID | K (topoId: T) | name\<\<\<grid,block,shmem\>\>\>} | {{keys} | {values}}
#   | ...}"; EMPTY, HOST, EVENT_* and child-graph nodes keep the line form, with
#   "K (topoId: T)" first and "key: value" lines after. Edges carry [headlabel=i], the
#   position of the dependency, which the model does not need.


# Escapes of the record-label language, mapped to plain text; braces and bars that are text
# (launch dims "\{8,4,4\}") become private placeholders so structure is found by splitting.
_ESCAPES = (
    ("\\{", "\x01"),
    ("\\}", "\x02"),
    ("\\|", "\x03"),
    ("\\<", "<"),
    ("\\>", ">"),
    ("\\n", "\n"),
    ("\\l", "\n"),
    ("\\r", "\n"),
)
_RECORD_SPLIT = re.compile(r"([{}|])")
_ID_TOPO = re.compile(r"^(\d+)(?:\s*\(topoId:\s*(\d+)\))?$")
_LAUNCH = re.compile(r"^(?P<name>.*?)<<<(?P<dims>.*)>>>$", re.DOTALL)
_DIM = re.compile(r"\x01[^\x02]*\x02|[^,\x01]+")
_CHILD_GRAPH_REF = re.compile(r"^graph_\d+$")
_BASIC_DETAIL = re.compile(r"^\((.*)\)$")
_KEY_VALUE_LINE = re.compile(r"^([A-Za-z_][\w ]*?)\s*:\s*(.*)$")
_LONG_HEX = re.compile(r"^0x[0-9a-fA-F]{9,}$")
_SHORT_HEX = re.compile(r"^0x[0-9a-fA-F]{1,8}$")
_INT = re.compile(r"^-?\d+$")
_FLOAT = re.compile(r"^-?\d+\.\d*(?:e[-+]?\d+)?$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

# CUDA's word for a node type (upper case, words joined by "_") -> model kind.
_RECORD_KINDS = {
    "KERNEL": "kernel",
    "MEMCPY": "memcpy",
    "MEMSET": "memset",
    "HOST": "host",
    "EVENT_RECORD": "event_record",
    "RECORD_EVENT": "event_record",
    "EVENT_WAIT": "event_wait",
    "WAIT_EVENT": "event_wait",
    "MEM_ALLOC": "mem_alloc",
    "MEM_FREE": "mem_free",
    "EMPTY": "empty",
    "CHILD_GRAPH": "graph",
    "GRAPH": "graph",
    "CONDITIONAL": "conditional",
    "EXT_SEMAS_SIGNAL": "ext_semas_signal",
    "EXTERNAL_SEMAPHORE_SIGNAL": "ext_semas_signal",
    "EXT_SEMAS_WAIT": "ext_semas_wait",
    "EXTERNAL_SEMAPHORE_WAIT": "ext_semas_wait",
    "BATCH_MEM_OP": "batch_mem_op",
    "BATCH_MEMOP": "batch_mem_op",
}

# Memcpy directions as CUDA prints them (verbose "DtoD (DEVICE to DEVICE)", basic "DtoD").
_MEMCPY_DIRECTIONS = {
    "HtoH": "HtoH",
    "HtoD": "HtoD",
    "DtoH": "DtoH",
    "DtoD": "DtoD",
    "default": "default",
    "UtoU": "default",  # basic form of cudaMemcpyDefault (unified addressing)
}

# CUDA's field paths (snake_case, joined by "_") -> our parameter names. Pointers and
# handles are then prefixed ptr_/handle_ by _param_key.
_RENAMES = {
    "node_handle": "node",
    "func_handle": "func",
    "src_ptr_ptr": "src",
    "dst_ptr_ptr": "dst",
    "src_ptr_pitch": "src_pitch",
    "src_ptr_xsize": "src_xsize",
    "src_ptr_ysize": "src_ysize",
    "dst_ptr_pitch": "dst_pitch",
    "dst_ptr_xsize": "dst_xsize",
    "dst_ptr_ysize": "dst_ysize",
    "access_policy_window_base_ptr": "access_policy_window_base",
}
_HANDLE_KEYS = ("node", "func", "event", "graph", "stream", "exec", "handle")


def _kind_of_word(word: str) -> str | None:
    return _RECORD_KINDS.get("_".join(word.upper().replace("_", " ").split()))


def _decode_label(label: str) -> str:
    for escaped, plain in _ESCAPES:
        if escaped in label:
            label = label.replace(escaped, plain)
    return label


def _value(text: str):
    """A field's text as a value: int/float when numeric (short hex too), else the text."""
    text = text.strip().replace("\x01", "{").replace("\x02", "}").replace("\x03", "|")
    if _INT.match(text):
        return int(text)
    if _SHORT_HEX.match(text):
        return int(text, 16)  # flags and small values ("0x00000005"), not addresses
    if _FLOAT.match(text):
        return float_or_text(text)
    return text


def float_or_text(text: str):
    """A float field's value: the number, or the text as written where it is past a double's
    range (no number JSON can write). The label reader and the templates share this rule."""
    number = float(text)
    return number if math.isfinite(number) else text


@functools.lru_cache(maxsize=4096)
def _param_key(path: tuple, unstable: bool) -> str:
    """snake_case key for a CUDA field path; addresses/handles get ptr_/handle_ prefixes.

    Cached: a dump repeats the same few dozen field names on every node.
    """
    name = "_".join(_CAMEL.sub("_", part.strip()).lower() for part in path if part.strip())
    name = re.sub(r"[^a-z0-9]+", "_", name).strip("_")
    name = _RENAMES.get(name, name)
    if name == "handle" or name.endswith("_handle"):
        # a field that is a handle ("Conditional Handle"), not one whose name holds the word
        # (a MEM_ALLOC's poolProps handleTypes, a fixed setting: as a handle, diff ignored it)
        return "handle_" + name.removesuffix("_handle").strip("_")
    if unstable:
        return ("handle_" if name in _HANDLE_KEYS else "ptr_") + name
    return name


def _add_field(params: dict, path: tuple, raw: str) -> None:
    value = _value(raw)
    unstable = isinstance(value, str) and bool(_LONG_HEX.match(value))
    params[_param_key(path, unstable)] = value


@dataclass
class _Label:
    """What one node label says, before kind-specific normalisation."""

    kind: str
    name: str | None = None
    topo_id: int | None = None
    params: dict = field(default_factory=dict)


def _parse_label(label: str, shape: str) -> _Label:
    """Parse one node label (record or line form) of either dump flavour."""
    text = _decode_label(label).strip()
    if text.startswith("{"):
        return _parse_record_label(text)
    return _parse_line_label(text, shape)


def _parse_line_label(text: str, shape: str) -> _Label:
    """Line labels: the index (and topoId), the type word, then "(detail)" or "key: value"
    lines. Used by basic dumps and by verbose EMPTY/HOST/EVENT/child-graph nodes."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    topo_id = None
    if lines:
        head = _ID_TOPO.match(lines[0])
        if head:
            topo_id = int(head.group(2)) if head.group(2) else None
            lines = lines[1:]
    word = lines[0] if lines else ""
    rest = lines[1:]
    params: dict = {}
    name = None
    if shape == "octagon" and word:
        kind, name = "kernel", word  # CUDA draws kernels, and only kernels, as octagons
        launch = _LAUNCH.match(word)
        if launch:
            name = launch.group("name").strip()
            params.update(_launch_params(launch.group("dims")))
    elif _kind_of_word(word):
        kind = _kind_of_word(word)
    elif _CHILD_GRAPH_REF.match(word):
        kind = "graph"
        params["handle_child_graph"] = word  # names the cluster labelled "graph_N"
    else:
        kind = "unknown"
        if word:
            params["cuda_type"] = word
    for line in rest:
        detail = _BASIC_DETAIL.match(line)
        if detail:
            _basic_detail(kind, detail.group(1), params)
            continue
        pair = _KEY_VALUE_LINE.match(line)
        if pair:
            _add_field(params, (pair.group(1),), pair.group(2))
    return _Label(kind, name, topo_id, params)


def _basic_detail(kind: str, detail: str, params: dict) -> None:
    """The "(…)" line of basic labels: MEMSET (value,bytes), MEMCPY (direction,bytes)."""
    parts = [p.strip() for p in detail.split(",")]
    if kind == "memset" and len(parts) == 2 and all(_INT.match(p) for p in parts):
        params["value"], params["bytes"] = int(parts[0]), int(parts[1])
    elif kind == "memcpy" and len(parts) == 2 and _INT.match(parts[1]):
        params["direction"] = _MEMCPY_DIRECTIONS.get(parts[0], parts[0])
        params["bytes"] = int(parts[1])
    elif kind == "mem_alloc" and len(parts) == 1 and _INT.match(parts[0]):
        params["bytes"] = int(parts[0])
    else:
        params["detail"] = detail


def _record_tree(text: str) -> list:
    """Nested lists of the fields of a record label ("{a | {b | c}}" -> [["a", ["b", "c"]]])."""
    root: list = []
    stack = [root]
    pending: list[str] = []  # text of the field being read
    had_group = False  # the field being read is a {...} group (no text leaf to add)
    for token in _RECORD_SPLIT.split(text):
        if token == "{":
            stack.append([])
            pending, had_group = [], False
        elif token in ("|", "}"):
            leaf = "".join(pending).strip()
            if leaf or not had_group:
                stack[-1].append(leaf)
            pending, had_group = [], False
            if token == "}":
                if len(stack) == 1:
                    raise ValueError("unbalanced '}' in record label")
                group = stack.pop()
                stack[-1].append(group)
                had_group = True
        else:
            pending.append(token)
    if len(stack) != 1:
        raise ValueError("unclosed '{' in record label")
    return root


def _leaves(item) -> bool:
    return isinstance(item, list) and all(isinstance(x, str) for x in item)


def _key_paths(item, prefix: tuple) -> list[tuple]:
    """Keys of a table header: "a" -> [(a,)], [a, b] -> [(a,), (b,)], [n, [a, b]] -> [(n, a),
    (n, b)] (a named group of keys)."""
    if isinstance(item, str):
        return [prefix + (item,)]
    if len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], list):
        return _key_paths(item[1], prefix + (item[0],))
    paths = []
    for sub in item:
        paths.extend(_key_paths(sub, prefix))
    return paths


def _record_fields(item, prefix: tuple, out: _Label) -> None:
    """Walk one field of a record and collect (path -> value) pairs into ``out.params``."""
    if isinstance(item, str) or not item:
        return
    if _leaves(item) and item[0] == "ID":
        _record_header(item[1:], out)
        return
    if len(item) == 2 and _leaves(item):
        _record_value(prefix + (item[0],), item[1], out)
        return
    if len(item) >= 2 and _leaves(item[-1]):
        values = item[-1]
        head = item[:-1]
        keys = None
        # {name | {k1 | k2} | {v1 | v2}}: a named table.
        if len(head) == 2 and isinstance(head[0], str) and _leaves(head[1]):
            keys = [prefix + (head[0], k) for k in head[1]]
        # {{src | dst} | {k1 | k2 | k1 | k2} | {v...}}: one group of keys per name.
        elif len(head) == 2 and _leaves(head[0]) and _leaves(head[1]) and head[0]:
            per = len(head[1]) // len(head[0])
            if per * len(head[0]) == len(head[1]):
                keys = [prefix + (head[0][i // per], k) for i, k in enumerate(head[1])]
        if keys is None or len(keys) != len(values):
            keys = _key_paths(head, prefix)
        if len(keys) == len(values):
            for key, value in zip(keys, values):
                _record_value(key, value, out)
            return
    if len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], list):
        # {srcPos | {{x | 0} | {y | 0}}}: a named sub-record.
        for sub in item[1]:
            _record_fields(sub, prefix + (item[0],), out)
        return
    for sub in item:
        _record_fields(sub, prefix, out)


def _record_value(path: tuple, raw: str, out: _Label) -> None:
    if path == ("ID",):
        head = _ID_TOPO.match(raw.strip())
        if head:
            out.topo_id = int(head.group(2)) if head.group(2) else out.topo_id
            return
    _add_field(out.params, path, raw)


def _record_header(cells: list[str], out: _Label) -> None:
    """{ID | K (topoId: T) | name<<<grid,block,shmem>>>}: the kernel header."""
    for cell in cells:
        head = _ID_TOPO.match(cell)
        if head:
            out.topo_id = int(head.group(2)) if head.group(2) else out.topo_id
            continue
        launch = _LAUNCH.match(cell)
        if launch:
            out.name = launch.group("name").strip()
            out.params.update(_launch_params(launch.group("dims")))
        elif cell:
            out.name = cell


def _parse_record_label(text: str) -> _Label:
    tree = _record_tree(text)
    fields = tree[0] if len(tree) == 1 and isinstance(tree[0], list) else tree
    word = fields[0] if fields and isinstance(fields[0], str) else ""
    kind = _kind_of_word(word) or "unknown"
    out = _Label(kind)
    if kind == "unknown":
        out.params["cuda_type"] = " ".join(word.split())
    for item in fields[1:]:
        _record_fields(item, (), out)
    if kind != "kernel":
        out.name = None
    if kind == "conditional":
        _conditional_bodies(out.params)
    return out


def _conditional_bodies(params: dict) -> None:
    """A conditional node names its body graphs in rows like "{True|graph_12}" (IF; "False"
    for the else branch). Graph numbers differ between captures, so the references become
    handles: handle_body_<row> for each, and handle_child_graph for the first, which
    _attach_children makes the node's child."""
    bodies = [(key, value) for key, value in params.items()
              if isinstance(value, str) and _CHILD_GRAPH_REF.match(value)]
    for key, value in bodies:
        del params[key]
        params[f"handle_body_{key}"] = value
    if bodies:
        params["handle_child_graph"] = bodies[0][1]


def _dims(text: str) -> tuple[int, int, int] | None:
    """'{8,4,4}' or '8' or '{32,4}' -> a 3-tuple, missing components 1."""
    text = text.strip()
    if text.startswith("\x01") and text.endswith("\x02"):
        text = text[1:-1]
    try:
        parts = [int(p) for p in text.split(",")]
    except ValueError:
        return None
    if not 1 <= len(parts) <= 3:
        return None
    return tuple(parts + [1] * (3 - len(parts)))  # type: ignore[return-value]


def _launch_params(launch: str) -> dict:
    """'grid,block,shmem' (grid/block possibly '{x,y,z}') -> grid, block, shared_mem."""
    pieces = _DIM.findall(launch)
    params: dict = {}
    if len(pieces) >= 1 and (grid := _dims(pieces[0])):
        params["grid"] = grid
    if len(pieces) >= 2 and (block := _dims(pieces[1])):
        params["block"] = block
    if len(pieces) >= 3 and _INT.match(pieces[2].strip()):
        params["shared_mem"] = int(pieces[2])
    return params


def _normalise(kind: str, params: dict) -> None:
    """Derive the model's fixed keys (direction, bytes) from CUDA's fields."""
    for key in _COMPUTED_INTS:
        value = params.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            # CUDA writes integers here; anything else (a damaged or hand-made dump) is kept
            # as written under another name, not summed as a size or refused by from_json
            params[f"{key}_as_written"] = params.pop(key)
    if kind == "memcpy":
        raw_kind = params.pop("kind", None)
        if isinstance(raw_kind, str):
            # "DtoD (DEVICE to DEVICE)": the requested kind, then the memory types CUDA saw.
            word, _, types = raw_kind.partition("(")
            params["direction"] = _MEMCPY_DIRECTIONS.get(word.strip(), word.strip())
            if types.rstrip(")").strip():
                params["memory_types"] = types.rstrip(")").strip()
        if "bytes" not in params:
            extent = [params.get(f"extent_{d}") for d in ("width", "height", "depth")]
            # (factors of 0 or more only: two negative ones make a size that looks right)
            if all(is_count(e) for e in extent):
                _set_bytes(params, extent[0] * extent[1] * extent[2])
    elif kind == "memset":
        if "bytes" not in params:
            sizes = [params.get(k) for k in ("element_size", "width", "height")]
            if all(is_count(x) for x in sizes):
                _set_bytes(params, sizes[0] * sizes[1] * sizes[2])
    elif kind == "mem_alloc" and "bytes" not in params:
        for key in ("bytesize", "byte_size", "size", "bytes_size"):
            if is_count(params.get(key)):
                params["bytes"] = params[key]
                break
    for key in CHECKED_PARAMS:
        value = params.get(key)
        if value is not None and param_problem(key, to_jsonable(value)):
            # a value CUDA does not write here (a negative size, a block of 0 threads, a
            # demangled name that is not text: a damaged or hand-made dump), kept aside as
            # for a non-integer above, so that the model written to JSON reads back; sizes
            # are computed above only from factors of 0 or more, so what is kept aside was
            # written so
            params[f"{key}_as_written"] = params.pop(key)


# Parameters the model computes with as integers (GraphModel's JSON checks them so too).
_COMPUTED_INTS = ("bytes", "shared_mem")


def _node_from_label(node_id: str, label: str, shape: str) -> Node:
    """Parse one label directly (the reference path; see _LabelTemplates)."""
    parsed = _parse_label(label, shape)
    _normalise(parsed.kind, parsed.params)
    return Node(node_id, parsed.kind, parsed.name, parsed.params, topo_id=parsed.topo_id)


_BYTES_LIMIT = 1 << 64  # no copy or memset CUDA writes is this large


def _set_bytes(params: dict, product: int) -> None:
    """The node's size in bytes, the product of its dimensions, where it can be one: a
    garbled dump's dimensions of hundreds of digits each multiply to more than any memory
    (and to a number Python will not write in decimal), and such a node gets no size."""
    if product < _BYTES_LIMIT:
        params["bytes"] = product
