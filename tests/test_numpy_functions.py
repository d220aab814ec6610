"""NumPy reductions and scans, each one registered lowering (`ingest.numpy`): equal to NumPy at 1 element, 2x2
and a small size, in float32, float64 and int64, with NumPy's result dtype. Sums are pairwise as NumPy's are,
so float results agree to a few units in the last place; the norms without `axis` NumPy takes with BLAS's
`dot`, whose order of additions differs, so those agree to the float tolerance."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import repoos_agent
from repoos_agent.ingest import ingest_source
from repoos_agent.runtime.swap import SwapFallbackWarning

from .conftest import ROOT
from .fixtures import numpy_functions

FIXTURE = ROOT / "tests" / "fixtures" / "numpy_functions.py"
TOLERANCE = {np.float32: 2e-6, np.float64: 1e-13, np.int64: 0.0}

VECTORS = [(1,), (2,), (9,)]
MATRICES = [(1, 1), (2, 2), (5, 7)]
ANY = VECTORS + MATRICES
CASES = [
    ("variance", ANY),
    ("variance_rows", MATRICES),
    ("variance_kept", MATRICES),
    ("deviation", ANY),
    ("deviation_columns", MATRICES),
    ("averaged", ANY),
    ("weighted", ANY),
    ("weighted_rows", MATRICES),
    ("weighted_same", MATRICES),
    ("running_sum", VECTORS),
    ("running_sum_rows", MATRICES),
    ("running_sum_columns", MATRICES),
    ("running_product", MATRICES),
    ("largest_at", ANY),
    ("largest_at_rows", MATRICES),
    ("smallest_at", MATRICES),
    ("smallest_at_flat", ANY),
    ("rows_with_any", MATRICES),
    ("where_all", MATRICES),
    ("nonzero", ANY),
    ("nonzero_columns", MATRICES),
    ("length", ANY),
    ("length_one", VECTORS),
    ("length_max", VECTORS),
    ("row_lengths", MATRICES),
    ("frobenius", MATRICES),
    ("normalized", MATRICES),
]


@pytest.fixture(scope="module")
def native():
    """The fixture's functions swapped for their baseline builds, with no fallback to Python allowed."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        yield repoos_agent.accelerate(graph=str(ROOT / "tests" / "no-such-store.sqlite"))


def _inputs(name: str, shape: tuple[int, ...], dtype, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    if dtype is np.int64:  # few values: ties, zeros and repeated maxima
        x = rng.integers(-2, 3, shape).astype(np.int64)
    else:
        x = rng.uniform(-1.0, 1.0, shape).astype(dtype)
    if not name.startswith("weighted"):
        return [x]
    weights_shape = shape[-1:] if name == "weighted_rows" else shape
    return [x, rng.uniform(0.5, 2.0, weights_shape).astype(dtype)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64], ids=["float32", "float64", "int64"])
@pytest.mark.parametrize(("name", "shapes"), CASES, ids=[name for name, _ in CASES])
def test_equal_to_numpy_with_numpy_s_dtype(native, name, shapes, dtype):
    function = getattr(numpy_functions, name)
    if dtype is np.int64 and name.startswith("weighted"):
        pytest.skip("integer weights: NumPy's average of them is float64 like the float64 case")
    for seed, shape in enumerate(shapes):
        swapped = native(function)  # one build per rank: a swapped function keeps the ranks of its first call
        arguments = _inputs(name, shape, dtype, seed)
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # std with ddof=1 of one element: NaN, as NumPy
            want = function(*[a.copy() for a in arguments])
        got = swapped(*arguments)
        assert swapped.route == "baseline build (source order)", swapped.route
        assert np.asarray(got).dtype == np.asarray(want).dtype, (shape, np.asarray(got).dtype, np.asarray(want).dtype)
        assert np.shape(got) == np.shape(want), shape
        rtol = TOLERANCE[np.float32 if np.asarray(want).dtype == np.float32 else np.float64]
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True, err_msg=str(shape))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_arg_extrema_keep_the_first_tie_and_the_first_nan(native, dtype):
    x = np.array([[1.0, 3.0, 3.0, 0.0], [np.nan, 2.0, np.nan, 5.0], [4.0, 4.0, 1.0, 4.0]], dtype=dtype)
    for function in (numpy_functions.largest_at_rows, numpy_functions.smallest_at, numpy_functions.largest_at):
        np.testing.assert_array_equal(native(function)(x), function(x))


def test_ingest_shows_each_function_s_statements():
    shown = subprocess.run(
        [sys.executable, "-m", "repoos_agent", "ingest", str(FIXTURE), "--arg", "x=f64[5,7]", "--arg", "w=f64[5,7]"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    for statement in (
        "result[i, j] = result[i, j - 1] + x[i, j]   # return np.cumsum(x, axis=1)",
        "result[i] /= x_d1   # return x.var(axis=1)",
        "result_0 = np.sqrt(result_0)   # return np.std(x, ddof=1)",
        "[i, j]  result[i] = j if ((x[i, j] > extrema[i]) or ((x[i, j] != x[i, j]) and (extrema[i] == extrema[i]))) else result[i]",
        "[i, j]  extrema[i] = x[i, j] if ((x[i, j] > extrema[i]) or ((x[i, j] != x[i, j]) and (extrema[i] == extrema[i])))",
        "result[i] += x[i, j] * x[i, j]   # return np.linalg.norm(x, axis=1)",
        "result[i] /= weight_sums[i]   # return np.average(x, axis=1, weights=w)",
    ):
        assert statement in shown, statement


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("np.cumsum(x)", "`np.cumsum(x)` runs over the flattened array, which is not modelled: give `axis=`"),
        ("np.linalg.norm(x, 1)", "the matrix norm `ord=1` is not modelled (the Frobenius norm is)"),
        ("np.linalg.norm(x, 2)", "the matrix norm `ord=2` is not modelled"),
        ("np.var(x, ddof=n)", "`ddof=n` must be an integer constant"),
        ("np.var(x, dtype=np.float32)", "`dtype=` of `np.var` is not modelled (modelled: `axis=`, `keepdims=`, `ddof=`)"),
        ("np.argmax(x, axis=(0, 1))", "`np.argmax` takes one axis (an integer) or None"),
        ("np.linalg.solve(x, x)", "`np.linalg.solve` is not modelled: write a product with `@`"),
        ("np.average(x, weights=x[0])", "1-d weights need one `axis=`"),
    ],
)
def test_what_stays_out_is_refused_with_what_to_write(body, fragment):
    source = f"import numpy as np\n\n\ndef f(x, n):\n    return {body}\n"
    report = ingest_source(source, "user.py", {"f": {"x": 2}})[0]
    assert not report.analyzable
    assert fragment in report.diagnostics[0].message, report.diagnostics[0].message
