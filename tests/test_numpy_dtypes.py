"""Every intermediate has the dtype NumPy gives it (NEP 50), so the native result equals NumPy's.

A float32 array stays float32 through weak Python numbers (`x * 2.5`, `math.sqrt(a)`) and promotes
only where it meets a float64 array, a NumPy float64 scalar (`np.float64(0.1)`, `np.log(2.0)`) or an
int64 array (`np.arange`). Tolerances, per result: arithmetic and square roots round correctly in
both NumPy and C, so those results are bit-equal; a float32 `log` may differ between NumPy's and the
C library's by a few units in the last place (4 ulp, 4.8e-7 relative), a float64 one by 1e-15.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import repoos_agent
from repoos_agent.backends import build_native
from repoos_agent.check import check_baseline
from repoos_agent.ingest import load_kernel
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.measure.compare import TOLERANCES
from repoos_agent.model import Signature
from repoos_agent.model.kernel import returned_value
from repoos_agent.runtime.swap import SwapFallbackWarning
from repoos_agent.target import resolve_target

from .conftest import ROOT
from .fixtures import numpy_dtypes

PROGRAMS = ROOT / "tests" / "fixtures" / "numpy_dtypes.py"
FLOAT32_LOG = 4 * np.finfo(np.float32).eps


@pytest.fixture
def native():
    """The fixture's function swapped for its baseline build, with no fallback to Python allowed."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        yield lambda function: repoos_agent.accelerate(graph=str(ROOT / "tests" / "no-such-store.sqlite"))(function)


def _same(got, want, rtol: float = 0.0) -> None:
    """The same dtype as NumPy's, and values bit-equal (or within `rtol`)."""
    assert np.asarray(got).dtype == np.asarray(want).dtype
    if rtol:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0)
    else:
        np.testing.assert_array_equal(got, want)


def _floats(dtype, n: int = 257, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.1, 3.0, n).astype(dtype)


def test_the_angstrom_exponent_takes_its_log_in_float32_and_divides_in_float64(native):
    """`-np.log(aod1 / aod2) / np.log(lambda1 / lambda2)` with float32 arrays: NumPy's log of the ratio is
    float32, the log of the Python floats a float64 scalar. Taken all in float64 (as before), the result
    differed by 1e-7 relative; rounded back to float32 it had the wrong dtype."""
    aod1, aod2 = _floats(np.float32, seed=1), _floats(np.float32, seed=2)
    got = native(numpy_dtypes.angstrom)(aod1, aod2, 0.5, 0.875)
    want = numpy_dtypes.angstrom(aod1, aod2, 0.5, 0.875)
    _same(got, want, rtol=FLOAT32_LOG)
    numerator = got * np.log(0.5 / 0.875)  # the float32 log, up to the float64 division's rounding
    np.testing.assert_allclose(numerator, numerator.astype(np.float32), rtol=1e-14, atol=0)


@pytest.mark.parametrize("compiler", ["c", "mlir"])
def test_check_finds_the_angstrom_exponent_correct_at_the_float32_tolerance(compiler):
    """Its result is float64, but its log is NumPy's float32 one, a few float32 ulps from the C library's."""
    specs = [parse_arg_spec(text) for text in ("aod1=f32[300]", "aod2=f32[300]", "lambda1=0.5", "lambda2=0.875")]
    report = check_baseline(resolve_target(f"{PROGRAMS}:angstrom", specs), compiler=compiler)
    assert report.correct, report.max_rel_error
    assert report.tolerance == TOLERANCES["float32"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_python_floats_and_math_results_take_the_arrays_type(native, dtype):
    x = _floats(dtype)
    _same(native(numpy_dtypes.weak_scale)(x, 0.7), numpy_dtypes.weak_scale(x, 0.7))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_numpy_float64_scalar_promotes_a_float32_array(native, dtype):
    x = _floats(dtype)
    _same(native(numpy_dtypes.numpy_scalar_scale)(x), numpy_dtypes.numpy_scalar_scale(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_float32_constant_is_rounded_before_it_meets_the_array(native, dtype):
    x = _floats(dtype)
    _same(native(numpy_dtypes.float32_constant)(x), numpy_dtypes.float32_constant(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_astype_rounds_each_element_before_the_arithmetic(native, dtype):
    x = _floats(dtype)
    _same(native(numpy_dtypes.converted)(x), numpy_dtypes.converted(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_local_keeps_the_type_of_the_value_it_holds(native, dtype):
    x = _floats(dtype)
    _same(native(numpy_dtypes.strong_local)(x, 1.7), numpy_dtypes.strong_local(x, 1.7), rtol=1e-15)


def test_float32_meets_float64_at_the_operation_not_before(native):
    x, y = _floats(np.float32, seed=3), _floats(np.float64, seed=4)
    _same(native(numpy_dtypes.mixed_arrays)(x, y), numpy_dtypes.mixed_arrays(x, y))


def test_where_of_python_floats_is_a_float64_array(native):
    x = _floats(np.float32) - 1.5
    _same(native(numpy_dtypes.where_constants)(x), numpy_dtypes.where_constants(x))


def test_arange_is_int64_and_promotes_float32(native):
    x = _floats(np.float32, n=1000)
    _same(native(numpy_dtypes.indices_times)(x), numpy_dtypes.indices_times(x))


@pytest.mark.parametrize(("first", "second"), [(np.int32, np.int64), (np.int64, np.int32), (np.int32, np.int32)])
def test_integer_arrays_promote_and_divide_as_numpy(native, first, second):
    rng = np.random.default_rng(5)
    i, j = rng.integers(1, 1000, 101).astype(first), rng.integers(1, 1000, 101).astype(second)
    got, want = native(numpy_dtypes.integer_ops)(i, j), numpy_dtypes.integer_ops(i, j)
    assert len(got) == len(want)
    for part, expected in zip(got, want, strict=True):
        _same(part, expected)


def test_abs_of_int64_stays_exact_beyond_float64s_integers(native):
    j = np.array([2**62 + 1, -(2**62) - 3, 7, -8], dtype=np.int64)
    _same(native(numpy_dtypes.absolute)(j), numpy_dtypes.absolute(j))


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_int_truncates(native, dtype):
    x = np.arange(-5, 6).astype(dtype)
    _same(native(numpy_dtypes.truncated)(x, 2.7), numpy_dtypes.truncated(x, 2.7))


def test_the_kernel_shows_each_conversion():
    (statement,) = load_kernel(PROGRAMS, "converted", {"x": 1}).statements
    assert statement.text.startswith("result[i] = (np.float32(x[i]) * 0.1) + (np.float64(x[i]) * 0.3)")


@pytest.mark.parametrize("name", ["numpy_scalar_scale", "converted", "where_constants", "indices_times", "truncated"])
def test_the_mlir_backend_rounds_where_numpy_does(name):
    """The MLIR printer reads the same conversions: float32 data through each fixture equals NumPy bit for bit."""
    function = getattr(numpy_dtypes, name)
    x = _floats(np.float32) - 1.5
    values = {"x": x} if name != "truncated" else {"x": x, "a": 2.7}
    kernel = load_kernel(PROGRAMS, name, {"x": 1})
    got = dict(values)
    build_native(kernel, Signature.of_values(kernel, values), backend="mlir")(got)
    _same(returned_value(kernel.returns, kernel.returns_tuple, got), function(**values))
