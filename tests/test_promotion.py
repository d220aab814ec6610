"""Register promotion (`promote(k)`): the register tiling a BLAS micro-kernel does, proved harmless.

Promotion keeps the block of target elements a loop's body updates in locals across
that loop. It changes no instance order, so legality has nothing to say about it;
what can go wrong is the code: a wrong block, a wrong element, a partial tile. Hypothesis
draws random register tilings (random tile sizes, orders and promoted loops) over
kernels of different shapes, and every legal one must compute the baseline's output.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repoos_agent.backends import build_baseline, build_native
from repoos_agent.check import fresh_copy, written_arrays
from repoos_agent.codegen.c import generate_c
from repoos_agent.evaluate import evaluate_schedule
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.legality import prove_legal
from repoos_agent.measure import compare_outputs
from repoos_agent.model import Signature
from repoos_agent.schedule import ScheduleError, ScheduleState, parse_schedule
from repoos_agent.target import resolve_target

from .conftest import marked_slow

GEMM_REGISTER_TILES = (
    "distribute(S0, S1); tile(S1.i, S1.k, S1.j, 6, 16, 8); interchange(S1.i_t, S1.k_t); interchange(S1.i, S1.k); "
    "parallelize(S1.i_t); promote(S1.k)"
)


def _built_output(target, text: str, size: str) -> tuple[bool, str]:
    """Whether `text` computes the baseline's output at `size`, and the C it was built from."""
    kernel = target.kernel
    values = target.inputs(size)
    signature = Signature.of_values(kernel, values)
    expected = fresh_copy(values)
    build_baseline(kernel, signature)(expected)
    verdict = prove_legal(kernel, text, explain=False)
    assert verdict.legal, verdict.feedback
    got = fresh_copy(values)
    build_native(kernel, signature, verdict.lowered)(got)
    comparison = compare_outputs(expected, got, written_arrays(target), 1.0)
    return comparison.correct, generate_c(kernel, signature, verdict.lowered).text


def test_gemm_register_tiles_keep_a_block_of_c_in_locals_and_compute_the_same_output():
    correct, code = _built_output(resolve_target("gemm"), GEMM_REGISTER_TILES, "SMALL")
    assert correct
    assert "double rp_acc[6][8];" in code
    # SMALL's 60 x 70 x 80 does not divide into 6 x 8 x 16 tiles: the edges run unpromoted.
    assert "} else {" in code


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("promote(S1.j)", r"`S1.j` is the innermost loop around S1; promote the loop outside"),
        ("promote(i)", r"`i` holds S0, S1; promote needs a loop around one statement"),
        ("parallelize(S1.k); promote(S1.k)", r"is also parallel, vectorized or unrolled"),
        ("promote(S1.k, 4)", r"takes 1 arguments, got 2; usage: promote\(k\)"),
    ],
)
def test_promotion_that_cannot_apply_is_invalid_with_the_reason(text, message):
    verdict = prove_legal(resolve_target("gemm").kernel, text)
    assert verdict.verdict == "invalid"
    assert re.search(message, verdict.feedback), verdict.feedback


def test_a_promoted_loop_whose_body_is_no_box_runs_as_generated():
    """syrk's j runs up to i: no constant extent, so no locals, and the loop runs as isl generated it."""
    correct, code = _built_output(resolve_target("syrk"), "distribute(S0, S1); promote(S1.k)", "SMALL")
    assert correct
    assert "rp_acc" not in code


REGISTER_KERNELS = ["gemm", "2mm", "3mm", "syrk", "covariance", "trmm"]
SLOW_DRAWS = ("covariance", "2mm", "3mm", "syrk")
"""Their draws (6–10 s each) run in the slow set, the suite's time: gemm and trmm keep products and a triangular
bound in the default one."""


def register_tilings(kernel) -> st.SearchStrategy[str]:
    """Random register tilings of one statement with three or more loops: split off from the others,
    its loops tiled by small sizes (so MINI has full tiles), tile and point loops reordered at
    random, one loop promoted."""
    deep = [s for s in kernel.statements if len(s.loops) >= 3]

    @st.composite
    def tiling(draw) -> str:
        statement = draw(st.sampled_from(deep))
        names = [f"{statement.name}.{loop.name}" for loop in statement.loops]
        start = draw(st.integers(0, len(names) - 3))
        band = names[start : start + 3]
        sizes = [draw(st.sampled_from([2, 3, 4, 5])) for _ in band]
        parts = _isolating(kernel, statement.name)
        parts.append(f"tile({', '.join(band)}, {', '.join(map(str, sizes))})")
        tiles, points = [f"{n}_t" for n in band], band
        for _ in range(draw(st.integers(0, 2))):
            group = draw(st.sampled_from([tiles, points]))
            a, b = draw(st.sampled_from([(x, y) for x in group for y in group if x < y]))
            parts.append(f"interchange({a}, {b})")
        if draw(st.booleans()):
            parts.append(f"parallelize({draw(st.sampled_from(tiles))})")
        parts.append(f"promote({draw(st.sampled_from(tiles + points))})")
        return "; ".join(parts)

    return tiling()


def _isolating(kernel, name: str) -> list[str]:
    """The `distribute`s that give statement `name` loops of its own."""
    state, parts = ScheduleState(kernel), []
    progress = True
    while progress:
        progress = False
        for other in kernel.statements:
            pair = sorted([other.name, name], key=lambda n: int(n[1:]))
            if other.name == name:
                continue
            text = f"distribute({pair[0]}, {pair[1]})"
            try:
                state.apply_all(parse_schedule(text))
            except ScheduleError:
                continue
            parts.append(text)
            progress = True
    return parts


@pytest.mark.parametrize("name", marked_slow(REGISTER_KERNELS, SLOW_DRAWS))
def test_every_legal_random_register_tiling_computes_the_baseline_output(name):
    target = resolve_target(name)
    kernel = target.kernel
    values = target.inputs("MINI")
    signature = Signature.of_values(kernel, values)
    expected = fresh_copy(values)
    build_baseline(kernel, signature)(expected)
    outputs = written_arrays(target)
    seen: Counter[str] = Counter()

    @settings(max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(register_tilings(kernel))
    def legal_means_same_output(text: str) -> None:
        verdict = prove_legal(kernel, text, explain=False)
        seen[verdict.verdict] += 1
        if not verdict.legal:
            return
        if "rp_acc" in generate_c(kernel, signature, verdict.lowered).text:
            seen["promoted"] += 1
        got = fresh_copy(values)
        build_native(kernel, signature, verdict.lowered)(got)
        comparison = compare_outputs(expected, got, outputs, 1.0)
        assert comparison.correct, f"legal schedule `{verdict.schedule}` changed {comparison.errors}"

    legal_means_same_output()
    assert seen["legal"] >= 3, dict(seen)
    if name in ("gemm", "2mm", "3mm", "syrk"):
        assert seen["promoted"] >= 1, dict(seen)


def test_a_target_named_by_iterators_that_move_with_the_promoted_loop_is_not_promoted():
    """After skew(k, j, 1), `C[i][j + k]` is one element across k, but the copies before and after
    k could not name it (j and k are not defined there): the loop runs as generated, and builds."""
    target = resolve_target(
        "tests/fixtures/tricky_kernels.py:skewed_product",
        [parse_arg_spec(s) for s in ["n=8", "m=8", "A=f64[n,m]", "B=f64[m,24]", "C=f64[n,24]"]],
    )
    evaluation = evaluate_schedule(target, "skew(k, j, 1); promote(k)", measure=True)
    assert evaluation.verdict == "legal" and evaluation.correct, evaluation.feedback
