"""Loops as people write them, lowered into range loops of the one model and checked against the Python original.

Each form runs on its own in a small function (`tests/fixtures/python_loops.py`), through `accelerate` with no
fallback to Python allowed, at a small size and at edge sizes (1 element, 2x2), on float64 and int64 inputs.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import repoos_agent
from repoos_agent.codegen.loopnest import build_loop_nest
from repoos_agent.ingest import ingest_source, load_kernel
from repoos_agent.legality import analyze, prove_legal
from repoos_agent.runtime.swap import SwapFallbackWarning
from repoos_agent.verify import verify_loop_nest

from .conftest import ROOT
from .fixtures import python_loops
from .schedule_draws import legal_schedules_keep_the_output

FIXTURE = ROOT / "tests" / "fixtures" / "python_loops.py"
NO_STORE = str(ROOT / "tests" / "no-such-store.sqlite")
SIZES = {"one": (1, (1, 1)), "two": (2, (2, 2)), "small": (11, (6, 9))}


def _vector(n: int, dtype: type, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(-9, 10, n).astype(dtype) if dtype is np.int64 else rng.standard_normal(n)


def _matrix(shape: tuple[int, int], dtype: type, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(-9, 10, shape).astype(dtype) if dtype is np.int64 else rng.standard_normal(shape)


def _upper(n: int, rng: np.random.Generator) -> np.ndarray:
    return np.triu(rng.uniform(0.5, 1.5, (n, n))) + n * np.eye(n)


INPUTS = {
    "back_substitution": lambda n, shape, dtype, rng: {"U": _upper(n, rng), "b": _vector(n, dtype, rng), "x": np.zeros(n)},
    "back_substitution_numpy": lambda n, shape, dtype, rng: {"U": _upper(n, rng), "b": _vector(n, dtype, rng)},
    "suffix_sums": lambda n, shape, dtype, rng: {"x": _vector(n, dtype, rng), "out": np.zeros(n, dtype)},
    "running_weighted_sum": lambda n, shape, dtype, rng: {"x": _vector(n, dtype, rng), "out": np.zeros(n, dtype)},
    "dot": lambda n, shape, dtype, rng: {"x": _vector(n, dtype, rng), "y": _vector(n, dtype, rng)},
    "pair_products": lambda n, shape, dtype, rng: {
        "x": _vector(n, dtype, rng),
        "y": _vector(n, dtype, rng),
        "out": np.zeros(n, dtype),
    },
    "differences": lambda n, shape, dtype, rng: {"x": _vector(n, dtype, rng), "out": np.zeros(n - 1, dtype)},
    "gaps": lambda n, shape, dtype, rng: {"x": _vector(n, dtype, rng), "out": np.zeros(n - 1, dtype)},
    "take_and_clear": lambda n, shape, dtype, rng: {"x": _vector(n, dtype, rng), "y": np.zeros(n, dtype)},
    "normalize_rows": lambda n, shape, dtype, rng: {"A": rng.uniform(0.5, 1.5, shape)},
    "center_rows": lambda n, shape, dtype, rng: {"A": _matrix(shape, dtype, rng)},
    "scale_columns": lambda n, shape, dtype, rng: {"A": _matrix(shape, dtype, rng), "s": _vector(shape[1], dtype, rng)},
    "row_sums": lambda n, shape, dtype, rng: {"A": _matrix(shape, dtype, rng), "out": np.zeros(shape[0], dtype)},
    "laplacian": lambda n, shape, dtype, rng: {"A": _matrix(shape, dtype, rng), "out": np.zeros(shape, dtype)},
    "affine_map": lambda n, shape, dtype, rng: {"A": _matrix(shape, dtype, rng), "out": np.zeros(shape, dtype)},
    "column_sums": lambda n, shape, dtype, rng: {"A": _matrix(shape, dtype, rng), "out": np.zeros(shape[1], dtype)},
    "grid": lambda n, shape, dtype, rng: {"A": _matrix(shape, dtype, rng), "out": np.zeros(shape, dtype)},
    "upward_and_downward": lambda n, shape, dtype, rng: {"x": _vector(n, dtype, rng), "out": _vector(n, dtype, rng)},
    "doubled_copies": lambda n, shape, dtype, rng: {"x": _vector(n, dtype, rng), "out": np.zeros(1, dtype)},
    "transpose_into": lambda n, shape, dtype, rng: {"A": _matrix(shape, dtype, rng), "out": np.zeros(shape[::-1], dtype)},
}
FLOAT_ONLY = {"back_substitution", "back_substitution_numpy", "normalize_rows"}  # divisions NumPy refuses in place on ints


@pytest.fixture
def no_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        yield


def _same_as_python(name: str, values: dict[str, object]) -> None:
    """Call the original and its native build on copies of `values`: every array and the result agree."""
    function = getattr(python_loops, name)
    native = repoos_agent.accelerate(graph=NO_STORE)(function)
    want = {key: value.copy() for key, value in values.items()}
    got = {key: value.copy() for key, value in values.items()}
    expected, result = function(**want), native(**got)
    assert native.route == "baseline build (source order)"
    for key in values:
        assert got[key].dtype == want[key].dtype
        np.testing.assert_allclose(got[key], want[key], rtol=1e-9, atol=1e-12, err_msg=key)
    if expected is not None:
        np.testing.assert_allclose(result, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
@pytest.mark.parametrize("size", sorted(SIZES))
@pytest.mark.parametrize("name", sorted(INPUTS))
def test_each_loop_form_equals_the_python_original(no_fallback, name, size, dtype):
    if dtype is np.int64 and name in FLOAT_ONLY:
        pytest.skip("NumPy divides these in float only")
    n, shape = SIZES[size]
    if name == "laplacian" and size == "one":
        shape = (3, 3)  # np.ndindex(-1, -1) raises in Python; 3x3 has one interior point
    rng = np.random.default_rng(sorted(INPUTS).index(name))
    _same_as_python(name, INPUTS[name](n, shape, dtype, np.random.default_rng(rng.integers(1 << 30))))


def test_zip_runs_to_the_shortest_argument(no_fallback):
    rng = np.random.default_rng(3)
    _same_as_python("dot", {"x": rng.standard_normal(9), "y": rng.standard_normal(5)})
    _same_as_python("pair_products", {"x": rng.standard_normal(4), "y": rng.standard_normal(7), "out": np.zeros(7)})


def test_a_downward_loop_runs_downward_in_the_model():
    """The solve reads rows below the one it writes: the source order must be the downward one."""
    kernel = load_kernel(FIXTURE, "back_substitution", {"U": 2, "b": 1, "x": 1})
    [outer] = {statement.loops[0] for statement in kernel.statements}
    assert (str(outer.start), str(outer.stop), outer.step) == ("n - 1", "-1", -1)


def test_an_element_the_body_overwrites_is_copied_at_the_top_of_the_iteration():
    kernel = load_kernel(FIXTURE, "take_and_clear", {"x": 1, "y": 1})
    assert [statement.text.split("   #")[0] for statement in kernel.statements] == ["v = x[i]", "x[i] = 0", "y[i] = v"]
    lazy = load_kernel(FIXTURE, "pair_products", {"x": 1, "y": 1, "out": 1})
    assert len(lazy.statements) == 1  # nothing writes `x` or `y`: the elements are read where they are used


def test_fresh_loop_variables_avoid_every_name_of_the_function():
    source = "def f(A, i, j):\n    for row in A:\n        for k in range(A.shape[1]):\n            row[k] *= i * j\n"
    [report] = ingest_source(source, "user.py", {"f": {"A": 2}})
    assert report.kernel is not None, report.reason
    assert report.kernel.statements[0].iterators == ("l", "k")


SCHEDULED = {
    "back_substitution": (
        {"U": 2, "b": 1, "x": 1},
        lambda rng: {"U": _upper(9, rng), "b": rng.standard_normal(9), "x": np.zeros(9)},
    ),
    "normalize_rows": ({"A": 2}, lambda rng: {"A": rng.uniform(0.5, 1.5, (7, 6))}),
    "laplacian": ({"A": 2, "out": 2}, lambda rng: {"A": rng.standard_normal((8, 7)), "out": np.zeros((8, 7))}),
    "take_and_clear": ({"x": 1, "y": 1}, lambda rng: {"x": rng.standard_normal(10), "y": np.zeros(10)}),
    "pair_products": (
        {"x": 1, "y": 1, "out": 1},
        lambda rng: {"x": rng.standard_normal(9), "y": rng.standard_normal(6), "out": np.zeros(9)},
    ),
}


@pytest.mark.parametrize("name", sorted(SCHEDULED))
def test_every_legal_random_schedule_computes_the_baseline_output(name):
    """Random schedules as the soundness suite draws them, plus every loop `analyze` calls parallel: each one
    legality accepts is built and equals the baseline (a downward loop, rows, index tuples, an element copy,
    `zip` to the shortest)."""
    ranks, inputs = SCHEDULED[name]
    kernel = load_kernel(FIXTURE, name, ranks)
    values = inputs(np.random.default_rng(11))
    legal, same_output = legal_schedules_keep_the_output(kernel, values, 12)
    for loop in analyze(kernel).loops:
        if loop.parallelizable:
            same_output(f"parallelize({loop.name})")
    deepest = max(kernel.statements, key=lambda statement: len(statement.loops))
    same_output(f"unroll({deepest.name}.{deepest.iterators[-1]}, 3)")
    assert legal, f"no legal schedule of {name} was drawn"


@pytest.mark.parametrize(
    ("name", "ranks", "schedule"),
    [
        ("upward_and_downward", {"x": 1, "out": 1}, ""),
        ("pair_products", {"x": 1, "y": 1, "out": 1}, "tile(S0.i, 4)"),
        ("laplacian", {"A": 2, "out": 2}, "interchange(S0.i, S0.j)"),
        ("take_and_clear", {"x": 1, "y": 1}, "parallelize(i)"),
    ],
)
def test_z3_proves_the_generated_loops_run_each_instance_once_in_dependence_order(name, ranks, schedule):
    kernel = load_kernel(FIXTURE, name, ranks)
    verdict = prove_legal(kernel, schedule, explain=False)
    assert verdict.legal, verdict.feedback
    verification = verify_loop_nest(kernel, verdict.lowered, build_loop_nest(kernel, verdict.lowered))
    assert verification.verified, verification.reason


def test_reversing_the_downward_solve_is_illegal():
    kernel = load_kernel(FIXTURE, "back_substitution", {"U": 2, "b": 1, "x": 1})
    outer = kernel.statements[0].loops[0].name
    assert not prove_legal(kernel, f"reverse({outer})", explain=False).legal


REFUSALS = [
    (
        "def f(x, A):\n    s = 0.0\n    for a, r in zip(x, A):\n        s += a\n    return s\n",
        {"x": 1, "A": 2},
        "`zip(x, A)`: zip of arrays of ranks 1 and 2 is not modelled; loop over `range(len(...))` and index each array",
    ),
    (
        "def f(x, k, out):\n    for i, v in enumerate(x, start=k):\n        out[i] = v\n",
        {"x": 1, "out": 1},
        "`enumerate(x, start=k)`: the start of enumerate must be an integer constant; add `k` to the index where you use it",
    ),
    (
        "def f(n, out):\n    for v in n:\n        out[0] += v\n",
        {"out": 1},
        "`n` is iterated, but it is not an array whose rank is known here (an argument's rank comes from the call's "
        "values, e.g. `repoos check FILE:FUNCTION --arg x=f64[64,64]`, or from `n, m = x.shape` in the source)",
    ),
    (
        "def f(out):\n    for v in [1.0, 2.0]:\n        out[0] += v\n",
        {"out": 1},
        "`[1.0, 2.0]`: only loops over `range(...)`, `reversed(range(...))`, `enumerate(...)`, `zip(...)`, "
        "`np.ndindex(...)` and arrays are modelled",
    ),
    (
        "def f(x, out):\n    for i, v in enumerate(x):\n        if i > 0:\n            v = 2 * v\n        out[i] = v\n",
        {"x": 1, "out": 1},
        "`v` is the loop's element: rebind it directly in the loop's body, not under an `if` or in an inner loop "
        "(use a new name there)",
    ),
    (
        "def f(x, n):\n    for i in reversed(range(0, n, 2)):\n        x[i] = 0.0\n",
        {"x": 1},
        "`reversed(range(0, n, 2))`: the last value of a range with step 2 is not affine; "
        "write the downward range itself (`range(last, first - 1, -step)`)",
    ),
    (  # the loop runs over the array `t` named when it started: rebinding `t` must not write into it
        "def f(x, out):\n    t = x * 1.0\n    for v in t:\n        t = t * 2.0\n        out[0] += v\n",
        {"x": 1, "out": 1},
        "`t` is rebound inside a loop to an array it cannot share memory with (another shape, or a view); "
        "assign into `t[...]` instead",
    ),
    (
        "def f(x, y):\n    for pair in zip(x, y):\n        y[0] = 1.0\n",
        {"x": 1, "y": 1},
        "`for pair in zip(x, y)`: each item holds 2 values; unpack them into 2 names",
    ),
    (
        "import numpy as np\n\n\ndef f(A, out):\n    for idx in np.ndindex(A.shape):\n        out[idx] = idx + 1\n",
        {"A": 2, "out": 2},
        "`idx` is a tuple of indices (from `np.ndindex`): subscript an array with it alone (`A[idx]`), "
        "or unpack it in the loop header (`for i, j in np.ndindex(...)`)",
    ),
]


@pytest.mark.parametrize(("source", "ranks", "message"), REFUSALS)
def test_loops_out_of_reach_are_refused_with_what_to_write_instead(source, ranks, message):
    [*_, report] = ingest_source(source, "user.py", {"f": ranks})
    assert report.kernel is None
    assert report.reason == message
