"""The branchy byte-level kernels (`kernels/fsm/`) against the standard library, or against references written
differently (table-driven, recursive, an encoder run backwards) where the library has none.

Each runs on its own seeded inputs through the catalog, on random inputs and on edge inputs: empty, one
byte, all 0xFF, invalid sequences; invalid input raises the type the library raises.
"""

from __future__ import annotations

import binascii
import csv
import io
import json
import random
import re
import zlib

import pytest

from kernels.fsm.adler32 import adler32
from kernels.fsm.brainfuck import SHIFT_BY_13, brainfuck
from kernels.fsm.collatz_lengths import collatz_lengths
from kernels.fsm.crc16_ccitt import crc16_ccitt
from kernels.fsm.crc32 import crc32
from kernels.fsm.csv_split import csv_split
from kernels.fsm.json_tokens import FALSE, NULL, NUMBER, STRING, TRUE, json_tokens
from kernels.fsm.leb128_decode import leb128_decode
from kernels.fsm.luhn import luhn
from kernels.fsm.run_length_decode import run_length_decode
from kernels.fsm.utf8_validate import utf8_validate
from repoos_agent.catalog import SIZE_CLASSES, bundled_kernels, find_bundled

EDGE_BYTES = [b"", b"\x00", b"\x7f", b"\x80", b"\xff", b"\xff" * 64, bytes(range(256)), b"123456789"]


def table_crc16(data: bytes, crc: int = 0xFFFF) -> int:
    """CRC-16/CCITT a byte at a time through a 256-entry table."""
    table = []
    for top in range(256):
        value = top << 8
        for _ in range(8):
            value = ((value << 1) ^ 0x1021 if value & 0x8000 else value << 1) & 0xFFFF
        table.append(value)
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ table[(crc >> 8) ^ byte]
    return crc


def decode_error_start(data: bytes) -> int:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        return error.start
    return -1


def csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def json_kinds(value: object) -> list[str]:
    """The token kinds of `value` serialized, by walking the value itself."""
    if isinstance(value, dict):
        inner = [[STRING, ":", *json_kinds(v)] for v in value.values()]
        return ["{", *[kind for k, item in enumerate(inner) for kind in ([","] if k else []) + item], "}"]
    if isinstance(value, list):
        inner = [json_kinds(v) for v in value]
        return ["[", *[kind for k, item in enumerate(inner) for kind in ([","] if k else []) + item], "]"]
    if value is True or value is False or value is None:
        return [{True: TRUE, False: FALSE, None: NULL}[value]]
    return [STRING if isinstance(value, str) else NUMBER]


def compact_json(text: str) -> object:
    """The value of `text` read back from its tokens alone, the whitespace between them dropped."""
    return json.loads("".join(text[start:end] for _, start, end in json_tokens(text)))


def leb128_encode(values: list[int]) -> bytes:
    out = bytearray()
    for value in values:
        while True:
            low, value = value & 0x7F, value >> 7
            out.append(low | (0x80 if value else 0))
            if not value:
                break
    return bytes(out)


def leb128_reference(data: bytes) -> list[int]:
    """Split after each byte below 0x80, then read each group's bytes most significant first."""
    values, group = [], []
    for byte in data:
        group.append(byte & 0x7F)
        if byte < 0x80:
            values.append(int("".join(format(seven, "07b") for seven in reversed(group)), 2))
            group = []
    assert not group, "truncated"
    return values


def rle_reference(data: bytes) -> bytes:
    """RunLengthDecode by recursion on the first run."""
    if not data or data[0] == 128:
        return b""
    if data[0] < 128:
        return data[1 : data[0] + 2] + rle_reference(data[data[0] + 2 :])
    return data[1:2] * (257 - data[0]) + rle_reference(data[2:])


def rle_encode(data: bytes) -> bytes:
    """Repeats of two to 128 equal bytes as repeat runs, the rest as literal runs of at most 128, then EOD."""
    out, literal, i = bytearray(), bytearray(), 0
    while i < len(data):
        same = 1
        while i + same < len(data) and same < 128 and data[i + same] == data[i]:
            same += 1
        if (same >= 2 or len(literal) == 128) and literal:
            out += bytes([len(literal) - 1]) + literal
            literal = bytearray()
        if same >= 2:
            out += bytes([257 - same, data[i]])
            i += same
        else:
            literal.append(data[i])
            i += 1
    if literal:
        out += bytes([len(literal) - 1]) + literal
    return bytes(out) + b"\x80"


