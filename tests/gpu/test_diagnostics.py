"""Capture diagnostics on the GPU: each deliberately broken scenario under tests/broken_capture
fails with its cause in words, the scenario's file:line and a fix, and the process captures
again afterwards."""

from pathlib import Path

import pytest

from accelgraph_cli.errors import CaptureError
from accelgraph_cli.run import protocol as runner
from accelgraph_cli.run.scenario import load_scenario, parse_params

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
BROKEN = ROOT / "tests" / "broken_capture"

# scenario stem -> (words the message must contain, case-insensitively)
EXPECTED = {
    "host_sync": ("synchroniz", "remove the synchronization"),
    "device_to_host": ("device-to-host", "keep results on the device"),
    "cublas_matmul": ("cublas", "kernels.sgemm"),
    "curand_random": ("curand", "setup"),
    "unsafe_malloc": ("cudamalloc", "relaxed"),
    "unjoined_fork": ("not joined", "wait_event"),
}


def _marked_line(path: Path) -> int:
    for number, text in enumerate(path.read_text().splitlines(), 1):
        if "DIAGNOSE-LINE" in text:
            return number
    raise AssertionError(f"{path} has no DIAGNOSE-LINE mark")


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_broken_capture_is_explained_and_recoverable(stem, capsys):
    path = BROKEN / f"{stem}.py"
    scen = load_scenario(path)
    with pytest.raises(CaptureError) as info:
        runner.capture(scen, parse_params(scen.info.params, []))
    message = str(info.value)
    with capsys.disabled():
        print(f"\n{stem}: {message}")
    assert "\n" not in message
    for words in EXPECTED[stem]:
        assert words.lower() in message.lower(), (words, message)
    assert f"{stem}.py:{_marked_line(path)}" in message, message
    # The process is not left capturing: a good scenario captures, replays and checks.
    good = load_scenario(ROOT / "scenarios" / "saxpy.py")
    result = runner.capture(good, parse_params(good.info.params, []))
    assert runner.check(result).ok
