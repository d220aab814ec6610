"""NumPy shape, layout and creation functions, each one registered lowering (`ingest.numpy.layout`, `assembly`,
`creations`): equal to NumPy at 1 element, 2x2 and a small size, in float32, float64 and int64, with NumPy's
result dtype and shape. They only move, copy or create elements (no arithmetic NumPy could order otherwise),
and float ranges follow NumPy's own formulas, so results are bit for bit NumPy's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import repoos_agent
from repoos_agent.ingest import ingest_source, load_kernel
from repoos_agent.runtime.swap import SwapFallbackWarning

from .conftest import ROOT
from .fixtures import numpy_layout
from .schedule_draws import legal_schedules_keep_the_output

FIXTURE = ROOT / "tests" / "fixtures" / "numpy_layout.py"
DTYPES = [pytest.param(np.float32, marks=pytest.mark.slow), np.float64, np.int64]
"""float32 (a build each per function) runs in the slow set; its dtype is checked there and in test_numpy_dtypes."""
VECTORS = [(1,), (2,), (7,)]
MATRICES = [(1, 1), (2, 2), (4, 6)]

ONE_ARRAY = {  # functions of one array (`x` a vector, `a` a matrix), and the shapes they take
    "as_rows": VECTORS,
    "columns_of_rows": MATRICES,
    "raveled": VECTORS,
    "rolled": VECTORS,
    "rolled_back": [(2,), (7,)],
    "rolled_rows": MATRICES,
    "rolled_both": MATRICES,
    "tiled": VECTORS,
    "tiled_grid": MATRICES,
    "repeated_rows": VECTORS,
    "upper": MATRICES,
    "lower_below": MATRICES,
    "upper_above": MATRICES,
    "padded": VECTORS + MATRICES,
    "padded_value": MATRICES,
    "padded_edge": MATRICES,
    "padded_vector": VECTORS,
    "flipped": VECTORS + MATRICES,
    "flipped_rows": MATRICES,
    "reversed_view": VECTORS,
    "flipped_axis": MATRICES,
    "flat_copy": [(1, 2), (2, 2), (5, 3)],
    "samples": VECTORS,
    "open_samples": VECTORS,
    "float_ramp": VECTORS,
    "typed_ramp": VECTORS,
    "weighted_table": [(3,), (2, 3)],
    "identity": [(1, 1), (2, 2), (5, 5)],
    "filled": MATRICES,
    "zeros_typed": MATRICES,
    "periodic_laplacian": [(1, 1), (2, 2), (5, 6)],
    "padded_blur": MATRICES,
}
TWO_ARRAYS = {  # functions of two arrays: their shapes
    "joined": [((1,), (1,)), ((2,), (2,)), ((4,), (3,))],
    "joined_columns": [((1, 1), (1, 1)), ((2, 2), (2, 2)), ((3, 2), (3, 4))],
    "stacked": [((1,), (1,)), ((2,), (2,)), ((5,), (5,))],
    "stacked_last": [((1,), (1,)), ((2, 2), (2, 2)), ((3, 4), (3, 4))],
    "side_by_side": [((1, 1), (1, 2)), ((2, 2), (2, 2)), ((3, 2), (3, 5))],
    "rows_on_rows": [((1,), (1,)), ((2,), (2,)), ((6,), (6,))],
    "interleaved": [((1,), (1,)), ((2,), (2,)), ((5,), (5,))],
    "copied_into": [((1,), (1,)), ((2, 2), (2, 2)), ((4, 6), (4, 6))],
    "copied_row": [((1, 1), (1, 1)), ((2, 2), (3, 2)), ((4, 6), (2, 6))],
    "copied_where": [((1,), (1,)), ((2, 2), (2, 2)), ((4, 6), (4, 6))],
}
GIVEN = {  # creations, and functions of sizes: their arguments
    "constant_samples": [()],
    "scalar_samples": [(0.0, 1.0, 1), (-2.0, 3.0, 2), (0.1, 0.7, 9), (1.0, 1.0, 4), (3, 7, 5)],
    "single_sample": [(3,)],
    "float_range": [()],
    "float_steps": [()],
    "table": [()],
    "integer_table": [()],
    "shifted_eye": [(1, 1), (2, 2), (4, 6)],
    "unit": [(1,), (2,), (5,)],
    "as_pairs": [(np.arange(2.0), 1), (np.arange(4.0), 2), (np.arange(12.0), 6)],
    "pair_sums": [(np.arange(2.0), 1), (np.arange(4.0), 2), (np.arange(12.0), 6)],
    "pooled": [(np.arange(64.0).reshape(8, 8),)],
    "zero_evens": [(np.ones(2), 1), (np.arange(12), 6)],  # writes `x` through the reshaped view
}


@pytest.fixture(scope="module")
def native():
    """The fixture's functions swapped for their baseline builds, with no fallback to Python allowed."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        yield repoos_agent.accelerate(graph=str(ROOT / "tests" / "no-such-store.sqlite"))


