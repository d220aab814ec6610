"""Stacked products (`@`, `np.matmul`, `np.dot` over leading batch dimensions, as NumPy's `matmul` broadcasts
them) and `np.linalg.cholesky`: equal to NumPy on random non-zero inputs, and raising where NumPy raises."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import repoos_agent
from repoos_agent.backends import build_native
from repoos_agent.errors import CompileError, KernelRuntimeError
from repoos_agent.ingest import ingest_source, load_kernel
from repoos_agent.legality.prove import prove_legal
from repoos_agent.measure.layout import fresh_copy
from repoos_agent.model import Signature
from repoos_agent.runtime.swap import SwapFallbackWarning

from .conftest import ROOT
from .fixtures import numpy_stacks
from .schedule_draws import legal_schedules_keep_the_output

FIXTURE = ROOT / "tests" / "fixtures" / "numpy_stacks.py"
STORE = str(ROOT / "tests" / "no-such-store.sqlite")


@pytest.fixture
def native():
    """The fixture's functions swapped for their baseline builds, with no fallback to Python allowed."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        yield repoos_agent.accelerate(graph=STORE)


def _same_as_numpy(swapped, function, *arguments, rtol: float = 1e-12) -> None:
    want_arguments = [a.copy() if isinstance(a, np.ndarray) else a for a in arguments]
    want = function(*want_arguments)
    got = swapped(*arguments)
    assert swapped.route == "baseline build (source order)", swapped.route
    if want is not None:
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    for mine, theirs in zip(arguments, want_arguments, strict=True):
        if isinstance(mine, np.ndarray):
            np.testing.assert_allclose(mine, theirs, rtol=rtol, atol=rtol)


PRODUCTS = [  # function, shapes of its array arguments
    ("batched", [(3, 4, 5), (3, 5, 2)]),
    ("batched", [(1, 1, 1), (1, 1, 1)]),
    ("batched_matmul", [(2, 3, 4, 5), (5, 2)]),
    ("batched_times_vector", [(3, 4, 5), (5,)]),
    ("vector_times_batch", [(4,), (3, 4, 5)]),
    ("batched_dot", [(3, 4, 5), (5, 2)]),
    ("stretched", [(4, 5), (3, 5, 2)]),
]


@pytest.mark.parametrize(("name", "shapes"), PRODUCTS, ids=[f"{n}-{len(s[0])}x{len(s[1])}" for n, s in PRODUCTS])
def test_a_stack_of_products_equals_numpy_s_matmul(native, name, shapes):
    rng = np.random.default_rng(len(name))
    function = getattr(numpy_stacks, name)
    _same_as_numpy(native(function), function, *(rng.uniform(0.5, 2.0, shape) for shape in shapes))


def test_a_batched_product_reshaped_in_place_equals_numpy(native):
    rng = np.random.default_rng(3)
    nr, nq, np_ = 3, 4, 6
    a, c4 = rng.uniform(0.5, 2.0, (nr, nq, np_)), rng.uniform(0.5, 2.0, (np_, np_))
    _same_as_numpy(native(numpy_stacks.transformed_in_place), numpy_stacks.transformed_in_place, nr, nq, np_, a, c4)


def test_sizes_given_as_arguments_that_do_not_match_the_array_run_the_original_which_raises():
    """`np.reshape(A, (NR, NQ, 1, NP))` with NR, NQ other than A's extents (12 elements either way): NumPy's
    reshape succeeds, and the assignment back into A raises; the swapped function raises the same error."""
    swapped = repoos_agent.accelerate(graph=STORE)(numpy_stacks.transformed_in_place)
    a, c4 = np.ones((3, 4, 5)), np.ones((5, 5))
    swapped(3, 4, 5, a.copy(), c4)
    with pytest.warns(SwapFallbackWarning, match="does not hold"), pytest.raises(ValueError, match="broadcast"):
        swapped(2, 6, 5, a, c4)


