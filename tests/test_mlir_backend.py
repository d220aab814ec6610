"""The MLIR backend: same results as the Python original and as the C build, for baselines and schedules."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from repoos_agent.check import check_baseline
from repoos_agent.evaluate import evaluate_schedule
from repoos_agent.target import resolve_target

from .conftest import marked_slow
from .test_bundled_kernels import POLYBENCH

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from schedules_table import SCHEDULES


@pytest.mark.parametrize("name", POLYBENCH)
def test_mlir_baseline_matches_python_at_mini(name):
    report = check_baseline(resolve_target(name), "MINI", compiler="mlir")
    assert report.correct, (report.mismatched, report.max_rel_error)


SLOW_BUILDS = ("adi", "correlation", "deriche", "ludcmp", "seidel-2d")
"""Their MLIR modules take 2–9 s each to lower and build: in the slow set, the suite's time."""


@pytest.mark.parametrize("name", marked_slow(sorted(SCHEDULES), SLOW_BUILDS))
def test_mlir_build_of_each_benchmark_schedule_matches_the_baseline(name):
    evaluation = evaluate_schedule(resolve_target(name), SCHEDULES[name], "MINI", compiler="mlir")
    assert evaluation.verdict == "legal" and evaluation.correct, evaluation.feedback


def test_show_mlir_prints_a_parallel_module(repoos):
    result = repoos("show", "gemm", "parallelize(i)", "--mlir")
    assert result.returncode == 0, result.stderr
    assert "func.func @repoos_mlir_kernel" in result.stdout and "scf.parallel" in result.stdout
    assert "memref<?x?xf64> {llvm.noalias}" in result.stdout


def test_check_with_mlir_compiler_reports_json(repoos):
    result = repoos("check", "jacobi-2d", "parallelize(S0.i)", "--compiler", "mlir", "--size", "MINI", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["verdict"] == "legal" and report["correct"] is True and report["verified"] == "true"
