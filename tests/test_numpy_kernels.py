"""The NumPy kernel suite: bundled with five sizes, deterministic random inputs, and every kernel runs as plain NumPy."""

from __future__ import annotations

import ast
import copy
import inspect

import numpy as np
import pytest

from repoos_agent.catalog import SIZE_CLASSES, bundled_kernels, find_bundled

RETURNS_NOTHING = [
    "gemm", "2mm", "mvt", "gemver", "syrk", "syr2k", "symm", "trmm", "doitgen", "lu", "cholesky", "floyd-warshall",
    "jacobi-1d", "jacobi-2d", "heat-3d", "fdtd-2d", "seidel-2d", "hdiff", "vadv", "cavity-flow",
]  # fmt: skip
RETURNS_ARRAY = [
    "3mm", "atax", "gesummv", "covariance", "correlation", "trisolv", "softmax", "mlp", "conv2d", "batchnorm",
    "layernorm", "gelu", "attention", "arc-distance", "go-fast", "nbody",
]  # fmt: skip
RETURNS_TUPLE = ["bicg"]
RETURNS_SCALAR = ["cross-entropy"]
NUMPY = RETURNS_NOTHING + RETURNS_ARRAY + RETURNS_TUPLE + RETURNS_SCALAR
FLOAT32 = ["softmax", "layernorm", "gelu", "batchnorm"]
TESTED_SIZES = ("MINI", "SMALL")


def arrays_of(value) -> list[np.ndarray]:
    """The arrays in a kernel's inputs or result: a dict's values, a tuple's items, or the value itself."""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, tuple) else [value]
    return [item for item in items if isinstance(item, np.ndarray)]


def run(name: str, size: str) -> tuple[dict, object]:
    """The kernel called on a copy of its inputs at `size`: the (possibly updated) arguments and what it returned."""
    kernel = find_bundled(f"numpy:{name}")
    arguments = copy.deepcopy(kernel.inputs(size))
    result = kernel.python_function()(**arguments)
    return arguments, result


def test_the_numpy_suite_bundles_every_kernel_with_five_sizes():
    """The study's kernels, and those written in the styles real code takes (`as-written`, issue 43's reach)."""
    kernels = bundled_kernels("numpy")
    study = {k.name for k in kernels if k.category != "as-written"}
    assert sorted(study) == sorted(f"numpy:{name}" for name in NUMPY)
    assert len([k for k in kernels if k.category == "as-written"]) >= 25
    for kernel in kernels:
        assert tuple(kernel.sizes) == SIZE_CLASSES, kernel.name
        assert kernel.suite == "numpy"
        tree = ast.parse(kernel.path.read_text())
        modules = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        modules |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert modules <= {"numpy", "math"}, (kernel.name, modules)


@pytest.mark.parametrize("name", NUMPY)
def test_kernel_module_imports_only_numpy_and_math(name):
    tree = ast.parse(find_bundled(f"numpy:{name}").path.read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom) for alias in node.names}
    assert imported <= {"numpy", "math"}, imported


@pytest.mark.parametrize("size", TESTED_SIZES)
@pytest.mark.parametrize("name", NUMPY)
def test_init_gives_every_argument_as_finite_nonconstant_contiguous_arrays(name, size):
    kernel = find_bundled(f"numpy:{name}")
    inputs = kernel.inputs(size)
    assert list(inputs) == list(inspect.signature(kernel.python_function()).parameters)
    arrays = arrays_of(inputs)
    assert arrays, "a kernel without array arguments computes nothing"
    for argument, value in inputs.items():
        if isinstance(value, np.ndarray):
            assert value.flags.c_contiguous, argument
            assert np.isfinite(value).all(), argument
            assert np.any(value != 0), argument
            assert value.size == 1 or np.ptp(value) > 0, f"{argument} is constant"
        else:
            assert isinstance(value, int | float), argument


@pytest.mark.parametrize("name", NUMPY)
def test_init_is_deterministic(name):
    kernel = find_bundled(f"numpy:{name}")
    first, second = kernel.inputs("MINI"), kernel.inputs("MINI")
    for argument, value in first.items():
        np.testing.assert_array_equal(value, second[argument], err_msg=argument)


@pytest.mark.parametrize("size", TESTED_SIZES)
@pytest.mark.parametrize("name", NUMPY)
def test_kernel_runs_and_its_outputs_are_finite(name, size):
    arguments, result = run(name, size)
    for array in arrays_of(arguments) + arrays_of(result):
        assert np.isfinite(array).all()
    if name in RETURNS_NOTHING:
        assert result is None
    elif name in RETURNS_ARRAY:
        assert isinstance(result, np.ndarray) and result.ndim >= 1
    elif name in RETURNS_TUPLE:
        assert isinstance(result, tuple) and all(isinstance(item, np.ndarray) for item in result)
    else:
        assert np.ndim(result) == 0 and np.isfinite(result)


@pytest.mark.parametrize("name", FLOAT32)
def test_float32_kernels_keep_float32(name):
    kernel = find_bundled(f"numpy:{name}")
    assert all(array.dtype == np.float32 for array in arrays_of(kernel.inputs("MINI")))
    _, result = run(name, "SMALL")
    assert result.dtype == np.float32


def test_every_other_kernel_computes_in_float64():
    for name in set(NUMPY) - set(FLOAT32):
        arguments, result = run(name, "MINI")
        assert {array.dtype for array in arrays_of(arguments) + arrays_of(result)} == {np.dtype(np.float64)}, name


def test_in_place_kernels_change_an_argument():
    for name in RETURNS_NOTHING:
        kernel = find_bundled(f"numpy:{name}")
        before = kernel.inputs("MINI")
        after, _ = run(name, "MINI")
        assert any(not np.array_equal(before[a], after[a]) for a in before if isinstance(before[a], np.ndarray)), name


def test_kernels_that_return_their_result_leave_their_arguments_alone():
    for name in RETURNS_ARRAY + RETURNS_TUPLE + RETURNS_SCALAR:
        before = find_bundled(f"numpy:{name}").inputs("MINI")
        after, _ = run(name, "MINI")
        for argument, value in before.items():
            np.testing.assert_array_equal(value, after[argument], err_msg=f"{name} changed {argument}")


def test_causal_attention_row_zero_sees_only_token_zero():
    arguments, result = run("attention", "MINI")
    x = arguments["x"]
    v0 = x[0] @ arguments["Wv"] + arguments["bv"]
    np.testing.assert_allclose(result[0], v0 @ arguments["Wo"] + arguments["bo"])


def test_softmax_rows_sum_to_one_even_for_scores_that_overflow_exp():
    kernel = find_bundled("numpy:softmax")
    assert np.abs(kernel.inputs("SMALL")["x"]).max() > 89.0  # exp overflows float32 beyond ~88.7
    _, result = run("softmax", "SMALL")
    np.testing.assert_allclose(result.sum(axis=1), 1.0, rtol=1e-5)
