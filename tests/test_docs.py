"""The README documents every verb and every option: docs stay true as the CLI grows."""

import re

import pytest
import typer
from _paths import ROOT

from accelgraph_cli.cli.app import app

README = (ROOT / "README.md").read_text()
COMMANDS = typer.main.get_command(app).commands


def test_readme_opens_with_the_two_setup_commands():
    first_block = README.split("```", 2)[1]
    assert "make demo" in first_block and "make test" in first_block


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_verb_is_documented(name):
    assert re.search(rf"accelgraph {name}\b", README), f"README never shows `accelgraph {name}`"


@pytest.mark.parametrize(
    "name, option",
    sorted(
        (name, opt)
        for name, command in COMMANDS.items()
        for param in command.params
        for opt in getattr(param, "opts", [])
        if opt.startswith("--") and opt != "--help"
    ),
)
def test_every_option_is_documented(name, option):
    assert option in README, f"`accelgraph {name} {option}` is not in the README"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_verb_has_help_text(name):
    assert (COMMANDS[name].help or "").strip(), f"{name} has no docstring"
