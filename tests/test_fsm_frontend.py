"""The fsm track's front end on code as it comes: tuple assignment, f-string `raise` messages, output lists of ints,
lists of ints and `str` arguments. Each compiled function equals the Python original on random and edge inputs
(returns, arguments after the call, exception type and message); what it cannot model is refused at its line."""

from __future__ import annotations

import random
from functools import cache

import pytest

from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.lower import FsmRefusal, parameter_names
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.ranges import ARGUMENT
from repoos_agent.ingest import ingest_file
from repoos_agent.ingest.parse import functions, parse_source, read_source, text
from tests.conftest import ROOT
from tests.fixtures import fsm_as_written

FIXTURE = ROOT / "tests/fixtures/fsm_as_written.py"


@cache
def _nodes():
    return {text(node.child_by_field_name("name")): node for node in functions(parse_source(read_source(FIXTURE), str(FIXTURE)))}


def native(name: str, *arguments: object) -> FsmNative:
    node = _nodes()[name]
    return FsmNative(lower_for(node, dict(zip(parameter_names(node), arguments, strict=True))), getattr(fsm_as_written, name))


def line_of(fragment: str) -> int:
    return next(n for n, line in enumerate(read_source(FIXTURE).splitlines(), 1) if fragment in line)


def assert_same(name: str, compiled: FsmNative, *arguments: object) -> None:
    want, got = outcome(getattr(fsm_as_written, name), arguments), outcome(compiled, arguments)
    assert difference(want, got) is None, (name, arguments, want, got)


def test_tuple_assignment_binds_all_names_after_computing_all_values():
    fibonacci = native("fibonacci_mod", 1)
    for n in (0, 1, 2, 10, 47, 48, 1000, -3):
        assert_same("fibonacci_mod", fibonacci, n)
    assert fibonacci(48) == 4807526976 & 0xFFFFFFFF
    ordered = native("ordered", 1, 2)
    rng = random.Random(2)
    for x, y in [(0, 0), (5, -5), (-ARGUMENT, ARGUMENT), (ARGUMENT + 1, 0)] + [
        (rng.randrange(-1000, 1000), rng.randrange(-1000, 1000)) for _ in range(50)
    ]:
        assert_same("ordered", ordered, x, y)


def test_an_f_string_message_is_formatted_as_python_formats_it():
    compiled = native("bounded_bytes", b"", 1)
    rng = random.Random(3)
    cases = [(b"", 5), (b"\x00", 0), (b"abc", 0x62), (b"\xff" * 3, 254), (b"\x07", -1)]
    cases += [(rng.randbytes(rng.randrange(0, 20)), rng.randrange(0, 256)) for _ in range(100)]
    for data, limit in cases:
        assert_same("bounded_bytes", compiled, data, limit)
    with pytest.raises(ValueError, match=r"^byte 2 is 0x63, over 98 \{limit\} i=2$"):
        compiled(b"abc", 0x62)
    with pytest.raises(ValueError, match=r"^no \{data\}$"):
        compiled(b"", 1)


def test_a_list_of_ints_is_grown_with_append_and_returned():
    compiled = native("positions_of", b"", 0)
    rng = random.Random(4)
    for data in (b"", b"\x00", b"\x00" * 100, bytes(range(256)), *(rng.randbytes(rng.randrange(300)) for _ in range(30))):
        for byte in (0, 7, 255, 256, -1, ARGUMENT + 1):
            assert_same("positions_of", compiled, data, byte)
    assert compiled(b"a.b.", ord(".")) == [-3, -1]
    assert compiled(b"", 0) == []


def test_lists_and_tuples_of_ints_are_read_and_a_value_past_64_bits_runs_the_original():
    compiled = native("weighted_sum", [1], [1])
    rng = random.Random(5)
    for _ in range(40):
        size = rng.randrange(0, 50)
        values = [rng.randrange(-(1 << 20), 1 << 20) for _ in range(size)]
        weights = tuple(rng.randrange(-(1 << 20), 1 << 20) for _ in range(size + rng.randrange(-2, 3)))
        assert_same("weighted_sum", compiled, values, weights)
    for values in ([], [1 << 63], [-(1 << 63) - 1], [True, 2], [1 << 200]):
        assert_same("weighted_sum", compiled, values, [3] * len(values))


