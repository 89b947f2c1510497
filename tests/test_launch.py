"""Programmatic dependent launch (accelgraph_cli/cuda/launch.py), without a GPU.

Which kernels may be launched so is read from their source: only a kernel whose body begins
with its wait. The launch itself is checked against a stand-in for CuPy and the driver call:
what it packs for each argument, and when it leaves the launch to CuPy. The GPU tier checks
that CUDA records programmatic edges and that replays keep eager's bits
(tests/gpu/test_launch_gpu.py).
"""

import ctypes
import types

import numpy
import pytest

from accelgraph_cli.cuda import kernel_loader, launch


@pytest.mark.parametrize("filename", ["elementwise.cu", "gemm.cu", "saxpy.cu", "softmax.cu",
                                      "stencil.cu"])
def test_every_bundled_kernel_begins_with_its_wait(filename):
    source = kernel_loader.kernel_source(filename)
    names = kernel_loader.kernel_names(filename)
    assert names
    assert [name for name in names if not launch.waits(source, name)] == []


DEFINITION = """\
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define WAIT_FOR_PRIOR_GRID() asm volatile("griddepcontrol.wait;" ::: "memory")
#else
#define WAIT_FOR_PRIOR_GRID() ((void)0)
#endif
"""
KERNEL = 'extern "C" __global__ void {launch}{name}(float* x, int n)\n{{\n{body}}}\n'
WAITING = "    WAIT_FOR_PRIOR_GRID();\n    x[0] = 1.0f;\n"
NOT_WAITING = "    x[0] = 1.0f;\n"


def kernel(body, name="k", launch_bounds=""):
    return KERNEL.format(launch=launch_bounds, name=name, body=body)


@pytest.mark.parametrize("body, expected", [
    (WAITING, True),
    ("    // the comment first\n\n    /* and another */ WAIT_FOR_PRIOR_GRID( ) ;\n", True),
    ("    x[0] = 1.0f;\n    WAIT_FOR_PRIOR_GRID();\n", False),  # a write before the wait
    ("    const float v = x[0];\n    WAIT_FOR_PRIOR_GRID();\n", False),
    (NOT_WAITING, False),
    ("    /* WAIT_FOR_PRIOR_GRID(); */\n    x[0] = 1.0f;\n", False),
    ("    // WAIT_FOR_PRIOR_GRID();\n    x[0] = 1.0f;\n", False),
])
def test_only_a_kernel_whose_body_begins_with_the_wait_waits(body, expected):
    assert launch.waits(DEFINITION + kernel(body), "k") is expected
    bounded = DEFINITION + kernel(body, launch_bounds="__launch_bounds__(256, 2) ")
    assert launch.waits(bounded, "k") is expected


def test_waits_names_one_kernel_not_its_neighbour():
    source = DEFINITION + kernel(NOT_WAITING, name="a") + kernel(WAITING)
    assert not launch.waits(source, "a")
    assert launch.waits(source, "k")
    assert not launch.waits(source, "missing")


@pytest.mark.parametrize("source", [
    # the waiting definition only in a comment, above the real one
    DEFINITION + "/*\n" + kernel(WAITING) + "*/\n" + kernel(NOT_WAITING),
    DEFINITION + "// " + kernel(WAITING).replace("\n", " ") + "\n" + kernel(NOT_WAITING),
    # two definitions, one compiled out
    DEFINITION + "#if 0\n" + kernel(WAITING) + "#else\n" + kernel(NOT_WAITING) + "#endif\n",
    # the kernel inside a conditional block of its own
    DEFINITION + "#ifdef SLOW\n" + kernel(WAITING) + "#endif\n",
    # the wait defined as nothing, or as something else, or redefined later
    "#define WAIT_FOR_PRIOR_GRID()\n" + kernel(WAITING),
    DEFINITION.replace("griddepcontrol.wait;", "nanosleep.u32 1;") + kernel(WAITING),
    DEFINITION.replace(">= 900", ">= 1000") + kernel(WAITING),
    DEFINITION + "#undef WAIT_FOR_PRIOR_GRID\n#define WAIT_FOR_PRIOR_GRID()\n" + kernel(WAITING),
    # no definition at all (the name would not compile, but say no anyway)
    kernel(WAITING),
    # a // comment ending in a backslash takes the next line with it
    DEFINITION + kernel("    // see c:\\\n    WAIT_FOR_PRIOR_GRID();\n    x[0] = 1.0f;\n"),
])
def test_a_wait_that_would_not_be_compiled_in_does_not_count(source):
    assert not launch.waits(source, "k")


