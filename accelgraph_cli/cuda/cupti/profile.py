"""Per-node profiles of graph replays, from CUPTI: which node costs what, and which line of
the scenario made it.

Two things are collected:

- **Where each node was made** (:class:`NodeOrigins`): while a graph is captured and
  instantiated, CUPTI's resource callbacks report every graph node created (with the Python
  stack of the thread that created it: capture creates a node inside the launch call that
  records it, so the stack is the scenario's call; a node made on a thread with no Python
  stack, such as autograd's engine running backward, is given the stack of the thread that
  started the recording as it stands then: during backward, the scenario's
  ``loss.backward()``) and every node
  cloned (instantiation clones the graph's nodes into the executable one, whose ids the
  activity records carry).
- **What each node cost** (:func:`profile_graph`): the graph is replayed with CUPTI's kernel,
  copy and memset activity records on; each record names the node that ran it and when.

The result is a *raw profile* document, computed into per-node times by
``model/profile.py`` (pure Python), so that a profile recorded here is read the same way
anywhere. CUPTI allows one callback subscriber a process: where another CUPTI client (a
profiler) holds it, :class:`NodeOrigins` reports itself off, and ``profile`` refuses (its
records could not be matched to the nodes without the clones' ids).
"""

from __future__ import annotations

import atexit
import linecache
import os
import sys
import sysconfig
import threading
from typing import Any

from .. import device as _cuda
from . import watch as _watch

_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LIBRARY_ROOTS = tuple(
    sorted({os.path.realpath(p) + os.sep for key in ("stdlib", "platstdlib", "purelib", "platlib")
            if (p := sysconfig.get_paths().get(key))}))
_USER_FILES: dict[str, bool] = {}

_SUBSCRIBER: dict[str, Any] = {"handle": None, "off": None, "origins": None}
_SUBSCRIBER_LOCK = threading.Lock()


def _is_user_file(path: str) -> bool:
    """Code the user wrote: not accelgraph's, not an installed library's, not Python's."""
    known = _USER_FILES.get(path)
    if known is None:
        real = os.path.realpath(path) if not path.startswith("<") else ""
        known = bool(real) and not real.startswith(_PACKAGE + os.sep) and not any(
            real.startswith(root) for root in _LIBRARY_ROOTS) and "site-packages" not in real
        _USER_FILES[path] = known
    return known


def _stack(frame, scenario: str) -> list:
    """[file, line, function, user] for each frame from ``frame`` outwards, up to and
    including the first frame in the scenario file (the whole stack, if none is)."""
    found = []
    while frame is not None:
        code = frame.f_code
        path = code.co_filename
        found.append([path, frame.f_lineno, code.co_name, _is_user_file(path)])
        if path == scenario:
            break
        frame = frame.f_back
    return found


def _on_callback(userdata, domain, cbid, cbdata) -> None:
    origins = _SUBSCRIBER["origins"]
    if origins is None:
        return
    try:
        try:
            frame = sys._getframe(1)
        except ValueError:  # a thread with no Python frames: autograd's engine running
            # backward, which the capturing thread waits for inside ``loss.backward()``
            frame = sys._current_frames().get(origins.thread)
        origins.seen(cbid, cbdata, frame)
    except Exception as exc:  # a callback must not raise into CUDA: remembered instead
        origins.failed = origins.failed or f"{type(exc).__name__}: {exc}"


def _subscribe(cupti) -> str | None:
    """Subscribe to CUPTI's callbacks once a process; why not, or None."""
    with _SUBSCRIBER_LOCK:
        if _SUBSCRIBER["handle"] is None and _SUBSCRIBER["off"] is None:
            try:
                _SUBSCRIBER["handle"] = cupti.subscribe(_on_callback, None)
            except Exception as exc:  # another client (a profiler) holds the subscriber
                _SUBSCRIBER["off"] = f"CUPTI's callbacks are taken ({exc})"
            else:  # CUPTI has one subscriber a process: given back when the process ends
                atexit.register(_unsubscribe, cupti)
        return _SUBSCRIBER["off"]


