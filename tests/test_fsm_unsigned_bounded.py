"""The bounded check on values past 2**63 - 1, held unsigned: a comparison reads them unsigned and `>>` shifts in
zeros, as C computes them and as Python means them, so a variant equal only under that reading is proved, and a
variant changed in one unsigned comparison, shift or bit 63 of a constant is `wrong` on an input that shows it."""

from __future__ import annotations

import dataclasses

import pytest

from repoos_agent.fsm import ir
from repoos_agent.fsm.bounded import PROVED, bounded_check
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.native import FsmNative
from repoos_agent.fsm.qualify import WRONG, qualify
from repoos_agent.fsm.rewrites.registry import Variant
from tests.fixtures import fsm_unsigned
from tests.test_fsm_leb128 import FIXTURE, lowered

LONGEST = 10
"""A varint reaches bit 63 in its tenth byte: the check must reach that length to see a value past 2**63 - 1."""


def baseline() -> ir.Function:
    return lowered(FIXTURE, "varint_high_bits", b"")


def changed(function: ir.Function, match, change) -> ir.Function:
    """`function` with every IR node `match` accepts replaced by `change(node)`."""

    def walk(node: object) -> object:
        if isinstance(node, tuple):
            return tuple(map(walk, node))
        if dataclasses.is_dataclass(node) and not isinstance(node, type):
            if match(node):
                return change(node)
            return dataclasses.replace(node, **{f.name: walk(getattr(node, f.name)) for f in dataclasses.fields(node)})
        return node

    return walk(function)


def is_op(op: str):
    return lambda node: isinstance(node, ir.Binary | ir.Compare) and node.op == op


def test_an_unsigned_comparison_is_read_as_python_reads_it():
    """`value >= 2**63` and `value > 2**63 - 1` agree on every value; read as signed bits they never would."""
    variant = changed(
        baseline(), is_op(">="), lambda node: dataclasses.replace(node, op=">", right=ir.Const((1 << 63) - 1, node.line))
    )
    verdict = bounded_check(baseline(), variant, max_length=LONGEST, budget_s=120.0)
    assert (verdict.verdict, verdict.length) == (PROVED, LONGEST)


def test_an_unsigned_shift_shifts_in_zeros():
    """`value >> 60` and `(value >> 60) & 15` agree on every unsigned value; an arithmetic shift would not."""
    variant = changed(baseline(), is_op(">>"), lambda node: ir.Binary("&", node, ir.Const(15, node.line), node.line))
    verdict = bounded_check(baseline(), variant, max_length=LONGEST, budget_s=120.0)
    assert (verdict.verdict, verdict.length) == (PROVED, LONGEST)


@pytest.mark.parametrize(
    ("match", "change"),
    [
        (is_op(">="), lambda node: dataclasses.replace(node, op=">")),
        (is_op(">>"), lambda node: dataclasses.replace(node, right=ir.Const(59, node.line))),
        (
            lambda node: isinstance(node, ir.Const) and node.value == 0xFF,
            lambda node: dataclasses.replace(node, value=0xFF | 1 << 63),
        ),
    ],
    ids=["comparison", "shift", "bit 63 of a mask"],
)
def test_a_variant_changed_on_unsigned_values_is_wrong_on_an_input_that_shows_it(match, change):
    variant = changed(baseline(), match, change)
    found = qualify(
        fsm_unsigned.varint_high_bits, baseline(), Variant((), variant), [(b"\x01",)], max_length=LONGEST, budget_s=120.0
    )
    assert found.verdict == WRONG and found.counterexample is not None, found.describe()
    assert "the bounded check" in found.reason
    arguments = eval(found.counterexample)  # the arguments as Python literals
    assert isinstance(arguments, tuple)
    native = FsmNative(variant, fsm_unsigned.varint_high_bits)
    assert difference(outcome(fsm_unsigned.varint_high_bits, arguments), outcome(native, arguments)) is not None
