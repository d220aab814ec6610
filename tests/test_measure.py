"""Measurement: a broken candidate becomes a verdict, never a crashed engine; timed runs never overlap."""

from __future__ import annotations

import multiprocessing
import time
from dataclasses import replace
from itertools import pairwise

import pytest

from repoos_agent.backends import build_baseline, build_shared_library
from repoos_agent.backends.library import NativeKernel
from repoos_agent.check import written_arrays
from repoos_agent.measure import measurement_lock
from repoos_agent.measure.isolated import MeasurementWorker, RaceRules
from repoos_agent.model import Signature
from repoos_agent.target import resolve_target


@pytest.fixture(scope="module")
def gemm():
    target = resolve_target("gemm")
    values = target.inputs("MINI")
    baseline = build_baseline(target.kernel, Signature.of_values(target.kernel, values))
    return target, values, baseline


@pytest.fixture(scope="module")
def worker():
    worker = MeasurementWorker()
    yield worker
    worker.close()


def sabotaged(baseline: NativeKernel, find: str, replacement: str) -> NativeKernel:
    """The baseline's C with one edit, built for real: what a code generator bug would produce."""
    assert find in baseline.source.text
    source = replace(baseline.source, text=baseline.source.text.replace(find, replacement, 1))
    return NativeKernel(baseline.signature, source, build_shared_library(source))


def rules(target) -> RaceRules:
    return RaceRules(tuple(written_arrays(target)), min_repeats=3, min_total_s=0.0)


def test_a_correct_candidate_is_timed_against_the_baseline(gemm, worker):
    target, values, baseline = gemm
    result = worker.race(baseline, baseline, values, rules(target), timeout_s=60)
    assert result.outcome == "ok" and result.comparison.correct
    assert len(result.baseline.samples) >= 3 and len(result.candidate.samples) == len(result.baseline.samples)
    assert result.speedup > 0


def test_long_runs_skip_the_warm_up_and_take_half_the_repeats(gemm, worker):
    # A call of a second or more (here: any call, long_run_s=0) is warm after the checked run.
    target, values, baseline = gemm
    short = replace(rules(target), min_repeats=6)
    result = worker.race(baseline, baseline, values, short, timeout_s=60)
    assert len(result.baseline.samples) >= 6
    result = worker.race(baseline, baseline, values, replace(short, long_run_s=0.0), timeout_s=60)
    assert len(result.baseline.samples) == len(result.candidate.samples) == 3
    assert len(result.timed) == 2 + 2 * 3  # the checked pair, then three timed pairs
    result = worker.race(baseline, baseline, values, replace(short, long_run_s=0.0, min_repeats=1), timeout_s=60)
    assert len(result.baseline.samples) == 1  # never more than asked for


def test_wrong_output_is_incorrect_before_any_timing(gemm, worker):
    target, values, baseline = gemm
    wrong = sabotaged(baseline, "C[i][j] * beta", "C[i][j] * (beta + 1.0)")
    result = worker.race(baseline, wrong, values, rules(target), timeout_s=60)
    assert result.outcome == "incorrect" and "C (" in result.message
    assert result.baseline is None


def test_a_crashing_candidate_is_a_runtime_error_and_the_worker_recovers(gemm, worker):
    target, values, baseline = gemm
    crashing = sabotaged(baseline, "    return 0;\n}", "    *(volatile int *) 0 = 1;\n    return 0;\n}")
    result = worker.race(baseline, crashing, values, rules(target), timeout_s=60)
    assert result.outcome == "runtime_error"
    assert "candidate crashed the measuring process (signal SIGSEGV)" in result.message
    assert worker.race(baseline, baseline, values, rules(target), timeout_s=60).outcome == "ok"


def test_an_endless_candidate_times_out_and_the_worker_recovers(gemm, worker):
    target, values, baseline = gemm
    endless = sabotaged(baseline, "    return 0;\n}", "    for (volatile int spin = 1; spin;) {}\n    return 0;\n}")
    start = time.monotonic()
    result = worker.race(baseline, endless, values, rules(target), timeout_s=3)
    assert result.outcome == "timeout" and "while running the candidate" in result.message
    assert time.monotonic() - start < 10
    assert worker.race(baseline, baseline, values, rules(target), timeout_s=60).outcome == "ok"


def _hold_lock(intervals, rounds: int) -> None:
    for _ in range(rounds):
        with measurement_lock():
            start = time.monotonic()
            time.sleep(0.01)
            intervals.append((start, time.monotonic()))


def test_timed_runs_in_different_processes_never_overlap():
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        intervals = manager.list()
        processes = [context.Process(target=_hold_lock, args=(intervals, 10)) for _ in range(3)]
        for process in processes:
            process.start()
        for process in processes:
            process.join(60)
        spans = sorted(intervals)
    assert len(spans) == 30
    assert all(earlier[1] <= later[0] for earlier, later in pairwise(spans))
