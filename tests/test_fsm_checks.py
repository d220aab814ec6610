"""The checks the fsm printer leaves out where the width analysis proves them: an index proven within its sequence is
read without a check, an assignment proven within `GUARD` is not checked against it, and a select whose sides cannot
fault is a conditional move over both. Where the analysis cannot prove it the check stays, and a call it stops still ends as
the Python original does (same value, or same exception and message). Each build equals the original on random
and edge inputs."""

from __future__ import annotations

import random
import subprocess
import tempfile
from functools import cache
from pathlib import Path

import pytest

from kernels.fsm.collatz_lengths import collatz_lengths
from kernels.fsm.crc32 import crc32
from repoos_agent.backends.cc import default_toolchain
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.lower import parameter_names
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.rewrites import Step, apply_steps
from repoos_agent.ingest.parse import functions, parse_source, read_source, text
from tests.conftest import ROOT
from tests.fixtures import fsm_checks

FIXTURE = ROOT / "tests/fixtures/fsm_checks.py"
RNG = random.Random(45)
INPUTS = [b"", b"\x00", b"\xff", bytes(range(256)), bytes(7), bytes(8), bytes(9), bytes(16)]
INPUTS += [RNG.randbytes(RNG.randrange(0, 40)) for _ in range(60)]


@cache
def _nodes():
    return {text(node.child_by_field_name("name")): node for node in functions(parse_source(read_source(FIXTURE), str(FIXTURE)))}


def native(name: str, *arguments: object) -> FsmNative:
    node = _nodes()[name]
    return FsmNative(lower_for(node, dict(zip(parameter_names(node), arguments, strict=True))), getattr(fsm_checks, name))


def body(compiled: FsmNative) -> str:
    """The printed function's body, without the prelude's helpers."""
    return compiled.source[compiled.source.index("rp_body(") :]


def assert_same(compiled: FsmNative, *arguments: object) -> None:
    want, got = outcome(compiled.original, arguments), outcome(compiled, arguments)
    assert difference(want, got) is None, (compiled.function.name, arguments, want, got)


def test_an_index_below_the_length_is_read_without_a_check():
    for name in ("sum_by_index", "cursor_sum", "pairs", "eight_at_a_time"):
        compiled = native(name, b"")
        assert "rp_at(" not in body(compiled), name
        for data in INPUTS:
            assert_same(compiled, data)


def test_a_counter_below_the_length_is_not_guarded():
    compiled = native("cursor_sum", b"")
    assert "rp_guard" not in body(compiled)
    assert compiled(bytes(range(256)) * 3) == fsm_checks.cursor_sum(bytes(range(256)) * 3)


def test_an_index_the_analysis_cannot_bound_keeps_its_check_and_raises_as_python_does():
    compiled = native("at", b"", 0)
    assert "rp_at(" in body(compiled)
    for data, k in [(b"abc", 0), (b"abc", 2), (b"abc", -1), (b"abc", -3), (b"abc", 3), (b"abc", -4), (b"", 0)]:
        assert_same(compiled, data, k)
    assert outcome(compiled, (b"abc", 3)).raised == ("IndexError", "index out of range")


def test_a_step_past_the_stop_keeps_its_check_and_a_short_tail_raises_as_python_does():
    compiled = native("eight_past_the_end", b"")
    assert "rp_at(" in body(compiled)
    for data in INPUTS:
        assert_same(compiled, data)
    assert outcome(compiled, (bytes(9),)).raised == ("IndexError", "index out of range")


def test_a_value_that_outgrows_64_bits_keeps_its_guard_and_returns_the_python_int():
    compiled = native("triple", 0)
    assert "rp_guard_high(" in body(compiled)
    for count in (0, 1, 5, 38, 39, 40, 100, -3):
        assert_same(compiled, count)
    assert compiled(100) == (3**100 - 1) // 2


def test_a_select_of_sides_that_cannot_fault_is_a_conditional_move_over_both():
    tree = parse_source(read_source(ROOT / "kernels/fsm/crc32.py"), "crc32.py")
    node = next(n for n in functions(tree) if text(n.child_by_field_name("name")) == "crc32")
    lowered = lower_for(node, {"data": b"", "crc": 0})
    compiled = FsmNative(apply_steps(lowered, [Step("branchless")]).function, crc32)
    assert "rp_select_bits(" in body(compiled)  # the bit test `crc & 1` sets the flags of its move
    for data in INPUTS:
        for crc in (0, 0xFFFFFFFF, 12345):
            assert_same(compiled, data, crc)


