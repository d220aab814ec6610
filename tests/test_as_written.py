"""Python as people write it: checks at entry, conversions, `with np.errstate`, imported names, shapes kept in
names, constant sizes and tuple unpacking all go into the one model and equal the Python original."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import repoos_agent
from repoos_agent.backends import build_baseline, build_native
from repoos_agent.ingest import ingest_file, load_kernel
from repoos_agent.legality.prove import prove_legal
from repoos_agent.measure import compare_outputs
from repoos_agent.measure.layout import fresh_copy
from repoos_agent.model.signature import Signature
from repoos_agent.runtime.swap import SwapFallbackWarning
from repoos_agent.target import resolve_target

from .conftest import ROOT
from .fixtures import as_written

AS_WRITTEN = ROOT / "tests" / "fixtures" / "as_written.py"
NO_STORE = str(ROOT / "tests" / "no-such-store.sqlite")


def _native(function):
    """The function swapped for its baseline build, with no fallback to Python allowed."""
    return repoos_agent.accelerate(graph=NO_STORE)(function)


@pytest.fixture(autouse=True)
def no_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        yield


def _reason(function: str, ranks: dict[str, int]) -> str:
    report = next(r for r in ingest_file(AS_WRITTEN, {function: ranks}) if r.name == function)
    assert not report.analyzable
    first = report.diagnostics[0]
    return f"{first.line}:{first.column}: {first.message}"


def _same(got, want, dtype=np.float64):
    tolerance = 1e-5 if np.dtype(dtype) == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)


rng = np.random.default_rng(7)


@pytest.mark.parametrize("n", [1, 2, 1000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_a_check_at_entry_is_run_before_the_native_kernel_and_raises_as_the_original_does(n, dtype):
    native = _native(as_written.checked_axpy)
    x, y = (rng.integers(1, 9, n).astype(dtype) for _ in range(2))
    _same(native(3, x, y), as_written.checked_axpy(3, x, y), dtype)
    assert native.route == "baseline build (source order)"
    with pytest.raises(ValueError, match=rf"^x and y differ in length: {n} != {n + 1}$"):
        native(3, x, np.ones(n + 1, dtype))


def test_asserts_at_entry_keep_their_message_and_the_sizes_they_read():
    kernel = load_kernel(AS_WRITTEN, "asserted_product", {"a": 2, "b": 2})
    assert "assert a.shape == b.shape" in kernel.entry_code and "n = a.shape[0]" in kernel.entry_code
    native = _native(as_written.asserted_product)
    a, b = rng.random((3, 4)), rng.random((3, 4))
    _same(native(a, b), as_written.asserted_product(a, b))
    with pytest.raises(AssertionError, match=r"^shapes differ$"):
        native(a, rng.random((3, 5)))
    with pytest.raises(AssertionError):
        native(np.ones((0, 4)), np.ones((0, 4)))


def test_conversions_before_a_check_stay_at_entry():
    native = _native(as_written.converted_first)
    x, y = rng.random(50), rng.random(50)
    _same(native(x, y), x - y)
    with pytest.raises(TypeError, match=r"^x must be a vector$"):
        native(np.ones((2, 2)), np.ones(2))


def test_a_check_after_the_function_has_computed_is_refused_with_where_to_move_it():
    assert _reason("check_after_work", {"x": 1}) == (
        "33:5: `assert y.shape == x.shape` checks after the function has computed: checks are modelled at entry, "
        "before any other statement (move it up)"
    )


def test_with_errstate_is_read_through():
    native = _native(as_written.safe_ratio)
    a, b = rng.random(300), rng.random(300) + 0.5
    b[::7] = 0.0
    _same(native(a, b), as_written.safe_ratio(a, b))


def test_asarray_of_an_argument_is_the_argument_and_np_array_a_copy():
    x = rng.random(40)
    want = x * 2.0
    _native(as_written.scale_in_place)(x)
    _same(x, want)
    y = rng.random(40)
    before = y.copy()
    _same(_native(as_written.scale_a_copy)(y), before * 2.0)
    _same(y, before)


def test_writing_a_conversion_with_a_dtype_is_refused_since_it_may_be_the_argument_itself():
    assert _reason("scale_a_conversion", {"x": 1}).endswith(
        "`y *= 2.0` writes the result of `np.asarray(x, dtype=...)`, which is the argument itself when it has that type "
        "already: write into a `.copy()`, or leave out `dtype=`"
    )


def test_names_imported_from_numpy_and_math_in_the_module_and_the_body():
    native = _native(as_written.imported_names)
    old, new = rng.random((20, 30)) + 0.5, rng.random((20, 30)) + 0.5
    _same(native(old, new), as_written.imported_names(old, new))


@pytest.mark.parametrize("shape", [(2, 2), (3, 3), (40, 60)])
def test_a_shape_kept_in_a_name_is_read_as_sizes(shape):
    img = rng.random(shape)
    _same(_native(as_written.blur_kept_shape)(img), as_written.blur_kept_shape(img))


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_len_of_a_row_is_the_second_size(dtype):
    m = rng.integers(0, 50, (7, 5)).astype(dtype)
    _same(_native(as_written.row_means)(m), as_written.row_means(m))


def test_shape_counted_from_the_end_size_and_ndim():
    x = rng.random((6, 9))
    _same(_native(as_written.last_axis_mean)(x), as_written.last_axis_mean(x))
    _same(_native(as_written.size_and_ndim)(x), as_written.size_and_ndim(x))


def test_local_constants_and_unpacked_constants_are_sizes():
    kernel = load_kernel(AS_WRITTEN, "constant_grid")
    assert kernel.parameters == ()
    _same(_native(as_written.constant_grid)(), as_written.constant_grid())


@pytest.mark.parametrize("n", [0, 1, 30])
def test_swapped_scalars_take_every_value_before_any_is_bound(n):
    _same(_native(as_written.fibonacci_rows)(n), as_written.fibonacci_rows(n))


@pytest.mark.parametrize("steps", [0, 1, 2, 5, 6])
@pytest.mark.parametrize("n", [2, 3, 50])
def test_double_buffers_swapped_at_every_step_give_the_last_steps_array(steps, n):
    u = rng.random(n)
    _same(_native(as_written.laplace_swapped)(u, steps), as_written.laplace_swapped(u, steps))
    _same(_native(as_written.swapped_buffers)(u, steps), as_written.swapped_buffers(u, steps))


def test_double_buffered_steps_keep_their_order():
    kernel = load_kernel(AS_WRITTEN, "laplace_swapped", {"u": 1})
    pair = next(loop.name for s in kernel.statements for loop in s.loops if loop.step == 2)
    assert not prove_legal(kernel, f"parallelize({pair})", False).legal


def test_a_swapped_array_read_after_the_loop_is_refused():
    assert _reason("swapped_then_both_read", {"u": 1}).endswith(
        "`b` is read after the loop that swaps it with `a`: which array it names depends on the number of steps; read `a` only"
    )


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_dtype_of_another_array(dtype):
    x = rng.integers(1, 9, 33).astype(dtype)
    got = _native(as_written.typed_like)(x)
    assert got.dtype == dtype
    _same(got, as_written.typed_like(x), dtype)


def test_a_counter_assigned_again_stays_a_scalar():
    x = rng.random(12)
    _same(_native(as_written.counter_stays_a_scalar)(x), as_written.counter_stays_a_scalar(x))


@pytest.mark.parametrize("shape", [(1,), (2, 2), (30, 40)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_masked_assignment_writes_where_the_mask_holds(shape, dtype):
    a = (rng.random(shape) * 2).astype(dtype)
    _same(_native(as_written.zero_negatives)(a), as_written.zero_negatives(a), dtype)
    got, want = a.copy(), a.copy()
    _native(as_written.clamp_between)(got, 0.5, 1.5)
    as_written.clamp_between(want, 0.5, 1.5)
    _same(got, want, dtype)
    b = (rng.random(shape) * 2).astype(dtype)
    got, want = a.copy(), a.copy()
    _native(as_written.copy_where)(got, b)
    as_written.copy_where(want, b)
    _same(got, want, dtype)


@pytest.mark.parametrize("n", [1, 2, 500])
def test_masked_sums_and_counts_of_boolean_arrays(n):
    x = rng.random(n) * 2
    got, want = _native(as_written.masked_sum_and_count)(x), as_written.masked_sum_and_count(x)
    for ours, theirs in zip(got, want, strict=True):
        _same(ours, theirs)
    assert np.asarray(got[1]).dtype == np.asarray(want[1]).dtype


def test_a_compacting_read_is_refused_with_what_to_write_instead():
    assert _reason("compacted", {"x": 1}).endswith(
        "`x[x > 0]` compacts the elements the mask selects, a number the data decides: reduce them "
        "(`np.sum(x[x > 0])`) or keep the shape (`np.where(mask, x, 0)`)"
    )


@pytest.mark.parametrize("shape", [(3, 3), (20, 30)])
def test_a_helper_called_as_a_statement_writes_the_callers_arrays(shape):
    u = rng.random(shape)
    want = as_written.smooth_with_a_procedure(u.copy(), 3)
    _same(_native(as_written.smooth_with_a_procedure)(u.copy(), 3), want)


@pytest.mark.parametrize("n", [1, 2, 17])
def test_a_helper_with_loops_takes_the_callers_sizes_and_its_defaults(n):
    got, want = rng.random((n + 2, n + 2)), None
    want = got.copy()
    as_written.edges_from_a_loop_procedure(want)
    _native(as_written.edges_from_a_loop_procedure)(got)
    _same(got, want)


def test_functions_and_lambdas_defined_in_the_function_are_inlined_as_closures():
    x = rng.random(64)
    _same(_native(as_written.closures_and_lambdas)(x, 0.5), as_written.closures_and_lambdas(x, 0.5))


def test_a_helper_that_calls_itself_is_refused():
    assert _reason("calls_itself", {"x": 1}).endswith("`_recursive` calls itself; recursion is not modelled")


@pytest.mark.parametrize("n", [1, 2, 300])
def test_pythons_own_sum_adds_along_the_first_axis(n):
    x, m = rng.random(n), rng.random((n, 3))
    for ours, theirs in zip(_native(as_written.builtin_sums)(x, m), as_written.builtin_sums(x, m), strict=True):
        _same(ours, theirs)


@pytest.mark.parametrize("factor", [2, 3, 4])
def test_a_select_of_loads_unrolled_computes_the_baseline_output(factor):
    """gcc 12 at -O3 -mavx2 vectorized `cond ? r[i] : 0.0` unrolled by 3 with wrong masked loads; the C printer
    computes both sides where neither can trap."""
    target = resolve_target("numpy:safe-ratio")
    values = target.inputs("SMALL")
    signature = Signature.of_values(target.kernel, values)
    want, got = fresh_copy(values), fresh_copy(values)
    build_baseline(target.kernel, signature)(want)
    verdict = prove_legal(target.kernel, f"unroll(S1.i, {factor})", False)
    assert verdict.legal
    build_native(target.kernel, signature, verdict.lowered)(got)
    assert compare_outputs(want, got, list(target.kernel.outputs)).correct


@pytest.mark.parametrize("n", [1, 2, 257])
@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_an_if_on_data_in_a_loop_writes_only_where_it_holds(n, dtype):
    x = rng.integers(0, 1000, n).astype(dtype)
    for ours, theirs in zip(_native(as_written.argmax_loop)(x), as_written.argmax_loop(x), strict=True):
        assert ours == theirs
    _same(_native(as_written.clamp_ladder)(x, 200, 700), as_written.clamp_ladder(x, 200, 700), dtype)


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (40, 30)])
def test_counters_under_a_condition_on_data(shape):
    a = rng.random(shape)
    got, want = _native(as_written.count_and_sum_positive)(a), as_written.count_and_sum_positive(a)
    _same(np.asarray(got, dtype=float), np.asarray(want, dtype=float))


def test_an_if_on_data_is_legal_only_where_the_old_value_is_kept_in_order():
    kernel = load_kernel(AS_WRITTEN, "argmax_loop", {"x": 1})
    assert any("when_" in statement.text for statement in kernel.statements)
    assert not prove_legal(kernel, "reverse(S1.i)", False).legal


def test_an_optional_output_is_refused_with_what_to_write_instead():
    assert _reason("optional_output", {"x": 1, "out": 1}).endswith(
        "`if out is None` chooses what the function computes by what the caller passed: give the argument always "
        "(or never), or write the two cases as two functions"
    )


def test_a_state_machine_of_ifs_on_data_runs_its_steps_in_order():
    events = rng.integers(0, 3, 200)
    got, want = np.zeros(1), np.zeros(1)
    _native(as_written.traffic_light)(got, events, 200)
    as_written.traffic_light(want, events, 200)
    assert got[0] == want[0]
    kernel = load_kernel(AS_WRITTEN, "traffic_light", {"state": 1, "events": 1})
    assert not prove_legal(kernel, "parallelize(S0.k)", False).legal


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (30, 7)])
def test_chained_assignment_binds_one_value_to_every_target(shape):
    data = rng.random(shape)
    _same(_native(as_written.chained_assignments)(data, 1.5), as_written.chained_assignments(data, 1.5))


@pytest.mark.parametrize("shape", [(1,), (2, 2), (40, 30)])
def test_a_masked_assignment_computes_its_masked_operands_element_by_element(shape):
    dx, dy = rng.random(shape), rng.random(shape)
    _same(_native(as_written.masked_power)(dx, dy), as_written.masked_power(dx, dy))


def test_a_masked_assignment_of_an_unmasked_array_is_refused():
    assert _reason("masked_with_another_array", {"a": 1, "b": 1}).endswith(
        "`b * 2.0`: a masked assignment takes scalars and arrays under the same mask (`b[m] ** 2`), element by element"
    )


def test_a_copyto_numpy_would_refuse_for_its_types_runs_the_original_which_raises():
    dst, src = np.zeros(5, dtype=np.int64), rng.random(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SwapFallbackWarning)
        with pytest.raises(TypeError):
            repoos_agent.accelerate(graph=NO_STORE)(as_written.copy_into)(dst, src)
    assert not dst.any()
    ints = np.arange(5, dtype=np.int64)
    floats = np.zeros(5)
    _native(as_written.copy_into)(floats, ints)
    _same(floats, ints.astype(float))


@pytest.mark.parametrize(("n", "k"), [(1, 1), (2, 2), (60, 5)])
def test_a_value_helper_with_loops_its_own_sizes_and_a_branch_on_data_is_inlined(n, k):
    signal, taps, x = rng.random(n), rng.random(k), rng.random(n)
    got = _native(as_written.helpers_with_loops_and_branches)(signal, taps, x)
    _same(got, as_written.helpers_with_loops_and_branches(signal, taps, x))


@pytest.mark.parametrize(("h", "w"), [(2, 2), (4, 6), (10, 8)])
def test_a_reshape_by_derived_sizes_is_a_view_and_an_odd_size_raises_as_numpy_does(h, w):
    img = rng.random((h, w))
    _same(_native(as_written.blocks_of_two)(img, h, w), as_written.blocks_of_two(img, h, w))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SwapFallbackWarning)
        with pytest.raises(ValueError, match="cannot reshape"):
            repoos_agent.accelerate(graph=NO_STORE)(as_written.blocks_of_two)(rng.random((h + 1, w)), h + 1, w)


def test_module_constants_are_compiled_in_and_a_changed_one_runs_the_original():
    v = rng.random(20)
    native = _native(as_written.module_constants)
    _same(native(v), as_written.module_constants(v))
    kernel = load_kernel(AS_WRITTEN, "module_constants", {"v": 1})
    assert dict(kernel.constants) == {"GRAVITY": 9.81, "STEPS": 3}
    as_written.GRAVITY = 1.62
    try:
        with pytest.warns(SwapFallbackWarning, match="module constant `GRAVITY` is 1.62 now"):
            got = native(v)
        _same(got, as_written.module_constants(v))
    finally:
        as_written.GRAVITY = 9.81


@pytest.mark.parametrize(("n", "npt"), [(1, 1), (4, 2), (500, 7)])
def test_a_selection_bound_to_a_name_is_summed_and_averaged_empty_bins_included(n, npt):
    data, radius = rng.random(n), rng.random(n)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = as_written.radial_means(data, radius, npt)
    got = _native(as_written.radial_means)(data, radius, npt)
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


def test_a_selection_bound_to_a_name_used_whole_is_refused():
    assert _reason("compacted_used_whole", {"x": 1}).endswith(
        "`kept` holds the elements a mask selected, a number the data decides: its sum and mean are modelled "
        "(`np.sum(x[m])`, `x[m].mean()`); for anything else keep the shape (`np.where(mask, x, 0)`)"
    )


@pytest.mark.parametrize("n", [1, 2, 64])
def test_a_helpers_returned_tuple_is_unpacked_into_names_and_subscripts(n):
    pos, vel, mass = rng.random(n), rng.random(n), rng.random(n)
    got_k, got_p, want_k, want_p = np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1)
    got = _native(as_written.energies_into_slots)(pos, vel, mass, got_k, got_p)
    want = as_written.energies_into_slots(pos, vel, mass, want_k, want_p)
    _same(got, want)
    _same(got_k, want_k)
    _same(got_p, want_p)


@pytest.mark.parametrize("shape", [(2, 2), (3, 7), (12, 30)])
def test_np_cov_of_rows_of_columns_and_biased_equals_numpy(shape):
    x = rng.random(shape)
    for ours, theirs in zip(_native(as_written.covariances)(x), as_written.covariances(x), strict=True):
        assert ours.shape == theirs.shape
        _same(ours, theirs)
