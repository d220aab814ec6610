"""Lists of tuples (tests/fixtures/fsm_nested.py): each function the fsm track takes equal to the Python original on
random and edge inputs (same values, same exceptions), its bounded check proving it against itself and catching a
tuple's elements swapped, each refused one refused at its line with its reason."""

from __future__ import annotations

import dataclasses
import random

import pytest

from repoos_agent.fsm import ir
from repoos_agent.fsm.bounded import COUNTEREXAMPLE, NOT_APPLICABLE, PROVED, bounded_check
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.lower import FsmRefusal
from repoos_agent.fsm.native import FsmNative
from tests.conftest import ROOT
from tests.fixtures import fsm_nested as nested
from tests.test_fsm_multi import line_of, lowered, never

FIXTURE = ROOT / "tests/fixtures/fsm_nested.py"
RNG = random.Random(4547)

INPUTS = {
    "spans": (
        [("",), (" ",), ("x",), ("{x, xx}",), ("xxx[]",), ("{y}",), ("日",), ("\ud800",), ("x" * 300,)],
        lambda: ("".join(RNG.choices("{}[]:, xxy", k=RNG.randrange(30))),),
    ),
    "runs": (
        [(b"",), (b"\x00",), (b"ab\x00c\x00",), (b"\xff",), (b"a\x00\xff\x00",), (b"\x00" * 300,)],
        lambda: (bytes(RNG.choices(b"ab\x00\xff", k=RNG.randrange(40))),),
    ),
}
"""Each function the track takes: its edge inputs, and a draw of random ones."""


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_lists_of_tuples_equal_the_original(name: str):
    edges, draw = INPUTS[name]
    original = getattr(nested, name)
    function = lowered(name, *edges[0], path=FIXTURE)
    native, alone = FsmNative(function, original), FsmNative(function, never)
    for arguments in [*edges, *(draw() for _ in range(300))]:
        want = outcome(original, arguments)
        assert difference(want, outcome(native, arguments)) is None, arguments
        assert difference(want, outcome(alone, arguments)) is None, arguments  # the C code computed it


def test_a_tuple_holds_characters_and_ints_of_the_original_types():
    native = FsmNative(lowered("spans", "x", path=FIXTURE), never)
    tokens = native("{xx ,}")
    assert tokens == nested.spans("{xx ,}") == [("{", 0, 1), ("x", 1, 3), (",", 4, 5), ("}", 5, 6)]
    assert [tuple(map(type, token)) for token in tokens] == [(str, int, int)] * 4


def test_a_raise_beside_tuples_has_the_original_message():
    native = FsmNative(lowered("spans", "x", path=FIXTURE), never)
    with pytest.raises(ValueError, match=r"^unexpected character 'y' at 3$"):
        native("x, y")


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_the_bounded_check_proves_tuples_against_themselves(name: str):
    function = lowered(name, *INPUTS[name][0][0], path=FIXTURE)
    assert bounded_check(function, function, max_length=3, budget_s=30).verdict == PROVED


def _swapped(statements: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
    """The body with the first two appends of each tuple swapped: a wrong variant."""
    changed = list(statements)
    for k in range(len(changed) - 1):
        first, second = changed[k], changed[k + 1]
        if isinstance(first, ir.Append) and isinstance(second, ir.Append) and first.line == second.line:
            changed[k], changed[k + 1] = (
                dataclasses.replace(first, value=second.value),
                dataclasses.replace(second, value=first.value),
            )
    for k, statement in enumerate(changed):
        for field in ("then", "orelse", "body"):
            if hasattr(statement, field):
                statement = dataclasses.replace(statement, **{field: _swapped(getattr(statement, field))})
        changed[k] = statement
    return tuple(changed)


def test_a_tuple_with_its_elements_swapped_is_caught_by_the_bounded_check():
    function = lowered("runs", b"\x00", path=FIXTURE)
    wrong = dataclasses.replace(function, body=_swapped(function.body))
    bounded = bounded_check(function, wrong, max_length=3, budget_s=30)
    assert bounded.verdict == COUNTEREXAMPLE
    assert bounded.describe() == (
        "counterexample (b'\\x00\\x00',): the baseline returns [bytearray(b''), [(0, 0, 0), (1, 0, -1)]], "
        "the variant returns [bytearray(b''), [(0, 0, 0), (0, -1, 1)]]"
    )


def test_tuples_of_another_shape_are_not_applicable_to_the_bounded_check():
    function = lowered("runs", b"\x00", path=FIXTURE)
    other = dataclasses.replace(function, tuples={"pairs": (ir.INT,)})
    bounded = bounded_check(function, other, max_length=3, budget_s=30)
    assert (bounded.verdict, bounded.reason) == (NOT_APPLICABLE, "the variant builds other tuples than the baseline")


@pytest.mark.parametrize(
    ("name", "argument", "fragment", "reason"),
    [
        (
            "mixed_shapes",
            "ab",
            "tokens.append((i, i))",
            "`(i, i)` is a tuple of (an int, an int) here and of (a character, an int) elsewhere: "
            "the tuples of `tokens` have one shape",
        ),
        (
            "read_back",
            b"ab",
            "if len(pairs) > 3",
            "`pairs` holds tuples: only `pairs.append((...))`, emptying and returning it are modelled",
        ),
        ("ints_then_tuples", b"ab", "pairs.append((i, b))", "`(i, b)`: `pairs` holds ints elsewhere; append one kind of value"),
        ("tuple_in_bytearray", b"ab", "out.append((b, i))", "`out` is a `bytearray`: a tuple is appended only to a list"),
    ],
)
def test_refused_at_the_line_with_the_reason(name: str, argument: object, fragment: str, reason: str):
    with pytest.raises(FsmRefusal) as refused:
        lowered(name, argument, path=FIXTURE)
    assert (refused.value.line, refused.value.reason) == (line_of(fragment, FIXTURE), reason)
