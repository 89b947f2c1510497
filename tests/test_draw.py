"""Drawing with Graphviz: kinds coloured, files written atomically, a clear line without it."""

import pytest

from accelgraph_cli.dot import draw
from accelgraph_cli.errors import AccelgraphError
from accelgraph_cli.model.graph_model import GraphModel, Node


def _model():
    return GraphModel(
        [Node("a", "kernel", "k1", {"grid": (4, 1, 1), "block": (256, 1, 1), "shared_mem": 0}),
         Node("b", "memcpy", None, {"direction": "DtoD", "bytes": 4096})],
        [("a", "b")],
    )


def test_styled_dot_colours_kinds_and_keeps_edges():
    text = draw.styled_dot(_model())
    assert draw.KIND_COLOURS["kernel"] in text and draw.KIND_COLOURS["memcpy"] in text
    assert '"a" -> "b"' in text
    assert "KERNEL" in text and "MEMCPY" in text


def test_boxes_are_numbered_as_the_listing_numbers_them():
    from _paths import recorded

    from accelgraph_cli.dot.parse import load_model

    text = draw.styled_dot(load_model(recorded("kinds_verbose.dot")))  # #5 holds CUDA graph 10
    assert 'label="#0 KERNEL\\ncupy_add__float32_float_float32' in text
    assert 'label="#4 EMPTY"' in text
    assert 'label="child of #5"' in text
    assert 'label="g10#0 KERNEL\\ncupy_multiply__float32_float_float32' in text


def test_a_generic_dot_node_is_labelled_with_its_id_once():
    from accelgraph_cli.dot.parse import parse_dot

    text = draw.styled_dot(parse_dot("digraph { start -> end; }", filename="g.dot"))
    assert 'label="start UNKNOWN"' in text and 'label="end UNKNOWN"' in text


@pytest.mark.skipif(not draw.graphviz_available(), reason="Graphviz (dot) not installed")
def test_a_drawing_past_its_time_limit_is_one_error_line_and_no_file(tmp_path, monkeypatch):
    from _paths import recorded

    from accelgraph_cli.dot.parse import load_model

    monkeypatch.setattr(draw, "RENDER_TIMEOUT_S", 0.001)
    target = tmp_path / "g.svg"
    with pytest.raises(AccelgraphError, match=r"did not finish drawing .*g\.svg in 0\.001 s"):
        draw.render_image(load_model(recorded("chain1k_basic.dot")), str(target), "svg")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not draw.graphviz_available(), reason="Graphviz (dot) not installed")
def test_svg_is_written_atomically(tmp_path):
    target = tmp_path / "g.svg"
    draw.render_image(_model(), str(target), "svg")
    assert target.read_text().lstrip().startswith(("<?xml", "<svg"))
    assert [p.name for p in tmp_path.iterdir()] == ["g.svg"]


def test_missing_graphviz_is_one_clear_line(monkeypatch, tmp_path):
    monkeypatch.setattr(draw.shutil, "which", lambda _name: None)
    with pytest.raises(AccelgraphError, match="apt-get install graphviz"):
        draw.render_image(_model(), str(tmp_path / "g.png"), "png")
    assert list(tmp_path.iterdir()) == []


def _fake_dot(tmp_path, monkeypatch, script: str, name: str):
    """A `dot` that runs ``script`` (sh) in Graphviz's place, and the drawing's path, in a
    folder of its own (so that what is left there can be listed)."""
    fake = tmp_path / "dot"
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(0o755)
    monkeypatch.setattr(draw, "require_graphviz", lambda: str(fake))
    target = tmp_path / "out" / name
    target.parent.mkdir()
    return fake, target


@pytest.mark.parametrize("stderr, reason", [
    ("dot: graph is too large for cairo-renderer bitmaps. Scaling by 0.319276 to fit\n"
     "Error: Could not write to \"x.png\": No space left on device\n",
     'Error: Could not write to "x.png": No space left on device'),
    ("Warning: node a, port e unrecognized\ndot: cannot open output file\n",
     "dot: cannot open output file"),
    ("Warning: something odd\n", "Warning: something odd"),
    ("", "no message"),
])
def test_a_graphviz_failure_names_its_reason_not_the_first_line(tmp_path, monkeypatch, stderr,
                                                                 reason):
    # Graphviz prints notes and warnings before the reason: the first line was taken, so a
    # full disk read "graph is too large for cairo-renderer bitmaps. Scaling by 0.32 to fit".
    _, target = _fake_dot(tmp_path, monkeypatch,
                          f"cat >/dev/null\nprintf '%s' '{stderr}' >&2\nexit 1\n", "g.png")
    with pytest.raises(AccelgraphError) as caught:
        draw.render_image(_model(), str(target), "png")
    assert str(caught.value) == f"Graphviz failed drawing {target}: {reason}"
    assert list(target.parent.iterdir()) == []


@pytest.mark.parametrize("script, message", [
    # exits 0 and writes nothing: a 0-byte drawing was reported as written
    ("cat >/dev/null\nexit 0\n", "Graphviz wrote nothing for {target} ({dot} exited 0: no message)"),
    ("cat >/dev/null\necho 'Warning: odd' >&2\nexit 0\n",
     "Graphviz wrote nothing for {target} ({dot} exited 0: Warning: odd)"),
    # killed by a signal: the reason read "no message"
    ("cat >/dev/null\nkill -KILL $$\n", "Graphviz was stopped by SIGKILL while drawing {target}"),
])
def test_a_graphviz_that_draws_nothing_is_an_error_and_leaves_no_file(tmp_path, monkeypatch,
                                                                      script, message):
    fake, target = _fake_dot(tmp_path, monkeypatch, script, "g.svg")
    with pytest.raises(AccelgraphError) as caught:
        draw.render_image(_model(), str(target), "svg")
    assert str(caught.value) == message.format(target=target, dot=fake)
    assert list(target.parent.iterdir()) == []


def test_graphviz_is_given_utf8_whatever_the_locale_and_names_that_are_no_text(tmp_path,
                                                                                monkeypatch):
    # the DOT went through the locale's encoding: a CJK name under LC_ALL=C, or a lone
    # surrogate read from JSON, raised UnicodeEncodeError (exit 70, "this is a bug")
    fake, target = _fake_dot(tmp_path, monkeypatch,
                             f'cat >"{tmp_path}/given"\nprintf x >"$3"\n', "g.svg")
    model = GraphModel([Node("a", "kernel", "核函数", {}), Node("b", "kernel", "k\ud800", {})],
                       [("a", "b")])
    monkeypatch.setattr("locale.getpreferredencoding", lambda do_setlocale=True: "ascii")
    draw.render_image(model, str(target), "svg")
    given = (tmp_path / "given").read_bytes().decode("utf-8")
    assert "核函数" in given and "k?" in given  # (the surrogate, which UTF-8 cannot hold)
    assert target.read_text() == "x"


def test_graphviz_errors_in_another_encoding_are_read(tmp_path, monkeypatch):
    _, target = _fake_dot(tmp_path, monkeypatch,
                          "cat >/dev/null\nprintf 'Error: \\377\\376 bad\\n' >&2\nexit 1\n",
                          "g.png")
    with pytest.raises(AccelgraphError) as caught:
        draw.render_image(_model(), str(target), "png")
    assert str(caught.value) == f"Graphviz failed drawing {target}: Error: \ufffd\ufffd bad"