class _Array:
    def __init__(self, ptr):
        self.data = types.SimpleNamespace(ptr=ptr)


@pytest.fixture
def fake(monkeypatch):
    """A stand-in for CuPy (a stream, its capture status, a device of compute capability
    9.0) and for cuLaunchKernelEx, which records what each launch passed."""
    state = types.SimpleNamespace(capturing=1, capability="90", stream=0x5000, launches=[],
                                  cupy_launches=[], status=0, configs=[])

    def launch_ex(config, function, params, extra):
        state.configs.append(config)
        attribute = config.attributes.contents
        args = [ctypes.c_uint64.from_address(params[i]).value for i in range(state.count)]
        state.launches.append(dict(
            grid=(config.grid_x, config.grid_y, config.grid_z),
            block=(config.block_x, config.block_y, config.block_z),
            shared=config.shared_bytes, stream=config.stream, function=function, args=args,
            attribute=(attribute.id, attribute.value.int_value, config.attribute_count)))
        return state.status

    attribute = launch._Attribute()
    attribute.id = 6
    attribute.value.int_value = 1
    driver = types.SimpleNamespace(config=launch._Config, launch=launch_ex,
                                   attribute=attribute, attribute_pointer=ctypes.pointer(attribute))

    class DriverError(RuntimeError):
        pass

    runtime = types.SimpleNamespace(streamIsCapturing=lambda stream: state.capturing,
                                    getDevice=lambda: 0)
    cupy = types.SimpleNamespace(
        ndarray=_Array,
        cuda=types.SimpleNamespace(
            runtime=runtime,
            get_current_stream=lambda: types.SimpleNamespace(ptr=state.stream),
            Device=lambda device: types.SimpleNamespace(compute_capability=state.capability),
            driver=types.SimpleNamespace(CUDADriverError=DriverError)))
    monkeypatch.setattr(launch._cuda, "require_cuda", lambda: cupy)
    monkeypatch.setitem(launch._DRIVER, "driver", driver)
    monkeypatch.setattr(launch, "_CAPABLE", {})
    monkeypatch.setattr(launch, "_ENABLED", True)

    class Kernel:  # a cupy.RawKernel: called for CuPy's own launch
        kernel = types.SimpleNamespace(ptr=0xF00)
        ptx_version = 90  # CuPy's: the virtual architecture the kernel was compiled for

        def __call__(self, grid, block, args, shared_mem=0):
            state.cupy_launches.append((grid, block, args, shared_mem))

    state.kernel = Kernel()
    state.DriverError = DriverError
    return state


ARGS = (_Array(0x7F00_0000_1000), numpy.float32(-1.5), numpy.int32(-5), numpy.int32(7),
        numpy.uint64(0), numpy.uint64(2**63 + 1))


def test_a_capturing_launch_packs_each_argument_in_its_slot(fake):
    fake.count = len(ARGS)
    launch.Launcher(fake.kernel, True)((2, 3), (256,), ARGS, shared_mem=4096)
    assert fake.cupy_launches == []
    (done,) = fake.launches
    assert done["args"] == [0x7F00_0000_1000, int(numpy.float32(-1.5).view(numpy.uint32)),
                            2**32 - 5, 7, 0, 2**63 + 1]
    # the 32-bit values are the low half of their slot, as the kernel reads them
    assert ctypes.c_float.from_buffer(ctypes.c_uint64(done["args"][1])).value == -1.5
    assert ctypes.c_int32.from_buffer(ctypes.c_uint64(done["args"][2])).value == -5
    assert done["grid"] == (2, 3, 1) and done["block"] == (256, 1, 1)
    assert done["shared"] == 4096 and done["stream"] == 0x5000 and done["function"] == 0xF00
    assert done["attribute"] == (6, 1, 1)  # programmatic stream serialization, on