def _array(shape: tuple[int, ...], dtype: type, rng: np.random.Generator) -> np.ndarray:
    if dtype is np.int64:
        return rng.integers(-9, 10, shape).astype(np.int64)
    return rng.uniform(-1.0, 1.0, shape).astype(dtype)


def _same_as_numpy(native, name: str, arguments: tuple) -> None:
    function = getattr(numpy_layout, name)
    swapped = native(function)
    want_arguments = [a.copy() if isinstance(a, np.ndarray) else a for a in arguments]
    got_arguments = [a.copy() if isinstance(a, np.ndarray) else a for a in arguments]
    want, got = function(*want_arguments), swapped(*got_arguments)
    assert swapped.route == "baseline build (source order)", swapped.route
    if want is None:  # a function that writes its first argument
        want, got = want_arguments[0], got_arguments[0]
    assert np.asarray(got).dtype == np.asarray(want).dtype, (name, np.asarray(got).dtype, np.asarray(want).dtype)
    assert np.shape(got) == np.shape(want), (name, np.shape(got), np.shape(want))
    np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64", "int64"])
@pytest.mark.parametrize("name", sorted(ONE_ARRAY))
def test_each_function_of_an_array_equals_numpy(native, name, dtype):
    rng = np.random.default_rng(sorted(ONE_ARRAY).index(name))
    for shape in ONE_ARRAY[name]:
        _same_as_numpy(native, name, (_array(shape, dtype, rng),))


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64", "int64"])
@pytest.mark.parametrize("name", sorted(TWO_ARRAYS))
def test_each_function_of_two_arrays_equals_numpy(native, name, dtype):
    rng = np.random.default_rng(sorted(TWO_ARRAYS).index(name))
    for first, second in TWO_ARRAYS[name]:
        _same_as_numpy(native, name, (_array(first, dtype, rng), _array(second, dtype, rng)))


def test_joined_arrays_take_numpy_s_common_type(native):
    rng = np.random.default_rng(5)
    _same_as_numpy(native, "joined", (_array((3,), np.float32, rng), _array((2,), np.int64, rng)))
    _same_as_numpy(native, "stacked", (_array((3,), np.float32, rng), _array((3,), np.float64, rng)))


@pytest.mark.parametrize("name", sorted(GIVEN))
def test_each_creation_equals_numpy_bit_for_bit(native, name):
    for arguments in GIVEN[name]:
        _same_as_numpy(native, name, arguments)


def test_a_roll_longer_than_the_array_runs_the_original():
    """`np.roll(x, 1)` of one element is modelled; a roll by 2 of it would read outside `x`: the bounds checks
    refuse the call and the original runs, with its result."""
    swapped = repoos_agent.accelerate(graph=str(ROOT / "tests" / "no-such-store.sqlite"))(numpy_layout.rolled_back)
    x = np.array([4.0])
    with pytest.warns(SwapFallbackWarning):
        np.testing.assert_array_equal(swapped(x), np.roll(x, -2))


