"""Parallel loops run as functions of their own, so the compiler still knows the arrays apart."""

from __future__ import annotations

import pytest

from repoos_agent.codegen.c import generate_c
from repoos_agent.evaluate import evaluate_schedule
from repoos_agent.legality import prove_legal
from repoos_agent.model import Signature
from repoos_agent.target import resolve_target


def _code(name: str, schedule: str) -> str:
    target = resolve_target(name)
    verdict = prove_legal(target.kernel, schedule)
    assert verdict.legal, verdict.feedback
    return generate_c(target.kernel, Signature.of_values(target.kernel, target.inputs("MINI")), verdict.lowered).text


def test_a_parallel_loop_is_a_function_with_restrict_arrays_called_by_each_thread():
    code = _code("gesummv", "parallelize(i)")
    header = code[code.index("static void rp_region_0(") :].split("\n", 1)[0]
    assert "double *restrict A_data" in header and "double *restrict tmp_data" in header
    assert "#pragma omp parallel\n    rp_region_0(" in code


def test_an_inner_parallel_loop_receives_the_enclosing_iterators():
    code = _code("atax", "parallelize(S3.j)")
    header = code[code.index("static void rp_region_0(") :].split("\n", 1)[0]
    assert header.endswith("int64_t c1)")  # the i loop around it


@pytest.mark.parametrize(
    ("name", "schedule"),
    [("gesummv", "parallelize(i)"), ("atax", "parallelize(S0.i); parallelize(S3.j)"), ("symm", "parallelize(j)")],
)
def test_parallel_regions_compute_the_baseline_output(name, schedule):
    evaluation = evaluate_schedule(resolve_target(name), schedule, "SMALL")
    assert evaluation.verdict == "legal" and evaluation.correct, evaluation.feedback
