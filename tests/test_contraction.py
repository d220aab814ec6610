"""Array contraction: once a schedule fuses a producer into its consumer, a temporary is stored in
fewer dimensions (a row, a scalar), and the kernel still computes what NumPy computes."""

from __future__ import annotations

import numpy as np
import pytest

from repoos_agent.agent.heuristic import HeuristicProposer
from repoos_agent.agent.machine import Machine
from repoos_agent.backends import build_baseline, build_native
from repoos_agent.catalog import bundled_kernels
from repoos_agent.check import fresh_copy, written_arrays
from repoos_agent.codegen import generate_c
from repoos_agent.evaluate import REASSOCIATION_TOLERANCE_SCALE
from repoos_agent.ingest import load_kernel
from repoos_agent.legality import prove_legal
from repoos_agent.measure import compare_outputs
from repoos_agent.model import Signature
from repoos_agent.target import resolve_target

from .conftest import ROOT
from .fixtures import contraction_programs

PROGRAMS = ROOT / "tests" / "fixtures" / "contraction_programs.py"
ROW_SOFTMAX = "fuse(S0, S1, 1); fuse(S1, S2, 1); fuse(S2, S3, 1); fuse(S3, S4, 1); fuse(S4, S5, 1); parallelize(i)"
MACHINE = Machine(cores=2, l1_bytes=32 * 1024, l2_bytes=1024 * 1024, l3_bytes=32 * 1024 * 1024, simd_doubles=8)


def _stored(kernel, schedule: str) -> dict[str, tuple[int, ...]]:
    verdict = prove_legal(kernel, schedule)
    assert verdict.legal, verdict.feedback
    return {c.array: c.kept for c in verdict.lowered.contracted}


def _run(kernel, schedule: str, values: dict, team: int | None = None) -> np.ndarray:
    """The function's result, from the build of `schedule` on a team of `team` threads."""
    verdict = prove_legal(kernel, schedule)
    native = build_native(kernel, Signature.of_values(kernel, values), verdict.lowered)
    if team is not None:
        native.set_team(team)
    filled = fresh_copy(values)
    native(filled)
    return filled[kernel.returns[0].name]


def test_a_row_softmax_fused_by_rows_keeps_one_row_of_exp_and_two_scalars():
    kernel = load_kernel(PROGRAMS, "row_softmax", {"x": 2})
    assert _stored(kernel, ROW_SOFTMAX) == {"maxima": (), "e": (1,), "sums": ()}
    feedback = prove_legal(kernel, ROW_SOFTMAX).feedback
    assert "`e` (line 7) is stored by dimension 1 alone, one copy per thread of `i`" in feedback
    rng = np.random.default_rng(3)
    x = rng.standard_normal((37, 53)) * 30.0
    expected = contraction_programs.row_softmax(x)
    for team in (1, 2):
        np.testing.assert_allclose(_run(kernel, ROW_SOFTMAX, {"x": x}, team), expected, rtol=1e-12)


def test_in_source_order_every_row_of_exp_is_alive_at_once_and_stays_whole():
    kernel = load_kernel(PROGRAMS, "row_softmax", {"x": 2})
    stored = _stored(kernel, "")
    assert "e" not in stored  # all of exp is computed before the first sum reads it
    assert stored["maxima"] == (0,)  # only keepdims' dimension of extent one goes


def test_threads_of_a_row_loop_never_outnumber_the_rows_the_buffer_holds():
    """One row, two threads: each thread's row of `e` lives in the caller's buffer, which has one row."""
    kernel = load_kernel(PROGRAMS, "row_softmax", {"x": 2})
    x = np.random.default_rng(4).standard_normal((1, 300))
    text = generate_c(kernel, Signature.of_values(kernel, {"x": x}), prove_legal(kernel, ROW_SOFTMAX).lowered).text
    assert "num_threads(min((int64_t) omp_get_max_threads(), max(1, e_d0)))" in text
    np.testing.assert_allclose(_run(kernel, ROW_SOFTMAX, {"x": x}, team=2), contraction_programs.row_softmax(x), rtol=1e-12)


def test_a_temporary_read_at_two_neighbours_keeps_its_row_not_a_scalar():
    kernel = load_kernel(PROGRAMS, "neighbour_sum", {"a": 2, "b": 2})
    schedule = "fuse(S0, S1, 1); parallelize(i)"
    assert _stored(kernel, schedule) == {"t": (1,)}
    rng = np.random.default_rng(5)
    values = {"a": rng.standard_normal((19, 23)), "b": rng.standard_normal((19, 23))}
    expected = fresh_copy(values)
    contraction_programs.neighbour_sum(expected["a"], expected["b"])
    got = fresh_copy(values)
    verdict = prove_legal(kernel, schedule)
    build_native(kernel, Signature.of_values(kernel, values), verdict.lowered)(got)
    np.testing.assert_allclose(got["b"], expected["b"], rtol=1e-12)


def test_a_scalar_temporary_in_a_vector_loop_is_each_lane_s_own():
    kernel = load_kernel(PROGRAMS, "exp_chain", {"x": 2, "y": 2})
    schedule = "fuse(S0, S1, 2); vectorize(S0.j, 8)"
    verdict = prove_legal(kernel, schedule)
    assert [(c.array, c.kept) for c in verdict.lowered.contracted] == [("t", ())]
    rng = np.random.default_rng(6)
    values = {"x": rng.standard_normal((9, 61)), "y": np.zeros((9, 61))}
    text = generate_c(kernel, Signature.of_values(kernel, values), verdict.lowered).text
    assert "simd simdlen(8) private(t)" in text
    got = fresh_copy(values)
    build_native(kernel, Signature.of_values(kernel, values), verdict.lowered)(got)
    np.testing.assert_allclose(got["y"], np.exp(values["x"]) * 2.0 + 1.0, rtol=1e-12)


FUSING_KERNELS = ("numpy:softmax", "numpy:layernorm", "numpy:cross-entropy", "numpy:batchnorm")
"""Reductions over rows fused into their row loop: every kind of contraction (rows, scalars, per thread).
`-m slow` sweeps the other 34 NumPy kernels too (attention alone takes 31 s: a dozen BLAS builds)."""


@pytest.mark.parametrize(
    "name",
    [pytest.param(k.name, marks=() if k.name in FUSING_KERNELS else pytest.mark.slow) for k in bundled_kernels("numpy")],
)
def test_every_contracting_schedule_the_heuristic_proposes_computes_numpy_s_output(name):
    target = resolve_target(name)
    kernel, values = target.kernel, target.inputs("MINI")
    signature = Signature.of_values(kernel, values)
    expected = fresh_copy(values)
    build_baseline(kernel, signature)(expected)
    for idea in HeuristicProposer(kernel, machine=MACHINE, extents=kernel.parameter_values(values)).ideas:
        verdict = prove_legal(kernel, idea.schedule, allow_reassociation=True, explain=False)
        if not verdict.legal or not verdict.lowered.contracted:
            continue
        got = fresh_copy(values)
        build_native(kernel, signature, verdict.lowered)(got)
        scale = REASSOCIATION_TOLERANCE_SCALE if verdict.reassociates else 1.0
        comparison = compare_outputs(expected, got, written_arrays(target), scale)
        assert comparison.correct, f"`{idea.schedule}` stores {verdict.lowered.contracted} and changed {comparison.errors}"
