"""The fsm track's front end on more code as it comes: `enumerate`, membership in constants, byte slices (appended,
extended, joined, compared, returned), tables as defaults, helpers inlined at their calls, type checks at entry and
state on `self`. Each compiled function equals the Python original on random and edge inputs (returns, arguments
after the call, exception type and message); what it cannot model is refused at its line."""

from __future__ import annotations

import random
from functools import cache

import pytest

from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.lower import FsmRefusal, parameter_names
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.ranges import ARGUMENT
from repoos_agent.ingest.parse import functions, parse_source, read_source, text
from tests.conftest import ROOT
from tests.fixtures import fsm_more_written as written

FIXTURE = ROOT / "tests/fixtures/fsm_more_written.py"
RNG = random.Random(45)


@cache
def _nodes():
    return {text(node.child_by_field_name("name")): node for node in functions(parse_source(read_source(FIXTURE), str(FIXTURE)))}


def native(name: str, *arguments: object) -> FsmNative:
    node = _nodes()[name]
    return FsmNative(lower_for(node, dict(zip(parameter_names(node), arguments, strict=False))), getattr(written, name))


def line_of(fragment: str) -> int:
    return next(n for n, line in enumerate(read_source(FIXTURE).splitlines(), 1) if fragment in line)


def assert_same(name: str, compiled: FsmNative, *arguments: object) -> None:
    want, got = outcome(getattr(written, name), arguments), outcome(compiled, arguments)
    assert difference(want, got) is None, (name, arguments, want, got)


def some_bytes(alphabet: bytes = bytes(range(256)), longest: int = 40) -> bytes:
    return bytes(RNG.choices(alphabet, k=RNG.randrange(longest)))


EDGE_BYTES = [b"", b"\x00", b"\xff", b"\\", b"\\\\", b'"', b"\x89PNG", b"\x89PNGxyz", b"ab", b"xaby", b"0123456789"]


def test_enumerate_over_bytes_and_a_str():
    compiled = native("weighted_digits", b"")
    for data in EDGE_BYTES + [some_bytes(b"0123456789abc\xff") for _ in range(60)]:
        assert_same("weighted_digits", compiled, data)
    luhn = native("luhn_text", "")
    for value in [
        "",
        "0",
        "79927398713",
        "7992 7398 713",
        "1-2",
        "12a4",
        "é",
        "🎉1",
        *("".join(RNG.choices("0123456789 -x", k=RNG.randrange(20))) for _ in range(60)),
    ]:
        assert_same("luhn_text", luhn, value)
    with pytest.raises(ValueError, match=r"^not a digit: 'x' at 2$"):
        luhn("12x")


def test_membership_in_constants_and_bytes_raising_past_a_byte():
    compiled = native("classify", b"", 0)
    for data in EDGE_BYTES + [some_bytes() for _ in range(40)]:
        for x in (0, 255, 256, -1, 7, ARGUMENT, -ARGUMENT):
            assert_same("classify", compiled, data, x)
    with pytest.raises(ValueError, match=r"^byte must be in range\(0, 256\)$"):
        compiled(b"", 256)


def test_slices_and_literals_extended_onto_the_output():
    compiled = native("escape", b"")
    for data in EDGE_BYTES + [some_bytes(b'ab"\\\x01\x1f ') for _ in range(80)]:
        assert_same("escape", compiled, data)
    assert compiled(b'a"b\x01') == b'a\\"b\\x01'


def test_a_list_of_byte_slices_joined():
    compiled = native("unescape_joined", b"")
    for data in EDGE_BYTES + [some_bytes(b"ab\\\x00") for _ in range(80)]:
        assert_same("unescape_joined", compiled, data)
    compiled_array = native("unescape_joined", bytearray())
    for data in [bytearray(some_bytes(b"ab\\")) for _ in range(20)]:
        assert_same("unescape_joined", compiled_array, data)


def test_slices_compared_and_returned_with_python_bounds():
    compiled = native("header_body", b"", 0, 0)
    bounds = (0, 1, 2, 3, -1, -2, -100, 100, ARGUMENT, -ARGUMENT)
    for data in EDGE_BYTES + [some_bytes(b"ab\x89PNG", 12) for _ in range(30)]:
        for start in bounds:
            for stop in bounds:
                assert_same("header_body", compiled, data, start, stop)
    array = native("header_body", bytearray(), 0, 0)
    for data in EDGE_BYTES:
        assert_same("header_body", array, bytearray(data), 1, -1)
    assert type(array(bytearray(b"\x89PNGab"), 0, 9)) is bytearray


def test_tables_as_defaults_and_passed():
    compiled = native("decode_table", b"")
    for data in EDGE_BYTES + [some_bytes() for _ in range(30)]:
        assert_same("decode_table", compiled, data)
        assert_same("decode_table", compiled, data, b"xyz")
        assert_same("decode_table", compiled, data, b"xyz", (5,))
        assert_same("decode_table", compiled, data, b"", (5,))
        assert_same("decode_table", compiled, data, b"xyz", [2, 3])


