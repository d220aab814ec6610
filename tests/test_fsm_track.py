"""The fsm track: byte-level functions lowered to its IR, compiled to C, and equal to the Python original on random
inputs and at the edges (empty, one byte, all 0xFF), raising what the original raises; what it cannot model is
refused at its line; ingest sends these functions to it, and `repoos check` compares them."""

from __future__ import annotations

import pickle
import zlib
from functools import cache

import numpy as np
import pytest

from repoos_agent import cli
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.lower import FsmRefusal, parameter_names
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.ingest import ingest_file
from repoos_agent.ingest.parse import functions, parse_source, read_source, text
from tests.conftest import ROOT
from tests.fixtures import fsm_functions

FIXTURE = ROOT / "tests/fixtures/fsm_functions.py"
EDGES = (b"", b"\x00", b"\xff", b"\xff" * 64)


@cache
def _nodes():
    return {text(node.child_by_field_name("name")): node for node in functions(parse_source(read_source(FIXTURE), str(FIXTURE)))}


def native(name: str, *arguments: object) -> FsmNative:
    """The fixture `name` compiled for arguments typed as `arguments` (a default left out types its parameter)."""
    node = _nodes()[name]
    return FsmNative(lower_for(node, dict(zip(parameter_names(node), arguments, strict=False))), getattr(fsm_functions, name))


def line_of(fragment: str) -> int:
    return next(n for n, line in enumerate(read_source(FIXTURE).splitlines(), 1) if fragment in line)


def random_bytes(seed: int, size: int) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes()


def assert_same(name: str, compiled: FsmNative, *arguments: object) -> None:
    want, got = outcome(getattr(fsm_functions, name), arguments), outcome(compiled, arguments)
    assert difference(want, got) is None, (name, arguments)


@pytest.mark.parametrize("name", ["crc16_ccitt", "adler32", "count_tokens", "run_lengths", "hex_encode"])
def test_a_byte_function_equals_the_original_on_random_bytes_and_edges(name: str):
    compiled = native(name, b"x")
    for data in (*EDGES, *(random_bytes(seed, size) for seed, size in enumerate((1, 7, 100, 1000, 5000)))):
        assert_same(name, compiled, data)


def test_a_bytearray_argument_is_read_in_place_and_another_type_runs_the_original():
    data = bytearray(random_bytes(9, 777))
    assert_same("adler32", native("adler32", bytearray()), data)
    built_for_bytes = native("adler32", b"")
    assert built_for_bytes(data) == fsm_functions.adler32(data)
    assert built_for_bytes(memoryview(data)) == fsm_functions.adler32(memoryview(data))


def test_numpy_elements_are_refused_where_their_fixed_width_arithmetic_would_differ():
    with pytest.raises(FsmRefusal, match=r"`byte` is a NumPy uint8, whose arithmetic wraps by NumPy's rules; write `int\(byte\)`"):
        native("crc16_ccitt", np.zeros(3, dtype=np.uint8))


def test_the_checksums_give_their_published_check_values():
    assert native("crc16_ccitt", b"")(b"123456789") == 0x29B1
    assert native("adler32", b"")(b"Wikipedia") == 0x11E60398


def test_the_token_machine_counts_words_and_numbers_and_stops_at_a_hash():
    text_bytes = b"abc 12 x_y3 -- 7# ignored 99"
    assert native("count_tokens", b"")(text_bytes) == fsm_functions.count_tokens(text_bytes) == 5  # abc, 12, x_y, 3, 7
    alphabet = np.frombuffer(b"ab Z_09 -#\n", dtype=np.uint8)
    compiled = native("count_tokens", b"")
    for seed in range(20):
        assert_same("count_tokens", compiled, np.random.default_rng(seed).choice(alphabet, 300).tobytes())


def encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def test_varints_read_as_the_original_reads_them_and_raise_its_errors():
    compiled = native("read_varint", b"", 0)
    rng = np.random.default_rng(5)
    for value in (0, 1, 127, 128, 300, 2**35 + 17, 2**56 - 1, *rng.integers(0, 2**62, 20).tolist()):
        data = b"\x07" + encode_varint(int(value)) + b"\x01"
        assert compiled(data, 1) == fsm_functions.read_varint(data, 1) == value
    for data, position in ((b"", 0), (b"\x80", 0), (b"\xff" * 64, 0), (b"\xff" * 8, 0), (b"\x01\x02", -1), (b"\x01", 5)):
        assert_same("read_varint", compiled, data, position)
    with pytest.raises(ValueError, match=r"^truncated varint$"):
        compiled(b"\x80\x80", 0)
    with pytest.raises(ValueError, match=r"^varint too long$"):
        compiled(b"\xff" * 12, 0)
    with pytest.raises(IndexError, match=r"^index out of range$"):
        compiled(b"\x01\x02", -3)  # the native code leaves, and the original raises its own error


def test_integer_arrays_are_read_and_written_at_a_cursor():
    rng = np.random.default_rng(3)
    values = rng.integers(-300, 300, 200).astype(np.int32)
    compiled = native("clamp_deltas", values, np.zeros(200, dtype=np.int32))
    for size in (0, 1, 2, 200):
        assert_same("clamp_deltas", compiled, values[:size].copy(), np.zeros(size, dtype=np.int32))
    with pytest.raises(FsmRefusal, match=rf"^line {line_of('out[j] = delta')}: a value of -128 to 127 stored in `out`"):
        native("clamp_deltas", values, np.zeros(200, dtype=np.uint8))


def test_floor_division_and_modulo_round_as_python_does_on_negative_values():
    compiled = native("signed_steps", b"", 0)
    for seed in range(10):
        assert_same("signed_steps", compiled, random_bytes(seed, 300), int(seed * 7919))


@pytest.mark.parametrize(
    ("name", "fragment", "reason"),
    [
        ("recursive_sum", "+ recursive_sum(", "recursion: `recursive_sum` calls itself"),
        ("table_lookup", "table = {", "a dict"),
        ("scaled", "byte * 0.5", "a float"),
        ("polynomial_hash", "h * 31", "`*` may give a value past 64 bits"),
        ("numpy_wraps", "total + values[i]", "`values[i]` is a NumPy int32, whose arithmetic wraps"),
    ],
)
def test_what_the_track_cannot_model_is_refused_at_its_line(name: str, fragment: str, reason: str):
    argument = np.arange(4, dtype=np.int32) if name == "numpy_wraps" else b"ab"
    arguments = (argument, 0) if name == "recursive_sum" else (argument,)
    with pytest.raises(FsmRefusal) as refused:
        native(name, *arguments)
    assert str(refused.value).startswith(f"line {line_of(fragment)}: {reason}")


def test_a_refusal_keeps_its_line_and_reason_across_processes():
    refusal = pickle.loads(pickle.dumps(FsmRefusal(7, "a dict", FIXTURE)))
    assert (str(refusal), refusal.line, refusal.reason, refusal.track) == (f"{FIXTURE}:7: a dict", 7, "a dict", "fsm")


def test_a_float_argument_is_refused_by_its_name():
    with pytest.raises(FsmRefusal, match=r"argument `data` is a float: the fsm track takes ints, bytes"):
        native("adler32", 1.5)


def test_ingest_sends_byte_level_functions_to_the_fsm_track_with_the_reason():
    reports = {report.name: report for report in ingest_file(FIXTURE)}
    for name in ("crc16_ccitt", "count_tokens", "read_varint", "adler32", "run_lengths", "hex_encode", "signed_steps"):
        assert reports[name].track == "fsm", (name, reports[name].reason)
        assert "lowers to the fsm IR" in reports[name].reason
    assert reports["crc16_ccitt"].reason == (
        "byte-level code (a loop over a sequence's elements, bit operations): lowers to the fsm IR taking `data` as bytes"
    )
    assert reports["read_varint"].reason.startswith("4 branches against 0 loops: control flow is decided by data")
    for name in ("recursive_sum", "table_lookup", "scaled", "polynomial_hash"):
        assert reports[name].track == "other", name


