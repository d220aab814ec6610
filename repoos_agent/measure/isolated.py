"""Head-to-head measurement in a separate process, so a bad candidate cannot take the engine down.

A long-lived worker process loads both libraries, runs baseline and candidate on
copies of the same inputs, compares the candidate's outputs with the baseline's
before any time counts, then times them in alternating turns (a turn is one
untimed call, then a few timed ones) under the measurement lock. A crash kills
only the worker; an endless loop is cut off by the parent's time limit. Either
becomes an outcome.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Literal, Protocol

from repoos_agent.backends.cc import engine_work
from repoos_agent.backends.library import NativeKernel, prefer_sleeping_threads
from repoos_agent.codegen import CSource
from repoos_agent.errors import RepoosError
from repoos_agent.measure.compare import Comparison, compare_outputs
from repoos_agent.measure.cores import MachineState, prepare_probe, probe_machine, runnable_others
from repoos_agent.measure.heap import keep_freed_heap
from repoos_agent.measure.layout import fresh_copy
from repoos_agent.measure.lock import measurement_lock
from repoos_agent.measure.timing import Timing
from repoos_agent.model.signature import Signature


@dataclass(frozen=True)
class Contender:
    """A built kernel as the worker needs it: picklable, loaded on the other side."""

    signature: Signature
    source: CSource
    library: str

    @staticmethod
    def of(native: NativeKernel) -> Contender:
        return Contender(native.signature, native.source, str(native.library))

    def load(self) -> NativeKernel:
        return NativeKernel(self.signature, self.source, Path(self.library))


class LoadableContender(Protocol):
    """Anything the worker can load into a callable taking the kernel's arguments by name (e.g. a Numba build)."""

    def load(self) -> Callable[[Mapping[str, object]], object]: ...


