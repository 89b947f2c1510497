"""Label templates: each label shape parsed once (labels.py), then filled in per node."""

from __future__ import annotations

import operator
import re
import string

from ..model.graph_model import Node, is_stable_param
from .labels import _FLOAT, _node_from_label, _normalise, _parse_label, float_or_text

# Every run of digits (and every hex literal) in a label; what is left is its *template*.
_NUMBER_TOKEN = re.compile(r"(0x[0-9A-Fa-f]+|-?\d+(?:\.\d+)?)")
_SENTINEL = re.compile(r"0x5E471E[0-9A-F]{10}|0x5E[0-9A-F]{6}|-?7350\d{7}(?:\.25)?")


def _sentinel(index: int, token: str) -> str:
    """A unique stand-in for the index-th number of a label, of the same lexical class."""
    if token.startswith("0x"):
        return f"0x5E471E{index:010X}" if len(token) > 10 else f"0x5E{index:06X}"
    sign = "-" if token.startswith("-") else ""
    return f"{sign}7350{index:07d}" + (".25" if "." in token else "")


def _token_value(token: str):
    """What _value makes of a label consisting of this one number token."""
    if token.startswith("0x"):
        return token if len(token) > 10 else int(token, 16)
    if "." not in token:
        return int(token)
    return float_or_text(token)


_CONST, _TOKEN, _FORMAT, _TUPLE = range(4)


def _field_value(how: int, arg, tokens) -> object:
    """One parameter of a label from its numbers, as a recipe field says."""
    if how == _TOKEN:
        return _token_value(tokens[arg])
    if how == _CONST:
        return arg
    if how == _FORMAT:
        return arg.format(*tokens)
    return tuple(int(tokens[i]) if isinstance(i, int) else i[0] for i in arg)


def _format_fields(text: str) -> list[int]:
    """The token indices a recipe's format string ("cupy_add__float{2}") uses."""
    return [int(name) for _, name, _, _ in string.Formatter().parse(text) if name]


class _Recipe:
    """How the labels of one template become a node: kind, name, topoId and fields.

    ``fields`` holds (key, how, arg) in label order: ``_TOKEN`` (the arg-th number),
    ``_CONST`` (arg itself), ``_FORMAT`` (arg.format(*numbers)), ``_TUPLE`` (launch dims).
    The name and the stable fields (everything but ptr_/handle_) depend on a few numbers that
    repeat from node to node (grid, block, sizes), so they are computed once per distinct
    combination of those numbers and copied; only pointers and handles are read per node.
    """

    # Distinct combinations kept per template; past that, each node is computed in full.
    MEMO_MAX = 4096

    def __init__(self, kind: str, name: str | None, topo: int | None, fields: tuple):
        self.kind, self.name, self.topo, self.fields = kind, name, topo, fields
        per_node = [f for f in fields if not is_stable_param(f[0])]
        self.per_node_tokens = tuple((key, arg) for key, how, arg in per_node if how == _TOKEN)
        self.per_node = tuple(f for f in per_node if f[1] != _TOKEN)
        self.last_tokens: list = [None] * len(self.per_node_tokens)
        used: set[int] = set(_format_fields(name)) if name is not None else set()
        for key, how, arg in fields:
            if not is_stable_param(key):
                continue
            if how == _TOKEN:
                used.add(arg)
            elif how == _FORMAT:
                used.update(_format_fields(arg))
            elif how == _TUPLE:
                used.update(i for i in arg if isinstance(i, int))
        self.used = tuple(sorted(used))
        self.numbers_used = operator.itemgetter(*sorted(used)) if used else lambda _tokens: ()
        self.memo: dict = {}

    def fill(self, tokens) -> tuple[dict, str | None]:
        """A new params dict and the name for a label with these number tokens."""
        numbers = self.numbers_used(tokens)
        shared = self.memo.get(numbers)
        if shared is None:
            shared = self._shared(tokens)
            if len(self.memo) < self.MEMO_MAX:
                self.memo[numbers] = shared
        params = shared[0].copy()
        last = self.last_tokens
        for slot, (key, index) in enumerate(self.per_node_tokens):
            token = tokens[index]
            if token == last[slot]:
                token = last[slot]  # one string for an address that repeats (a kernel's function)
            else:
                last[slot] = token
            # _token_value inlined for the usual case, an address: kept as written
            params[key] = token if len(token) > 10 and token.startswith("0x") else _token_value(token)
        for key, how, arg in self.per_node:
            params[key] = _field_value(how, arg, tokens)
        return params, shared[1]

    def _shared(self, tokens) -> tuple[dict, str | None]:
        # Pointer/handle keys hold their place (None) so that filling them per node keeps
        # the key order of the label; _normalise reads and derives stable keys only.
        params = {
            key: _field_value(how, arg, tokens) if is_stable_param(key) else None
            for key, how, arg in self.fields
        }
        _normalise(self.kind, params)
        return params, self.name.format(*tokens) if self.name is not None else None


