"""The bundled kernels and scenarios are found, listed and runnable by name; the package list
in pyproject covers every sub-package. (CI also builds the wheel, installs it outside the tree
and runs the verbs from there: .ci/run.)"""

from __future__ import annotations

import ast
import json
import re

import pytest
from _paths import ROOT, SCENARIOS, requires_no_gpu

from accelgraph_cli import bundled
from accelgraph_cli.run.catalog import bundled_names, bundled_scenario, resolve_scenario
from accelgraph_cli.run.scenario import ScenarioError

SCENARIO_FILES = sorted(p for p in SCENARIOS.glob("*.py") if not p.name.startswith("_"))


def _summary(path) -> str:
    """The first docstring line, read straight from the file."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return doc.strip().splitlines()[0].strip()


def test_the_source_tree_has_scenarios_and_kernels():
    assert len(SCENARIO_FILES) >= 5
    assert len(list((ROOT / "kernels").glob("*.cu"))) >= 3


def test_kernel_sources_are_found_through_the_bundled_package():
    folder = bundled.kernels_folder()
    found = {p.name: p.read_text() for p in folder.glob("*.cu")}
    expected = {p.name: p.read_text() for p in (ROOT / "kernels").glob("*.cu")}
    assert found == expected


def test_kernels_module_reads_from_the_bundled_folder(monkeypatch):
    from accelgraph_cli import kernels

    monkeypatch.delenv(kernels.KERNELS_DIR_ENV, raising=False)
    assert kernels.kernels_dir() == bundled.kernels_folder()
    assert "sgemm_tiled" in kernels.kernel_names("gemm.cu")


def test_scenarios_are_found_through_the_bundled_package():
    assert sorted(p.name for p in bundled.scenarios_folder().glob("*.py")) == [
        p.name for p in SCENARIO_FILES
    ]
    assert bundled_names() == [p.stem for p in SCENARIO_FILES]


def test_scenarios_verb_lists_every_bundled_name_with_its_summary(cli):
    code, out, err = cli("scenarios")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == len(SCENARIO_FILES)
    for line, path in zip(lines, SCENARIO_FILES):
        name, summary = line.split(None, 1)
        assert name == path.stem
        assert summary.strip() == _summary(path)


def test_scenarios_verb_json(cli):
    code, out, err = cli("scenarios", "--json")
    assert code == 0, err
    listed = json.loads(out)
    assert [entry["name"] for entry in listed] == [p.stem for p in SCENARIO_FILES]
    by_name = {entry["name"]: entry for entry in listed}
    assert by_name["buckets"]["graphs"] == "steps" and by_name["buckets"]["pool"] == "shared"
    assert by_name["saxpy"]["graphs"] == "step"
    # the backend, read from the file without running it
    assert by_name["saxpy"]["backend"] == "cupy" and by_name["gpt_decode"]["backend"] == "torch"
    for path in SCENARIO_FILES:
        assert by_name[path.stem]["summary"] == _summary(path)


@pytest.mark.parametrize("argument", ["mlp_decode", "mlp_decode.py"])
def test_a_bundled_name_resolves_to_its_file(argument, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no scenarios/ here: the name is all there is
    assert resolve_scenario(argument).resolve() == (SCENARIOS / "mlp_decode.py").resolve()


def test_an_existing_file_wins_over_a_bundled_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "saxpy.py").write_text('"""Mine."""\n')
    assert resolve_scenario("saxpy.py") == tmp_path.joinpath("saxpy.py").relative_to(tmp_path)
    assert bundled_scenario("sub/saxpy.py") is None  # a path with folders is never a name


def test_an_unknown_name_is_one_line_listing_the_bundled_names(cli):
    code, out, err = cli("replay", "no_such_scenario", "--iters", "5")
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "no_such_scenario" in lines[0]
    for name in bundled_names():
        assert name in lines[0]
    with pytest.raises(ScenarioError, match="no bundled scenario"):
        resolve_scenario("no_such_scenario")


def test_verbs_read_a_bundled_scenario_by_name_before_any_gpu_work(cli):
    """A bad --param is reported from the bundled file itself: the name was resolved and the
    file inspected, on any machine."""
    code, out, err = cli("capture", "saxpy", "--param", "nope=1")
    assert code == 2
    assert "nope" in err and "known keys: n (int" in err


@requires_no_gpu
@pytest.mark.parametrize("args", [["capture", "saxpy"], ["replay", "mlp_decode", "--iters", "100"],
                                  ["diff", "saxpy", "saxpy"]])
def test_bundled_names_reach_the_gpu_check(cli, args):
    code, out, err = cli(*args)
    assert code == 3, err
    assert "need a CUDA GPU" in err


def test_smoke_list_needs_no_gpu_and_lists_every_bundled_scenario(cli):
    code, out, err = cli("smoke", "--list")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == len(SCENARIO_FILES)
    for line, path in zip(lines, SCENARIO_FILES):
        shown, summary = line.split(None, 1)
        assert shown == path.stem  # by name, as `scenarios` lists them, not a long path
        assert summary.strip() == _summary(path)
    # a file of one's own keeps its path
    code, out, err = cli("smoke", "--list", str(ROOT / "tests" / "bad_scenarios"))
    assert all(line.startswith(str(ROOT / "tests" / "bad_scenarios")) for line in out.splitlines())


def test_smoke_list_takes_names_files_and_json(cli):
    code, out, err = cli("smoke", "--list", "--json", "saxpy", SCENARIOS / "jacobi.py")
    assert code == 0, err
    assert [entry["name"] for entry in json.loads(out)] == ["saxpy", "jacobi"]
    assert [entry["backend"] for entry in json.loads(out)] == ["cupy", "cupy"]
    code, out, err = cli("smoke", "--list", "nothing_here")
    assert code == 2
    assert "no bundled scenario" in err and "saxpy" in err


def test_pyproject_lists_every_sub_package():
    """The package list is kept by hand (two entries map folders from outside the package);
    a sub-package missing from it would be missing from the wheel."""
    text = (ROOT / "pyproject.toml").read_text()
    listed = set(re.findall(r'^\s*"(accelgraph_cli[\w.]*)",?\s*$', text, re.M))
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "accelgraph_cli").rglob("__init__.py")
    }
    assert on_disk <= listed, f"missing from pyproject packages: {sorted(on_disk - listed)}"
    assert {"accelgraph_cli.bundled.kernels", "accelgraph_cli.bundled.scenarios"} <= listed
    mapped = dict(re.findall(r'^"(accelgraph_cli\.bundled\.\w+)" = "(\w+)"', text, re.M))
    assert mapped == {"accelgraph_cli.bundled.kernels": "kernels",
                      "accelgraph_cli.bundled.scenarios": "scenarios"}


def test_the_torch_extra_asks_for_a_torch_that_has_what_torch_graph_calls():
    """TorchGraph builds torch.cuda.CUDAGraph(keep_graph=True), which came in torch 2.8: the
    extra said torch>=2.4, so pip could install a torch on which no TorchGraph can be made."""
    text = (ROOT / "pyproject.toml").read_text()
    assert re.findall(r'^torch = \[(.*)\]', text, re.M) == ['"torch>=2.8"']
    readme = (ROOT / "README.md").read_text()
    assert "2.8 or later" in readme and "torch>=2.4" not in readme
