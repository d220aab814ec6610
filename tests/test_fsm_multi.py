"""Several local outputs (tests/fixtures/fsm_multi.py): each function the fsm track takes equal to the Python
original on random and edge inputs (same values, same exceptions, arguments alike after the call), its bounded
check proving it against itself and catching outputs mixed up, each refused one refused at its line with its
reason; and where the bundled kernels that build several outputs stop."""

from __future__ import annotations

import dataclasses
import random
from functools import cache

import pytest

from repoos_agent.fsm import ir
from repoos_agent.fsm.bounded import COUNTEREXAMPLE, NOT_APPLICABLE, PROVED, bounded_check
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.differential import Cases, run_differential
from repoos_agent.fsm.lower import FsmRefusal, parameter_names
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.ingest.classify import walk
from repoos_agent.ingest.parse import parse_source, read_source, text
from tests.conftest import ROOT
from tests.fixtures import fsm_multi as multi

FIXTURE = ROOT / "tests/fixtures/fsm_multi.py"
RNG = random.Random(4546)


@cache
def _nodes(path=FIXTURE):
    tree = parse_source(read_source(path), str(path))
    return {text(n.child_by_field_name("name")): n for n in walk(tree.root_node) if n.type == "function_definition"}


def lowered(name, *values, path=FIXTURE):
    node = _nodes(path)[name]
    return lower_for(node, dict(zip(parameter_names(node), values, strict=False)))


def never(*arguments):
    raise AssertionError(f"the original ran on {arguments!r}")


def line_of(fragment: str, path=FIXTURE) -> int:
    return next(n for n, line in enumerate(read_source(path).splitlines(), 1) if fragment in line)


def some_bytes(alphabet: bytes, longest: int = 40) -> bytes:
    return bytes(RNG.choices(alphabet, k=RNG.randrange(longest)))


INPUTS = {
    "split_digits": ([(b"",), (b"0",), (b"a",), (b"09/:",), (bytes(range(256)),)], lambda: (some_bytes(b"0123456789ab\x00\xff"),)),
    "run_lengths": ([(b"",), (b"a",), (b"aaaa",), (b"ab" * 50,), (b"\x00" * 300,)], lambda: (some_bytes(b"aab\x00"),)),
    "words_last": (
        [("", 0), (" ", 0), ("abc", 2), ("abc", 3), ("a  b ", 1), ("日本 é", 5), ("\ud800x", 9)],
        lambda: ("".join(RNG.choices("ab  c日", k=RNG.randrange(30))), RNG.randrange(-1, 6)),
    ),
    "compile_ops": ([(b"",), (b"+-",), (b"++.#+",), (b"#",), (b"." * 300,)], lambda: (some_bytes(b"+-.#x"),)),
    "emptied": ([(b"",), (b"\x00",), (b"a\x00b",), (b"\x00" * 70,)], lambda: (some_bytes(b"\x00ab"),)),
}
"""Each function the track takes: its edge inputs, and a draw of random ones."""


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_several_outputs_equal_the_original(name: str):
    edges, draw = INPUTS[name]
    original = getattr(multi, name)
    function = lowered(name, *edges[0])
    native, alone = FsmNative(function, original), FsmNative(function, never)
    for arguments in [*edges, *(draw() for _ in range(300))]:
        want = outcome(original, arguments)
        assert difference(want, outcome(native, arguments)) is None, arguments
        assert difference(want, outcome(alone, arguments)) is None, arguments  # the C code computed it


def test_each_output_is_returned_as_its_own_type():
    native = FsmNative(lowered("compile_ops", b"+"), never)
    ops, args = native(b"++-.#+.")
    assert (type(ops), type(args)) == (bytearray, list)
    assert (ops, args) == multi.compile_ops(b"++-.#+.") == (bytearray(b"\x00\x01"), [1, 2])


def test_a_raise_beside_several_outputs_has_the_original_message():
    native = FsmNative(lowered("words_last", "ab", 1), never)
    with pytest.raises(ValueError, match=r"^word of 4 letters over 3$"):
        native("abcd efghi", 3)


@pytest.mark.parametrize("name", ["split_digits", "words_last", "emptied"])
def test_the_bounded_check_proves_several_outputs_against_themselves(name: str):
    function = lowered(name, *INPUTS[name][0][0])
    assert bounded_check(function, function, max_length=3, budget_s=30).verdict == PROVED


def _appended_to_the_first(function: ir.Function, statements: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
    """The body with every append to another output of `buffer`'s kind made to `buffer`: a wrong variant."""
    changed = []
    for statement in statements:
        if isinstance(statement, ir.Append) and function.output_kind(statement.sequence) == function.buffer_kind:
            statement = dataclasses.replace(statement, sequence=function.buffer)
        for field in ("then", "orelse", "body"):
            if hasattr(statement, field):
                statement = dataclasses.replace(statement, **{field: _appended_to_the_first(function, getattr(statement, field))})
        changed.append(statement)
    return tuple(changed)


def test_outputs_mixed_up_are_caught_by_both_checks():
    function = lowered("split_digits", b"1a")
    wrong = dataclasses.replace(function, body=_appended_to_the_first(function, function.body))
    bounded = bounded_check(function, wrong, max_length=3, budget_s=30)
    assert bounded.verdict == COUNTEREXAMPLE
    assert bounded.describe() == (
        "counterexample (b'\\x00',): the baseline returns [bytearray(b''), bytearray(b'\\x00')], "
        "the variant returns [bytearray(b'\\x00'), bytearray(b'')]"
    )
    checked = run_differential(FsmNative(wrong, multi.split_digits), Cases(function, multi.split_digits, [(b"1a",)]))
    assert checked.failing is not None
    assert difference(outcome(multi.split_digits, checked.failing), outcome(FsmNative(wrong, never), checked.failing))


def test_outputs_returned_in_another_order_are_not_applicable_to_the_bounded_check():
    function = lowered("split_digits", b"1a")
    swapped = dataclasses.replace(function, results=function.results[::-1])
    bounded = bounded_check(function, swapped, max_length=3, budget_s=30)
    assert (bounded.verdict, bounded.reason) == (NOT_APPLICABLE, "the variant returns other outputs than the baseline")


@pytest.mark.parametrize(
    ("name", "fragment", "reason"),
    [
        ("returned_twice", "return out, out", "`out, out` returns one output twice: return each once"),
        (
            "count_and_output",
            "return out, len(ones)",
            "`len(ones)`: a tuple of the local outputs (`bytearray()`, lists of ints) is returned",
        ),
        (
            "mixed_returns",
            "return first, second",
            "returns `first, second` here and `second, first` elsewhere: return the same outputs",
        ),
        (
            "rows_of_bytes",
            "rows.append(row)",
            "`rows.append(row)`: an output appended to another (a list of lists) is not modelled",
        ),
        (
            "grown_by_a_sequence",
            "other += data",
            "`other` is a local output: only `other.append(...)` and `other = bytearray()` again are modelled",
        ),
        (
            "line_starts",
            "starts = [0]",
            "a list: only integers, bytes and integer arrays are modelled (a constant table as `bytes` is)",
        ),
    ],
)
def test_refused_at_the_line_with_the_reason(name: str, fragment: str, reason: str):
    with pytest.raises(FsmRefusal) as refused:
        lowered(name, b"ab")
    assert (refused.value.line, refused.value.reason) == (line_of(fragment), reason)
