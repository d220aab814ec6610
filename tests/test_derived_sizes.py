"""Sizes computed before the loops (`h = len(x) // 2`, `nx * ny`, `x[: n // 2]`, `n % 2`) are derived parameters:
the model stays affine in them, the native entry computes them as Python does, and every build equals the
Python original, at odd and even sizes, 0 and 1 elements included."""

from __future__ import annotations

import warnings

import islpy as isl
import numpy as np
import pytest

import repoos_agent
from repoos_agent.check import check_baseline
from repoos_agent.codegen.loopnest import build_loop_nest
from repoos_agent.ingest import ingest_file, ingest_source, load_kernel
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.legality import prove_legal
from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.kernel import DerivedSize
from repoos_agent.runtime.swap import SwapFallbackWarning
from repoos_agent.store import SQLiteStore
from repoos_agent.store.recording import record_winner
from repoos_agent.target import resolve_target
from repoos_agent.verify import verify_loop_nest

from .conftest import ROOT
from .fixtures import derived_sizes
from .schedule_draws import legal_schedules_keep_the_output

FIXTURE = ROOT / "tests" / "fixtures" / "derived_sizes.py"
NO_STORE = str(ROOT / "tests" / "no-such-store.sqlite")
rng = np.random.default_rng(43)


@pytest.fixture(autouse=True)
def no_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        yield


def _native(function):
    """The function swapped for its baseline build, with no fallback to Python allowed."""
    return repoos_agent.accelerate(graph=NO_STORE)(function)


@pytest.mark.parametrize("name", ["downsample", "first_half", "fold"])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 10])
def test_a_half_size_equals_the_original_at_odd_even_and_empty_lengths(name, n):
    original = getattr(derived_sizes, name)
    x = rng.standard_normal(n)
    got = _native(original)(x)
    assert got.shape == ((n + 1) // 2 if name == "fold" else n // 2,)
    np.testing.assert_allclose(got, original(x), rtol=1e-12)


def test_a_named_half_is_the_size_of_that_name_and_isl_knows_its_floor():
    kernel = load_kernel(FIXTURE, "downsample", {"x": 1})
    assert [(size.name, str(size)) for size in kernel.derived] == [("n_div_2", "n // 2")]
    # One size for `np.empty(n // 2)` and `range(n // 2)`, tied to n: 2 * n_div_2 <= n <= 2 * n_div_2 + 1.
    assert str(kernel.assumed) == "[n, n_div_2] -> {  : -1 + n <= 2n_div_2 <= n }"
    middle = load_kernel(FIXTURE, "middle", {"x": 1})
    assert [(size.name, str(size)) for size in middle.derived] == [("h", "n // 2"), ("n_mod_2", "n % 2")]


@pytest.mark.parametrize("op", ["//", "%"])
@pytest.mark.parametrize("divisor", [-3, 2])
def test_what_isl_is_told_of_a_division_holds_at_pythons_value_alone(op, divisor):
    """Legality and code generation may use the fact; it must admit Python's value, negative sizes included, and
    no other."""
    size = DerivedSize("d", op, AffineExpr((("n", 1),), 1), AffineExpr.of_constant(divisor))
    ctx = isl.Context()
    fact = isl.Set.read_from_str(ctx, f"[n, d] -> {{ : {size.fact()} }}")
    for n in range(-6, 7):
        admitted = fact.intersect(isl.Set.read_from_str(ctx, f"[n, d] -> {{ : n = {n} }}"))
        assert admitted.is_equal(isl.Set.read_from_str(ctx, f"[n, d] -> {{ : n = {n} and d = {size.value({'n': n})} }}"))


@pytest.mark.parametrize("n", [1, 2, 3, 8, 9])
def test_a_remainder_guard_picks_the_middle_as_the_original_does(n):
    x = rng.standard_normal(n)
    np.testing.assert_allclose(_native(derived_sizes.middle)(x), derived_sizes.middle(x), rtol=1e-12)


@pytest.mark.parametrize("n", [-4, -1, 0, 1, 2, 5])
def test_a_remainder_of_a_negative_size_is_pythons(n):
    """`range(n % 3)` runs twice for n = -1 in Python; C's `%` would run it not at all."""
    got, want = np.zeros(5), np.zeros(5)
    _native(derived_sizes.remainder_steps)(got, n)
    derived_sizes.remainder_steps(want, n)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("nx", "ny"), [(0, 3), (3, 0), (1, 1), (3, 4), (5, 2)])
def test_products_of_sizes_size_arrays_and_loops(nx, ny):
    cells = rng.standard_normal(nx * ny + 3)
    np.testing.assert_array_equal(_native(derived_sizes.scaled_cells)(cells, nx, ny), derived_sizes.scaled_cells(cells, nx, ny))
    a = rng.standard_normal((nx, ny))
    np.testing.assert_allclose(_native(derived_sizes.row_totals_after_cells)(a), derived_sizes.row_totals_after_cells(a))


