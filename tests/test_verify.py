"""Z3 translation validation: proves the generated loop nests, refutes broken ones with a counterexample."""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from repoos_agent import evaluate as evaluate_module
from repoos_agent.codegen.loopnest import Block, For, If, IntConst, LaneSplit, Let, LoopNest, Op, Region, Unrolled
from repoos_agent.codegen.passes import transformed_nest
from repoos_agent.evaluate import evaluate_schedule
from repoos_agent.legality import prove_legal
from repoos_agent.model import Signature
from repoos_agent.target import resolve_target
from repoos_agent.verify import translation, verify_loop_nest

from .conftest import marked_slow

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from schedules_table import SCHEDULES


def nest_for(name: str, schedule: str):
    """The kernel, the proved schedule and the nest after every pass: what the backends print."""
    target = resolve_target(name)
    verdict = prove_legal(target.kernel, schedule)
    assert verdict.legal, verdict.feedback
    signature = Signature.of_values(target.kernel, target.inputs("MINI"))
    return target.kernel, verdict.lowered, transformed_nest(target.kernel, verdict.lowered, signature)


def rewrite(node, change):
    """Apply `change` to every node of a loop nest (it returns a replacement or None)."""
    node = change(node) or node
    if isinstance(node, Block):
        return replace(node, children=tuple(rewrite(child, change) for child in node.children))
    if isinstance(node, If):
        otherwise = rewrite(node.otherwise, change) if node.otherwise else None
        return replace(node, then=rewrite(node.then, change), otherwise=otherwise)
    if isinstance(node, For | Let):
        return replace(node, body=rewrite(node.body, change))
    if isinstance(node, Region | LaneSplit | Unrolled):
        return replace(node, loop=rewrite(node.loop, change))
    return node


SLOW_PROOFS = ("adi", "deriche", "ludcmp", "seidel-2d")
"""Z3 takes 2–6 s on each of their nests: in the slow set, the suite's time."""


@pytest.mark.parametrize("name", marked_slow(sorted(SCHEDULES), SLOW_PROOFS))
def test_every_hand_written_benchmark_schedule_is_verified(name, monkeypatch):
    # seidel-2d's skewed wavefront takes ~3.6 s of the 5 s per-query budget on a quiet machine; this
    # test is about what Z3 can prove, not about the search's time budget, so it gets more time.
    monkeypatch.setattr(translation, "QUERY_TIMEOUT_MS", 30_000)
    kernel, lowered, nest = nest_for(name, SCHEDULES[name])
    verification = verify_loop_nest(kernel, lowered, nest)
    assert verification.verified is True, (verification.reason, verification.counterexample)


def test_off_by_one_tile_bound_loses_instances():
    kernel, lowered, nest = nest_for("gemm", "distribute(S0, S1); tile(S1.i, k, S1.j, 32, 32, 32)")

    def shorter(node):
        if isinstance(node, For) and node.iterator == "c7":
            return replace(node, cond=Op(node.cond.op, (node.cond.args[0], Op("-", (node.cond.args[1], IntConst(1))))))
        return None

    verification = verify_loop_nest(kernel, lowered, LoopNest(rewrite(nest.root, shorter), nest.bounds))
    assert verification.verified is False
    assert "never runs an instance of S1" in verification.reason
    assert verification.counterexample.startswith("with ni=") and "S1(i=" in verification.counterexample


def without_remainder(node):
    return replace(node, remainder=False) if isinstance(node, For) and node.unroll else None


def test_dropped_unroll_remainder_loses_instances():
    kernel, lowered, nest = nest_for("gemm", "unroll(S1.j, 4)")
    broken = rewrite(nest.root, without_remainder)
    verification = verify_loop_nest(kernel, lowered, LoopNest(broken, nest.bounds))
    assert verification.verified is False and "never runs an instance of S1" in verification.reason


def test_parallel_loop_with_carried_dependence_is_a_race():
    kernel, lowered, nest = nest_for("gemm", "")
    k_loop = lambda n: replace(n, parallel=True) if isinstance(n, For) and n.iterator == "c3" and isinstance(n.body, For) else None  # noqa: E731
    verification = verify_loop_nest(kernel, lowered, LoopNest(rewrite(nest.root, k_loop), nest.bounds))
    assert verification.verified is False
    assert "loop `k` (parallel or vectorized) has a race" in verification.reason
    first, second = re.findall(r"S1\(i=(-?\d+), k=(-?\d+), j=(-?\d+)\)", verification.counterexample)
    assert first[0] == second[0] and first[2] == second[2] and first[1] != second[1]  # same C[i][j], two k


def test_reordered_dependence_is_refuted():
    kernel, lowered, nest = nest_for("gemm", "")

    def swap_block(node):
        if isinstance(node, Block) and len(node.children) == 2:
            return replace(node, children=node.children[::-1])
        return None

    verification = verify_loop_nest(kernel, lowered, LoopNest(rewrite(nest.root, swap_block), nest.bounds))
    assert verification.verified is False and "runs backwards" in verification.reason


def test_a_refuted_nest_is_never_run(monkeypatch):
    def broken_nest(kernel, lowered, signature):
        nest = transformed_nest(kernel, lowered, signature)
        return LoopNest(rewrite(nest.root, without_remainder), nest.bounds)

    monkeypatch.setattr(evaluate_module, "transformed_nest", broken_nest)
    monkeypatch.setattr(evaluate_module, "build_native", lambda *_: pytest.fail("a refuted kernel must not be built"))
    evaluation = evaluate_schedule(resolve_target("gemm"), "unroll(S1.j, 4)", "MINI")
    assert evaluation.verdict == "verification_failed" and evaluation.verified == "false"
    assert "counterexample with ni=" in evaluation.feedback


def test_evaluation_reports_z3_verified():
    evaluation = evaluate_schedule(resolve_target("jacobi-2d"), "parallelize(S0.i); parallelize(S1.i)", "MINI")
    assert evaluation.verdict == "legal" and evaluation.verified == "true" and evaluation.verify_ms > 0
