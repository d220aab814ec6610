"""User-style kernels: ingested, built and equal to the original; non-affine code refused at its line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from repoos_agent.backends import build_baseline
from repoos_agent.check import check_baseline
from repoos_agent.errors import KernelRuntimeError, NotAnalyzableError, SourceError
from repoos_agent.ingest import ingest_file, ingest_source, load_kernel
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.model import Signature
from repoos_agent.target import resolve_target

from .conftest import EXAMPLES

USER = EXAMPLES / "user_kernels.py"
NOT_AFFINE = EXAMPLES / "not_affine.py"

CASES = {
    "lower_triangular_solve": ["L=f64[40,40]", "b=f64[40]", "x=f64[40]"],
    "back_substitution": ["U=f64[40,40]", "y=f64[40]", "x=f64[40]"],
    "strided_scale": ["n=101", "alpha=2.5", "v=f64[101]", "out=f64[101]"],
    "row_norms": ["A=f32[30,40]", "norms=f32[30]"],
    "softplus_rows": ["m=20", "n=30", "X=f64[m,n]", "Y=f64[m,n]"],
    "blur_time_steps": ["steps=4", "n=30", "A=f64[n,n]", "B=f64[n,n]"],
    "band_matvec": ["n=40", "A=f64[n,n]", "x=f64[n]", "y=f64[n]"],
    "clipped_prefix_max": ["n=50", "v=i32[n]", "out=i32[n]"],
    "lower_triangle_update": ["n=40", "alpha=0.5", "x=f64[n]", "C=f64[n,n]"],
    "scaled_copy": ["x=f64[100]", "y=f64[100]"],
    "column_sums": ["A=f64[30,20]", "sums=f64[20]"],
}


@pytest.mark.parametrize("function", sorted(CASES))
def test_user_kernel_baseline_matches_python(function):
    target = resolve_target(f"{USER}:{function}", [parse_arg_spec(s) for s in CASES[function]])
    report = check_baseline(target)
    assert report.correct, report.mismatched
    assert report.instances > 0


def test_every_user_kernel_is_affine():
    reports = ingest_file(USER)
    assert {r.name for r in reports} == set(CASES)
    assert all(r.track == "affine" for r in reports), [(r.name, r.diagnostics) for r in reports]


@pytest.mark.parametrize(
    ("function", "loop", "compiler"),
    [("scaled_copy", "i", "c"), ("column_sums", "j", "c"), pytest.param("column_sums", "j", "mlir", marks=pytest.mark.slow)],
)
def test_sizes_read_in_the_loop_bounds_build_and_equal_python(repoos, function, loop, compiler):
    """`range(len(x))` and `range(A.shape[0])` with no `n = ...` line: once every build was a compile error.
    The baseline equals the Python original, and the parallel schedule equals the baseline."""
    target = f"{USER}:{function}"
    args = [word for spec in CASES[function] for word in ("--arg", spec)]
    for schedule in ([], [f"parallelize({loop})"]):
        result = repoos("check", target, *schedule, *args, "--compiler", compiler, "--json")
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["correct"] is True, report
    assert report["verdict"] == "legal" and loop in report["parallel_loops"]


def test_model_reads_triangular_bounds_and_reverse_loops():
    kernel = load_kernel(USER, "back_substitution")
    s1 = kernel.statement("S1")
    assert s1.iterators == ("i", "j")
    assert kernel.parameters == ("n",)
    assert str(s1.domain) == "[n] -> { S1[i, j] : 0 <= i < n and i < j < n }"
    assert "-i" in str(kernel.original_schedule)  # counts down


def test_scalar_reduction_is_a_zero_dimensional_array():
    kernel = load_kernel(USER, "row_norms")
    total = kernel.array("total")
    assert total.rank == 0 and total.written and not total.is_argument
    assert kernel.statement("S1").is_reduction


@pytest.mark.parametrize(
    ("function", "line", "fragment"),
    [
        ("bucket", 8, "subscript `out[values[i] // 10]` is neither affine in the loop variables nor an index-array element"),
        ("until_converged", 14, "`while` loops are not modelled"),
        ("first_negative", 23, "`break` leaves the loop early"),
    ],
)
def test_non_affine_code_is_refused_at_its_line(function, line, fragment):
    report = {r.name: r for r in ingest_file(NOT_AFFINE)}[function]
    assert not report.analyzable and report.track == "other"
    assert report.diagnostics[0].line == line
    assert fragment in report.diagnostics[0].message
    with pytest.raises(NotAnalyzableError, match=rf"not_affine.py:{line}:\d+: .*{function}"):
        load_kernel(NOT_AFFINE, function)


def test_tracks_tell_orm_and_state_machines_apart():
    tracks = {r.name: r.track for r in ingest_file(NOT_AFFINE)}
    assert tracks["adults"] == "tabular"
    assert tracks["run_length_decode"] == "fsm"


def test_syntax_error_names_line_and_column():
    with pytest.raises(SourceError, match=r"broken.py:3:\d+: syntax error"):
        ingest_source("def f(A):\n    for i in range(3):\n        A[i] = = 1\n", "broken.py")


def test_native_refuses_arrays_smaller_than_the_loops_reach():
    kernel_target = resolve_target(f"{USER}:band_matvec", [parse_arg_spec(s) for s in CASES["band_matvec"]])
    values = kernel_target.inputs(None)
    native = build_baseline(kernel_target.kernel, Signature.of_values(kernel_target.kernel, values))
    values["y"] = np.zeros(10)
    with pytest.raises(KernelRuntimeError, match=r"index 0 of `y` goes up to n - 1, but its shape is \(10,\)"):
        native(values)


TRICKY = Path(__file__).parent / "fixtures" / "tricky_kernels.py"


@pytest.mark.parametrize(
    ("function", "specs"),
    [
        ("names_like_generated_ones", ["n=12", "c0=9", "A=f64[12,9]"]),
        ("float32_recursion", ["n=4000", "alpha=0.3", "x=f32[4000]", "y=f32[4000]"]),
        ("integer_wraparound", ["n=100", "a=i32[100]", "b=i32[100]"]),
    ],
)
def test_tricky_kernels_match_python_exactly(function, specs):
    report = check_baseline(resolve_target(f"{TRICKY}:{function}", [parse_arg_spec(s) for s in specs]))
    assert report.correct and report.max_rel_error == 0.0, report


def test_a_size_in_a_bound_whose_name_is_taken_is_refused():
    """`len(x)` is modelled as `x_d0`; a function that already uses the name would loop to the other value."""
    report = {r.name: r for r in ingest_file(TRICKY)}["size_named_like_a_shape"]
    assert not report.analyzable
    assert report.diagnostics[0].line == 57
    assert "`len(x)` is modelled as a size named `x_d0`, which the function already uses" in report.diagnostics[0].message


def test_reserved_isl_word_as_loop_name_is_refused_with_reason():
    report = {r.name: r for r in ingest_file(TRICKY)}["reserved_loop_name"]
    assert not report.analyzable
    assert "loop variable `max` is a reserved word" in report.diagnostics[0].message
