"""A race of several contenders in one process, interleaved: each turn gives every contender its timed runs in
turn, so a passing load falls on all of them alike instead of on whichever ran while it passed.

The rules are the head-to-head race's (`isolated.RaceRules`, `race_in_process`): the machine probed before and
after under the measurement lock, every timed run under the lock and noted when more tasks wanted the cores than
at the start, a turn of one untimed call then a few timed ones for short runs, warm-ups and repeats shaped by each
contender's first run. It serves contenders that are plain callables checked beforehand by their track (the fsm
track's variants, whose outputs its own exact comparison has already judged), so it times and compares nothing else.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from repoos_agent.measure.cores import MachineState, prepare_probe, probe_machine, runnable_others
from repoos_agent.measure.isolated import RaceRules
from repoos_agent.measure.lock import measurement_lock
from repoos_agent.measure.timing import Timing

T = TypeVar("T")


@dataclass(frozen=True)
class Field:
    """The race's outcome: each contender's timing, and the machine as the probes and the timed runs found it."""

    timings: dict[str, Timing]
    machine: MachineState
    machine_after: MachineState
    timed_runs: int
    crowded: int  # timed runs during which more tasks wanted the cores than at the start

    @property
    def machine_busy(self) -> bool:
        """Another process held a core before or after the timed runs."""
        return self.machine.busy or self.machine_after.busy

    def unsettled_reason(self) -> str:
        """Why the numbers may not describe one state of the machine ("" when they do), as a head-to-head says it."""
        reasons = []
        if self.machine.team != self.machine_after.team:
            reasons.append(f"the machine changed during the race ({self.machine.describe()}, then {self.machine_after.describe()})")
        if self.crowded * 4 > self.timed_runs:
            reasons.append(f"{self.crowded} of {self.timed_runs} timed runs had another task competing for the cores")
        for name, timing in self.timings.items():
            if timing.modes is not None:
                reasons.append(f"{name}'s {timing.modes.describe()}")
        return "; ".join(reasons)


def race_interleaved(
    contenders: Mapping[str, Callable[[T], object]],
    prepare: Callable[[], T],
    rules: RaceRules,
    report: Callable[[int, dict[str, float]], None] | None = None,
) -> Field:
    """Time each of `contenders` on `prepare()`'s fresh inputs (never inside the clock), interleaved turn by turn;
    `report(turn, {name: seconds})` hears each turn's last timed run of each contender."""
    prepare_probe()
    with measurement_lock():
        machine = probe_machine()
    quiet_others = machine.cores - machine.team
    crowded = 0
    timed_runs = 0

    def timed_run(run: Callable[[T], object]) -> float:
        nonlocal crowded, timed_runs
        inputs = prepare()
        others = runnable_others()
        with measurement_lock():
            start = time.perf_counter()
            run(inputs)
            elapsed = time.perf_counter() - start
        timed_runs += 1
        if others is not None and others > quiet_others:
            crowded += 1
        return elapsed

    first = {name: timed_run(run) for name, run in contenders.items()}
    counts = {name: rules.warmups_and_repeats(first[name]) for name in contenders}
    for name, run in contenders.items():
        for _ in range(counts[name][0]):
            inputs = prepare()
            with measurement_lock():
                run(inputs)
    turns = {name: rules.turn_shape(first[name], counts[name][1]) for name in contenders}
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    turn = 0
    while True:
        turn += 1
        for name, run in contenders.items():
            untimed, per_turn = turns[name]
            for _ in range(untimed):
                inputs = prepare()
                with measurement_lock():
                    run(inputs)
            for _ in range(per_turn):
                samples[name].append(timed_run(run))
        if report is not None:
            report(turn, {name: times[-1] for name, times in samples.items()})
        enough = all(len(samples[name]) >= counts[name][1] for name in contenders)
        total = sum(sum(times) for times in samples.values())
        if max(map(len, samples.values())) >= rules.max_repeats or (enough and total >= rules.min_total_s):
            break
    with measurement_lock():
        after = probe_machine()
    return Field({name: Timing.of(times) for name, times in samples.items()}, machine, after, timed_runs, crowded)