@pytest.mark.parametrize(("n", "b"), [(10, 3), (9, 3), (2, 5), (0, 4), (7, 1)])
def test_a_division_by_a_size_equals_the_original(n, b):
    x = rng.standard_normal(n)
    np.testing.assert_allclose(_native(derived_sizes.whole_blocks)(x, b), derived_sizes.whole_blocks(x, b), rtol=1e-12)


def test_a_division_by_a_zero_size_runs_the_original_which_raises():
    native = _native(derived_sizes.whole_blocks)
    with pytest.warns(SwapFallbackWarning, match="divides by zero"), pytest.raises(ZeroDivisionError):
        native(np.ones(4), 0)


@pytest.mark.parametrize("n", [2, 3, 9])
def test_a_new_array_of_a_size_minus_a_constant_equals_the_original(n):
    x = rng.standard_normal(n)
    np.testing.assert_array_equal(_native(derived_sizes.interior)(x), derived_sizes.interior(x))


@pytest.mark.parametrize("n", [0, 1])
def test_a_new_array_of_a_negative_size_runs_the_original_which_raises(n):
    """An allocation alone would clamp `len(x) - 2` to 0 and return an empty array where NumPy raises."""
    native = _native(derived_sizes.interior)
    warned = pytest.warns(SwapFallbackWarning, match=r"raises ValueError in NumPy: x_d0 - 2 < 0")
    with warned, pytest.raises(ValueError, match="negative dimensions are not allowed"):
        native(np.ones(n))


def test_a_flattened_index_is_refused_with_why_and_what_to_write():
    report = next(r for r in ingest_file(FIXTURE) if r.name == "flat_grid")
    assert not report.analyzable
    first = report.diagnostics[0]
    assert (first.line, first.message) == (
        70,
        "`i * ny` is not affine: it multiplies loop variable `i` by a size (a flattened index such as "
        "`u[i * ny + j]` is not modelled: make `u` a 2-d array and index it `u[i, j]`)",
    )


def test_a_loop_variable_may_not_hide_a_derived_size():
    source = "def f(x):\n    h = len(x) // 2\n    for i in range(h):\n        x[i] = 0.0\n"
    source += "    for h in range(2):\n        x[h] = 1.0\n"
    report = ingest_source(source, "user.py", {"f": {"x": 1}})[0]
    assert [(d.line, d.message) for d in report.diagnostics] == [
        (5, "loop variable `h` hides an argument or size of the same name")
    ]


def test_a_stored_contract_computes_the_derived_sizes_its_allocations_need(tmp_path):
    """A swap from the store has no model: the contract keeps the derived sizes, and the call computes them."""
    graph = str(tmp_path / "graph.sqlite")
    record_winner(SQLiteStore(graph), resolve_target(f"{FIXTURE}:fold", [parse_arg_spec("x=f64[9]")]), None)
    swapped = repoos_agent.swap(derived_sizes.fold, graph=graph)
    assert swapped.native
    for n in (0, 1, 6, 9):
        x = rng.standard_normal(n)
        np.testing.assert_allclose(swapped(x), derived_sizes.fold(x), rtol=1e-12)


@pytest.mark.parametrize(
    ("name", "specs"),
    [
        ("fold", ["x=f64[9]"]),
        ("scaled_cells", ["cells=f64[40]", "nx=5", "ny=7"]),
        ("whole_blocks", ["x=f64[10]", "b=3"]),
        ("remainder_steps", ["x=f64[5]", "n=-1"]),
    ],
)
@pytest.mark.parametrize("compiler", ["c", "mlir"])
def test_check_builds_a_correct_baseline_with_both_backends(name, specs, compiler):
    target = resolve_target(f"{FIXTURE}:{name}", [parse_arg_spec(spec) for spec in specs])
    report = check_baseline(target, compiler=compiler)
    assert report.correct, (report.mismatched, report.max_rel_error)


def test_every_legal_random_schedule_computes_the_baseline_output():
    kernel = load_kernel(FIXTURE, "row_totals_after_cells", {"a": 2})
    values = {"a": rng.standard_normal((7, 5))}
    also = ("interchange(S1.i, S1.j)", "parallelize(S0.i); parallelize(S1.i)")  # threads take the sizes the entry computed
    legal, _ = legal_schedules_keep_the_output(kernel, values, 12, also)
    assert legal


@pytest.mark.parametrize(
    ("name", "ranks", "schedule"),
    [
        ("downsample", {"x": 1}, "tile(S0.i, 4)"),
        ("fold", {"x": 1}, "parallelize(S0.i)"),
        ("middle", {"x": 1}, ""),
        ("row_totals_after_cells", {"a": 2}, "interchange(S1.i, S1.j)"),
    ],
)
def test_z3_proves_the_generated_loops_with_derived_sizes(name, ranks, schedule):
    kernel = load_kernel(FIXTURE, name, ranks)
    verdict = prove_legal(kernel, schedule, explain=False)
    assert verdict.legal, verdict.feedback
    verification = verify_loop_nest(kernel, verdict.lowered, build_loop_nest(kernel, verdict.lowered))
    assert verification.verified, verification.reason
