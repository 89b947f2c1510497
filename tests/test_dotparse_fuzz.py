"""Fuzzing the DOT parser with mutated real dumps: a GraphModel or a DotParseError, nothing else.

The seeds are the dumps recorded on a GPU by `make fixtures` (tests/data/dumps/). Each example
deletes, duplicates, swaps or replaces bytes, truncates, or inserts random text, then parses.
Whatever comes back must also survive the derived views and the renderers.

ACCELGRAPH_FUZZ_EXAMPLES sets the example count (default 2,000: about 20 s on a 2-core machine).
"""

from __future__ import annotations

import os

import pytest
from _paths import DUMPS, missing_recording
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from accelgraph_cli.dot.parse import DotParseError, load_model_bytes
from accelgraph_cli.model.graph_model import GraphModel, ModelLoadError
from accelgraph_cli.render.graph import render_focus, render_listing, render_summary

# Mutating a multi-megabyte dump tests nothing the small ones don't, only slower.
SEED_MAX_BYTES = 200_000
SEEDS = sorted(p for p in DUMPS.glob("*.dot") if p.stat().st_size <= SEED_MAX_BYTES) if DUMPS.is_dir() else []
EXAMPLES = int(os.environ.get("ACCELGRAPH_FUZZ_EXAMPLES", "2000"))



def test_there_are_recorded_seeds():
    # Without seeds the fuzz tests below would have nothing to mutate.
    if not SEEDS:
        missing_recording(DUMPS)

_SEED_BYTES = {p.name: p.read_bytes() for p in SEEDS}


@st.composite
def mutated(draw) -> tuple[str, bytes]:
    name = draw(st.sampled_from(sorted(_SEED_BYTES)))
    data = bytearray(_SEED_BYTES[name])
    for _ in range(draw(st.integers(1, 3))):
        if not data:
            break
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "truncate", "insert", "replace"]))
        i = draw(st.integers(0, len(data) - 1))
        j = min(len(data), i + draw(st.integers(1, 64)))
        if op == "delete":
            del data[i:j]
        elif op == "duplicate":
            data[i:i] = data[i:j]
        elif op == "swap":
            k = draw(st.integers(0, len(data) - 1))
            data[i], data[k] = data[k], data[i]
        elif op == "truncate":
            del data[i:]
        elif op == "insert":
            junk = draw(
                st.one_of(
                    st.binary(max_size=16),
                    st.text(max_size=24).map(lambda t: t.encode("utf-8")),
                    st.sampled_from([b"{", b"}", b'"', b"|", b"\\", b"->", b"[", b"];", b"\\<"]),
                )
            )
            data[i:i] = junk
        else:
            data[i] = draw(st.integers(0, 255))
    return name, bytes(data)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=mutated())
def test_mutated_dump_parses_or_raises_dot_parse_error(case):
    name, data = case
    try:
        model = load_model_bytes(data, filename=f"mutated-{name}")
    except ModelLoadError as problem:  # DotParseError is one; JSON-looking input gives the base
        message = str(problem)
        assert message and "\n" not in message, "errors are one line"
        assert f"mutated-{name}" in message, "errors name the file"
        return
    assert isinstance(model, GraphModel)
    # What parsed must be usable all the way to the screen.
    model.topological_order()
    model.levels()
    model.critical_path()
    console = Console(width=100, force_terminal=False, no_color=True, record=True)
    console.print(render_summary(model))
    console.print(render_listing(model, limit=50))
    if model.nodes:
        console.print(render_focus(model, model.nodes[0].id, 1))


@pytest.mark.parametrize("seed", [p.name for p in SEEDS])
def test_every_truncation_point_of_a_small_dump(seed):
    """Cut the dump at many points: a prefix of a CUDA dump is never silently accepted as
    the whole graph unless it still ends with the closing braces."""
    data = _SEED_BYTES[seed]
    step = max(1, len(data) // 150)
    for cut in range(0, len(data) - 1, step):
        prefix = data[:cut]
        if prefix.rstrip().endswith(b"}"):
            continue  # may legitimately close the graph early
        with pytest.raises(DotParseError):
            load_model_bytes(prefix, filename=seed)
