"""The NumPy peers (Numba, DaCe, Pythran) built from a NumPy kernel's source, checked and raced against it."""

from __future__ import annotations

import csv
import ctypes
import json
import math
from pathlib import Path

import numpy as np
import pytest

from repoos_agent.catalog import BundledKernel
from repoos_agent.evaluate import REASSOCIATION_TOLERANCE_SCALE
from repoos_agent.measure.isolated import RaceRules, peer_worker, shared_worker
from repoos_agent.measure.provenance import provenance
from repoos_agent.study import StudyConfig, ToolSpec, summarize, write_outputs
from repoos_agent.study.competitors import parse_tools
from repoos_agent.study.numpy_peers import (
    NumbaPeer,
    NumpyOriginal,
    build_peer,
    measure_peer,
    peer_installed,
    pythran_source,
    returned_values,
)
from repoos_agent.study.protocol import refused_instance

KERNELS = Path(__file__).parent / "fixtures" / "numpy_peer_kernels.py"
PATH = str(KERNELS)


def small_inputs() -> dict[str, object]:
    rng = np.random.default_rng(1)
    return {"A": rng.random((40, 30)), "x": rng.random(30)}


def test_a_peer_whose_package_is_absent_is_missing():
    measurement = measure_peer("repoos_no_such_peer", PATH, "row_scale", small_inputs(), 60)
    assert measurement.status == "missing"
    assert "not installed" in measurement.message


def test_numba_refuses_max_with_an_axis_and_says_why():
    measurement = measure_peer("numba", PATH, "row_max", {"A": small_inputs()["A"]}, 60)
    assert measurement.status == "unsupported"
    assert "No implementation of function" in measurement.message and "max" in measurement.message
    assert "\n" not in measurement.message and " at 0x" not in measurement.message


@pytest.mark.slow  # Numba compiles for seconds; the study's own tests cover a Numba column by default
def test_numba_on_a_supported_function_is_correct_and_timed():
    measurement = measure_peer("numba", PATH, "row_sums", {"A": small_inputs()["A"]}, 120)
    assert measurement.status == "ok", measurement.message
    assert measurement.max_rel_error is not None and measurement.max_rel_error < 1e-12
    assert measurement.speedup and measurement.speedup > 0
    assert measurement.tool_s and measurement.baseline_s  # the NumPy original timed in the same race


def test_a_peer_is_timed_in_a_worker_of_its_own_and_its_runtime_never_enters_the_engines():
    # In a worker shared with the peers, vadv's winner raced NumPy at 3.27 ms a call; in a fresh one, 1.08 ms.
    values = {"A": small_inputs()["A"]}
    assert measure_peer("numba", PATH, "row_sums", values, 120).status == "ok"
    rules = RaceRules(("A", "returned"), REASSOCIATION_TOLERANCE_SCALE)
    original = NumpyOriginal(PATH, "row_sums")
    assert shared_worker().race(original, original, values, rules, 120).outcome == "ok"

    def loaded(worker) -> str:
        return Path(f"/proc/{worker._process.pid}/maps").read_text()

    assert "/numba/" in loaded(peer_worker("numba"))
    assert "/numba/" not in loaded(shared_worker())


def test_a_peer_that_returns_a_wrong_value_is_incorrect_and_not_timed():
    """`row_sums_wrong` under Numba against `row_sums` in NumPy: the reference is the correct original."""
    values = {"A": small_inputs()["A"]}
    measurement = measure_peer("numba", PATH, "row_sums_wrong", values, 120, reference=NumpyOriginal(PATH, "row_sums"))
    assert measurement.status == "incorrect"
    assert "returned" in measurement.message
    assert measurement.speedup is None and measurement.tool_s is None


def test_returns_are_named_outputs():
    assert returned_values(None) == {}
    assert list(returned_values((1, 2))) == ["returned[0]", "returned[1]"]
    assert list(returned_values(np.zeros(2))) == ["returned"]


def test_pythran_source_keeps_the_function_its_helpers_and_an_export_line():
    source = pythran_source(KERNELS.read_text(), "row_scale", small_inputs())
    assert "def row_scale(A, x)" in source and "def scaled(A, x)" in source
    assert "def row_max" not in source
    assert source.strip().endswith("#pythran export row_scale(float64[:,:], float64[:])")
    stats = pythran_source(KERNELS.read_text(), "stats", {"A": np.zeros((2, 2), np.float32), "alpha": 1.5})
    assert "#pythran export stats(float32[:,:], float)" in stats


def test_parse_tools_takes_the_numpy_peers_without_compilers():
    assert [s.name for s in parse_tools("numba,dace,pythran")] == ["numba", "dace", "pythran"]
    with pytest.raises(Exception, match="dace takes no compiler"):
        parse_tools("dace=/usr/bin/gcc")