def test_a_select_with_a_read_reads_only_on_its_side():
    node = _nodes()["pick"]
    lowered = lower_for(node, {"data": b"", "k": 0})
    compiled = FsmNative(apply_steps(lowered, [Step("branchless")]).function, fsm_checks.pick)
    assert "rp_select" not in body(compiled) and " ? " in body(compiled)
    for data in INPUTS[:30]:
        for k in (0, 1, 5, 40, -1, -len(data) - 1):
            assert_same(compiled, data, k)


def _collatz_builds(calls: list[tuple[object, ...]]) -> list[FsmNative]:
    """collatz-lengths as lowered (a branch a step) and `branchless` (a select a step), each with an original that
    notes the calls it runs."""

    def original(*arguments: object) -> object:
        calls.append(arguments)
        return collatz_lengths(*arguments)

    tree = parse_source(read_source(ROOT / "kernels/fsm/collatz_lengths.py"), "collatz_lengths.py")
    node = next(n for n in functions(tree) if text(n.child_by_field_name("name")) == "collatz_lengths")
    lowered = lower_for(node, {"start": 1, "count": 10})
    return [FsmNative(lowered, original), FsmNative(apply_steps(lowered, [Step("branchless")]).function, original)]


def test_a_collatz_trajectory_past_the_guard_runs_the_original():
    calls: list[tuple[object, ...]] = []
    for compiled in _collatz_builds(calls):
        assert "rp_guard_high(rp_leave, " in body(compiled)  # `n` grows by `3 * n + 1`: held to GUARD
        calls.clear()
        assert compiled(2**60, 1) == collatz_lengths(2**60, 1) == [60]  # halves all the way: natively
        assert compiled(2**59 + 1, 1) == collatz_lengths(2**59 + 1, 1)  # its trajectory peaks at 3/4 of 2**61
        assert compiled(1, 300) == collatz_lengths(1, 300)
        assert calls == []
        # past 2**61, at the first step (2**60 - 1 is odd) or later on (2**59 + 3): the original runs, exactly
        assert compiled(2**60 - 1, 2) == collatz_lengths(2**60 - 1, 2)
        assert compiled(2**59 + 3, 1) == collatz_lengths(2**59 + 3, 1)
        assert calls == [(2**60 - 1, 2), (2**59 + 3, 1)]
        for start in (0, -5):
            assert_same(compiled, start, 3)  # ValueError with the start in its message


def test_the_printed_loops_start_on_64_byte_lines():
    """Each loop's top (a label a later jump goes back to) in the assembly the default compiler makes of collatz's
    C is aligned to 64 bytes, so where the loop fits one line it is on one, whatever code precedes it."""
    toolchain = default_toolchain()
    if "clang" in toolchain.version:
        pytest.skip("the alignment pragma is GCC's; other compilers keep their own layout")
    for compiled in _collatz_builds([]):
        with tempfile.TemporaryDirectory() as directory:
            source, assembly = Path(directory) / "collatz.c", Path(directory) / "collatz.s"
            source.write_text(compiled.source)
            flags = [flag for flag in toolchain.flags if flag not in ("-shared", "-fPIC")]
            subprocess.run([toolchain.command, *flags, "-S", "-o", str(assembly), str(source)], check=True)
            lines = assembly.read_text().splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("rp_body"))
        end = next(i for i in range(start, len(lines)) if lines[i].strip().startswith(".size"))
        labels: dict[str, int] = {}
        spans = []  # each jump back: from its label to the jump
        for i in range(start, end):
            line = lines[i].strip()
            if line.endswith(":") and line.startswith(".L"):
                labels[line[:-1]] = i
            elif line.startswith("j") and line.split()[-1] in labels:
                spans.append((labels[line.split()[-1]], i))
        assert spans, "no loop in rp_body"
        # a loop's blocks are the spans that overlap without one holding the other (a branchy body laid out before
        # its test): its top is the first of them
        tops = {low for low, high in spans if not any(o < low <= h < high for o, h in spans)}
        for top in tops:
            before = [lines[i].strip() for i in range(top - 3, top)]
            assert ".p2align 6" in before, (lines[top], before)