def test_repoos_check_compares_the_c_baseline_with_the_original(capsys):
    assert cli.main(["check", f"{FIXTURE}:adler32", "--arg", "data=bytes[4096]"]) == 0
    assert capsys.readouterr().out.startswith(f"{FIXTURE}:adler32: fsm track, correct (returned ")
    assert cli.main(["check", f"{FIXTURE}:read_varint", "--arg", "data=bytes[0]", "--arg", "pos=0"]) == 0
    assert "fsm track, correct (raised ValueError: truncated varint)" in capsys.readouterr().out


def test_repoos_check_names_the_file_and_line_it_refuses(capsys):
    arguments = ["--arg", "values=bytes[16]", "--arg", "out=bytearray[16]"]
    assert cli.main(["check", f"{FIXTURE}:clamp_deltas", *arguments]) == 2
    where = f"{FIXTURE}:{line_of('out[j] = delta')}"
    assert f"{where}: `clamp_deltas` is not modelled by the fsm track: a value of -128 to 127" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "calls"),
    [
        ("crc16_from", ((), (0,), (0xFFFF,), (-5,), (1 << 70,))),
        ("clipped_max", ((), (0,), (-(1 << 40), 3), (300, -1), (1 << 63, 0))),
    ],
)
def test_an_int_default_is_taken_when_the_call_leaves_it_out_as_python_does(name: str, calls: tuple[tuple[int, ...], ...]):
    compiled = native(name, b"x")
    original = getattr(fsm_functions, name)
    for data in (*EDGES, random_bytes(3, 100), random_bytes(4, 1000)):
        for rest in calls:
            assert_same(name, compiled, data, *rest)
        assert compiled(data=data) == original(data=data)
        assert compiled(data, **{parameter_names(_nodes()[name])[1]: 9}) == original(
            data, **{parameter_names(_nodes()[name])[1]: 9}
        )
    assert_same(name, compiled)  # a missing argument raises Python's own TypeError


def test_a_default_that_is_not_an_int_is_refused_at_its_line():
    with pytest.raises(FsmRefusal) as refused:
        native("scaled_default", b"ab")
    assert str(refused.value) == (
        f"line {line_of('scale=0.5')}: parameter `scale=0.5`: only an int or bool default (a literal or a module integer "
        "constant), a `bytes` literal or a tuple of ints is modelled; pass the value in the call instead"
    )
    with pytest.raises(FsmRefusal, match=r"argument `crc` is a bytes: its default is an int, and the fsm track takes an int"):
        native("crc16_from", b"ab", b"cd")


@pytest.mark.parametrize("name", ["fsm:crc16-ccitt", "fsm:crc32", "fsm:adler32"])
def test_repoos_check_runs_a_bundled_checksum_with_its_default_on_the_fsm_track(name: str, capsys):
    assert cli.main(["check", name, "--size", "SMALL"]) == 0
    assert capsys.readouterr().out.startswith(f"{name}: fsm track, correct (returned ")


def test_repoos_check_passes_a_default_parameter_only_when_an_arg_gives_it(capsys):
    target = str(ROOT / "kernels/fsm/crc32.py") + ":crc32"
    data = np.random.default_rng(0).integers(0, 256, size=(1000,)).astype(np.uint8).tobytes()  # as `--arg` draws it
    assert cli.main(["check", target, "--arg", "data=bytes[1000]"]) == 0
    assert capsys.readouterr().out.startswith(f"{target}: fsm track, correct (returned {zlib.crc32(data)})")
    assert cli.main(["check", target, "--arg", "data=bytes[1000]", "--arg", "crc=5"]) == 0
    assert capsys.readouterr().out.startswith(f"{target}: fsm track, correct (returned {zlib.crc32(data, 5)})")


def test_min_of_a_numpy_element_is_refused_as_python_would_return_the_numpy_scalar():
    values = np.array([9, 4, 300], dtype=np.int64)
    with pytest.raises(FsmRefusal) as refused:
        native("smallest_element", values)
    assert str(refused.value) == (
        f"line {line_of('least = min(least, values[i])')}: `values[i]` is a NumPy int64, whose arithmetic wraps by "
        "NumPy's rules; write `int(values[i])`"
    )
    assert_same("smallest_element", native("smallest_element", b""), bytes([9, 4, 200]))
