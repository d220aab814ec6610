"""Privatization: loops that reuse a scalar temporary per iteration run in parallel, one copy per thread;
scalars that carry a value between iterations, or out of the loop, keep the loop sequential."""

from __future__ import annotations

from dataclasses import replace

import pytest

from repoos_agent.agent.heuristic import HeuristicProposer
from repoos_agent.codegen.c import generate_c
from repoos_agent.codegen.loopnest import For, LoopNest, build_loop_nest
from repoos_agent.evaluate import evaluate_schedule
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.legality import analyze, prove_legal
from repoos_agent.model import Signature
from repoos_agent.schedule import ScheduleState, parse_schedule
from repoos_agent.target import resolve_target
from repoos_agent.verify import verify_loop_nest

from .test_verify import rewrite

DERICHE_ROWS = "parallelize(S13.i); parallelize(S20.i); parallelize(S30.j); parallelize(S37.j)"
SCALARS = "tests/fixtures/scalar_temporaries.py"


def user_target(function: str, *arguments: str):
    """A kernel of the fixture file: `n` is 300, a bare name is an f64 array of length n."""
    specs = ["n=300", *(name if "=" in name else f"{name}=f64[n]" for name in arguments)]
    return resolve_target(f"{SCALARS}:{function}", [parse_arg_spec(spec) for spec in specs])


def test_analyze_reports_deriche_row_loops_parallel_with_their_scalars_private():
    loops = {loop.name: loop for loop in analyze(resolve_target("deriche").kernel).loops}
    assert loops["S13.i"].parallelizable and loops["S13.i"].private == ("xm1", "ym1", "ym2")
    assert loops["S20.i"].private == ("xp1", "xp2", "yp1", "yp2")
    assert loops["S30.j"].private == ("tm1", "ym1", "ym2") and loops["S37.j"].parallelizable
    assert not loops["S16.j"].parallelizable  # the recurrence along a row stays sequential
    assert loops["S29.i"].parallelizable and loops["S29.i"].private == ()


def test_cli_analyze_says_which_scalars_are_private(repoos):
    result = repoos("analyze", "symm")
    assert result.returncode == 0, result.stderr
    assert "j: parallel with temp2 private" in result.stdout


@pytest.mark.parametrize("size", ["MINI", pytest.param("SMALL", marks=pytest.mark.slow)])
def test_deriche_row_loops_run_in_parallel_and_compute_the_baseline(size):
    evaluation = evaluate_schedule(resolve_target("deriche"), DERICHE_ROWS, size, repeats=1)
    assert evaluation.verdict == "legal" and evaluation.correct and evaluation.verified == "true"
    assert "`S13.i` runs in parallel with xm1, ym1, ym2 private" in evaluation.feedback


@pytest.mark.parametrize(("size", "compiler"), [("MINI", "c"), ("SMALL", "c"), ("SMALL", "mlir")])
def test_symm_j_runs_in_parallel_and_computes_the_baseline(size, compiler):
    evaluation = evaluate_schedule(resolve_target("symm"), "parallelize(j)", size, repeats=1, compiler=compiler)
    assert evaluation.verdict == "legal" and evaluation.correct and evaluation.verified == "true"
    assert "j (with temp2 private)" in evaluation.feedback


def test_each_thread_declares_its_own_copy_in_the_parallel_region():
    target = resolve_target("symm")
    verdict = prove_legal(target.kernel, "parallelize(j)")
    text = generate_c(target.kernel, Signature.of_values(target.kernel, target.inputs("MINI")), verdict.lowered).text
    region = text[text.index("static void rp_region_0(") : text.index("#pragma omp for")]  # what each thread runs
    assert "double temp2;" in region
    assert "temp2" not in region[: region.index(")")]  # not a parameter: no thread sees another's copy


@pytest.mark.slow  # end to end: the slow set runs it
def test_the_heuristic_proposes_the_newly_parallel_loops():
    first = HeuristicProposer(resolve_target("deriche").kernel).propose([], 1)[0].schedule
    assert all(mark in first for mark in DERICHE_ROWS.split("; "))


