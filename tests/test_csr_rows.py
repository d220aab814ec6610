"""CSR rows written as slices (`A_col[A_row[i]:A_row[i + 1]]`) and reduced (`vals @ x[cols]`, `np.dot`, `np.sum`,
`np.linalg.norm`) lower to the loop form's model: outputs equal the Python original's, row pointers that would
read outside the arrays are refused before the run (the swapped function then runs the original), and what
stays out is refused at its line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import repoos_agent
from repoos_agent.ingest import ingest_source, load_kernel
from repoos_agent.runtime.swap import SwapFallbackWarning

from .conftest import ROOT
from .fixtures import csr_rows
from .schedule_draws import legal_schedules_keep_the_output

FIXTURE = ROOT / "tests" / "fixtures" / "csr_rows.py"
NO_STORE = str(ROOT / "tests" / "no-such-store.sqlite")
PRODUCTS = ["product_by_matmul", "product_by_dot", "product_by_sum", "scaled_residual"]


def _native(function):
    """The function swapped for its baseline build."""
    return repoos_agent.accelerate(graph=NO_STORE)(function)


def _csr(rows: int, columns: int, counts: list[int] | None = None, seed: int = 5, index=np.int64):
    """A random CSR matrix (rows with 0 to 5 entries, about a third empty, repeated columns kept) and a vector."""
    rng = np.random.default_rng(seed)
    if counts is None:
        counts = list(rng.integers(0, 6, rows) * (rng.random(rows) > 0.3))
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(index)
    indices = rng.integers(0, columns, int(indptr[-1])).astype(index)
    data = rng.uniform(-1.0, 1.0, int(indptr[-1]))
    return indptr, indices, data, rng.uniform(-1.0, 1.0, columns)


def _arguments(name: str, indptr, indices, data, v):
    if name == "row_norms":
        return (indptr, data)
    if name == "weighted_row_sums":
        return (indptr, data, np.cos(np.arange(data.size)))
    if name == "scaled_residual":
        return (indptr, indices, data, v, np.linspace(-1.0, 1.0, indptr.size - 1))
    return (indptr, indices, data, v)


MATRICES = {
    "random": lambda index: _csr(40, 30, index=index),
    "one by one": lambda index: _csr(1, 1, [1], index=index),
    "all empty": lambda index: _csr(6, 4, [0] * 6, index=index),
    "no rows": lambda index: _csr(0, 3, [], index=index),
    "long rows": lambda index: _csr(5, 50, [40, 0, 17, 1, 33], index=index),
}


@pytest.fixture(autouse=True)
def no_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        yield


@pytest.mark.parametrize("matrix", list(MATRICES))
@pytest.mark.parametrize("name", [*PRODUCTS, "row_norms", "weighted_row_sums"])
def test_rows_reduced_as_numpy_does_equal_the_original(name, matrix):
    function = getattr(csr_rows, name)
    arguments = _arguments(name, *MATRICES[matrix](np.int64))
    native = _native(function)
    np.testing.assert_allclose(native(*arguments), function(*arguments), rtol=1e-12, atol=1e-12)
    assert native.route == "baseline build (source order)"


@pytest.mark.parametrize("index", [np.int32, np.uint32])
def test_row_pointers_of_narrower_and_unsigned_types_are_read_as_indices(index):
    arguments = MATRICES["random"](index)
    native = _native(csr_rows.product_by_matmul)
    np.testing.assert_allclose(native(*arguments), csr_rows.product_by_matmul(*arguments), rtol=1e-12, atol=1e-12)
    assert native.route == "baseline build (source order)"


def test_a_decreasing_row_pointer_is_an_empty_row_as_in_numpy():
    indptr, indices, data, v = _csr(8, 6, [2, 3, 1, 0, 2, 2, 1, 1])
    indptr[3] = 1  # row 2 stops before it starts, row 3 then starts before row 2 did
    native = _native(csr_rows.product_by_matmul)
    np.testing.assert_allclose(native(indptr, indices, data, v), csr_rows.product_by_matmul(indptr, indices, data, v))


@pytest.mark.parametrize(
    ("array", "position", "value", "reason"),
    [
        ("indptr", -1, 10**6, "`data[i]` would index `data` past the end of dimension 0: index array `indptr` holds 1000000"),
        ("indptr", 0, -3, "would index `data` below 0: index array `indptr` holds -3"),
        ("indices", 0, -1, "`v[indices[i]]` would index `v` below 0: index array `indices` holds -1"),
    ],
)
def test_row_pointers_numpy_clips_or_counts_from_the_end_run_the_original(array, position, value, reason):
    arguments = dict(zip(("indptr", "indices", "data", "v"), _csr(8, 6, [2, 3, 1, 0, 2, 2, 1, 1]), strict=True))
    arguments[array][position] = value
    want = csr_rows.product_by_matmul(**arguments)
    native = _native(csr_rows.product_by_matmul)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SwapFallbackWarning)
        got = native(**arguments)
    np.testing.assert_array_equal(got, want)
    assert any(reason in str(w.message) for w in caught), [str(w.message) for w in caught]


@pytest.mark.parametrize("name", [*PRODUCTS, "row_norms"])
def test_random_legal_schedules_keep_the_rows(name):
    ranks = {"indptr": 1, "indices": 1, "data": 1, "v": 1, "b": 1, "w": 1}
    kernel = load_kernel(FIXTURE, name, {a: r for a, r in ranks.items() if a in _parameters(name)})
    arguments = _arguments(name, *MATRICES["random"](np.int64))
    values = dict(zip(_parameters(name), arguments, strict=True))
    legal, _ = legal_schedules_keep_the_output(kernel, values, 8, also=("parallelize(r)",))
    assert "parallelize(r)" in legal


def _parameters(name: str) -> tuple[str, ...]:
    function = getattr(csr_rows, name)
    return function.__code__.co_varnames[: function.__code__.co_argcount]


def test_a_row_is_one_statement_instance_reading_the_index_arrays_as_the_loop_form_does():
    kernel = load_kernel(FIXTURE, "product_by_matmul", {"indptr": 1, "indices": 1, "data": 1, "v": 1})
    update = next(s for s in kernel.statements if s.inner)
    assert update.iterators == ("r",) and update.op == "+="
    assert set(kernel.index_arrays) == {"indptr", "indices"} == set(kernel.index_only_arrays)
    assert "+= data[i] * v[indices[i]]" in update.text


RANKS = {"p": 1, "c": 1, "a": 1, "x": 1, "m": 2}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "y[i] = np.sum(a[p[i] : p[i + 1] : 2])",
            "`a[p[i] : p[i + 1] : 2]`: a slice with a step between bounds read from an index array is not modelled",
        ),
        (
            "cols = c[p[i] : p[i + 1]]\nz = x[cols]\ny[i] = z[0]",
            "`cols` is the row `c[p[i] : p[i + 1]]`, whose length the data decides: it is modelled inside a sum",
        ),
        (
            "y[i] = np.max(a[p[i] : p[i + 1]])",
            "the max of a row whose bounds are read from an index array is not modelled (NumPy raises or warns on an empty row)",
        ),
        (
            "y[i] = a[p[i] : p[i + 1]] @ x[c[p[i] : p[i + 2]]]",
            "are rows over different bounds: NumPy requires them of one length",
        ),
        (
            "y[i] = a[p[i] : p[i + 1]] @ x[: p[1] - p[0]]",
            "`x[: p[1] - p[0]]`: a slice bound read from an index array is modelled as one element of it plus a constant",
        ),
        (
            "y[i] = a[p[i] : p[i + 1]] @ x",
            "`x` has a fixed length, but it meets a row whose length the data decides",
        ),
        (
            "w = a * 2.0\ny[i] = np.sum(x[w[p[i] : p[i + 1]]])",
            "`w[p[i] : p[i + 1]]`: a slice whose bounds are read from an index array is modelled on a 1-d array argument",
        ),
        (
            "y[i] = np.sum(m[c[p[i] : p[i + 1]]])",
            "`m[c[p[i] : p[i + 1]]]`: a gather through a row is modelled from a 1-d array argument (`x[cols]`)",
        ),
    ],
)
def test_what_stays_out_of_the_row_model_is_refused_at_its_line(body, message):
    lines = "".join(f"        {line}\n" for line in body.splitlines())
    head = "import numpy as np\n\n\ndef f(p, c, a, x, m):\n    y = np.zeros(p.size - 1)\n    for i in range(p.size - 1):\n"
    (report,) = ingest_source(head + lines + "    return y\n", "f.py", {"f": RANKS})
    assert not report.analyzable
    assert message in report.diagnostics[0].message, report.diagnostics[0].message


@pytest.mark.parametrize("columns", [1, 3])
def test_the_size_of_a_matrix_is_a_size_in_bounds(columns):
    m, v = np.ones((2, columns)), np.arange(5.0)
    np.testing.assert_array_equal(_native(csr_rows.first_cells_doubled)(m, v), csr_rows.first_cells_doubled(m, v))
