"""Parallel loops that carry nothing but sums into arrays (`y[j] += A[i, j] * t[i]` over `i`).

Such a loop runs on every core with each update atomic, or with a zeroed copy of the array per thread
added in when the loop ends (`privatize`). It reorders the sum, so it needs reassociation, except for
a NumPy product, whose summation order NumPy leaves to BLAS.
"""

from __future__ import annotations

import pytest

from repoos_agent.backends import build_native
from repoos_agent.check import fresh_copy, run_python, written_arrays
from repoos_agent.errors import CompileError
from repoos_agent.evaluate import REASSOCIATION_TOLERANCE_SCALE
from repoos_agent.legality import prove_legal
from repoos_agent.measure import compare_outputs
from repoos_agent.model import Signature
from repoos_agent.target import resolve_target

FUSED_ATAX = "interchange(S3.i, S3.j); vectorize(S3.i, 8); fuse(S0, S2, 1); fuse(S1, S3, 1); vectorize(S0.i, 8); vectorize(S1.j, 8)"
"""atax's two products in one pass over A: each row's dot product, then that row's share of `A.T @ t`."""


@pytest.mark.parametrize("copies", ["", "; privatize(S3)"])
@pytest.mark.parametrize("size", ["MINI", "SMALL"])
def test_a_fused_atax_runs_its_rows_in_parallel_and_equals_numpy(copies, size):
    target = resolve_target("numpy:atax")
    schedule = f"{FUSED_ATAX}; parallelize(S1.i){copies}"
    verdict = prove_legal(target.kernel, schedule)
    assert verdict.legal, verdict.feedback  # a product's sum: no reassociation to allow
    how = "accumulates in per-thread copies" if copies else "is updated atomically"
    assert f"S3's sum into `result` {how}" in verdict.feedback
    values = target.inputs(size)
    want = fresh_copy(values)
    run_python(target, want)
    got = fresh_copy(values)
    build_native(target.kernel, Signature.of_values(target.kernel, values), verdict.lowered)(got)
    comparison = compare_outputs(want, got, written_arrays(target), REASSOCIATION_TOLERANCE_SCALE)
    assert comparison.correct, comparison.errors


def test_a_products_sum_over_a_matrix_runs_in_per_thread_copies_of_the_matrix():
    """numpy:gemm's `A @ B` over `k` in parallel, each thread summing into its own copy of the 2-D product: the
    copies once overlapped, a cast binding before the thread's offset."""
    target = resolve_target("numpy:gemm")
    verdict = prove_legal(target.kernel, "parallelize(S1.k); privatize(S1)")
    assert verdict.legal, verdict.feedback
    values = target.inputs("SMALL")
    want, got = fresh_copy(values), fresh_copy(values)
    run_python(target, want)
    build_native(target.kernel, Signature.of_values(target.kernel, values), verdict.lowered)(got)
    comparison = compare_outputs(want, got, written_arrays(target), REASSOCIATION_TOLERANCE_SCALE)
    assert comparison.correct, comparison.errors


def test_a_sum_the_source_wrote_as_a_loop_keeps_its_order():
    """PolyBench's gemm fixed the order of its sum over `k`: `k` stays sequential, and the threads' copies have no
    sum to take."""
    kernel = resolve_target("gemm").kernel
    assert prove_legal(kernel, "parallelize(k)", allow_reassociation=True).verdict == "illegal"
    idle = prove_legal(kernel, "parallelize(i); privatize(S1)", allow_reassociation=True)
    assert idle.verdict == "invalid" and "no parallel loop carries S1's sum" in idle.feedback


def test_the_mlir_backend_refuses_a_parallel_sum_instead_of_racing():
    target = resolve_target("numpy:gemm")
    verdict = prove_legal(target.kernel, "parallelize(S1.k)")
    assert verdict.legal and verdict.lowered.atomic == {"S1"}
    signature = Signature.of_values(target.kernel, target.inputs("MINI"))
    with pytest.raises(CompileError, match=r"the MLIR backend has no atomic updates \(AtomicCall: S1\): build `gemm`"):
        build_native(target.kernel, signature, verdict.lowered, backend="mlir")


def test_privatize_names_what_it_needs():
    verdict = prove_legal(resolve_target("gemm").kernel, "parallelize(i); privatize(S0)")
    assert verdict.verdict == "invalid"
    assert "S0 is not a sum into an array (`t[...] += e`, `e` not reading `t`)" in verdict.feedback
