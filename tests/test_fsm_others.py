"""Fourteen branchy functions written as others write them (tests/fixtures/fsm_others.py): how many the fsm front
end takes, each taken one equal to the Python original on random and edge inputs (same values, same exceptions,
arguments alike after the call), and each refused one refused at its line with its reason."""

from __future__ import annotations

import base64
import random
import string
from functools import cache, partial

import pytest

from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.lower import FsmRefusal, parameter_names
from repoos_agent.fsm.method import FsmMethod
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.ranges import ARGUMENT
from repoos_agent.fsm.track import claim
from repoos_agent.ingest.classify import walk
from repoos_agent.ingest.parse import parse_source, read_source, text
from tests.conftest import ROOT
from tests.fixtures import fsm_others as others

FIXTURE = ROOT / "tests/fixtures/fsm_others.py"
RNG = random.Random(1445)


@cache
def _nodes():
    tree = parse_source(read_source(FIXTURE), str(FIXTURE))
    return {text(n.child_by_field_name("name")): n for n in walk(tree.root_node) if n.type == "function_definition"}


def line_of(fragment: str) -> int:
    return next(n for n, line in enumerate(read_source(FIXTURE).splitlines(), 1) if fragment in line)


def some_text(alphabet: str, longest: int = 30) -> str:
    return "".join(RNG.choices(alphabet, k=RNG.randrange(longest)))


def some_bytes(alphabet: bytes = bytes(range(256)), longest: int = 40) -> bytes:
    return bytes(RNG.choices(alphabet, k=RNG.randrange(longest)))


ODD_TEXT = ["", "é", "日本", "🎉", "\x00", "\ud800", "\u0660", "²", "\u2003", "\x1c", 7, b"ab", None, ["a"], bytearray(b"x")]
ODD_BYTES = [b"", b"\x00", b"\xff", b"\x00\x00", b"\xff" * 300, bytearray(b"\x01\x02"), "ab", 7, None, [1, 2]]
B64 = string.ascii_letters + string.digits + "+/= \n"

INPUTS = {
    "b64decode": [
        *ODD_TEXT,
        *(base64.b64encode(some_bytes()).decode() for _ in range(40)),
        *(some_text(B64) for _ in range(60)),
        "YQ==",
        "Y!",
    ],
    "hex_decode": [*ODD_TEXT, "0", "00", "fF", "A0b1", "0g", "g0", *(some_text("0123456789abcdefABCDEFxg ") for _ in range(80))],
    "percent_decode": [
        *ODD_TEXT,
        "%",
        "%4",
        "%41",
        "%4g",
        "a+b",
        "%e9%FF",
        *(some_text("ab+%09AFfgé") for _ in range(100)),
    ],
    "encode_varint": [0, 1, 127, 128, 300, -1, 2**63 - 1, ARGUMENT, ARGUMENT + 1, 2**70, True, False, 1.5, "1", None],
    "fletcher16": [*ODD_BYTES, *(some_bytes() for _ in range(40))],
    "fnv1a_32": [*ODD_BYTES, *(some_bytes() for _ in range(40))],
    "count_tokens": [*ODD_TEXT, "1 + 2", "(12*3)-4/5", "1 $ 2", "\t7\n", *(some_text("0123 +-*/()x\t²") for _ in range(80))],
    "cobs_decode": [
        *ODD_BYTES,
        b"\x01",
        b"\x02a",
        b"\x03ab\x02c",
        b"\x05ab",
        *(some_bytes(b"\x00\x01\x02\x03ab\xff") for _ in range(80)),
    ],
    "rot13": [*ODD_TEXT, "Hello, World!", "NOPQ nopq", *(some_text(string.printable + "éß") for _ in range(60))],
    "rle_encode": [*ODD_BYTES, b"a" * 256, b"a" * 600 + b"b", *(some_bytes(b"aab", 300) for _ in range(40))],
    "count_lines": [*ODD_BYTES, b"\r\n", b"\n\r", b"a\r", b"a\r\nb", b"\r\r\n", *(some_bytes(b"ab\r\n") for _ in range(80))],
    "roman_to_int": [*ODD_TEXT, "XIV", "MCMXCIV", "IIII", "IVX", "xiv", "MMXXVI", *(some_text("IVXLCDMa") for _ in range(60))],
}
EXTRA = {"percent_decode": [(), (False,), (0,), (2,), (True,)]}
"""Further arguments after the first: `percent_decode`'s flag, left out, given as a bool or as an int."""

TAKEN = sorted(INPUTS)
REFUSED = {
    "ini_counts": (
        "return sections * 1000000 + keys * 1000 + comments",
        "`*` may give a value past 64 bits (Python ints grow without bound): mask it as the checksum means it "
        "(`& 0xFFFFFFFF`), or bound it with a test that raises",
    ),
    "read_bits": (
        "value = (value << 1) | ((self.data[self.pos] >> (7 - self.bit)) & 1)",
        "a shift by -2305843009213693945 to 1152921504606846983 bits: only shifts proven within 0 to 63 are modelled",
    ),
}


