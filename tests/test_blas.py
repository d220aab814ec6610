"""`blas(S1)`: a product run as one OpenBLAS call, measured by the search against the loops.

Each case builds the schedule with the C backend and compares its outputs with the NumPy
original's (which calls BLAS too); the refusals name the statement and the reason.
"""

from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest

from repoos_agent.agent.heuristic import HeuristicProposer
from repoos_agent.backends import build_native
from repoos_agent.backends.cc import OPENMP_OPENBLAS
from repoos_agent.check import fresh_copy, run_python, written_arrays
from repoos_agent.codegen.c import generate_c
from repoos_agent.evaluate import evaluate_schedule
from repoos_agent.ingest import load_kernel
from repoos_agent.legality import prove_legal
from repoos_agent.measure import compare_outputs
from repoos_agent.model import Signature
from repoos_agent.openblas_core import openblas_core, prefer_feature_kernels
from repoos_agent.target import resolve_target

from .conftest import ROOT

PROGRAMS = ROOT / "tests" / "fixtures" / "numpy_programs.py"

PRODUCTS = [
    ("numpy:gemm", "blas(S1)", ["cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans"]),
    ("numpy:2mm", "blas(S1); blas(S3)", ["cblas_dgemm"]),
    ("numpy:mlp", "blas(S1); blas(S4); blas(S7); parallelize(S2.i)", ["cblas_dgemm"]),
    ("numpy:attention", "blas(S1); blas(S4); blas(S7); blas(S10); blas(S20); blas(S22)", ["CblasNoTrans, CblasTrans"]),
    ("numpy:atax", "blas(S1); blas(S3)", ["cblas_dgemv(CblasRowMajor, CblasNoTrans", "cblas_dgemv(CblasRowMajor, CblasTrans"]),
]


def _numpy_output_equals(target, schedule: str, size: str) -> None:
    verdict = prove_legal(target.kernel, schedule)
    assert verdict.legal, verdict.feedback
    values = target.inputs(size)
    want = fresh_copy(values)
    run_python(target, want)
    got = fresh_copy(values)
    build_native(target.kernel, Signature.of_values(target.kernel, values), verdict.lowered)(got)
    comparison = compare_outputs(want, got, written_arrays(target))
    assert comparison.correct, (schedule, comparison.errors)


@pytest.mark.parametrize("size", ["MINI", "SMALL"])
@pytest.mark.parametrize(("name", "schedule", "calls"), PRODUCTS)
def test_a_product_run_by_blas_computes_the_numpy_original(name, schedule, calls, size):
    target = resolve_target(name)
    _numpy_output_equals(target, schedule, size)
    lowered = prove_legal(target.kernel, schedule).lowered
    text = generate_c(target.kernel, Signature.of_values(target.kernel, target.inputs("MINI")), lowered).text
    assert "#include <cblas.h>" in text
    for call in calls:
        assert call in text


