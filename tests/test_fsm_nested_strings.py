"""Nested lists of strings (fsm/nested.py, tests/fixtures/fsm_nested_strings.py, the bundled csv-split): each
function the fsm track takes equal to the Python original on random and edge inputs, csv-split also to the `csv`
module; the bounded check proving them against themselves and catching a wrong stream; a list changed or appended
again after it went into another, or read, refused at its line."""

from __future__ import annotations

import csv
import dataclasses
import io
import random
import re

import pytest

from kernels.fsm import csv_split as kernel
from repoos_agent.fsm import ir
from repoos_agent.fsm.bounded import COUNTEREXAMPLE, PROVED, bounded_check
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.lower import FsmRefusal
from repoos_agent.fsm.native import FsmNative
from tests.conftest import ROOT
from tests.fixtures import fsm_nested_strings as nested
from tests.test_fsm_multi import lowered, never

FIXTURE = ROOT / "tests/fixtures/fsm_nested_strings.py"
KERNEL = ROOT / "kernels/fsm/csv_split.py"
RNG = random.Random(4180)

CSV_EDGES = [
    "",
    "\n",
    "\r",
    "\r\n",
    "\n\n\r\n\r\r",
    "a,b\r\nc,d\r\n",
    "a\rb\rc",
    "a,,b,\n,",
    '"a""b","c\r\nd",e\n',
    '"""",""\n',
    '"a"b,c"d"\n',
    "trailing,field",
    '"unterminated,\nquote',
    '"',
    '"a"\r',
    "é,日本,\ud800\n🐍",
    "x" * 300 + "," + "y" * 300,
]
"""Empty text, only line ends, `\\r\\n` and lone `\\r`, quoted fields with doubled quotes and line ends, text after
a closing quote, a trailing field without a line end, an unterminated quote, characters past ASCII, long fields."""


def random_csv() -> str:
    return "".join(RNG.choices('ab,"\r\n \x00é', k=RNG.randrange(24)))


def csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


INPUTS = {
    "lines_of_words": (
        ["", "\n", " ", "a b\nc", "a  b \n\n", "日 本\n"],
        lambda: "".join(RNG.choices("ab \n日", k=RNG.randrange(20))),
    ),
    "prefixes": (["", "/", ".", "a/b.c/", "//..", "é/" * 50], lambda: "".join(RNG.choices("ab/.", k=RNG.randrange(20)))),
    "sections": (["", "#", ";", ",", "a,b;c#", "a;#;#,", "x,y"], lambda: "".join(RNG.choices("ab,;#", k=RNG.randrange(24)))),
}
"""Each fixture the track takes: its edge inputs, and a draw of random ones."""


def _natives(function: ir.Function, original) -> tuple[FsmNative, FsmNative]:
    return FsmNative(function, original), FsmNative(function, never)


def test_csv_split_equals_the_original_and_the_csv_module_on_edge_and_random_text():
    native, alone = _natives(lowered("csv_split", "a,b\n", path=KERNEL), kernel.csv_split)
    for text in [*CSV_EDGES, *(random_csv() for _ in range(400))]:
        want = outcome(kernel.csv_split, (text,))
        assert difference(want, outcome(native, (text,))) is None, text
        assert difference(want, outcome(alone, (text,))) is None, text  # the C code computed it
        if "\x00" not in text and "\ud800" not in text:
            assert alone(text) == csv_rows(text), text


def test_csv_split_gives_new_lists_of_str_as_the_original_does():
    alone = FsmNative(lowered("csv_split", "a,b\n", path=KERNEL), never)
    rows = alone('a,"b\r\nc"\n\n"x""y"')
    assert rows == [["a", "b\r\nc"], [], ['x"y']]
    assert rows[0] is not rows[1] and all(type(row) is list for row in rows)
    assert {type(field) for row in rows for field in row} == {str}


