"""The fsm track's arena: each proposal built, qualified, compiled, and raced against the baseline; the fastest crowned.

A proposal becomes a variant by the registry's rewrites (`apply_steps`), never by a proposer's code. The
qualification is given, not chosen here: `qualify(variant)` returns a verdict (`qualified`, `wrong`, `unproven`)
and its reason, and only a qualified variant is compiled. Before any time counts, every contender's outcome on
every sample is compared with the Python original's (`compare.difference`): a variant that differs there is
reported `wrong` with the sample that shows it, and never races, whatever the qualification said.

The baseline (the IR as lowered) always races; the Python original is the reference for "x over CPython" and is
timed apart, a few runs, as it is orders of magnitude slower. A variant is crowned only when it leads the baseline
beyond the noise of either (the loop track's `leads_beyond_noise`); otherwise the baseline is. The race itself is
`measure.interleaved`: one timed run at a time, turn by turn, under the busy-machine rules of the loop track.
Every step is an event on the run's `EventStream`, so a TUI can show the race as it runs.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass

import numpy as np

from repoos_agent.agent.events import Event, EventKind, EventStream
from repoos_agent.agent.finish import leads_beyond_noise
from repoos_agent.errors import RepoosError
from repoos_agent.fsm import ir
from repoos_agent.fsm.compare import Outcome, difference, outcome
from repoos_agent.fsm.native import FsmNative
from repoos_agent.fsm.proposals import JOIN, Proposal
from repoos_agent.fsm.rewrites.registry import NotApplicable, Step, Variant, apply_steps
from repoos_agent.measure.interleaved import Field, race_interleaved
from repoos_agent.measure.isolated import RaceRules
from repoos_agent.measure.timing import Timing, time_runs

FSM_TRACK = "fsm"
QUALIFIED = "qualified"
BASELINE = "baseline"
PYTHON_RUNS = 3
"""Timed runs of the Python original: the reference only, and the slowest contender by far."""

Qualifier = Callable[[Variant], tuple[str, str]]
"""`qualify(variant)`: (`qualified`, why) or (`wrong` / `unproven`, why); only a qualified variant races."""

RULES = RaceRules(outputs=())
"""The loop track's race rules (turns, warm-ups, repeats); the outputs are compared by the arena, exactly."""


@dataclass(frozen=True)
class Entrant:
    """One contender's fate: its steps, its verdict and why, and its race timing when it raced."""

    label: str
    steps: tuple[Step, ...]
    verdict: str  # baseline, qualified, wrong, unproven, inapplicable, malformed, refused (did not compile)
    reason: str
    timing: Timing | None = None


@dataclass(frozen=True)
class ArenaResult:
    """The race: every entrant in proposal order (the baseline first), the original's timing, and the crowned one."""

    target: str
    entrants: tuple[Entrant, ...]
    python: Timing
    winner: Entrant
    field: Field
    run: str

    @property
    def baseline(self) -> Entrant:
        return self.entrants[0]

    def over_baseline(self, entrant: Entrant) -> float | None:
        """How many times faster than the baseline `entrant` ran (None when it did not race)."""
        if entrant.timing is None or entrant.timing.median_s <= 0:
            return None
        return self.baseline.timing.median_s / entrant.timing.median_s  # type: ignore[union-attr]

    def over_python(self, entrant: Entrant) -> float | None:
        """How many times faster than the Python original `entrant` ran (None when it did not race)."""
        if entrant.timing is None or entrant.timing.median_s <= 0:
            return None
        return self.python.median_s / entrant.timing.median_s


class ArenaEvents:
    """Emits one arena's events on `stream` under one run id: the kinds the loop and tabular tracks use, with the
    fsm verdicts in `detail` (`run_started` names the track)."""

    def __init__(self, stream: EventStream, run: str | None = None) -> None:
        self.stream = stream
        self.run = run or uuid.uuid4().hex[:8]

    def emit(self, kind: EventKind, **fields: object) -> None:
        self.stream.emit(Event(kind, self.run, **fields))  # type: ignore[arg-type]

    def entrant(self, entrant: Entrant) -> None:
        verified = {QUALIFIED: "true", BASELINE: "true", "wrong": "false"}.get(entrant.verdict, "unknown")
        self.emit(
            "verification", schedule=entrant.label, verified=verified, feedback=entrant.reason, detail={"verdict": entrant.verdict}
        )


