"""Measurement: a broken candidate becomes a verdict, never a crashed engine; timed runs never overlap."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest

from repoos_agent.backends import build_baseline, build_shared_library
from repoos_agent.backends.cc import engine_work
from repoos_agent.backends.library import NativeKernel
from repoos_agent.check import written_arrays
from repoos_agent.evaluate import python_original
from repoos_agent.measure import measurement_lock
from repoos_agent.measure.isolated import MeasurementWorker, RaceRules
from repoos_agent.model import Signature
from repoos_agent.target import resolve_target
from tests.test_busy_machine import SlowCopy


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


def test_a_slow_baseline_is_timed_at_its_own_pace_not_the_fast_candidates(gemm, worker):
    """A BLAS candidate of 0.3 s against a naive baseline of 11.6 s (attention at LARGE): the baseline takes the
    long-run count, one call a turn, while the candidate keeps its full count, so the race ends within its timeout."""
    from repoos_agent.measure.isolated import Contender

    target, values, baseline = gemm
    slow = SlowCopy(Contender.of(baseline), 0.06)
    long_runs = replace(rules(target), min_repeats=5, long_run_s=0.05, turn=3)
    result = worker.race(slow, baseline, values, long_runs, timeout_s=60)
    assert result.outcome == "ok", result.message
    assert len(result.baseline.samples) == 3  # the long-run count, one timed call a turn, no warm-up
    assert len(result.candidate.samples) == 9  # three turns of three: at least the full count of five
    assert len(result.timed) == 2 + 3 + 9


def test_a_contender_runs_in_turns_after_an_untimed_call(gemm, worker):
    # The first call after the other contender's pays for the other's thread pool and caches: it runs untimed.
    from repoos_agent.measure.isolated import Contender

    target, values, baseline = gemm
    sleepy = SlowCopy(Contender.of(baseline), 0.01)
    result = worker.race(sleepy, sleepy, values, replace(rules(target), min_repeats=6, turn=3), timeout_s=60)
    assert len(result.baseline.samples) == len(result.candidate.samples) == 6
    starts = [start for start, _ in result.timed[2:]]  # after the checked pair: three timed calls a turn
    between_turns = [starts[turn * 3] - starts[turn * 3 - 1] for turn in range(1, 4)]
    assert min(between_turns) >= 2 * 0.01  # the turn's last timed call, then the next side's untimed one


def _minor_faults(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[7])


def test_the_measuring_process_reuses_the_heap_pages_a_call_freed(worker):
    """NumPy makes fresh temporaries at every call. Had the worker given freed heap memory back to the
    system, each call would fault its pages in again, and NumPy's time would depend on what the call
    before it left on the heap (attention at MEDIUM: 2.1 ms to 6.9 ms a call across races)."""
    target = resolve_target("numpy:attention")
    values = target.inputs("MEDIUM")
    original = python_original(target)
    few = RaceRules(tuple(target.kernel.outputs), 100.0, warmups=0, min_repeats=3, min_total_s=0.0, turn=3)
    worker.race(original, original, values, few, timeout_s=120)
    pid = worker._process.pid
    for repeats in (3, 27):
        before = _minor_faults(pid)
        rules = replace(few, min_repeats=repeats, max_repeats=repeats)
        assert worker.race(original, original, values, rules, timeout_s=120).outcome == "ok"
        # Each call's temporaries span about 3,000 pages; with freed memory given back, a race faulted 1,800 to 2,600.
        assert _minor_faults(pid) - before < 500


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


def _race_an_endless_candidate(racing) -> None:
    """An engine whose worker runs a candidate that never ends (the test kills this engine)."""
    target = resolve_target("gemm")
    values = target.inputs("MINI")
    baseline = build_baseline(target.kernel, Signature.of_values(target.kernel, values))
    endless = sabotaged(baseline, "    return 0;\n}", "    for (volatile int spin = 1; spin;) {}\n    return 0;\n}")
    racing.set()
    MeasurementWorker().race(baseline, endless, values, rules(target), timeout_s=600)


def _children(parent: int) -> list[int]:
    """Live processes whose parent is `parent` (zombies count as gone)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[1]) == parent:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_the_worker_stops_when_the_engine_is_killed_mid_race():
    # `repoos eval` killed during a long race must not leave its worker spinning on a core for minutes.
    context = multiprocessing.get_context("spawn")
    racing = context.Event()
    engine = context.Process(target=_race_an_endless_candidate, args=(racing,))
    engine.start()
    assert racing.wait(120)
    deadline = time.monotonic() + 30
    workers = []
    while not workers and time.monotonic() < deadline:
        workers = [pid for pid in _children(engine.pid) if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        time.sleep(0.1)
    assert workers, "the engine started no measuring worker"
    time.sleep(1.0)  # the worker is inside the endless candidate now
    engine.kill()
    engine.join(10)
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in workers if _alive(pid)]
    for pid in left:  # never leave a spinning process behind, even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert not left


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


def test_builds_and_timed_runs_never_overlap(gemm):
    # On two cores a compile beside a parallel candidate's timed run slowed it several times over: builds share
    # the cores' lock with each other, and a timed run holds it alone.
    _, _, baseline = gemm
    source = replace(baseline.source, text=baseline.source.text + f"\n/* {time.time_ns()} */\n")  # a new build
    released: list[float] = []

    def timed_run() -> None:
        with measurement_lock():
            time.sleep(1.0)
            released.append(time.monotonic())

    runner = threading.Thread(target=timed_run)
    runner.start()
    time.sleep(0.2)
    build_shared_library(source)
    built = time.monotonic()
    runner.join()
    assert built > released[0]

    acquired: list[float] = []

    def waiting_run() -> None:
        with measurement_lock():
            acquired.append(time.monotonic())

    with engine_work():
        runner = threading.Thread(target=waiting_run)
        runner.start()
        time.sleep(0.5)
        compiled = time.monotonic()
    runner.join()
    assert acquired[0] >= compiled


PROBE_UNDER_THE_LOCK = """
from repoos_agent.measure import measurement_lock
from repoos_agent.measure.cores import probe_machine
with measurement_lock():
    print(probe_machine().team)
"""


def test_the_machine_probe_runs_under_a_timed_runs_lock_in_a_fresh_process(tmp_path):
    # The probe is built on its first use, and a build takes the cores' lock shared: under the thread's own
    # exclusive hold it waited for itself, and a benchmark that sized its team under the lock hung for hours.
    environment = {**os.environ, "REPOOS_CACHE_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", PROBE_UNDER_THE_LOCK], capture_output=True, text=True, env=environment, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) >= 1
