"""Graphs that are right (tests/right_graphs/) must earn "check: ok", and not be refused.

Each file is a correct graph that the check once failed or crashed on: dropout drawn from
torch's CUDA generators (the default one, and one the state keeps), gradient accumulation in
.grad across two graphs, a cache that is one slot of a process-wide pool, a running total
kept in a torch.Tensor subclass, an int8 weight in a wrapper subclass (no storage of its own),
an output that is an expanded view, a graph that reads what the graph before it allocated,
inference-mode slots of one pool (in float32 and bfloat16), an inference-mode output the
graph allocates, an outputs() that copies into one module-level buffer, a sparse output,
and host arrays a graph's copies and host node write and read (a running count, tokens fed
back through pinned memory), a workspace held as raw CuPy memory. A false alarm
costs users' trust as a false pass does.
"""

import importlib.util
from pathlib import Path

import pytest

from accelgraph_cli.run import protocol as runner
from accelgraph_cli.run.scenario import load_scenario, parse_params

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.gpu

RIGHT = ROOT / "tests" / "right_graphs"
HAS_TORCH = importlib.util.find_spec("torch") is not None

CASES = [
    ("torch_dropout_seeded", []),
    ("torch_dropout_seeded", ["own_generator=true"]),
    ("torch_grad_accum", []),
    ("torch_grad_accum", ["grads_in_outputs=true"]),
    ("kv_pool_views", []),
    ("kv_pool_views", ["in_pool=false"]),
    ("torch_subclass_total", []),
    ("torch_expanded_mask", []),
    ("encode_then_head", []),
    ("torch_wrapper_weight", []),
    ("torch_kv_slots_inference", []),  # restore into inference-mode slots of one pool
    ("torch_kv_slots_inference", ["bf16=true"]),  # bfloat16, which CuPy has no dtype for
    ("torch_inference_logits", []),  # the complement fill of an inference-mode output
    ("staging_copy", []),  # outputs() copies into one module-level buffer
    ("torch_sparse_edge_weights", []),  # a sparse CSR output
    ("host_running_total", []),  # host arrays a graph's copy and host node write and read
    ("host_token_feedback", []),  # tokens through pinned memory, checked alone first
    ("torch_prefill_decode_logits", []),  # prefill alone writes no output: decode's logits
    ("torch_prefill_decode_logits", ["cache_out=true"]),  # ... and the cache it does write
    ("torch_jagged_outputs", []),  # a jagged nested output: ragged sizes of two states differ
    ("host_token_pointer", []),  # tokens through a pinned buffer the state holds as CuPy's
    ("torch_host_position_ids", []),  # an expanded CPU view in the state, restored
    ("torch_ragged_window_cache", []),  # a jagged output whose lengths the step advances
    ("raw_workspace_steps", []),  # two graphs share a workspace held as a MemoryPointer
    ("outputs_cached_buffer", []),  # outputs() makes a buffer in the state on its first call
]
# graphs whose steps write no output when checked alone: not run alone, checked with the others
WRITES_NO_OUTPUT = {("torch_prefill_decode_logits", ()): "prefill"}


@pytest.mark.parametrize("stem, params", CASES, ids=[" ".join([s, *p]) for s, p in CASES])
def test_a_right_graph_earns_check_ok(stem, params):
    if stem.startswith("torch_") and not HAS_TORCH:
        pytest.skip("torch is not installed")
    scen = load_scenario(RIGHT / f"{stem}.py")
    result = runner.capture(scen, parse_params(scen.info.params, params))
    for _ in range(2):  # a second check starts from the same bytes and generator positions
        checked = runner.check(result)
        assert checked.ok and checked.verdict == "ok", checked.to_dict()
        idle = WRITES_NO_OUTPUT.get((stem, tuple(params)))
        for name, c in checked.per_graph.items():
            if name == idle:
                assert not c.ran and "write no output" in c.note, checked.to_dict()
            else:
                assert c.ok and c.ran, checked.to_dict()
    if stem == "torch_prefill_decode_logits" and params:  # the cache compared, logits not
        assert "'logits' left as it was" in checked.per_graph["prefill"].note, checked.to_dict()
    if stem == "encode_then_head":  # head reads what encode's graph allocated
        assert "after encode" in checked.per_graph["head"].note, checked.to_dict()
    if stem == "torch_wrapper_weight":  # the guard reads what the wrapper holds
        paths = {p for r in result.snapshot.regions for p in r.paths}
        assert {"state['w'].q", "state['w'].scale"} <= paths, paths