def luhn_reference(number: str) -> int:
    doubled = (0, 2, 4, 6, 8, 1, 3, 5, 7, 9)
    digits = [int(c) for c in reversed(number)]
    return int((sum(digits[0::2]) + sum(doubled[d] for d in digits[1::2])) % 10 == 0)


def bf_reference(program: bytes, input_data: bytes) -> bytes:
    """Brainf*** by walking a tree of nested loops recursively, one character a step."""

    def parse(k: int) -> tuple[list, int]:
        body: list = []
        while k < len(program) and program[k : k + 1] != b"]":
            if program[k : k + 1] == b"[":
                loop, k = parse(k + 1)
                body.append(loop)
            else:
                body.append(program[k : k + 1])
            k += 1
        return body, k

    tape, out, state = bytearray(100), bytearray(), {"pointer": 0, "read": 0}

    def run(body: list) -> None:
        for step in body:
            if isinstance(step, list):
                while tape[state["pointer"]]:
                    run(step)
            elif step in b"+-":
                tape[state["pointer"]] = (tape[state["pointer"]] + (1 if step == b"+" else 255)) % 256
            elif step in b"<>":
                state["pointer"] += 1 if step == b">" else -1
            elif step == b".":
                out.append(tape[state["pointer"]])
            elif step == b",":
                read = state["read"]
                tape[state["pointer"]] = input_data[read] if read < len(input_data) else 0
                state["read"] = read + 1

    run(parse(0)[0])
    return bytes(out)


