"""Helpers that return from inside their loops are inlined: each `return` leaves the helper's loops (and never the
caller's), so the compiled function equals the Python original on random and edge inputs, raising where it does."""

from __future__ import annotations

import random
from functools import cache

import pytest

from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.lower import FsmRefusal, parameter_names
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.ingest.parse import functions, parse_source, read_source, text
from tests.conftest import ROOT
from tests.fixtures import fsm_inline_returns as written

FIXTURE = ROOT / "tests/fixtures/fsm_inline_returns.py"
RNG = random.Random(4545)
EDGES = [b"", b"\x00", b"\xff", b'"', b'""', b'"\\', b'"\\"', b'"\\\n"', b'"a\\\x00"', b"12;3", b"\x00\xff", b";;", b"0123"]


@cache
def _nodes():
    return {text(node.child_by_field_name("name")): node for node in functions(parse_source(read_source(FIXTURE), str(FIXTURE)))}


def native(name: str, *arguments: object) -> FsmNative:
    node = _nodes()[name]
    return FsmNative(lower_for(node, dict(zip(parameter_names(node), arguments, strict=False))), getattr(written, name))


def some_bytes(alphabet: bytes, longest: int = 30) -> bytes:
    return bytes(RNG.choices(alphabet, k=RNG.randrange(longest)))


def assert_same(name: str, compiled: FsmNative, *arguments: object) -> None:
    want, got = outcome(getattr(written, name), arguments), outcome(compiled, arguments)
    assert difference(want, got) is None, (name, arguments, want, got)


@pytest.mark.parametrize("name", ["first_zero", "quoted_spans", "digit_runs", "has_both", "semicolons"])
def test_a_helper_returning_from_its_loops_equals_python(name):
    compiled = native(name, b"")
    for data in EDGES + [some_bytes(b'"\\\x00\n\xff;0123ab') for _ in range(300)]:
        assert_same(name, compiled, data)


def test_a_helper_returning_two_ints_from_nested_loops_equals_python():
    compiled = native("pair_summing_to", b"", 0)
    for data in EDGES + [some_bytes(bytes([0, 1, 2, 3, 250, 255]), 12) for _ in range(200)]:
        for target in (0, 3, 5, 253, 510, -1):
            assert_same("pair_summing_to", compiled, data, target)
    assert compiled(b"\x01\xff\x03\x01", 4) == (2 << 16) | 3  # (0, 2) is never tried: `break` at 255 comes first


def test_the_helper_raises_what_python_raises():
    compiled = native("quoted_spans", b"")
    assert compiled(b'a"bc"d"\\\nx') == (4 + 7) | (2 << 16)  # a span of 4, then an escaped newline
    with pytest.raises(ValueError, match=r"^unterminated quote starting at 1$"):
        compiled(b'x"abc')
    with pytest.raises(ValueError, match=r"^escaped zero at 2$"):
        compiled(b'"\\\x00"')
    with pytest.raises(ValueError, match=r"^escape at the end, at 1$"):
        compiled(b'"\\')


def line_of(fragment: str) -> int:
    """The line where `fragment` starts (it may span lines)."""
    source = read_source(FIXTURE)
    return source[: source.index(fragment)].count("\n") + 1


@pytest.mark.parametrize(
    ("name", "fragment", "reason"),
    [
        (
            "falls_off_the_end",
            "at = _first_space(data)",
            "`_first_space` returns a value on some paths and None at its end; return one kind of value",
        ),
        ("two_kinds", "    return -1\n\n\ndef two_kinds", "`_two_kinds` returns an int here and an int, an int elsewhere"),
    ],
)
def test_helpers_returning_from_loops_are_still_refused_at_their_line(name, fragment, reason):
    with pytest.raises(FsmRefusal) as refused:
        native(name, b"")
    assert (refused.value.line, refused.value.reason) == (line_of(fragment), reason)
