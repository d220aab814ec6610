"""The fsm track's `dfa` and `run-fusion` rewrites: each, where its pattern occurs, compiles and equals the Python
original on random and edge inputs (empty, one byte, all 0xFF, invalid UTF-8, long runs, programs that run off
the tape or past their step limit), returns and exceptions alike, alone and with `unroll` or `jump-table`; where
its pattern is absent it refuses with the reason."""

from __future__ import annotations

import random
from functools import cache
from pathlib import Path

import pytest

from repoos_agent.fsm import ir
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.lower import parameter_names
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.rewrites import NotApplicable, Step, apply_steps
from repoos_agent.ingest.parse import functions, parse_source, read_source, text
from tests.conftest import ROOT
from tests.fixtures import fsm_dfa_cases, fsm_rewrite_cases
from tests.test_fsm_rewrites_control import byte_inputs

FIXTURES = {"dfa": ROOT / "tests/fixtures/fsm_dfa_cases.py", "control": ROOT / "tests/fixtures/fsm_rewrite_cases.py"}
TOKENS = b'ab _x9 "q\\"r" 12 +\n'
NUMBERS = b"-+.eE0123456789"


@cache
def _nodes(path: Path) -> dict:
    return {text(node.child_by_field_name("name")): node for node in functions(parse_source(read_source(path), str(path)))}


def source_of(name: str) -> tuple[Path, object]:
    if hasattr(fsm_dfa_cases, name):
        return FIXTURES["dfa"], getattr(fsm_dfa_cases, name)
    return FIXTURES["control"], getattr(fsm_rewrite_cases, name)


def line_of(fragment: str, occurrence: int = 1, fixture: str = "dfa") -> int:
    lines = [n for n, line in enumerate(read_source(FIXTURES[fixture]).splitlines(), 1) if fragment in line]
    return lines[occurrence - 1]


def programs() -> list[bytes]:
    rng = random.Random(11)
    runs = [b"+" * 300, b"-" * 257, b">" * 7, b">" * 8, b"<", b">>>>+++<<<<" * 5, b"+" * 100_050, b"++>+++[<+>-]<."]
    noise = [bytes(rng.choice(b"+++--->>><<<.,[]*!") for _ in range(rng.randrange(80))) for _ in range(60)]
    return [b"", b"+", b"+[>+]", b"[", b"]", *runs, *noise]


def arguments(name: str) -> list[tuple]:
    if name == "interpret":
        return [(program, given, bytearray(8)) for program in programs() for given in (b"", b"\x03ab")]
    if name in ("counter_machine", "traced_machine"):
        return [(program,) for program in programs()]
    rng = random.Random(17)
    alphabet = NUMBERS if name == "number_literal" else TOKENS
    shaped = [bytes(rng.choice(alphabet) for _ in range(rng.randrange(1, 40))) for _ in range(300)]
    literals = [b"0", b"-0", b"12", b"-1.5e+3", b"1e5", b"01", b"1.", b".5", b"1e", b"-", b"3.25E-07", b"9" * 5000]
    tokens = [b'"unterminated', b'"esc\\', b"12ab", b"a#b", b"x\n\ny", b'"a" "b" c1 2']
    return [(data,) for data in byte_inputs() + shaped + literals + tokens]


@cache
def lowered(name: str) -> ir.Function:
    path, _ = source_of(name)
    node = _nodes(path)[name]
    return lower_for(node, dict(zip(parameter_names(node), arguments(name)[1], strict=False)))


def assert_rewrite_equals_original(name: str, steps: tuple[Step, ...]) -> FsmNative:
    _, original = source_of(name)
    native = FsmNative(apply_steps(lowered(name), steps).function, original)
    for call in arguments(name):
        assert difference(outcome(original, call), outcome(native, call)) is None, (name, steps, call[0][:40])
    return native


MACHINES = ("number_literal", "utf8_states", "token_counts")


@pytest.mark.parametrize("name", MACHINES)
def test_a_state_machine_as_a_transition_table_equals_the_original(name: str):
    native = assert_rewrite_equals_original(name, (Step("dfa"),))
    assert "py__dfa_next1[" in native.source


