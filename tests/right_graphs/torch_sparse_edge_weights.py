"""Correct on purpose: graph-attention edge weights written into a sparse CSR adjacency in
place; outputs() returns the adjacency, as the next layer consumes it.

The adjacency's structure (crow, col) is fixed; each step computes
w_e = sigmoid(s_src[row_e] + s_dst[col_e]) for every edge and writes it into adj.values()
(the CSR tensor's own values, aliased): gathers and one pointwise kernel, all capturable,
replayed exactly.

The walk once skipped sparse tensors (no storage of one piece), so the check took the output
for one the graphs allocated and called the complement fill, which asked target.stride():
torch raises "Sparse CSR tensors do not have strides". The walk now reaches a sparse
tensor's indices and values, and a sparse output is compared part by part (indices exactly),
its values filled only where the graphs allocated them.

--param dense_out=true names adj.values() instead: exit 0.

Expected: check: ok (exit 0); it once ended in an internal error (exit 70).
"""
import torch

PARAMS = {"nodes": 1024, "degree": 16, "dense_out": False}


def setup(nodes, degree, dense_out):
    torch.manual_seed(0)
    col = torch.randint(0, nodes, (nodes * degree,), device="cuda")
    crow = torch.arange(0, nodes * degree + 1, degree, device="cuda")
    row = torch.arange(nodes, device="cuda").repeat_interleave(degree)
    values = torch.zeros(nodes * degree, device="cuda")
    adj = torch.sparse_csr_tensor(crow, col, values, (nodes, nodes))
    return {"s_src": torch.randn(nodes, device="cuda"), "s_dst": torch.randn(nodes, device="cuda"),
            "row": row, "col": col, "values": values, "adj": adj, "dense_out": dense_out}


def step(state):
    score = (torch.index_select(state["s_src"], 0, state["row"])
             + torch.index_select(state["s_dst"], 0, state["col"]))
    torch.sigmoid(score, out=state["adj"].values())


def outputs(state):
    adj = state["adj"]
    return {"edge_weights": adj.values()} if state["dense_out"] else {"adj": adj}