def test_slices_transposes_and_vector_matrix_products_start_their_views_inside_the_arrays():
    kernel = load_kernel(PROGRAMS, "offset_products", {"A": 2, "B": 2, "x": 1})
    lowered = prove_legal(kernel, "blas(S1); blas(S3); blas(S5); blas(S7)").lowered
    assert [(c.routine, c.transpose_a) for c in lowered.blas] == [("gemm", False), ("syrk", True), ("gemv", False), ("gemv", True)]
    rng = np.random.default_rng(3)
    for dtype, call in ((np.float64, "cblas_dgemm"), (np.float32, "cblas_sgemm")):
        A, B, x = (rng.random(shape).astype(dtype) for shape in ((9, 7), (7, 6), (7,)))
        values = {"A": A, "B": B, "x": x}
        signature = Signature.of_values(kernel, values)
        assert call in generate_c(kernel, signature, lowered).text
        got = dict(values)
        build_native(kernel, signature, lowered)(got)
        want = (A[1:, :] @ B[:, 2:], A.T @ A, A[:, 1:] @ x[1:], x @ B)
        for name, expected in zip(("P", "Q", "y", "z"), want, strict=True):
            assert got[name].dtype == dtype
            np.testing.assert_allclose(got[name], expected, rtol=1e-4 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize(("dtype", "prefix"), [(np.float64, "d"), (np.float32, "s")])
def test_a_matrix_times_its_own_transpose_is_one_syrk_call_and_a_mirrored_triangle(dtype, prefix):
    # NumPy's `@` runs `X.T @ X` as syrk: half the multiplications of a gemm. Two different views stay a gemm.
    kernel = load_kernel(PROGRAMS, "symmetric_products", {"X": 2})
    lowered = prove_legal(kernel, "blas(S1); blas(S3); blas(S5)").lowered
    assert [(c.routine, c.transpose_a) for c in lowered.blas] == [("syrk", True), ("syrk", False), ("gemm", True)]
    X = np.random.default_rng(5).random((11, 7)).astype(dtype)
    values = {"X": X, "alpha": 0.5}
    signature = Signature.of_values(kernel, values)
    text = generate_c(kernel, signature, lowered).text
    assert text.count(f"cblas_{prefix}syrk(CblasRowMajor, CblasUpper, CblasTrans") == 1
    assert text.count(f"cblas_{prefix}syrk(CblasRowMajor, CblasUpper, CblasNoTrans") == 1
    got = dict(values)
    build_native(kernel, signature, lowered)(got)
    want = {"G": X.T @ X, "H": 0.5 * X[1:, :] @ X[1:, :].T, "K": X[1:, :].T @ X[:-1, :]}
    for name, expected in want.items():
        assert got[name].dtype == dtype
        np.testing.assert_allclose(got[name], expected, rtol=1e-5 if dtype == np.float32 else 1e-12)
        if name != "K":
            assert np.array_equal(got[name], got[name].T)  # the mirrored triangle is the computed one, exactly


@pytest.mark.parametrize("name", ["numpy:covariance", "numpy:correlation"])
def test_covariance_and_correlation_run_their_gram_matrix_as_syrk_and_compute_the_numpy_original(name):
    target = resolve_target(name)
    update = "S5" if name == "numpy:covariance" else "S10"
    _numpy_output_equals(target, f"blas({update})", "SMALL")
    evaluation = evaluate_schedule(target, f"blas({update})", "MINI", repeats=1)
    assert evaluation.verdict == "legal" and evaluation.correct and evaluation.verified == "true"
    lowered = prove_legal(target.kernel, f"blas({update})").lowered
    assert "cblas_dsyrk" in generate_c(target.kernel, Signature.of_values(target.kernel, target.inputs("MINI")), lowered).text


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("blas(S2)", r"primitive 1 `blas\(S2\)`: S2 is not an update `T\[...\] \+= A\[...\] \* B\[...\]`"),
        ("blas(S0)", r"S0 is not an update"),
        ("blas(S1); tile(S1.k, 4)", r"primitive 2 `tile\(S1.k, 4\)`: it transforms the loops of S1, which `blas\(S1\)`"),
        ("tile(S1.k, 4); blas(S1)", r"primitive 2 `blas\(S1\)`: an earlier primitive transformed the loops of S1"),
        ("blas(S1); parallelize(S1.i)", r"`parallelize\(S1.i\)` marks a loop of S1, which `blas\(S1\)` runs"),
        ("blas(S1); blas(S1)", r"S1 is already part of a `blas`"),
    ],
)
def test_blas_that_cannot_apply_is_invalid_with_the_reason(schedule, message):
    verdict = prove_legal(resolve_target("numpy:gemm").kernel, schedule)
    assert verdict.verdict == "invalid"
    assert re.search(message, verdict.feedback), verdict.feedback


