"""`@accelerate` and `repoos show` on fsm functions with no stored FsmKernel: the first call builds the fsm baseline
for its types and later calls run it, equal to the Python original on random and edge inputs; a function the track
refuses runs as Python with one warning naming the line and why. `show` prints the track's C, for the baseline or a
proposal's variant, and a proposal that does not parse or apply is one line naming why."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

import repoos_agent
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.runtime.swap import SwapFallbackWarning
from tests.conftest import ROOT
from tests.fixtures import fsm_functions

EDGES = (b"", b"\x00", b"\xff", b"\xff" * 300, b"a,b;c\n")
CLASSIFY = """import repoos_agent


@repoos_agent.accelerate(graph=GRAPH)
def classify(data):
    total = 0
    for byte in data:
        if byte < 10:
            total += 1
        elif byte < 100:
            total = total * 0.5
        else:
            total -= 1
    return total
"""


def _random_bytes(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, int(rng.integers(1, 2000)), dtype=np.uint8).tobytes()


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(f"fsm_accelerate_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


@pytest.fixture
def no_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        yield


@pytest.mark.parametrize("name", ["crc16_ccitt", "count_tokens", "run_lengths", "hex_encode"])
def test_accelerate_builds_the_fsm_baseline_without_a_store(name: str, tmp_path: Path, no_fallback):
    original = getattr(fsm_functions, name)
    accelerated = repoos_agent.accelerate(graph=str(tmp_path / "none.sqlite"))(original)
    assert accelerated.route == "not called yet"
    for data in (*EDGES, *map(_random_bytes, range(40))):
        assert difference(outcome(original, (data,)), outcome(accelerated, (data,))) is None, data
    assert accelerated.route == "fsm baseline build (source order)"


def test_a_decorated_crc_runs_its_baseline_and_takes_other_types_as_python(tmp_path: Path, no_fallback):
    path = tmp_path / "checksums.py"
    source = (ROOT / "kernels/fsm/crc32.py").read_text()
    path.write_text(
        source.replace("def crc32(", f"@__import__('repoos_agent').accelerate(graph={str(tmp_path / 'g')!r})\ndef crc32(", 1)
    )
    crc32 = _load(path, "crc32")
    for data in (*EDGES, *map(_random_bytes, range(20))):
        assert crc32(data) == crc32.python(data)
    assert crc32.route == "fsm baseline build (source order)"
    # built for bytes: a bytearray and a list of ints run the original, silently, as FsmNative does
    assert crc32(bytearray(b"abc")) == crc32.python(bytearray(b"abc"))
    assert crc32([1, 2, 3]) == crc32.python([1, 2, 3])


def test_a_refused_function_runs_as_python_with_one_warning(tmp_path: Path):
    path = tmp_path / "refused.py"
    path.write_text(CLASSIFY.replace("GRAPH", repr(str(tmp_path / "none.sqlite"))))
    classify = _load(path, "classify")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert classify(b"abc\x01") == 1.0
        assert classify(b"\x05\xff") == 0
    assert classify.route == "Python"
    assert [str(warning.message).split(" (and ")[0] for warning in caught] == [
        f"`classify` runs as Python: no native build: {path}:11: `classify` is not modelled by the fsm track: "
        "a float: only integer arithmetic is modelled"
    ]