@pytest.mark.parametrize("change", [
    "not capturing", "capture invalidated", "legacy stream", "older device", "kernel does not wait",
    "switched off", "another argument type", "query refused", "compiled for an older device",
])
def test_other_launches_go_through_cupy(fake, monkeypatch, change):
    fake.count = len(ARGS)
    args, waits = ARGS, True
    if change == "not capturing":
        fake.capturing = 0
    elif change == "capture invalidated":
        fake.capturing = 2
    elif change == "legacy stream":
        fake.stream = 0
    elif change == "older device":
        fake.capability = "80"
    elif change == "kernel does not wait":
        waits = False
    elif change == "switched off":
        monkeypatch.setattr(launch, "_ENABLED", False)
    elif change == "another argument type":
        args = ARGS + (numpy.float64(1.0),)  # a double: CuPy knows how to pass it
    elif change == "compiled for an older device":
        fake.kernel.ptx_version = 86
    elif change == "query refused":
        def refuse(stream):
            raise RuntimeError("cudaErrorStreamCaptureImplicit")
        launch._cuda.require_cuda().cuda.runtime.streamIsCapturing = refuse
    launch.Launcher(fake.kernel, waits)((4,), (128,), args)
    assert fake.launches == []
    assert fake.cupy_launches == [((4,), (128,), args, 0)]


def test_a_configuration_is_made_once_a_shape_and_stream(fake):
    fake.count = len(ARGS)
    launcher = launch.Launcher(fake.kernel, True)
    launcher((2, 3), (256,), ARGS)
    launcher((2, 3), (256,), ARGS)
    fake.stream = 0x6000
    launcher((2, 3), (256,), ARGS)
    launcher([5], [64], ARGS)  # lists (unhashable): a configuration made for the launch
    first, again, other_stream, listed = fake.configs
    assert again is first and other_stream is not first
    assert [done["stream"] for done in fake.launches] == [0x5000, 0x5000, 0x6000, 0x6000]
    assert fake.launches[-1]["grid"] == (5, 1, 1) and fake.launches[-1]["block"] == (64, 1, 1)


def test_each_thread_fills_its_own_argument_slots():
    import threading

    mine = launch._buffers(3)
    assert launch._buffers(3) is mine
    theirs = []
    thread = threading.Thread(target=lambda: theirs.append(launch._buffers(3)))
    thread.start()
    thread.join()
    assert theirs[0][0] is not mine[0]
    slots, params = mine
    assert [params[i] for i in range(3)] == [ctypes.addressof(slots) + 8 * i for i in range(3)]


def test_a_refused_launch_says_so_and_later_launches_go_through_cupy(fake):
    fake.count = len(ARGS)
    fake.status = 400  # CUDA_ERROR_INVALID_HANDLE
    launcher = launch.Launcher(fake.kernel, True)
    with pytest.raises(launch.LaunchError, match="ACCELGRAPH_PDL=0") as raised:
        launcher(1, 32, ARGS)
    assert isinstance(raised.value.__cause__, fake.DriverError)
    assert fake.cupy_launches == []
    launcher(1, 32, ARGS)  # the device is no longer given programmatic launches
    assert len(fake.launches) == 1 and fake.cupy_launches == [(1, 32, ARGS, 0)]


def test_launchers_are_cached_and_know_whether_their_kernel_waits(monkeypatch):
    monkeypatch.setattr(kernel_loader, "get_kernel", lambda filename, name: ("kernel", name))
    monkeypatch.setattr(kernel_loader, "_LAUNCHERS", {})
    first = kernel_loader.launcher("saxpy.cu", "saxpy")
    assert first is kernel_loader.launcher("saxpy.cu", "saxpy")
    assert first.kernel == ("kernel", "saxpy") and first.waits


def test_a_launcher_reads_the_source_its_kernel_was_compiled_from(monkeypatch):
    # the file on disk waits (every bundled kernel does); what was compiled did not
    monkeypatch.setattr(kernel_loader, "get_kernel", lambda filename, name: ("kernel", name))
    monkeypatch.setattr(kernel_loader, "_LAUNCHERS", {})
    monkeypatch.setitem(kernel_loader._KERNEL_SOURCES, ("saxpy.cu", "saxpy"),
                        DEFINITION + kernel(NOT_WAITING, name="saxpy"))
    assert not kernel_loader.launcher("saxpy.cu", "saxpy").waits


