"""CUPTI, through NVIDIA's cupti-python: what the device itself ran.

``watch``: the execution watch of a capture (a capture records work and runs none of it, so
any kernel, copy or memset the device runs while a graph is captured is work missing from
the graph). Per-node profiling of replays belongs here too. cupti-python is optional (the
``cuda13`` extra brings it): without it the watch reports itself off, and the capture guard's
checksums still run.
"""
