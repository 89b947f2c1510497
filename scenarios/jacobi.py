"""Jacobi relaxation: K five-point stencil sweeps on a 512x512 grid, ping-ponging two buffers.

A simulation-loop workload: solving Laplace's equation for the steady-state temperature of a
plate whose top edge is held hot and the other edges cold. Each sweep (kernels/stencil.cu)
replaces every interior point with the mean of its four neighbours, reading one buffer and
writing the other; with K even the newest values land back in the first buffer, so every
step starts and ends in the same place and k eager steps equal k graph replays.

Graph: a chain of K KERNEL nodes alternating a->b and b->a. The data dependence through the
buffers is what orders them; a graph keeps the order and drops the per-launch CPU cost.
"""

import cupy
import numpy

from accelgraph_cli import kernels

PARAMS = {"n": 512, "iterations": 20}


def setup(n, iterations):
    if iterations <= 0 or iterations % 2:
        raise ValueError(
            f"iterations must be a positive even number (got {iterations}) so the result "
            f"ends in the first buffer"
        )
    kernels.preload("stencil.cu")
    rng = numpy.random.default_rng(3)
    grid = rng.random((n, n), dtype=numpy.float32)
    grid[-1, :] = 0.0  # cold edges
    grid[:, 0] = 0.0
    grid[:, -1] = 0.0
    grid[0, :] = 1.0  # the hot edge, corners included
    a = cupy.asarray(grid)
    return {"a": a, "b": a.copy(), "iterations": iterations}


def step(state):
    a, b = state["a"], state["b"]
    for _ in range(state["iterations"] // 2):
        kernels.jacobi_step(a, b)
        kernels.jacobi_step(b, a)


def outputs(state):
    return {"grid": state["a"]}
