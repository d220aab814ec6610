"""Matrix-vector products that read one matrix, fused by the heuristic into one pass over it: proved, verified, equal."""

from __future__ import annotations

import pytest

from repoos_agent.agent.heuristic import HeuristicProposer
from repoos_agent.evaluate import evaluate_schedule
from repoos_agent.legality import prove_legal
from repoos_agent.target import resolve_target


@pytest.mark.parametrize(
    ("name", "products"),
    [
        ("numpy:bicg", ("S1", "S3")),  # s = A.T @ r; q = A @ p
        ("numpy:mvt", ("S1", "S4")),  # x1 += A @ y1; x2 += A.T @ y2: each initializer moves along
        ("numpy:atax", ("S1", "S3")),  # y = A.T @ (A @ x): fused by rows, each row's sum finished before it is used
        ("mvt", ("S0", "S1")),  # PolyBench's, written as scalar loops
    ],
)
def test_two_products_of_one_matrix_are_proposed_in_one_pass_and_run_correct(name: str, products: tuple[str, str]) -> None:
    target = resolve_target(name)
    extents = target.kernel.parameter_values(target.inputs("SMALL"))
    numpy_program = target.kernel.numpy_program
    ideas = HeuristicProposer(target.kernel, allow_reassociation=numpy_program, extents=extents).ideas
    one_pass = [idea for idea in ideas if "fused to read A once" in idea.reason]
    assert one_pass, [idea.schedule for idea in ideas]
    for idea in one_pass:
        lowered = prove_legal(target.kernel, idea.schedule, numpy_program).lowered
        first, second = (lowered.loop_ids[statement] for statement in products)
        assert first[0] == second[0], idea.schedule  # one outer loop walks A's rows for both products
        evaluation = evaluate_schedule(target, idea.schedule, "SMALL", allow_reassociation=numpy_program, repeats=1)
        assert (evaluation.verdict, evaluation.correct, evaluation.verified) == ("legal", True, "true"), idea.schedule


def test_products_of_different_matrices_are_not_fused_for_their_reads() -> None:
    target = resolve_target("numpy:gesummv")  # A @ x and B @ x share a vector, not a matrix
    ideas = HeuristicProposer(target.kernel, allow_reassociation=True).ideas
    assert not [idea for idea in ideas if "once" in idea.reason]


@pytest.mark.parametrize(
    ("name", "row_loop", "summed"), [("numpy:bicg", "S1.i", "S1"), ("numpy:mvt", "S1.i", "S4"), ("numpy:atax", "S1.i", "S3")]
)
def test_the_one_pass_row_loop_runs_on_every_core_with_a_copy_of_the_sum_per_thread(name: str, row_loop: str, summed: str) -> None:
    """The row loop carries only a NumPy product's sum into a vector, whose order NumPy leaves to BLAS: legal without
    reassociation, each thread summing into its own copy."""
    target = resolve_target(name)
    ideas = HeuristicProposer(target.kernel, extents=target.kernel.parameter_values(target.inputs("SMALL"))).ideas
    parallel = [
        i.schedule
        for i in ideas
        if "fused to read A once" in i.reason and f"parallelize({row_loop}); privatize({summed})" in i.schedule
    ]
    assert parallel, [idea.schedule for idea in ideas]
    evaluation = evaluate_schedule(target, parallel[0], "SMALL", repeats=1)
    assert (evaluation.verdict, evaluation.correct, evaluation.verified) == ("legal", True, "true"), evaluation.feedback
