"""`accelgraph show` / `dump`-side parsing on dumps recorded on the GPU by `make fixtures`.

The manifest written there holds, for every scenario dump, the node counts per kind that CUDA
itself reported (cudaGraphNodeGetType on the live graph), so the parser is checked against
CUDA, not against itself.
"""

import json

import pytest
from _paths import DUMPS, MANIFEST, missing_recording, recorded

from accelgraph_cli.dot.parse import load_model


def _manifest():
    return json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}


KIND_DUMPS = sorted(name for name, info in _manifest().items()
                        if isinstance(info, dict) and "kinds" in info)


def test_the_manifest_records_kinds_for_the_scenario_dumps():
    if not MANIFEST.exists():
        missing_recording(MANIFEST)
    assert KIND_DUMPS, f"{MANIFEST} records no node kinds"
    for name in KIND_DUMPS:
        recorded(name)


@pytest.mark.parametrize("name", KIND_DUMPS)
def test_parsed_kinds_match_what_cuda_reported(name):
    model = load_model(DUMPS / name)
    expected = _manifest()[name]["kinds"]
    assert model.kind_counts() == {k: v for k, v in expected.items() if v}, name


@pytest.mark.parametrize("name", KIND_DUMPS)
def test_show_prints_the_summary_of_each_recorded_scenario(cli, name):
    code, out, err = cli("show", DUMPS / name, "--limit", "30")
    assert code == 0, err
    model = load_model(DUMPS / name)
    assert f"{len(model.nodes):,}" in out
    for kind in model.kind_counts():
        assert kind in out.lower() or kind.replace("_", " ") in out.lower()


def test_show_json_round_trips(cli, tmp_path):
    source = DUMPS / "forkjoin_verbose.dot"
    code, out, err = cli("show", source, "--json")
    assert code == 0, err
    saved = tmp_path / "model.json"
    saved.write_text(out)
    again = load_model(saved)
    original = load_model(source)
    assert [(n.id, n.kind, n.name) for n in again.nodes] == [
        (n.id, n.kind, n.name) for n in original.nodes]
    assert again.edges == original.edges


def test_show_focus_draws_a_neighbourhood(cli):
    model = load_model(DUMPS / "forkjoin_verbose.dot")
    # The branches start on the forked streams before any work on the origin stream, so CUDA
    # records them as separate roots; the join (the first add, after all three sqrt) is the
    # node with several parents.
    join = next(n.id for n in model.nodes if len(model.parents(n.id)) > 1)
    assert len(model.parents(join)) == 3
    code, out, err = cli("show", DUMPS / "forkjoin_verbose.dot", "--focus", join, "--depth", "1")
    assert code == 0, err
    assert "┌" in out and "└" in out
    assert out.count("cupy_sqrt") >= 3 and "cupy_add" in out  # the parents and the join itself


def test_show_focus_unknown_node_is_one_line(cli):
    code, out, err = cli("show", DUMPS / "forkjoin_verbose.dot", "--focus", "graph_9_node_999")
    assert code == 2
    assert "no such node" in err


def test_conditional_node_holds_its_body():
    """A conditional IF node as CUDA dumps it: one node of kind conditional whose body (a
    cluster of its own in the DOT) holds the memset fixtures.conditional put there."""
    for flags in ("basic", "verbose"):
        path = recorded(f"conditional_{flags}.dot")
        model = load_model(path)
        conditional = [n for n in model.nodes if n.kind == "conditional"]
        assert len(conditional) == 1, (flags, model.kind_counts())
        body = conditional[0].child
        assert body is not None, flags
        assert [n.kind for n in body.nodes] == ["memset"], flags
        assert model.parents(conditional[0].id), "it follows the captured kernel"
