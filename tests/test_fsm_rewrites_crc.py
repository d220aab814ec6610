"""The shift-register rewrites (byte-table, slicing-by-k) on bitwise CRCs: each variant equals the Python original
through the native build on random and edge inputs, `prove` proves it, a table wrong in one entry is refuted with
the (state, input) that shows it, and a function without the pattern is refused with the reason."""

from __future__ import annotations

import random
import re
from dataclasses import replace
from pathlib import Path

import pytest

from kernels.fsm.adler32 import adler32
from kernels.fsm.crc16_ccitt import crc16_ccitt
from kernels.fsm.crc32 import crc32
from repoos_agent.fsm import ir
from repoos_agent.fsm.lower import parameter_names
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.proof import NOT_APPLICABLE, PROVED, REFUTED, prove
from repoos_agent.fsm.ranges import ARGUMENT
from repoos_agent.fsm.rewrites import NotApplicable, Step, apply_steps
from repoos_agent.ingest.parse import functions, parse_source, text

KERNELS = Path(__file__).resolve().parent.parent / "kernels" / "fsm"
EDGES = [b"", b"\x00", b"\xff", b"\xff" * 64, bytes(range(256)), b"123456789", bytes(7), bytes(8), bytes(9)]
REWRITES = [Step("byte-table"), Step("slicing", {"k": 4}), Step("slicing", {"k": 8})]

OTHER_CRCS = """
def crc8(data):
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            if crc & 0x80:
                crc = ((crc << 1) ^ 0x07) & 0xFF
            else:
                crc = (crc << 1) & 0xFF
    return crc


def crc16_arc(data):
    crc = 0
    for byte in data:
        crc = crc ^ byte
        for _ in range(8):
            if (crc & 1) != 0:
                crc = 0xA001 ^ (crc >> 1)
            else:
                crc = crc >> 1
    return crc


def crc32_bzip2(data, crc=0xFFFFFFFF):
    for byte in data:
        crc ^= byte << 24
        for _ in range(8):
            if (crc & 0x80000000) == 0:
                crc = (crc << 1) & 0xFFFFFFFF
            else:
                crc = ((crc << 1) ^ 0x04C11DB7) & 0xFFFFFFFF
    return crc ^ 0xFFFFFFFF
"""
NAMESPACE: dict[str, object] = {}
exec(compile(OTHER_CRCS, "other_crcs.py", "exec"), NAMESPACE)
CHECK_VALUES = {"crc8": 0xF4, "crc16_arc": 0xBB3D, "crc32_bzip2": 0xFC891918}


def lowered(source: str, path: str, name: str) -> ir.Function:
    node = next(n for n in functions(parse_source(source, path)) if text(n.child_by_field_name("name")) == name)
    return lower_for(node, dict(zip(parameter_names(node), (b"", 0), strict=False)))


CASES = {
    "crc16_ccitt": (lowered((KERNELS / "crc16_ccitt.py").read_text(), "crc16_ccitt.py", "crc16_ccitt"), crc16_ccitt, True),
    "crc32": (lowered((KERNELS / "crc32.py").read_text(), "crc32.py", "crc32"), crc32, True),
    **{name: (lowered(OTHER_CRCS, "other_crcs.py", name), NAMESPACE[name], name == "crc32_bzip2") for name in CHECK_VALUES},
}


def calls(takes_state: bool) -> list[tuple[object, ...]]:
    rng = random.Random(45)
    inputs = EDGES + [rng.randbytes(rng.randrange(200)) for _ in range(150)] + [bytearray(rng.randbytes(33))]
    if not takes_state:
        return [(data,) for data in inputs]
    states = [0, 1, 0xFFFF, 0xFFFFFFFF, -1, -(2**63), 2**63 - 1, 2**64]
    return [(data, rng.choice(states + [rng.randrange(-(2**63), 2**63)])) for data in inputs]


def test_the_other_crcs_are_the_catalogued_ones():
    for name, value in CHECK_VALUES.items():
        assert NAMESPACE[name](b"123456789") == value  # type: ignore[operator]


@pytest.mark.parametrize("step", REWRITES, ids=str)
@pytest.mark.parametrize(
    "name",
    # CRC-16/ARC's state is 16 bits at the loop's head: its 2**24 (state, byte) pairs are all enumerated
    [pytest.param(name, marks=pytest.mark.slow) if name == "crc16_arc" else name for name in CASES],
)
def test_rewrite_equals_the_original_and_is_proved(name, step):
    baseline, original, takes_state = CASES[name]
    variant = apply_steps(baseline, (step,)).function
    native = FsmNative(variant, original)
    for arguments in calls(takes_state):
        assert native(*arguments) == original(*arguments), (name, step, arguments)
    proof = prove(baseline, variant)
    assert proof.verdict == PROVED, proof.reason
    assert proof.counterexample is None


def test_a_small_state_is_enumerated_and_a_wide_one_proved_by_linearity():
    crc8, _, _ = CASES["crc8"]
    enumerated = prove(crc8, apply_steps(crc8, (Step("byte-table"),)).function)
    assert (enumerated.method, enumerated.cases) == ("enumeration", 256 * 256)  # the state is one byte at the head
    crc16, _, _ = CASES["crc16_ccitt"]
    wide = prove(crc16, apply_steps(crc16, (Step("byte-table"),)).function)
    assert wide.method == "linearity"  # the `crc` argument may be any 64-bit int at the loop's head: 2**72 pairs
    sliced = prove(crc16, apply_steps(crc16, (Step("slicing", {"k": 8}),)).function)
    assert sliced.method == "linearity"


