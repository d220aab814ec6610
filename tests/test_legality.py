"""Legality on known cases: the verdicts a compiler engineer would expect, and feedback that names the cause."""

from __future__ import annotations

import re

import islpy as isl
import pytest

from repoos_agent.codegen.c import generate_c
from repoos_agent.evaluate import evaluate_schedule
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.legality import analyze, prove_legal
from repoos_agent.model import Signature
from repoos_agent.target import resolve_target


@pytest.fixture(scope="module")
def gemm():
    return resolve_target("gemm").kernel


@pytest.mark.parametrize("schedule", ["interchange(j, k)", "parallelize(i)", "", "tile(S1.k, S1.j, 8, 8); parallelize(i)"])
def test_gemm_legal_schedules(gemm, schedule):
    assert prove_legal(gemm, schedule).verdict == "legal"


def test_gemm_parallel_k_is_illegal_and_names_the_dependence(gemm):
    verdict = prove_legal(gemm, "parallelize(k)")
    assert verdict.verdict == "illegal"
    first = verdict.violations[0]
    assert (first.source, first.sink, first.array) == ("S1", "S1", "C")
    assert first.source_line == 43 and first.distance == ("0", "+", "0") and first.loops == ("i", "k", "j")
    assert first.primitive == "parallelize(k)"
    assert "loop `k` cannot run parallel" in verdict.feedback and "on `C`" in verdict.feedback
    assert verdict.suggestion == "parallelize `i` instead: parallelize(i)"


def test_gemm_reverse_k_reorders_a_reduction(gemm):
    verdict = prove_legal(gemm, "reverse(k)")
    assert verdict.verdict == "reassociation" and not verdict.legal
    assert "reorders the floating-point reduction S1 (line 43) on `C`" in verdict.feedback
    allowed = prove_legal(gemm, "reverse(k)", allow_reassociation=True)
    assert allowed.verdict == "legal" and allowed.reassociates


def test_reversing_a_recurrence_is_illegal_with_an_example():
    kernel = resolve_target("kernels/examples/user_kernels.py:clipped_prefix_max").kernel
    verdict = prove_legal(kernel, "reverse(i)")
    assert verdict.verdict == "illegal"
    violation = next(v for v in verdict.violations if v.kind == "flow")
    assert violation.array == "out" and violation.primitive == "reverse(i)"
    assert "must run after S1(i=" in violation.example and "with n=" in violation.example


def test_a_loop_carried_recurrence_cannot_run_parallel_and_the_pair_it_carries_is_shown():
    kernel = resolve_target("kernels/examples/user_kernels.py:clipped_prefix_max").kernel
    verdict = prove_legal(kernel, "parallelize(i)")
    assert verdict.verdict == "illegal"
    violation = next(v for v in verdict.violations if v.array == "out" and v.kind == "parallel")
    pair = re.fullmatch(
        r"with n=\d+: S1\(i=(\d+)\) must run after S1\(i=(\d+)\), but they are in different iterations of parallel loop `i`",
        violation.example,
    )
    assert pair is not None, violation.example
    sink, source = (int(value) for value in pair.groups())
    assert sink == source + 1  # out[i] reads out[i - 1]: distance 1
    assert f"e.g. {violation.example}" in violation.description


def test_seidel_2d_has_no_parallel_loop_until_skewed():
    kernel = resolve_target("seidel-2d").kernel
    assert not any(loop.parallelizable for loop in analyze(kernel).loops)
    assert prove_legal(kernel, "parallelize(i)").verdict == "illegal"
    wavefront = "skew(i, j, 1); skew(t, i, 2); interchange(t, i); parallelize(t)"
    assert prove_legal(kernel, wavefront).verdict == "legal"
    evaluation = evaluate_schedule(resolve_target("seidel-2d"), wavefront, "MINI")
    assert evaluation.verdict == "legal" and evaluation.correct


def test_jacobi_2d_spatial_loops_parallelize():
    loops = {loop.name: loop for loop in analyze(resolve_target("jacobi-2d").kernel).loops}
    assert not loops["t"].parallelizable
    assert all(loops[name].parallelizable for name in ("S0.i", "S0.j", "S1.i", "S1.j"))
    assert loops["S0.j"].vectorizable and not loops["S0.i"].vectorizable


def test_illegal_interchange_is_blamed_on_its_primitive():
    kernel = resolve_target("seidel-2d").kernel
    verdict = prove_legal(kernel, "parallelize(j); interchange(t, i)")
    assert verdict.verdict == "illegal"
    assert any(v.primitive == "interchange(t, i)" for v in verdict.violations)


def test_legality_check_needs_no_build(gemm, monkeypatch):
    from repoos_agent.backends import build as build_module

    monkeypatch.setattr(build_module, "build_shared_library", lambda *_: pytest.fail("legality must not compile"))
    evaluation = evaluate_schedule(resolve_target("gemm"), "parallelize(k)", "MINI")
    assert evaluation.verdict == "illegal" and evaluation.build_ms == 0