def test_a_product_of_extents_that_do_not_contract_runs_the_original_which_raises():
    swapped = repoos_agent.accelerate(graph=STORE)(numpy_stacks.product)
    swapped(np.ones((4, 3)), np.ones((3, 2)))
    with pytest.warns(SwapFallbackWarning, match="does not hold"), pytest.raises(ValueError, match="matmul"):
        swapped(np.ones((4, 3)), np.ones((5, 2)))


def test_a_stack_of_one_product_runs_as_one_blas_call_and_a_longer_stack_stays_loops():
    rng = np.random.default_rng(4)
    one = load_kernel(FIXTURE, "lifted", {"a": 2, "b": 2})
    legal, _ = legal_schedules_keep_the_output(
        one, {"a": rng.uniform(0.5, 2.0, (4, 5)), "b": rng.uniform(0.5, 2.0, (5, 3))}, 1, also=["blas(S1)"]
    )
    assert "blas(S1)" in legal
    stack = load_kernel(FIXTURE, "batched", {"a": 3, "b": 3})
    verdict = prove_legal(stack, "blas(S1)", False, explain=False)
    assert not verdict.legal and "S0 and S1 are not two nests of their own" in verdict.feedback, verdict.feedback


@pytest.mark.parametrize(
    ("body", "ranks", "message"),
    [
        (
            "np.dot(a, b)",
            {"a": 3, "b": 3},
            "`np.dot(a, b)`: `np.dot` of arrays of rank 3 and 3 pairs every matrix of the first with every one of the "
            "second, which is not modelled; write `@` (`np.matmul`) for a stack of products",
        ),
        (
            "a.dot(b)",
            {"a": 2, "b": 3},
            "`a.dot(b)`: `.dot()` of arrays of rank 2 and 3 pairs every matrix",
        ),
        ("np.ones((2, 3)) @ np.ones((4, 2))", {}, "the product contracts extents 3 and 4, which differ"),
        (
            "np.linalg.cholesky(a)",
            {"a": 3},
            "`np.linalg.cholesky(a)`: `np.linalg.cholesky` of an array of rank 3 is not modelled (2)",
        ),
        ("np.linalg.cholesky(np.ones((2, 3)))", {}, "the matrix is 2 by 3; NumPy factors square matrices only"),
        ("np.linalg.cholesky(a, upper=True)", {"a": 2}, "`upper=` of `np.linalg.cholesky` is not modelled"),
    ],
)
def test_what_is_not_modelled_is_refused_with_what_to_write(body, ranks, message):
    source = f"import numpy as np\n\n\ndef f(a, b):\n    return {body}\n"
    report = ingest_source(source, "user.py", {"f": ranks})[0]
    assert not report.analyzable
    assert message in report.diagnostics[0].message, report.diagnostics[0].message


def _positive_definite(n: int, dtype, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).uniform(-1.0, 1.0, (n, n))
    return (x @ x.T + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64], ids=["float64", "float32", "int64"])
@pytest.mark.parametrize("n", [1, 2, 7])
def test_the_cholesky_factor_equals_numpy_s_with_numpy_s_dtype(native, n, dtype):
    """Integers are factored in float64, float32 in float32, as NumPy's LAPACK call does."""
    a = _positive_definite(n, np.float64, n).round() if dtype is np.int64 else _positive_definite(n, dtype, n)
    a = a.astype(dtype)
    rtol = 1e-5 if dtype is np.float32 else 1e-12
    _same_as_numpy(native(numpy_stacks.factor), numpy_stacks.factor, a, rtol=rtol)


@pytest.mark.parametrize("n", [1, 2, 9])
def test_the_factor_plus_the_upper_triangle_in_place_equals_numpy(native, n):
    _same_as_numpy(native(numpy_stacks.factored), numpy_stacks.factored, _positive_definite(n, np.float64, n))


def test_the_factor_reads_only_the_lower_triangle(native):
    a = _positive_definite(5, np.float64, 1)
    scribbled = np.tril(a) + np.triu(np.full_like(a, 7.0), k=1)
    np.testing.assert_allclose(native(numpy_stacks.factor)(scribbled), np.linalg.cholesky(a), rtol=1e-12)


