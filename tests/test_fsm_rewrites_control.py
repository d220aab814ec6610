"""The fsm track's control-flow rewrites (unroll, branchless, unswitch, ascii-fast-path, jump-table): each, applied
wherever its pattern occurs in the bundled kernels that lower and in the rewrite fixtures, compiles and equals the
Python original on random and edge inputs (empty, one byte, all 0xFF, all ASCII, invalid UTF-8), returns and
exceptions alike; where its pattern is absent it refuses with the reason."""

from __future__ import annotations

import importlib
import random
from functools import cache
from pathlib import Path

import pytest

from repoos_agent.fsm import ir
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.lower import parameter_names
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.rewrites import NotApplicable, Step, apply_steps, menu
from repoos_agent.ingest.parse import functions, parse_source, read_source, text
from tests.conftest import ROOT
from tests.fixtures import fsm_rewrite_cases

FIXTURE = ROOT / "tests/fixtures/fsm_rewrite_cases.py"
KERNELS = ("crc16_ccitt", "crc32", "adler32")
SAMPLE = "plain ASCII, Grüße, Ελληνικά, 日本語, 🎉🐍 𝔸𝔹ℂ; "
INVALID = (b"\xc3", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"abc\x80def", b"\xf0\x9f\x8e")


@cache
def _nodes(path: Path) -> dict:
    return {text(node.child_by_field_name("name")): node for node in functions(parse_source(read_source(path), str(path)))}


def source_of(name: str) -> tuple[Path, object]:
    """The file and the Python function of a fixture case or a bundled kernel."""
    if name in KERNELS:
        return ROOT / f"kernels/fsm/{name}.py", getattr(importlib.import_module(f"kernels.fsm.{name}"), name)
    return FIXTURE, getattr(fsm_rewrite_cases, name)


def line_of(fragment: str, occurrence: int = 1) -> int:
    """The fixture's line holding `fragment` (its `occurrence`-th)."""
    lines = [n for n, line in enumerate(read_source(FIXTURE).splitlines(), 1) if fragment in line]
    return lines[occurrence - 1]


def byte_inputs() -> list[bytes]:
    rng = random.Random(45)
    ascii_runs = [bytes(rng.randrange(128) for _ in range(size)) for size in (1, 7, 8, 9, 15, 16, 17, 63, 300)]
    text_runs = ["".join(rng.choice(SAMPLE) for _ in range(size)).encode() for size in (3, 40, 400)]
    noise = [bytes(rng.randrange(256) for _ in range(size)) for size in (2, 9, 100, 1000)]
    mixed = [ascii_runs[-1] + b"\xff" + ascii_runs[-2], text_runs[-1][:-1], ascii_runs[-1] + INVALID[1]]
    edges = [b"", b"\x00", b"\x7f", b"\x80", b"\xff", b"\xff" * 64, b"a" * 64, bytes(range(256)), *INVALID]
    return edges + ascii_runs + text_runs + noise + mixed


def arguments(name: str) -> list[tuple]:
    """Each call a case is checked on: its inputs and, where it takes them, ints at and around their edges."""
    data = byte_inputs()
    if name == "interpret":
        rng = random.Random(7)
        programs = [b"+++[>++<-]>.", b",[.,]", b"+[>+]", b"<", b"]", b"[", b"++>+++[<+>-]<.", b"", b",.,.,.", b"+[]"]
        programs += [bytes(rng.choice(b"+-<>.,[]") for _ in range(30)) for _ in range(20)]
        return [(program, given, bytearray(8)) for program in programs for given in (b"", b"\x03ab")]
    if name == "clamped_sum":
        return [(d, *ints) for d in data for ints in ((1, -10, 10), (0, -64, 191), (2, 5, -5))]
    if name == "count_bytes_at":
        return [(d, *ints) for d in data for ints in ((0, 10**6), (3, 20), (-5, 3), (0, 0), (2, 7))]
    if name in ("crc32", "adler32"):
        return [(d,) for d in data] + [(d, value) for d in data[:12] for value in (0, 1, 0xFFFFFFFF, 12345)]
    return [(d,) for d in data]


@cache
def lowered(name: str) -> ir.Function:
    path, _ = source_of(name)
    node = _nodes(path)[name]
    return lower_for(node, dict(zip(parameter_names(node), arguments(name)[1], strict=False)))


def assert_rewrite_equals_original(name: str, steps: tuple[Step, ...]) -> FsmNative:
    _, original = source_of(name)
    native = FsmNative(apply_steps(lowered(name), steps).function, original)
    for call in arguments(name):
        assert difference(outcome(original, call), outcome(native, call)) is None, (name, steps, call)
    return native


APPLIES = {
    "unroll": (*KERNELS, "utf8_validate", "count_chars", "lower_runs", "tokenize", "interpret", "clamped_sum"),
    "unroll-more": ("pair_deltas", "backwards_weights", "count_bytes_at", "dispatch"),
    "branchless": ("crc16_ccitt", "crc32", "count_chars", "tokenize", "interpret", "clamped_sum", "count_bytes_at"),
    "unswitch": ("clamped_sum",),
    "ascii-fast-path": ("utf8_validate", "count_chars", "lower_runs"),
    "jump-table": ("interpret", "dispatch"),
}