def test_a_product_of_an_expression_stores_the_expression_first_and_runs_as_one_call():
    """`softmax(scores) @ v`: the softmax's `e / sums` is stored, as NumPy stores it, so BLAS reads an array."""
    kernel = resolve_target("numpy:attention").kernel
    stored = kernel.statement("S18")
    assert stored.writes[0].array == "operand" and "softmax_sums" in {r.array for r in stored.reads}
    verdict = prove_legal(kernel, "blas(S20)")
    assert verdict.legal, verdict.feedback
    assert [(c.update, c.a.ref.array, c.b.ref.array) for c in verdict.lowered.blas] == [("S20", "operand", "v")]


def test_a_reduction_that_is_not_a_product_is_not_a_blas_call():
    verdict = prove_legal(resolve_target("numpy:attention").kernel, "blas(S14)")
    assert verdict.verdict == "invalid"
    assert "S14 is not an update `T[...] += A[...] * B[...]` of an array" in verdict.feedback


def test_the_z3_check_verifies_the_nests_the_call_replaces_and_mlir_refuses_blas():
    target = resolve_target("numpy:gemm")
    checked = evaluate_schedule(target, "blas(S1); parallelize(S2.i)", "MINI", measure=False)
    assert checked.verdict == "legal" and checked.verified == "true"
    refused = evaluate_schedule(target, "blas(S1)", "MINI", measure=False, compiler="mlir")
    assert refused.verdict == "invalid"
    assert "the MLIR backend has no BLAS calls (BlasCall: blas(S1)): build `gemm` with the C backend" in refused.feedback


@pytest.mark.slow  # end to end: the slow set runs it
def test_the_heuristic_measures_blas_against_the_loops_for_each_product():
    ideas = [idea.schedule for idea in HeuristicProposer(resolve_target("numpy:gemm").kernel).ideas]
    assert "blas(S1)" in ideas
    assert any("blas" not in idea for idea in ideas)
    mlp = [idea.schedule for idea in HeuristicProposer(resolve_target("numpy:mlp").kernel).ideas]
    assert {"blas(S1)", "blas(S4)", "blas(S7)", "blas(S1); blas(S4); blas(S7)"} <= set(mlp)


@pytest.mark.slow  # end to end: the slow set runs it
def test_the_heuristic_runs_the_products_by_blas_and_fuses_the_softmax_between_them_into_one_row_loop():
    kernel = load_kernel(PROGRAMS, "attention_head", {"q": 2, "k": 2, "v": 2})
    ideas = HeuristicProposer(kernel).ideas
    fused = next(idea for idea in ideas if idea.schedule.startswith("blas(S1); blas(S9); fuse("))
    assert "fuse(S2, S3, 1)" in fused.schedule and "fuse(S6, S7, 1)" in fused.schedule
    assert ideas.index(fused) < 4  # measured in the first turn, before the register tiles
    verdict = prove_legal(kernel, fused.schedule, explain=True)
    assert verdict.legal, verdict.feedback
    assert "`e` (line 77) is stored by dimension 1 alone" in verdict.feedback  # one row of the softmax, not the matrix
    rng = np.random.default_rng(3)
    values = {name: rng.standard_normal((24, 16)) for name in ("q", "k", "v")}
    got = dict(values)
    build_native(kernel, Signature.of_values(kernel, values), verdict.lowered)(got)
    scores = values["q"] @ values["k"].T
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got["result"], e / e.sum(axis=1, keepdims=True) @ values["v"], rtol=1e-12)


def test_a_product_inside_a_python_loop_is_one_call_per_step_and_the_loop_stays_sequential():
    kernel = load_kernel(PROGRAMS, "repeated_products", {"A": 2, "x": 1})
    lowered = prove_legal(kernel, "blas(S1)").lowered
    rng = np.random.default_rng(5)
    A, x = rng.random((8, 8)), rng.random(8)
    values = {"A": A, "x": x.copy(), "steps": 4}
    build_native(kernel, Signature.of_values(kernel, values), lowered)(values)
    for _ in range(4):
        x[:] = 0.5 * (A @ x)
    np.testing.assert_allclose(values["x"], x, rtol=1e-12)
    refused = prove_legal(kernel, "blas(S1); parallelize(_step)")
    assert "`parallelize(_step)` marks a loop of S0 and S1, which `blas(S1)` runs as one BLAS call" in refused.feedback


