"""Functions decorated for Numba: modelled as the undecorated function, and their compiled original is the one
checked and raced, timed warm (its first call, mostly Numba's compiler, is never timed: it made `check` report
a "speedup" of 17,579x)."""

from __future__ import annotations

import re
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import numba
import numpy as np
import pytest

import repoos_agent
from repoos_agent import check
from repoos_agent.backends import build_baseline
from repoos_agent.check import check_baseline
from repoos_agent.ingest import ingest_source
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.measure.isolated import RaceRules, race_in_process
from repoos_agent.measure.original import NumpyOriginal, TeamSizedCall, module_at
from repoos_agent.model import Signature
from repoos_agent.runtime import bench_leg
from repoos_agent.runtime.bench import BenchRequest
from repoos_agent.runtime.swap import SwapFallbackWarning
from repoos_agent.target import resolve_target

from .conftest import ROOT

PROGRAMS = ROOT / "tests" / "fixtures" / "numba_programs.py"
SPECS = {
    "scale": ["a=f64[n,m]", "out=f64[n,m]", "alpha=1.5", "n=24", "m=16"],
    "smooth": ["x=f64[n]", "y=f64[n]", "n=40"],
    "row_sums": ["a=f64[n,m]", "s=f64[n]", "n=24", "m=16"],
    "shifted_squares": ["x=f64[n]", "y=f64[n]", "n=40"],
    "saxpy": ["x=f64[n]", "y=f64[n]", "alpha=0.5", "n=40"],
}


def _target(name: str, path: Path = PROGRAMS):
    return resolve_target(f"{path}:{name}", [parse_arg_spec(spec) for spec in SPECS[name]])


@pytest.fixture
def fresh(tmp_path) -> Path:
    """The programs in a file of their own: its module is imported afresh, so no function of it is compiled yet."""
    path = tmp_path / PROGRAMS.name
    path.write_text(PROGRAMS.read_text())
    return path


def _undecorated(source: str) -> str:
    """The file as it reads without Numba: no decorators, `range` for `prange`."""
    source = re.sub(r"^@.*\n", "", source, flags=re.MULTILINE)
    return re.sub(r"\b(numba\.)?prange\(", "range(", source)


@pytest.mark.parametrize("name", list(SPECS))
def test_a_numba_function_is_modelled_as_the_undecorated_function(name):
    source = PROGRAMS.read_text()
    ranks = {name: {spec.name: len(spec.dims) for spec in map(parse_arg_spec, SPECS[name]) if spec.dtype}}
    decorated, plain = (
        next(report for report in ingest_source(text, str(PROGRAMS), ranks) if report.name == name)
        for text in (source, _undecorated(source))
    )
    assert decorated.kernel is not None, decorated.reason
    assert [(s.text, str(s.domain)) for s in decorated.kernel.statements] == [
        (s.text, str(s.domain)) for s in plain.kernel.statements
    ]


@pytest.mark.parametrize("name", ["scale", "smooth", "row_sums"])
def test_the_baseline_of_a_numba_function_equals_the_numba_function(name):
    target = _target(name)
    assert isinstance(target.python_function(), numba.core.dispatcher.Dispatcher)  # the original the user runs
    report = check_baseline(target)
    assert report.correct, (report.mismatched, report.max_rel_error)


def _compiled_at_each_reading(dispatcher) -> tuple[list[int], SimpleNamespace]:
    """A clock that notes, at each reading, how many compiled versions `dispatcher` has."""
    seen: list[int] = []

    def perf_counter() -> float:
        seen.append(len(dispatcher.signatures))
        return time.perf_counter()

    return seen, SimpleNamespace(perf_counter=perf_counter)


def test_check_times_the_numba_original_after_it_compiled(monkeypatch, fresh):
    target = _target("saxpy", fresh)
    dispatcher = target.python_function()
    assert not dispatcher.signatures  # not compiled yet: the first call would compile it
    seen, clock = _compiled_at_each_reading(dispatcher)
    monkeypatch.setattr(check, "time", clock)
    report = check_baseline(target)
    assert report.correct
    assert seen == [1, 1]  # the clock started and stopped around a compiled function's call


def test_the_python_leg_of_bench_calls_a_numba_original_once_untimed(monkeypatch, fresh):
    request = BenchRequest(str(fresh), "smooth", 3, tuple(SPECS["smooth"]))
    dispatcher = _target("smooth", fresh).python_function()
    assert not dispatcher.signatures
    seen, clock = _compiled_at_each_reading(dispatcher)
    monkeypatch.setattr(bench_leg, "time", clock)
    result = bench_leg.run_leg(request, "python", str(fresh.parent / "python.npz"))
    assert result.calls == 3
    assert seen == [1] * 6  # every timed call's start and end


def test_a_numba_original_is_raced_after_an_untimed_call_that_compiles_it(fresh):
    target = _target("shifted_squares", fresh)
    values = target.inputs(None)
    loaded = NumpyOriginal(str(fresh), "shifted_squares").load()
    assert loaded.compiled_at_first_call
    assert not NumpyOriginal(str(ROOT / "tests" / "fixtures" / "default_arguments.py"), "softened").load().compiled_at_first_call
    dispatcher = module_at(str(fresh), "numpy").shifted_squares
    calls: list[tuple[float, int]] = []  # when each call started, and how many versions were compiled then

    def watched(arguments):
        calls.append((time.time(), len(dispatcher.signatures)))
        return loaded(arguments)

    original = TeamSizedCall(watched, compiled_at_first_call=True)
    baseline = build_baseline(target.kernel, Signature.of_values(target.kernel, values))
    rules = RaceRules(target.kernel.outputs, min_repeats=3, min_total_s=0.0)
    result = race_in_process(baseline, original, values, rules)
    assert result.outcome == "ok" and result.comparison.correct, result.message
    checked_run_start = result.timed[0][0]
    assert [compiled for start, compiled in calls if start < checked_run_start] == [0]  # one untimed call compiled it
    assert {compiled for start, compiled in calls if start >= checked_run_start} == {1}


def test_a_numba_function_accelerated_runs_its_native_build_and_equals_the_numba_function():
    compiled = _target("row_sums").python_function()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        accelerated = repoos_agent.accelerate(graph=str(ROOT / "tests" / "no-such-store.sqlite"))(compiled)
        a = np.random.default_rng(4).standard_normal((30, 20))
        want, got = np.zeros(30), np.zeros(30)
        compiled(a, want, 30, 20)
        accelerated(a, got, 30, 20)
    assert accelerated.route == "baseline build (source order)"
    np.testing.assert_allclose(got, want, rtol=1e-12)
