"""np.histogram (`ingest.numpy.histograms`): every value in NumPy's bin, on random data and on values placed at
the edges and one ulp either side; counts equal exactly, weighted sums to the float tolerance; (hist, edges)
taken or unpacked; where NumPy raises (NaN or infinity in the data without `range=`, `bins` below 1, weights of
another shape) the swapped call raises the same error; other types run the original; legal schedules keep
the output."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import repoos_agent
from repoos_agent.ingest import ingest_source, load_kernel
from repoos_agent.runtime.swap import SwapFallbackWarning

from .conftest import ROOT
from .fixtures import histograms
from .schedule_draws import legal_schedules_keep_the_output

FIXTURE = ROOT / "tests" / "fixtures" / "histograms.py"
NO_STORE = str(ROOT / "tests" / "no-such-store.sqlite")
rng = np.random.default_rng(53)


def _native(function):
    return repoos_agent.accelerate(graph=NO_STORE)(function)


def _same(function, *args) -> None:
    """The swapped function, with no fallback allowed, returns the original's arrays: counts exactly."""
    expected = function(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        got = _native(function)(*args)
    expected, got = (expected, got) if isinstance(expected, tuple) else ((expected,), (got,))
    assert len(got) == len(expected)
    for want, have in zip(expected, got, strict=True):
        assert have.dtype == want.dtype and have.shape == want.shape
        if want.dtype.kind == "f":
            np.testing.assert_allclose(have, want, rtol=1e-13, atol=0)
        else:
            np.testing.assert_array_equal(have, want)


@pytest.mark.filterwarnings("ignore:invalid value encountered in divide")  # empty bins: 0 / 0, in both
@pytest.mark.parametrize("size", [1, 2, 1000])
@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("counts", lambda x, w: (x, 13)),
        ("weighted", lambda x, w: (x, w, 13)),
        ("weighted", lambda x, w: (x, (w * 10).astype(np.int64), 4)),
        ("with_edges", lambda x, w: (x, 9)),
        ("in_range", lambda x, w: (x, w)),
        ("counted_in_range", lambda x, w: (x,)),
        ("one_bin", lambda x, w: (x,)),
        ("default_bins", lambda x, w: (x,)),
        ("edges_only", lambda x, w: (x, 11)),
        ("azimuthal_average", lambda x, w: (w, np.abs(x), 50)),
    ],
)
def test_equal_to_numpy_on_random_data(name, arguments, size):
    x, w = rng.uniform(-1.0, 1.0, size), rng.uniform(0.5, 2.0, size)
    _same(getattr(histograms, name), *arguments(x, w))


@pytest.mark.parametrize("bins", [1, 3, 7, 1000])
def test_values_on_the_edges_fall_in_numpys_bins(bins):
    for _ in range(10):
        low, high = np.sort(rng.uniform(-1e3, 1e3, 2))
        edges = np.linspace(low, high, bins + 1)
        x = np.concatenate([edges, np.nextafter(edges, np.inf), np.nextafter(edges, -np.inf), rng.uniform(low, high, 50)])
        x = x[(x >= low) & (x <= high)]
        _same(histograms.with_edges, rng.permutation(x), bins)


@pytest.mark.parametrize(
    "x",
    [
        np.full(10, 3.25),  # one value: the range widened to (v - 0.5, v + 0.5)
        np.zeros(0),  # no data: NumPy's range (0, 1)
        rng.uniform(0.0, 1e-310, 40),  # a subnormal range, whose linspace step underflows
        rng.uniform(0.0, 1.0, (6, 7)),  # flattened, as NumPy does
    ],
    ids=["all-equal", "empty", "subnormal", "matrix"],
)
def test_awkward_data(x):
    _same(histograms.with_edges, x, 4)


