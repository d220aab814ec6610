"""Unsigned LEB128 in the fsm track: `shift` is bounded through a stride (`shift += 7` from 0) and through the
cases of `if shift == 63 and byte > 1: raise` kept apart until the next branch, and a 64-bit varint, past 2**63 - 1,
is held as an unsigned 64-bit value and comes back as Python's exact int. Each build equals the Python original,
its exceptions included; what the analysis cannot bound is still refused at its line."""

from __future__ import annotations

import random
from functools import cache

import pytest

from kernels.fsm import leb128_decode as kernel
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.lower import FsmRefusal, parameter_names
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.ranges import Interval, check_widths, loop_head
from repoos_agent.ingest.parse import functions, parse_source, read_source, text
from tests.conftest import ROOT
from tests.fixtures import fsm_unsigned

FIXTURE = ROOT / "tests/fixtures/fsm_unsigned.py"
KERNEL = ROOT / "kernels/fsm/leb128_decode.py"


def encoded(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@cache
def _nodes(path):
    return {text(node.child_by_field_name("name")): node for node in functions(parse_source(read_source(path), str(path)))}


def lowered(path, name: str, *arguments: object):
    node = _nodes(path)[name]
    return lower_for(node, dict(zip(parameter_names(node), arguments, strict=True)))


@cache
def decoder() -> FsmNative:
    return FsmNative(lowered(KERNEL, "leb128_decode", b""), kernel.leb128_decode)


def assert_same(compiled: FsmNative, *arguments: object) -> None:
    want, got = outcome(compiled.original, arguments), outcome(compiled, arguments)
    assert difference(want, got) is None, (arguments, want, got)


@pytest.mark.parametrize("size", ["MINI", "SMALL"])
def test_the_baseline_equals_the_original_on_the_kernels_own_inputs(size):
    assert_same(decoder(), kernel.init(**kernel.SIZES[size])["data"])


def test_varints_of_every_length_come_back_exactly_past_two_to_the_63():
    rng = random.Random(7)
    values = [0, 1, 127, 128, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 1]
    values += [rng.getrandbits(7 * length) | 1 << (7 * length - 1) for length in range(1, 10)]
    values += [(1 << 63) | rng.getrandbits(63) for _ in range(20)]
    data = b"".join(map(encoded, values))
    assert sorted({len(encoded(value)) for value in values}) == list(range(1, 11))
    assert decoder()(data) == values == kernel.leb128_decode(data)
    for value in values:
        assert decoder()(encoded(value)) == [value]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", None),
        (b"\x80", "truncated varint at byte 0"),
        (b"\x01\x81\x82", "truncated varint at byte 1"),
        (b"\xff" * 11, "varint at byte 0 does not fit in 64 bits"),
        (b"\xff" * 9 + b"\x02", "varint at byte 0 does not fit in 64 bits"),
        (b"\x05" + b"\x80" * 9 + b"\x7f", "varint at byte 1 does not fit in 64 bits"),
        (b"\xff" * 9 + b"\x01", None),
        (b"\x80" * 9 + b"\x00", None),
    ],
)
def test_edge_inputs_return_or_raise_as_the_original(data, message):
    assert_same(decoder(), data)
    if message is not None:
        with pytest.raises(ValueError, match=f"^{message}$"):
            decoder()(data)


def test_a_returned_list_of_varints_is_held_unsigned_and_the_rest_signed():
    widths = check_widths(lowered(KERNEL, "leb128_decode", b""))
    assert widths.unsigned_locals == {"value"}
    assert widths.unsigned_outputs == {"values"}
    assert "uint64_t py_value = 0;" in decoder().source
    assert "int64_t py_shift = 0;" in decoder().source


def test_a_stride_and_the_cases_of_an_and_test_bound_a_shift():
    function = lowered(FIXTURE, "by_sevens", b"")
    head = loop_head(function, function.body[1])
    assert head["shift"] == Interval(0, 14, (), 7, 0)  # 14 is a multiple of 7, so `shift != 14` keeps it below 14
    compiled = FsmNative(function, fsm_unsigned.by_sevens)
    for data in (b"", b"\x00", b"\x80\x01", b"\x80\x80\x01", b"\x80\x80\x02", b"\x80\x80\x80", b"\xff" * 5):
        assert_same(compiled, data)


def test_a_shift_that_no_stride_bounds_is_refused_at_its_line():
    with pytest.raises(FsmRefusal, match=r"line 24: a shift by 0 to 2305843009213693950 bits"):
        check_widths(lowered(FIXTURE, "by_sevens_off_stride", b""))


def test_a_shift_by_an_argument_is_still_refused_at_its_line():
    with pytest.raises(FsmRefusal, match=r"line 30: a shift by .* bits: only shifts proven within 0 to 63 are modelled"):
        check_widths(lowered(FIXTURE, "shift_by_argument", b"", 3))


def test_arithmetic_on_a_value_past_two_to_the_63_is_refused_at_its_line():
    with pytest.raises(FsmRefusal, match=r"line 44: a value of 0 to 18446744073709551615, past 2\*\*63 - 1, is held as"):
        check_widths(lowered(FIXTURE, "varint_plus_one", b""))


def test_bit_operations_and_comparisons_on_an_unsigned_value_equal_the_original():
    compiled = FsmNative(lowered(FIXTURE, "varint_high_bits", b""), fsm_unsigned.varint_high_bits)
    for value in (0, 5, 2**62, 2**63 - 1, 2**63, 2**63 + 0xFF, 2**64 - 1):
        assert_same(compiled, encoded(value))
    assert compiled(encoded(2**64 - 1)) == [15, 2**64 - 1 - 0xFF, 0xFFFF]
