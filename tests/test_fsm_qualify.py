"""What a variant passes before it races: the baselines of the checksums qualify against themselves, and variants
broken by hand (a constant changed, a comparison flipped, a loop bound off by one, a branch wrong only past index
300, a raise's message changed) are reported `wrong` with a shortest input that shows it, which the Python original
and the compiled variant really disagree on."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from repoos_agent.catalog import find_bundled
from repoos_agent.fsm import differential, ir
from repoos_agent.fsm.bounded import COUNTEREXAMPLE, NOT_APPLICABLE, PROVED, bounded_check
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.differential import COUNT, Cases, differential_cases, run_differential
from repoos_agent.fsm.lower import parameter_names
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.proof import prove
from repoos_agent.fsm.qualify import QUALIFIED, UNPROVEN, WRONG, qualify
from repoos_agent.fsm.ranges import ARGUMENT
from repoos_agent.fsm.rewrites import apply_steps
from repoos_agent.fsm.rewrites.registry import Step, Variant
from repoos_agent.ingest.parse import functions, parse_source, read_source, text
from tests.conftest import ROOT
from tests.fixtures import fsm_functions, fsm_qualify_functions, fsm_rewrite_cases

FIXTURE = ROOT / "tests/fixtures/fsm_qualify_functions.py"
TRACK_FIXTURE = ROOT / "tests/fixtures/fsm_functions.py"
REWRITE_FIXTURE = ROOT / "tests/fixtures/fsm_rewrite_cases.py"
BUDGET_S = 120.0
SHORT = 2
"""The bounded check here ends by length (`SHORT`, enough to show each mutation), never by its budget, so that a
verdict does not depend on the machine's load."""


def _lowered(path: Path, name: str, arguments: tuple[object, ...]) -> ir.Function:
    node = next(n for n in functions(parse_source(read_source(path), str(path))) if text(n.child_by_field_name("name")) == name)
    return lower_for(node, dict(zip(parameter_names(node), arguments, strict=False)))


@cache
def kernel(name: str) -> tuple[ir.Function, Callable[..., object], bytes]:
    """A bundled checksum's IR, its Python original and its SMALL input."""
    bundled = find_bundled(f"fsm:{name}")
    data = bundled.module.init(**bundled.sizes["SMALL"])["data"]
    return _lowered(bundled.path, bundled.function, (data,)), bundled.python_function(), data


def fixture(name: str, *arguments: object) -> tuple[ir.Function, Callable[..., object]]:
    if hasattr(fsm_qualify_functions, name):
        return _lowered(FIXTURE, name, arguments), getattr(fsm_qualify_functions, name)
    return _lowered(TRACK_FIXTURE, name, arguments), getattr(fsm_functions, name)


