"""The capture guard's GPU-free half: finding a state's arrays, the lines that leave the
capturing stream, and the messages for stray work and empty graphs."""

import collections
import types

import numpy
import pytest

from accelgraph_cli.run import guard
from accelgraph_cli.run.scenario import ScenarioError, inspect_scenario
from accelgraph_cli.run.statewalk import find_arrays


def _is_array(obj):
    return isinstance(obj, numpy.ndarray)


class FakeModule:
    """Shaped like torch.nn.Module for the walker: named parameters and buffers."""

    def __init__(self, params, buffers):  # under torch's own names for its tables
        self._parameters, self._buffers = params, buffers

    def named_parameters(self):
        return list(self._parameters.items())

    def named_buffers(self):
        return list(self._buffers.items())


def test_find_arrays_names_every_array_by_the_path_a_user_reads():
    w1, w2, b, y8, mask, extra = (numpy.zeros(i + 1) for i in range(6))
    obj = types.SimpleNamespace(extra=extra, label="x", count=3)
    model = FakeModule({"fc1.weight": w1, "fc2.weight": w2}, {"mask": mask})
    state = {"model": model, "b": b, "y": {"batch8": y8}, "list": [1, "s", (b, obj)],
             "none": None}
    found = find_arrays(state, _is_array)
    assert [path for path, _ in found] == [
        "state['model'].fc1.weight", "state['model'].fc2.weight", "state['model'].mask",
        "state['b']", "state['y']['batch8']", "state['list'][2][1].extra",
    ]
    assert [a is e for (_, a), e in zip(found, (w1, w2, mask, b, y8, extra))] == [True] * 6


class FakeTorchModule(FakeModule):
    """Also named_modules(), and attributes torch keeps (underscored) beside plain ones."""

    def __init__(self, params, buffers, children=()):
        super().__init__(params, buffers)
        self._modules = dict(children)
        self.training = True

    def named_parameters(self):  # with the submodules' own, as torch's does
        return super().named_parameters() + [
            (f"{name}.{sub}", p) for name, child in self._modules.items()
            for sub, p in child.named_parameters()]

    def named_modules(self):
        found = [("", self)]
        for name, child in self._modules.items():
            found += [(f"{name}.{sub}" if sub else name, m) for sub, m in child.named_modules()]
        return found


def test_find_arrays_sees_what_callable_and_slotted_objects_and_modules_hold():
    # A correct scenario whose state is held this way failed its check (the arrays were not
    # seen, so the check took its outputs for memory the graphs allocated), and stray work on
    # them went unseen.
    class Step:  # a step kept as an instance with __call__
        def __init__(self, x):
            self.x = x

        def __call__(self):
            pass

    class Slotted:
        __slots__ = ("y", "unset", "__private")

        def __init__(self, y):
            self.y = y
            self.__private = y  # the same array: reported once, under its first path

    class Guarded(Slotted):  # a property over a slot is not run
        @property
        def unset(self):
            raise RuntimeError("not to be read")

    x, y, w, kv, inner_kv, q, out = (numpy.zeros(i + 1) for i in range(7))
    inner = FakeTorchModule({"weight": w}, {})
    inner.kv = inner_kv
    model = FakeTorchModule({}, {}, children=[("block", inner)])
    model.kv = kv  # a cache kept as a plain attribute, not a registered buffer
    model._out = out  # and one kept private: an output shared by every state went unseen
    model._forward_hooks = {7: Step(numpy.zeros(9))}  # torch's own table, keyed by a counter
    # torch shares across modules: not searched (the path would differ between two states)
    model.config = {"layers": 1}
    state = {"step": Step(x), "slotted": Slotted(y), "model": model,
             "queue": collections.deque([q]), "guarded": Guarded(numpy.zeros(2))}
    found = find_arrays(state, _is_array)
    assert [path for path, _ in found] == [
        "state['step'].x", "state['slotted'].y", "state['model'].block.weight",
        "state['model'].kv", "state['model']._out", "state['model'].block.kv",
        "state['queue'][0]", "state['guarded'].y"]
    hidden = Slotted(None)
    hidden.y, z = None, numpy.ones(3)
    hidden._Slotted__private = z
    assert find_arrays({"s": hidden}, _is_array) == [("state['s']._Slotted__private", z)]
    assert [a is e for (_, a), e in zip(found, (x, y, w, kv, out, inner_kv, q))] == [True] * 7


