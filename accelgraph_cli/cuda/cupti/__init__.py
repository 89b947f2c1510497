"""CUPTI, through NVIDIA's cupti-python: what the device itself ran.

``watch``: the execution watch of a capture (a capture records work and runs none of it, so
any kernel, copy or memset the device runs while a graph is captured is work missing from
the graph). ``profile``: per-node profiles of replays (each node's runs, from the activity
records, and the Python line that made it, from the graph callbacks). cupti-python is optional (the
``cuda13`` extra brings it): without it the watch reports itself off, and the capture guard's
checksums still run.
"""