def callbacks_unavailable() -> str | None:
    """Why CUPTI's graph callbacks cannot be had in this process, or None (subscribes)."""
    off = _watch.unavailable()
    return off if off is not None else _subscribe(_watch.cupti_module())


def _unsubscribe(cupti) -> None:
    handle, _SUBSCRIBER["handle"] = _SUBSCRIBER["handle"], None
    if handle is not None:
        try:
            cupti.unsubscribe(handle)
        except Exception:
            pass


class NodeOrigins:
    """The Python stack that made each graph node, and the executable's id of each node, for
    the nodes created and cloned between :meth:`start` and :meth:`stop` (on any thread)."""

    def __init__(self, scenario: str = "") -> None:
        # the scenario file as Python names its frames (the stack stops there)
        self.scenario = scenario
        self.off: str | None = "not started"
        self.failed: str | None = None  # a callback that could not read its data
        self.stacks: dict[int, list] = {}  # CUPTI node id -> stack, innermost first
        self.clones: dict[int, int] = {}  # CUPTI node id -> its clone's id in the executable
        self._ids: tuple = ()
        self.thread = threading.get_ident()  # whose stack a node made off-Python is given

    def start(self) -> None:
        self.thread = threading.get_ident()
        self.off = _watch.unavailable()
        if self.off is not None:
            return
        cupti = _watch.cupti_module()
        self.off = _subscribe(cupti)
        if self.off is not None:
            return
        resource = cupti.CallbackDomain.RESOURCE
        ids = (cupti.CallbackIdResource.GRAPHNODE_CREATED, cupti.CallbackIdResource.GRAPHNODE_CLONED)
        self._ids = (int(ids[0]), int(ids[1]))
        self._cupti = cupti
        _SUBSCRIBER["origins"] = self
        try:
            for cbid in ids:
                cupti.enable_callback(1, _SUBSCRIBER["handle"], resource, cbid)
        except Exception as exc:
            self.stop()
            self.off = f"CUPTI's graph callbacks could not be enabled ({exc})"

    def stop(self) -> None:
        if _SUBSCRIBER["origins"] is not self:
            return
        _SUBSCRIBER["origins"] = None
        cupti = self._cupti
        for cbid in self._ids:
            try:
                cupti.enable_callback(0, _SUBSCRIBER["handle"], cupti.CallbackDomain.RESOURCE, cbid)
            except Exception:
                pass

    def seen(self, cbid, cbdata, frame) -> None:
        cupti = self._cupti
        data = cupti.GraphData.from_ptr(int(cbdata.resource_descriptor))
        if int(cbid) == self._ids[0]:
            self.stacks[int(cupti.get_graph_node_id(int(data.node)))] = _stack(frame,
                                                                                self.scenario)
        elif int(cbid) == self._ids[1]:
            original = int(cupti.get_graph_node_id(int(data.original_node)))
            self.clones[original] = int(cupti.get_graph_node_id(int(data.node)))


def node_ids(graph_handle: int) -> dict[int, str]:
    """CUPTI's id of every node of a cudaGraph_t, its child graphs' too -> the live model's id
    of the root-level node that holds it (a node of a child graph is timed as its parent; of
    a conditional node, only the first body is walked: the records of another body's nodes
    match no node here, and are left out)."""
    from cupti import cupti

    from ..live import child_graphs
    from ..nodes import graph_nodes

    found: dict[int, str] = {}
    counter = [0]

    def walk(handle, root_id: str | None) -> None:
        gid = counter[0]
        counter[0] += 1
        for position, node in enumerate(graph_nodes(handle)):
            own = root_id or f"graph_{gid}_node_{position}"
            found[int(cupti.get_graph_node_id(int(node)))] = own
            for child in child_graphs(node):
                walk(child, own)

    walk(graph_handle, None)
    return found