def test_a_str_is_read_as_code_points_exactly_for_non_ascii_text():
    compiled = native("count_fields", "a")
    rng = random.Random(6)
    alphabet = "ab,;\t é日🎉\ud800\x00"
    for text_value in (
        "",
        ",",
        "a,b;c",
        "Grüße, 日本;🎉",
        "\ud800,x",
        *("".join(rng.choices(alphabet, k=rng.randrange(30))) for _ in range(60)),
    ):
        assert_same("count_fields", compiled, text_value)
    with pytest.raises(ValueError, match=r"^control character '\\t' in the text$"):
        compiled("a\tb")
    last = native("last_non_space", "a")
    for text_value in ("", "   ", "ab  ", "日 ", "🎉", "x\ud800  "):
        assert_same("last_non_space", last, text_value)
    assert last("Grüße  ") == "e"


@pytest.mark.parametrize(
    ("name", "arguments", "fragment", "reason"),
    [
        (
            "char_against_number",
            ("a",),
            "text[0] == 44",
            "`text[0] == 44` compares a character with a number; write `ord(...)` for its code point",
        ),
        ("char_as_condition", ("a",), "if text[0]:", "`text[0]`: a character as a condition is not modelled; compare it"),
        ("char_arithmetic", ("a",), "text[0] + 1", "`text[0]` is a character of a `str`; write `ord(text[0])` for its code point"),
        ("unpack_too_many", (b"",), "a, b = 1, 2, 3", "`a, b = 1, 2, 3`: only as many values as names are unpacked"),
        (
            "append_to_argument",
            ([1],),
            "values.append(1)",
            "`values.append`: only a local `bytearray()` or list `[]` the function returns is grown",
        ),
        ("write_to_list_argument", ([1],), "values[0] = 1", "`values` is a list of ints argument, which is read only"),
    ],
)
def test_what_the_front_end_cannot_model_is_refused_at_its_line(name, arguments, fragment, reason):
    with pytest.raises(FsmRefusal) as refused:
        native(name, *arguments)
    assert (refused.value.line, refused.value.reason) == (line_of(fragment), reason)


def test_a_list_holding_something_other_than_ints_is_refused_as_an_argument():
    with pytest.raises(FsmRefusal, match=r"argument `values` is a list: the fsm track takes ints, bytes, bytearrays, strs"):
        native("weighted_sum", [1.5], [1])


def test_a_module_tuple_of_ints_is_a_constant_table():
    compiled = native("table_weighted", b"")
    rng = random.Random(7)
    for data in (b"", b"\xff", b"\xff" * 1000, *(rng.randbytes(rng.randrange(200)) for _ in range(30))):
        assert_same("table_weighted", compiled, data)


def test_a_module_list_is_refused_because_any_code_may_change_it():
    with pytest.raises(FsmRefusal) as refused:
        native("list_weighted", b"")
    reason = "`MUTABLE_WEIGHTS` is not a sequence argument, a module's table or the output `bytearray()`"
    assert (refused.value.line, refused.value.reason) == (line_of("* MUTABLE_WEIGHTS[0]"), reason)


def test_ingest_routes_by_what_the_code_is_and_shows_why():
    reports = {report.name: report for report in ingest_file(FIXTURE)}
    assert reports["unescape"].track == "fsm"
    assert reports["unescape"].reason == (
        "5 branches against 0 loops: control flow is decided by data: lowers to the fsm IR taking `data` as bytes"
    )
    for name in ("fibonacci_mod", "bounded_bytes", "table_weighted"):
        assert reports[name].track == "fsm", (name, reports[name].reason)
        assert "lowers to the fsm IR" in reports[name].reason
