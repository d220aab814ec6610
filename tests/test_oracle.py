"""The independent legality oracle (`verify.oracle`) against isl's verdicts.

The oracle shares neither isl's dependence analysis nor Z3: it runs the source order and the generated
loop nest at small sizes and compares every conflicting pair of accesses. Random schedules isl calls
legal must never be refuted by it; schedules known to break a dependence must be; and a mark the
generated code relies on (a private scalar, an atomic scatter) dropped from a legal schedule must be.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from repoos_agent.legality import analyze
from repoos_agent.legality.prove import prove_legal
from repoos_agent.target import resolve_target
from repoos_agent.verify.oracle import KernelRun, check_schedule

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from oracle import judge, small_run, suite_kernels

FAST = ("gemm", "seidel-2d", "numpy:softmax", "sparse:spmv", "sparse:histogram")
"""A product, a stencil in place, NumPy reductions over rows, a gather through an index array, a scatter."""


def _run(name: str) -> tuple[object, KernelRun]:
    target = resolve_target(name)
    assert target.bundled is not None
    return target.kernel, small_run(target.bundled, target.kernel)


def _judged(name: str, text: str, allow: bool = False):
    kernel, run = _run(name)
    verdict = prove_legal(kernel, text, allow, explain=False)
    assert verdict.lowered is not None, verdict.feedback
    return verdict, check_schedule(run, verdict.lowered, allow)


def test_random_schedules_isl_calls_legal_are_never_refuted():
    tallies = [judge(name, 10, 0) for name in FAST]
    assert sum(t.legal_confirmed for t in tallies) >= 5, "too few legal draws to say anything"
    assert [case for t in tallies for case in t.refuted] == []


@pytest.mark.parametrize("name", FAST)
def test_every_loop_isl_lets_run_in_parallel_is_accepted(name):
    kernel, run = _run(name)
    for loop in (loop for loop in analyze(kernel).loops if loop.parallelizable):
        for allow in (False, True):
            verdict = prove_legal(kernel, f"parallelize({loop.name})", allow, explain=False)
            if verdict.legal:
                assert check_schedule(run, verdict.lowered, allow).conflicts == (), (loop.name, allow)


def test_a_parallel_loop_carrying_a_sum_the_source_orders_is_refuted():
    verdict, oracle = _judged("gemm", "parallelize(k)", allow=True)
    assert not verdict.legal and not oracle.legal
    assert str(oracle.conflicts[0]) == (
        "C[0, 0]: S1(0, 0, 0) then S1(0, 1, 0) in the source; they run at once in parallel loop `k`, "
        "and the update is not atomic there (or not allowed to be)"
    )


def test_an_interchange_that_reverses_a_stencil_dependence_is_refuted():
    verdict, oracle = _judged("seidel-2d", "interchange(t, i)")
    assert not verdict.legal and not oracle.legal
    assert (
        str(oracle.conflicts[0]) == "A[1, 1]: S0(0, 2, 2) then S0(1, 1, 1) in the source; the generated nest runs the second first"
    )


@pytest.mark.parametrize(
    ("name", "text", "allow"),
    [("gemm", "parallelize(i)", False), ("gemm", "interchange(j, k)", False), ("gemm", "reverse(k)", True)],
)
def test_legal_schedules_are_accepted(name, text, allow):
    verdict, oracle = _judged(name, text, allow)
    assert verdict.legal and oracle.legal, oracle.conflicts


def test_a_reordered_sum_needs_reassociation():
    verdict, oracle = _judged("gemm", "reverse(k)")
    assert verdict.verdict == "reassociation" and not oracle.legal
    assert oracle.conflicts[0].reason == "the generated nest swaps two updates of a sum whose order the source fixes"


def test_a_parallel_loop_without_its_private_scalar_is_refuted():
    kernel, run = _run("symm")
    verdict = prove_legal(kernel, "parallelize(j)", explain=False)
    assert verdict.legal and check_schedule(run, verdict.lowered).legal
    shared = check_schedule(run, replace(verdict.lowered, private={}))
    assert not shared.legal and shared.conflicts[0].array == "temp2"


def test_a_parallel_scatter_without_atomic_updates_is_refuted():
    kernel, run = _run("sparse:histogram")
    verdict = prove_legal(kernel, "parallelize(i)", True, explain=False)
    assert verdict.legal and check_schedule(run, verdict.lowered, True).legal
    racing = check_schedule(run, replace(verdict.lowered, atomic=frozenset()), True)
    assert not racing.legal and racing.conflicts[0].array == "counts"
    assert "the update is not atomic there" in racing.conflicts[0].reason


def test_a_temporary_stored_in_too_few_cells_is_refuted():
    kernel, run = _run("numpy:column-statistics")
    verdict = prove_legal(kernel, "parallelize(S0.i)", explain=False)
    assert verdict.legal and check_schedule(run, verdict.lowered).legal
    totals = next(c for c in verdict.lowered.contracted if c.array == "totals")
    scalar = tuple(replace(c, kept=()) if c is totals else c for c in verdict.lowered.contracted)
    oracle = check_schedule(run, replace(verdict.lowered, contracted=scalar))
    assert str(oracle.conflicts[0]) == "totals[0, 0]: S19(1, 0) reads the value S18(3) wrote, where the source reads S18(0)'s"


def _chunks(suite: str, parts: int) -> list:
    names = [n for n in suite_kernels() if (n.split(":")[0] if ":" in n else "polybench") == suite]
    return [pytest.param(suite, names[k::parts], id=f"{suite}-{k}", marks=pytest.mark.slow) for k in range(parts)]


@pytest.mark.parametrize(
    ("suite", "names"), _chunks("polybench", 3) + _chunks("numpy", 4) + _chunks("sparse", 1) + _chunks("graphs", 1)
)
def test_no_legal_random_schedule_is_refuted_in_the_suites(suite, names):
    refuted = [case for name in names for case in judge(name, 25, 0).refuted]
    assert refuted == []