def broken(function: ir.Function, entry: int) -> ir.Function:
    """`function` with entry `entry` of its one computed table off by one bit."""
    ((name, table),) = [(n, t) for n, t in function.tables.items() if isinstance(t, ir.Table)]
    entries = list(table.entries)
    entries[entry] ^= 0x10
    return replace(function, tables={**function.tables, name: ir.Table(table.dtype, tuple(entries))})


@pytest.mark.parametrize("name", ["crc16_ccitt", "crc32", "crc8"])
def test_a_table_with_one_wrong_entry_is_refuted_with_its_counterexample(name):
    baseline, original, takes_state = CASES[name]
    wrong = broken(apply_steps(baseline, (Step("byte-table"),)).function, 0x5A)
    proof = prove(baseline, wrong)
    assert proof.verdict == REFUTED
    example = proof.counterexample
    assert example is not None and example.baseline != example.variant
    ((_, state),) = example.state.items()
    (byte,) = example.inputs
    if name == "crc32":
        assert (state ^ byte) & 0xFF == 0x5A  # the reflected register's low byte indexes the table
    elif name == "crc16_ccitt":
        assert ((state >> 8) ^ byte) & 0xFF == 0x5A  # the top byte, after the byte is xored in
    else:
        assert (state ^ byte) & 0xFF == 0x5A
    if takes_state:  # the counterexample is a call that shows it (crc32 inverts its argument and its result)
        inverted = 0xFFFFFFFF if name == "crc32" else 0
        if abs(state) >= ARGUMENT:  # past what the native code takes: the same register's low 32 bits show it too
            state &= 0xFFFFFFFF
        native = FsmNative(wrong, original)
        assert native(bytes([byte]), state ^ inverted) != original(bytes([byte]), state ^ inverted)


def test_slicing_with_one_wrong_entry_is_refuted():
    baseline, _, _ = CASES["crc32"]
    sliced = apply_steps(baseline, (Step("slicing", {"k": 8}),)).function
    name = next(n for n, t in sliced.tables.items() if isinstance(t, ir.Table) and n.endswith("table5"))
    entries = list(sliced.tables[name].entries)  # type: ignore[union-attr]
    entries[200] ^= 1
    wrong = replace(sliced, tables={**sliced.tables, name: ir.Table("uint32", tuple(entries))})
    proof = prove(baseline, wrong)
    assert proof.verdict == REFUTED and proof.counterexample is not None


def test_a_checksum_without_a_shift_register_is_refused_with_the_reason():
    source = (KERNELS / "adler32.py").read_text()
    baseline = lowered(source, "adler32.py", "adler32")
    for step in REWRITES:
        with pytest.raises(NotApplicable, match="no `for` loop over a byte sequence's elements at the function's top level"):
            apply_steps(baseline, (step,))
    proof = prove(baseline, baseline)
    assert proof.verdict == NOT_APPLICABLE
    assert proof.reason == (
        "the baseline has no top-level loop over a sequence argument's elements; "
        "nor does it change only straight-line statements (the variant is the baseline)"
    )
    assert adler32(b"abc") == 0x024D0127


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("crc ^= byte\n        crc = (crc >> 1) ^ 0xA001", "has no single inner `for _ in range(8)` bit loop"),
        (
            "crc ^= byte\n        for _ in range(8):\n            if crc & 1:\n                crc = (crc >> 2) ^ 0xA001\n"
            "            else:\n                crc >>= 1",
            "the branches on bit 0x1 are not `(crc >> 1) ^ POLY` and `crc >> 1`",
        ),
        (
            "crc ^= byte\n        for _ in range(8):\n            if crc > 5:\n                crc = (crc >> 1) ^ 0xA001\n"
            "            else:\n                crc >>= 1",
            "the bit loop's `if` does not test one bit of a register",
        ),
        (
            "for _ in range(8):\n            if crc & 1:\n                crc = (crc >> 1) ^ 0xA001\n"
            "            else:\n                crc >>= 1",
            "the loop's body does not xor `byte` into `crc`",
        ),
    ],
)
def test_near_misses_are_refused_with_the_reason(body, reason):
    source = f"def f(data):\n    crc = 0\n    for byte in data:\n        {body}\n    return crc\n"
    with pytest.raises(NotApplicable, match=f"byte-table: line \\d+: .*{re.escape(reason)}"):
        apply_steps(lowered(source, "f.py", "f"), (Step("byte-table"),))


def test_slicing_refuses_a_byte_entering_elsewhere():
    source = OTHER_CRCS.replace("crc ^= byte << 24", "crc ^= byte << 16")
    with pytest.raises(
        NotApplicable,
        match=re.escape("slicing: line 27: the body is not just `crc ^= byte` at the register's top byte, then the bit loop"),
    ):
        apply_steps(lowered(source, "other_crcs.py", "crc32_bzip2"), (Step("slicing", {"k": 8}),))
