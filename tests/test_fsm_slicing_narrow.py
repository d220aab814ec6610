"""Slicing by 16 and the narrow register (`slicing(narrow=1)`) on the bundled CRCs: each variant equals the Python
original on random inputs, every remainder length and `crc` arguments inside and outside the width the narrow loop
is tested for; the step proof proves it on the states the test lets in; and a variant with one wrong table entry,
or a test that lets in one state too many, is refuted, shown wrong on a real call, and never races."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from repoos_agent.fsm import ir
from repoos_agent.fsm.arena import QUALIFIED, run_arena
from repoos_agent.fsm.native import FsmNative
from repoos_agent.fsm.optimize import qualifier_for
from repoos_agent.fsm.proof import PROVED, REFUTED, prove
from repoos_agent.fsm.proposals import Proposal
from repoos_agent.fsm.qualify import WRONG, qualify
from repoos_agent.fsm.ranges import ARGUMENT
from repoos_agent.fsm.rewrites.registry import REWRITES, NotApplicable, Step, Variant, apply_steps, rewrite
from repoos_agent.measure.isolated import RaceRules
from tests.test_fsm_rewrites_crc import CASES

NEW = [
    Step("slicing", {"k": 16}),
    Step("slicing", {"k": 4, "narrow": 1}),
    Step("slicing", {"k": 8, "narrow": 1}),
    Step("slicing", {"k": 16, "narrow": 1}),
]
STATES = [0, 1, 0xFFFF, 2**32 - 1, 2**32, 2**40 + 5, -1, -(2**33), ARGUMENT, -ARGUMENT, ARGUMENT + 1, 2**64]
"""`crc` arguments: within 32 bits, where the narrow loop runs, and outside them (the 64-bit loop, or past what
the native code takes, the original)."""
QUICK = RaceRules(outputs=(), min_repeats=3, max_repeats=4, min_total_s=0.0)


def calls(seed: int) -> list[tuple[object, ...]]:
    """Every length 0 to 40 (each remainder of 4, 8 and 16), some longer, each with some `crc` argument."""
    rng = random.Random(seed)
    inputs = [rng.randbytes(n) for n in range(41)] + [b"\xff" * 33, bytes(48), rng.randbytes(1000), bytearray(rng.randbytes(37))]
    return [(data, state) for data in inputs for state in rng.sample(STATES, 4)] + [(b"\x7f", s) for s in STATES]


def applicable(name: str) -> list[Step]:
    baseline = CASES[name][0]
    found = []
    for step in NEW:
        try:
            apply_steps(baseline, (step,))
        except NotApplicable:
            continue
        found.append(step)
    return found


@pytest.mark.parametrize(
    ("name", "step"), [(name, step) for name in ("crc32", "crc16_ccitt", "crc32_bzip2") for step in applicable(name)], ids=str
)
def test_a_new_slicing_equals_the_original_and_is_proved(name: str, step: Step):
    baseline, original, _ = CASES[name]
    variant = apply_steps(baseline, (step,)).function
    native = FsmNative(variant, original)
    for arguments in calls(16):
        assert native(*arguments) == original(*arguments), (step, arguments)
    proof = prove(baseline, variant)
    assert proof.verdict == PROVED, proof.reason


def test_the_narrow_loop_reads_only_the_crcs_32_bits_and_runs_under_a_test_of_them():
    baseline = CASES["crc32"][0]
    variant = apply_steps(baseline, (Step("slicing", {"k": 16, "narrow": 1}),)).function
    [test] = [s for s in variant.body if isinstance(s, ir.If)]
    crc, line = ir.Local("crc", ir.INT, test.line), test.line
    within = (ir.Compare(">=", crc, ir.Const(0, line), line), ir.Compare("<=", crc, ir.Const(2**32 - 1, line), line))
    assert test.condition == ir.Logical("and", *within, line)

    def shifts(loop: ir.ForRange) -> set[int]:
        found, pending = set(), [loop.body[0].value]  # type: ignore[union-attr]
        while pending:
            expr = pending.pop()
            if isinstance(expr, ir.Binary):
                if expr.op == ">>" and expr.left == ir.Local("crc", ir.INT, expr.line):
                    found.add(expr.right.value)  # type: ignore[union-attr]
                pending += [expr.left, expr.right]
            elif isinstance(expr, ir.Load):
                pending.append(expr.index)
        return found

    assert shifts(test.then[0]) == {0, 8, 16, 24}  # type: ignore[arg-type]
    assert shifts(test.orelse[0]) == {0, 8, 16, 24, 32, 40, 48, 56, 63}  # type: ignore[arg-type]


def test_narrow_is_refused_on_an_msb_first_register_with_the_reason():
    with pytest.raises(NotApplicable, match=r"line 26: `narrow=1` is for a reflected register: this MSB-first one is masked"):
        apply_steps(CASES["crc16_ccitt"][0], (Step("slicing", {"narrow": 1}),))


def one_entry_wrong(function: ir.Function, table: str, entry: int) -> ir.Function:
    old = function.tables[table]
    assert isinstance(old, ir.Table)
    entries = list(old.entries)
    entries[entry] ^= 0x100
    return replace(function, tables={**function.tables, table: ir.Table(old.dtype, tuple(entries))})


def test_a_narrow_test_one_state_too_wide_is_refuted_and_shown_wrong():
    baseline, original, _ = CASES["crc32"]
    sliced = apply_steps(baseline, (Step("slicing", {"k": 8, "narrow": 1}),))
    [test] = [s for s in sliced.function.body if isinstance(s, ir.If)]
    assert isinstance(test.condition, ir.Logical) and isinstance(test.condition.right, ir.Compare)
    wider = replace(test.condition, right=replace(test.condition.right, right=ir.Const(2**32, test.line)))
    body = tuple(replace(s, condition=wider) if s is test else s for s in sliced.function.body)
    wrong = replace(sliced.function, body=body)
    proof = prove(baseline, wrong)
    assert proof.verdict == REFUTED
    assert proof.counterexample is not None and proof.counterexample.state["crc"] >= 2**32
    # the register 2**32 at the loop is the argument 2**32 ^ 0xFFFFFFFF (crc32 inverts it first)
    native = FsmNative(wrong, original)
    assert native(bytes(8), 2**33 - 1) != original(bytes(8), 2**33 - 1)


def test_a_wrong_entry_in_a_narrow_slicing_table_is_wrong_on_a_real_call():
    baseline, original, _ = CASES["crc32"]
    sliced = apply_steps(baseline, (Step("slicing", {"k": 16, "narrow": 1}),))
    broken = Variant(sliced.steps, one_entry_wrong(sliced.function, "crc_table12", 0x5A))
    found = qualify(original, baseline, broken, [(bytes(range(64)),)], prove=prove)
    assert found.verdict == WRONG
    assert found.reason.startswith("the step check is refuted, and a differential case shows it: the original returned")
    arguments = eval(found.counterexample)  # the literals `qualify` printed
    assert FsmNative(broken.function, original)(*arguments) != original(*arguments)


@pytest.fixture
def broken_slicing():
    """`broken-slicing`: `slicing(k=16, narrow=1)` with entry 0x5A of one table wrong, registered for one test."""

    def broken(function: ir.Function) -> ir.Function:
        return one_entry_wrong(apply_steps(function, (Step("slicing", {"k": 16, "narrow": 1}),)).function, "crc_table12", 0x5A)

    rewrite("broken-slicing", "slicing(k=16, narrow=1) with one table entry wrong on purpose")(broken)
    yield
    del REWRITES["broken-slicing"]


@pytest.mark.slow  # two variants through 10,000 differential cases each, then a race
def test_a_narrow_slicing_with_a_wrong_entry_never_races(broken_slicing):
    baseline, original, _ = CASES["crc32"]
    samples = [(bytes(range(256)) * 4, 0)]
    proposals = [
        Proposal("slicing(k=16, narrow=1)", (Step("slicing", {"k": 16, "narrow": 1}),)),
        Proposal("broken-slicing", (Step("broken-slicing"),)),
    ]
    result = run_arena("crc32", baseline, original, samples, proposals, qualifier_for(original, baseline, samples), rules=QUICK)
    verdicts = {e.label: (e.verdict, e.timing is not None) for e in result.entrants}
    assert verdicts == {
        "baseline": ("baseline", True),
        "slicing(k=16, narrow=1)": (QUALIFIED, True),
        "broken-slicing": ("wrong", False),
    }
    assert result.winner.label != "broken-slicing"


def test_a_call_that_leaves_out_the_crc_gets_the_originals_default():
    baseline, original, _ = CASES["crc16_ccitt"]  # its default, 0xFFFF, is not 0
    native = FsmNative(apply_steps(baseline, (Step("slicing", {"k": 16}),)).function, original)
    data = bytes(range(40))
    assert native(data) == original(data) == original(data, 0xFFFF) != original(data, 0)
    assert native(data, crc=7) == original(data, crc=7)
    with pytest.raises(TypeError, match=r"^crc16_ccitt\(\) missing 1 required positional argument: 'data'$"):
        native()
