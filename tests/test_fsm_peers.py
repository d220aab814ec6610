"""The fsm kernels' peers (Numba, Cython, mypyc, PyPy) on the kernels' own source: a peer that refuses is
`unsupported` with its own reason, one whose outcome differs from CPython's is `wrong` and never timed, and
`repoos eval --kernels fsm:... --compare ...` prints and writes the table of CPython, ours and each peer."""

from __future__ import annotations

import inspect
import zlib
from importlib import util
from pathlib import Path

import numpy as np
import pytest

from repoos_agent import cli
from repoos_agent.catalog import BundledKernel, find_bundled
from repoos_agent.errors import RepoosError
from repoos_agent.fsm import comparison, peers
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.comparison import compare_kernel, parse_peers, run_peer_study, table
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.peers import Built, InProcess, PeerUnsupported, build_peer
from repoos_agent.fsm.refusal import FsmRefusal
from repoos_agent.ingest.parse import functions, parse_source, read_source, text


def arguments_of(kernel: BundledKernel, size: str = "MINI") -> tuple[object, ...]:
    values = kernel.inputs(size)
    return tuple(values[name] for name in inspect.signature(kernel.python_function()).parameters)


def checked(name: str, kernel_name: str, build_dir: Path) -> str | None:
    """What differs between peer `name`'s outcome on a kernel's MINI inputs and CPython's (None: nothing)."""
    kernel = find_bundled(kernel_name)
    arguments = arguments_of(kernel)
    built = build_peer(name, kernel, arguments, build_dir)
    try:
        return difference(outcome(kernel.python_function(), arguments), built.contender.check(), name)
    finally:
        built.contender.close()


def baseline_ours(kernel):
    """The track's compiled baseline as ours, without the arena's race (the slow eval test runs that)."""
    original = kernel.python_function()
    node = next(
        n
        for n in functions(parse_source(read_source(kernel.path), str(kernel.path)))
        if text(n.child_by_field_name("name")) == kernel.function
    )
    return FsmNative(lower_for(node, kernel.inputs("MINI")), original), "baseline"


def test_numba_refusing_a_kernel_is_unsupported_with_numbas_reason(tmp_path):
    kernel = find_bundled("fsm:luhn")  # its ValueError's message formats with a spec, which Numba does not compile
    with pytest.raises(PeerUnsupported, match="format spec in f-strings not supported"):
        build_peer("numba", kernel, arguments_of(kernel), tmp_path)


def test_numba_is_tried_on_bytes_as_uint8_arrays_and_says_so_when_it_still_refuses(tmp_path):
    kernel = find_bundled("fsm:run-length-decode")  # builds a bytearray, which Numba has no type for
    with pytest.raises(PeerUnsupported, match=r"Untyped global name 'bytearray'.*\(with `data` bytes as a uint8 array\)"):
        build_peer("numba", kernel, arguments_of(kernel), tmp_path)


def test_numba_gives_crc32s_checksum_exactly(tmp_path):
    assert checked("numba", "fsm:crc32", tmp_path) is None


def test_pypy_runs_the_kernel_in_pypy_and_its_outcome_is_cpythons(tmp_path):
    assert checked("pypy", "fsm:json-tokens", tmp_path) is None


def test_pypy_refuses_numpy_arrays_it_has_no_numpy_for(tmp_path):
    with pytest.raises(PeerUnsupported, match="PyPy runs here without NumPy"):
        build_peer("pypy", find_bundled("fsm:crc32"), (np.zeros(4, np.uint8), 0), tmp_path)


@pytest.mark.parametrize("peer, package", [("cython", "Cython"), ("mypyc", "mypyc")])
def test_a_peer_not_installed_is_missing_and_the_others_still_run(monkeypatch, tmp_path, peer, package):
    found = util.find_spec
    monkeypatch.setattr(peers.util, "find_spec", lambda name, *rest: None if name == package else found(name, *rest))
    row = compare_kernel(find_bundled("fsm:crc32"), "MINI", (peer,), tmp_path, ours=baseline_ours)
    assert row.cells[peer].status == "missing"
    assert "fsm-peers" in row.cells[peer].message
    assert row.cells["ours"].status == "ok" and row.speedup("ours") is not None


