"""Proofs of variants correct by construction whose loop shape the fold step check does not cover: the ASCII fast
path (one pass of the original on each byte below the bound, the skip by induction) and unrolled folds (n steps
against the unrolled body, the remainder against one). A bound off by one and an unrolled copy with a changed
constant are not proved."""

from __future__ import annotations

import dataclasses

import pytest

from repoos_agent.fsm import ir
from repoos_agent.fsm.proof import NOT_APPLICABLE, PROVED, prove
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
