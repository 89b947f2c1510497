"""Audits of captured kernel arguments, read from raw audits recorded on a GPU by `make
fixtures` (tests/data/audits): what each kind of frozen argument reads as, that a change to
any argument cannot go unseen, the CLI on a saved audit, and one clear error for every
broken document."""

from __future__ import annotations

import copy
import json
import re
import struct

import pytest
from _documents import setter as _set
from _paths import DATA, ROOT

from accelgraph_cli.model.audit import (
    MAX_STEPS,
    AuditLoadError,
    Place,
    _half_reading,
    _Places,
    _plain,
    _units,
    load_audit,
    shown_value,
)
from accelgraph_cli.render.audit import verdict

AUDITS = DATA / "audits"
CLEAN = ("mlp_decode", "buckets", "gpt_decode")
FROZEN = ("host_counter", "swapped_buffers", "decode_position", "growing_slice",
          "scheduled_lr", "functor_alpha", "decode_after_prefill", "seen_later",
          "every_other_step")


def raw(stem: str) -> dict:
    path = AUDITS / f"{stem}.json"
    assert path.is_file(), f"{path} is missing: record it with `make fixtures` on a GPU"
    return json.loads(path.read_text())


def audit_of(stem: str, document: dict | None = None):
    return load_audit(raw(stem) if document is None else document, stem)


def as_version_1(document: dict) -> dict:
    """A recording as version 1 wrote it: without its C++ kernels' types, which the reader's
    own demangler then finds (or not)."""
    document["version"] = 1
    for graph in document["graphs"]:
        graph.pop("types")
    return document


# -- what the recordings hold ------------------------------------------------------------------