def typical(name: str) -> object:
    return next(value for value in INPUTS[name] if isinstance(value, int | bytes | str) and value not in ("", b""))


def compiled(name: str) -> FsmNative:
    node = _nodes()[name]
    return FsmNative(lower_for(node, dict(zip(parameter_names(node), [typical(name)], strict=False))), getattr(others, name))


def test_how_many_of_the_fourteen_go_in():
    taken = []
    for name in [*TAKEN, *REFUSED]:
        try:
            compiled(name) if name in INPUTS else refused(name)
            taken.append(name)
        except FsmRefusal:
            pass
    print(f"{len(taken)} of {len(TAKEN) + len(REFUSED)} taken: {', '.join(taken)}")
    assert taken == TAKEN


@pytest.mark.parametrize("name", TAKEN)
def test_each_taken_one_equals_the_original(name):
    native = compiled(name)
    for value in INPUTS[name]:
        for rest in EXTRA.get(name, [()]):
            arguments = (value, *rest)
            want, got = outcome(getattr(others, name), arguments), outcome(native, arguments)
            assert difference(want, got) is None, (name, arguments, want, got)


def test_type_checks_at_entry_are_guards_and_other_types_run_the_original():
    b64 = compiled("b64decode")
    assert b64("aGk=") == b"hi"
    with pytest.raises(TypeError, match=r"^b64decode\(\) argument must be str$"):
        b64(b"aGk=")
    fnv = compiled("fnv1a_32")
    assert fnv(bytearray(b"a")) == fnv(b"a") == 0xE40C292C
    with pytest.raises(TypeError, match=r"^data must be bytes-like$"):
        fnv("a")
    with pytest.raises(TypeError, match=r"^varint must be an int$"):
        compiled("encode_varint")(1.0)


@pytest.mark.parametrize(("name", "fragment_reason"), sorted(REFUSED.items()))
def test_the_refused_ones_are_refused_at_their_line(name, fragment_reason):
    fragment, reason = fragment_reason
    with pytest.raises(FsmRefusal) as refusal:
        refused(name)
    assert (refusal.value.line, refusal.value.reason) == (line_of(fragment), reason)


def refused(name: str) -> object:
    """The refused ones built as a caller would: the bit reader's method with an instance."""
    if name == "read_bits":
        return FsmMethod(_nodes()[name], others.BitReader.read_bits, others.BitReader(b"ab"), {"n": 3})
    node = _nodes()[name]
    return FsmNative(lower_for(node, dict(zip(parameter_names(node), ["a"], strict=False))), getattr(others, name))


def test_a_method_keeps_its_state_on_self_exactly_also_when_it_raises():
    node = _nodes()["update"]
    compiled = FsmMethod(node, others.Crc16Stream.update, others.Crc16Stream(), {"chunk": b""})
    for _ in range(20):
        mine, theirs = others.Crc16Stream(), others.Crc16Stream()
        for chunk in [some_bytes(longest=300) for _ in range(8)] + [b"\xff" * 400, bytearray(b"ab"), "ab", b"x"]:
            want, got = (
                outcome(partial(others.Crc16Stream.update, mine), [chunk]),
                outcome(partial(compiled, theirs), [chunk]),
            )
            assert difference(want, got) is None and vars(mine) == vars(theirs), (chunk, want, got, vars(mine), vars(theirs))
    stream = others.Crc16Stream()
    stream.count = 999
    with pytest.raises(ValueError, match=r"^too many bytes: 1001$"):
        compiled(stream, b"a\xff")
    assert stream.count == 1001 and stream.crc == 0xFFFF  # left as Python leaves it: counted, the crc not yet stored
    stream.count = 2**70  # past 64 bits: the method itself runs
    assert compiled(stream, b"") == 0xFFFF and stream.count == 2**70


def test_a_method_attribute_of_another_type_is_refused_at_its_use():
    node = _nodes()["update"]
    stream = others.Crc16Stream()
    stream.crc = [1]
    with pytest.raises(FsmRefusal) as refusal:
        FsmMethod(node, others.Crc16Stream.update, stream, {"chunk": b""})
    assert (refusal.value.line, refusal.value.reason) == (
        line_of("crc = self.crc"),
        "`self.crc` is a list: only int, bytes, bytearray and str attributes are modelled",
    )


@pytest.mark.parametrize(
    ("name", "typed"),
    [
        ("b64decode", "`s` as text"),  # `isinstance(s, str)`
        ("hex_decode", "`text` as text"),  # its elements passed to a helper that compares them with "0"
        ("percent_decode", "`s` as text, `plus_is_space` as an int"),  # `ch = s[i]`, then `ch == "%"`
        ("roman_to_int", "`s` as text"),  # `for ch in reversed(s)`
        ("count_tokens", "`expr` as text"),  # `c.isspace()`
        ("fletcher16", "`data` as bytes"),  # a checksum with one branch: byte-level code, shown why
    ],
)
def test_ingest_types_text_parameters_and_routes_the_function_to_the_fsm_track(name, typed):
    reason = claim(_nodes()[name], str(FIXTURE))
    assert reason is not None and reason.endswith(f": lowers to the fsm IR taking {typed}"), reason
