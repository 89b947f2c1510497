"""Per-node profiles, read from raw profiles recorded on a GPU by `make fixtures`
(tests/data/profiles): the computation, the origins, the CLI on a saved profile, and one
clear error for every broken document."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from statistics import median

import pytest
from _documents import setter as _set
from _paths import DATA, ROOT

from accelgraph_cli.model.graph_model import GraphModel
from accelgraph_cli.model.profile import ProfileLoadError, graph_profile, load_profile

PROFILES = DATA / "profiles"
RECORDED = ("mlp_decode", "fork_join", "memory_ops", "gpt_decode", "train_step")


def raw(stem: str) -> dict:
    path = PROFILES / f"{stem}.json"
    assert path.is_file(), f"{path} is missing: record it with `make fixtures` on a GPU"
    return json.loads(path.read_text())


@pytest.fixture(params=RECORDED)
def recorded(request):
    return request.param, raw(request.param)


def test_every_recorded_graph_computes(recorded):
    stem, document = recorded
    profile = load_profile(document, stem)
    assert profile.graphs
    for graph in profile.graphs:
        assert graph.nodes, f"{stem}/{graph.name}: no node ran"
        assert graph.step_us > 0 and graph.busy_us > 0
        for node in graph.nodes:
            # every node ran once a replay (CUPTI dropped nothing in these recordings)
            assert node.runs == graph.replays == graph.iters, (stem, node.node, node.runs)
            assert 0 <= node.own_us <= node.span_us + 1e-9, (stem, node.node)
        # the nodes' runs lie within a replay: the busy time is no longer than the replay
        assert graph.busy_us <= graph.traced_step_us * 1.05, (stem, graph.busy_us)
        model = GraphModel.from_json(next(g for g in document["graphs"]
                                          if g["name"] == graph.name)["model"])
        if model.max_width() == 1:  # a chain: own times add up to the busy time, less gaps
            assert graph.own_total_us <= graph.busy_us * 1.02 + 0.1, (stem, graph.name)


def test_own_time_is_end_minus_ready(recorded):
    """Own time recomputed by hand from the recorded spans, for every replay of every node."""
    stem, document = recorded
    for raw_graph in document["graphs"]:
        profile = graph_profile(raw_graph, document["scenario"])
        model = GraphModel.from_json(raw_graph["model"])
        spans = raw_graph["spans"]
        for node in profile.nodes:
            owns = []
            for k, run in enumerate(spans[node.node]):
                if run is None:
                    continue
                start, end = run
                ready = _ready(model, spans, node.node, k)
                owns.append((end - max(start, ready if ready is not None else start)) / 1e3)
            assert node.own_us == pytest.approx(median(owns)), (stem, node.node)


def _ready(model, spans, node_id, k):
    """The latest end of the node's nearest timed ancestors in replay k (None: none)."""
    ends = []
    for parent in model.parents(node_id):
        if parent in spans:
            if spans[parent][k] is not None:
                ends.append(spans[parent][k][1])
        else:
            end = _ready(model, spans, parent, k)
            if end is not None:
                ends.append(end)
    return max(ends, default=None)


def test_mlp_decode_nodes_come_from_the_scenarios_lines():
    profile = load_profile(raw("mlp_decode"), "mlp_decode")
    (graph,) = profile.graphs
    kernels = [n for n in graph.nodes if n.kind == "kernel"]
    assert len(kernels) == 4
    source = (ROOT / "scenarios" / "mlp_decode.py").read_text().splitlines()
    calls = []
    for node in kernels:
        origin = node.origin
        assert origin is not None, node.node
        assert origin.file.endswith("scenarios/mlp_decode.py")
        assert origin.function == "step"
        # the recorded line is the line of the committed scenario, and it is the call
        assert source[origin.line - 1].strip() == origin.code
        calls.append(origin.via)
    # two GEMMs made by each wrapper: the split-K kernel, then its reduction
    assert calls == ["kernels.sgemm_bias_gelu"] * 2 + ["kernels.sgemm_softmax"] * 2