def test_find_arrays_sees_the_arguments_a_partial_binds():
    # A step kept as functools.partial(run, weights, out=buffer): its arrays are in the
    # partial's arguments, which its attributes do not hold (they went unseen), and in any
    # attribute set on it.
    import functools

    def run(w, *, out):
        pass

    w, out, extra = numpy.zeros(1), numpy.zeros(2), numpy.zeros(3)
    step = functools.partial(run, [w], out=out)
    step.extra = extra
    found = find_arrays({"step": step}, _is_array)
    assert found == [("state['step'].args[0][0]", w), ("state['step'].keywords['out']", out),
                     ("state['step'].extra", extra)]


def test_dict_keys_that_are_not_plain_values_show_as_type_and_position():
    class Parameter:  # hashable, as torch's parameters are
        pass

    weight, moment = numpy.zeros(2), numpy.ones(2)
    long_key = "k" * 61
    state = {"opt": {Parameter(): {"exp_avg": moment}}, long_key: weight, 3: numpy.ones(1)}
    found = find_arrays(state, _is_array)
    # the optimizer-style dict is keyed by a parameter: the key is not searched, the value is
    assert [path for path, _ in found] == [
        "state['opt'][<Parameter #0>]['exp_avg']", "state[<str #1>]", "state[3]"]


class _Leaf(numpy.ndarray):
    """An array with torch's autograd attributes: ``is_leaf`` and a ``.grad``."""

    is_leaf = True
    grad = None


def test_find_arrays_reaches_the_gradients_that_leaf_tensors_hold():
    # .grad was never walked (an array is not searched further), so a training step's
    # gradients, accumulated in place, were neither checksummed nor restored: a correct
    # gradient-accumulation graph failed the check, and stray work on them went unseen
    weight = numpy.zeros(4).view(_Leaf)
    weight.grad = numpy.ones(4)
    bias = numpy.zeros(2).view(_Leaf)  # no gradient yet
    inner = numpy.zeros(3).view(_Leaf)
    inner.is_leaf = False  # a non-leaf: torch warns when its .grad is read
    inner.grad = numpy.ones(3)
    state = {"w": weight, "b": bias, "h": inner, "same": weight.grad}
    assert find_arrays(state, _is_array) == [
        ("state['w']", weight), ("state['w'].grad", weight.grad), ("state['b']", bias),
        ("state['h']", inner)]


def test_find_arrays_reports_an_array_once_ends_cycles_and_skips_code():
    a = numpy.ones(3)
    state = {"a": a, "again": a}
    state["self"] = state
    state["fn"] = lambda: a
    state["mod"] = numpy
    assert find_arrays(state, _is_array) == [("state['a']", a)]


def test_find_arrays_stops_at_the_depth_limit():
    # 16 links down a linked list was past the limit of 12, and an output there was neither
    # checksummed nor flipped nor restored; the limit only keeps a pathological state from
    # exhausting the walk's recursion
    from accelgraph_cli.run.statewalk import MAX_DEPTH

    def chain(links):
        state = cursor = {}
        for _ in range(links):
            cursor["next"] = {}
            cursor = cursor["next"]
        cursor["x"] = deep
        return state

    deep = numpy.ones(1)
    assert find_arrays(chain(16), _is_array) == [("state" + "['next']" * 16 + "['x']", deep)]
    assert find_arrays(chain(MAX_DEPTH - 1), _is_array) != []
    assert find_arrays(chain(MAX_DEPTH), _is_array) == []


def test_stream_lines_finds_with_blocks_and_stream_calls():
    source = (
        "import cupy\n"                                   # 1
        "def step(state):\n"                              # 2
        "    x = state['x'] * 2\n"                        # 3
        "    with state['side']:\n"                       # 4: not named stream
        "        pass\n"                                  # 5
        "    with state['side_stream']:\n"                # 6
        "        x += 1\n"                                # 7
        "    s = cupy.cuda.Stream(non_blocking=True)\n"   # 8
        "    s.use()\n"                                   # 9
        "def other():\n"                                  # 10
        "    with my_stream: pass\n"                      # 11: another function
    )
    assert guard.stream_lines(source, "step") == [6, 8, 9]
    assert guard.stream_lines(source, "missing") == []
    assert guard.stream_lines("def step(:\n", "step") == []


