"""Stand-ins for the CUDA layer under run.protocol.capture, for CPU tests of its control flow
(Ctrl-C, SIGTERM, the order of the guard's steps). They record or ignore; they imitate no
CUDA output."""

from __future__ import annotations

import contextlib
import types

from accelgraph_cli.cuda.backends import Backend


class StubBackend(Backend):
    """A Backend whose graphs come from ``new_graph`` and whose stream is ``stream`` (what
    it does not override is the base class's: no random generators)."""

    def __init__(self, new_graph, stream):
        self._new_graph, self._stream = new_graph, stream

    def new_streams(self):
        return types.SimpleNamespace(cupy=self._stream, handle=1)

    @contextlib.contextmanager
    def use(self, streams):
        yield

    def new_pool(self, kind):
        return object()

    def new_graph(self, **options):
        return self._new_graph()

    def pools_bytes(self, *args):
        return 0

    def current_stream_handles(self):
        return [1]


def stub_cuda(monkeypatch, protocol, backend, device_synchronize=lambda: None) -> None:
    """Route capture() to ``backend``, with no warm-up and a device that only synchronizes."""
    runtime = types.SimpleNamespace(deviceSynchronize=device_synchronize)
    monkeypatch.setattr(protocol._cuda, "require_cuda",
                        lambda: types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime)))
    monkeypatch.setattr(protocol, "backend_for", lambda name: backend)
    monkeypatch.setattr(protocol, "_warm_up", lambda *args: None)  # (no warm state)
