"""`@accelerate` and `repoos show` on fsm functions with no stored FsmKernel: the first call builds the fsm baseline
for its types and later calls run it, equal to the Python original on random and edge inputs; a function the track
refuses runs as Python with one warning naming the line and why. `show` prints the track's C, for the baseline or a
proposal's variant, and a proposal that does not parse or apply is one line naming why."""

from __future__ import annotations

import importlib.util
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

import repoos_agent
from repoos_agent import cli
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.proposals import parse_proposal
from repoos_agent.fsm.rewrites.registry import apply_steps
from repoos_agent.fsm.swap import function_node
from repoos_agent.runtime.swap import SwapFallbackWarning
from tests.conftest import ROOT
from tests.fixtures import fsm_functions

CRC32 = ROOT / "kernels/fsm/crc32.py"
FIXTURE = ROOT / "tests/fixtures/fsm_functions.py"
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


def _crc32_build(proposal: str | None) -> str:
    """The C the track compiles for `crc32` on bytes (the variant `proposal` names, if any)."""
    lowered = lower_for(function_node(CRC32, "crc32"), {"data": b""})
    function = apply_steps(lowered, parse_proposal(proposal)).function if proposal else lowered
    return FsmNative(function, zlib_crc32).source


def zlib_crc32(data: bytes, crc: int = 0) -> int:
    return zlib.crc32(data, crc)


@pytest.mark.parametrize("proposal", [None, "slicing(k=8)"])
def test_repoos_show_prints_the_c_the_fsm_track_builds(proposal: str | None, capsys):
    assert cli.main(["show", "fsm:crc32", *([proposal] if proposal else [])]) == 0
    printed = capsys.readouterr().out
    assert printed == _crc32_build(proposal)
    assert ("crc_table8" in printed) == (proposal is not None)


def test_repoos_show_types_a_files_function_by_its_args(capsys):
    assert cli.main(["show", f"{FIXTURE}:adler32", "--arg", "data=bytes[64]"]) == 0
    printed = capsys.readouterr().out
    node = function_node(FIXTURE, "adler32")
    assert printed == FsmNative(lower_for(node, {"data": b""}), fsm_functions.adler32).source
    assert cli.main(["show", f"{FIXTURE}:adler32"]) == 2
    assert "needs inputs for: data; give them as --arg data=bytes[64]" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("proposal", "error"),
    [
        ("slicing(k=7)", "proposal `slicing(k=7)`: column 9: `k=7`: `slicing`'s `k` is one of 8, 4, 16"),
        ("unroll(n=4) then nope", "proposal `unroll(n=4) then nope`: column 18: `nope`: no such rewrite; the rewrites are "),
        ("jump-table", "proposal `jump-table`: jump-table: no `if`/`elif` ladder comparing one local with 3 or more"),
    ],
)
def test_repoos_show_names_a_bad_proposal_in_one_line(proposal: str, error: str, capsys):
    assert cli.main(["show", "fsm:crc32", proposal]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"repoos: error: {error}") and captured.err.count("\n") == 1