def test_other_primitives_keep_the_memory_based_rule():
    """Privatization relaxes only `parallelize`: interchanging across the scalar's reuse stays illegal."""
    assert prove_legal(resolve_target("symm").kernel, "interchange(i, j); parallelize(j)").verdict == "illegal"


def test_durbin_sum_carries_a_value_between_iterations():
    verdict = prove_legal(resolve_target("durbin").kernel, "parallelize(S5.i)")
    assert verdict.verdict == "illegal"
    assert {v.array for v in verdict.violations} == {"sum"}
    assert "`sum` cannot be private to it: a value flows from one iteration to a later one" in verdict.feedback


@pytest.mark.parametrize(
    ("function", "arrays", "scalar", "reason"),
    [
        ("running_sum", ("a", "b"), "s", "a value flows from one iteration to a later one"),
        ("guarded_write", ("a", "b"), "t", "a value flows from one iteration to a later one"),
        ("last_value", ("a", "b", "last"), "t", "a value written inside the loop is read after it (live-out)"),
        ("overwritten_argument", ("scale=1.5", "a", "b"), "scale", "it is an argument of the kernel"),
    ],
)
def test_a_scalar_that_carries_a_value_keeps_its_loop_sequential(function, arrays, scalar, reason):
    kernel = user_target(function, *arrays).kernel
    assert not any(loop.parallelizable for loop in analyze(kernel).loops)
    verdict = prove_legal(kernel, "parallelize(i)")
    assert verdict.verdict == "illegal" and {v.array for v in verdict.violations} == {scalar}
    assert f"`{scalar}` cannot be private to it: {reason}" in verdict.feedback


def test_a_scalar_private_to_one_loop_and_rewritten_before_the_next():
    target = user_target("reused_after_reset", "a", "b", "c")
    evaluation = evaluate_schedule(target, "parallelize(S0.i); parallelize(S3.i)", repeats=1)
    assert evaluation.verdict == "legal" and evaluation.correct and evaluation.verified == "true"
    assert "`S0.i` runs in parallel with t private" in evaluation.feedback


def forced(kernel, schedule: str, private: frozenset[str]):
    """A nest whose parallel loop claims `private` scalars without legality's consent."""
    lowered = ScheduleState(kernel).apply_all(parse_schedule(schedule)).lower()
    lowered = replace(lowered, private={loop_id: private for loop_id in lowered.parallel})
    return lowered, build_loop_nest(kernel, lowered)


@pytest.mark.parametrize(
    ("kernel", "schedule", "scalar"),
    [
        (lambda: resolve_target("durbin").kernel, "parallelize(S5.i)", "sum"),
        (lambda: user_target("last_value", "a", "b", "last").kernel, "parallelize(i)", "t"),
    ],
)
def test_z3_refutes_a_private_scalar_whose_copy_would_be_stale(kernel, schedule, scalar):
    """The verifier does not take legality's word: a read of a never-written copy is refuted."""
    kernel = kernel()
    lowered, nest = forced(kernel, schedule, frozenset({scalar}))
    verification = verify_loop_nest(kernel, lowered, nest)
    assert verification.verified is False
    assert f"private scalar `{scalar}` may be read before its thread's copy is written" in verification.reason


def test_z3_sees_the_race_on_a_scalar_the_loop_does_not_privatize():
    kernel = resolve_target("symm").kernel
    verdict = prove_legal(kernel, "parallelize(j)")
    nest = build_loop_nest(kernel, verdict.lowered)
    shared = rewrite(nest.root, lambda n: replace(n, private=frozenset()) if isinstance(n, For) and n.parallel else None)
    verification = verify_loop_nest(kernel, verdict.lowered, LoopNest(shared, nest.bounds))
    assert verification.verified is False and "loop `j` (parallel or vectorized) has a race" in verification.reason
    assert verify_loop_nest(kernel, verdict.lowered, nest).verified is True