LOOP_PRODUCT = """\
def matmul_loops(A, B, C, n: int, m: int, p: int):
    for i in range(n):
        for j in range(m):
            C[i][j] = 0.0
    for i in range(n):
        for k in range(p):
            for j in range(m):
                C[i][j] += 2.0 * A[i][k] * B[k][j]
"""


def test_blas_of_a_product_written_as_loops_reorders_its_sum_and_tiling_it_is_invalid(tmp_path):
    path = tmp_path / "loops.py"
    path.write_text(LOOP_PRODUCT)
    kernel = load_kernel(path, "matmul_loops", {"A": 2, "B": 2, "C": 2})
    strict = prove_legal(kernel, "blas(S1)")
    assert strict.verdict == "reassociation"
    assert "`blas` sums the reduction S1 (line 8) in OpenBLAS's order" in strict.feedback
    allowed = prove_legal(kernel, "blas(S1)", allow_reassociation=True)
    assert allowed.legal and allowed.reassociates
    rng = np.random.default_rng(9)
    A, B = rng.random((5, 4)), rng.random((4, 3))
    values = {"A": A, "B": B, "C": np.zeros((5, 3)), "n": 5, "m": 3, "p": 4}
    build_native(kernel, Signature.of_values(kernel, values), allowed.lowered)(values)
    np.testing.assert_allclose(values["C"], 2.0 * A @ B, rtol=1e-12)
    tiled = prove_legal(kernel, "blas(S1); tile(S1.i, S1.k, 4, 4)", allow_reassociation=True)
    assert tiled.verdict == "invalid"
    assert "primitive 2 `tile(S1.i, S1.k, 4, 4)`: it transforms the loops of S1" in tiled.feedback


@pytest.mark.parametrize(
    ("flags", "core"),
    [
        ("fpu sse3 avx2 fma avx512f avx512dq avx512bw avx512vl", "SkylakeX"),
        ("fpu sse3 avx avx2 fma", "Haswell"),
        ("fpu sse3", None),
    ],
)
def test_openblas_runs_the_kernels_the_cpu_features_allow(tmp_path, flags, core):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: {flags}\n")
    assert openblas_core(cpuinfo) == core


def test_every_openblas_in_the_process_is_told_the_cpu_s_kernels_unless_the_user_chose(tmp_path, monkeypatch):
    """NumPy 1.26's bundled OpenBLAS picked 4x slower kernels on a virtual Xeon: it reads the variable once, at load."""
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu avx2 fma\n")
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    prefer_feature_kernels(cpuinfo)
    assert os.environ["OPENBLAS_CORETYPE"] == "Haswell"
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Prescott")
    prefer_feature_kernels(cpuinfo)
    assert os.environ["OPENBLAS_CORETYPE"] == "Prescott"


def test_a_blas_kernel_runs_openblas_on_the_openmp_team_of_its_loops():
    """Where Debian's OpenMP build of OpenBLAS is installed (`scripts/install-system-packages`), a `blas` kernel
    links it, so its calls and its parallel loops share libgomp's threads instead of two pools spinning
    against each other."""
    if not OPENMP_OPENBLAS.exists():
        pytest.skip("libopenblas0-openmp is not installed")
    target = resolve_target("numpy:gemm")
    verdict = prove_legal(target.kernel, "blas(S1); parallelize(S2.i)")
    values = target.inputs("MINI")
    native = build_native(target.kernel, Signature.of_values(target.kernel, values), verdict.lowered)
    linked = subprocess.run(["ldd", str(native.library)], capture_output=True, text=True, check=True).stdout
    assert "openblas-openmp/libopenblas.so.0" in linked, linked
    _numpy_output_equals(target, "blas(S1); parallelize(S2.i)", "SMALL")