def collatz_reference(n: int, known: dict[int, int]) -> int:
    if n not in known:
        known[n] = 1 + collatz_reference(n // 2 if n % 2 == 0 else 3 * n + 1, known)
    return known[n]


EXPECTED = {
    "fsm:crc16-ccitt": lambda data: binascii.crc_hqx(data, 0xFFFF),
    "fsm:crc32": lambda data: zlib.crc32(data),
    "fsm:adler32": lambda data: zlib.adler32(data),
    "fsm:utf8-validate": decode_error_start,
    "fsm:csv-split": csv_rows,
    "fsm:json-tokens": lambda text: json.loads(text),
    "fsm:leb128-decode": leb128_reference,
    "fsm:run-length-decode": rle_reference,
    "fsm:luhn": lambda numbers: bytearray(luhn_reference(number) for number in numbers),
    "fsm:brainfuck": bf_reference,
    "fsm:collatz-lengths": lambda start, count: [collatz_reference(n, {1: 0}) for n in range(start, start + count)],
}
"""What each kernel must return on its own inputs, from the library or a reference written differently."""


def test_the_catalog_lists_eleven_fsm_kernels_with_five_sizes_and_the_loop_sweeps_never_see_them():
    kernels = bundled_kernels("fsm")
    assert sorted(k.name for k in kernels) == sorted(EXPECTED)
    for kernel in kernels:
        assert tuple(kernel.sizes) == SIZE_CLASSES, kernel.name
        assert kernel.ranks() == {}, kernel.name
    swept = {k.name for suite in ("polybench", "numpy", "sparse", "graphs") for k in bundled_kernels(suite)}
    assert not swept & set(EXPECTED)


@pytest.mark.parametrize("size", ["MINI", "SMALL"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_kernel_on_its_own_inputs_equals_the_library_or_reference(name, size):
    kernel = find_bundled(name)
    values = kernel.module.init(**kernel.sizes[size])
    assert values == kernel.module.init(**kernel.sizes[size])  # seeded: the same inputs every time
    if name == "fsm:json-tokens":
        assert compact_json(values["text"]) == EXPECTED[name](**values)
    else:
        assert kernel.python_function()(**kernel.inputs(size)) == EXPECTED[name](**values)


@pytest.mark.parametrize("data", EDGE_BYTES)
def test_checksums_equal_zlib_and_binascii_on_edge_inputs(data):
    assert crc16_ccitt(data) == binascii.crc_hqx(data, 0xFFFF) == table_crc16(data)
    assert crc32(data) == zlib.crc32(data)
    assert adler32(data) == zlib.adler32(data)


def test_checksums_give_the_published_check_values_and_continue_an_earlier_checksum():
    assert crc16_ccitt(b"123456789") == 0x29B1
    assert crc32(b"123456789") == 0xCBF43926
    assert adler32(b"Wikipedia") == 0x11E60398
    rng = random.Random(1)
    for _ in range(50):
        head, tail = rng.randbytes(rng.randrange(40)), rng.randbytes(rng.randrange(40))
        assert crc16_ccitt(tail, crc16_ccitt(head)) == crc16_ccitt(head + tail)
        assert crc32(tail, crc32(head)) == zlib.crc32(tail, zlib.crc32(head)) == zlib.crc32(head + tail)
        assert adler32(tail, adler32(head)) == zlib.adler32(tail, zlib.adler32(head))


def test_adler32_reduces_long_runs_of_0xff_as_zlib_does():
    # 0xFF bytes grow the sums fastest: the block reduction must come before b leaves 32 bits.
    for n in (5551, 5552, 5553, 11104, 20000):
        assert adler32(b"\xff" * n) == zlib.adler32(b"\xff" * n), n


def test_checksums_reject_text_as_zlib_does():
    for checksum, oracle in ((crc32, zlib.crc32), (adler32, zlib.adler32), (crc16_ccitt, binascii.crc_hqx)):
        with pytest.raises(TypeError):
            oracle("abc", 0)
        with pytest.raises(TypeError):
            checksum("abc")


UTF8_CASES = [
    b"",
    b"a",
    b"\xff" * 8,
    b"\xc0\xaf",  # overlong slash
    b"\xe0\x80\xaf",  # overlong, three bytes
    b"\xed\xa0\x80",  # a surrogate
    b"\xf4\x90\x80\x80",  # above U+10FFFF
    b"\xf4\x8f\xbf\xbf",  # U+10FFFF itself
    b"ok\xe2\x82",  # cut short at the end
    b"ok\xe2\x82z",  # cut short before ASCII
    b"\x80abc",  # a lone continuation byte
    "naïve ∑ 🐍".encode(),
]


@pytest.mark.parametrize("data", UTF8_CASES + [bytes([b]) for b in range(256)])
def test_utf8_validate_finds_where_the_decoder_reports_its_error(data):
    assert utf8_validate(data) == decode_error_start(data)


def test_utf8_validate_on_random_near_utf8_bytes():
    rng = random.Random(3)
    tricky = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5]
    for _ in range(20_000):
        data = bytes(rng.choice(tricky) if rng.random() < 0.8 else rng.randrange(256) for _ in range(rng.randrange(8)))
        assert utf8_validate(data) == decode_error_start(data), data


CSV_CASES = ["", ",", '"', '""', '"""', "\r\n", "\n\r", "\r\r\n", "a", 'a"b', '"a"b', '"a""b"', "a,\r", '"x\r\ny",z\n', "a,b\n\nc"]


@pytest.mark.parametrize("text", CSV_CASES)
def test_csv_split_reads_edge_inputs_as_the_csv_module(text):
    assert csv_split(text) == csv_rows(text)


def test_csv_split_reads_random_text_as_the_csv_module():
    rng = random.Random(5)
    for _ in range(20_000):
        text = "".join(rng.choice('ab,"\r\n \x00') for _ in range(rng.randrange(10)))
        assert csv_split(text) == csv_rows(text), text


def random_json_value(rng: random.Random, depth: int = 0) -> object:
    pick = rng.randrange(9 if depth < 3 else 6)
    if pick == 0:
        return rng.choice((True, False, None))
    if pick == 1:
        return rng.randrange(-(10**20), 10**20)
    if pick == 2:
        return rng.choice((0.0, -0.0, 1e-300, 1.5e300, rng.uniform(-1e6, 1e6), rng.random() / 1e9))
    if pick in (3, 4, 5):
        return "".join(rng.choice('ab "\\/\b\f\n\r\t\x00\x1fé€🐍\ud800') for _ in range(rng.randrange(6)))
    if pick in (6, 7):
        return [random_json_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {f"k{k}": random_json_value(rng, depth + 1) for k in range(rng.randrange(4))}


def test_json_tokens_spans_read_back_to_the_document_and_kinds_follow_its_value():
    rng = random.Random(7)
    for _ in range(2_000):
        value = random_json_value(rng)
        text = json.dumps(value, indent=rng.choice((None, 0, 2, "\t")), ensure_ascii=rng.random() < 0.5)
        tokens = json_tokens(text)
        assert [kind for kind, _, _ in tokens] == json_kinds(value), text
        assert compact_json(text) == json.loads(text)
        between, previous = "", 0
        for _, start, end in tokens:
            between, previous = between + text[previous:start], end
        assert (between + text[previous:]).strip(" \t\n\r") == "", text


def test_json_tokens_spans_and_kinds_on_a_small_document():
    text = '{"a": [1, -2.5e3, true],\n "b": null, "c": false}'
    assert json_tokens(text) == [
        ("{", 0, 1), (STRING, 1, 4), (":", 4, 5), ("[", 6, 7), (NUMBER, 7, 8), (",", 8, 9), (NUMBER, 10, 16),
        (",", 16, 17), (TRUE, 18, 22), ("]", 22, 23), (",", 23, 24), (STRING, 26, 29), (":", 29, 30),
        (NULL, 31, 35), (",", 35, 36), (STRING, 37, 40), (":", 40, 41), (FALSE, 42, 47), ("}", 47, 48),
    ]  # fmt: skip
    assert json_tokens("") == [] and json_tokens(" \t\r\n") == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('"abc', "unterminated string starting at 0"),
        ('"a\\q"', "invalid escape at 2"),
        ('"\\u12G4"', "invalid \\u escape at 1"),
        ('"tab\there"', "control character '\\t' in string at 4"),
        ("-", "number without digits at 0"),
        ("[1.]", "number without digits after the point at 1"),
        ("1e+", "number without digits in the exponent at 0"),
        ("01", "leading zero in number at 0"),
        ("tru", "invalid literal at 0: expected true"),
        ("[nul]", "invalid literal at 1: expected null"),
        ("@", "unexpected character '@' at 0"),
        ("\xff", "unexpected character 'ÿ' at 0"),
    ],
)
def test_json_tokens_raise_value_error_where_json_loads_does(text, message):
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        json_tokens(text)


def test_json_tokens_keep_to_the_grammar_where_json_loads_takes_more():
    assert json.loads("[NaN, -Infinity]")[1] == float("-inf")
    with pytest.raises(ValueError, match=r"^unexpected character 'N' at 1$"):
        json_tokens("[NaN, -Infinity]")


def test_leb128_decode_reads_back_what_an_encoder_wrote():
    rng = random.Random(11)
    edges = [0, 1, 127, 128, 255, 300, 16383, 16384, 2**63, 2**64 - 1]
    values = edges + [rng.getrandbits(rng.randrange(1, 65)) for _ in range(2_000)]
    data = leb128_encode(values)
    assert leb128_decode(data) == values == leb128_reference(data)
    assert leb128_decode(b"") == []
    assert leb128_decode(b"\x80\x80\x00\x7f") == [0, 127]  # padded encodings are allowed


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x80", "truncated varint at byte 0"),
        (b"\x01\xff\xff", "truncated varint at byte 1"),
        (b"\xff" * 64, "does not fit in 64 bits"),
        (b"\xff" * 9 + b"\x02", "varint at byte 0 does not fit in 64 bits"),
        (b"\x80" * 10 + b"\x00", "varint at byte 0 does not fit in 64 bits"),
    ],
)
def test_leb128_decode_raises_value_error_on_truncated_or_oversized_varints(data, message):
    with pytest.raises(ValueError, match=message):
        leb128_decode(data)