@pytest.mark.parametrize(
    ("name", "ranks", "statements"),
    [
        ("as_pairs", {"x": 1}, ["result[i, j] = x[2*i + j] + 0"]),
        ("pooled", {"img": 2}, ["result[i, j] += img[2*i + k, 2*j + l]"]),
        ("interleaved", {"x": 1, "y": 1}, ["stack[i, 1] = y[i]", "ravel[2*i + j] = stack[i, j]"]),
        ("rolled", {"x": 1}, ["result[i + 1] = x[i]", "result[0] = x[x_d0 - 1]"]),
        ("flipped_axis", {"a": 2}, ["result[i, j] = a[i, a_d1 - j - 1] + 0"]),
        ("padded_vector", {"x": 1}, ["result[i] = x[0]", "result[i + 2] = x[i]", "result[x_d0 + 2] = x[x_d0 - 1]"]),
    ],
)
def test_the_index_maps_are_affine_and_shown(name, ranks, statements):
    kernel = load_kernel(FIXTURE, name, ranks)
    shown = [statement.text.split("   #")[0] for statement in kernel.statements]
    for statement in statements:
        assert statement in shown, shown


SCHEDULED = {
    "periodic_laplacian": ({"u": 2}, lambda rng: {"u": rng.standard_normal((7, 6))}),
    "padded_blur": ({"a": 2}, lambda rng: {"a": rng.standard_normal((6, 8))}),
}


@pytest.mark.parametrize("name", sorted(SCHEDULED))
def test_every_legal_random_schedule_computes_the_baseline_output(name):
    """Random schedules as the soundness suite draws them, over functions made of rolls and pads: each one
    legality accepts is built and equals the baseline."""
    ranks, inputs = SCHEDULED[name]
    kernel = load_kernel(FIXTURE, name, ranks)
    values = inputs(np.random.default_rng(11))
    legal, _ = legal_schedules_keep_the_output(kernel, values, 10)
    assert legal, f"no legal schedule of {name} was drawn"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "return img.ravel()",
            "`img.ravel()`: reshaping extents (img_d0, img_d1) into (-1) is not affine: each dimension must split "
            "into (or merge from) dimensions whose extents after the first are constants; write the loops over the "
            "shape you need",
        ),
        (
            "return img[:, :2].ravel()",
            "`img[:, :2].ravel()` merges dimensions of stored memory: NumPy's view reads it at a floor division and "
            "a remainder of the index, which is not affine; `.flatten()` (a copy) is modelled",
        ),
        (
            "return np.roll(img, 1)",
            "`np.roll(img, 1)` rolls the flattened array, which is not modelled: give `axis=` (a roll along each axis)",
        ),
        ("return np.roll(img, h, axis=0)", "`np.roll(img, h, axis=0)`: the shift `h` must be an integer constant"),
        ("return np.tile(img, (8, 8))", "`np.tile(img, (8, 8))` makes 64 pieces (at most 16): write the loops instead"),
        ("return np.pad(img, 1, mode='reflect')", "`np.pad` mode `reflect` is not modelled (constant and edge are)"),
        ("return np.concatenate(parts)", "`np.concatenate(parts)`: the arrays to join must be written in the call (`[a, b]`)"),
        (
            "return np.arange(0.0, 1.0, w)",
            "`np.arange(0.0, 1.0, w)`: the count of a float range must be a size expression: give constant bounds, "
            "or integer start and step around an integer size (for other ranges, pass the array in)",
        ),
        (
            "return np.linspace(img[0, 0], 1.0, h)",
            "`np.linspace(img[0, 0], 1.0, h)`: `img[0, 0]` must be a Python number (a NumPy value's type would "
            "decide the result's)",
        ),
        ("np.sum(img)", "`np.sum(img)` computes a value and drops it: assign it to a name or a slice"),
        ("return np.copyto(img, 0)", "`np.copyto(img, 0)` produced no value"),
    ],
)
def test_what_stays_out_is_refused_with_what_to_write(body, message):
    source = f"import numpy as np\n\n\ndef f(img, h, w, parts):\n    {body}\n"
    report = ingest_source(source, "user.py", {"f": {"img": 2, "parts": 1}})[0]
    assert not report.analyzable
    assert report.diagnostics[0].message == message, report.diagnostics[0].message
