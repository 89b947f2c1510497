"""Scenarios and what the verbs do with them: loading a scenario file, the capture / check /
replay-timing protocol, smoke runs, capture artifacts and diagnoses of failed captures.

GPU work is delegated to :mod:`accelgraph_cli.cuda`; nothing here imports CuPy at import time.
"""
