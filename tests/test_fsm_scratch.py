"""Local work arrays on the fsm track: stacks of ints and of tuples, growable arrays read at `[-1]` and added to in
place, `bytearray(n)` tapes, module dicts of int tuples unpacked at once, a helper returning its local arrays, and
the bundled Brainfuck interpreter that uses them all. Each compiled function equals the Python original on random
and edge inputs (returns, exception type and message); what is not modelled is refused at its line."""

from __future__ import annotations

import random
import re
from functools import cache

import pytest

from kernels.fsm import brainfuck as bf
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.lower import FsmRefusal, parameter_names
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.ingest.parse import functions, parse_source, read_source, text
from tests.conftest import ROOT
from tests.fixtures import fsm_scratch_written as written

FIXTURE = ROOT / "tests/fixtures/fsm_scratch_written.py"
KERNEL = ROOT / "kernels/fsm/brainfuck.py"
RNG = random.Random(46)


@cache
def _nodes(path=FIXTURE):
    return {text(node.child_by_field_name("name")): node for node in functions(parse_source(read_source(path), str(path)))}


def native(name: str, *arguments: object) -> FsmNative:
    node = _nodes()[name]
    return FsmNative(lower_for(node, dict(zip(parameter_names(node), arguments, strict=False))), getattr(written, name))


def assert_same(original, compiled: FsmNative, *arguments: object) -> None:
    want, got = outcome(original, arguments), outcome(compiled, arguments)
    assert difference(want, got) is None, (arguments, want, got)


def some_bytes(alphabet: bytes, longest: int = 30) -> bytes:
    return bytes(RNG.choices(alphabet, k=RNG.randrange(longest)))


def test_a_stack_of_tuples_raises_as_python_on_unmatched_brackets_both_ways():
    compiled = native("balanced_depth", b"")
    edges = [b"", b"(", b")", b"]", b"[", b"()", b"(]", b"[()]", b"(()", b"())", b"x(y[z]w)v", b"((((((((((]"]
    for data in edges + [some_bytes(b"()[]ab") for _ in range(300)]:
        assert_same(written.balanced_depth, compiled, data)


def test_growable_arrays_read_at_the_end_and_added_to_in_place():
    compiled = native("folded_steps", b"")
    for data in [b"", b"+", b"+-", b"++--", b"><><", b"+++>>><<<---x"] + [some_bytes(b"+-<>.") for _ in range(200)]:
        assert_same(written.folded_steps, compiled, data)


@pytest.mark.parametrize("name", ["pop_all", "pop_bytes"])
def test_pop_past_the_first_element_raises_index_error_with_python_message(name):
    compiled = native(name, b"", 0)
    for data in [b"", b"\x00", b"\xff\x01"] + [some_bytes(bytes(range(256))) for _ in range(60)]:
        for extra in (0, 1, 2):
            assert_same(getattr(written, name), compiled, data, extra)
    with pytest.raises(IndexError, match=r"^pop from empty (list|bytearray)$"):
        compiled(b"ab", 1)


def test_a_sized_bytearray_tape_off_either_end_and_negative_sizes():
    compiled = native("tape_walk", b"", 3)
    for size in (-1, 0, 1, 3, 17):
        for program in [b"", b"a", b"<a", b">>>a", b">a<<b", b">" * 20 + b"z"] + [some_bytes(b"<>ab") for _ in range(40)]:
            assert_same(written.tape_walk, compiled, program, size)
    with pytest.raises(ValueError, match=r"^negative count$"):
        compiled(b"", -1)


def test_a_value_past_a_byte_stored_into_a_local_bytearray_raises_value_error():
    compiled = native("stored_past_a_byte", b"", 0)
    for add in (-300, -1, 0, 1, 100, 255):
        for data in [b"", b"\x00", b"\xff", b"\x80\x7f\x01"] + [some_bytes(bytes(range(256)), 8) for _ in range(20)]:
            assert_same(written.stored_past_a_byte, compiled, data, add)
    with pytest.raises(ValueError, match=r"^byte must be in range\(0, 256\)$"):
        compiled(b"\xff", 1)
    stored = native("stored_at", b"", 0, 0)
    for data in (b"", b"a", b"abc"):
        for index in (-4, -3, -1, 0, 2, 3):
            for value in (-1, 0, 255, 256):  # the value is tested before the index, as Python does
                assert_same(written.stored_at, stored, data, index, value)


def test_a_helper_returning_its_local_arrays_builds_them_under_the_callers_names():
    compiled = native("through_helper", b"")
    for data in [b"", b"\x01", b"\x02", b"\x01\x02\x03"] + [some_bytes(bytes(range(256))) for _ in range(60)]:
        assert_same(written.through_helper, compiled, data)


@pytest.mark.parametrize(
    ("name", "fragment", "reason"),
    [
        ("refused_tuple_lookup", "total += STEPS[byte]", "is a tuple: unpack it at once"),
        ("refused_whole_record", "top = stack[-1]", "is a tuple of `stack`: unpack it"),
        ("refused_pop_index", "return stack.pop(0)", "only `stack.pop()` of the last element is modelled"),
    ],
)
def test_what_a_work_array_cannot_do_is_refused_at_its_line(name, fragment, reason):
    line = next(n for n, each in enumerate(read_source(FIXTURE).splitlines(), 1) if fragment in each)
    with pytest.raises(FsmRefusal, match=re.escape(reason)) as refused:
        native(name, b"")
    assert refused.value.line == line


@cache
def _brainfuck() -> FsmNative:
    node = _nodes(KERNEL)["brainfuck"]
    return FsmNative(lower_for(node, {"program": b"", "input_data": b"", "tape_size": 30_000}), bf.brainfuck)


def test_brainfuck_equals_python_on_programs_that_fail_every_way():
    compiled = _brainfuck()
    cases = [
        (b"", b"", 30_000),
        (b"", b"", 0),
        (b",.", b"", 1),  # reading past the input stores 0
        (b",.,.,.", b"ab", 4),
        (b"[", b"", 8),  # unmatched [
        (b"]", b"", 8),  # unmatched ]
        (b"+[-]]", b"", 8),
        (b"[[]", b"", 8),
        (b"<", b"", 8),  # off the left end
        (b">" * 9, b"", 8),  # off the right end
        (b"+", b"", 0),  # a cell of an empty tape
        (b"+", b"", -1),  # a negative size
        (bf.SHIFT_BY_13, bytes(range(1, 40)), 30_000),
        (b"+" * 300 + b".", b"", 2),  # wraps around a byte
        (b"-.", b"", 2),
    ]
    for program, data, size in cases:
        assert_same(bf.brainfuck, compiled, program, data, size)
    alphabet = b"+-<>[].,x"
    for _ in range(300):
        program = some_bytes(alphabet, 24)
        if program.count(b"[") == program.count(b"]"):
            program = program.replace(b"[", b"[-", 1)  # a loop that ends where a cell counts down
        assert_same(bf.brainfuck, compiled, program, some_bytes(bytes(range(256)), 6), RNG.choice([0, 1, 5, 300]))