def test_an_explicit_range_drops_what_lies_outside_and_nan():
    x = np.array([np.nan, -0.5, 0.75, 2.0, -0.6, 0.1, 0.75, np.inf])
    _same(histograms.in_range, x, np.array([1.0, 2.0, 3.0, 4.0, np.nan, 6.0, 7.0, 8.0]))
    _same(histograms.counted_in_range, np.array([np.nan, 0.0, 1.0, 1.5, -0.1, 0.5, 1.0]))


@pytest.mark.parametrize(
    ("function", "arguments", "message"),
    [
        ("counts", (np.array([1.0, np.nan, 2.0]), 4), r"autodetected range of \[nan, nan\] is not finite"),
        ("counts", (np.array([1.0, np.inf, 2.0]), 4), r"autodetected range of \[1.0, inf\] is not finite"),
        ("counts", (np.array([1.0, 2.0]), 0), "`bins` must be positive"),
        ("weighted", (np.ones(5), np.ones(4), 3), "weights should have the same shape as a"),
    ],
)
def test_where_numpy_raises_the_swapped_call_raises(function, arguments, message):
    swapped = _native(getattr(histograms, function))
    with pytest.warns(SwapFallbackWarning), pytest.raises(ValueError, match=message):
        swapped(*arguments)


def test_other_types_run_the_original():
    x = rng.uniform(0.0, 1.0, 50)
    for function, arguments in [
        (histograms.counts, (x.astype(np.float32), 5)),
        (histograms.weighted, (x, x.astype(np.float32), 5)),
    ]:
        with pytest.warns(SwapFallbackWarning, match="is modelled for float64"):
            got = _native(function)(*arguments)
        np.testing.assert_array_equal(got, function(*arguments))


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("np.histogram(x, 4, density=True)[0]", "density=True)` is not modelled"),
        ("np.histogram(x, np.linspace(0.0, 1.0, 5))[0]", "a number of equal bins (an integer) is modelled"),
        ("np.histogram(x, 4, range=(0.0, n))[0]", "a range of two number constants"),
        ("np.histogram(x, 4, range=(1.0, 0.0))[0]", "max must be larger than min"),
        ("np.histogram(np.sqrt(x), 4)[0]", "pass the array itself, or give `range=(lo, hi)`"),
        ("np.histogram(x, 4)", "returns a tuple: take one item"),
        ("np.histogram(x, 4)[2]", "a tuple of 2 items"),
    ],
)
def test_what_stays_out_is_refused_with_what_to_write(body, fragment):
    source = f"import numpy as np\n\n\ndef f(x, n):\n    return {body}\n"
    report = ingest_source(source, "user.py", {"f": {"x": 1}})[0]
    assert not report.analyzable
    assert fragment in report.diagnostics[0].message, report.diagnostics[0].message


def test_data_the_function_writes_needs_a_range():
    source = "import numpy as np\n\n\ndef f(x):\n    h = np.histogram(x, 4)[0]\n    x[0] = 1.0\n    return h\n"
    report = ingest_source(source, "user.py", {"f": {"x": 1}})[0]
    assert not report.analyzable
    assert "needs `x` finite, checked once before the run" in report.diagnostics[0].message


@pytest.mark.parametrize(
    ("name", "ranks", "arguments"),
    [
        (
            "azimuthal_average",
            {"image": 1, "radius": 1},
            lambda: {"image": rng.uniform(0.5, 2.0, 300), "radius": rng.uniform(0.0, 3.0, 300), "npt": 17},
        ),
        ("in_range", {"x": 1, "w": 1}, lambda: {"x": rng.uniform(-1.0, 1.0, 200), "w": rng.uniform(0.5, 2.0, 200)}),
    ],
)
def test_every_legal_random_schedule_keeps_the_output(name, ranks, arguments):
    kernel = load_kernel(FIXTURE, name, ranks)
    legal, _ = legal_schedules_keep_the_output(kernel, arguments(), 10, ("parallelize(S3.i)", "tile(S8.i, 16)"))
    assert legal