@pytest.mark.parametrize("name", APPLIES["unroll"] + APPLIES["unroll-more"])
@pytest.mark.parametrize("n", [2, 8])
def test_unrolling_the_innermost_loop_over_elements_equals_the_original(name: str, n: int):
    assert_rewrite_equals_original(name, (Step("unroll", {"n": n}),))


@pytest.mark.parametrize("name", ["tokenize", "pair_deltas", "count_bytes_at", "utf8_validate"])
def test_unrolling_by_four_keeps_break_continue_return_and_raise(name: str):
    assert_rewrite_equals_original(name, (Step("unroll", {"n": 4}),))


@pytest.mark.parametrize("name", APPLIES["branchless"])
def test_branchless_selects_equal_the_original(name: str):
    native = assert_rewrite_equals_original(name, (Step("branchless"),))
    assert " ? " in native.source


@pytest.mark.parametrize("name", APPLIES["unswitch"])
def test_unswitching_a_loop_invariant_test_equals_the_original(name: str):
    variant = apply_steps(lowered(name), (Step("unswitch"),)).function
    loop = variant.body[-2]
    assert isinstance(loop, ir.If) and all(isinstance(copy[0], ir.ForEach) for copy in (loop.then, loop.orelse))
    assert_rewrite_equals_original(name, (Step("unswitch"),))


@pytest.mark.parametrize("name", APPLIES["ascii-fast-path"])
@pytest.mark.parametrize("w", [8, 16])
def test_the_word_at_a_time_fast_path_equals_the_original(name: str, w: int):
    native = assert_rewrite_equals_original(name, (Step("ascii-fast-path", {"w": w}),))
    assert "rp_bytes_below" in native.source


@pytest.mark.parametrize("name", APPLIES["jump-table"])
def test_an_opcode_ladder_as_a_switch_equals_the_original(name: str):
    native = assert_rewrite_equals_original(name, (Step("jump-table"),))
    assert "switch (" in native.source


def test_a_break_inside_a_switch_case_leaves_the_loop():
    native = assert_rewrite_equals_original("dispatch", (Step("jump-table"),))
    assert "goto rp_after1;" in native.source
    assert native(bytes([0, 0, 3, 0])) == fsm_rewrite_cases.dispatch(bytes([0, 0, 3, 0])) == 3


def test_rewrites_compose_in_order():
    steps = (Step("ascii-fast-path", {"w": 8}), Step("unroll", {"n": 4}), Step("branchless"))
    assert_rewrite_equals_original("count_chars", steps)
    assert_rewrite_equals_original("interpret", (Step("jump-table"), Step("unroll", {"n": 2})))
    assert_rewrite_equals_original("clamped_sum", (Step("unswitch"), Step("branchless"), Step("unroll", {"n": 4})))


def test_the_fast_path_skips_ascii_yet_stops_at_the_first_invalid_byte():
    native = assert_rewrite_equals_original("utf8_validate", (Step("ascii-fast-path", {"w": 8}),))
    data = b"x" * 1000 + b"\xe0\x80" + b"y" * 100
    assert native(data) == fsm_rewrite_cases.utf8_validate(data) == 1000


@pytest.mark.parametrize(
    ("name", "step", "reason"),
    [
        ("crc32", "unswitch", "no `if` inside a loop tests only values the loop leaves unchanged"),
        ("adler32", "branchless", "no `if` whose branches only assign locals (`if c: x = a else: x = b`)"),
        ("tokenize", "jump-table", "no `if`/`elif` ladder comparing one local with 3 or more distinct constants"),
        ("crc16_ccitt", "ascii-fast-path", "no `while i < len(data)` cursor loop"),
        (
            "interpret",
            "ascii-fast-path",
            f"line {line_of('op = program[pc]') - 1}: the first test is not the byte at the cursor below a constant "
            f"(`b < 0x80`); line {line_of('while depth > 0:')}: the loop's test is not `i < len(data)`; "
            f"line {line_of('while depth > 0:', 2)}: the loop's test is not `i < len(data)`",
        ),
        (
            "count_bytes_at",
            "ascii-fast-path",
            f"line {line_of('while i < limit:')}: the loop's bound is not the length of a bytes or bytearray argument",
        ),
        (
            "adler32",
            "ascii-fast-path",
            "line 30: no test of the byte at the cursor starts the loop's body; "
            "line 32: the loop's bound is not the length of a bytes or bytearray argument",
        ),
    ],
)
def test_a_rewrite_without_its_pattern_says_why(name: str, step: str, reason: str):
    with pytest.raises(NotApplicable) as refused:
        apply_steps(lowered(name), (Step(step),))
    assert refused.value.reason == reason
    assert str(refused.value) == f"{step}: {reason}"


def test_the_menu_offers_each_function_only_the_rewrites_it_has_a_place_for():
    offered = {name: {rewrite.name for rewrite, reason in menu(lowered(name)) if reason is None} for name in KERNELS}
    control = {"unroll", "branchless", "unswitch", "ascii-fast-path", "jump-table"}
    assert {name: names & control for name, names in offered.items()} == {
        "crc16_ccitt": {"unroll", "branchless"},
        "crc32": {"unroll", "branchless"},
        "adler32": {"unroll"},
    }
