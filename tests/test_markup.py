"""Text from outside — file names, DOT labels, kernel names, --focus and --param values,
scenario docstrings, exception texts — prints as itself: never read as rich markup.

Each case feeds "[/]" (a closing tag with nothing to close: rich raises MarkupError),
"[red]" (a style rich would swallow) and "[link=...]" through one output path and asserts
the exact text appears. Renderers are also checked with rich's default Console (markup on),
as a library user would print them.
"""

from __future__ import annotations

import pytest
from _paths import DUMPS
from rich.console import Console

from accelgraph_cli.dot.parse import load_model, parse_dot
from accelgraph_cli.render.graph import render_focus, render_graph, render_listing, render_summary
from accelgraph_cli.render.run import print_smoke
from accelgraph_cli.run.smoke import SmokeRow

TAGS = ["[/]", "[red]alpha", "[link=https://example.com]z"]

# Small synthetic DOT (not CUDA's dialect: parsed generically), one node per tag.
GENERIC = (
    'digraph g { a [label="[/]"]; b [label="[red]alpha"]; '
    'c [label="[link=https://example.com]z"]; a -> b; b -> c; }\n'
)


def markup_console_text(renderable, width: int = 120) -> str:
    """Print with rich's defaults (markup on), as a library user would; return the text."""
    console = Console(width=width, force_terminal=False, no_color=True, record=True)
    console.print(renderable)
    return console.export_text()


def kernel_dump_named(tmp_path, name: str):
    """A recorded dump whose kernel names are replaced by ``name`` (markup in a kernel name)."""
    text = (DUMPS / "chain_verbose.dot").read_text().replace("cupy_add", name)
    path = tmp_path / "named.dot"
    path.write_text(text)
    return path


@pytest.mark.parametrize("tag", ["[/]", "[red]", "[link=https://example.com]"])
def test_file_names_with_markup_show_and_diff(cli, tmp_path, tag):
    path = tmp_path / f"{tag}x.dot"  # "[/]x.dot" is the file "]x.dot" in the folder "["
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((DUMPS / "chain_verbose.dot").read_text())
    code, out, err = cli("show", path)
    assert (code, err) == (0, "")
    assert "kernel 6" in out
    code, out, err = cli("diff", path, path)
    assert code == 0, err
    assert f"A {path}" in out and f"B {path}" in out


@pytest.mark.parametrize("name", ["missing[red].dot", "missing[/].dot", "[link=https://e.x]m.dot"])
def test_missing_file_named_with_markup(cli, name):
    code, out, err = cli("show", name)
    assert code == 2 and out == ""
    assert err == f"accelgraph: error: {name}: no such file\n"


def test_labels_in_show_and_diff(cli, tmp_path):
    path = tmp_path / "markup.dot"
    path.write_text(GENERIC)
    code, out, err = cli("show", path)
    assert code == 0
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["0"], ["1"], ["2"])]
    assert [row[3] for row in rows] == TAGS  # level, node, kind, name
    for tag in TAGS:
        assert f"│ {tag}" in out  # the drawing
    code, out, err = cli("diff", path, DUMPS / "chain_basic.dot")
    assert code == 1, err
    for tag in TAGS:
        assert f"unknown {tag}" in out


def test_kernel_names_in_show_and_diff(cli, tmp_path):
    path = kernel_dump_named(tmp_path, "x[/]y")
    code, out, err = cli("show", path)
    assert code == 0, err
    assert "2 × 3  kernel  x[/]y__float32_float_… → cupy_multiply__float3…" in out
    code, out, err = cli("diff", DUMPS / "chain_verbose.dot", path)
    assert code == 1, err
    assert "+ 3 × kernel x[/]y__float32_float_float32 <<<8, 128, 0>>> #0, #2, #4" in out
    assert "- 3 × kernel cupy_add__float32_float_float32 <<<8, 128, 0>>> #0, #2, #4" in out


def test_label_red_kept_in_diff(cli, tmp_path):
    path = kernel_dump_named(tmp_path, "[red]alpha")
    code, out, err = cli("diff", DUMPS / "chain_verbose.dot", path)
    assert code == 1, err
    assert "+ 3 × kernel [red]alpha__float32_float_float32" in out


