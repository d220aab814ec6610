"""What the fsm track does to be fast, each change equal to the Python original on random and edge inputs.

A loop that runs at most a known number of times (`while i < end` after `end = min(i + C, n)`, or
`range(i, min(i + C, n))`) bounds the sums it grows by that count, so Adler-32's inner loop runs without a guard;
where the count does not bound it (the counter lowered before the loop, a `continue` that may skip its step) the
guards stay, and a sum that outgrows them still returns the Python int. A select on a comparison or a bit test is a
conditional move after that very compare or test. The kernels' variants that use them qualify.
"""

from __future__ import annotations

import dataclasses
import random
from functools import cache

import pytest

from kernels.fsm.adler32 import adler32
from kernels.fsm.collatz_lengths import collatz_lengths
from repoos_agent.catalog import find_bundled
from repoos_agent.fsm import ir
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.lower import parameter_names
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.proof import PROVED, REFUTED, prove
from repoos_agent.fsm.proposals import parse_proposal
from repoos_agent.fsm.qualify import QUALIFIED, qualify
from repoos_agent.fsm.rewrites import Step, apply_steps
from repoos_agent.ingest.parse import functions, parse_source, read_source, text
from tests.conftest import ROOT
from tests.fixtures import fsm_perf

FIXTURE = ROOT / "tests/fixtures/fsm_perf.py"
RNG = random.Random(4545)
EDGES = [b"", b"\x00", b"\xff", bytes(range(256)), b"\xff" * 5551, b"\xff" * 5552, b"\xff" * 5553, b"\xff" * 11105]
INPUTS = EDGES + [RNG.randbytes(RNG.randrange(0, 200)) for _ in range(40)] + [RNG.randbytes(RNG.randrange(5000, 12000))]


def _lowered(path, name: str, arguments: tuple[object, ...]) -> ir.Function:
    node = next(n for n in functions(parse_source(read_source(path), str(path))) if text(n.child_by_field_name("name")) == name)
    return lower_for(node, dict(zip(parameter_names(node), arguments, strict=False)))


@cache
def native(name: str, steps: str = "", *arguments: object) -> FsmNative:
    """The fixture `name` lowered for `arguments` (bytes alone by default), after the variant `steps` spells."""
    chosen = parse_proposal(steps) if steps else ()
    function = apply_steps(_lowered(FIXTURE, name, arguments or (b"",)), chosen).function
    return FsmNative(function, getattr(fsm_perf, name))


def body(compiled: FsmNative) -> str:
    return compiled.source[compiled.source.index("rp_body(") :]


def assert_same(compiled: FsmNative, *arguments: object) -> None:
    want, got = outcome(compiled.original, arguments), outcome(compiled, arguments)
    assert difference(want, got) is None, (compiled.function.name, arguments, want, got)


@pytest.mark.parametrize("steps", ["", "unroll(n=4)", "unroll(n=8)"])
def test_adler32_blocks_sum_without_guards_and_equal_the_original(steps: str):
    compiled = native("adler_blocks", steps)
    assert "rp_guard" not in body(compiled)
    for data in INPUTS:
        for value in (1, 0, 0xFFFFFFFF, 0xFFF0FFF0, 12345):
            assert_same(compiled, data, value)


def test_a_range_whose_stop_is_its_start_plus_a_constant_bounds_its_sums():
    compiled = native("range_blocks")
    assert "rp_guard" not in body(compiled)
    for data in INPUTS:
        assert_same(compiled, data)


@pytest.mark.parametrize("name", ["lowered_between", "with_continue"])
def test_a_loop_the_count_does_not_bound_keeps_its_guards(name: str):
    compiled = native(name)
    assert "rp_guard_high(" in body(compiled)
    for data in INPUTS:
        assert_same(compiled, data)


def test_a_sum_past_the_guard_either_way_returns_the_python_int():
    compiled = native("swing")
    assert "rp_guard(" in body(compiled)
    for data in [*INPUTS[:20], b"\xff" * 20000, b"\x00" * 20000, b"\xff\x00" * 20000]:
        assert_same(compiled, data)
    assert compiled(b"\xff" * 20000) == 20000 * (127 << 40)
    assert compiled(b"\x00" * 20000) == -20000 * (128 << 40)


@pytest.mark.parametrize(
    ("name", "suffix"),
    [("pick_lt", "lt"), ("pick_le", "le"), ("pick_gt", "gt"), ("pick_ge", "ge"), ("pick_eq", "eq"), ("pick_ne", "ne")],
)
def test_a_select_on_a_comparison_moves_on_its_own_compare(name: str, suffix: str):
    compiled = native(name, "branchless", b"", 0)
    assert f"rp_select_{suffix}(" in body(compiled)
    for data in INPUTS[:30]:
        for k in (0, 1, 7, 128, 255, 256, -1):
            assert_same(compiled, data, k)


def _kernel(name: str) -> tuple[ir.Function, object, dict[str, object]]:
    bundled = find_bundled(f"fsm:{name}")
    values = bundled.inputs("SMALL")
    return _lowered(bundled.path, bundled.function, tuple(values.values())), bundled.python_function(), values


def test_collatz_without_its_branch_qualifies_and_equals_the_original():
    function, original, values = _kernel("collatz-lengths")
    variant = apply_steps(function, (Step("branchless"),))
    compiled = FsmNative(variant.function, collatz_lengths)
    assert "rp_select_bits(" in body(compiled)
    for start, count in [(1, 300), (27, 5), (1, 0), (0, 3), (-5, 2), (2**59, 3), (2**60, 2), (10**17, 4)]:
        assert_same(compiled, start, count)
    found = qualify(original, function, variant, [tuple(values.values())], prove=prove, budget_s=120.0, max_length=2)
    assert found.verdict == QUALIFIED, found.describe()


@pytest.mark.parametrize("n", [4, 8])
def test_unrolled_adler32_qualifies_without_guards(n: int):
    function, original, values = _kernel("adler32")
    variant = apply_steps(function, (Step("unroll", {"n": n}),))
    assert "rp_guard" not in body(FsmNative(variant.function, adler32))
    found = qualify(original, function, variant, [tuple(values.values())], prove=prove, budget_s=120.0)
    assert found.verdict == QUALIFIED, found.describe()


def test_collatz_with_its_select_sides_swapped_is_refuted_by_the_changed_statements():
    function = _kernel("collatz-lengths")[0]
    variant = apply_steps(function, (Step("branchless"),))

    def swapped(statements: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        changed = []
        for statement in statements:
            if isinstance(statement, ir.Assign) and isinstance(statement.value, ir.Select):
                value = statement.value
                statement = dataclasses.replace(statement, value=dataclasses.replace(value, then=value.orelse, orelse=value.then))
            elif isinstance(statement, ir.While | ir.ForRange):
                statement = dataclasses.replace(statement, body=swapped(statement.body))
            changed.append(statement)
        return tuple(changed)

    wrong = dataclasses.replace(variant.function, body=swapped(variant.function.body))
    proof = prove(function, wrong)
    assert proof.verdict == REFUTED and proof.method == "z3", proof.reason
    assert prove(function, variant.function).verdict == PROVED