def test_csv_split_on_its_own_inputs_equals_the_original():
    text = kernel.init(**kernel.SIZES["SMALL"])["text"]
    assert FsmNative(lowered("csv_split", text, path=KERNEL), never)(text) == kernel.csv_split(text)


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_nested_strings_equal_the_original(name: str):
    edges, draw = INPUTS[name]
    original = getattr(nested, name)
    native, alone = _natives(lowered(name, edges[0], path=FIXTURE), original)
    for text in [*edges, *(draw() for _ in range(300))]:
        want = outcome(original, (text,))
        assert difference(want, outcome(native, (text,))) is None, text
        assert difference(want, outcome(alone, (text,))) is None, text


def test_a_list_of_characters_may_grow_after_its_join():
    alone = FsmNative(lowered("prefixes", "a", path=FIXTURE), never)
    assert alone("ab/c./d") == nested.prefixes("ab/c./d") == ["ab", "", "ab/c."]


def test_the_bounded_check_proves_csv_split_against_itself():
    function = lowered("csv_split", "a", path=KERNEL)
    assert bounded_check(function, function, max_length=2, budget_s=30).verdict == PROVED


def test_a_field_ending_one_short_is_caught_by_the_bounded_check():
    function = lowered("sections", "a", path=FIXTURE)
    wrong = dataclasses.replace(function, body=_short_fields(function.body))
    bounded = bounded_check(function, wrong, max_length=3, budget_s=30)
    assert bounded.verdict == COUNTEREXAMPLE
    assert re.fullmatch(  # Z3 picks either: a field ends there, no section does
        r"counterexample \('[,;]',\): the streams the nested lists are built from differ "
        r"\(the lists themselves agree: returns \[\]\)",
        bounded.describe(),
    ), bounded.describe()
    assert FsmNative(function, never)(",") == FsmNative(wrong, never)(",") == []  # stricter than the lists, never looser
    assert FsmNative(wrong, never)("a,#") == [[[""]]] != nested.sections("a,#")


def _short_fields(statements: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
    """The body with each string's end one before where it is: a wrong variant."""
    changed = []
    for statement in statements:
        if isinstance(statement, ir.Append) and statement.sequence == "fields" and isinstance(statement.value, ir.Length):
            statement = dataclasses.replace(statement, value=ir.Binary("-", statement.value, ir.Const(1, 0), 0))
        for field in ("then", "orelse", "body"):
            if hasattr(statement, field):
                statement = dataclasses.replace(statement, **{field: _short_fields(getattr(statement, field))})
        changed.append(statement)
    return tuple(changed)


@pytest.mark.parametrize(
    ("name", "fragment", "reason"),
    [
        (
            "changed_after_append",
            'fields.append("".join(field))',
            "`fields` is changed after `rows.append(fields)`, which shares it; start a new list with `fields = []` first",
        ),
        (
            "changed_on_the_next_pass",
            'fields.append("".join(field))',
            "`fields` is changed after `rows.append(fields)`, which shares it; start a new list with `fields = []` first",
        ),
        (
            "rebound_on_one_path",
            "        rows.append(fields)",
            "`rows.append(fields)` again before `fields = []`: one list would be in twice",
        ),
        (
            "appended_twice",
            "                rows.append(fields)",
            "`rows.append(fields)` again before `fields = []`: one list would be in twice",
        ),
        (
            "read_back",
            "len(fields)",
            "`fields` is a list of the nested output `rows`: only `append`, `fields = []` and `return rows` are modelled",
        ),
        ("other_literal", 'fields.append("-")', '`fields.append("-")`: only `"".join(field)` or `""` is appended to `fields`'),
        ("returns_an_inner_list", "return fields", "`return fields`: `fields` is inside the nested output `rows`"),
    ],
)
def test_refused_at_the_line_with_the_reason(name: str, fragment: str, reason: str):
    with pytest.raises(FsmRefusal) as refused:
        lowered(name, "a,b\n", path=FIXTURE)
    assert (refused.value.line, refused.value.reason) == (line_in(name, fragment), reason)


def line_in(function: str, fragment: str) -> int:
    """The line of the first `fragment` in the fixture's `function`."""
    lines = FIXTURE.read_text().splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(f"def {function}("))
    return next(n for n, line in enumerate(lines[start:], start + 1) if fragment in line)
