"""`repoos bench` on an fsm function: its own leg runs the Python original against the swapped winner on the same
inputs, each in its own process, and their first outcomes are compared exactly, types, arguments and exceptions
included."""

from __future__ import annotations

import json

import pytest

from repoos_agent import cli
from repoos_agent.catalog import bundled_kernels
from repoos_agent.fsm.bench_leg import outcome_json
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.runtime.bench import BenchRequest, run_bench
from repoos_agent.tracks import bench_track
from tests.conftest import ROOT
from tests.fixtures import fsm_functions

FIXTURE = str(ROOT / "tests/fixtures/fsm_functions.py")


def test_the_fsm_track_benches_the_functions_ingest_sends_it_and_no_loop_kernel():
    assert bench_track(FIXTURE, "read_varint", None).name == "fsm"
    assert bench_track("kernels/fsm/crc32.py", "crc32", None).name == "fsm"
    assert bench_track(FIXTURE, "table_lookup", None).name == "affine"  # refused by both: the loop leg says why
    assert bench_track("kernels/polybench/gemm.py", "gemm", None).name == "affine"


def test_without_a_stored_winner_the_swapped_leg_runs_python_and_says_why(tmp_path):
    graph = str(tmp_path / "graph.sqlite")
    report = run_bench(BenchRequest(FIXTURE, "read_varint", 5, ("data=bytes[3]", "pos=0"), graph=graph))
    assert report.matched and report.max_rel_error is None
    assert report.python.route == "Python"
    assert report.swapped.route.startswith(
        f"Python — not swapped: `read_varint` runs as Python: there is no graph store at {graph}"
    )


def test_the_stored_winner_is_benched_against_the_original_and_matches(tmp_path, capsys):
    graph = str(tmp_path / "graph.sqlite")
    assert cli.main(["optimize", f"{FIXTURE}:adler32", "--arg", "data=bytes[4000]", "--graph", graph, "--json"]) == 0
    crowned = json.loads(capsys.readouterr().out)["crowned"]
    assert cli.main(["bench", FIXTURE, "adler32", "5", "--arg", "data=bytes[4000]", "--graph", graph]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{FIXTURE}:adler32, 5 calls per leg"
    assert out[2].split()[0] == "python" and out[2].endswith("Python")
    assert out[3].split()[0] == "swapped" and out[3].endswith(f"FsmKernel `{'baseline' if crowned == 'baseline' else crowned}`")
    assert out[-2:] == ["  outputs (response) match exactly, in order", "STATUS: SUCCESS"]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (lambda: True, lambda: 1),
        (lambda: b"a", lambda: "a"),
        (lambda: [1, 2], lambda: (1, 2)),
        (lambda: fsm_functions.read_varint(b"", 0), lambda: fsm_functions.read_varint(b"\x80" * 9, 0)),
    ],
)
def test_outcomes_that_differ_are_saved_differently(first, second):
    mine, theirs = outcome(first, ()), outcome(second, ())
    assert difference(mine, theirs) is not None
    assert json.dumps(outcome_json(mine)) != json.dumps(outcome_json(theirs))


def test_an_argument_written_by_the_call_is_part_of_the_saved_outcome():
    def fill(buffer, value):
        buffer[0] = value

    assert outcome_json(outcome(fill, (bytearray(2), 7)))["arguments"][0] == {
        "type": "bytearray",
        "repr": "bytearray(b'\\x07\\x00')",
    }
    assert outcome_json(outcome(fill, (bytearray(2), 7))) == outcome_json(outcome(fill, (bytearray(2), 7)))


def test_no_bundled_numpy_or_loop_kernel_is_benched_on_the_fsm_leg():
    for kernel in bundled_kernels(None):
        track = bench_track(str(kernel.path), kernel.function, None).name
        assert (track == "fsm") == (kernel.suite == "fsm"), kernel.name