def test_a_peer_whose_output_differs_is_wrong_and_not_timed(monkeypatch, tmp_path):
    def broken_peer(name, kernel, arguments, build_dir):
        return Built(InProcess(lambda data, crc=0: zlib.crc32(data, crc) ^ 1, tuple(arguments)))

    monkeypatch.setattr(comparison, "build_peer", broken_peer)
    row = compare_kernel(find_bundled("fsm:crc32"), "MINI", ("numba",), tmp_path, ours=baseline_ours)
    want = find_bundled("fsm:crc32").python_function()(*arguments_of(find_bundled("fsm:crc32")))
    assert row.cells["numba"].status == "wrong"
    assert row.cells["numba"].message == f"the original returned {want}, numba returned {want ^ 1}"
    assert row.cells["numba"].timing is None


def test_ours_raising_what_the_original_does_not_is_wrong(tmp_path):
    def raising(data, crc=0):
        raise ValueError("no checksum today")

    row = compare_kernel(find_bundled("fsm:crc32"), "MINI", (), tmp_path, ours=lambda kernel: (raising, "baseline"))
    assert row.cells["ours"].status == "wrong"
    assert row.cells["ours"].message.endswith("ours raised ValueError: no checksum today")


def test_a_kernel_the_fsm_track_refuses_shows_refused_with_its_reason_and_its_peers_still_run(tmp_path):
    def refusing(kernel):  # every bundled kernel goes in: a refusal as the track gives one
        raise FsmRefusal(51, "a shift by 0 to 2305843009213693952 bits: only shifts proven within 0 to 63 are modelled")

    study = run_peer_study(((find_bundled("fsm:leb128-decode"), "MINI"),), ("numba",), ours=refusing)
    row = study.rows[0]
    assert row.cells["ours"].status == "refused"
    assert "a shift by 0 to 2305843009213693952 bits" in row.cells["ours"].message
    printed = table(study)
    assert "| fsm:leb128-decode" in printed and "refused [1]" in printed
    assert "[1] fsm:leb128-decode, ours: refused: line 51: a shift by 0 to 2305843009213693952 bits" in printed


def test_unknown_peers_are_refused_by_name():
    assert parse_peers("numba, pypy,numba") == ("numba", "pypy")
    with pytest.raises(RepoosError, match="unknown peer `graphite` for fsm kernels; their peers are numba, cython, mypyc, pypy"):
        parse_peers("numba,graphite")


def test_fsm_kernels_are_not_mixed_with_polybench_ones_in_one_eval(tmp_path, capsys):
    assert cli.main(["eval", "--kernels", "fsm:crc32,gemm", "--out", str(tmp_path)]) != 0
    assert "--kernels: fsm: kernels are compared with their own peers; run them apart from the others" in capsys.readouterr().err


@pytest.mark.slow
def test_eval_on_two_fsm_kernels_with_numba_prints_and_writes_the_table(tmp_path, capsys):
    command = ["eval", "--kernels", "fsm:crc32,fsm:luhn", "--compare", "numba", "--sizes", "MINI", "--out", str(tmp_path)]
    assert cli.main(command) == 0
    printed = capsys.readouterr().out
    header = "| kernel | size | CPython s | ours s | ours x | ours: crowned variant | numba s | numba x |"
    assert header in printed and "| fsm:crc32 " in printed and "| fsm:luhn " in printed
    assert "fsm:luhn, numba: unsupported: UnsupportedBytecodeError: format spec in f-strings not supported" in printed
    written = (tmp_path / "fsm-peers.md").read_text()
    assert written.splitlines()[2].startswith("Commit ") and header in written
    assert (tmp_path / "fsm-peers.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("peer", ["cython", "mypyc"])
@pytest.mark.parametrize("kernel", ["fsm:crc32", "fsm:json-tokens"])
def test_compiled_peers_build_the_module_unchanged_and_match_cpython(tmp_path, peer, kernel):
    assert checked(peer, kernel, tmp_path) is None