def mutated(node: object, match: Callable[[object], bool], change: Callable[[object], object]) -> object:
    """`node` with every IR node `match` accepts replaced by `change(node)`."""
    if isinstance(node, tuple):
        return tuple(mutated(item, match, change) for item in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        if match(node):
            return change(node)
        fields = {field.name: mutated(getattr(node, field.name), match, change) for field in dataclasses.fields(node)}
        return dataclasses.replace(node, **fields)
    return node


def constant_changed(function: ir.Function, old: int, new: int) -> ir.Function:
    return mutated(function, lambda n: isinstance(n, ir.Const) and n.value == old, lambda n: dataclasses.replace(n, value=new))


def assert_really_differs(original: Callable[..., object], variant: ir.Function, arguments: tuple[object, ...]) -> None:
    """The counterexample is one: the original and the compiled variant disagree on it."""
    assert difference(outcome(original, arguments), outcome(FsmNative(variant, original), arguments)) is not None


def assert_caught_by_both(
    function: ir.Function, original: Callable[..., object], variant: ir.Function, shortest: int, samples: list[tuple]
) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """The bounded check and the differential cases each find an input, of the shortest length, that shows it; the
    two inputs are returned."""
    bounded = bounded_check(function, variant, budget_s=BUDGET_S, max_length=SHORT)
    assert bounded.verdict == COUNTEREXAMPLE, bounded.describe()
    assert len(bounded.counterexample[0]) == shortest
    assert_really_differs(original, variant, bounded.counterexample)
    checked = run_differential(FsmNative(variant, original), Cases(function, original, samples))
    assert checked.failing is not None
    assert len(checked.failing[0]) == shortest
    assert_really_differs(original, variant, checked.failing)
    return bounded.counterexample, checked.failing


@pytest.mark.parametrize("name", ["crc16_ccitt", "crc32", "adler32"])
def test_the_baseline_of_a_checksum_qualifies_against_itself(name: str):
    function, original, data = kernel(name.replace("_", "-"))
    found = qualify(original, function, Variant((), function), [(data,)], budget_s=BUDGET_S, max_length=4)
    assert found.verdict == QUALIFIED, found.describe()
    assert found.proof == "bounded check proved up to length 4"
    assert found.cases >= COUNT
    assert found.describe() == f"baseline: qualified: {found.proof}; {found.cases} differential cases agree"


def test_a_changed_polynomial_is_shown_wrong_on_one_byte_by_each_check():
    function, original, data = kernel("crc16-ccitt")
    assert_caught_by_both(function, original, constant_changed(function, 0x1021, 0x1020), 1, [(data,)])


def test_a_loop_bound_off_by_one_is_shown_wrong_on_one_byte_by_each_check():
    function, original, data = kernel("crc32")
    variant = mutated(
        function,
        lambda n: isinstance(n, ir.ForRange) and isinstance(n.stop, ir.Const) and n.stop.value == 8,
        lambda n: dataclasses.replace(n, stop=ir.Const(7, n.line)),
    )
    assert_caught_by_both(function, original, variant, 1, [(data,)])


def test_a_flipped_comparison_is_shown_wrong_with_the_int_argument_that_meets_it():
    function, original = fixture("clamped_sum", b"x", 100)
    variant = mutated(function, lambda n: isinstance(n, ir.Compare) and n.op == "<", lambda n: dataclasses.replace(n, op="<="))
    assert_caught_by_both(function, original, variant, 1, [(b"hello, world", 100)])
    found = qualify(
        original, function, Variant((Step("flipped"),), variant), [(b"hello, world", 100)], budget_s=BUDGET_S, max_length=SHORT
    )
    assert (found.verdict, found.counterexample) == (WRONG, "(b'\\x00', 0)")
    assert found.reason.startswith("the bounded check: the original returned 1, the native code returned 0")


def test_a_branch_wrong_only_past_index_300_is_caught_by_the_differential_cases():
    function, original = fixture("position_hash", b"x")
    variant = constant_changed(function, 300, 301)
    bounded = bounded_check(function, variant, max_length=8, budget_s=BUDGET_S)
    assert bounded.verdict == PROVED  # no short input shows it
    found = qualify(
        original, function, Variant((Step("shifted"),), variant), [(bytes(range(256)) * 4,)], budget_s=BUDGET_S, max_length=SHORT
    )
    assert found.verdict == WRONG
    assert found.reason.startswith("a differential case: the original returned")
    failing = eval(found.counterexample)  # the literal a user would paste
    assert len(failing[0]) == 301
    assert_really_differs(original, variant, failing)


def test_a_changed_raise_message_is_wrong_where_the_original_raises():
    function, original = fixture("digits_value", b"1")
    variant = mutated(function, lambda n: isinstance(n, ir.Raise), lambda n: dataclasses.replace(n, message="not a digit!"))
    bounded = bounded_check(function, variant, budget_s=BUDGET_S, max_length=SHORT)
    assert bounded.verdict == COUNTEREXAMPLE and len(bounded.counterexample[0]) == 1
    assert bounded.reason == "the baseline raises ValueError: not a digit, the variant raises ValueError: not a digit!"
    checked = run_differential(FsmNative(variant, original), Cases(function, original, [(b"12345",)]))
    assert checked.failing is not None and len(checked.failing[0]) == 1
    assert checked.difference == ("the original raised ValueError: not a digit, the native code raised ValueError: not a digit!")
    found = qualify(original, function, Variant((Step("message"),), variant), [(b"12345",)], budget_s=BUDGET_S, max_length=SHORT)
    assert found.verdict == WRONG


def test_a_variant_no_proof_applies_to_is_unproven_and_says_why():
    function, original = fixture("repeated_hash", b"x", 3)
    assert bounded_check(function, function, budget_s=BUDGET_S, max_length=SHORT).verdict == NOT_APPLICABLE
    found = qualify(original, function, Variant((), function), [(b"abc", 3)], prove=prove, budget_s=BUDGET_S, max_length=SHORT)
    assert found.verdict == UNPROVEN
    assert "but no proof applies (the step check does not apply (" in found.reason
    assert "; bounded check not applicable: a loop (line 37) may run more than 4 times on inputs of length 0)" in found.reason
    assert found.reason.endswith("it does not race")


def test_the_step_check_proves_a_byte_table_and_a_wrong_entry_is_wrong_on_a_real_input():
    function, original, data = kernel("crc16-ccitt")
    table = apply_steps(function, (Step("byte-table"),))
    found = qualify(original, function, table, [(data,)], prove=prove)
    assert found.verdict == QUALIFIED
    assert found.proof.startswith("step equivalence (")
    ((name, entries),) = [(n, t) for n, t in table.function.tables.items() if isinstance(t, ir.Table)]
    wrong_entry = list(entries.entries)
    wrong_entry[0x5A] ^= 0x10
    tables = {**table.function.tables, name: ir.Table(entries.dtype, tuple(wrong_entry))}
    broken = Variant(table.steps, dataclasses.replace(table.function, tables=tables))
    refuted = qualify(original, function, broken, [(data,)], prove=prove)
    assert refuted.verdict == WRONG
    assert refuted.reason.startswith("the step check is refuted, and a differential case shows it: the original returned")
    assert_really_differs(original, broken.function, eval(refuted.counterexample))


def test_the_cases_hold_the_edges_the_samples_and_ints_the_native_code_takes():
    function, _, data = kernel("crc32")
    cases = differential_cases(function, [(data,)], {"crc": 0})
    assert len(cases) == COUNT
    inputs = {case[0] for case in cases}
    assert {b"", b"\x00", b"\xff", data, *(b"\xff" * n for n in range(1, 18)), b"\xc0\x80", b"\xed\xa0\x80"} <= inputs
    assert {ARGUMENT, -ARGUMENT, ARGUMENT + 1, 0, -1} <= {case[1] for case in cases}  # the largest taken, and one past it
    assert sum(len(case[0]) <= 17 for case in cases) > COUNT // 2
    bounded_loop, _ = fixture("repeated_hash", b"x", 3)
    rounds = [case[1] for case in differential_cases(bounded_loop, [(b"abc", 3)], {"rounds": 3})]
    assert max(rounds) <= 33 and min(rounds) >= -1  # a loop's count stays small: the original must finish


def test_an_array_argument_gets_cases_of_its_dtype():
    function = dataclasses.replace(kernel("crc32")[0], parameters=(ir.Sequence("data", ir.ARRAY, "int32"), "crc"))
    cases = differential_cases(function, [], {})
    assert all(case[0].dtype == np.int32 for case in cases)
    assert any(case[0].size and case[0].max() == (1 << 31) - 1 for case in cases)


def test_an_output_buffer_that_differs_is_shown_wrong_on_one_byte():
    function, original = fixture("hex_encode", b"x")
    variant = constant_changed(function, 0x0F, 0x07)
    assert_caught_by_both(function, original, variant, 1, [(b"hello",)])
    found = bounded_check(function, variant, budget_s=BUDGET_S, max_length=SHORT)
    byte = found.counterexample[0][0]
    assert byte & 0x08  # the bit the mask drops
    assert (
        found.reason
        == f"the baseline returns {bytearray(b'%02x' % byte)!r}, the variant returns {bytearray(b'%02x' % (byte & 0xF7))!r}"
    )


def test_a_written_array_that_differs_is_shown_wrong_with_both_arrays_shortest():
    function, original = fixture("clamp_deltas", np.zeros(4, np.int32), np.zeros(4, np.int32))
    variant = constant_changed(function, 127, 126)
    sample = (np.array([0, 200, 5, -300], dtype=np.int32), np.zeros(4, np.int32))
    assert (
        bounded_check(function, variant, budget_s=BUDGET_S, max_length=SHORT).reason
        == "an argument the function writes differs after the call"
    )
    for found in assert_caught_by_both(function, original, variant, 2, [sample]):
        assert len(found[1]) == 1  # one slot in `out` is enough to show it
        assert (
            difference(outcome(original, found), outcome(FsmNative(variant, original), found))
            == "argument 1 differs after the call"
        )


@dataclasses.dataclass(frozen=True)
class Opaque:
    """An IR statement the bounded check has not been taught."""

    line: int


def test_a_construct_the_bounded_check_does_not_model_makes_it_not_applicable():
    function, _, _ = kernel("crc32")
    variant = dataclasses.replace(function, body=(Opaque(24), *function.body))
    found = bounded_check(function, variant, budget_s=BUDGET_S, max_length=SHORT)
    assert (found.verdict, found.reason) == (NOT_APPLICABLE, "line 24: `Opaque` is not modelled by the bounded check")


def test_a_function_of_ints_alone_is_proved_for_every_input_or_shown_wrong():
    function, original = fixture("mix", 1, 2)
    found = qualify(original, function, Variant((), function), [(3, 4)], budget_s=BUDGET_S, max_length=SHORT)
    assert found.verdict == QUALIFIED
    assert found.proof == "bounded check proved for every input (the function takes ints only)"
    variant = mutated(function, lambda n: isinstance(n, ir.Compare), lambda n: dataclasses.replace(n, op=">="))
    wrong = bounded_check(function, variant, budget_s=BUDGET_S, max_length=SHORT)
    assert wrong.verdict == COUNTEREXAMPLE
    x, y = wrong.counterexample
    assert x == y  # only where the flipped comparison decides otherwise
    assert_really_differs(original, variant, wrong.counterexample)


def test_a_case_the_original_never_finishes_is_skipped_and_counted(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(differential, "SLOW_S", 0.02)
    function, original = fixture("stuck_at_star", b"x")
    cases = Cases(function, original, [(b"abc",)], count=300)
    checked = run_differential(FsmNative(function, original), cases)
    assert checked.failing is None and checked.skipped > 0
    assert checked.checked + checked.skipped == 300
    assert (
        checked.describe()
        == f"{checked.checked} differential cases agree ({checked.skipped} skipped: the original ran past 0.02 s)"
    )


def test_a_raise_formatted_with_other_values_is_shown_wrong_with_both_messages():
    function, original = fixture("first_not_ascii", b"x")

    def one_off(raised: ir.Raise) -> ir.Raise:
        index = raised.values[1]
        return dataclasses.replace(raised, values=(raised.values[0], ir.Binary("+", index, ir.Const(1, index.line), index.line)))

    variant = mutated(function, lambda n: isinstance(n, ir.Raise), one_off)
    found = bounded_check(function, variant, budget_s=BUDGET_S, max_length=SHORT)
    (data,) = found.counterexample
    assert len(data) == 1 and data[0] > 0x7F
    shown = f"ValueError: byte {data[0]} at {{}} is not ASCII"
    assert found.reason == f"the baseline raises {shown.format(0)}, the variant raises {shown.format(1)}"
    assert_caught_by_both(function, original, variant, 1, [(b"plain",)])


def test_a_str_argument_gets_a_str_counterexample_from_each_check():
    function, original = fixture("count_vowels", "x")
    variant = constant_changed(function, ord("é"), ord("è"))
    bounded, failing = assert_caught_by_both(function, original, variant, 1, [("une fête",)])
    assert bounded in {("é",), ("è",)} and failing in {("é",), ("è",)}  # where the original and the variant count apart


@pytest.mark.parametrize("step", ["branchless", "unroll"])
def test_a_checksum_variant_from_the_menu_qualifies(step: str):
    function, original, data = kernel("crc16-ccitt")
    found = qualify(original, function, apply_steps(function, (Step(step),)), [(data,)], budget_s=BUDGET_S, max_length=2)
    assert found.verdict == QUALIFIED, found.describe()
    assert found.proof == "bounded check proved up to length 2"


def test_a_jump_table_with_a_case_moved_is_shown_wrong_on_one_opcode():
    function = _lowered(REWRITE_FIXTURE, "dispatch", (b"x",))
    original = fsm_rewrite_cases.dispatch
    table = apply_steps(function, (Step("jump-table"),))
    assert (
        qualify(original, function, table, [(bytes([1, 1, 2, 0, 1, 3]),)], budget_s=BUDGET_S, max_length=SHORT).verdict == QUALIFIED
    )

    def moved(switch: ir.Switch) -> ir.Switch:
        (constants, body), *rest = switch.cases
        return dataclasses.replace(switch, cases=((tuple(c + 100 for c in constants), body), *rest))

    variant = mutated(table.function, lambda n: isinstance(n, ir.Switch), moved)
    assert_caught_by_both(function, original, variant, 1, [(bytes([1, 1, 2, 0, 1, 3]),)])


def test_a_word_at_a_time_test_with_its_bound_off_by_one_is_shown_wrong_on_one_word():
    function = _lowered(REWRITE_FIXTURE, "lower_runs", (b"x",))
    original = fsm_rewrite_cases.lower_runs
    fast = apply_steps(function, (Step("ascii-fast-path"),))
    assert qualify(original, function, fast, [(b"hello World abc",)], budget_s=BUDGET_S, max_length=1).verdict == QUALIFIED
    variant = mutated(fast.function, lambda n: isinstance(n, ir.BytesBelow), lambda n: dataclasses.replace(n, bound=n.bound + 1))
    found = qualify(original, function, Variant(fast.steps, variant), [(b"hello World abc",)], budget_s=BUDGET_S, max_length=1)
    assert found.verdict == WRONG
    failing = eval(found.counterexample)
    assert len(failing[0]) == 8  # one word: shorter inputs never take the word-at-a-time path
    assert_really_differs(original, variant, failing)