def test_run_length_decode_inverts_an_encoder_and_agrees_with_a_recursive_reference():
    rng = random.Random(13)
    for _ in range(300):
        data = b"".join(bytes([rng.randrange(4)]) * rng.choice((1, 1, 2, 3, 130, 300)) for _ in range(rng.randrange(12)))
        encoded = rle_encode(data)
        assert run_length_decode(encoded) == data == rle_reference(encoded)
        assert run_length_decode(encoded + rng.randbytes(5)) == data  # bytes after the end marker are ignored
        assert run_length_decode(encoded[:-1]) == data  # no end marker: decoded up to where the data stops


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", b""),
        (b"\x80", b""),
        (b"\x80\x05", b""),
        (b"\x00z", b"z"),
        (b"\x81z", b"z" * 128),
        (b"\xffz", b"zz"),
        (b"\x7f" + bytes(range(128)), bytes(range(128))),
        (b"\x01ab\xfe\xff\x80", b"ab\xff\xff\xff"),
    ],
)
def test_run_length_decode_edge_runs(data, expected):
    assert run_length_decode(data) == expected == rle_reference(data)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x00", "literal run at byte 0 needs 1 bytes, 0 left"),
        (b"\x00a\x02ab", "literal run at byte 2 needs 3 bytes, 2 left"),
        (b"\xff", "repeat run at byte 0 has no byte to repeat"),
    ],
)
def test_run_length_decode_raises_value_error_on_a_run_cut_short(data, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        run_length_decode(data)


def test_luhn_accepts_the_published_example_and_agrees_with_a_table_driven_reference():
    assert luhn(["79927398713", "79927398710", "0", "18"]) == bytearray([1, 0, 1, 1])
    rng = random.Random(17)
    numbers = ["".join(rng.choice("0123456789") for _ in range(rng.randrange(1, 25))) for _ in range(3_000)]
    assert luhn(numbers) == bytearray(luhn_reference(number) for number in numbers)
    assert luhn([]) == bytearray()


@pytest.mark.parametrize(
    ("numbers", "message"),
    [
        ([""], "number 0 is empty"),
        (["18", "4111 1111"], "number 1 has a non-digit ' ' at 4"),
        (["١٢٣"], "number 0 has a non-digit '٣' at 2"),  # Unicode digits int() would take
    ],
)
def test_luhn_raises_value_error_on_non_digits(numbers, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        luhn(numbers)


BF_PROGRAMS = [
    (b"++++++++[>++++++++<-]>+.", b""),  # 8 * 8 + 1: "A"
    (b"-.", b""),  # cells wrap around below zero
    (b",.,.,.", b"x"),  # past the end of the input reads 0
    (b",>,<[->[->+>+<<]>>[-<<+>>]<<<]>>.", bytes([7, 9])),  # nested loops: 7 * 9
    (b"+++++[>+++++[>++<-]<-]>>.>+[<++>-]<.", b""),  # a counter inside a counter, then a move
    (SHIFT_BY_13, bytes(range(1, 256))),
    (SHIFT_BY_13, b"stop\x00here"),
    (b"comments are ignored + . ", b""),
]


@pytest.mark.parametrize(("program", "input_data"), BF_PROGRAMS)
def test_brainfuck_bytecode_runs_programs_as_a_recursive_tree_walker(program, input_data):
    assert brainfuck(program, input_data) == bf_reference(program, input_data)


def test_brainfuck_shifts_its_input_by_13():
    data = bytes(range(1, 256))
    assert brainfuck(SHIFT_BY_13, data) == bytes((b + 13) & 0xFF for b in data)


@pytest.mark.parametrize(
    ("program", "error", "message"),
    [
        (b"[", ValueError, r"^unmatched \[ at 0$"),
        (b"+[[]", ValueError, r"^unmatched \[ at 1$"),
        (b"+]", ValueError, r"^unmatched \] at 1$"),
        (b"<", IndexError, "^instruction 0 moves to cell -1, off the tape of 30000 cells$"),
        (b"+[>+]", IndexError, "moves to cell 30000, off the tape of 30000 cells$"),
    ],
)
def test_brainfuck_raises_on_unmatched_brackets_and_off_the_tape(program, error, message):
    with pytest.raises(error, match=message):
        brainfuck(program, b"")


def test_collatz_lengths_from_the_definition():
    assert collatz_lengths(1, 10) == [0, 1, 7, 2, 5, 8, 16, 3, 19, 6]
    assert collatz_lengths(27, 1) == [111]
    assert collatz_lengths(97, 1) == [118]
    assert collatz_lengths(871, 1) == [178]
    assert collatz_lengths(5, 0) == []
    known = {1: 0}
    assert collatz_lengths(1000, 500) == [collatz_reference(n, known) for n in range(1000, 1500)]


def test_collatz_lengths_refuse_starts_below_one():
    with pytest.raises(ValueError, match=r"^Collatz starts must be positive, got 0$"):
        collatz_lengths(0, 3)