@pytest.mark.parametrize(
    ("name", "arguments", "fragment", "reason"),
    [
        ("chunk_of_list", ([1, 2],), "out.extend(values[1:3])", None),
        (
            "slice_kept",
            (b"",),
            "chunk = data[1:3]",
            "`data[1:3]`: a slice is modelled only where it is appended, extended, compared with a bytes literal or "
            "returned; elsewhere one element is read at a time",
        ),
        (
            "in_sequence",
            (b"", 0),
            "return x in data",
            "`x in data`: only membership in a tuple, a `str` or `bytes` literal, or a module constant, of an int or a "
            "character of the same kind, is modelled",
        ),
        (
            "in_string_of_int",
            ("", 0),
            'return x in "abc"',
            '`x in "abc"`: only membership in a tuple, a `str` or `bytes` literal, or a module constant, of an int or a '
            "character of the same kind, is modelled",
        ),
    ],
)
def test_what_the_front_end_cannot_model_is_refused_at_its_line(name, arguments, fragment, reason):
    if reason is None:  # modelled: a list of ints extended by a slice of a list argument
        compiled = native(name, *arguments)
        for values in ([], [1], [1, 2, 3, 4], [-5, 1 << 62, 3]):
            assert_same(name, compiled, values)
        return
    with pytest.raises(FsmRefusal) as refused:
        native(name, *arguments)
    assert (refused.value.line, refused.value.reason) == (line_of(fragment), reason)


def test_helpers_inlined_nested_module_level_tuple_nonlocal_and_raising():
    compiled = native("parse_hex_pairs", b"")
    for data in [
        b"",
        b"0",
        b"00",
        b"ff",
        b"a1 b2\n0c",
        b"zz",
        b"0g",
        b"1 2",
        *(some_bytes(b"0123456789abcdefg \n", 20) for _ in range(120)),
    ]:
        assert_same("parse_hex_pairs", compiled, data)
    assert compiled(b"de ad\nbe ef") == b"\xde\xad\xbe\xef"
    with pytest.raises(ValueError, match=r"^not a hex digit: 103$"):
        compiled(b"0g")
    digits = native("checked_digits", b"")
    for data in EDGE_BYTES + [some_bytes() for _ in range(30)]:
        assert_same("checked_digits", digits, data)


@pytest.mark.parametrize(
    ("name", "fragment", "reason"),
    [
        ("countdown", "return countdown(n)", "recursion: `countdown` calls itself; write the loop"),
        (
            "helper_in_expression",
            "return twice(len(data)) + 1",
            "`twice(len(data))`: a helper is inlined where its call is a statement, an assignment's whole value or a "
            "`return`'s; assign it to a name first",
        ),
    ],
)
def test_helpers_that_cannot_be_inlined_are_refused_at_their_line(name, fragment, reason):
    with pytest.raises(FsmRefusal) as refused:
        native(name, *([1] if name == "countdown" else [b""]))
    assert (refused.value.line, refused.value.reason) == (line_of(fragment), reason)


def test_membership_in_a_module_str_constant():
    compiled = native("count_punctuation", "")
    for value in [
        "",
        "{",
        '{"a": [1, 2]}',
        "日本,🎉",
        *("".join(RNG.choices("{}[]:, ab", k=RNG.randrange(20))) for _ in range(40)),
    ]:
        assert_same("count_punctuation", compiled, value)


@pytest.mark.parametrize(
    ("name", "arguments", "fragment", "reason"),
    [
        (
            "flag_as_number",
            (b"",),
            "return seen",
            "`seen` holds a bool: it is modelled only as a condition (as a number Python shows `True`)",
        ),
        (
            "isinstance_of_a_class",
            (b"",),
            "if isinstance(data, memoryview):",
            "`isinstance(data, memoryview)`: only `isinstance` of a name against builtin int, bool, bytes, bytearray, "
            "str, list, tuple (or a tuple of them) is modelled",
        ),
    ],
)
def test_flags_and_type_checks_beyond_the_model_are_refused_at_their_line(name, arguments, fragment, reason):
    with pytest.raises(FsmRefusal) as refused:
        native(name, *arguments)
    assert (refused.value.line, refused.value.reason) == (line_of(fragment), reason)


def test_chr_past_the_code_points_raises_as_python_and_find_reads_a_table():
    compiled = native("chr_past_code_points", 0)
    for n in (0, 65, 0xD800, 0x10FFFF, 0x110000, -1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, ARGUMENT, ARGUMENT + 1):
        assert_same("chr_past_code_points", compiled, n)
    found = native("alphabet_index", "")
    for value in ["", "abc", "zzz", "é🎉a", "\x00", *("".join(RNG.choices("abcd\u0100", k=RNG.randrange(9))) for _ in range(30))]:
        assert_same("alphabet_index", found, value)