@pytest.mark.parametrize("focus", ["[/]", "[red]x", "[link=https://e.x]y"])
def test_focus_values(cli, focus):
    code, out, err = cli("show", DUMPS / "chain_verbose.dot", "--focus", focus)
    assert code == 2 and out == ""
    assert err.startswith(f"accelgraph: error: --focus {focus!r}: no such node")


@pytest.mark.parametrize("param, message", [
    ("[red]k=1", "--param '[red]k=1': unknown key '[red]k'; known keys: n"),
    ("[/]=2", "--param '[/]=2': unknown key '[/]'; known keys: n"),
    ("n=[red]", "--param n='[red]': n expects an int"),
])
def test_param_values(cli, param, message):
    code, out, err = cli("capture", "saxpy", "--param", param)
    assert code == 2 and out == ""
    assert err.startswith(f"accelgraph: error: {message}")


def test_error_text_from_a_scenario_path(cli, tmp_path):
    scenario = tmp_path / "[/]broken.py"
    scenario.parent.mkdir()
    scenario.write_text("x = (\n")
    code, out, err = cli("capture", scenario)
    assert code == 2
    assert err.startswith(f"accelgraph: error: {scenario}:")


def test_scenario_docstring_and_name(cli, tmp_path):
    scenario = tmp_path / "[red]odd.py"
    scenario.write_text('"""[/] odd [red]summary"""\n'
                        "def setup():\n    return {}\n\n\ndef step(state):\n    pass\n")
    code, out, err = cli("smoke", "--list", scenario)
    assert (code, err) == (0, "")
    assert out == f"{scenario}  [/] odd [red]summary\n"


def test_no_gpu_message_keeps_the_extras(cli):
    from _paths import has_gpu

    if has_gpu():
        pytest.skip("checks the no-GPU message; a GPU is present")
    code, out, err = cli("capture", "saxpy")
    assert code == 3
    assert "pip install 'accelgraph[cuda12]' or 'accelgraph[cuda13]'" in err


def test_renderers_with_a_markup_console():
    model = parse_dot(GENERIC)
    listing = markup_console_text(render_listing(model))
    assert [line.split()[3] for line in listing.splitlines()[1:]] == TAGS
    for drawing in (render_graph(model), render_focus(model, "b", 1)):
        text = markup_console_text(drawing)
        for tag in TAGS:
            assert f"│ {tag}" in text
    assert "parsed generically" in markup_console_text(render_summary(model))


def test_diff_renderer_with_a_markup_console():
    from accelgraph_cli.diff.structural import diff_models
    from accelgraph_cli.render.diff import render_diff

    a = load_model(DUMPS / "chain_basic.dot")
    b = parse_dot(GENERIC)
    text = markup_console_text(render_diff(diff_models(a, b), label_a="[/]a", label_b="[red]b"))
    assert "A [/]a" in text and "B [red]b" in text
    for tag in TAGS:
        assert f"unknown {tag}" in text


def test_smoke_table_with_a_markup_console():
    rows = [SmokeRow(scenario="[red]s.py", status="error", message="boom [/] [link=x]y")]
    console = Console(width=120, force_terminal=False, no_color=True, record=True)
    print_smoke(console, rows, total=1, interrupted=False)
    text = console.export_text()
    assert "[red]s.py" in text
    assert "[red]s.py: boom [/] [link=x]y" in text


def test_an_unexpected_exception_is_one_line_and_exit_70(cli, monkeypatch):
    import accelgraph_cli.render.graph as render

    def broken(*args, **kwargs):
        raise RuntimeError("boom [/] [red]here")

    monkeypatch.setattr(render, "render_summary", broken)
    code, out, err = cli("show", DUMPS / "chain_verbose.dot")
    assert code == 70
    assert "Traceback" not in err
    assert err.count("\n") == 1
    assert err.startswith("accelgraph: error: internal error: RuntimeError: boom [/] [red]here")