def test_a_kernel_the_engine_refuses_is_reported_with_its_peers(tmp_path: Path):
    """The eval's outputs for a NumPy kernel the engine cannot ingest: `refused`, and the peers' columns."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("numpy_peer_kernels", KERNELS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.init = lambda: {"A": small_inputs()["A"]}
    bundled = BundledKernel("numpy:row-sums", "numpy", "test", KERNELS, "row_sums", {"MINI": {}}, module)
    config = StudyConfig(kernels=(bundled.name,), sizes=("MINI",), tools=(ToolSpec("numba"), ToolSpec("repoos_no_such_peer")))
    lines: list[str] = []
    instance = refused_instance(bundled, "MINI", "numpy:row-sums: `np.sum` is outside the modelled subset", config, lines.append)
    assert instance.engine == "refused" and math.isnan(instance.single)
    assert [t.status for t in instance.tools] == ["ok", "missing"]
    summary = summarize([instance], ("numba", "repoos_no_such_peer"), 0)
    assert summary.single.count == 0 and summary.tools_ok["numba"] == 1
    csv_path, json_path, chart_path = write_outputs(tmp_path, config, [instance], summary, provenance("repoos eval"))
    row = next(csv.DictReader(csv_path.open()))
    assert row["engine_status"] == "refused" and row["single"] == ""
    assert row["numba_status"] == "ok" and float(row["numba_speedup"]) > 0
    assert row["repoos_no_such_peer_status"] == "missing"
    assert json.loads(json_path.read_text())["instances"][0]["engine_message"].startswith("numpy:row-sums")
    assert chart_path.stat().st_size > 0


@pytest.mark.slow
@pytest.mark.skipif(not peer_installed("dace"), reason="dace is not installed (scripts/setup-peers)")
def test_dace_builds_a_stencil_and_a_tuple_return():
    rng = np.random.default_rng(2)
    stencil = measure_peer("dace", PATH, "jacobi_step", {"A": rng.random((64, 64)), "B": rng.random((64, 64))}, 300)
    assert stencil.status == "ok", stencil.message
    returned = measure_peer("dace", PATH, "stats", {"A": rng.random((30, 20)), "alpha": 1.5}, 300)
    assert returned.status == "ok", returned.message


@pytest.mark.slow
@pytest.mark.skipif(not peer_installed("dace"), reason="dace is not installed (scripts/setup-peers)")
def test_a_dace_peer_returns_a_new_array_at_every_call_as_numpy_does():
    """A CompiledSDFG overwrites its last result at the next call with the same sizes; timed that way, DaCe skipped
    the allocation every other contender pays for a returned array."""
    values = small_inputs()
    call = build_peer("dace", PATH, "scaled", values).load()
    first, second = call(dict(values)), call(dict(values))
    assert not np.shares_memory(first, second)
    np.testing.assert_allclose(first, values["A"] * values["x"])
    np.testing.assert_allclose(second, first)


@pytest.mark.slow
@pytest.mark.skipif(not peer_installed("pythran"), reason="pythran is not installed (scripts/setup-peers)")
def test_pythran_builds_a_helper_call_and_a_tuple_return():
    in_place = measure_peer("pythran", PATH, "row_scale", small_inputs(), 300)
    assert in_place.status == "ok", in_place.message
    rng = np.random.default_rng(3)
    returned = measure_peer("pythran", PATH, "stats", {"A": rng.random((30, 20)), "alpha": 1.5}, 300)
    assert returned.status == "ok", returned.message


def test_a_numba_peer_runs_on_the_team_the_race_sizes():
    """As the engine's OpenMP team: one thread on a machine with one free core, never more than Numba's pool."""
    import numba

    call = NumbaPeer(PATH, "row_sums").load()
    call.set_team(1)
    assert numba.get_num_threads() == 1
    call.set_team(10_000)
    assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS


def test_the_numpy_originals_blas_runs_on_the_team_the_race_sizes():
    from threadpoolctl import threadpool_info

    def blas_threads() -> set[int]:
        return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}

    call = NumpyOriginal(PATH, "row_sums").load()
    call.set_team(1)  # a race that found one core free: NumPy's OpenBLAS runs on one thread, as the candidates do
    assert blas_threads() == {1}
    values = {"A": small_inputs()["A"]}
    call(values)
    assert np.allclose(values["returned"], small_inputs()["A"].sum(axis=1))
    call.set_team(2)
    assert blas_threads() == {2}


@pytest.mark.slow
@pytest.mark.skipif(not peer_installed("dace"), reason="dace is not installed (scripts/setup-peers)")
def test_a_dace_peer_runs_on_the_team_the_race_sizes():
    """`omp_set_num_threads` reaches the OpenMP runtime DaCe's library links."""
    import dace

    rng = np.random.default_rng(2)
    peer = build_peer("dace", PATH, "jacobi_step", {"A": rng.random((64, 64)), "B": rng.random((64, 64))})
    call = peer.load()
    library = next(path for path in Path(peer.folder, "build").glob("lib*.so") if "dacestub" not in path.name)
    threads = ctypes.CDLL(str(library)).omp_get_max_threads
    for team in (1, 2):
        call.set_team(team)
        assert threads() == team
    from dace.transformation.auto.auto_optimize import find_fast_library

    if "OpenBLAS" in find_fast_library(dace.DeviceType.CPU):  # `@` calls OpenBLAS, on its own threads
        matmul = build_peer("dace", PATH, "stats", {"A": rng.random((30, 20)), "alpha": 1.5})
        assert len(matmul.load().team_setters) == 2


@pytest.mark.slow
@pytest.mark.skipif(not peer_installed("pythran"), reason="pythran is not installed (scripts/setup-peers)")
def test_a_pythran_peer_runs_its_blas_on_the_team_the_race_sizes():
    """Pythran's code is serial (no `omp` annotations in NumPy kernels); its `@` runs on scipy-openblas's threads."""
    import scipy_openblas64

    rng = np.random.default_rng(3)
    call = build_peer("pythran", PATH, "stats", {"A": rng.random((30, 20)), "alpha": 1.5}).load()
    for team in (1, 2):
        call.set_team(team)
        assert scipy_openblas64.dll.scipy_openblas_get_num_threads64_() == team
