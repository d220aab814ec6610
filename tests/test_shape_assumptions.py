"""Sizes NumPy's broadcasting requires equal are assumed by the generated code and checked at its entry.

`out[:] = lap[:-2] + ...` runs only when `out` has `a`'s extent less 4: NumPy raises otherwise. isl builds
the loops for those sizes alone, so a shifted fusion of two sweeps is one loop after a short prologue, not
a case split over sizes no call can have; Z3 proves the loops under the same assumption; and a call with
other sizes is refused before anything runs, where NumPy would raise too.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import repoos_agent
from repoos_agent.codegen.loopnest import Block, Call, For, If, Let, Node, build_loop_nest
from repoos_agent.evaluate import evaluate_schedule
from repoos_agent.ingest import load_kernel
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.runtime.swap import SwapFallbackWarning
from repoos_agent.schedule import apply_schedule, parse_schedule
from repoos_agent.target import resolve_target

from .conftest import ROOT
from .fixtures import numpy_programs

PROGRAMS = ROOT / "tests" / "fixtures" / "numpy_programs.py"
FUSED = "shift(S1.i, 2); fuse(S0, S1, 1)"


def test_the_extents_broadcasting_ties_together_are_the_kernels_assumptions():
    kernel = load_kernel(PROGRAMS, "smooth_twice", {"a": 1, "out": 1})
    assert [f"{a} = {b}" for a, b in kernel.assumptions] == ["a_d0 - 4 = out_d0"]


def test_two_fused_sweeps_are_one_loop_after_a_prologue_proved_and_correct():
    target = resolve_target(f"{PROGRAMS}:smooth_twice", [parse_arg_spec(s) for s in ("a=f64[300]", "out=f64[296]")])
    evaluation = evaluate_schedule(target, FUSED, repeats=1)
    assert evaluation.verdict == "legal" and evaluation.correct and evaluation.verified == "true", evaluation.feedback
    nest = build_loop_nest(target.kernel, apply_schedule(target.kernel, parse_schedule(FUSED)))
    loops = _outer_loops(nest.root)
    # The first two elements of `lap`, then both sweeps in one loop: no case split over the sizes.
    assert [sorted(_statements(loop)) for loop in loops] == [["S0"], ["S0", "S1"]], nest.root


def _outer_loops(node: Node) -> list[For]:
    if isinstance(node, For):
        return [node]
    if isinstance(node, Block):
        return [loop for child in node.children for loop in _outer_loops(child)]
    if isinstance(node, If):
        return _outer_loops(node.then) + (_outer_loops(node.otherwise) if node.otherwise is not None else [])
    return _outer_loops(node.body) if isinstance(node, Let) else []


def _statements(node: Node) -> set[str]:
    if isinstance(node, Call):
        return {node.statement}
    children = {
        For: lambda n: [n.body],
        Let: lambda n: [n.body],
        Block: lambda n: list(n.children),
        If: lambda n: [n.then] + ([n.otherwise] if n.otherwise is not None else []),
    }[type(node)](node)
    return set().union(*(_statements(child) for child in children))


def test_a_call_numpy_would_refuse_to_broadcast_is_refused_before_it_runs():
    a, out = np.random.default_rng(9).standard_normal(20), np.zeros(17)
    with pytest.raises(ValueError):
        numpy_programs.smooth_twice(a, out.copy())  # NumPy: shapes (17,) and (14,) do not broadcast
    native = repoos_agent.accelerate(graph=str(ROOT / "tests" / "no-such-store.sqlite"))(numpy_programs.smooth_twice)
    with warnings.catch_warnings(), pytest.raises(SwapFallbackWarning, match="do not broadcast"):
        warnings.simplefilter("error", SwapFallbackWarning)
        native(a, out)
    assert not out.any()  # refused before any write


def test_the_heuristic_shifts_hdiffs_sweeps_into_one_nest_and_runs_its_tiles_as_a_wavefront():
    from repoos_agent.agent.heuristic import HeuristicProposer

    target = resolve_target("numpy:hdiff")
    proposer = HeuristicProposer(target.kernel)
    [wavefront, *_] = [idea for idea in proposer.ideas if "skew(S0.i_t, S0.j_t, 1)" in idea.schedule]
    # The fluxes read the Laplacian one row and column on, the update reads the fluxes one more.
    for shifted, rows in (("S1", 1), ("S2", 1), ("S3", 1), ("S4", 1), ("S5", 2)):
        assert f"shift({shifted}.i, {rows}); shift({shifted}.j, {rows})" in wavefront.schedule
    assert "fuse(S4, S5, 3)" in wavefront.schedule and "parallelize(S0.i_t)" in wavefront.schedule
    assert proposer.ideas[0] is wavefront  # ahead of the unshifted fusions; ideas are all proved legal


@pytest.mark.slow
def test_hdiffs_wavefront_is_proved_by_z3_and_computes_the_baseline_output():
    target = resolve_target("numpy:hdiff")
    shifts = "".join(f"shift(S{n}.i, {r}); shift(S{n}.j, {r}); " for n, r in ((1, 1), (2, 1), (3, 1), (4, 1), (5, 2)))
    fusions = "; ".join(f"fuse(S{n}, S{n + 1}, 3)" for n in range(5))
    wavefront = (
        f"{shifts}{fusions}; tile(S0.i, S0.j, 32, 32); skew(S0.i_t, S0.j_t, 1); interchange(S0.i_t, S0.j_t); parallelize(S0.i_t)"
    )
    evaluation = evaluate_schedule(target, wavefront, "SMALL", repeats=1)
    assert evaluation.verdict == "legal" and evaluation.correct and evaluation.verified == "true", evaluation.feedback