def test_trace_off_stream_lines_records_lines_run_on_another_stream(tmp_path):
    path = tmp_path / "scen.py"
    path.write_text(
        "def step(streams):\n"          # 1
        "    a = 1\n"                   # 2: capturing stream
        "    streams[0] = 7\n"          # 3: switches (like entering `with side:`)
        "    b = 2\n"                   # 4: runs on stream 7
        "    c = 3\n"                   # 5: on stream 7
        "    streams[0] = 5\n"          # 6: still on 7 while this line runs
        "    d = 4\n"                   # 7: back on the capturing stream
    )
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    streams = [5]
    with guard.trace_off_stream_lines(path, 5, lambda: list(streams)) as lines:
        namespace["step"](streams)
    assert lines == [4, 5, 6]


def test_trace_ignores_other_files(tmp_path):
    path = tmp_path / "scen.py"
    path.write_text("x = 1\n")
    with guard.trace_off_stream_lines(path, 5, lambda: [9]) as lines:
        y = 1 + 1  # this file is not the scenario
    assert y == 2 and lines == []


def test_stray_work_message_names_changes_lines_and_fix():
    message = guard.stray_work_message(
        "step", ["state['y']", "state['z']"], ["s.py:14"], frozenset({"cupy"}))
    assert message == (
        "capture of 'step' ran work outside the graph: state['y'], state['z'] changed while "
        "capturing, and a capture only records work; work launched off the capturing stream at "
        "s.py:14 ran eagerly and is missing from the graph; fix: " + guard.FIX_STRAY
    )
    many = guard.stray_work_message("g", [f"state[{i}]" for i in range(6)], [])
    assert "state[3] and 2 more changed" in many
    assert "a library it calls launches on a stream of its own" in many
    torch = guard.stray_work_message("step", ["state['y']"], ["t.py:3"], frozenset({"torch"}))
    assert "torch launches on its own current stream" in torch


def test_stray_work_message_names_what_the_gpu_ran_alone_or_beside_what_changed():
    ran = ["kernel k1", "kernel k1", "copy (dtod) of 8 bytes", "kernel k2", "memset of 4 bytes"]
    alone = guard.stray_work_message("step", [], ["s.py:7"], executed=ran)
    assert alone.startswith(
        "capture of 'step' ran work outside the graph: the GPU ran 5 operation(s) while "
        "capturing (kernel k1 (x2), copy (dtod) of 8 bytes, kernel k2 and 1 more), and a "
        "capture only records work; work launched off the capturing stream at s.py:7")
    both = guard.stray_work_message("step", ["state['y']"], [], executed=["kernel k1"])
    assert ("state['y'] changed while capturing and the GPU ran 1 operation(s) while "
            "capturing (kernel k1)") in both


def test_empty_graph_message_names_torch_only_when_imported():
    plain = guard.empty_graph_message("step", frozenset({"cupy"}), "s.py:9")
    assert plain.startswith("capture of 'step' (s.py:9) recorded no work (the graph is empty)")
    assert "torch" not in plain
    assert plain.endswith(guard.EXPECT_EMPTY_HINT)
    with_torch = guard.empty_graph_message("step", frozenset({"torch", "cupy"}))
    assert "imports torch" in with_torch


def _scenario(tmp_path, body):
    path = tmp_path / "s.py"
    path.write_text('"""Doc."""\nimport cupy\nimport torch.nn as nn\nfrom numpy import zeros\n'
                    "def setup():\n    return {}\ndef step(state):\n    pass\n"
                    'BACKEND = "cupy"\n' + body)
    return path


def test_scenario_info_reads_expect_empty_and_imports(tmp_path):
    info = inspect_scenario(_scenario(tmp_path, ""))
    assert info.expect_empty is False and not info.expects_empty("step")
    assert info.imports == frozenset({"cupy", "torch", "numpy"})
    info = inspect_scenario(_scenario(tmp_path, "EXPECT_EMPTY = True\n"))
    assert info.expects_empty("step") and info.expects_empty("other")
    info = inspect_scenario(_scenario(tmp_path, "EXPECT_EMPTY = ['step']\n"))
    assert info.expect_empty == ("step",) and info.expects_empty("step")
    info = inspect_scenario(_scenario(tmp_path, "EXPECT_EMPTY = []\n"))
    assert info.expect_empty == () and not info.expects_empty("step")


def test_a_step_file_naming_another_graph_in_expect_empty_is_refused(tmp_path):
    # A step(state) file has one graph, 'step': any other name is a typo that would leave
    # the empty-graph guard on where the author meant it off (or the other way round).
    path = _scenario(tmp_path, "EXPECT_EMPTY = ['step', 'stpe']\n")
    with pytest.raises(ScenarioError) as info:
        inspect_scenario(path)
    assert str(info.value).startswith(f"{path}:10: EXPECT_EMPTY names 'stpe', but a scenario "
                                      "with step(state) has one graph, 'step'")