def test_distribute_among_statements_of_different_depths():
    """Found by the soundness hunt: statements shallower than the split loop once crashed distribute."""
    target = resolve_target("adi")
    verdict = prove_legal(target.kernel, "distribute(S14, S15)")
    assert verdict.verdict == "legal"
    evaluation = evaluate_schedule(target, "distribute(S14, S15)", "MINI")
    assert evaluation.correct


def test_parallel_and_vectorized_loop_builds_as_parallel_for_simd():
    """Found by the soundness hunt: two pragmas on one loop did not compile."""
    evaluation = evaluate_schedule(resolve_target("syrk"), "vectorize(S0.j, 2); parallelize(S0.j)", "MINI")
    assert evaluation.verdict == "legal" and evaluation.correct


def test_distribute_twice_at_one_level_keeps_both_splits():
    """Reported by a reviewer: a second split at the same level used to land on the first one's place."""
    kernel = resolve_target("covariance").kernel
    verdict = prove_legal(kernel, "distribute(S0, S1); distribute(S1, S2)")
    assert verdict.verdict == "legal"
    lowered = verdict.lowered
    first_coordinate = [
        isl.Map.from_union_map(lowered.schedule.intersect_domain(kernel.statement(name).domain.to_union_set()))
        .plain_get_val_if_fixed(isl.dim_type.out, 0)
        .to_python()
        for name in ("S0", "S1", "S2")
    ]
    assert first_coordinate[0] < first_coordinate[1] < first_coordinate[2]  # three loops, in source order


def test_a_parallel_mark_inside_another_parallel_loop_is_reported():
    verdict = prove_legal(resolve_target("gemm").kernel, "parallelize(i); parallelize(S1.j)")
    assert verdict.verdict == "legal"
    assert "`j` is nested in parallel loop `i` and runs sequentially inside it" in verdict.feedback


TRICKY = "tests/fixtures/tricky_kernels.py"


def test_allowed_reassociation_is_legal_verified_and_correct():
    """Found in review: Z3 used to refute every reassociated reduction as an engine bug."""
    target = resolve_target(f"{TRICKY}:dot", [parse_arg_spec(s) for s in ("n=200", "a=f64[n]", "b=f64[n]", "out=f64[1]")])
    assert prove_legal(target.kernel, "reverse(i)").verdict == "reassociation"
    evaluation = evaluate_schedule(target, "reverse(i)", allow_reassociation=True)
    assert evaluation.verdict == "legal" and evaluation.verified == "true" and evaluation.correct


def test_an_update_that_reads_its_accumulator_is_never_reassociation():
    """Found in review: `x[i] += x[i] * 0.5 + a[k]` was accepted as a reorderable reduction."""
    kernel = resolve_target(f"{TRICKY}:self_feeding").kernel
    verdict = prove_legal(kernel, "reverse(k)", allow_reassociation=True)
    assert verdict.verdict == "illegal"


def test_fused_sweeps_get_an_innermost_loop_without_statement_guards():
    # isl splits the innermost loop where a statement starts or stops (its `separate` option) rather
    # than testing each statement inside it, so gcc sees a plain loop it can vectorize.
    target = resolve_target("jacobi-2d")
    verdict = prove_legal(target.kernel, "shift(S1.i, 1); shift(S1.j, 1); fuse(S0, S1, 3)")
    code = generate_c(target.kernel, Signature.of_values(target.kernel, target.inputs("MINI")), verdict.lowered).text
    kernel_body = code[code.index("int repoos_kernel(") : code.index("int64_t repoos_instances(")]
    innermost = [_loop_body(kernel_body, start.start()) for start in re.finditer(r"for \(int64_t c5 ", kernel_body)]
    assert len(innermost) == 3 and not any("if (" in body for body in innermost), code
    evaluation = evaluate_schedule(target, verdict.schedule, "MINI", repeats=1)
    assert evaluation.verdict == "legal" and evaluation.correct


def _loop_body(code: str, start: int) -> str:
    """The text of the braced body of the loop whose `for` begins at `start`."""
    depth, opened = 0, code.index("{", start)
    for position in range(opened, len(code)):
        depth += {"{": 1, "}": -1}.get(code[position], 0)
        if depth == 0:
            return code[opened : position + 1]
    raise AssertionError("unbalanced braces")


def test_an_illegal_schedule_whose_prefix_marks_do_not_check_yet_is_explained():
    # Found by the soundness hunt: naming the culprit replays prefixes, and `promote(S0.t)` alone (t holds two
    # statements until the distribute) made that replay crash.
    verdict = prove_legal(resolve_target("jacobi-2d").kernel, "promote(S0.t); distribute(S0, S1)")
    assert verdict.verdict == "illegal" and "reversed by primitive 2 `distribute(S0, S1)`" in verdict.feedback


def test_an_illegal_schedule_with_a_one_loop_tile_gets_its_verdict():
    # Found by a hunt with explanations on: the suggestion tried `skew(S3.j, S3.j, 1)` for the one-loop tile and
    # the user saw `repoos: error` instead of the verdict.
    verdict = prove_legal(resolve_target("bicg").kernel, "tile(S3.j, 2); reverse(j); parallelize(S1.i)")
    assert verdict.verdict == "illegal" and "loop `i` cannot run parallel" in verdict.feedback
