"""NumPy's ufuncs called by name (`np.add`, `np.less`, `np.sign`, ... with `out=`), their `.outer` and `.reduce`, and
boolean arrays as values: each equal to NumPy at 1 element, 2x2 and 5x7, in float32, float64, int32 and int64,
with NaN, infinities, zeros and negative values among the inputs, and with NumPy's result dtype. What stays out
is refused with what to write instead."""

from __future__ import annotations

import inspect
import re
import warnings

import numpy as np
import pytest

import repoos_agent
from repoos_agent.check import check_baseline
from repoos_agent.codegen.c import generate_c
from repoos_agent.errors import ArgumentSpecError, CompileError
from repoos_agent.ingest import ingest_source, load_kernel
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.model import Signature
from repoos_agent.runtime.swap import SwapFallbackWarning
from repoos_agent.target import resolve_target

from .conftest import ROOT
from .fixtures import numpy_ufuncs

FIXTURE = ROOT / "tests" / "fixtures" / "numpy_ufuncs.py"
TOLERANCE = {np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-13}
FLOATS = (np.float32, np.float64)
INTEGERS = (np.int32, np.int64)
EVERY = FLOATS + INTEGERS
EVERY_NARROW_SLOW = (
    pytest.param(np.float32, marks=pytest.mark.slow),
    np.float64,
    pytest.param(np.int32, marks=pytest.mark.slow),
    np.int64,
)
"""Every dtype, the 32-bit ones (a build each per function) in the slow set: the default suite keeps one float and
one integer type per function, and the edge values and dtype checks of both widths run in the tests below."""
SHAPES = [(1,), (2, 2), (5, 7)]
FLOAT_EDGES = [np.nan, np.inf, -np.inf, 0.0, -0.0, -1.5, 2.5, 0.5, -2.5, 1.0]
CASES = [
    ("arithmetic", EVERY),
    ("floor_and_mod", EVERY),
    ("powers", EVERY),
    ("power_of_arrays", FLOATS),
    ("signs_and_roundings", EVERY),
    ("classified", EVERY),
    ("comparisons", EVERY),
    ("logic", EVERY),
    ("exponentials", EVERY),
    ("hyperbolic", EVERY),
    ("reciprocals", FLOATS),
    ("added_into", EVERY),
    ("subtracted_in_place", EVERY),
    ("shifted_sum_in_place", EVERY),
    ("maximum_into_new", EVERY),
    ("outer_sum", EVERY),
    ("outer_products", EVERY),
    ("reduced", EVERY),
    ("clipped", EVERY),
    ("counted", EVERY),
    ("filled", FLOATS),
    ("finite_total", FLOATS),
    ("mask", FLOATS),
    ("chosen_by", EVERY),
    ("truths_into", EVERY),
    ("intp_counts", EVERY),
]


@pytest.fixture(scope="module")
def native():
    """The fixture's functions swapped for their baseline builds, with no fallback to Python allowed."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        yield repoos_agent.accelerate(graph=str(ROOT / "tests" / "no-such-store.sqlite"))


def _array(shape: tuple[int, ...], dtype, rng: np.random.Generator, rotation: int) -> np.ndarray:
    """Random values with NumPy's awkward ones among them: NaN, infinities, signed zeros and halves for floats,
    zeros and negative values for integers."""
    if np.dtype(dtype).kind == "i":
        values = rng.integers(-5, 6, shape).astype(dtype)
        values.flat[rotation % values.size] = 0
        return values
    values = rng.uniform(-3.0, 3.0, shape).astype(dtype)
    edges = np.roll(np.array(FLOAT_EDGES, dtype=dtype), -rotation)
    count = min(values.size, len(edges))
    values.flat[:count] = edges[:count]
    return values


def _inputs(function, shape: tuple[int, ...], dtype, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    made = {"m": lambda: rng.integers(0, 2, shape).astype(bool), "out": lambda: np.zeros(shape, dtype)}
    return [made.get(name, lambda: _array(shape, dtype, rng, seed))() for name in inspect.signature(function).parameters]


def _assert_like_numpy(got, want, label: str) -> None:
    """Equal to NumPy's result, part by part, with its dtype and shape; floats to a few units in the last place."""
    wants = want if isinstance(want, tuple) else (want,)
    gots = got if isinstance(got, tuple) else (got,)
    assert len(gots) == len(wants), label
    for part, (mine, theirs) in enumerate(zip(gots, wants, strict=True)):
        mine, theirs = np.asarray(mine), np.asarray(theirs)
        where = f"{label}, result {part}"
        assert mine.dtype == theirs.dtype, (where, mine.dtype, theirs.dtype)
        assert mine.shape == theirs.shape, (where, mine.shape, theirs.shape)
        if theirs.dtype.kind == "f":
            rtol = TOLERANCE[theirs.dtype]
            np.testing.assert_allclose(mine, theirs, rtol=rtol, atol=rtol, equal_nan=True, err_msg=where)
        else:
            np.testing.assert_array_equal(mine, theirs, err_msg=where)