@pytest.mark.parametrize("value", ["'yes'", "1", "[1, 2]", "flag"])
def test_scenario_rejects_a_bad_expect_empty(tmp_path, value):
    path = _scenario(tmp_path, f"EXPECT_EMPTY = {value}\n")
    with pytest.raises(ScenarioError) as info:
        inspect_scenario(path)
    assert str(info.value) == (f"{path}:10: EXPECT_EMPTY must be True, False, or a literal list "
                               "of graph names")


def _allocation(value):
    """(pointer, bytes, item size, owner) of the NumPy allocation behind a float array or
    view, as snapshot.float_allocation describes CuPy arrays and CUDA tensors."""
    if value.dtype.kind != "f":
        return None
    base = value if value.base is None else value.base
    return base.__array_interface__["data"][0], base.nbytes, value.itemsize, base


def test_the_outputs_flipped_during_capture_are_the_state_allocations_behind_float_outputs():
    from accelgraph_cli.cuda.snapshot import pick_allocations

    out = numpy.zeros((4, 8), dtype=numpy.float32)
    acc, n, x = numpy.ones(4), numpy.arange(4), numpy.zeros(3, dtype=numpy.float16)
    state = {"out": out, "acc": acc, "n": n, "x": x}
    pointers = {_allocation(a)[0] for a in (out, acc, x)} | {n.__array_interface__["data"][0]}
    outputs = [out[:1], out[:2], out, acc, n, x + 1]  # bucket views of one buffer, then...
    picked = pick_allocations(outputs, pointers, _allocation)
    # ... out once (its views overlap: flipping each would flip words back), acc; not the
    # integers n, not x + 1 (a new array, not the state's)
    assert [(p[0], p[1], p[2]) for p in picked] == [_allocation(out)[:3], _allocation(acc)[:3]]
    assert picked[0][3] is out and state["out"] is out


def test_capture_flips_nothing_when_outputs_needs_what_the_step_stores():
    from accelgraph_cli.run.protocol import _flip_state_outputs, _outputs_to_flip

    state = {"x": numpy.ones(4)}
    scenario = types.SimpleNamespace(outputs_fn=lambda s: {"logits": s["logits"]})  # set by step
    flipped = []  # outputs() raising KeyError is swallowed: the check reports it later
    _flip_state_outputs(_outputs_to_flip(scenario, state), find_arrays(state, _is_array),
                        flipped, None)
    assert flipped == []


def test_outputs_that_need_the_step_are_named_from_a_state_the_step_ran_on():
    # outputs() naming an array only the step stores raised before capture, and then no
    # output was flipped at all, also those the state held (stray work rewriting one with its
    # own value went unseen). Their paths are now read from the warm-up's state, after its
    # step; here as _output_paths reads them (views count; a new array is no state's).
    from accelgraph_cli.cuda.snapshot import output_paths

    def start(value):
        base = value if value.base is None else value.base
        return base.__array_interface__["data"][0]

    z, y, x = numpy.zeros(8), numpy.zeros(8), numpy.ones(8)
    warm = {"x": x, "y": y, "z": z, "tripled": x * 3}
    values = [y[:4], z, warm["tripled"], x + 1, z[2:]]
    arrays = [(f"state[{k!r}]", v) for k, v in warm.items()]
    assert output_paths(values, arrays, start) == ["state['y']", "state['z']",
                                                   "state['tripled']"]
    # (the captured state, before its step, cannot name them itself; the GPU tier's
    # lazy_output_side_stream checks that capture then flips y and z)
    from accelgraph_cli.run import protocol

    scenario = types.SimpleNamespace(outputs_fn=lambda s: {k: s[k] for k in ("y", "z", "tripled")})
    assert protocol._outputs_to_flip(scenario, {"y": y, "z": z}) is None


def test_an_allocation_is_flipped_by_its_smallest_float_and_only_when_aligned_to_it():
    from accelgraph_cli.cuda.snapshot import pick_allocations

    buf = numpy.zeros(8, dtype=numpy.float32)
    wide = buf.view(numpy.float64)  # listed first: every float32 word must still be flipped
    picked = pick_allocations([wide, buf], {_allocation(buf)[0]}, _allocation)
    assert [p[2] for p in picked] == [4]
    # a start not aligned to the item size: left out (a misaligned word access faults)
    odd = (2002, 64, 4, None), (1000, 64, 2, None)
    described = {id(v): d for v, d in zip(("odd4", "even2"), odd)}
    values = ["odd4", "even2"]
    assert pick_allocations(values, {2002, 1000}, lambda v: described[id(v)]) == [(1000, 64, 2, None)]