@pytest.mark.parametrize(
    "matrix",
    [[[1.0, 2.0], [2.0, 1.0]], [[-1.0]], [[-0.0]], [[4.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]]],
    ids=["indefinite", "negative", "negative-zero", "singular"],
)
def test_a_matrix_that_is_not_positive_definite_raises_numpy_s_error_through_the_swapped_function(matrix):
    swapped = repoos_agent.accelerate(graph=STORE)(numpy_stacks.factored)
    swapped(_positive_definite(len(matrix), np.float64, 0))
    a = np.array(matrix)
    before = a.copy()
    with (
        pytest.warns(SwapFallbackWarning, match=r"`np.linalg.cholesky\(A\)`: the matrix is not positive definite"),
        pytest.raises(np.linalg.LinAlgError, match="not positive definite"),
    ):
        swapped(a)
    np.testing.assert_array_equal(a, before)


def test_a_nan_pivot_passes_and_the_factor_holds_nans_as_numpy_s(native):
    """NumPy's OpenBLAS takes a NaN pivot for a positive one (reference LAPACK would raise): so does the kernel."""
    for matrix in ([[np.nan, 0.0], [0.0, 1.0]], [[1.0, np.inf], [np.inf, np.inf]]):
        a = np.array(matrix)
        np.testing.assert_array_equal(native(numpy_stacks.factor)(a), np.linalg.cholesky(a))


def test_a_matrix_that_is_not_square_runs_the_original_which_raises():
    swapped = repoos_agent.accelerate(graph=STORE)(numpy_stacks.factor)
    swapped(_positive_definite(2, np.float64, 0))
    with pytest.warns(SwapFallbackWarning, match="does not hold"), pytest.raises(np.linalg.LinAlgError, match="square"):
        swapped(np.ones((2, 3)))


def test_the_mlir_backend_refuses_a_kernel_that_may_fail():
    kernel = load_kernel(FIXTURE, "factor", {"A": 2})
    signature = Signature.of_values(kernel, {"A": np.eye(3)})
    with pytest.raises(CompileError, match=r"the MLIR backend has no failures reported after the computation \(Failure: "):
        build_native(kernel, signature, backend="mlir")


def test_what_the_function_wrote_before_the_failure_is_what_the_original_leaves():
    """`B[:] = 2.0 * A` runs before the factorization fails: the kernel's writes are undone, and the original
    writes B again before it raises, as it always did."""
    swapped = repoos_agent.accelerate(graph=STORE)(numpy_stacks.factor_twice)
    swapped(_positive_definite(3, np.float64, 0), np.zeros((3, 3)))
    a, b = np.array([[1.0, 2.0], [2.0, 1.0]]), np.zeros((2, 2))
    with pytest.warns(SwapFallbackWarning), pytest.raises(np.linalg.LinAlgError):
        swapped(a, b)
    np.testing.assert_array_equal(b, 2.0 * a)


def test_every_legal_random_schedule_of_the_factorization_computes_the_baseline_output_and_still_fails():
    """Each legal schedule computes the factor, and still reports a matrix that is not positive definite."""
    kernel = load_kernel(FIXTURE, "factored", {"A": 2})
    also = ("parallelize(S8.j)", "unroll(S2.l, 2); unroll(S5.j, 4)", "parallelize(S9.i); vectorize(S9.j, 4)")
    legal, _ = legal_schedules_keep_the_output(kernel, {"A": _positive_definite(6, np.float64, 5)}, 10, also)
    assert len(legal) > len(also), f"no legal schedule of the factorization was drawn: {legal}"
    indefinite = {"A": _positive_definite(6, np.float64, 5) - 7.0 * np.eye(6)}
    signature = Signature.of_values(kernel, indefinite)
    for text in legal:
        build = build_native(kernel, signature, prove_legal(kernel, text, False, explain=False).lowered)
        with pytest.raises(KernelRuntimeError, match="the matrix is not positive definite"):
            build(fresh_copy(indefinite))
