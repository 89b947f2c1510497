"""Wrong on purpose: a graph-attention layer resumed from a checkpoint re-weights its sparse
CSR adjacency on a side stream that is never joined; outputs() returns the adjacency.

The adjacency's structure (crow, col) is fixed; its values are the edge weights
sigmoid(edge_logits). The state resumes from a checkpoint, so the adjacency already holds
this step's weights when capture begins (setup computes them, as the last step did). Each
step transforms the node features in the graph (h = x @ w) and, "to overlap with it", writes
sigmoid(edge_logits) into adj.values() on a side stream that never waits for nor joins the
capturing one. During capture that kernel runs once, eagerly, writing the values they
already held, and the graph lacks it. outputs() returns h and the adjacency, as the next
layer consumes it.

Why it is wrong: the graph lacks the re-weighting (published_output and
lazy_output_side_stream are the same bug with dense outputs, and are refused).

The check once passed it: the guard did not read a sparse tensor (no storage of one
piece) nor flip its values, so the stray rewrite with the same bits changed nothing it saw.
The state walk now reaches a sparse tensor's values and indices, and capture flips a
sparse output's values, so the stray rewrite changes them.

Expected: not "check: ok": refused, work outside the graph (exit 2).

Control: --param dense_out=true returns adj.values() (a strided view of state['values']): it
is flipped during capture, the stray sigmoid rewrites it, its checksum moves, and capture is
refused (ran work outside the graph, exit 2).
"""
import torch

PARAMS = {"nodes": 2048, "degree": 16, "dim": 128, "dense_out": False}


def setup(nodes, degree, dim, dense_out):
    torch.manual_seed(0)
    # each node's neighbours: degree distinct columns, sorted (a valid CSR structure)
    near = torch.arange(nodes)[:, None] + torch.arange(degree)[None, :] * (nodes // degree)
    col = (near % nodes).sort(dim=1).values.reshape(-1).cuda()
    crow = torch.arange(0, nodes * degree + 1, degree, device="cuda")
    edge_logits = torch.randn(nodes * degree, device="cuda")  # from the layer's attention
    values = torch.empty(nodes * degree, device="cuda")
    torch.sigmoid(edge_logits, out=values)  # resumed: the last step's weights
    adj = torch.sparse_csr_tensor(crow, col, values, (nodes, nodes))
    torch.cuda.synchronize()
    return {"x": torch.randn(nodes, dim, device="cuda"),
            "w": torch.randn(dim, dim, device="cuda") / dim ** 0.5,
            "h": torch.zeros(nodes, dim, device="cuda"),
            "edge_logits": edge_logits, "crow": crow, "col": col, "values": values,
            "adj": adj, "side": torch.cuda.Stream(), "dense_out": dense_out}


def step(state):
    torch.matmul(state["x"], state["w"], out=state["h"])  # in the graph
    with torch.cuda.stream(state["side"]):  # the bug: no wait_stream either way
        torch.sigmoid(state["edge_logits"], out=state["adj"].values())


def outputs(state):
    adj = state["adj"]
    return {"h": state["h"],
            "edge_weights": adj.values() if state["dense_out"] else adj}