def test_windows_of_one_buffer_wrapped_apart_are_flipped_once_as_one_allocation():
    # cupy.asarray of two __cuda_array_interface__ windows of one buffer gives each its own
    # allocation, starting where the window starts: flipped apart, the bytes they share were
    # flipped twice, back to what they held, and stray work rewriting exactly those bytes
    # with their own value went unseen (the guard passed a graph missing that work)
    from accelgraph_cli.cuda.snapshot import pick_allocations

    a, b, c, d = object(), object(), object(), object()
    described = {"z": (1000, 4096, 4, a), "tail": (1000 + 4096 - 256, 256, 4, b),
                 "apart": (8192, 64, 8, c), "next": (8192 + 64, 64, 4, d)}
    picked = pick_allocations(["apart", "z", "tail", "next", "tail"], set(
        v[0] for v in described.values()), lambda v: described[v])
    # z and its tail: one allocation (z's span, both owners kept alive); allocations that
    # only touch stay apart; first-seen order
    assert picked == [(8192, 64, 8, c), (1000, 4096, 4, (a, b)), (8256, 64, 4, d)]
    # a window reaching past the one it starts in widens the merge; the smallest item size
    described = {"z": (1000, 128, 8, a), "mid": (1064, 128, 2, b), "last": (1180, 40, 4, c)}
    picked = pick_allocations(["z", "mid", "last"], {1000, 1064, 1180}, lambda v: described[v])
    assert picked == [(1000, 220, 2, (a, b, c))]
    # windows starting together keep each owner once
    described = {"one": (1000, 64, 4, a), "two": (1000, 128, 4, b), "again": (1000, 32, 4, b)}
    picked = pick_allocations(["one", "two", "again"], {1000}, lambda v: described[v])
    assert picked == [(1000, 128, 4, (a, b))]


def test_an_array_extent_is_the_bytes_its_strides_reach_as_numpy_counts_them():
    from accelgraph_cli.cuda.snapshot import extent

    base = numpy.zeros((6, 8), dtype=numpy.float32)
    views = [base, base[1:4, 2:7], base[::-1], base[:, ::-2], base.T, base[2:3, 5:6],
             numpy.broadcast_to(base[0], (5, 8)), base[:, 3][None, :]]
    bounds = getattr(numpy.lib, "array_utils", numpy).byte_bounds
    for view in views:
        ptr = view.__array_interface__["data"][0]
        assert extent(ptr, view.shape, view.strides, view.itemsize) == bounds(view)
    assert extent(4096, (0, 8), (32, 4), 4) == (4096, 4096)  # empty: no bytes


def test_expect_empty_naming_a_graph_steps_does_not_return_is_refused(tmp_path):
    from accelgraph_cli.errors import AccelgraphError
    from accelgraph_cli.run.protocol import check_expect_empty

    path = tmp_path / "multi.py"
    path.write_text('"""Doc."""\nEXPECT_EMPTY = ["warm", "idel"]\n\ndef setup():\n    return {}'
                    "\n\ndef steps(state):\n    return {}\n")
    info = inspect_scenario(path)
    check_expect_empty(info, ["warm", "idel", "main"])  # every name is a graph steps() made
    with pytest.raises(AccelgraphError) as caught:
        check_expect_empty(info, ["warm", "idle"])
    assert str(caught.value) == (f"{path}:2: EXPECT_EMPTY names 'idel', which steps() does "
                                 "not return; its graphs: warm, idle")


def test_expect_empty_and_graph_names_are_cut_in_that_error(tmp_path):
    from accelgraph_cli.errors import AccelgraphError
    from accelgraph_cli.run.protocol import check_expect_empty

    long = "g" * 5000
    path = tmp_path / "multi.py"
    path.write_text(f'"""Doc."""\nEXPECT_EMPTY = ["{long}"]\n\ndef setup():\n    return {{}}'
                    "\n\ndef steps(state):\n    return {}\n")
    info = inspect_scenario(path)
    with pytest.raises(AccelgraphError) as caught:
        check_expect_empty(info, [f"{n}{long}" for n in range(100)])
    message = str(caught.value)
    assert message.startswith(f"{path}:2: EXPECT_EMPTY names '{'g' * 58}…, which steps() "
                              f"does not return; its graphs: 0{'g' * 58}…, 1{'g' * 58}…, ")
    assert message.endswith("…") and len(message) < len(str(path)) + 450