def _built(native, function, *arguments: np.ndarray):
    """What the baseline build of `function` returns for `arguments` (never the Python original)."""
    swapped = native(function)
    result = swapped(*arguments)
    assert swapped.route == "baseline build (source order)", swapped.route
    return result


def _numpy(function, arguments: list[np.ndarray]):
    with np.errstate(all="ignore"):
        return function(*[a.copy() for a in arguments])


@pytest.mark.parametrize("dtype", EVERY_NARROW_SLOW, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("name", "dtypes"), CASES, ids=[name for name, _ in CASES])
def test_equal_to_numpy_with_numpy_s_dtype(native, name, dtypes, dtype):
    if dtype not in dtypes:
        pytest.skip(f"{name} is for {', '.join(np.dtype(d).name for d in dtypes)}")
    function = getattr(numpy_ufuncs, name)
    for seed, shape in enumerate(SHAPES):
        arguments = _inputs(function, shape, dtype, seed)
        want = _numpy(function, arguments)
        got = _built(native, function, *arguments)  # one build per rank: a swapped function keeps its first call's
        _assert_like_numpy(got, want, f"{name} {np.dtype(dtype).name} {shape}")


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_signs_floors_and_remainders_of_awkward_values(native, dtype):
    """`np.sign(0.0)` is 0 and of NaN NaN; floor division and remainders of floats follow Python's signs
    (`1.0 // 0.1` is 9.0, `-4.0 % 2.0` is 0.0, `-5.0 // inf` is -1.0), and NaN, the infinities and 0 go
    where NumPy sends them."""
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.5, 2.5, 1.0, -4.0, -5.0, 7.0, 3.0], dtype=dtype)
    y = np.array([2.0, -2.0, 0.0, 0.1, -3.0, 0.0, np.inf, 0.1, 2.0, np.inf, -2.0, np.nan], dtype=dtype)
    for function in (numpy_ufuncs.floor_and_mod, numpy_ufuncs.signs_and_roundings, numpy_ufuncs.classified):
        arguments = [x, y][: len(inspect.signature(function).parameters)]
        _assert_like_numpy(_built(native, function, *arguments), _numpy(function, arguments), function.__name__)
    quotient, remainder, _, _ = _built(native, numpy_ufuncs.floor_and_mod, x, y)
    assert quotient[7] == 9.0 and quotient[9] == -1.0 and remainder[8] == 0.0
    signs = _built(native, numpy_ufuncs.signs_and_roundings, x)[0]
    np.testing.assert_array_equal(signs[:5], np.array([np.nan, 1.0, -1.0, 0.0, 0.0], dtype=dtype))


@pytest.mark.parametrize("dtype", INTEGERS, ids=lambda d: np.dtype(d).name)
def test_integer_division_by_zero_is_zero_as_numpy_s(native, dtype):
    x = np.array([5, -5, 7, np.iinfo(dtype).min], dtype=dtype)
    y = np.array([0, 0, -1, -1], dtype=dtype)
    _assert_like_numpy(_built(native, numpy_ufuncs.floor_and_mod, x, y), _numpy(numpy_ufuncs.floor_and_mod, [x, y]), "by zero")


@pytest.mark.parametrize("dtype", FLOATS + INTEGERS, ids=lambda d: np.dtype(d).name)
def test_sums_and_products_of_int32_are_int64_as_numpy_s(native, dtype):
    """NumPy sums, multiplies and accumulates int32 in int64 (the platform integer): these would wrap in int32."""
    x = np.array([2**30, 2**30 - 1, 2**30 + 3, -7, 2**29], dtype=dtype)
    for size in (5, 2):
        values = x[:size]
        want = _numpy(numpy_ufuncs.widened_totals, [values])
        _assert_like_numpy(_built(native, numpy_ufuncs.widened_totals, values), want, f"{size} elements")


@pytest.mark.parametrize("dtype", EVERY, ids=lambda d: np.dtype(d).name)
def test_reduce_along_rows_keeps_dims_as_numpy(native, dtype):
    rng = np.random.default_rng(3)
    for shape in [(1, 1), (2, 2), (5, 7)]:
        x = _array(shape, dtype, rng, 1)
        _assert_like_numpy(_built(native, numpy_ufuncs.reduced_rows, x), _numpy(numpy_ufuncs.reduced_rows, [x]), str(shape))


