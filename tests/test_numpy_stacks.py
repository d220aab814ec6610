"""Stacked products (`@`, `np.matmul`, `np.dot` over leading batch dimensions, as NumPy's `matmul` broadcasts
them) and `np.linalg.cholesky`: equal to NumPy on random non-zero inputs, and raising where NumPy raises."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import repoos_agent
from repoos_agent.ingest import ingest_source
from repoos_agent.runtime.swap import SwapFallbackWarning

from .conftest import ROOT
from .fixtures import numpy_stacks

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
    ],
)
def test_what_differs_from_matmul_is_refused_with_what_to_write(body, ranks, message):
    source = f"import numpy as np\n\n\ndef f(a, b):\n    return {body}\n"
    report = ingest_source(source, "user.py", {"f": ranks})[0]
    assert not report.analyzable
    assert message in report.diagnostics[0].message, report.diagnostics[0].message