@pytest.mark.parametrize("stem", CLEAN + FROZEN)
def test_each_recording_is_the_current_version_with_its_types(stem):
    """Recorded by this accelgraph: each graph keeps its C++ kernels' parameter types (a
    recording older than that fails here: run `make fixtures` on a GPU)."""
    document = raw(stem)
    assert document["version"] == 2
    for graph in document["graphs"]:
        half = graph["nodes"][:len(graph["nodes"]) // document["steps"]]
        mangled = {n["name"] for n in half if (n.get("name") or "").startswith("_Z")}
        assert set(graph["types"]) == mangled, stem
        # recorded where a demangler read them all
        assert all(isinstance(found, list) for found in graph["types"].values()), stem


@pytest.mark.parametrize("stem", CLEAN + FROZEN)
def test_each_recording_holds_alike_steps(stem):
    document = raw(stem)
    steps = 3 if stem == "every_other_step" else 2  # as tools/fixtures.py records them
    assert document["steps"] == steps
    for graph in document["graphs"]:
        nodes = graph["nodes"]
        assert nodes and len(nodes) % steps == 0
        per = len(nodes) // steps
        for k in range(1, steps):
            assert [(n["kind"], n.get("name")) for n in nodes[:per]] == \
                [(n["kind"], n.get("name")) for n in nodes[k * per:(k + 1) * per]]
        for node in nodes:
            if node["kind"] in ("kernel", "memcpy", "memset"):
                assert node["args"], (stem, node["id"])  # every kernel here takes arguments
                ends = [a["offset"] + a["size"] for a in node["args"]]
                starts = [a["offset"] for a in node["args"]]
                assert starts == sorted(starts) and all(
                    e <= s for e, s in zip(ends, starts[1:])), (stem, node["id"])


@pytest.mark.parametrize("stem", CLEAN)
def test_bundled_scenarios_freeze_nothing(stem):
    audit = audit_of(stem)
    assert audit.frozen == 0 and not audit.mismatched
    assert sum(g.kernels for g in audit.graphs) > 0
    passed, line = verdict(audit)
    assert passed and line.startswith("ok — no frozen value found in ")
    # what differs is a block each step allocates, or bytes no launch sets (CuPy's indexer,
    # PyTorch's argument structs), which the effect test finds change no output
    assert all(d.kind in ("elsewhere", "no_effect") for g in audit.graphs for d in g.differences)


def test_a_state_pointer_reads_as_the_state_array_it_points_at():
    """mlp_decode's kernels take the state's weights: every state array is an argument
    of some kernel, word for word (the addresses the recording found are the state's)."""
    document = raw("mlp_decode")
    starts = {entry["start"] for entry in document["state"]}
    words = set()
    for node in document["graphs"][0]["nodes"]:
        for arg in node.get("args", []):
            if arg["size"] == 8:
                words.add(int.from_bytes(bytes.fromhex(arg["hex"]), "little"))
    assert starts and starts <= words


def test_a_host_counter_is_a_frozen_value():
    audit = audit_of("host_counter")
    (graph,) = audit.graphs
    (difference,) = graph.differences
    assert (difference.kind, difference.argument, difference.frozen) == ("value", 0, True)
    assert (difference.first, difference.second) == ("2.0", "3.0")
    assert struct.unpack("<f", bytes.fromhex(difference.second_hex))[0] == 3.0
    lines = (ROOT / "tests" / "frozen_values" / "host_counter.py").read_text().splitlines()
    assert difference.origin is not None and difference.origin.function == "step"
    assert lines[difference.origin.line - 1].strip() == difference.origin.code
    assert difference.origin.code.startswith("kernels.saxpy(")
    passed, line = verdict(audit)
    assert not passed and line.startswith(
        "FROZEN — 1 argument part(s) or launch size(s) of 1 node(s)")


def test_swapped_buffers_are_frozen_buffers():
    (graph,) = audit_of("swapped_buffers").graphs
    shown = {d.argument: (d.kind, d.first, d.second) for d in graph.differences}
    assert shown == {0: ("buffer", "state['a']", "state['b']"),
                     1: ("buffer", "state['b']", "state['a']")}


def test_a_cache_position_is_a_frozen_offset():
    """`cache[position] = token` is a copy node: its destination moves one row a step."""
    document = raw("decode_position")
    width = 1024  # decode_position's PARAMS
    assert document["params"]["width"] == width
    (graph,) = audit_of("decode_position").graphs
    assert [(d.kind, d.label, d.first, d.second) for d in graph.frozen] == [
        ("offset", "dst", "state['cache']", f"state['cache'] + {4 * width:,} B")]
    assert graph.copies == 1


def test_unset_bytes_in_argument_structs_are_unsure_not_frozen():
    """gpt_decode's PyTorch kernels take structs with slots no launch sets (and one-byte
    empty functors): they differ between steps, and are not read as frozen values. Read
    without the effect test's findings (as an audit recorded before it existed), they are
    unsure; with them, each one tried and found to change no output."""
    document = raw("gpt_decode")
    effects = document["graphs"][0].pop("effects")
    (graph,) = load_audit(document, "gpt_decode").graphs
    unsure = [d for d in graph.differences if d.kind == "unsure"]
    assert unsure and not graph.frozen
    assert effects["changed"] == [] and effects["note"] is None
    assert sorted(effects["tested"]) == sorted([d.node, d.argument, d.at] for d in unsure)
    (tested,) = audit_of("gpt_decode").graphs
    assert [(d.node, d.argument, d.at, "no_effect") for d in unsure] == [
        (d.node, d.argument, d.at, d.kind) for d in tested.differences]
    sizes = {(n["id"], i): a["size"] for n in raw("gpt_decode")["graphs"][0]["nodes"]
             for i, a in enumerate(n.get("args", []))}
    assert all(sizes[(d.node, d.argument)] > 8 or sizes[(d.node, d.argument)] == 1
               for d in unsure)


# -- a change cannot go unseen ---------------------------------------------------------------

def _second_step(document: dict, graph: int = 0) -> list:
    nodes = document["graphs"][graph]["nodes"]
    return nodes[len(nodes) // 2:]


@pytest.mark.parametrize("stem", CLEAN)
def test_any_byte_changed_in_the_second_step_is_found(stem):
    """Each argument of each node of the second step, one byte changed in turn: the audit
    then reports that byte's unit of that argument, besides what it reported before (the
    compare is not vacuous), and a whole argument of 2, 4 or 8 bytes so changed is frozen."""
    document = raw(stem)
    before = {(d.node, d.argument, d.at)
              for g in load_audit(document, stem).graphs for d in g.differences}
    checked = 0
    for g, graph in enumerate(document["graphs"]):
        for node_index, node in enumerate(_second_step(document, g)):
            for index, arg in enumerate(node.get("args", [])):
                first_id = graph["nodes"][node_index]["id"]
                # the highest byte (an address so changed points nowhere) and the lowest
                # (an address so changed stays in its allocation)
                for byte, unit in ((-1, _units(arg["offset"], arg["size"])[-1][0]), (0, 0)):
                    changed = copy.deepcopy(document)
                    target = _second_step(changed, g)[node_index]["args"][index]
                    raw_bytes = bytearray.fromhex(target["hex"])
                    raw_bytes[byte] ^= 0x01
                    target["hex"] = raw_bytes.hex()
                    audit = load_audit(changed, stem)
                    found = {(d.node, d.argument, d.at)
                             for a in audit.graphs for d in a.differences}
                    assert found - before <= {(first_id, index, unit)}, (stem, first_id, index)
                    assert (first_id, index, unit) in found, (stem, first_id, index, byte)
                    if byte == -1 and arg["size"] in (2, 4, 8) and _a_number_or_pointer(
                            node.get("name"), index):
                        assert not verdict(audit)[0], (stem, first_id, index)
                    checked += 1
    assert checked


def _a_number_or_pointer(name: str | None, index: int) -> bool:
    """Whether a kernel's argument is declared a number or a pointer: every extern "C"
    kernel's small argument is taken as one; a C++ kernel's, from its demangled signature
    (read here by hand; none without a demangler, as the audit then has none either)."""
    from accelgraph_cli.model.demangle import demangle_many

    if not (name or "").startswith("_Z"):
        return True
    signature = demangle_many([name]).get(name, name)
    if not signature.endswith(")"):
        return False
    depth, parts, start, opened = 0, [], 0, None
    for i in range(len(signature) - 1, -1, -1):  # the parameter list: the last (...)
        depth += {")": 1, "(": -1}.get(signature[i], 0)
        if depth == 0:
            opened = i
            break
    declared = signature[opened + 1:-1]
    depth = 0
    for i, c in enumerate(declared):
        depth += 1 if c in "<(" else -1 if c in ">)" else 0
        if c == "," and depth == 0:
            parts.append(declared[start:i].strip())
            start = i + 1
    parts.append(declared[start:].strip())
    kind = parts[index].replace("const", "").strip()
    return kind in ("int", "unsigned int", "float", "long", "double") or kind.endswith("*")


def test_c_plus_plus_parameter_types_come_from_the_mangled_name():
    from accelgraph_cli.model.demangle import demangle_many, demangler_name, parameter_types

    if demangler_name() is None:
        pytest.skip("no C++ demangler here (binutils' c++filt)")

    name = next(n["name"] for n in raw("gpt_decode")["graphs"][0]["nodes"]
                if (n.get("name") or "").startswith("_ZN2at6native29vectorized_elementwise"))
    types = parameter_types(demangle_many([name])[name])
    assert types[0] == "int" and types[-1].startswith("std::array<char*")
    assert parameter_types("k") is None and parameter_types("void f(void)") == []
    assert parameter_types("void f<(anonymous namespace)::A>(int, float const*)") == [
        "int", "float const*"]


def test_a_pointer_moved_to_another_state_array_is_a_frozen_buffer():
    """mlp_decode's second GEMM given the first's weight in the second step."""
    document = raw("mlp_decode")
    entries = sorted(document["state"], key=lambda e: e["start"])
    a, b = entries[0]["start"], entries[1]["start"]
    for node in _second_step(document):
        for arg in node["args"]:
            if arg["size"] == 8 and int.from_bytes(bytes.fromhex(arg["hex"]), "little") == a:
                arg["hex"] = b.to_bytes(8, "little").hex()
                audit = load_audit(document, "mlp_decode")
                (difference,) = audit.graphs[0].frozen
                assert difference.kind == "buffer" and difference.frozen
                assert not verdict(audit)[0]
                return
    pytest.fail("no kernel of mlp_decode takes its first state array")


def test_a_struct_pointer_moved_to_another_state_array_is_a_frozen_buffer():
    """CuPy passes an array as a struct whose first word is its address: decode_position's
    multiply kernel given the cache instead of the token in the second step."""
    document = raw("decode_position")
    starts = {entry["paths"][0]: entry["start"] for entry in document["state"]}
    node = next(n for n in _second_step(document) if n["kind"] == "kernel")
    arg = node["args"][0]
    assert arg["size"] > 8
    raw_bytes = bytearray.fromhex(arg["hex"])
    assert int.from_bytes(raw_bytes[:8], "little") == starts["state['token']"]
    raw_bytes[:8] = starts["state['cache']"].to_bytes(8, "little")
    arg["hex"] = raw_bytes.hex()
    frozen = load_audit(document, "decode_position").graphs[0].frozen
    assert [(d.kind, d.argument, d.at, d.first, d.second) for d in frozen][0] == \
        ("buffer", 0, 0, "state['token']", "state['cache']")


def test_a_second_step_of_another_shape_is_not_compared_and_fails(cli, tmp_path):
    document = raw("host_counter")
    document["graphs"][0]["nodes"].pop()
    audit = load_audit(document, "host_counter")
    assert audit.graphs[0].mismatch and "different graph" in audit.graphs[0].mismatch
    assert audit.graphs[0].captured == 1
    passed, line = verdict(audit)
    assert not passed and line.startswith("STEPS DIFFER — graph 'step' is not the same")
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(document))
    code, out, _err = cli("audit", path)
    assert code == 1 and "1 node(s) captured for two steps" in out and "not compared" in out


def test_another_kernel_in_the_second_step_is_a_mismatch():
    document = raw("mlp_decode")
    _second_step(document)[0]["name"] = "other_kernel"
    (graph,) = load_audit(document, "mlp_decode").graphs
    assert graph.mismatch and "node 0 of the first step" in graph.mismatch
    assert not verdict(load_audit(document, "mlp_decode"))[0]


# -- reading values -------------------------------------------------------------------------

@pytest.mark.parametrize("value,shown", [
    (struct.pack("<f", 2.0), "2.0"), (struct.pack("<f", -0.125), "-0.125"),
    (struct.pack("<i", 3), "3"), (struct.pack("<i", -7), "-7"), (struct.pack("<i", 0), "0"),
    (struct.pack("<d", 1e-3), "0.001"), (struct.pack("<q", 4096), "4096"),
    (struct.pack("<h", -2), "-2"), (b"\x05", "5"),
    (struct.pack("<I", 0xFFFFFFFF), "-1"), (struct.pack("<f", float("nan")), "0x7fc00000"),
    (b"\x01\x02\x03", "0x030201"),
])
def test_shown_value(value, shown):
    assert shown_value(value) == shown


@pytest.mark.parametrize("offset,size,units", [
    (0, 4, [(0, 4)]), (8, 8, [(0, 8)]), (4, 4, [(0, 4)]), (4, 12, [(0, 4), (4, 8)]),
    (0, 32, [(0, 8), (8, 8), (16, 8), (24, 8)]), (12, 12, [(0, 4), (4, 8)]),
])
def test_units_are_cut_at_the_parameter_spaces_words(offset, size, units):
    assert _units(offset, size) == units


# -- the CLI on a saved audit (no GPU) ------------------------------------------------------

def test_cli_shows_a_frozen_value_and_exits_1(cli):
    code, out, err = cli("audit", AUDITS / "host_counter.json")
    assert code == 1, err
    assert "host_counter.py:" in out and "saxpy4" in out
    assert "frozen value" in out and "audit: FROZEN" in out


def test_cli_passes_a_clean_audit(cli):
    code, out, err = cli("audit", AUDITS / "mlp_decode.json")
    assert code == 0, err
    assert "no frozen argument" in out
    assert "audit: ok — no frozen value found in 4 kernel, copy and memset node(s)" in out
    assert "5 part(s) that differ are not judged (counted above)" in out


def test_cli_json(cli):
    code, out, err = cli("audit", AUDITS / "swapped_buffers.json", "--json")
    assert code == 1, err
    document = json.loads(out)
    assert document["passed"] is False and document["frozen"] == 2
    assert document["verdict"].startswith("FROZEN")
    kinds = [d["kind"] for g in document["graphs"] for d in g["differences"]]
    assert kinds == ["buffer", "buffer"]


def test_cli_shows_a_gzipped_saved_audit(cli, tmp_path):
    import gzip

    path = tmp_path / "a.json.gz"
    path.write_bytes(gzip.compress((AUDITS / "host_counter.json").read_bytes()))
    code, out, _err = cli("audit", path)
    assert code == 1 and "frozen value" in out


@pytest.mark.parametrize("option", [["--param", "n=2"], ["--out", "x.json"], ["--pool", "shared"]])
def test_cli_refuses_new_audit_options_for_a_saved_one(cli, option):
    code, _out, err = cli("audit", AUDITS / "mlp_decode.json", *option)
    assert code == 2 and option[0] in err and "saved" in err


def test_out_must_be_json(cli):
    code, _out, err = cli("audit", ROOT / "scenarios" / "saxpy.py", "--out", "a.txt")
    assert code == 2 and "name it .json" in err


def test_a_new_audit_without_a_gpu_is_exit_3(cli):
    from accelgraph_cli.cuda.device import gpu_available

    if gpu_available():
        pytest.skip("this machine has a GPU: the audit would run")
    code, _out, err = cli("audit", "saxpy")
    assert code == 3 and "saved profiles and audits" in err


def _arg(change):
    return lambda d: change(d["graphs"][0]["nodes"][0]["args"][0])


BROKEN = {
    "format": (_set(["format"], "other"), "not an accelgraph audit"),
    "version": (_set(["version"], 99), "version 99; this accelgraph reads version 1 or 2"),
    "version true": (_set(["version"], True), "version True"),  # True == 1 in Python
    "version float": (_set(["version"], 1.0), "version 1.0"),
    "types": (_set(["graphs", 0, "types"], [1]), "'types' must map"),
    "types entry": (_set(["graphs", 0, "types"], {"_Z1fv": "int"}), "'types' must map"),
    "steps": (_set(["steps"], 65), "compares 2 to 64 steps, not 65"),
    "one step": (_set(["steps"], 1), "compares 2 to 64 steps, not 1"),
    "steps type": (_set(["steps"], "two"), "'steps'"),
    "graphs": (_set(["graphs"], []), "'graphs'"),
    "graph name": (_set(["graphs", 0, "name"], 5), "'name'"),
    "nodes": (_set(["graphs", 0, "nodes"], {}), "'nodes'"),
    "node kind": (_set(["graphs", 0, "nodes", 0, "kind"], None), "'kind'"),
    "kernel name": (_set(["graphs", 0, "nodes", 0, "name"], 7), "'name'"),
    "args": (_set(["graphs", 0, "nodes", 0, "args"], "x"), "'args'"),
    "arg hex short": (_arg(lambda a: a.__setitem__("hex", a["hex"][:-2])), "argument 0"),
    "arg hex not hex": (_arg(lambda a: a.__setitem__("hex", "zz" * a["size"])), "argument 0"),
    "arg size 0": (_arg(lambda a: a.update(size=0, hex="")), "argument 0"),
    "arg past the space": (_arg(lambda a: a.__setitem__("offset", 40_000)), "parameter space"),
    "arg negative": (_arg(lambda a: a.__setitem__("offset", -8)), "argument 0"),
    "allocations": (_set(["graphs", 0, "allocations"], [[1]]), "'allocations'"),
    "a copy without args": (lambda d: d["graphs"][0]["nodes"][1].update(kind="memcpy") or
                            d["graphs"][0]["nodes"][1].pop("args"), "memcpy node's 'args'"),
    "args on a host node": (_set(["graphs", 0, "nodes", 1, "kind"], "host"), "no arguments"),
    "labels": (_set(["graphs", 0, "nodes", 0, "labels"], ["a"]), "'labels'"),
    "grid": (_set(["graphs", 0, "nodes", 0, "grid"], [1, 2]), "'grid' must be three counts"),
    "grid negative": (_set(["graphs", 0, "nodes", 0, "grid"], [1, -1, 1]),
                      "'grid' must be three counts"),
    "block": (_set(["graphs", 0, "nodes", 0, "block"], [32, 1]), "'block' must be three counts"),
    "shared_mem": (_set(["graphs", 0, "nodes", 0, "shared_mem"], -1),
                   "'shared_mem' must be a byte count"),
    "shared_mem list": (_set(["graphs", 0, "nodes", 0, "shared_mem"], [0, 0, 0]),
                        "'shared_mem' must be a byte count"),
    "labels not text": (lambda d: d["graphs"][0]["nodes"][0].__setitem__(
        "labels", list(range(len(d["graphs"][0]["nodes"][0]["args"])))), "'labels'"),
    "arg ends past the space": (_arg(lambda a: a.update(offset=32_764 - a["size"] + 4)),
                                "parameter space"),
    "allocation negative": (_set(["graphs", 0, "allocations"], [[-1, 8]]), "'allocations'"),
    "allocation past 2**64": (_set(["graphs", 0, "allocations"], [[2**64, 8]]),
                              "'allocations'"),
    "allocation not a number": (_set(["graphs", 0, "allocations"], [["0", 8]]),
                                "'allocations'"),
    "state size 0": (_set(["state"], [{"paths": ["x"], "start": 1, "size": 0}]),
                     "state allocation"),
    "state start negative": (_set(["state"], [{"paths": ["x"], "start": -1, "size": 8}]),
                             "state allocation"),
    "state start past 2**64": (_set(["state"], [{"paths": ["x"], "start": 2**64, "size": 8}]),
                               "state allocation"),
    "state path empty": (_set(["state"], [{"paths": ["x", ""], "start": 1, "size": 8}]),
                         "state allocation"),
    "state without paths": (_set(["state"], [{"paths": [], "start": 1, "size": 1}]),
                            "state allocation"),
    "state": (_set(["state"], {}), "'state'"),
    "state entry": (_set(["state"], [{"paths": "x", "start": 1, "size": 1}]), "state allocation"),
    "origins": (_set(["graphs", 0, "origins"], [1]), "origins"),
    "scenario": (_set(["scenario"], 7), "'scenario'"),
    "params": (_set(["params"], [1]), "params"),
    "two graphs one name": (lambda d: d["graphs"].append(copy.deepcopy(d["graphs"][0])),
                            "two graphs are called 'step'"),
}
# on a recording with C++ kernels
BROKEN_TYPES = {
    "types lacking a kernel": (lambda d: d["graphs"][0]["types"].popitem(),
                               "'types' lacks the kernel '_Z"),
}


_EFFECTS = ["graphs", 0, "effects"]
BROKEN_EFFECTS = {
    "not an object": (_set(_EFFECTS, [1]), "'effects' must be an object"),
    "tested not a list": (_set(_EFFECTS + ["tested"], "all"), "'effects' 'tested'"),
    "tested unknown node": (_set(_EFFECTS + ["tested"], [["graph_0_node_9", 1, 0]]),
                            "'effects' 'tested'"),
    "second step's node": (_set(_EFFECTS + ["tested"], [["graph_0_node_1", 1, 0]]),
                           "'effects' 'tested'"),
    "changed not tested": (_set(_EFFECTS + ["tested"], []), "changed units among those tested"),
    "changed short": (_set(_EFFECTS + ["changed"], [["graph_0_node_0", 1]]),
                      "'effects' 'changed'"),
    "note": (_set(_EFFECTS + ["note"], 5), "a note or null"),
}


@pytest.mark.parametrize("case", sorted(BROKEN) + [f"effects: {c}" for c in sorted(BROKEN_EFFECTS)]
                         + sorted(BROKEN_TYPES))
def test_broken_audits_are_one_error(cli, tmp_path, case):
    if case.startswith("effects: "):  # on a recording that has the effect test's findings
        change, words = BROKEN_EFFECTS[case.removeprefix("effects: ")]
        document = raw("functor_alpha")
    elif case in BROKEN_TYPES:
        change, words = BROKEN_TYPES[case]
        document = raw("gpt_decode")
    else:
        change, words = BROKEN[case]
        document = raw("host_counter")
    change(document)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(document))
    code, out, err = cli("audit", path)
    assert code == 2, (case, out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and words in err, (case, err)


@pytest.mark.parametrize("text,words", [("{", "not JSON"), ("[1]", "not an accelgraph audit")])
def test_not_json_is_one_error(cli, tmp_path, text, words):
    path = tmp_path / "a.json"
    path.write_text(text)
    code, _out, err = cli("audit", path)
    assert code == 2 and words in err, err


def test_missing_and_folder(cli, tmp_path):
    code, _out, err = cli("audit", tmp_path / "none.json")
    assert code == 2 and "no such file" in err
    folder = tmp_path / "d.json"
    folder.mkdir()
    code, _out, err = cli("audit", folder)
    assert code == 2 and "is a directory, not a saved audit" in err


def test_load_audit_rejects_non_dicts():
    with pytest.raises(AuditLoadError):
        load_audit([], "x")


@pytest.mark.parametrize("stem", ["decode_position", "functor_alpha"])
def test_the_readme_shows_the_recorded_audit_as_the_cli_does(cli, stem):
    readme = (ROOT / "README.md").read_text()
    command = f"$ accelgraph audit tests/data/audits/{stem}.json"
    block = readme.split(command, 1)[1].split("\n", 1)[1].split("```", 1)[0]
    code, out, err = cli("audit", AUDITS / f"{stem}.json")  # 100 columns
    assert code == 1, err
    assert out == block


def test_a_pointer_moved_within_a_state_array_is_a_frozen_offset():
    document = raw("mlp_decode")
    entry = max(document["state"], key=lambda e: e["size"])
    for node in _second_step(document):
        for arg in node["args"]:
            if int.from_bytes(bytes.fromhex(arg["hex"]), "little") == entry["start"]:
                arg["hex"] = (entry["start"] + 64).to_bytes(8, "little").hex()
                (difference,) = load_audit(document, "mlp_decode").graphs[0].frozen
                assert (difference.kind, difference.first, difference.second) == (
                    "offset", entry["paths"][0], f"{entry['paths'][0]} + 64 B")
                return
    pytest.fail("no kernel of mlp_decode takes its largest state array")


def test_a_launch_shape_that_changes_is_frozen():
    document = raw("mlp_decode")
    node = _second_step(document)[0]
    node["grid"] = [node["grid"][0] + 1, *node["grid"][1:]]
    audit = load_audit(document, "mlp_decode")
    (difference,) = audit.graphs[0].frozen
    assert (difference.kind, difference.label) == ("launch", "grid")
    assert difference.second == "x".join(str(v) for v in node["grid"])
    assert not verdict(audit)[0]


def test_cupy_array_structs_are_judged_and_the_indexers_index_is_not():
    """decode_position's multiply kernel: (array, scalar, array, indexer). The indexer's
    index word differs in the recording (CuPy leaves it unset) and is not judged by its
    type (the effect test finds it changes no output); a size word of the array or the
    indexer that changes is a frozen value."""
    document = raw("decode_position")
    (graph,) = audit_of("decode_position").graphs
    unjudged = [(d.argument, d.at) for d in graph.differences if d.kind == "no_effect"]
    assert unjudged == [(3, 16)]
    for argument, at in ((0, 8), (3, 0)):
        changed = copy.deepcopy(document)
        node = next(n for n in _second_step(changed) if n["kind"] == "kernel")
        raw_bytes = bytearray.fromhex(node["args"][argument]["hex"])
        raw_bytes[at] ^= 0x02
        node["args"][argument]["hex"] = raw_bytes.hex()
        frozen = load_audit(changed, "decode_position").graphs[0].frozen
        assert (argument, at, "value") in {(d.argument, d.at, d.kind) for d in frozen}


def test_nothing_compared_is_no_pass():
    document = raw("host_counter")
    for node in document["graphs"][0]["nodes"]:
        node.clear()
        node.update(id="graph_0_node_x", kind="graph")
    audit = load_audit(document, "host_counter")
    assert audit.graphs[0].nested == 1
    passed, line = verdict(audit)
    assert not passed and line.startswith("NOTHING COMPARED")


@pytest.mark.parametrize("hex_text", [" 0000c0 ", "0000c0\n", "0x00c0"])
def test_hex_that_python_would_forgive_is_refused(hex_text):
    document = raw("host_counter")
    document["graphs"][0]["nodes"][0]["args"][0]["hex"] = hex_text
    with pytest.raises(AuditLoadError, match="argument 0"):
        load_audit(document, "host_counter")


def test_a_growing_slice_is_a_frozen_size():
    """CuPy passes a slice's size and shape in its array structs and its indexer: each is
    judged, and the indexer's unset index word is not."""
    (graph,) = audit_of("growing_slice").graphs
    assert {(d.argument, d.at, d.first, d.second) for d in graph.frozen} == {
        (0, 8, "1000", "1001"), (0, 16, "1000", "1001"), (2, 8, "1000", "1001"),
        (2, 16, "1000", "1001"), (3, 0, "1000", "1001"), (3, 8, "1000", "1001")}
    assert [(d.argument, d.at) for d in graph.differences if d.kind == "no_effect"] == [(3, 16)]


def _flip_in_second_step(document: dict, kernel_start: str, index: int) -> tuple[str, int]:
    """Change one byte of argument ``index`` of the second step's first kernel whose name
    starts so; (the first step's node id, the argument's index)."""
    nodes = document["graphs"][0]["nodes"]
    half = len(nodes) // 2
    position = next(i for i, n in enumerate(nodes[half:])
                    if (n.get("name") or "").startswith(kernel_start))
    arg = nodes[half + position]["args"][index]
    raw_bytes = bytearray.fromhex(arg["hex"])
    raw_bytes[0] ^= 0x01
    arg["hex"] = raw_bytes.hex()
    return nodes[position]["id"], index


def test_a_small_struct_argument_of_a_cxx_kernel_is_not_judged():
    """gpt_decode's CUDAFunctor_add<BFloat16> is a 4-byte struct argument: a change to it is
    listed, not judged (a functor's bytes may be padding no launch sets); an int argument
    of a C++ kernel, changed the same way, is a frozen value."""
    from accelgraph_cli.model.demangle import demangler_name

    if demangler_name() is None:
        pytest.skip("no C++ demangler here (binutils' c++filt)")
    document = raw("gpt_decode")
    node, index = _flip_in_second_step(document, "_ZN2at6native29vectorized_elementwise", 1)
    audit = load_audit(document, "gpt_decode")
    (difference,) = [d for d in audit.graphs[0].differences if d.node == node]
    assert (difference.argument, difference.kind) == (index, "unsure")
    assert verdict(audit)[0]
    document = raw("gpt_decode")
    node, index = _flip_in_second_step(document, "_ZN2at6native29vectorized_elementwise", 0)
    (difference,) = load_audit(document, "gpt_decode").graphs[0].frozen
    assert (difference.node, difference.argument, difference.kind) == (node, index, "value")


def test_without_a_demangler_cxx_kernels_are_untyped_and_the_verdict_says_so(monkeypatch):
    from accelgraph_cli.model import audit as model_audit
    from accelgraph_cli.render import audit as render_audit

    monkeypatch.setattr(model_audit, "demangle_many", lambda names: {n: n for n in names})
    monkeypatch.setattr(render_audit, "demangler_name", lambda: None)
    document = as_version_1(raw("gpt_decode"))  # a recording with its types judges by them
    _flip_in_second_step(document, "_ZN2at6native29vectorized_elementwise", 0)
    audit = load_audit(document, "gpt_decode")
    assert audit.graphs[0].untyped and not audit.graphs[0].frozen
    passed, line = verdict(audit)
    assert passed and "C++ kernel(s) untyped (no C++ demangler found" in line


# -- the effect test ------------------------------------------------------------------------

def test_a_value_inside_a_functor_is_read_by_its_effect():
    """functor_alpha: y.add_(x, alpha=count). alpha lies in the kernel's functor struct, so
    its type says nothing; the effect test found the outputs change with the first step's
    bytes there: a frozen struct value, shown as the float it is."""
    document = raw("functor_alpha")
    (graph,) = audit_of("functor_alpha").graphs
    (difference,) = graph.differences
    assert (difference.kind, difference.frozen, difference.size) == ("read", True, 4)
    assert (difference.first, difference.second) == ("1.0", "2.0")
    assert "vectorized_elementwise_kernel" in difference.kernel
    assert difference.origin is not None
    assert difference.origin.code == 'state["y"].add_(state["x"], alpha=float(state["count"]))'
    effects = document["graphs"][0]["effects"]
    assert effects == {"tested": [[difference.node, difference.argument, difference.at]],
                       "changed": [[difference.node, difference.argument, difference.at]],
                       "note": None}
    passed, line = verdict(audit_of("functor_alpha"))
    assert not passed and line.startswith("FROZEN — 1 argument part(s)")
    # without the effect test's findings the same bytes are unsure, and the audit passes
    document["graphs"][0].pop("effects")
    (graph,) = load_audit(document, "functor_alpha").graphs
    assert [d.kind for d in graph.differences] == ["unsure"]
    assert verdict(load_audit(document, "functor_alpha"))[0]


def test_a_value_read_only_after_the_graph_before_it_is_found():
    """decode_after_prefill (recorded on an H200): decode's alpha scales what prefill writes,
    zeros on a fresh state; the effect test ran prefill first and found the alpha read.
    prefill, a copy, has nothing to try."""
    document = raw("decode_after_prefill")
    graphs = {g.name: g for g in audit_of("decode_after_prefill").graphs}
    assert list(graphs) == ["prefill", "decode"]
    assert not graphs["prefill"].differences and "effects" not in document["graphs"][0]
    (difference,) = graphs["decode"].differences
    assert (difference.kind, difference.first, difference.second) == ("read", "1.0", "2.0")
    assert document["graphs"][1]["effects"]["changed"] == [
        [difference.node, difference.argument, difference.at]]


def test_a_host_learning_rate_schedule_is_frozen_in_adamw():
    """scheduled_lr: AdamW(capturable=True) with a Python-float rate the host decays each
    step. Two foreach kernels take a float from the rate (1 / lr, and 1 - lr x weight decay),
    judged by their demangled types and frozen, at the optimizer's step line; every struct
    byte that differs besides (AdamW's tensor lists) changes no output."""
    audit = audit_of("scheduled_lr")
    (graph,) = audit.graphs
    frozen = graph.frozen
    assert [d.kind for d in frozen] == ["value", "value"]
    assert all("ForeachBinaryOpScalar" in d.kernel and d.size == 4 for d in frozen)
    rates = [1e-2 * 0.5 ** epoch for epoch in (4, 5)]  # setup's warm-up ran epochs 1 to 3
    values = {(struct.unpack("<f", bytes.fromhex(d.first_hex))[0],
               struct.unpack("<f", bytes.fromhex(d.second_hex))[0]) for d in frozen}
    assert (1 / rates[0], 1 / rates[1]) in values
    weight_decay = 0.01  # AdamW's default
    assert tuple(struct.unpack("<f", struct.pack("<f", 1 - lr * weight_decay))[0]
                 for lr in rates) in values
    assert {d.origin.code for d in frozen} == {'state["opt"].step()'}
    others = {d.kind for d in graph.differences if not d.frozen}
    assert others == {"no_effect"}
    assert graph.effects_note is None


def test_no_effect_is_counted_in_the_verdict():
    audit = audit_of("gpt_decode")
    unused = sum(d.kind == "no_effect" for g in audit.graphs for d in g.differences)
    assert unused > 100
    passed, line = verdict(audit)
    assert passed and (f"{unused} part(s) that differ change no output when the later steps "
                       "run with the first step's") in line


def test_the_effect_test_tries_unsure_struct_bytes_only(monkeypatch):
    """What the recording hands the effect test: first-step kernel nodes only, unsure units
    only: never an address, an extern "C" kernel's value (judged by rule) or a C++ kernel's
    value judged by its recorded type; the same units with a demangler and without one."""
    from accelgraph_cli.model import audit as model_audit
    from accelgraph_cli.model.audit import effect_candidates

    def tried(stem: str) -> dict:
        document = raw(stem)
        found = {}
        for graph in document["graphs"]:
            graph.pop("effects", None)
            found[graph["name"]] = effect_candidates(graph, document["state"])
        return found

    for stem in ("host_counter", "swapped_buffers", "mlp_decode", "buckets"):
        assert not any(tried(stem).values()), stem  # values of extern "C" kernels, addresses
    (units,) = tried("scheduled_lr").values()
    (graph,) = audit_of("scheduled_lr").graphs
    assert all(position < graph.nodes for position in units)  # first-step nodes
    frozen = {(int(d.node.rsplit("_", 1)[1]), (d.argument, d.at, d.size)) for d in graph.frozen}
    assert frozen and not any(unit in units.get(p, []) for p, unit in frozen)  # rates: values
    tested = {(int(d.node.rsplit("_", 1)[1]), (d.argument, d.at, d.size))
              for d in graph.differences if d.kind == "no_effect"}
    assert tested == {(p, u) for p, found in units.items() for u in found}
    (functor,) = tried("functor_alpha").values()
    (difference,) = audit_of("functor_alpha").graphs[0].differences
    assert functor == {0: [(difference.argument, difference.at, difference.size)]}
    with_demangler = tried("scheduled_lr")
    monkeypatch.setattr(model_audit, "demangle_many", lambda names: {n: n for n in names})
    assert tried("scheduled_lr") == with_demangler


def test_the_effect_search_finds_each_read_unit():
    """effect_search against replays that change when certain units take the first step's
    bytes: all at once, then per node, then per unit, asking as few replays as it can."""
    from accelgraph_cli.model.audit import effect_search

    candidates = {0: [(0, 0, 4), (1, 8, 8)], 3: [(2, 0, 4)], 5: [(0, 16, 8), (0, 24, 8)]}

    def replays(read):
        asked = []

        def differs(chosen):
            asked.append(chosen)
            return any((p, u) in read for p, units in chosen.items() for u in units)
        return differs, asked

    differs, asked = replays(set())
    assert effect_search(candidates, differs) == ([], None)
    assert asked == [candidates]  # one replay where nothing is read
    read = {(0, (1, 8, 8)), (5, (0, 24, 8))}
    differs, asked = replays(read)
    changed, note = effect_search(candidates, differs)
    assert sorted(changed) == sorted(read) and note is None
    assert len(asked) == 1 + 3 + 2 + 2  # all, each node, each unit of the two that changed
    # a node with one unit: that unit, without another replay
    differs, asked = replays({(3, (2, 0, 4))})
    assert effect_search(candidates, differs) == ([(3, (2, 0, 4))], None)
    assert len(asked) == 1 + 3


def test_units_that_change_the_outputs_only_together_are_all_read():
    from accelgraph_cli.model.audit import effect_search

    candidates = {0: [(0, 0, 4), (1, 0, 4)], 2: [(0, 8, 8)]}

    def node_zero_both(chosen):  # only node 0's two units together
        return len(chosen.get(0, [])) == 2

    changed, note = effect_search(candidates, node_zero_both)
    assert changed == [(0, (0, 0, 4)), (0, (1, 0, 4))] and "only together" in note

    def every_node(chosen):  # only all nodes together
        return set(chosen) == {0, 2}

    changed, note = effect_search(candidates, every_node)
    assert sorted(changed) == [(0, (0, 0, 4)), (0, (1, 0, 4)), (2, (0, 8, 8))]
    assert "only together" in note


@pytest.mark.parametrize("stem", CLEAN + FROZEN)
def test_a_recorded_audit_reads_the_same_without_a_demangler(monkeypatch, stem):
    """Every unit is judged by the types the recording kept, so an audit shown where no
    demangler runs gives the same kinds, values and verdict (scheduled_lr's rates stay
    values by their type)."""
    from accelgraph_cli.model import audit as model_audit

    with_demangler = audit_of(stem)
    monkeypatch.setattr(model_audit, "demangle_many", lambda names: {n: n for n in names})
    without = audit_of(stem)
    assert without.to_json() == with_demangler.to_json()
    assert not without.graphs[0].untyped


def test_a_version_1_audit_without_a_demangler_leaves_cxx_values_unjudged(monkeypatch):
    """Version 1 kept no types: read where no demangler runs, scheduled_lr's rates are
    bytes of untyped C++ kernels (unsure, and said), no longer frozen values."""
    from accelgraph_cli.model import audit as model_audit

    (typed,) = audit_of("scheduled_lr").graphs
    monkeypatch.setattr(model_audit, "demangle_many", lambda names: {n: n for n in names})
    (graph,) = audit_of("scheduled_lr", as_version_1(raw("scheduled_lr"))).graphs
    assert graph.untyped and not graph.frozen
    assert {(d.node, d.argument, d.at) for d in typed.frozen} <= {
        (d.node, d.argument, d.at) for d in graph.differences if d.kind == "unsure"}


def test_a_value_judged_by_its_type_stays_a_value_whatever_its_effect():
    """scheduled_lr's rate is a C++ kernel's float argument: judged by its type, frozen;
    findings that say it changed nothing do not clear it."""
    document = raw("scheduled_lr")
    (graph,) = load_audit(copy.deepcopy(document), "scheduled_lr").graphs
    units = [[d.node, d.argument, d.at] for d in graph.frozen]
    effects = document["graphs"][0]["effects"]
    effects["tested"] = sorted({tuple(u) for u in effects["tested"]} | {tuple(u) for u in units})
    effects["tested"] = [list(u) for u in effects["tested"]]
    effects["changed"] = []
    (again,) = load_audit(document, "scheduled_lr").graphs
    assert [(d.kind, d.first) for d in again.frozen] == [(d.kind, d.first) for d in graph.frozen]


def test_a_graph_not_tried_says_why(cli, tmp_path):
    """Findings whose note says nothing was tried leave the bytes unsure, and the audit shows
    the note."""
    document = raw("functor_alpha")
    document["graphs"][0]["effects"] = {
        "tested": [], "changed": [],
        "note": "not tested: two replays from the same bytes computed different outputs"}
    path = tmp_path / "a.json"
    path.write_text(json.dumps(document))
    code, out, err = cli("audit", path)
    assert code == 0, err
    assert "effect test: not tested: two replays from the same bytes computed different" in out
    assert "the effect test did not run on 'step'" in " ".join(out.split())
    code, out, _err = cli("audit", path, "--json")
    graph = json.loads(out)["graphs"][0]
    assert graph["effects_note"].startswith("not tested: two replays")
    assert [d["kind"] for d in graph["differences"]] == ["unsure"]


def test_json_names_read_bytes_frozen(cli):
    code, out, _err = cli("audit", AUDITS / "functor_alpha.json", "--json")
    assert code == 1
    (difference,) = json.loads(out)["graphs"][0]["differences"]
    assert (difference["kind"], difference["frozen"]) == ("read", True)


# -- what each part reads as, at its edges (the mutation run's survivors) -------------------

def test_the_json_of_a_saved_audit_is_pinned(cli):
    """functor_alpha's audit as --json prints it: every key at every level, and the values
    read from the recording (users' scripts read these names)."""
    code, out, _err = cli("audit", AUDITS / "functor_alpha.json", "--json")
    assert code == 1
    document = json.loads(out)
    (graph,) = document.pop("graphs")
    (difference,) = graph.pop("differences")
    assert document == {
        "scenario": "tests/frozen_values/functor_alpha.py", "params": {"n": 4096},
        "device": raw("functor_alpha")["device"], "frozen": 1, "origins_off": None,
        "origins_failed": None, "passed": False, "verdict": verdict(audit_of("functor_alpha"))[1]}
    assert graph == {
        "name": "step", "nodes": 1, "kernels": 1, "copies": 0, "arguments": 3, "nested": 0,
        "captured": 2, "steps": 2, "untyped": [], "mismatch": None, "effects_note": None,
        "effects_skipped": False, "frozen": 1}
    assert difference == {
        "node": "graph_0_node_0", "kernel": difference["kernel"], "argument": 1, "label": "1",
        "at": 0, "size": 4, "kind": "read", "frozen": True, "first": "1.0", "second": "2.0",
        "read_at": 0, "read_size": 4, "step": 2, "first_hex": "0000803f", "second_hex": "00000040",
        "origin": {"file": "tests/frozen_values/functor_alpha.py", "line": 22,
                   "function": "step",
                   "code": 'state["y"].add_(state["x"], alpha=float(state["count"]))',
                   "via": ""}}
    assert "CUDAFunctor_add" in difference["kernel"]


def test_each_kind_says_what_replay_does_with_it():
    from accelgraph_cli.model.audit import KINDS, Difference

    starts = {
        "value": "frozen value: replay passes the first step's every time",
        "offset": "frozen offset: replay uses the first step's position every time",
        "buffer": "frozen buffer: replay uses the first step's buffer every time",
        "launch": "frozen launch shape: replay launches the first step's grid every time",
        "read": "frozen bytes inside a struct argument: the later steps run with the first "
                "step's bytes there compute other outputs",
        "elsewhere": "address(es) into device memory outside the state, another each step",
        "unsure": "byte range(s) inside struct or one-byte arguments that differ and are not "
                  "addresses: not judged",
        "no_effect": "byte range(s) inside struct arguments that differ with no effect: the "
                     "later steps run with the first step's there compute the same outputs",
    }
    assert set(starts) == set(KINDS)
    for kind, start in starts.items():
        d = Difference("n", "k", 0, "0", 0, 4, kind, "1", "2", "01", "02")
        assert d.what().startswith(start), kind
        assert d.frozen == (kind in ("value", "offset", "buffer", "launch", "read"))


def test_a_place_is_shown_by_its_paths_or_its_kind():
    from accelgraph_cli.model.audit import Place

    assert Place("state", ("state['a']", "state['b']"), 0).shown() == "state['a'] = state['b']"
    assert Place("state", ("state['a']",), 4096).shown() == "state['a'] + 4,096 B"
    assert Place("device").shown() == "device memory outside the state"
    assert Place("none").shown() == "no known allocation"


@pytest.mark.parametrize("offset,size,units", [
    (0, 4, [(0, 4)]), (4, 8, [(0, 8)]), (0, 8, [(0, 8)]), (0, 24, [(0, 8), (8, 8), (16, 8)]),
    (4, 12, [(0, 4), (4, 8)]), (7, 16, [(0, 1), (1, 8), (9, 7)]), (12, 12, [(0, 4), (4, 8)])])
def test_arguments_are_cut_at_the_parameter_spaces_words(offset, size, units):
    """An argument of 8 bytes or less is one unit wherever it lies; a larger one is cut where
    the parameter space's 8-byte words begin."""
    assert _units(offset, size) == units


@pytest.mark.parametrize("raw,shown", [
    (b"\xff", "-1"), (b"\xfe\xff", "-2"),
    (((1 << 24) - 1).to_bytes(4, "little"), "16777215"),
    ((1 << 24).to_bytes(4, "little"), "0x01000000"),  # as a float, too small to be one
    ((-5).to_bytes(4, "little", signed=True), "-5"),
    (struct.pack("<f", 2.0), "2.0"), (struct.pack("<f", 1e29), "1e+29"),
    (struct.pack("<f", 1e-31), "0x0c01ceb3"), (struct.pack("<f", float("inf")), "0x7f800000"),
    (struct.pack("<d", 0.123456789012), "0.123456789012"),
    (((1 << 40) - 1).to_bytes(8, "little"), "1099511627775"),
    ((1 << 40).to_bytes(8, "little"), "0x0000010000000000"),
    (b"\x01\x02\x03", "0x030201"),
])
def test_a_unit_reads_as_the_likelier_number(raw, shown):
    assert shown_value(raw) == shown


def test_judged_units_follow_the_kernels_declarations():
    """Which units are values: an extern "C" kernel's whole 2, 4 and 8-byte arguments; a
    C++ kernel's where its parameter type is a number or a pointer; CuPy's own kernels'
    array structs, and their indexer's size and shape words (not its index)."""
    from accelgraph_cli.model.audit import _judged

    extern_c = {"name": "saxpy4", "args": [{}, {}, {}]}
    assert [_judged(extern_c, 0, 0, n, n, {}) for n in (1, 2, 3, 4, 8, 16)] == [
        False, True, False, True, True, False]
    assert not _judged(extern_c, 0, 8, 8, 16, {})  # a word of a struct: not CuPy's
    cxx = {"name": "_Z1fif", "args": [{}, {}]}
    types = {"_Z1fif": ["int", "Functor<float>"]}
    assert _judged(cxx, 0, 0, 4, 4, types) and not _judged(cxx, 1, 0, 4, 4, types)
    assert not _judged(cxx, 0, 0, 4, 4, {"_Z1fif": None})  # untyped
    cupy = {"name": "cupy_multiply", "args": [{}, {}, {}]}
    assert _judged(cupy, 0, 8, 8, 32, {})  # an array's size word
    assert not _judged(cupy, 2, 8, 8, 32, {})  # a 32-byte last argument is no indexer
    # the last argument, a 3-D indexer: size (0), shape (8, 16, 24), then the index (32..)
    assert [_judged(cupy, 2, at, 8, 56, {}) for at in (0, 8, 16, 24, 32, 40, 48)] == [
        True, True, True, True, False, False, False]
    assert _judged(cupy, 2, 0, 8, 8, {})  # a whole 8-byte argument: a scalar
    assert not _judged(cupy, 2, 0, 8, 16, {})  # a 16-byte last struct: no indexer's layout


def test_an_address_moved_out_of_the_state_is_a_frozen_buffer_and_nowhere_a_value():
    """mlp_decode's second step with a state pointer moved: into device memory the state
    does not hold, a frozen buffer; to where no allocation is, not an address at all (a
    value: accelgraph's kernels are extern "C")."""
    document = raw("mlp_decode")
    state = {entry["start"]: entry for entry in document["state"]}
    graph = document["graphs"][0]
    others = [a for a in graph["allocations"]
              if not any(s <= a[0] < s + e["size"] for s, e in state.items())]
    assert others, "the recording holds no device allocation outside the state"
    for target, kind in ((others[0][0], "buffer"), (None, "value")):
        changed = copy.deepcopy(document)
        for node in _second_step(changed):
            arg = next((a for a in node["args"]
                        if int.from_bytes(bytes.fromhex(a["hex"]), "little") in state), None)
            if arg is not None:
                # nowhere: a gigabyte past every allocation the recording found
                nowhere = max(a + n for a, n in [*graph["allocations"],
                                                 *((s, e["size"]) for s, e in state.items())])
                moved = target if target is not None else nowhere + (1 << 30)
                arg["hex"] = moved.to_bytes(8, "little").hex()
                break
        (difference,) = load_audit(changed, "mlp_decode").graphs[0].frozen
        assert difference.kind == kind
        if kind == "buffer":
            assert difference.second == "device memory outside the state"


# -- the effect test's runs, graph by graph (the replays faked) ------------------------------

class _FakeTrials:
    """Stands for run/audit's _Trials: ``failures`` maps a graph's name to what its run
    raises."""

    def __init__(self, failures: dict) -> None:
        self.failures, self.ran, self.closed = failures, [], False

    def run(self, raw: dict, candidates: dict, steps: int) -> dict:
        self.ran.append(raw["name"])
        if raw["name"] in self.failures:
            raise self.failures[raw["name"]]
        return {"tested": [], "changed": [], "note": None}

    def close(self) -> None:
        self.closed = True


def _effect_runs(monkeypatch, failures: dict, *, snapshot=True, outputs=True):
    """run/audit._effect_tests over three graphs that each have units to try, with the
    replays faked: each graph's effects, and the fake trials."""
    from types import SimpleNamespace

    from accelgraph_cli.model import audit as model_audit
    from accelgraph_cli.run import audit as run_audit

    made = []

    def trials(result):
        made.append(_FakeTrials(failures))
        return made[-1]

    monkeypatch.setattr(run_audit, "_Trials", trials)
    monkeypatch.setattr(model_audit, "effect_candidates", lambda raw, state, steps: {0: [(0, 0, 4)]})
    result = SimpleNamespace(snapshot=object() if snapshot else None, scenario=SimpleNamespace(
        outputs_fn=(lambda state: {}) if outputs else None))
    graphs = [{"name": name} for name in ("a", "b", "c")]
    run_audit._effect_tests(result, graphs, [])
    return {g["name"]: g["effects"]["note"] for g in graphs}, made


def test_a_failing_graph_is_said_and_the_others_still_tried(monkeypatch):
    from accelgraph_cli.run.audit import _Unstable

    notes, (trials,) = _effect_runs(monkeypatch, {"a": ValueError("node refused"),
                                                  "b": _Unstable("replays differ")})
    assert notes == {"a": "not tested: node refused", "b": "not tested: replays differ",
                     "c": None}
    assert trials.ran == ["a", "b", "c"] and trials.closed


def test_a_graph_left_with_other_bytes_stops_the_trials_after_it(monkeypatch):
    """Later trials replay the earlier graphs first: one that could not get its own bytes
    back would spoil them, so they are not run, and said."""
    from accelgraph_cli.run.audit import _Stuck

    notes, (trials,) = _effect_runs(monkeypatch, {"b": _Stuck("its kernels could not be given "
                                                              "their own arguments back (x)")})
    assert notes["a"] is None
    assert notes["b"] == "not tested: its kernels could not be given their own arguments back (x)"
    assert notes["c"] == ("not tested: graph 'b', replayed before it, could not be given its "
                          "own arguments back")
    assert trials.ran == ["a", "b"] and trials.closed


@pytest.mark.parametrize(("snapshot", "outputs", "why"), [
    (False, True, "the state was not saved at capture"),
    (True, False, "the scenario has no outputs() to compare"),
])
def test_nothing_to_compare_tries_nothing_and_says_why(monkeypatch, snapshot, outputs, why):
    notes, made = _effect_runs(monkeypatch, {}, snapshot=snapshot, outputs=outputs)
    assert notes == dict.fromkeys("abc", f"not tested: {why}")
    assert not made  # no second state is made


def test_a_value_seen_only_in_a_later_graphs_outputs_is_read():
    """seen_later: ``scale`` writes only an intermediate that ``finish`` copies into the
    output; the effect test compared the outputs after the graphs that follow too, and
    found the scale read (it is no output of ``scale``'s own)."""
    document = raw("seen_later")
    graphs = {g.name: g for g in audit_of("seen_later").graphs}
    assert list(graphs) == ["scale", "finish"]
    assert not graphs["finish"].frozen
    (difference,) = graphs["scale"].frozen
    # mul's 8-byte functor: a byte of its own, padding, then the float scale at byte 4
    assert (difference.kind, difference.size) == ("read", 8)
    assert [struct.unpack("<f", bytes.fromhex(h)[4:])[0]
            for h in (difference.first_hex, difference.second_hex)] == [1.0, 2.0]
    assert document["graphs"][0]["effects"]["changed"] == [
        [difference.node, difference.argument, difference.at]]
    # shown as the float that changed, where it lies, not as the 8 bytes read as a double
    assert (difference.first, difference.second, difference.at, difference.shown_at) == (
        "1.0", "2.0", 0, 4)


def test_the_scale_inside_a_functor_is_shown_as_its_float_at_its_byte(cli):
    """The table and --json of seen_later's recorded audit: the scale 1.0 then 2.0 at
    byte 4 of argument 1, not 0.0078125... and 2.0000000075 (the word read as a double)."""
    code, out, _err = cli("audit", str(AUDITS / "seen_later.json"), "--json")
    (difference,) = [d for g in json.loads(out)["graphs"] for d in g["differences"]]
    assert code == 1
    assert (difference["first"], difference["second"]) == ("1.0", "2.0")
    assert (difference["at"], difference["size"], difference["read_at"],
            difference["read_size"]) == (0, 8, 4, 4)
    code, out, _err = cli("audit", str(AUDITS / "seen_later.json"))
    assert code == 1
    row = next(line for line in out.splitlines() if "seen_later.py:24" in line)
    assert re.search(r"│\s*1 \+4 \(4 B\)\s*│\s*1\.0\s*│\s*2\.0\s*│", row), row
    assert "0.0078" not in out


def _f32(value: float) -> float:
    """``value`` rounded to a float32, as a Python float (a double)."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


@pytest.mark.parametrize("first,second,shown", [
    # a float at byte 4 beside a constant member: the float
    (b"\x01\x00\x01\x01" + struct.pack("<f", 1.0),
     b"\x01\x00\x01\x01" + struct.pack("<f", 2.0), (4, "1.0", "2.0")),
    # an int at byte 0 beside a member: read whole as hex (an address's shape), left whole
    (struct.pack("<iI", 7, 0xDEADBEEF), struct.pack("<iI", 9, 0xDEADBEEF), None),
    # an int at byte 4 whose whole reads as an integer (12884901889): an int64 for all the
    # audit can tell, left whole
    (b"\x01\x00\x00\x00" + struct.pack("<i", 3), b"\x01\x00\x00\x00" + struct.pack("<i", 4),
     None),
    # a double whose low half is zero reads plainly whole: 1.0, not 1.875
    (struct.pack("<d", 1.0), struct.pack("<d", 2.0), None),
    # a halved learning rate as a double: 0.00025, not 0.689 at byte 4
    (struct.pack("<d", 2.5e-4), struct.pack("<d", 1.25e-4), None),
    # a double no host picks whose high half alone changed reads no plainer by half
    (struct.pack("<d", 1 / 3), struct.pack("<d", 2 / 3), None),
    # an int64 (2**32, a size) and an address's shape stay whole
    (struct.pack("<q", 1 << 32), struct.pack("<q", 0), None),
    (struct.pack("<Q", 0x7F0000200000), struct.pack("<Q", 0x7F0000400000), None),
    # a float beside a member changed by one ulp reads alike by half: left whole
    (b"\x01\x00\x01\x01" + struct.pack("<f", 1.0),
     b"\x01\x00\x01\x01" + struct.pack("<f", 1.0000001), None),
    # both halves differ: one 8-byte number
    (struct.pack("<d", 0.1), struct.pack("<d", 0.3), None),
    # a float at byte 0 beside a constant one
    (struct.pack("<ff", 1.0, 0.0078125), struct.pack("<ff", 2.0, 0.0078125), (0, "1.0", "2.0")),
    # 0.0 then 1.0 at byte 4: the first whole reads as an integer (not plain), the second
    # as a float no host picks
    (b"\x01\x00\x01\x01" + struct.pack("<f", 0.0), b"\x01\x00\x01\x01" + struct.pack("<f", 1.0),
     (4, "0", "1.0")),
    # the first whole plain (the integer 65537), the second not: read by half
    (struct.pack("<If", 65537, 0.0), struct.pack("<If", 65537, 1.0), (4, "0", "1.0")),
    # a float32 widened to a double (a float32 tensor's .item()), halved or doubled: only
    # its high half changes, which alone reads as another float (0.814): left whole
    (struct.pack("<d", _f32(1e-3)), struct.pack("<d", _f32(5e-4)), None),
    (struct.pack("<d", _f32(0.1)), struct.pack("<d", _f32(0.2)), None),
    (struct.pack("<d", _f32(0.9)), struct.pack("<d", _f32(0.45)), None),
    # a half that reads plainly in one step only: left whole
    (struct.pack("<If", 1, 1.0), struct.pack("<If", 1, 1.234567), None),
    (struct.pack("<If", 1, 1.234567), struct.pack("<If", 1, 1.0), None),
])
def test_a_struct_unit_is_read_by_the_half_that_differs_where_that_reads_plainly(
        first, second, shown):
    assert _half_reading(first, second, shown_value(first), shown_value(second)) == shown


@pytest.mark.parametrize("text,plain", [
    ("1.0", True), ("-0.000125", True), ("1e-05", True), ("1.23456", True),
    ("1.234567", False), ("2.00000000747968", False), ("16777215", True), ("-16777215", True),
    ("16777216", False), ("0x7f", False), ("1.281939e-28", False), ("120000.0", True),
    ("1.23456e-05", True), ("-1.234567e+20", False),
])
def test_a_plain_number_is_one_a_host_would_pick(text, plain):
    assert _plain(text) is plain


def test_a_whole_8_byte_value_is_never_read_by_half():
    """seen_later's mul kernel, recorded: its 8-byte functor (a C++ struct) is unsure and
    read by the half that differs. The same node renamed as an extern "C" kernel (no types:
    an 8-byte argument is then a double or an int64, a judged value) keeps the whole."""
    (difference,) = audit_of("seen_later").graphs[0].differences
    assert (difference.kind, difference.first, difference.second, difference.shown_at) == (
        "read", "1.0", "2.0", 4)
    document = raw("seen_later")
    graph = document["graphs"][0]
    for node in graph["nodes"]:
        node["name"] = "scale_rows"
    graph["types"], graph["effects"] = {}, None
    (difference,) = load_audit(document, "seen_later").graphs[0].differences
    assert (difference.kind, difference.first, difference.second, difference.read_at) == (
        "value", "0.00781250002921752", "2.00000000747968", None)


def test_a_second_state_that_cannot_be_made_is_said_once(monkeypatch):
    """setup() raising the second time: every graph says why, and setup() is not run again
    for each graph."""
    from types import SimpleNamespace

    from accelgraph_cli.model import audit as model_audit
    from accelgraph_cli.run import audit as run_audit

    calls = []

    def trials(result):
        calls.append(result)
        raise RuntimeError("setup failed")

    monkeypatch.setattr(run_audit, "_Trials", trials)
    monkeypatch.setattr(model_audit, "effect_candidates", lambda raw, state, steps: {0: [(0, 0, 4)]})
    result = SimpleNamespace(snapshot=object(), scenario=SimpleNamespace(outputs_fn=lambda s: {}))
    graphs = [{"name": name} for name in ("a", "b")]
    run_audit._effect_tests(result, graphs, [])
    assert [g["effects"]["note"] for g in graphs] == [
        "not tested: a second state could not be made (setup failed)"] * 2
    assert len(calls) == 1


def test_the_steps_option_is_bounded_as_the_model_reads(cli):
    """--steps takes 2 to 64, what a saved audit may hold (model/audit.py's bounds)."""
    from accelgraph_cli.model.audit import MAX_STEPS, STEPS

    assert (STEPS, MAX_STEPS) == (2, 64)
    from accelgraph_cli.render.run import _AUDIT_MOST

    assert _AUDIT_MOST == MAX_STEPS  # the replay hint's cap
    for bad in (STEPS - 1, MAX_STEPS + 1):
        code, _out, err = cli("audit", "saxpy", "--steps", str(bad))
        assert code == 2 and "--steps" in err, err
    code, _out, err = cli("audit", AUDITS / "host_counter.json", "--steps", "3")
    assert code == 2 and "--steps: options of a new audit" in err, err


# -- more than two steps (every_other_step, recorded with three) ---------------------------

def _scale_node(document: dict, step: int) -> dict:
    """every_other_step's saxpy node of ``step`` (1 is the first)."""
    nodes = document["graphs"][0]["nodes"]
    per = len(nodes) // document["steps"]
    return nodes[(step - 1) * per]


def test_a_value_that_changes_every_other_step_is_found_at_the_third(cli):
    """Scale 1, 1, 2: nothing differs between steps 1 and 2; the scale is frozen at step 3,
    and shown so."""
    document = raw("every_other_step")
    assert document["steps"] == 3
    (graph,) = audit_of("every_other_step").graphs
    assert (graph.steps, graph.captured) == (3, 3 * graph.nodes)
    (difference,) = graph.differences
    assert (difference.kind, difference.argument, difference.step) == ("value", 0, 3)
    assert (difference.first, difference.second) == ("1.0", "2.0")
    assert _scale_node(document, 1)["args"][0] == _scale_node(document, 2)["args"][0]
    code, out, _err = cli("audit", AUDITS / "every_other_step.json")
    assert code == 1
    text = " ".join(out.split())
    assert "later step" in text and "2.0 (step 3)" in text
    assert "compared between the first of 3 consecutive steps and each one after it" in text
    # steps 1 and 2 agree: the verdict does not say the value changes from one to the next
    assert "differ between the first step and a later one" in text
    assert "from one step to the next" not in text
    code, out, _err = cli("audit", AUDITS / "every_other_step.json", "--json")
    assert json.loads(out)["graphs"][0]["differences"][0]["step"] == 3


def test_a_value_differing_at_step_2_is_shown_with_its_step_among_three():
    document = raw("every_other_step")
    scale = _scale_node(document, 2)["args"][0]
    scale["hex"] = struct.pack("<f", 7.0).hex()
    (difference,) = audit_of("every_other_step", document).graphs[0].differences
    assert (difference.step, difference.second) == (2, "7.0")


def test_a_launch_shape_differing_only_at_step_3_is_frozen():
    document = raw("every_other_step")
    node = _scale_node(document, 3)
    node["grid"] = [node["grid"][0] + 1, 1, 1]
    (graph,) = audit_of("every_other_step", document).graphs
    (launch,) = [d for d in graph.differences if d.kind == "launch"]
    assert (launch.label, launch.step) == ("grid", 3)


def test_a_third_step_that_makes_another_graph_is_steps_differ(cli, tmp_path):
    document = raw("every_other_step")
    _scale_node(document, 3)["name"] = "another_kernel"
    (graph,) = audit_of("every_other_step", document).graphs
    assert graph.mismatch is not None and "of step 3 another_kernel" in graph.mismatch
    assert not verdict(audit_of("every_other_step", document))[0]


def test_each_later_step_is_read_and_a_frozen_reading_wins():
    """A pointer into device memory outside the state at step 2, and into a state array at
    step 3: the step-2 reading alone (elsewhere) would pass; the step-3 one is a frozen
    buffer, and is the one shown."""
    document = raw("every_other_step")
    state = {e["paths"][0]: e for e in document["state"]}
    # two blocks of device memory past the state's (as a step's own allocations would be)
    outside = max(e["start"] + e["size"] for e in state.values()) + 2**20
    document["graphs"][0]["allocations"] += [[outside, 4096], [outside + 8192, 4096]]
    for step, address in ((1, outside), (2, outside + 8192), (3, state["state['y']"]["start"])):
        _scale_node(document, step)["args"][1]["hex"] = address.to_bytes(8, "little").hex()
    (graph,) = audit_of("every_other_step", document).graphs
    (pointer,) = [d for d in graph.differences if d.argument == 1]
    assert (pointer.kind, pointer.step, pointer.second) == ("buffer", 3, "state['y']")
    assert pointer in graph.frozen
    # without step 3's pointer into the state, both steps point outside it: elsewhere
    _scale_node(document, 3)["args"][1]["hex"] = (outside + 8192).to_bytes(8, "little").hex()
    (graph,) = audit_of("every_other_step", document).graphs
    (pointer,) = [d for d in graph.differences if d.argument == 1]
    assert (pointer.kind, pointer.step) == ("elsewhere", 2) and pointer not in graph.frozen


def _trials_with(monkeypatch, outputs: list, undo_error: Exception | None):
    """run/audit's _Trials over a two-node, two-step graph, its replays' outputs taken from
    ``outputs`` in turn and its Substitution faked (its undo raising ``undo_error``)."""
    from types import SimpleNamespace

    import numpy

    from accelgraph_cli.cuda import audit as cuda_audit
    from accelgraph_cli.run import audit as run_audit

    undone = []

    class Swap:
        def __init__(self, graph_handle, exec_handle):
            pass

        def give(self, position, args):
            pass

        def undo(self):
            undone.append(True)
            if undo_error is not None:
                raise undo_error

    monkeypatch.setattr(cuda_audit, "Substitution", Swap)
    trials = object.__new__(run_audit._Trials)
    graph = SimpleNamespace(graph_handle=1, exec_handle=2)
    trials.result = SimpleNamespace(graph=lambda name: SimpleNamespace(graph=graph))
    base = [{"y": numpy.zeros(3)}]
    feed = iter([base, base, base, *outputs])

    def replayed(name):
        found = next(feed)
        if isinstance(found, BaseException):
            raise found
        return found

    trials.outputs = replayed
    trials.same = lambda a, b: repr(a) == repr(b)
    raw = {"name": "step", "nodes": [{"id": "graph_0_node_0", "args": [{"hex": "00000000"}]},
                                     {"id": "graph_0_node_1", "args": [{"hex": "01000000"}]}]}
    return trials, raw, undone


def test_a_trial_that_fails_and_cannot_give_the_bytes_back_is_stuck(monkeypatch):
    """Replays that differ with the first step's bytes, and an undo the driver refuses: the
    graph keeps other bytes, so the failure is _Stuck (the graphs after it are not tried),
    naming both."""
    from accelgraph_cli.run.audit import _Stuck, _Unstable

    trials, raw, undone = _trials_with(monkeypatch, [[{"y": "a"}], [{"y": "b"}]],
                                       RuntimeError("driver refused"))
    with pytest.raises(_Stuck) as stuck:
        trials.run(raw, {0: [(0, 0, 4)]})
    assert "driver refused" in str(stuck.value) and "computed different outputs" in str(
        stuck.value)
    assert isinstance(stuck.value.__cause__, _Unstable) and undone
    # the undo succeeding: the trial's own failure goes on
    trials, raw, undone = _trials_with(monkeypatch, [[{"y": "a"}], [{"y": "b"}]], None)
    with pytest.raises(_Unstable):
        trials.run(raw, {0: [(0, 0, 4)]})
    assert undone


def test_an_undo_puts_every_other_node_back_whatever_one_raises():
    """Substitution.undo: a node whose put-back raises anything (a CUDA error, the
    bindings refusing the call) is kept for the next undo; every other node is put back
    first, and the first failure is raised after."""
    from accelgraph_cli.cuda.audit import Substitution

    swap = object.__new__(Substitution)
    swap._own = {0: "own 0", 3: "own 3", 5: "own 5"}
    put_back, refusing = [], {3: TypeError("an argument the bindings refuse")}

    def put(position, params):
        if position in refusing:
            raise refusing[position]
        put_back.append((position, params))

    swap._set = put
    with pytest.raises(TypeError, match="bindings refuse"):
        swap.undo()
    assert put_back == [(0, "own 0"), (5, "own 5")] and swap._own == {3: "own 3"}
    refusing.clear()
    swap.undo()
    assert put_back[-1] == (3, "own 3") and swap._own == {}


def test_an_interrupt_during_a_trial_goes_on_as_it_is(monkeypatch):
    """Ctrl-C while a trial replays: KeyboardInterrupt, not _Stuck, even where the undo
    fails too; the bytes were still asked back."""
    trials, raw, undone = _trials_with(monkeypatch, [KeyboardInterrupt()],
                                       RuntimeError("driver refused"))
    with pytest.raises(KeyboardInterrupt):
        trials.run(raw, {0: [(0, 0, 4)]})
    assert undone


def test_types_missing_at_recording_are_said_the_same_everywhere(monkeypatch):
    """A format-2 audit whose recording could not read a kernel's types: that kernel is
    untyped wherever the audit is shown, and the verdict says it was so where recorded (a
    demangler here would change nothing), with a demangler here or without one."""
    from accelgraph_cli.render import audit as render_audit

    document = raw("gpt_decode")
    (graph,) = document["graphs"]
    name = sorted(graph["types"])[0]
    graph["types"][name] = None
    lines = set()
    for found in ("c++filt", None):
        monkeypatch.setattr(render_audit, "demangler_name", lambda found=found: found)
        passed, line = verdict(load_audit(copy.deepcopy(document), "gpt_decode"))
        assert passed and "1 C++ kernel(s) untyped (where the audit was recorded, no C++ " \
            "demangler read them" in line
        lines.add(line)
    assert len(lines) == 1


def test_a_version_1_audit_of_more_than_two_steps_is_refused():
    """Version 1 only ever compared two steps: one that says three is not one it wrote."""
    document = as_version_1(raw("host_counter"))
    assert load_audit(copy.deepcopy(document), "v1").graphs  # read as it is
    document["steps"] = 3
    with pytest.raises(AuditLoadError, match="a version 1 audit compares 2 steps, not 3"):
        load_audit(document, "v1")


# -- what the mutation run of 2026-12-07 found untested (tests/mutation/REPORT.md, run 11) ----

@pytest.mark.parametrize("key,changed,shown", [
    ("grid", lambda v: [v[0] + 1, v[1], v[2]], None),
    ("block", lambda v: [v[0] + 32, v[1], v[2]], None),
    ("shared_mem", lambda v: v + 16, None),
    ("shared_mem", lambda v: None, "–"),  # a size the recording could not read: shown "–"
])
def test_every_launch_size_that_changes_is_frozen_with_what_replay_keeps(key, changed, shown):
    """grid, block and dynamic shared memory each: a launch difference of the first step's
    node, naming the size, both steps' shapes, no bytes, the node's line."""
    document = raw("functor_alpha")
    first = document["graphs"][0]["nodes"][0]
    second = _second_step(document)[0]
    second[key] = changed(second[key])
    (graph,) = load_audit(document, "functor_alpha").graphs
    (d,) = [d for d in graph.differences if d.kind == "launch"]
    as_shown = (lambda v: "x".join(map(str, v))) if key != "shared_mem" else str
    assert (d.node, d.kernel, d.argument, d.label, d.at, d.size) == (
        first["id"], first["name"], -1, key, 0, 0)
    assert (d.first, d.second) == (as_shown(first[key]), shown or as_shown(second[key]))
    assert (d.first_hex, d.second_hex, d.step) == ("", "", 2)
    assert (d.origin.file, d.origin.line) == ("tests/frozen_values/functor_alpha.py", 22)
    assert d.frozen and d.what().startswith("frozen launch shape")


def test_the_innermost_frame_in_the_scenario_file_is_the_origin_not_a_helper_inside_it():
    """A helper of the user's own (a user frame, innermost) called from the scenario: the
    audit names the scenario's line, found by the document's scenario path."""
    document = raw("functor_alpha")
    for entry in document["graphs"][0]["origins"].values():
        entry["stack"].insert(0, ["my_project/helpers.py", 7, "add_scaled", True])
    (d,) = load_audit(document, "functor_alpha").graphs[0].frozen
    assert (d.origin.file, d.origin.line, d.origin.via) == (
        "tests/frozen_values/functor_alpha.py", 22, "helpers.add_scaled")
    document["scenario"] = "elsewhere.py"  # no frame in it: the innermost user frame
    (d,) = load_audit(document, "functor_alpha").graphs[0].frozen
    assert (d.origin.file, d.origin.line) == ("my_project/helpers.py", 7)


@pytest.mark.parametrize("value,shown", [("no CUPTI here", "no CUPTI here"), (None, None)])
def test_why_no_node_has_a_line_is_read_from_the_document(value, shown):
    document = raw("functor_alpha")
    document["origins_off"], document["origins_failed"] = value, value
    audit = load_audit(document, "functor_alpha")
    assert (audit.origins_off, audit.origins_failed) == (shown, shown)


def test_an_audit_of_64_steps_is_read_and_its_last_step_compared():
    """The most steps an audit compares: a value that changes only at the 64th is found
    there."""
    document = raw("host_counter")
    (graph,) = document["graphs"]
    first, second = graph["nodes"]
    nodes = []
    for k in range(MAX_STEPS):
        node = copy.deepcopy(second if k == MAX_STEPS - 1 else first)
        node["id"] = f"graph_0_node_{k}"
        nodes.append(node)
    graph["nodes"], document["steps"] = nodes, MAX_STEPS
    graph["origins"] = {"graph_0_node_0": graph["origins"]["graph_0_node_0"]}
    graph.pop("effects", None)
    (audit,) = load_audit(document, "host_counter").graphs
    (d,) = audit.frozen
    assert (audit.steps, audit.nodes, d.kind, d.step) == (MAX_STEPS, 1, "value", MAX_STEPS)


def test_a_node_without_arguments_before_the_kernels_is_passed_over():
    """A node kind whose arguments an audit does not read (an empty node), first in each
    step: the kernel after it is still compared."""
    document = raw("host_counter")
    (graph,) = document["graphs"]
    first, second = graph["nodes"]
    graph["nodes"] = [{"id": "graph_0_node_0", "kind": "empty"}, dict(first, id="graph_0_node_1"),
                      {"id": "graph_0_node_2", "kind": "empty"}, dict(second, id="graph_0_node_3")]
    graph["origins"] = {"graph_0_node_1": graph["origins"][first["id"]]}
    graph.pop("effects", None)
    (audit,) = load_audit(document, "host_counter").graphs
    assert (audit.nodes, audit.kernels) == (2, 1)
    (d,) = audit.frozen
    assert (d.node, d.kind) == ("graph_0_node_1", "value")


@pytest.mark.parametrize("change", [
    _set(["graphs", 0, "allocations"], [[0, 8], [2**64 - 1, 1]]),
    _set(["state"], [{"paths": ["x"], "start": 0, "size": 1}]),
    _set(["graphs", 0, "nodes", 0, "grid"], [0, 1, 1]),
    _set(["graphs", 0, "nodes", 1, "shared_mem"], 0),
])
def test_the_edges_a_recording_may_hold_are_read(change):
    """Address 0 and 2**64 - 1, a one-byte state allocation at 0, counts of 0: read, not
    refused (the refused side of each edge is in BROKEN)."""
    document = raw("host_counter")
    change(document)
    assert load_audit(document, "host_counter").graphs


def test_an_argument_that_ends_at_the_parameter_spaces_end_is_read():
    document = raw("host_counter")
    for node in document["graphs"][0]["nodes"]:
        last = node["args"][-1]
        last["offset"] = 32_764 - last["size"]
    assert load_audit(document, "host_counter").graphs


def test_an_address_one_past_an_allocation_is_not_in_it():
    places = _Places([(4096, 256, ("x",))], [(8192, 64)])
    assert places.of(4096 + 255) == Place("state", ("x",), 255)
    assert places.of(4096 + 256).kind == "none"
    assert places.of(8192 + 63).kind == "device" and places.of(8192 + 64).kind == "none"


def test_a_cpp_argument_past_the_types_read_is_not_judged():
    """A demangled signature with fewer types than the kernel's arguments (seen_later's mul
    kernel given its first two types only, its functor's recorded as a float): the
    argument past them is not judged as a number, the ones within are."""
    document = raw("seen_later")
    graph = document["graphs"][0]
    (name,) = graph["types"]
    graph["effects"] = None
    graph["types"][name] = ["int", "double"]  # the functor read as a number: a value
    (difference,) = load_audit(document, "seen_later").graphs[0].differences
    assert (difference.argument, difference.kind) == (1, "value")
    graph["types"][name] = ["int"]  # no type for argument 1: not judged
    (difference,) = load_audit(document, "seen_later").graphs[0].differences
    assert (difference.argument, difference.kind) == (1, "unsure")


@pytest.mark.parametrize("value,shown", [
    (struct.pack("<q", -2), "-2"), (struct.pack("<q", -(1 << 39)), str(-(1 << 39))),
    (struct.pack("<q", 1 << 40), "0x0000010000000000"),  # (as a double: far too small)
])
def test_an_8_byte_integer_is_read_signed(value, shown):
    assert shown_value(value) == shown


@pytest.mark.parametrize("stem,change,message", [
    ("host_counter", _set(["graphs", 0, "nodes", 0, "grid"], [1]),
     "graph 'step': node 0: 'grid' must be three counts"),
    ("host_counter", _set(["graphs", 0, "allocations"], [[1]]),
     "graph 'step': 'allocations' must be [start, size] pairs of addresses"),
    ("host_counter", lambda d: d["graphs"][0].pop("types"),
     "graph 'step': 'types' missing: version 2 records each C++ kernel's parameter types"),
    ("host_counter", _set(["version"], 1),
     "graph 'step': 'types' in a version 1 audit, which has none"),
    ("host_counter", _set(["graphs", 0, "name"], 5), "each graph must be an object with a 'name'"),
    ("host_counter", _set(["graphs", 0, "origins"], [1]),
     "graph 'step': 'origins' must map node ids to their stacks"),
    ("host_counter", _set(["graphs", 0, "effects"], [1]), "graph 'step': 'effects' must be an object"),
    ("gpt_decode", lambda d: d["graphs"][0]["types"].clear(),
     "graph 'step': 'types' lacks the kernel '_Z"),
])
def test_a_broken_graph_is_named_in_its_error(stem, change, message):
    """Each error of a graph names the file, the graph (and the node) and what is wrong,
    word for word as users see it."""
    document = raw(stem)
    change(document)
    with pytest.raises(AuditLoadError) as caught:
        load_audit(document, "saved.json")
    assert str(caught.value).startswith(f"saved.json: {message}"), str(caught.value)


def test_a_memset_node_counts_as_a_copy_or_memset():
    """seen_later's copy node read as a memset (a node kind CUDA gives a memset): counted
    with the copies, compared as one."""
    document = raw("seen_later")
    finish = document["graphs"][1]
    for node in finish["nodes"]:
        node["kind"] = "memset"
    (_scale, graph) = load_audit(document, "seen_later").graphs
    assert (graph.kernels, graph.copies) == (0, 1)


def test_why_steps_that_differ_cannot_be_compared_is_said_in_full():
    """Both mismatches, word for word: a node count no number of alike steps makes, and a
    node of another kind (a copy where a kernel was)."""
    document = raw("host_counter")
    document["graphs"][0]["nodes"].append(copy.deepcopy(document["graphs"][0]["nodes"][0]))
    (graph,) = load_audit(document, "host_counter").graphs
    assert graph.mismatch == (
        "3 node(s) in all, which 2 alike steps cannot make: a later step made a different "
        "graph from the first (its structure depends on a host value, such as a step counter)")
    document = raw("host_counter")
    second = _second_step(document)[0]
    second.update(kind="memcpy", name=None)
    (graph,) = load_audit(document, "host_counter").graphs
    assert graph.mismatch == (
        "node 0 of the first step is saxpy4, of step 2 a memcpy node: a later step made a "
        "different graph from the first (its structure depends on a host value)")


def test_a_recording_without_allocations_or_state_reads_as_none_found():
    """Both keys may be absent (nothing found): read as empty, the differences then placed
    nowhere known."""
    document = raw("swapped_buffers")
    document.pop("state")
    for graph in document["graphs"]:
        graph.pop("allocations")
    differences = [d for g in load_audit(document, "swapped_buffers").graphs
                   for d in g.differences]
    # the swapped state buffers, with no state to place them: two pointer values, in hex
    assert [(d.kind, d.first[:2], d.second[:2]) for d in differences] == [
        ("value", "0x", "0x"), ("value", "0x", "0x")]
    assert [d.kind for g in audit_of("swapped_buffers").graphs for d in g.differences] == [
        "buffer", "buffer"]