def test_the_structures_match_cuda_h():
    # cuda.h: CUlaunchAttributeValue is a 64-byte union; CUlaunchAttribute an id padded to 8
    # bytes, then the value; CUlaunchConfig seven unsigned ints, the stream, the attribute
    # pointer and their count
    assert ctypes.sizeof(launch._Value) == 64
    assert ctypes.sizeof(launch._Attribute) == 72
    assert launch._Attribute.value.offset == 8
    assert launch._Config.stream.offset == 32
    assert launch._Config.attributes.offset == 40
    assert launch._Config.attribute_count.offset == 48
    assert ctypes.sizeof(launch._Config) == 56


class _Status:
    def __init__(self, name):
        self.name = name

    def __int__(self):
        return 0 if self.name == "cudaSuccess" else 913


OK = _Status("cudaSuccess")
LOSSY = _Status("cudaErrorLossyQuery")


def _runtime(edges, with_data, lossy=False, v2=False):
    """A stand-in for cuda.bindings' runtime: cudaGraphGetEdges as CUDA 13's (edge data) or
    CUDA 12's (none, and refusing a lossy query), with or without CUDA 12.3's _v2."""
    calls = []
    data = [types.SimpleNamespace(type=kind) for _, _, kind in edges]

    def get(graph, count):
        calls.append(("get", count))
        if not count:
            return (OK, None, None, None, len(edges)) if with_data else (OK, None, None, len(edges))
        if lossy:
            return (LOSSY, None, None, 0)
        sources, targets = [a for a, _, _ in edges], [b for _, b, _ in edges]
        if with_data:
            return (OK, sources, targets, data, len(edges))
        return (OK, sources, targets, len(edges))

    def get_v2(graph, count):
        calls.append(("v2", count))
        return (OK, [a for a, _, _ in edges], [b for _, b, _ in edges], data, len(edges))

    runtime = types.SimpleNamespace(cudaGraphGetEdges=get)
    if v2:
        runtime.cudaGraphGetEdges_v2 = get_v2
    return runtime, calls


@pytest.mark.parametrize("bindings", ["cuda13", "cuda12 default edges", "cuda12.3 lossy",
                                      "cuda12 old driver, default edges", "cuda12 old, lossy"])
def test_graph_edges_reads_each_bindings_shape(monkeypatch, bindings):
    from accelgraph_cli.cuda import live
    from accelgraph_cli.errors import CudaError

    edges = [(11, 12, 0), (12, 13, 1)]
    runtime, calls = _runtime(edges, with_data=bindings == "cuda13", lossy="lossy" in bindings,
                              v2="old" not in bindings and bindings != "cuda13")
    monkeypatch.setattr(live._cuda, "bindings", lambda: (runtime, None))
    if bindings == "cuda12 old, lossy":  # no _v2 to ask: the error stands
        with pytest.raises(CudaError, match="cudaErrorLossyQuery"):
            live.graph_edges(1)
        return
    found = live.graph_edges(1)
    if bindings == "cuda13" or "lossy" in bindings:
        assert found == edges
    else:  # CUDA 12's plain call, all edges default: no data, and _v2 never asked
        assert found == [(11, 12, None), (12, 13, None)]
        assert [name for name, _ in calls] == ["get", "get"]
    if bindings == "cuda12.3 lossy":
        assert calls == [("get", 0), ("get", 2), ("v2", 2)]


def test_prepare_looks_the_kernel_up_before_any_capture(fake):
    fake.count = len(ARGS)
    asked = []
    kind = type(fake.kernel)
    kind.ptx_version = property(lambda self: asked.append("ptx_version") or 90)
    try:
        launcher = launch.Launcher(fake.kernel, True)
        launcher.prepare()
        assert asked == ["ptx_version"]
        launcher((1,), (32,), ARGS)  # under capture: nothing more asked of the driver
        assert asked == ["ptx_version"] and fake.launches[0]["function"] == 0xF00
        launch.Launcher(fake.kernel, False).prepare()  # a kernel that does not wait: nothing
        assert asked == ["ptx_version"]
    finally:
        kind.ptx_version = 90