class _LabelTemplates:
    """Labels parsed once per *template*, then filled in per node.

    A 10,000-node dump repeats a few label shapes that differ only in numbers (ids, handles,
    topoIds). Each distinct template (shape + the label with its numbers cut out) is parsed
    once, with every number replaced by a unique sentinel; where the sentinels land in the
    parsed label is kept as a recipe. Later labels of that template pour their numbers into
    the recipe. The tests check that this gives exactly what parsing each label directly
    gives, on every recorded dump.
    """

    # How many recently used templates to try before tokenizing a label from scratch:
    # consecutive nodes mostly share a template (a chain alternates a few kernels).
    RECENT = 4
    # Literal readers per template: past that, one general reader reads the rest.
    LITERAL_READERS = 8

    def __init__(self):
        self.recipes: dict[tuple, _Recipe | None] = {}
        self.recent: dict[str, list[tuple[re.Pattern, _Recipe]]] = {}
        self.readers: dict[tuple, _NodeReader | None] = {}  # (header, template) -> general reader
        self.literal_readers: dict[tuple, dict] = {}  # (header, template) -> {numbers: reader}

    def node(self, node_id: str, label: str, shape: str) -> Node:
        """The Node for one label, via its template's recipe when it has one."""
        recipe = tokens = None
        recent = self.recent.get(shape)
        if recent is None:
            recent = self.recent[shape] = []
        for matcher, known in recent:
            m = matcher.fullmatch(label)
            if m is not None:
                recipe, tokens = known, m.groups()
                break
        if tokens is None:
            parts = _NUMBER_TOKEN.split(label)
            tokens = parts[1::2]
            template = tuple(parts[0::2])
            recipe = self.recipes.get((shape, template), False)
            if recipe is False:
                recipe = self.recipes[(shape, template)] = self._recipe(parts, shape)
            else:
                # A template met before that no recent matcher took: worth a matcher now.
                # Not at its first label: the one-pass reader asks for each template's first
                # label alone and reads the rest with node readers, so a matcher compiled
                # then (most of a 1,000-node dump's parse) would never be used.
                self._remember(recent, template, recipe)
        if recipe is None:  # a shape the recipe cannot express: parse directly
            return _node_from_label(node_id, label, shape)
        params, name = recipe.fill(tokens)
        topo = recipe.topo
        return Node(node_id, recipe.kind, name, params, None, int(tokens[topo]) if topo is not None else None)

    def reader(self, header: str, label: str, shape: str) -> _NodeReader | None:
        """The reader of node statements with this header and this label's template, once
        ``node`` has read such a label; None where the recipe cannot be used that way.

        A literal reader (see _NodeReader) for this label's stable numbers while a template
        has fewer than LITERAL_READERS of them, else the template's general reader.
        """
        parts = _NUMBER_TOKEN.split(label)
        template, tokens = tuple(parts[0::2]), parts[1::2]
        key = (header, template)
        if key not in self.readers:
            recipe = self.recipes.get((shape, template))
            reader = None
            per_node = [f[0] for f in recipe.per_node_tokens + recipe.per_node] if recipe else []
            # As for _remember: numbers separated by text; and each per-node key set once.
            if recipe is not None and all(template[1:-1]) and len(set(per_node)) == len(per_node):
                reader = _NodeReader(header, template, tokens, recipe, literal=False)
            self.readers[key] = reader
            self.literal_readers[key] = {}
        reader = self.readers[key]
        if reader is None or reader.recipe.per_node:
            return reader  # per-node fields computed from all numbers: the general reader
        literal = self.literal_readers[key]
        numbers = tuple(tokens[i] for i in reader.recipe.used)
        if numbers not in literal and len(literal) < self.LITERAL_READERS:
            literal[numbers] = _NodeReader(header, template, tokens, reader.recipe, literal=True)
        return literal.get(numbers, reader)

    def _remember(self, recent: list, template: tuple, recipe: _Recipe | None) -> None:
        # A matcher is the template with a number group in each gap. Only for templates whose
        # numbers are all separated by text, so that matching splits a label exactly as
        # _NUMBER_TOKEN.split does.
        if recipe is None or any(not part for part in template[1:-1]):
            return
        group = "(" + _NUMBER_TOKEN.pattern[1:-1] + ")"
        matcher = re.compile(group.join(re.escape(part) for part in template))
        recent.insert(0, (matcher, recipe))
        del recent[self.RECENT :]

    @staticmethod
    def _recipe(parts: list[str], shape: str):
        marked = list(parts)
        sentinels: dict = {}
        for i in range(1, len(parts), 2):
            marked[i] = _sentinel(i // 2, parts[i])
            sentinels[_token_value(marked[i])] = i // 2
        try:
            parsed = _parse_label("".join(marked), shape)
        except Exception:  # noqa: BLE001 - any surprise here just means: parse directly
            return None

        def formatted(text: str) -> str:
            out = []
            pieces = _SENTINEL.split(text)
            found = _SENTINEL.findall(text)
            for k, piece in enumerate(pieces):
                out.append(piece.replace("{", "{{").replace("}", "}}"))
                if k < len(found):
                    out.append(f"{{{sentinels[_token_value(found[k])]}}}")
            return "".join(out)

        try:
            fields = []
            for key, value in parsed.params.items():
                if _SENTINEL.search(key):
                    return None  # a number inside a field name ("paramArray[0]")
                if isinstance(value, tuple):
                    fields.append((key, _TUPLE, tuple(sentinels.get(v, (v,)) for v in value)))
                elif isinstance(value, bool) or not isinstance(value, (int, float, str)):
                    fields.append((key, _CONST, value))
                elif value in sentinels:
                    fields.append((key, _TOKEN, sentinels[value]))
                elif isinstance(value, str) and _FLOAT.match(value):
                    # a number whose stand-in overflowed a double (2.5e3 read as 7350...e3):
                    # the label's own may not, so this shape is read label by label
                    return None
                elif isinstance(value, str) and _SENTINEL.search(value):
                    fields.append((key, _FORMAT, formatted(value)))
                elif isinstance(value, (int, float)):
                    return None  # a number that is no token: computed, so not expressible
                else:
                    fields.append((key, _CONST, value))
            topo = None
            if parsed.topo_id is not None:
                topo = sentinels[parsed.topo_id]
            name = formatted(parsed.name) if parsed.name is not None else None
        except (KeyError, TypeError, ValueError):
            return None
        return _Recipe(parsed.kind, name, topo, tuple(fields))


# A number of a label in a node reader's regex: any number as _NUMBER_TOKEN takes it, or,
# where the number seen there is an address or a plain integer and the text after it cannot
# continue a number, only that class of number (another class there fails the match, and
# that statement is read the general way).
_ANY_NUMBER = _NUMBER_TOKEN.pattern[1:-1]
_ADDRESS = "0x[0-9A-Fa-f]{9,}"
_DIGITS = r"\d+"
_CONTINUES_A_NUMBER = frozenset("0123456789abcdefABCDEFxX.-")


def _number_class(token: str, after: str) -> str:
    if after and after[0] in _CONTINUES_A_NUMBER:
        return _ANY_NUMBER
    if len(token) > 10 and token.startswith("0x"):
        return _ADDRESS
    return _DIGITS if token.isdigit() and token.isascii() else _ANY_NUMBER


class _NodeReader:
    """Node statements of one shape in CUDA's layout — one header, one label template —
    matched with a single regex; the template's recipe makes the node from the groups.

    Group 1 is the node id. A *general* reader captures every number of the label and looks
    up the stable part of the node in the recipe's memo. A *literal* reader is made for one
    combination of the numbers that only stable fields use (grid, block, sizes): it writes
    them into its regex as they are, so it captures only the numbers read per node (pointers,
    handles, the topoId) and copies one precomputed params dict. A statement that neither
    matches is read the general way, which also learns its reader.
    """

    def __init__(self, header: str, template: tuple, tokens: list, recipe: _Recipe, literal: bool):
        per_node = {i: key for key, i in recipe.per_node_tokens}
        capture = set(per_node) | ({recipe.topo} if recipe.topo is not None else set())
        used = set(recipe.used) - capture if literal else set()
        pieces, group = [], {}
        for i, (token, after) in enumerate(zip(tokens, template[1:])):
            cls = _number_class(token, after)
            if i in used:
                pieces.append(re.escape(token))
            elif literal and i not in capture:
                pieces.append(f"(?:{cls})")
            else:
                pieces.append(f"({cls})")
                group[i] = len(group) + 1
        label = "".join(re.escape(part) + piece for part, piece in zip(template, pieces + [""]))
        # ASCII classes, as layout.py's statement regexes (see there)
        pattern = r'\s*"(graph_\d+_node_\d+)"\[' + re.escape(header) + label + r'"\];'
        # Compiled when first tried (see _compile_and_match): a template's general reader is
        # made with its literal ones, and a dump whose numbers fit those never needs it.
        self.pattern = pattern
        self.match = self._compile_and_match
        self.recipe, self.kind, self.memo, self.literal = recipe, recipe.kind, recipe.memo, literal
        self.topo = group[recipe.topo] if recipe.topo is not None else None
        if literal:
            self.shared = recipe._shared(tokens)
        else:
            # The memo key of _Recipe.fill, taken from the groups (a scalar for one number).
            key = [group[i] for i in recipe.used]
            self.key_of = operator.itemgetter(*key) if key else lambda _groups: ()
        addresses = [(key, group[i]) for i, key in per_node.items() if pieces[i] == f"({_ADDRESS})"]
        self.slow_tokens = tuple(
            (key, group[i]) for i, key in per_node.items() if (key, group[i]) not in addresses
        )
        # (key, group, slot) of each address (see _put_addresses)
        self.addresses = tuple((key, i, slot) for slot, (key, i) in enumerate(addresses))
        self.last_addresses = [None] * len(addresses)
        self.next = None  # the reader that matched after this one last time
        if literal:
            self.node = self._literal_node

    def _compile_and_match(self, text: str, pos: int) -> re.Match | None:
        """``match`` until the first call: compiles the regex, which then replaces it."""
        self.match = re.compile(self.pattern, re.ASCII).match
        return self.match(text, pos)

    def _literal_node(self, groups: tuple) -> Node:
        """``node`` of a literal reader: one dict copied, the addresses and topoId put in."""
        params = self.shared[0].copy()
        self._put_addresses(params, groups)
        for key, index in self.slow_tokens:
            params[key] = _token_value(groups[index])
        topo = self.topo
        name = self.shared[1]
        return Node(groups[0], self.kind, name, params, None, int(groups[topo]) if topo is not None else None)

    def _put_addresses(self, params: dict, groups: tuple) -> None:
        """The addresses of one match into ``params``, as written. One assignment each:
        dict.update(zip(...)) costs four times as much. An address equal to the one this
        reader read last in its slot shares that string (a kernel's function, a window)."""
        last = self.last_addresses
        for key, index, slot in self.addresses:
            value = groups[index]
            if value == last[slot]:
                value = last[slot]
            else:
                last[slot] = value
            params[key] = value

    def node(self, groups: tuple) -> Node:
        """The node for one match's groups."""
        shared = self.memo.get(self.key_of(groups))
        if shared is None:  # a new combination of numbers (or a full memo): the general fill
            params, name = self.recipe.fill(groups[1:])
        else:
            params, name = shared[0].copy(), shared[1]
            self._put_addresses(params, groups)
            for key, index in self.slow_tokens:
                params[key] = _token_value(groups[index])
            tokens = groups[1:]
            for key, how, arg in self.recipe.per_node:
                params[key] = _field_value(how, arg, tokens)
        topo = self.topo
        return Node(groups[0], self.kind, name, params, None, int(groups[topo]) if topo is not None else None)

