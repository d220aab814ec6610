"""A column vector of shape (n, 1) broadcasts as NumPy does when the call's shapes are known: the axis that is 1
at the call is modelled as 1, the kernel records it, and a later call where it is not 1 runs the Python original
(which gives its own result, or raises where NumPy raises)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

import repoos_agent
from repoos_agent.backends.build import model_key
from repoos_agent.backends.cc import default_toolchain
from repoos_agent.check import check_baseline
from repoos_agent.errors import ArgumentSpecError
from repoos_agent.ingest import ingest_file, load_kernel
from repoos_agent.ingest.ranks import CallShapes
from repoos_agent.inputs import parse_arg_spec, ranks_of
from repoos_agent.model.signature import Signature
from repoos_agent.runtime.swap import SwapFallbackWarning
from repoos_agent.store import SQLiteStore
from repoos_agent.store.recording import record_winner
from repoos_agent.target import resolve_target

from .conftest import ROOT
from .fixtures import unit_axes

FIXTURE = ROOT / "tests" / "fixtures" / "unit_axes.py"
NO_STORE = str(ROOT / "tests" / "no-such-store.sqlite")
ORBIT_SPECS = ["m=f64[24,1]", "p=f64[24,2]", "v=f64[24,2]", "steps=3", "dt=0.01", "eps=0.1"]
rng = np.random.default_rng(11)


def _native(function):
    """The function swapped for the baseline build of its first call."""
    return repoos_agent.accelerate(graph=NO_STORE)(function)


def _same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w)
        return
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _column_inputs(name: str, n: int) -> list[np.ndarray | float]:
    shapes = {
        "weighted_rows": [(n, 1), (n, 3)],
        "outer_difference": [(n, 1)],
        "centred": [(n, 1), (n, 3)],
        "weighted_sum": [(n, n), (n, 1)],
        "pair_terms": [(n, 2), (n, 1)],
        "energies": [(n, 2), (n, 2), (n, 1)],
        "heaviest": [(n, 1), (n, 1)],
    }[name]
    arrays: list[np.ndarray | float] = [rng.uniform(0.5, 1.5, shape) for shape in shapes]
    return arrays + [0.1] if name == "pair_terms" else arrays


@pytest.mark.parametrize("n", [1, 2, 37])
@pytest.mark.parametrize(
    "name", ["weighted_rows", "outer_difference", "centred", "weighted_sum", "pair_terms", "energies", "heaviest"]
)
def test_a_column_vector_broadcasts_natively_and_equals_the_original(name, n):
    function = getattr(unit_axes, name)
    arguments = _column_inputs(name, n)
    mine, theirs = ([a.copy() if isinstance(a, np.ndarray) else a for a in arguments] for _ in range(2))
    native = _native(function)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        got = native(*mine)
    assert native.route == "baseline build (source order)"
    want = function(*theirs)
    if want is not None:
        _same(got, want)
    for g, w in zip(mine, theirs, strict=True):  # arguments written in place (`centred`) too
        _same(g, w)


def test_the_kernel_records_the_axes_it_took_as_one():
    shapes = CallShapes.of_shapes({"m": (24, 1), "p": (24, 2), "v": (24, 2)})
    assert load_kernel(FIXTURE, "orbit", shapes).unit_axes == (("m", 1),)
    # `x.T - x` of an (n, 1) column: the row and column of the result run over `n`, the 1 is broadcast.
    kernel = load_kernel(FIXTURE, "outer_difference", CallShapes.of_shapes({"x": (5, 1)}))
    assert kernel.unit_axes == (("x", 1),) and [p.name for p in kernel.shape_parameters] == ["x_d0"]


def test_a_call_of_one_element_that_broadcasts_nothing_models_the_function_for_any_length():
    assert load_kernel(FIXTURE, "doubled", CallShapes.of_shapes({"x": (1,)})).unit_axes == ()
    native = _native(unit_axes.doubled)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        for n in (1, 6):
            x = rng.uniform(0.5, 1.5, n)
            _same(native(x), x * 2.0)


@pytest.mark.parametrize("wide", [3, 5])
def test_a_later_call_whose_unit_axis_is_wider_runs_the_original(wide):
    native = _native(unit_axes.weighted_rows)
    w, a = rng.uniform(0.5, 1.5, (5, 1)), rng.uniform(0.5, 1.5, (5, wide))
    _same(native(w, a), unit_axes.weighted_rows(w, a))
    w_wide = rng.uniform(0.5, 1.5, (5, wide))
    with pytest.warns(SwapFallbackWarning, match=rf"argument `w` has extent {wide} along axis 1; the native kernel was built"):
        got = native(w_wide, a)
    _same(got, w_wide * a)  # the elementwise product, not the column's broadcast


def test_a_later_call_numpy_cannot_broadcast_raises_as_the_original_does():
    native = _native(unit_axes.weighted_rows)
    a = rng.uniform(0.5, 1.5, (4, 3))
    native(rng.uniform(0.5, 1.5, (4, 1)), a)
    with pytest.warns(SwapFallbackWarning), pytest.raises(ValueError, match="could not be broadcast"):
        native(rng.uniform(0.5, 1.5, (4, 2)), a)


def test_an_outer_difference_of_a_square_matrix_later_is_the_originals():
    native = _native(unit_axes.outer_difference)
    column = rng.uniform(0.5, 1.5, (6, 1))
    _same(native(column), column.T - column)
    square = rng.uniform(0.5, 1.5, (6, 6))
    with pytest.warns(SwapFallbackWarning, match="argument `x` has extent 6 along axis 1"):
        _same(native(square), square.T - square)


def test_a_written_argument_is_updated_as_the_original_does_after_the_unit_axis_widens():
    native = _native(unit_axes.centred)
    native(rng.uniform(0.5, 1.5, (7, 1)), rng.uniform(0.5, 1.5, (7, 3)))
    w, v = rng.uniform(0.5, 1.5, (7, 3)), rng.uniform(0.5, 1.5, (7, 3))
    mine, theirs = v.copy(), v.copy()
    with pytest.warns(SwapFallbackWarning):
        native(w, mine)
    unit_axes.centred(w, theirs)
    _same(mine, theirs)


def test_a_small_n_body_orbit_equals_the_original():
    m, p, v = rng.uniform(0.5, 1.5, (20, 1)), rng.uniform(-3.0, 3.0, (20, 2)), rng.uniform(-0.5, 0.5, (20, 2))
    mine, theirs = (m.copy(), p.copy(), v.copy()), (m.copy(), p.copy(), v.copy())
    native = _native(unit_axes.orbit)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        got = native(*mine, 4, 0.01, 0.1)
    want = unit_axes.orbit(*theirs, 4, 0.01, 0.1)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    for g, w in zip(mine, theirs, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_the_inputs_say_which_axes_are_one():
    specs = [parse_arg_spec(text) for text in ("m=f64[n,1]", "p=f64[n,k]", "n=64", "k=1", "q=f64[1]")]
    assert ranks_of(specs) == CallShapes({"m": 2, "p": 2, "q": 1}, frozenset({("m", 1), ("p", 1), ("q", 0)}))


def test_without_the_call_shapes_the_orbit_is_refused_saying_to_give_them():
    ranks = {"m": 2, "p": 2, "v": 2}
    report = next(r for r in ingest_file(FIXTURE, {"orbit": ranks}) if r.name == "orbit")
    assert not report.analyzable
    assert report.reason.startswith("the extents broadcasting ties together (")
    assert report.reason.endswith(
        "hold only for empty arrays: an extent that is 1 at the call is symbolic here; give the call's shapes, which "
        "model an extent of 1 as 1 (`--arg mass=f64[64,1]` on the command line, `args` through MCP), write it as 1 "
        "(`mass[:, 0:1]`, `x[:, None]`) or pass the array with that axis dropped"
    )


def test_a_column_and_a_matrix_are_two_builds_and_a_wider_input_is_refused():
    column = load_kernel(FIXTURE, "weighted_rows", CallShapes.of_shapes({"w": (5, 1), "a": (5, 3)}))
    matrix = load_kernel(FIXTURE, "weighted_rows", CallShapes.of_shapes({"w": (5, 3), "a": (5, 3)}))
    wide = {"w": np.ones((5, 3)), "a": np.ones((5, 3))}
    signature = Signature.of_values(matrix, wide)
    toolchain = default_toolchain()
    assert model_key(column, signature, None, toolchain, "c") != model_key(matrix, signature, None, toolchain, "c")
    with pytest.raises(ArgumentSpecError, match=r"^argument `w` has extent 3 along axis 1; the kernel was modelled"):
        Signature.of_values(column, wide)


def test_check_models_the_orbit_with_the_inputs_shapes_and_equals_the_original():
    target = resolve_target(f"{FIXTURE}:orbit", [parse_arg_spec(text) for text in ORBIT_SPECS])
    assert target.kernel.unit_axes == (("m", 1),)
    report = check_baseline(target)
    assert report.correct, (report.mismatched, report.max_rel_error)


def test_a_stored_contract_runs_the_original_where_the_unit_axis_widens(tmp_path):
    graph = str(tmp_path / "graph.sqlite")
    target = resolve_target(f"{FIXTURE}:weighted_rows", [parse_arg_spec(text) for text in ("w=f64[8,1]", "a=f64[8,4]")])
    record_winner(SQLiteStore(graph), target, None)
    swapped = repoos_agent.swap(unit_axes.weighted_rows, graph=graph)
    assert swapped.native
    w, a = rng.uniform(0.5, 1.5, (8, 1)), rng.uniform(0.5, 1.5, (8, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        _same(swapped(w, a), w * a)
    w_wide = rng.uniform(0.5, 1.5, (8, 4))
    with pytest.warns(SwapFallbackWarning, match="argument `w` has extent 4 along axis 1"):
        _same(swapped(w_wide, a), w_wide * a)


@pytest.mark.slow  # end to end: the slow set runs it
def test_ingest_and_check_with_the_inputs_shapes_agree():
    def repoos(*arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "repoos_agent", *arguments], capture_output=True, text=True, cwd=ROOT, timeout=300
        )

    specs = [part for spec in ORBIT_SPECS for part in ("--arg", spec)]
    ingested = repoos("ingest", str(FIXTURE), *[part for spec in ORBIT_SPECS[:3] for part in ("--arg", spec)], "--json")
    assert ingested.returncode == 0, ingested.stderr
    rows = {row["name"]: row for row in json.loads(ingested.stdout)}
    assert rows["orbit"]["analyzable"] is True, rows["orbit"]["reason"]
    checked = repoos("check", f"{FIXTURE}:orbit", *specs, "--json")
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["correct"] is True