@dataclass(frozen=True)
class RaceRules:
    outputs: tuple[str, ...]
    tolerance_scale: float = 1.0  # 100 when reductions may be reassociated
    warmups: int = 1
    min_repeats: int = 5
    max_repeats: int = 30
    min_total_s: float = 0.3
    stop_below_speedup: float | None = None  # a first run slower than this is not timed further
    long_run_s: float = 1.0  # runs at least this long: the checked run warmed them up, half the repeats do
    turn: int = 3  # timed runs of one contender in a row, after an untimed one (short runs only)

    def turn_shape(self, first_s: float, min_repeats: int) -> tuple[int, int]:
        """Untimed and timed calls of one contender's turn. The first call after the other contender's
        pays for the other's thread pool and caches: NumPy's attention at MEDIUM spread ±30-60% in a race
        timed call by call, and ±2-3% in turns, with the same median (`heap.py` says what moved the median). A run of a second
        or more does not notice, and an untimed call would double its race: it keeps one timed call a turn."""
        if first_s >= self.long_run_s:
            return 0, 1
        return 1, max(1, min(self.turn, min_repeats))

    def warmups_and_repeats(self, first_s: float) -> tuple[int, int]:
        """Warm-ups and minimum repeats after a first (checked) run of `first_s` seconds. A run of a
        second or more has warm caches and pages after the checked run and a median over half the
        repeats (at least three) is as steady as a short run's; the full count would make a study
        of slow kernels (adi at LARGE: 8 s a call) take hours. Each contender is shaped by its own
        first run: a fast candidate of a slow baseline keeps the full count, as a short run needs
        it, and the slow baseline does not repeat at the fast one's pace (NumPy's attention at
        LARGE: a 0.3 s BLAS candidate made its 11.6 s baseline run ten times, past the timeout)."""
        if first_s < self.long_run_s:
            return self.warmups, self.min_repeats
        return 0, min(self.min_repeats, max(3, (self.min_repeats + 1) // 2))


RaceOutcome = Literal["ok", "incorrect", "runtime_error", "timeout"]
"""How a race ended; each outcome but `ok` is also the evaluation's verdict (`repoos_agent.legality.Verdict`)."""


@dataclass(frozen=True)
class HeadToHead:
    """What happened: `ok`, `incorrect`, `runtime_error` or `timeout`, with times when `ok`, and the
    machine's state before and after the timed runs, and the thread team they ran with."""

    outcome: RaceOutcome
    message: str
    comparison: Comparison | None = None
    baseline: Timing | None = None
    candidate: Timing | None = None
    timed: tuple[tuple[float, float], ...] = ()  # wall-clock (start, end) of every timed run, for audits
    machine: MachineState | None = None  # probed before the first run
    machine_after: MachineState | None = None  # probed after the last
    team: int | None = None  # threads of the candidate's parallel regions
    crowded: int = 0  # timed runs during which more tasks wanted the cores than at the start

    @property
    def speedup(self) -> float | None:
        if self.baseline is None or self.candidate is None or self.candidate.median_s <= 0:
            return None
        return self.baseline.median_s / self.candidate.median_s

    @property
    def machine_busy(self) -> bool:
        """Another process held a core before or after the timed runs."""
        return any(state.busy for state in (self.machine, self.machine_after) if state is not None)

    @property
    def settled(self) -> bool:
        """Whether the numbers describe one state of the machine: the team it allowed did not change
        between the probes, most timed runs met no competing task, and neither contender's samples
        are bimodal."""
        return not self.unsettled_reason()

    @property
    def mostly_crowded(self) -> bool:
        """More than a quarter of the timed runs met a competing task: more than the median shrugs off."""
        return self.crowded * 4 > len(self.timed)

    def unsettled_reason(self) -> str:
        """Why the numbers may not describe one state of the machine ("" when they do)."""
        reasons = []
        before, after = self.machine, self.machine_after
        if before is not None and after is not None and before.team != after.team:
            reasons.append(f"the machine changed during the race ({before.describe()}, then {after.describe()})")
        if self.mostly_crowded:
            reasons.append(f"{self.crowded} of {len(self.timed)} timed runs had another task competing for the cores")
        for name, timing in (("baseline", self.baseline), ("candidate", self.candidate)):
            if timing is not None and timing.modes is not None:
                reasons.append(f"the {name}'s {timing.modes.describe()}")
        return "; ".join(reasons)


def race_in_process(
    baseline: Callable[[Mapping[str, object]], object],
    candidate: Callable[[Mapping[str, object]], object],
    values: Mapping[str, object],
    rules: RaceRules,
    report=None,
) -> HeadToHead:
    """The race itself (the worker runs this); `report(stage)` says what is about to run.

    Each side is a built kernel or any callable taking the kernel's arguments by name (a Numba build;
    the NumPy original, the reference of a NumPy kernel's peers).
    The machine is probed first and the candidate's team sized to the cores it found free; it is
    probed again at the end, and every timed run notes whether more tasks wanted the cores than at
    the start, so the caller can tell one state of the machine from two."""
    report = report or (lambda _stage: None)
    prepare_probe()
    with measurement_lock():
        machine = probe_machine()
    team = machine.team
    for contender in (baseline, candidate):
        set_team = getattr(contender, "set_team", None)
        if set_team is not None:
            set_team(team)
        if getattr(contender, "compiled_at_first_call", False):
            with engine_work():  # untimed: a JIT's first call is its compiler's, which the checked run must not time
                contender(fresh_copy(values))
    quiet_others = machine.cores - team  # the other tasks the team was sized around
    crowded = 0

    def timed_run(kernel, arguments, timed: list[tuple[float, float]]) -> float:
        nonlocal crowded
        others = runnable_others()
        with measurement_lock():
            wall, start = time.time(), time.perf_counter()
            kernel(arguments)
            elapsed = time.perf_counter() - start
            timed.append((wall, time.time()))
        if others is not None and others > quiet_others:
            crowded += 1
        return elapsed

    def finished(verdict: RaceOutcome, message: str = "", comparison=None, baseline_t=None, candidate_t=None) -> HeadToHead:
        """The result, with the machine probed once more now that the timed runs are over."""
        with measurement_lock():
            after = probe_machine()
        return HeadToHead(verdict, message, comparison, baseline_t, candidate_t, tuple(timed), machine, after, team, crowded)

    want, got = fresh_copy(values), fresh_copy(values)
    first: dict[str, float] = {}
    timed: list[tuple[float, float]] = []
    for name, kernel, arguments in (("baseline", baseline, want), ("candidate", candidate, got)):
        report(name)
        first[name] = timed_run(kernel, arguments, timed)
    comparison = compare_outputs(want, got, list(rules.outputs), rules.tolerance_scale)
    if not comparison.correct:
        worst = ", ".join(f"{name} ({error:.2e})" for name, error in comparison.errors if name in comparison.mismatched)
        return finished("incorrect", f"outputs differ from the baseline's: {worst}", comparison)
    if rules.stop_below_speedup and first["baseline"] < rules.stop_below_speedup * first["candidate"]:
        # One slow run is not enough to stop: a second must confirm it (the first may have met a busy core).
        first["candidate"] = min(first["candidate"], timed_run(candidate, fresh_copy(values), timed))
        if first["baseline"] < rules.stop_below_speedup * first["candidate"]:
            estimate = first["baseline"] / first["candidate"]
            message = f"stopped after two runs: about {estimate:.2f}x, far behind the best so far"
            return finished("ok", message, comparison, Timing.of([first["baseline"]]), Timing.of([first["candidate"]]))
    report("timing")
    # The checked runs' outputs go before any time counts: held, they kept memory in the middle of the heap, and
    # every later call's fresh arrays faulted their pages in again (NumPy's covariance at MEDIUM: 0.82 ms, 0.59 ms without).
    del want, got
    contenders = {"baseline": baseline, "candidate": candidate}
    counts = {name: rules.warmups_and_repeats(first[name]) for name in contenders}
    for name, kernel in contenders.items():
        for _ in range(counts[name][0]):
            kernel(fresh_copy(values))
    turns = {name: rules.turn_shape(first[name], counts[name][1]) for name in contenders}
    samples: dict[str, list[float]] = {"baseline": [], "candidate": []}
    while True:
        for name, kernel in contenders.items():
            untimed, per_turn = turns[name]
            for _ in range(untimed):
                with measurement_lock():
                    kernel(fresh_copy(values))
            for _ in range(per_turn):
                samples[name].append(timed_run(kernel, fresh_copy(values), timed))
        enough = all(len(samples[name]) >= counts[name][1] for name in contenders)
        total = sum(samples["baseline"]) + sum(samples["candidate"])
        if max(len(times) for times in samples.values()) >= rules.max_repeats or (enough and total >= rules.min_total_s):
            break
    return finished("ok", "", comparison, Timing.of(samples["baseline"]), Timing.of(samples["candidate"]))


def _serve(connection: Connection) -> None:
    """The worker's loop: one job in, stage reports and one result out."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    keep_freed_heap()
    threading.Thread(target=_exit_with_the_engine, daemon=True, name="repoos-measure-watch").start()
    while True:
        try:
            job = connection.recv()
        except EOFError:
            return
        baseline, candidate, values, rules = job
        try:
            result = race_in_process(
                baseline.load(), candidate.load(), values, rules, lambda stage: connection.send(("stage", stage))
            )
        except RepoosError as error:
            result = HeadToHead("runtime_error", str(error))
        except Exception as error:  # the worker's boundary: anything here is a verdict for the parent, not a crash
            result = HeadToHead("runtime_error", f"{type(error).__name__}: {error}")
        connection.send(("result", result))


def _exit_with_the_engine() -> None:
    """End the worker once the engine process that started it is gone (killed in the middle of a
    study): a race of a slow kernel would otherwise run on for minutes, holding a core and the measurement
    lock, with nobody to report to. It blocks on the parent's sentinel (a pipe the parent's death closes)
    and never wakes otherwise: a thread polling beside a timed run would take the core from a kernel's
    thread at every wake-up. It acts while a C build runs (ctypes releases the GIL around the call); a
    Numba contender holds the GIL, so there it acts once the call returns."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return  # not a spawned worker: no engine to outlive
    multiprocessing.connection.wait([parent.sentinel])
    os._exit(1)


class MeasurementWorker:
    """One worker process, restarted after a crash or a time-out; one job at a time."""

    def __init__(self) -> None:
        self._context = multiprocessing.get_context("spawn")
        self._process = None
        self._connection: Connection | None = None
        self._lock = threading.Lock()

    def _start(self) -> None:
        prefer_sleeping_threads()  # the worker's NumPy loads its OpenBLAS before any job arrives
        parent, child = self._context.Pipe()
        self._process = self._context.Process(target=_serve, args=(child,), daemon=True, name="repoos-measure")
        self._process.start()
        child.close()
        self._connection = parent

    def _stop(self) -> None:
        if self._process is not None and self._process.is_alive():
            self._process.kill()
            self._process.join(5)
        self._process, self._connection = None, None

    def race(
        self,
        baseline: NativeKernel | LoadableContender,
        candidate: NativeKernel | LoadableContender,
        values: Mapping[str, object],
        rules: RaceRules,
        timeout_s: float,
    ) -> HeadToHead:
        """Run the race in the worker; a crash or `timeout_s` without an answer is an outcome, not an error.

        Each side is a built kernel, or any picklable contender the worker loads itself."""
        with self._lock:
            if self._process is None or not self._process.is_alive():
                self._start()
            connection = self._connection
            stage = "start"
            try:
                sides = [Contender.of(side) if isinstance(side, NativeKernel) else side for side in (baseline, candidate)]
                connection.send((*sides, dict(values), rules))
            except (BrokenPipeError, OSError):
                self._stop()
                return HeadToHead("runtime_error", "the measuring process was gone; it restarts on the next race")
            deadline = time.monotonic() + timeout_s
            while True:
                remaining = deadline - time.monotonic()
                try:
                    ready = remaining > 0 and connection.poll(remaining)
                    if not ready:
                        self._stop()
                        return HeadToHead("timeout", f"no answer within {timeout_s:g} s (while running the {stage})")
                    kind, payload = connection.recv()
                except (EOFError, OSError):
                    code = self._process.exitcode if self._process is not None else None
                    self._process.join(5) if self._process is not None else None
                    code = self._process.exitcode if self._process is not None else code
                    self._stop()
                    return HeadToHead("runtime_error", f"the {stage} crashed the measuring process ({_describe_exit(code)})")
                if kind == "stage":
                    stage = payload
                else:
                    return payload

    def close(self) -> None:
        with self._lock:
            self._stop()


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


_WORKER: MeasurementWorker | None = None
_WORKER_LOCK = threading.Lock()


def shared_worker() -> MeasurementWorker:
    """The process's measuring worker, started on first use."""
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is None:
            _WORKER = MeasurementWorker()
        return _WORKER


_PEER_WORKERS: dict[str, MeasurementWorker] = {}


def peer_worker(runtime: str) -> MeasurementWorker:
    """A measuring worker of its own for a peer's runtime (`numba`, `dace`, `pythran`, a C tool), started on first use.

    A runtime loaded into a process stays there, with its thread pool: in a worker shared by every peer and the
    engine, NumPy's mvt took 3.42 ms in Numba's race and 0.08 ms in Pythran's, and vadv's winner ran at 3.27 ms
    against NumPy after the peers of 37 kernels had run there, 1.08 ms in a fresh worker. With its own worker,
    each peer is timed beside NumPy alone, and the engine's races never meet a peer's threads."""
    with _WORKER_LOCK:
        if runtime not in _PEER_WORKERS:
            _PEER_WORKERS[runtime] = MeasurementWorker()
        return _PEER_WORKERS[runtime]