def test_torch_nodes_come_from_the_scenario():
    profile = load_profile(raw("gpt_decode"), "gpt_decode")
    lines = {n.origin.line for g in profile.graphs for n in g.nodes if n.origin is not None}
    files = {n.origin.file for g in profile.graphs for n in g.nodes if n.origin is not None}
    assert files == {"scenarios/gpt_decode.py"}
    assert len(lines) > 3  # many lines of the step, not one


def test_backward_nodes_come_from_the_backward_call():
    """train_step: autograd's engine makes backward's nodes on a thread with no Python
    stack; they are traced to the line that waits for them, ``loss.backward()``, and no
    callback failed."""
    document = raw("train_step")
    assert document["origins_failed"] is None
    (graph,) = load_profile(document, "train_step").graphs
    assert all(n.origin is not None for n in graph.nodes)
    lines = (ROOT / "scenarios" / "train_step.py").read_text().splitlines()
    made = {}
    for node in graph.nodes:
        assert Path(node.origin.file).name == "train_step.py"
        assert lines[node.origin.line - 1].strip() == node.origin.code
        made.setdefault(node.origin.code, set()).add(node.origin.via)
    assert made["loss.backward()"] == {"_tensor.backward"}
    assert 'state["opt"].step()' in made


def test_memory_nodes_are_timed_and_host_nodes_silent():
    profile = load_profile(raw("memory_ops"), "memory_ops")
    (graph,) = profile.graphs
    kinds = {n.kind for n in graph.nodes}
    assert {"memset", "memcpy", "kernel"} <= kinds
    model_kinds = {n["id"]: n["kind"] for n in raw("memory_ops")["graphs"][0]["model"]["nodes"]}
    assert graph.silent and all(model_kinds[s] not in ("kernel", "memset") for s in graph.silent)


# -- the CLI on a saved profile (no GPU) ------------------------------------------------------

def test_cli_shows_a_saved_profile(cli):
    code, out, err = cli("profile", PROFILES / "mlp_decode.json")
    assert code == 0, err
    assert "mlp_decode.py:" in out and "own µs" in out
    assert "sgemm_skinny" in out
    assert "µs a replay" in out


def test_cli_json_round_trip(cli):
    code, out, err = cli("profile", PROFILES / "fork_join.json", "--json")
    assert code == 0, err
    document = json.loads(out)
    again = load_profile(raw("fork_join"), "fork_join").to_json()
    assert document == json.loads(json.dumps(again))


def test_cli_top_keeps_the_costliest(cli):
    (graph,) = load_profile(raw("gpt_decode"), "gpt_decode").graphs[:1]
    ranked = sorted(graph.nodes, key=lambda n: -n.own_us)
    code, out, err = cli("profile", PROFILES / "gpt_decode.json", "--top", "2")
    assert code == 0, err
    rows = [line for line in out.splitlines() if "│" in line]
    assert len(rows) == 2
    shown = {line.split()[0] for line in rows}
    assert shown == {n.node.rsplit("_", 1)[1] for n in ranked[:2]}
    assert f"{len(graph.nodes) - 2} cheaper node(s) not shown (--top)" in out


def test_cli_shows_a_gzipped_saved_profile(cli, tmp_path):
    import gzip

    path = tmp_path / "p.json.gz"
    path.write_bytes(gzip.compress((PROFILES / "mlp_decode.json").read_bytes()))
    code, out, err = cli("profile", path)
    assert code == 0, err
    assert "mlp_decode.py:55" in out


def test_a_folder_named_json_is_one_error(cli, tmp_path):
    folder = tmp_path / "d.json"
    folder.mkdir()
    code, _out, err = cli("profile", folder)
    assert code == 2 and "is a directory, not a saved profile" in err


def test_deeply_nested_json_is_one_error(cli, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    code, _out, err = cli("profile", path)
    assert code == 2 and "Traceback" not in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1, err


@pytest.mark.parametrize("option", [["--iters", "5"], ["--param", "batch=2"], ["--out", "x.json"],
                                    ["--pool", "shared"]])
def test_cli_refuses_new_profile_options_for_a_saved_one(cli, option):
    code, out, err = cli("profile", PROFILES / "mlp_decode.json", *option)
    assert code == 2
    assert option[0] in err and "saved" in err
    assert "Traceback" not in err


def test_cli_refuses_top_with_json(cli):
    code, _out, err = cli("profile", PROFILES / "mlp_decode.json", "--top", "1", "--json")
    assert code == 2 and "--top" in err


def _broken(tmp_path: Path, change) -> Path:
    document = raw("mlp_decode")
    change(document)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(document))
    return path


