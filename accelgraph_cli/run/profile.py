"""``accelgraph profile``: capture a scenario with node origins on, replay each graph under
CUPTI, and return the raw profile document (``model/profile.py`` computes and checks it).
Showing a saved profile imports nothing of cuda/ (the capture protocol is imported by the
recording alone)."""

from __future__ import annotations

from ..errors import AccelgraphError
from ..model.profile import FORMAT, VERSION


def record_profile(scenario, params: dict, *, pool=None, error_mode=None, iters: int = 200,
                   warmup: int = 20, on_graph=None) -> dict:
    """The raw profile of every graph of ``scenario``: captured as ``capture`` captures
    (guard included), then each graph replayed ``iters`` times with CUPTI's activity records
    on and ``iters`` times with them off. ``on_graph(done, total)`` after each graph."""
    from ..cuda.cupti import profile as cupti_profile
    from ..cuda.cupti import watch
    from . import protocol

    off = watch.unavailable()
    if off is not None:
        hint = ("; install accelgraph with the cuda13 extra (cupti-python)"
                if "not available" in off else " (another CUPTI client, such as a profiler?)")
        raise AccelgraphError(f"profile reads CUPTI's activity records, and {off}{hint}")
    off = cupti_profile.callbacks_unavailable()
    if off is not None:  # said before the capture, as the rest is
        raise _no_callbacks(off)
    origins = cupti_profile.NodeOrigins(str(scenario.path))
    result = protocol.capture(scenario, params, pool=pool, error_mode=error_mode,
                              origins=origins)
    if origins.off is not None:  # (enabling them failed during the capture)
        raise _no_callbacks(origins.off)
    graphs = []
    with result.backend.use(result.streams):
        for done, captured in enumerate(result.graphs, 1):
            graphs.append(cupti_profile.profile_graph(
                captured.name, captured.graph, result.stream, origins, iters=iters,
                warmup=warmup))
            if on_graph is not None:
                on_graph(done, len(result.graphs))
    return {**raw_head(FORMAT, VERSION, scenario, params), "origins_failed": origins.failed,
            "graphs": graphs}


def raw_head(fmt: str, version: int, scenario, params: dict) -> dict:
    """What a raw profile or audit starts with: its format and version, the scenario (as
    the document keeps its path), its parameters and the GPU it was recorded on."""
    from ..cuda.cupti import profile as cupti_profile

    return {"format": fmt, "version": version,
            "scenario": cupti_profile.shown_path(str(scenario.path)), "params": params,
            "device": cupti_profile.device_name()}


def _no_callbacks(off: str) -> AccelgraphError:
    """CUPTI's records name each node by its id in the executable graph, which only the graph
    callbacks tell (as instantiation clones the nodes): without them nothing matches."""
    return AccelgraphError("profile matches CUPTI's records to the graph's nodes through "
                           f"CUPTI's graph callbacks, and {off}")


def read_profile(path: str):
    """A saved raw profile (as ``profile --out`` writes it), computed: a Profile. One clear
    error (ProfileLoadError) for a missing, unreadable or malformed file."""
    from ..dot.load import read_json_document
    from ..model.profile import ProfileLoadError, load_profile

    return load_profile(read_json_document(path, "profile", ProfileLoadError), path)