def profile_graph(name: str, graph: Any, stream: Any, origins: NodeOrigins | None, *,
                  iters: int, warmup: int = 20) -> dict:
    """Replay ``graph`` (captured with debug mode on: its graph is walked) ``iters`` times
    with activity records on, and ``iters`` times with them off (timed by CUDA events);
    the raw profile of this graph (see model/profile.py)."""
    from ...errors import AccelgraphError
    from ..live import model_from_graph

    cupy = _cuda.require_cuda()
    handle = graph.graph_handle
    model = model_from_graph(handle)
    ids = node_ids(handle)
    clones = origins.clones if origins is not None else {}
    by_record: dict[int, str] = {}
    for original, model_id in ids.items():
        by_record[original] = model_id
        if original in clones:
            by_record[clones[original]] = model_id
    # on the current stream (the caller has made it the capture's)
    for _ in range(warmup):
        graph.replay()
    step_us = _timed(cupy, graph, stream, iters)
    # the execution watch's activity records, on every stream (the replays run on this one)
    watch = _watch.ExecutionWatch()
    watch.start()
    try:
        traced_us = _timed(cupy, graph, stream, iters) if watch.off is None else 0.0
    finally:
        records = watch.stop()
    if watch.off is not None:
        raise AccelgraphError(f"graph {name!r}: its replays' activity records cannot be had: "
                              f"{watch.off}")
    dropped = watch.dropped
    mapped = []
    unreadable = 0
    for record in records:
        model_id = by_record.get(record.node)
        if model_id is None:
            continue
        if record.start <= 0 or record.end < record.start:  # no usable timestamps
            unreadable += 1
            continue
        mapped.append((model_id, record))
    # every record of one replay carries that graph launch's correlation id: the replay it
    # belongs to, whatever records CUPTI dropped (a node that runs several times a replay,
    # in a loop, is folded into its first start to last end)
    launches = {c: k for k, c in enumerate(sorted({r.launch for _m, r in mapped}))}
    spans: dict[str, list] = {}
    for model_id, record in mapped:
        runs = spans.setdefault(model_id, [None] * len(launches))
        k = launches[record.launch]
        run = runs[k]
        runs[k] = ([record.start, record.end] if run is None else
                   [min(run[0], record.start), max(run[1], record.end)])
    first = min((run[0] for runs in spans.values() for run in runs if run), default=0)
    stacks, codes = stacks_of(ids, origins)
    return {
        "name": name,
        "iters": iters,
        "step_us": step_us,
        "traced_step_us": traced_us,
        "dropped": int(dropped),
        "unreadable": unreadable,
        "replays": len(launches),
        "model": model.to_json(),
        "spans": {k: [None if run is None else [run[0] - first, run[1] - first] for run in v]
                  for k, v in spans.items()},
        "origins": stacks,
        "codes": codes,
    }


def stacks_of(ids: dict[int, str], origins: NodeOrigins | None) -> tuple[dict, dict]:
    """The stacks that made the nodes (CUPTI's node id -> the model's node id, as
    :func:`node_ids` gives them) as a raw profile or audit keeps them: model id ->
    {"stack": [[file, line, function, user], ...]} (files as :func:`shown_path` names them),
    and the text of each user line ("file:line" -> code)."""
    stacks: dict[str, dict] = {}
    codes: dict[str, str] = {}
    if origins is None:
        return stacks, codes
    for original, model_id in ids.items():
        stack = origins.stacks.get(original)
        if stack and model_id not in stacks:
            shown = [[shown_path(path), line, function, user]
                     for path, line, function, user in stack]
            stacks[model_id] = {"stack": shown}
            for (path, line, _function, user), (named, *_rest) in zip(stack, shown):
                if user or path == origins.scenario:
                    codes.setdefault(f"{named}:{line}", linecache.getline(path, line).rstrip())
    return stacks, codes


def shown_path(path: str) -> str:
    """A file's path as a profile keeps it: relative to the working folder when inside it
    (``scenarios/mlp_decode.py``), else as Python named it."""
    if path.startswith("<"):
        return path
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if relative.startswith(os.pardir) else relative


def _timed(cupy, graph, stream, iters: int) -> float:
    """µs per replay over ``iters`` replays, by CUDA events on ``stream``."""
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record(stream)
    for _ in range(iters):
        graph.replay()
    end.record(stream)
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) * 1e3 / iters


def device_name() -> str:
    """The name of the current CUDA device (the one profiled)."""
    return _cuda.device_name(_cuda.require_cuda().cuda.Device().id)