def run_arena(
    target: str,
    baseline_ir: ir.Function,
    original: Callable[..., object],
    samples: Sequence[Sequence[object]],
    proposals: Sequence[Proposal],
    qualify: Qualifier,
    events: EventStream | None = None,
    rules: RaceRules = RULES,
) -> ArenaResult:
    """Build, qualify, compile and check each proposal for `baseline_ir`, race the survivors with the baseline on
    `samples` (each a call's arguments), and crown the fastest (see the module's docstring)."""
    run = ArenaEvents(events or EventStream())
    run.emit("run_started", detail={"track": FSM_TRACK, "target": target, "proposals": len(proposals), "samples": len(samples)})
    wants = [outcome(original, arguments) for arguments in samples]
    baseline = FsmNative(baseline_ir, original)
    problem = _differs(baseline, samples, wants)
    if problem is not None:
        run.emit("run_finished", detail={"failed": problem})
        raise RepoosError(f"{target}: the fsm baseline differs from the Python original: {problem}")
    entrants = [Entrant(BASELINE, (), BASELINE, "the function as lowered")]
    racing: dict[str, Callable[..., object]] = {BASELINE: baseline}
    for proposal in proposals:
        run.emit("proposal", schedule=proposal.label, feedback=proposal.feedback)
        entrant, native = _enter(proposal, baseline_ir, original, samples, wants, qualify)
        if entrant.label in racing or any(e.label == entrant.label for e in entrants):
            continue
        run.entrant(entrant)
        entrants.append(entrant)
        if native is not None:
            racing[entrant.label] = native
    field = race_interleaved(
        {label: _calls(native) for label, native in racing.items()},
        lambda: _fresh(samples),
        rules,
        lambda turn, times: run.emit("race_sample", turn=turn, times=times),
    )
    python = time_runs(_calls(original), lambda: _fresh(samples), warmups=0, min_repeats=PYTHON_RUNS, max_repeats=PYTHON_RUNS)
    timed = tuple(
        Entrant(e.label, e.steps, e.verdict, e.reason, field.timings.get(e.label)) if e.label in racing else e for e in entrants
    )
    winner = crowned(timed)
    result = ArenaResult(target, timed, python, winner, field, run.run)
    run.emit(
        "run_finished",
        schedule=winner.label,
        speedup=result.over_baseline(winner),
        spread=winner.timing.spread if winner.timing else None,
        times={"python_s": python.median_s, **{e.label: e.timing.median_s for e in timed if e.timing}},
        detail={"machine_busy": field.machine_busy, "unsettled": field.unsettled_reason()},
    )
    return result


def crowned(entrants: Sequence[Entrant]) -> Entrant:
    """The fastest raced variant that leads the baseline beyond the noise of either; else the baseline (first)."""
    baseline = entrants[0]
    raced = [e for e in entrants[1:] if e.timing is not None]
    best = min(raced, key=lambda e: e.timing.median_s, default=None)  # type: ignore[union-attr]
    if best is None or baseline.timing is None:
        return baseline
    lead = baseline.timing.median_s / best.timing.median_s - 1  # type: ignore[union-attr]
    return best if leads_beyond_noise(lead, best.timing.spread, baseline.timing.spread) else baseline  # type: ignore[union-attr]


def _enter(
    proposal: Proposal,
    baseline_ir: ir.Function,
    original: Callable[..., object],
    samples: Sequence[Sequence[object]],
    wants: list[Outcome],
    qualify: Qualifier,
) -> tuple[Entrant, FsmNative | None]:
    """`proposal`'s entrant, and its compiled variant when it may race."""
    if proposal.steps is None:
        return Entrant(proposal.label, (), "malformed", proposal.feedback or ""), None
    steps, label = proposal.steps, JOIN.join(map(str, proposal.steps))
    try:
        variant = apply_steps(baseline_ir, steps)
    except NotApplicable as refused:
        return Entrant(label, steps, "inapplicable", str(refused)), None
    verdict, why = qualify(variant)
    if verdict != QUALIFIED:
        return Entrant(label, steps, verdict, why), None
    try:
        native = FsmNative(variant.function, original)
    except RepoosError as refused:
        return Entrant(label, steps, "refused", f"does not compile: {refused}"), None
    problem = _differs(native, samples, wants)
    if problem is not None:
        return Entrant(label, steps, "wrong", problem), None
    return Entrant(label, steps, QUALIFIED, why), native


def _differs(native: FsmNative, samples: Sequence[Sequence[object]], wants: list[Outcome]) -> str | None:
    """How `native` differs from the original on the first sample where it does (None when it never does)."""
    for index, (arguments, want) in enumerate(zip(samples, wants, strict=True)):
        problem = difference(want, outcome(native, arguments))
        if problem is not None:
            return f"on sample {index}: {problem}"
    return None


def _calls(function: Callable[..., object]) -> Callable[[list[tuple[object, ...]]], None]:
    """One timed run: `function` called on each sample in turn."""

    def run(samples: list[tuple[object, ...]]) -> None:
        for arguments in samples:
            with suppress(Exception):  # a sample that raises was compared with the original's raise before the race
                function(*arguments)

    return run


def _fresh(samples: Sequence[Sequence[object]]) -> list[tuple[object, ...]]:
    """Each sample's arguments with fresh copies of the ones a call may write (outside the clock)."""
    return [tuple(_copy(value) for value in arguments) for arguments in samples]


def _copy(value: object) -> object:
    if isinstance(value, bytearray):
        return bytearray(value)
    return value.copy() if isinstance(value, np.ndarray) else value