@pytest.mark.parametrize("name", MACHINES)
def test_the_table_unrolled_or_after_a_jump_table_equals_the_original(name: str):
    assert_rewrite_equals_original(name, (Step("dfa"), Step("unroll", {"n": 4})))
    if name != "token_counts":  # its ladder tests the byte's ranges, no jump table's constants
        assert_rewrite_equals_original(name, (Step("jump-table"), Step("dfa")))


def test_the_byte_classes_are_the_coarsest_the_ladder_tells_apart():
    tables = apply_steps(lowered("utf8_states"), (Step("dfa"),)).function.tables
    classes = tables["_dfa_classes1"]
    # ASCII; 80-8F; 90-9F; A0-BF; C0-C1 and F5-FF; C2-DF; E0; E1-EC and EE-EF; ED; F0; F1-F3; F4
    assert len(set(classes)) == 12
    assert classes[0x00] == classes[0x7F] != classes[0x80]
    assert classes[0xC0] == classes[0xFF] and classes[0xE1] == classes[0xEE] != classes[0xED]


def test_effects_keyed_by_state_keep_their_order_and_messages():
    native = assert_rewrite_equals_original("token_counts", (Step("dfa"),))
    for data, message in ((b"12ab", "a letter right after a number"), (b'x "open', "a string without its closing quote")):
        with pytest.raises(ValueError, match=rf"^{message}$"):
            native(data)
    assert native(b'a "b#" 1 # ab"') == fsm_dfa_cases.token_counts(b'a "b#" 1 # ab"')


@pytest.mark.parametrize(
    ("name", "steps"),
    [
        ("interpret", (Step("run-fusion"),)),
        ("interpret", (Step("jump-table"), Step("run-fusion"))),
        ("interpret", (Step("run-fusion"), Step("unroll", {"n": 2}))),
        ("counter_machine", (Step("run-fusion"),)),
    ],
)
def test_folding_runs_of_an_additive_opcode_equals_the_original(name: str, steps: tuple[Step, ...]):
    native = assert_rewrite_equals_original(name, steps)
    assert native.source.count("py__run_k1 = ") >= 8


def test_a_folded_run_raises_where_and_as_the_original_does():
    native = assert_rewrite_equals_original("interpret", (Step("run-fusion"),))
    with pytest.raises(IndexError, match=r"^moved off the right end of the tape$"):
        native(b"+>" * 3 + b">" * 20, b"", bytearray(8))
    with pytest.raises(RuntimeError, match=r"^too many steps$"):
        native(b">" * 7 + b"+" * 100_000, b"", bytearray(8))
    tape = bytearray(8)
    assert native(b"+" * 1000 + b">" + b"-" * 3 + b".<.", b"", tape) == bytearray([253, 1000 % 256])
    assert tape == bytearray([1000 % 256, 253, 0, 0, 0, 0, 0, 0])


@pytest.mark.parametrize(
    ("name", "step", "reason"),
    [
        (
            "bracket_depth",
            "dfa",
            f"line {line_of('for b in data:', 4)}: `depth`: line {line_of('if depth > deepest:')}: "
            "a test reads the state together with values other than the byte",
        ),
        (
            "tokenize",
            "dfa",
            f"line {line_of('for byte in data:', 1, 'control')}: `kind`: it is not given a value before the loop; "
            f"line {line_of('for byte in data:', 1, 'control')}: `state`: "
            f"line {line_of('if kind == state and kind != 3:', 1, 'control')}: "
            "a test reads the state together with values other than the byte",
        ),
        (
            "traced_machine",
            "run-fusion",
            f"line {line_of('while pc < len(program):', 2)}: line {line_of('trace = (trace * 31 + acc) & 0xFFFF')}: "
            "after the dispatch, the body does more than step the cursor by one and count (`pc += 1`, `steps += 1`)",
        ),
        ("utf8_states", "run-fusion", "no `while pc < len(program)` loop dispatching on `op = program[pc]`"),
    ],
)
def test_a_rewrite_without_its_pattern_says_why(name: str, step: str, reason: str):
    with pytest.raises(NotApplicable) as refused:
        apply_steps(lowered(name), (Step(step),))
    assert refused.value.reason == reason
    assert str(refused.value) == f"{step}: {reason}"
