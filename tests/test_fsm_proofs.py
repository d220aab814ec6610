"""Proofs of variants correct by construction whose loop shape the fold step check does not cover: the ASCII fast
path (one pass of the original on each byte below the bound, the skip by induction) and unrolled folds (n steps
against the unrolled body, the remainder against one). A bound off by one and an unrolled copy with a changed
constant are not proved."""

from __future__ import annotations

import dataclasses

import pytest

from repoos_agent.fsm import ir
from repoos_agent.fsm.proof import NOT_APPLICABLE, PROVED, REFUTED, prove
from repoos_agent.fsm.qualify import QUALIFIED, qualify
from repoos_agent.fsm.rewrites import Step, apply_steps
from tests.test_fsm_qualify import kernel, mutated


@pytest.mark.parametrize("w", [8, 16])
def test_the_ascii_fast_path_of_utf8_validate_is_proved(w: int):
    function, _, _ = kernel("utf8-validate")
    proof = prove(function, apply_steps(function, (Step("ascii-fast-path", {"w": w}),)).function)
    assert (proof.verdict, proof.method) == (PROVED, "fast path: one pass on each byte below 128 checked, skip by induction")
    assert proof.reason == f"one pass on each byte below 128 adds one to i only; the skip of {w} such bytes is {w} passes"


def test_the_ascii_fast_path_of_utf8_validate_qualifies():
    function, original, data = kernel("utf8-validate")
    variant = apply_steps(function, (Step("ascii-fast-path", {"w": 8}),))
    found = qualify(original, function, variant, [(data,)], prove=prove)
    assert found.verdict == QUALIFIED, found.describe()
    assert found.proof.startswith("step equivalence (fast path")


def test_a_fast_path_bound_off_by_one_is_not_proved():
    function, _, _ = kernel("utf8-validate")
    variant = apply_steps(function, (Step("ascii-fast-path", {"w": 16}),)).function
    wrong = mutated(variant, lambda n: isinstance(n, ir.BytesBelow), lambda n: dataclasses.replace(n, bound=n.bound + 1))
    proof = prove(function, wrong)
    assert proof.verdict == NOT_APPLICABLE
    assert proof.reason == "the skip is not proved: line 56: on byte 128 the pass reaches a Return"


def test_a_fast_path_that_is_not_the_baseline_with_a_skip_is_not_proved():
    function, _, _ = kernel("utf8-validate")
    variant = apply_steps(function, (Step("ascii-fast-path", {"w": 8}),)).function
    changed = mutated(variant, lambda n: isinstance(n, ir.Const) and n.value == 0xF4, lambda n: dataclasses.replace(n, value=0xF5))
    proof = prove(function, changed)
    assert proof.verdict == NOT_APPLICABLE
    assert proof.reason == "the skip is not proved: the variant minus its skip is not the baseline"


UNROLLED = [(Step("byte-table"), Step("unroll", {"n": 4})), (Step("slicing", {"k": 8}), Step("unroll", {"n": 2}))]


@pytest.mark.parametrize("steps", UNROLLED, ids=lambda steps: " then ".join(map(str, steps)))
@pytest.mark.parametrize("name", ["crc16-ccitt", "crc32"])
def test_an_unrolled_fold_is_proved(name: str, steps: tuple[Step, ...]):
    function, _, _ = kernel(name)
    proof = prove(function, apply_steps(function, steps).function)
    assert proof.verdict == PROVED, proof.reason
    if steps[0].name == "slicing":
        assert proof.reason == "16 step(s) against 1, 8 step(s) against 1, 1 step(s) against 1: agree on every state and input"
    else:
        assert proof.reason == "4 step(s) against 1, 1 step(s) against 1: agree on every state and input"


def one_copy_changed(variant: ir.Function, copy: int, copies: int) -> ir.Function:
    """The variant with the mask `0xFF` (the table's index) changed to `0xFE` in one of the main loop's copies."""
    main = next(s for s in variant.body if isinstance(s, ir.While) and isinstance(s.condition, ir.Logical))
    size = (len(main.body) - 1) // copies
    start, end = copy * size, (copy + 1) * size
    body = (
        *main.body[:start],
        *mutated(
            main.body[start:end],
            lambda n: isinstance(n, ir.Const) and n.value == 0xFF,
            lambda n: dataclasses.replace(n, value=0xFE),
        ),
        *main.body[end:],
    )
    assert body != main.body
    return dataclasses.replace(variant, body=tuple(dataclasses.replace(main, body=body) if s is main else s for s in variant.body))


@pytest.mark.parametrize("name", ["crc16-ccitt", "crc32"])
def test_an_unrolled_copy_with_a_changed_constant_is_refuted(name: str):
    function, _, _ = kernel(name)
    variant = apply_steps(function, (Step("byte-table"), Step("unroll", {"n": 4}))).function
    proof = prove(function, one_copy_changed(variant, 2, 4))
    assert proof.verdict == REFUTED, proof.reason
    assert proof.reason.startswith("4 baseline step(s) and the variant's differ from state")
    assert proof.counterexample is not None and len(proof.counterexample.inputs) == 4


def test_a_sliced_then_unrolled_copy_with_a_changed_constant_is_refuted():
    function, _, _ = kernel("crc32")
    variant = apply_steps(function, UNROLLED[1]).function
    proof = prove(function, one_copy_changed(variant, 1, 2))
    assert proof.verdict == REFUTED, proof.reason
    assert proof.counterexample is not None and len(proof.counterexample.inputs) == 16
