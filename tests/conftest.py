"""Shared fixtures for the CPU tier."""

from __future__ import annotations

import pytest


@pytest.fixture
def cli(capsys, monkeypatch, tmp_path):
    """Run `accelgraph ARGS...` in-process (in a temporary cwd); returns (code, out, err)."""
    from accelgraph_cli.cli.app import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("NO_COLOR", "1")

    def run(*args: str):
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run