@pytest.mark.parametrize(
    ("function", "args"),
    [
        ("floor_and_mod", ["x=f32[9]", "y=f32[9]"]),
        ("floor_and_mod", ["x=i32[9]", "y=i32[9]"]),
        ("exponentials", ["x=f64[3,4]"]),
        ("hyperbolic", ["x=f32[9]", "y=f32[9]"]),
        ("powers", ["x=i64[9]", "y=i32[9]"]),
        ("truths_into", ["x=f64[9]", "m=b8[9]"]),
        ("counted", ["x=f64[4,3]"]),
    ],
)
def test_mlir_builds_equal_the_original(function, args):
    report = check_baseline(resolve_target(f"{FIXTURE}:{function}", [parse_arg_spec(a) for a in args]), compiler="mlir")
    assert report.correct, (report.mismatched, report.max_rel_error)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("np.add(x, x, where=x > 0)", "`where=` of `np.add` is not modelled (modelled: `out=`); assign the result"),
        ("np.less(x, x, out=x)", "`out=` of `np.less` is not modelled; assign the result and write it where it should go"),
        ("np.add.outer(x, x, out=x)", "`out=` of `np.add.outer` is not modelled"),
        ("np.add.reduce(x, dtype=float)", "`dtype=` of `np.add.reduce` is not modelled (modelled: `axis=`, `keepdims=`)"),
        ("np.add(x, x, x)", "`np.add` takes 2 positional argument(s) here, got 3"),
        ("np.add(x, x, out=x + 1)", "`out=x + 1` of `np.add` must be an array or a slice of one"),
        ("(x > 0) + (x < 1)", "arithmetic of boolean arrays alone is not modelled (NumPy keeps them bool); count with `m * 1`"),
        ("-(x > 0)", "NumPy does not negate a boolean array; use `~` for its opposite"),
        ("x[x > 0][0] > 0", "compacts the elements the mask selects"),
        ("np.sort(x)", "`np.sort` is not modelled yet"),
    ],
)
def test_what_stays_out_is_refused_with_what_to_write(body, message):
    source = f"import numpy as np\n\n\ndef f(x):\n    return {body}\n"
    report = ingest_source(source, "user.py", {"f": {"x": 1}})[0]
    assert not report.analyzable
    assert message in report.diagnostics[0].message, report.diagnostics[0].message


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["m = x > 0", "m += x", "return m"], "`m += x`: `+=` into a boolean array is not modelled; assign with `&`, `|` or `~`"),
        (["m = x > 0", "y = x[m]", "return y"], "`y` holds the elements a mask selected, a number the data decides"),
    ],
)
def test_boolean_arrays_refuse_what_numpy_would_not_do(lines, message):
    body = "".join(f"    {line}\n" for line in lines)
    report = ingest_source(f"import numpy as np\n\n\ndef f(x):\n{body}", "user.py", {"f": {"x": 1}})[0]
    assert not report.analyzable
    assert message in report.diagnostics[0].message, report.diagnostics[0].message


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def f(x, y):\n    return np.power(x, y)\n", "an integer power whose exponent may be negative (NumPy raises there)"),
        ("def f(x, y):\n    return x ** -1 + y\n", "give the exponent as a constant >= 0, or make the base a float (`x ** 2.0`)"),
        ("def f(x, y):\n    return np.reciprocal(x) + y\n", "`np.reciprocal` of integers is not modelled: write `1.0 / x`"),
    ],
)
def test_integer_builds_refuse_what_numpy_raises_on(tmp_path, source, message):
    path = tmp_path / "user.py"
    path.write_text(f"import numpy as np\n\n\n{source}")
    kernel = load_kernel(path, "f", {"x": 1, "y": 1})
    integers = {"x": np.arange(3, dtype=np.int64), "y": np.arange(3, dtype=np.int64)}
    with pytest.raises(CompileError, match=re.escape(message)):
        generate_c(kernel, Signature.of_values(kernel, integers))
    floats = {name: value.astype(np.float64) for name, value in integers.items()}
    generate_c(kernel, Signature.of_values(kernel, floats))  # floats raise nothing in NumPy, and build


def test_out_of_another_kind_is_refused_for_the_types_numpy_refuses(tmp_path):
    """`np.add(x, 0.5, out=o)` into an int array raises TypeError in NumPy (casting='same_kind'): a build for those
    types is refused, so a swapped call runs the original, which raises; into a float array it builds."""
    path = tmp_path / "user.py"
    path.write_text("import numpy as np\n\n\ndef f(x, o):\n    np.add(x, 0.5, out=o)\n    return o\n")
    kernel = load_kernel(path, "f", {"x": 1, "o": 1})
    refused = "`np.add(x, 0.5, out=o)` copies float64 into int64, which NumPy refuses"
    with pytest.raises(ArgumentSpecError, match=re.escape(refused)):
        Signature.of_values(kernel, {"x": np.arange(3), "o": np.zeros(3, dtype=np.int64)})
    generate_c(kernel, Signature.of_values(kernel, {"x": np.arange(3), "o": np.zeros(3)}))
