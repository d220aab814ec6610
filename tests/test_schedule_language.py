"""The schedule language: parses what it should, refuses the rest at once with a precise reason."""

from __future__ import annotations

import time

import pytest

from repoos_agent.evaluate import evaluate_schedule
from repoos_agent.legality import prove_legal
from repoos_agent.schedule import ScheduleError, ScheduleState, parse_schedule
from repoos_agent.target import resolve_target


@pytest.fixture(scope="module")
def gemm():
    return resolve_target("gemm").kernel


def test_primitives_separated_by_semicolons_or_newlines_print_canonically():
    schedule = parse_schedule("interchange(j,k)\n tile( i ,S1.j, 32,32 ) ; parallelize(i_t)  # outer tiles on cores")
    assert str(schedule) == "interchange(j, k); tile(i, S1.j, 32, 32); parallelize(i_t)"
    assert [p.index for p in schedule.primitives] == [1, 2, 3]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("garbage", r"primitive 1 `garbage`: expected NAME\(ARGUMENTS\)"),
        ("parallelize(i); fly(i)", r"primitive 2 `fly\(i\)`: unknown primitive `fly`; known: interchange, tile"),
        ("interchange(i)", r"takes 2 arguments, got 1; usage: interchange\(i, j\)"),
        ("tile(i, j, 32)", r"tile takes 1 to 3 loops and as many sizes, got 3 arguments"),
        ("tile(i, 0)", r"tile sizes must be positive integers, got 0"),
        ("tile(i, -4)", r"tile sizes must be positive integers, got -4"),
        ("unroll(k, 0)", r"factor must be between 2 and 64, got 0"),
        ("vectorize(j, -8)", r"width must be between 2 and 64, got -8"),
        ("skew(i, j, 0)", r"skew factor 0 changes nothing"),
        ("parallelize(7)", r"argument 1 `7`: expected a loop name like `i` or `S1.j`"),
        ("fuse(S0, S1, x)", r"argument 3 `x`: expected an integer"),
        ("interchange(i, i)", r"interchange of a loop with itself"),
    ],
)
def test_malformed_schedules_name_primitive_and_token(text, message):
    with pytest.raises(ScheduleError, match=message):
        parse_schedule(text)


def test_ten_thousand_primitives_are_refused_at_once(gemm):
    start = time.perf_counter()
    verdict = prove_legal(gemm, ";".join(["reverse(i)"] * 10_000))
    assert verdict.verdict == "invalid" and "at most" in verdict.feedback
    many_short = prove_legal(gemm, ";".join(["p(i)"] * 100))
    assert many_short.verdict == "invalid" and "100 primitives; a schedule has at most 64" in many_short.feedback
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("parallelize(q)", r"unknown loop `q`; loops are i, S0.j, S1.j, k"),
        ("tile(i, j, 32, 32)", r"loop name `j` is ambiguous: S0.j, S1.j"),
        ("parallelize(S7.i)", r"unknown statement `S7`; statements are S0, S1"),
        ("interchange(i, k)", r"`i` and `k` are not a perfect band: S0 is inside only one of them"),
        ("vectorize(k, 4)", r"`k` is not the innermost loop around S1"),
        ("fuse(S0, S1, 3)", r"depth 3 exceeds the loops around S0 \(2\)"),
        ("parallelize(i); unroll(i, 4)", r"unrolling a loop that is also parallel"),
    ],
)
def test_schedules_that_do_not_apply_are_invalid_with_the_reason(gemm, text, message):
    verdict = prove_legal(gemm, text)
    assert verdict.verdict == "invalid"
    with pytest.raises(ScheduleError, match=message):
        ScheduleState(gemm).apply_all(parse_schedule(text)).lower()


def test_a_loop_of_another_kernel_is_invalid(gemm):
    verdict = prove_legal(gemm, "parallelize(t)")
    assert verdict.verdict == "invalid" and "unknown loop `t`" in verdict.feedback


def test_tile_names_tile_loops_with_t_and_keeps_point_names():
    kernel = resolve_target("jacobi-2d").kernel
    state = ScheduleState(kernel).apply_all(parse_schedule("tile(S0.i, S0.j, 16, 8)"))
    names = [d.name for d in state.statements["S0"].dims]
    assert names == ["t", "i_t", "j_t", "i", "j"]
    later = prove_legal(kernel, "tile(S0.i, S0.j, 16, 8); parallelize(S0.i_t)")
    assert later.verdict == "legal"


def test_a_loop_tiled_twice_gets_a_numbered_tile_loop(gemm):
    # Two-level tiling (a cache block, then a register block) must not give two loops one name.
    text = "distribute(S0, S1); tile(S1.j, 512); interchange(S1.i, S1.j_t); tile(S1.k, S1.i, S1.j, 128, 6, 32)"
    state = ScheduleState(gemm).apply_all(parse_schedule(text))
    assert [d.name for d in state.statements["S1"].dims] == ["j_t", "k_t", "i_t", "j_t2", "k", "i", "j"]
    verdict = prove_legal(gemm, f"{text}; parallelize(S1.i_t); promote(S1.k)")
    assert verdict.verdict == "legal" and {"j_t", "j_t2"} <= set(verdict.parallel_loops)


def test_tile_of_loops_not_adjacent_is_invalid():
    kernel = resolve_target("heat-3d").kernel
    verdict = prove_legal(kernel, "tile(S0.i, S0.k, 8, 8)")
    assert verdict.verdict == "invalid" and "adjacent loops" in verdict.feedback


@pytest.mark.parametrize("mark", ["parallelize(S1.i)", "vectorize(S1.j, 4)", "unroll(S1.j, 2)"])
def test_a_mark_on_a_loop_a_later_fuse_merges_away_is_invalid(mark):
    # Found by the soundness hunt: the mark pointed at a loop that no longer existed, and the check crashed.
    verdict = prove_legal(resolve_target("jacobi-2d").kernel, f"{mark}; fuse(S0, S1, 3)")
    assert verdict.verdict == "invalid"
    assert f"primitive 1 `{mark}`" in verdict.feedback and "mark the fused loop after the `fuse`" in verdict.feedback


def test_marks_made_before_a_distribute_hold_for_both_halves_and_compute_the_same_output():
    target = resolve_target("gemm")
    verdict = prove_legal(target.kernel, "parallelize(i); distribute(S0, S1)")
    assert verdict.legal and len(verdict.lowered.parallel) == 2  # S0's i and S1's copy of it
    evaluation = evaluate_schedule(target, verdict.schedule, "MINI", repeats=1)
    assert evaluation.verdict == "legal" and evaluation.correct and evaluation.verified == "true"


def test_a_vectorized_loop_moved_outward_later_is_invalid():
    verdict = prove_legal(resolve_target("gemm").kernel, "vectorize(S1.j, 4); interchange(S1.k, S1.j)")
    assert verdict.verdict == "invalid" and "`S1.j` is not the innermost loop around S1 at the end" in verdict.feedback
