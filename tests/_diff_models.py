"""Graphs built in Python for the diff tests: kernel chains, fork/joins, lanes and modules.

Shared by test_diff.py and test_diff_details.py (import as `from _diff_models import ...`).
None of them imitates CUDA's output; the recorded dumps are in tests/data/dumps/.
"""

from __future__ import annotations

from accelgraph_cli.model.graph_model import GraphModel, Node


def kernel(i: int, name: str = "cupy_add", **params) -> Node:
    """A kernel node as the parser makes them (pointers/handles under ptr_/handle_ keys)."""
    base = {
        "grid": (4, 1, 1),
        "block": (256, 1, 1),
        "shared_mem": 0,
        "ptr_kernel_params": hex(0x7F0000000000 + 64 * i),  # differs per capture: ignored
        "handle_func": hex(0x55550000 + i),
    }
    base.update(params)
    return Node(f"graph_0_node_{i}", "kernel", name, base, topo_id=i)


def chain_model(n: int, names=("cupy_add", "cupy_multiply")) -> GraphModel:
    """n kernels in one chain, names cycling through ``names``."""
    nodes = [kernel(i, names[i % len(names)]) for i in range(n)]
    edges = [(nodes[i].id, nodes[i + 1].id) for i in range(n - 1)]
    return GraphModel(nodes, edges, source="dot-verbose")


def _adder(nodes: list[Node]):
    """add(name) -> id: append a kernel node with the next index to ``nodes``."""

    def add(name: str) -> str:
        node = kernel(len(nodes), name)
        nodes.append(node)
        return node.id

    return add


def fork_join_model(layers: int = 2, branches: int = 3) -> GraphModel:
    """init -> per layer: `branches` parallel (multiply -> sqrt) -> one accumulate each."""
    nodes: list[Node] = []
    edges: list[tuple[str, str]] = []
    add = _adder(nodes)

    previous = add("init")
    for _ in range(layers):
        ends = []
        for _ in range(branches):
            head = add("cupy_multiply")
            edges.append((previous, head))
            tail = add("cupy_sqrt")
            edges.append((head, tail))
            ends.append(tail)
        join = add("cupy_add")
        edges.extend((end, join) for end in ends)
        previous = join
    return GraphModel(nodes, edges, source="dot-verbose")


def lanes_model(layers: int = 4, lanes: int = 3) -> GraphModel:
    """The recorded forkjoin_wide shape: per layer, ``lanes`` identical parallel branches
    (multiply -> sqrt), the k-th continuing the k-th lane of the layer before (its sqrt ->
    this multiply), joined by add -> add -> add, which the next layer's branches wait for.
    Its lanes are interchangeable as a whole, not layer by layer."""
    nodes: list[Node] = []
    edges: list[tuple[str, str]] = []
    add = _adder(nodes)

    tails: list[str | None] = [None] * lanes
    join = None
    for _ in range(layers):
        for k in range(lanes):
            head = add("cupy_multiply")
            tail = add("cupy_sqrt")
            edges.append((head, tail))
            edges += [(p, head) for p in (tails[k], join) if p is not None]
            tails[k] = tail
        first = add("cupy_add")
        edges += [(t, first) for t in tails]
        if join is not None:
            edges.append((join, first))
        second = add("cupy_add")
        join = add("cupy_add")
        edges += [(first, second), (second, join)]
    return GraphModel(nodes, edges, source="dot-verbose")


def modules_model(modules: int = 5) -> GraphModel:
    """One fork into ``modules`` identical modules with three entry kernels each (two of
    them alike: load, bias, load), right after the fork and joined at two places further
    down, then one join. Which entries belong together shows only below them."""
    nodes: list[Node] = [kernel(0, "init")]
    edges: list[tuple[str, str]] = []

    def add(name: str, parents: list[str]) -> str:
        node = kernel(len(nodes), name)
        nodes.append(node)
        edges.extend((p, node.id) for p in parents)
        return node.id

    fork = nodes[0].id
    ends = []
    for _ in range(modules):
        first, bias, second = add("load", [fork]), add("bias", [fork]), add("load", [fork])
        shift = add("bias", [first])
        both = add("load", [first, second])
        ends.append(add("load", [first, bias, second, both]))
        ends.append(add("bias", [bias, shift]))
    add("store", ends)
    return GraphModel(nodes, edges, source="dot-verbose")
