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


@pytest.fixture
def read_only(monkeypatch):
    """Folders to treat as read-only (append them): os.access says they cannot be written,
    as it would for a read-only mount (as root, mode bits would not stop a write)."""
    import os

    folders: list = []
    real = os.access

    def access(path, mode, *args, **kwargs):
        if mode & os.W_OK and os.path.exists(path) and any(os.path.samefile(path, f)
                                                           for f in folders):
            return False
        return real(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)
    return folders