BROKEN = {
    "format": (_set(["format"], "other"), "not an accelgraph profile"),
    "version": (_set(["version"], 99), "version 99"),
    "version true": (_set(["version"], True), "version True"),  # True == 1 in Python
    "version float": (_set(["version"], 1.0), "version 1.0"),
    "graphs": (_set(["graphs"], []), "'graphs'"),
    "no model": (_set(["graphs", 0, "model"], KeyError), "graph model"),
    "spans type": (_set(["graphs", 0, "spans"], [1, 2]), "'spans'"),
    "span pair": (lambda d: d["graphs"][0]["spans"]["graph_0_node_0"].__setitem__(3, [5, 1]),
                  "start <= end"),
    "span count": (lambda d: d["graphs"][0]["spans"]["graph_0_node_0"].pop(), "must be 50 runs"),
    "span past 2**63": (lambda d: d["graphs"][0]["spans"]["graph_0_node_0"].__setitem__(
        3, [0, 10**400]), "start <= end"),
    "step past a double": (_set(["graphs", 0, "step_us"], 10**400), "'step_us'"),
    "iters past the most": (_set(["graphs", 0, "iters"], 10**400), "'iters'"),
    "replays past iters": (_set(["graphs", 0, "replays"], 51), "'replays'"),
    "line past 2**31": (lambda d: d["graphs"][0]["origins"]["graph_0_node_0"]["stack"][-1]
                        .__setitem__(1, 10**400), "a line from 0"),
    "scenario": (_set(["scenario"], 7), "'scenario'"),
    "two graphs one name": (lambda d: d["graphs"].append(copy.deepcopy(d["graphs"][0])),
                            "two graphs are called 'step'"),
    "unknown node": (_set(["graphs", 0, "spans", "graph_9_node_9"], [[1, 2]]), "graph_9_node_9"),
    "iters": (_set(["graphs", 0, "iters"], -1), "'iters'"),
    "step": (_set(["graphs", 0, "step_us"], "fast"), "'step_us'"),
    "origins type": (_set(["graphs", 0, "origins"], [1]), "origins"),
    "stack frame": (_set(["graphs", 0, "origins", "graph_0_node_0"], {"stack": [[1]]}), "stack"),
    "codes type": (_set(["graphs", 0, "codes"], [1]), "codes"),
    "params": (_set(["params"], [1]), "params"),
    "a cycle": (lambda d: d["graphs"][0]["model"]["edges"].append(
        ["graph_0_node_3", "graph_0_node_0"]), "has a cycle"),
    "traced step": (_set(["graphs", 0, "traced_step_us"], "x"), "'traced_step_us'"),
    "dropped": (_set(["graphs", 0, "dropped"], -1), "'dropped'"),
    "unreadable": (_set(["graphs", 0, "unreadable"], "x"), "'unreadable'"),
    "span at 2**63": (lambda d: d["graphs"][0]["spans"]["graph_0_node_0"].__setitem__(
        3, [0, 2**63]), "start <= end"),
    "line at 2**31": (lambda d: d["graphs"][0]["origins"]["graph_0_node_0"]["stack"][-1]
                      .__setitem__(1, 2**31), "a line from 0"),
    "stack frame user": (lambda d: d["graphs"][0]["origins"]["graph_0_node_0"]["stack"][-1]
                         .__setitem__(3, 1), "stack"),
    "stack entry": (_set(["graphs", 0, "origins", "graph_0_node_0"], [1]), "stack"),
    "codes value": (_set(["graphs", 0, "codes"], {"a:1": 5}), "codes"),
}
# what the error names: the graph, for a fault inside one
NOT_IN_A_GRAPH = {"format", "version", "version true", "version float", "graphs", "scenario",
                  "two graphs one name", "params"}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_profiles_are_one_error(cli, tmp_path, case):
    change, words = BROKEN[case]
    path = _broken(tmp_path, change)
    code, out, err = cli("profile", path)
    assert code == 2, (case, out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and words in err, (case, err)
    assert "Traceback" not in err
    if case not in NOT_IN_A_GRAPH:
        assert f"{path}: graph 'step': " in err, (case, err)


@pytest.mark.parametrize("text,words", [("{", "not JSON"), ('{"a": NaN}', "not JSON"),
                                        ("[1]", "not an accelgraph profile")])
def test_not_json_is_one_error(cli, tmp_path, text, words):
    path = tmp_path / "p.json"
    path.write_text(text)
    code, _out, err = cli("profile", path)
    assert code == 2 and words in err, err


def test_missing_saved_profile(cli, tmp_path):
    code, _out, err = cli("profile", tmp_path / "none.json")
    assert code == 2 and "no such file" in err


def test_a_profile_that_lost_runs_keeps_the_others_in_their_replays():
    """Runs CUPTI did not deliver (null) leave their replays out for that node, and for the
    own time of the node after it (when its input was ready is not known there): the other
    replays keep their runs and their places."""
    document = copy.deepcopy(raw("mlp_decode"))
    graph = document["graphs"][0]
    spans = graph["spans"]
    first, second, third = (f"graph_0_node_{i}" for i in range(3))
    lost = (0, 5, 7)
    for k in lost:
        spans[second][k] = None
    profile = load_profile(document, "cut")
    nodes = {n.node: n for n in profile.graphs[0].nodes}
    assert nodes[second].runs == graph["replays"] - 3
    assert nodes[first].runs == nodes[third].runs == graph["replays"]
    kept = [k for k in range(graph["replays"]) if k not in lost]
    own = [(spans[third][k][1] - max(spans[third][k][0], spans[second][k][1])) / 1e3
           for k in kept]
    assert nodes[third].own_us == pytest.approx(median(own))
    spans_third = [(e - s) / 1e3 for s, e in spans[third]]
    assert nodes[third].span_us == pytest.approx(median(spans_third))
    # the first node's figures do not move
    whole = {n.node: n for n in load_profile(raw("mlp_decode"), "x").graphs[0].nodes}
    assert nodes[first] == whole[first]


def test_span_and_busy_are_the_medians_of_the_recorded_runs(recorded):
    stem, document = recorded
    for raw_graph, graph in zip(document["graphs"], load_profile(document, stem).graphs):
        spans = raw_graph["spans"]
        for node in graph.nodes:
            assert node.span_us == pytest.approx(
                median((e - s) / 1e3 for s, e in spans[node.node])), (stem, node.node)
        busy = [(max(spans[n][k][1] for n in spans) - min(spans[n][k][0] for n in spans)) / 1e3
                for k in range(raw_graph["replays"])]
        assert graph.busy_us == pytest.approx(median(busy)), stem


def test_nodes_side_by_side_each_count_their_own_time():
    """fork_join's branches run at once: their own times add up to more than the busy time."""
    (graph,) = load_profile(raw("fork_join"), "fork_join").graphs
    assert graph.own_total_us > graph.busy_us * 1.5


def test_the_readme_shows_the_recorded_profile_as_the_cli_does(cli):
    readme = (ROOT / "README.md").read_text()
    command = "$ accelgraph profile tests/data/profiles/mlp_decode.json"
    block = readme.split(command, 1)[1].split("\n", 1)[1].split("```", 1)[0]
    code, out, err = cli("profile", PROFILES / "mlp_decode.json")  # 100 columns
    assert code == 0, err
    assert out == block


def test_load_profile_rejects_non_dicts():
    with pytest.raises(ProfileLoadError):
        load_profile([], "x")


def test_the_cli_caps_iters_where_the_loader_does():
    from accelgraph_cli.cli.app import MAX_PROFILE_ITERS
    from accelgraph_cli.model.profile import MAX_ITERS

    assert MAX_PROFILE_ITERS == MAX_ITERS


def test_out_must_be_json_and_is_checked_before_any_gpu_work(cli):
    code, _out, err = cli("profile", ROOT / "scenarios" / "saxpy.py", "--out", "p.txt")
    assert code == 2 and "name it .json" in err


# -- --against: two profiles side by side ----------------------------------------------------

def test_a_profile_against_itself_changes_nothing():
    from accelgraph_cli.model.profile import compare

    profile = load_profile(raw("gpt_decode"), "gpt_decode")
    (change,) = compare(profile, load_profile(raw("gpt_decode"), "again"))
    assert len(change.nodes) == len(profile.graphs[0].nodes)
    assert all(c.change_us == 0 for c in change.nodes)


def test_profiles_of_different_graphs_are_refused(cli):
    code, _out, err = cli("profile", PROFILES / "mlp_decode.json", "--against",
                          PROFILES / "fork_join.json")
    assert code == 2 and "the nodes that ran differ" in err
    assert "before only: graph_0_node_4" in err and "after only" not in err


def _against_a_changed_copy(cli, tmp_path, change):
    """`profile mlp_decode.json --against` a copy of it that ``change`` edited."""
    document = raw("mlp_decode")
    change(document["graphs"][0])
    path = tmp_path / "before.json"
    path.write_text(json.dumps(document))
    return cli("profile", PROFILES / "mlp_decode.json", "--against", path)


def test_a_node_of_another_kind_is_refused(cli, tmp_path):
    code, _out, err = _against_a_changed_copy(
        cli, tmp_path, lambda g: g["model"]["nodes"][1].__setitem__("kind", "memset"))
    assert code == 2 and "graph_0_node_1 is a memset node before and a kernel node after" in err


def test_a_renamed_kernel_is_compared_and_named_both_ways(cli, tmp_path):
    code, out, err = _against_a_changed_copy(
        cli, tmp_path, lambda g: g["model"]["nodes"][0].__setitem__("name", "sgemm_tiled"))
    assert code == 0, err
    assert "sgemm_skinny_8 *" in out and "* graph_0_node_0: was sgemm_tiled" in out
    rows = [line for line in out.splitlines() if "│" in line]
    assert len(rows) == 4 and all("+0.00" in row for row in rows)  # the figures stay shown


def test_against_a_broken_file_is_one_error_before_anything_else(cli, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{")
    code, _out, err = cli("profile", ROOT / "scenarios" / "saxpy.py", "--against", path)
    assert code == 2 and err.startswith("accelgraph: error: --against:") and "not JSON" in err


def _slower(tmp_path, node: str, ns: int) -> Path:
    """A copy of mlp_decode's profile whose ``node`` ends ``ns`` later in every replay."""
    document = raw("mlp_decode")
    for run in document["graphs"][0]["spans"][node]:
        run[1] += ns
    path = tmp_path / "slower.json"
    path.write_text(json.dumps(document))
    return path


def test_a_change_is_shown_with_its_sign_and_size(cli, tmp_path):
    slower = _slower(tmp_path, "graph_0_node_3", 1000)  # the last node: nothing waits on it
    code, out, err = cli("profile", slower, "--against", PROFILES / "mlp_decode.json")
    assert code == 0, err
    rows = {line.split()[0]: line for line in out.splitlines() if "│" in line}
    assert "+1.00" in rows["3"] and all("+0.00" in rows[k] for k in ("0", "1", "2"))
    code, out, err = cli("profile", PROFILES / "mlp_decode.json", "--against", slower, "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["device"] == ["NVIDIA H100 80GB HBM3"] * 2
    (graph,) = document["graphs"]
    last = next(n for n in graph["nodes"] if n["node"] == "graph_0_node_3")
    assert last["own_us"][0] - last["own_us"][1] == pytest.approx(1.0, abs=0.002)


def test_graphs_of_other_names_are_refused(cli, tmp_path):
    code, _out, err = _against_a_changed_copy(cli, tmp_path,
                                              lambda g: g.__setitem__("name", "prefill"))
    assert code == 2 and "before only: prefill; after only: step" in err


def test_against_a_missing_file_names_the_option(cli, tmp_path):
    code, _out, err = cli("profile", PROFILES / "mlp_decode.json", "--against",
                          tmp_path / "none.json")
    assert code == 2 and err.startswith("accelgraph: error: --against:") and "no such file" in err


def test_a_profile_is_not_compared_with_itself_nor_overwritten(cli, tmp_path):
    code, _out, err = cli("profile", PROFILES / "mlp_decode.json", "--against",
                          PROFILES / "mlp_decode.json")
    assert code == 2 and "is also the profile shown" in err
    saved = tmp_path / "b.json"
    saved.write_bytes((PROFILES / "mlp_decode.json").read_bytes())
    code, _out, err = cli("profile", ROOT / "scenarios" / "saxpy.py", "--out", saved,
                          "--against", saved)
    assert code == 2 and "is also --out" in err
    assert saved.read_bytes() == (PROFILES / "mlp_decode.json").read_bytes()


def test_against_and_top_are_refused_together(cli):
    code, _out, err = cli("profile", PROFILES / "mlp_decode.json", "--top", "2", "--against",
                          PROFILES / "fork_join.json")
    assert code == 2 and "--top" in err and "--against" in err


def test_profiles_of_two_gpus_are_compared_with_a_line_saying_so(cli, tmp_path):
    document = raw("mlp_decode")
    document["device"] = "NVIDIA H200"
    path = tmp_path / "h200.json"
    path.write_text(json.dumps(document))
    code, out, err = cli("profile", PROFILES / "mlp_decode.json", "--against", path)
    assert code == 0, err
    assert "recorded on different GPUs" in out
    code, out, err = cli("profile", PROFILES / "mlp_decode.json", "--against",
                         _slower(tmp_path, "graph_0_node_3", 0))
    assert code == 0 and "recorded on different GPUs" not in out


def test_node_ids_one_side_has_are_listed_in_graph_order(cli):
    code, _out, err = cli("profile", PROFILES / "mlp_decode.json", "--against",
                          PROFILES / "fork_join.json")
    assert "before only: graph_0_node_4, graph_0_node_5, graph_0_node_6, graph_0_node_7 …" in err


# -- the --json output, pinned against the raw records ---------------------------------------

def _chain_reference(graph: dict) -> tuple[float, list[dict]]:
    """mlp_decode's figures worked out from its raw records alone (its graph is a chain,
    each node's input the node before): busy = median over replays of first start to last
    end; per node, span = median of end - start, own = median of the time past the end of
    the node before (or past its own start); in µs."""
    ids = list(graph["spans"])
    runs = [graph["spans"][node] for node in ids]
    busy = median((max(r[k][1] for r in runs) - min(r[k][0] for r in runs)) / 1e3
                  for k in range(graph["replays"]))
    nodes = []
    for i, node in enumerate(ids):
        span = [(e - s) / 1e3 for s, e in runs[i]]
        own = [max(0, e - max(s, runs[i - 1][k][1] if i else s)) / 1e3
               for k, (s, e) in enumerate(runs[i])]
        nodes.append({"node": node, "span_us": round(median(span), 3),
                      "own_us": round(median(own), 3),
                      "share": round(median(own) / busy, 4)})
    return busy, nodes


def test_the_json_of_a_saved_profile_is_pinned(cli):
    """mlp_decode's profile as --json prints it: every key at every level, and each figure
    as its raw records give it (users' scripts read these names)."""
    document = raw("mlp_decode")
    (graph,) = document["graphs"]
    edges = {(e[0], e[1]) if isinstance(e, list) else (e["from"], e["to"])
             for e in graph["model"]["edges"]}
    ids = list(graph["spans"])
    assert edges >= set(zip(ids, ids[1:]))  # a chain, as the reference assumes
    code, out, err = cli("profile", PROFILES / "mlp_decode.json", "--json")
    assert code == 0, err
    shown = json.loads(out)
    (shown_graph,) = shown.pop("graphs")
    assert shown == {"scenario": "scenarios/mlp_decode.py", "params": document["params"],
                     "device": document["device"], "origins_failed": None}
    shown_nodes = shown_graph.pop("nodes")
    busy, reference = _chain_reference(graph)
    assert shown_graph == {
        "name": "step", "iters": graph["iters"], "replays": graph["replays"],
        "step_us": round(graph["step_us"], 3), "traced_step_us": round(graph["traced_step_us"], 3),
        "busy_us": round(busy, 3), "dropped": graph["dropped"], "unreadable": graph["unreadable"],
        "silent": []}
    assert [{k: n[k] for k in ("node", "span_us", "own_us", "share")} for n in shown_nodes] == \
        reference
    names = ["sgemm_skinny_8", "sgemm_splitk_reduce", "sgemm_skinny_8",
             "sgemm_splitk_reduce_softmax"]
    for node, name in zip(shown_nodes, names):
        assert set(node) == {"node", "kind", "name", "runs", "span_us", "own_us", "share",
                             "origin"}
        assert (node["kind"], node["name"], node["runs"]) == ("kernel", name, graph["replays"])
        assert set(node["origin"]) == {"file", "line", "function", "code", "via"}
        assert node["origin"]["file"] == "scenarios/mlp_decode.py"
        assert node["origin"]["function"] == "step"
    lines = (ROOT / "scenarios" / "mlp_decode.py").read_text().splitlines()
    assert [lines[n["origin"]["line"] - 1].strip() for n in shown_nodes] == [
        n["origin"]["code"] for n in shown_nodes]
    assert [n["origin"]["via"] for n in shown_nodes] == [
        "kernels.sgemm_bias_gelu"] * 2 + ["kernels.sgemm_softmax"] * 2


def test_the_json_of_two_profiles_side_by_side_is_pinned(cli, tmp_path):
    """--against: each figure as [before, after]. The after profile is mlp_decode's with
    its third node's runs ending 1 µs later: its span and own time grow by 1 µs, the
    step's busy time by 1 µs, the other nodes' figures stay."""
    before = raw("mlp_decode")
    after = copy.deepcopy(before)
    (graph,) = after["graphs"]
    third = list(graph["spans"])[2]
    graph["spans"][third] = [[s, e + 1000] for s, e in graph["spans"][third]]
    last = list(graph["spans"])[3]
    graph["spans"][last] = [[s + 1000, e + 1000] for s, e in graph["spans"][last]]
    graph["step_us"] += 1.0
    path = tmp_path / "after.json"
    path.write_text(json.dumps(after))
    code, out, err = cli("profile", path, "--against", PROFILES / "mlp_decode.json", "--json")
    assert code == 0, err
    shown = json.loads(out)
    (change,) = shown.pop("graphs")
    assert shown == {"before": str(PROFILES / "mlp_decode.json"), "after": str(path),
                     "device": [before["device"]] * 2}
    busy_before, nodes_before = _chain_reference(before["graphs"][0])
    busy_after, nodes_after = _chain_reference(graph)
    assert round(busy_after - busy_before, 3) == 1.0
    assert set(change) == {"name", "step_us", "busy_us", "nodes"}
    assert change["name"] == "step"
    assert change["step_us"] == [round(before["graphs"][0]["step_us"], 3),
                                 round(graph["step_us"], 3)]
    assert change["busy_us"] == [round(busy_before, 3), round(busy_after, 3)]
    for row, a, b in zip(change["nodes"], nodes_before, nodes_after):
        assert set(row) == {"node", "kind", "name", "own_us", "span_us"}
        assert (row["node"], row["kind"]) == (a["node"], "kernel")
        assert row["own_us"] == [a["own_us"], b["own_us"]]
        assert row["span_us"] == [a["span_us"], b["span_us"]]
        assert row["name"][0] == row["name"][1]
    grew = [round(b["span_us"] - a["span_us"], 3) for a, b in zip(nodes_before, nodes_after)]
    assert grew == [0.0, 0.0, 1.0, 0.0]


def test_the_edges_of_what_a_profile_accepts_are_read():
    """A run that starts and ends at the same tick, the last timestamp below 2**63, line 0,
    no "dropped" or "unreadable" (an earlier recording's): read, as zero where absent."""
    document = raw("mlp_decode")
    (graph,) = document["graphs"]
    graph["spans"]["graph_0_node_0"][3] = [7, 7]
    graph["spans"]["graph_0_node_3"][4] = [2**63 - 2, 2**63 - 1]
    graph["origins"]["graph_0_node_0"]["stack"][-1][1] = 0
    graph.pop("dropped")
    graph.pop("unreadable")
    (read,) = load_profile(document, "mlp_decode").graphs
    assert (read.dropped, read.unreadable) == (0, 0)
    assert read.nodes[0].origin.line == 0


def test_a_kernel_with_no_run_is_a_silent_kernel():
    """A node every replay of which lost its record is silent; a kernel among them is
    counted apart (the profile misses its time). Its successor's own time, its input's end
    never known, is 0; a graph where nothing ran has no busy time."""
    (recorded,) = load_profile(raw("mlp_decode"), "mlp_decode").graphs
    assert recorded.silent == [] and recorded.silent_kernels == []
    document = raw("mlp_decode")
    (graph,) = document["graphs"]
    graph["spans"]["graph_0_node_0"] = [None] * graph["replays"]
    (read,) = load_profile(document, "mlp_decode").graphs
    assert read.silent == ["graph_0_node_0"] and read.silent_kernels == ["graph_0_node_0"]
    assert [n.node for n in read.nodes] == ["graph_0_node_1", "graph_0_node_2", "graph_0_node_3"]
    # (never recorded, it is no input whose end is waited for: its successor's own time is
    # its span)
    assert read.nodes[0].own_us == read.nodes[0].span_us > 0
    # recorded in the first replay only, where its successor's record was lost: when the
    # successor's input was ready is never known, and its own time is 0
    graph["spans"]["graph_0_node_0"][0] = raw("mlp_decode")["graphs"][0]["spans"][
        "graph_0_node_0"][0]
    graph["spans"]["graph_0_node_1"][0] = None
    (read,) = load_profile(document, "mlp_decode").graphs
    assert read.silent == [] and read.nodes[1].node == "graph_0_node_1"
    assert read.nodes[1].own_us == 0.0 and read.nodes[1].span_us > 0
    (memory,) = [g for g in load_profile(raw("memory_ops"), "memory_ops").graphs if g.silent]
    assert memory.silent_kernels == []  # its silent nodes are no kernels
    for node in graph["spans"]:
        graph["spans"][node] = [None] * graph["replays"]
    (idle,) = load_profile(document, "mlp_decode").graphs
    assert (idle.busy_us, idle.nodes) == (0.0, [])
    assert idle.silent_kernels == list(graph["spans"])


def _frame(path: str, line: int, function: str, user: bool) -> list:
    return [path, line, function, user]


def test_the_frame_that_made_a_node_is_picked_from_its_stack():
    """pick_origin: the innermost frame in the scenario file, else the innermost user frame,
    else none; ``via`` names the call it made (the frame just inside it); code from
    ``codes``, or empty."""
    from accelgraph_cli.model.profile import pick_origin

    stack = [_frame("accelgraph_cli/cuda/launch.py", 9, "__call__", False),
             _frame("lib/helpers.py", 4, "helper", True),
             _frame("scen.py", 30, "step", True),
             _frame("runner.py", 2, "main", True)]
    codes = {"scen.py:30": "    y = helper(x)  ", "lib/helpers.py:4": "return k(x)"}
    origin = pick_origin(stack, "./scen.py", codes)
    assert (origin.file, origin.line, origin.function, origin.code, origin.via) == (
        "scen.py", 30, "step", "y = helper(x)", "helpers.helper")
    # no scenario named: the innermost user frame, and the call it made
    origin = pick_origin(stack, "", codes)
    assert (origin.file, origin.line, origin.via) == ("lib/helpers.py", 4, "launch.__call__")
    # the scenario's frame the innermost: no call inside it
    origin = pick_origin(stack[2:], "scen.py")
    assert (origin.line, origin.via, origin.code) == (30, "", "")
    # no frame in the scenario: the innermost user frame (second), via the first
    origin = pick_origin(stack[:2] + stack[3:], "scen.py", codes)
    assert (origin.file, origin.via, origin.code) == ("lib/helpers.py", "launch.__call__",
                                                      "return k(x)")
    assert pick_origin([stack[0]], "scen.py") is None
    assert pick_origin([], "scen.py") is None
