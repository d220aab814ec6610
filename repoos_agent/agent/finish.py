"""The racing finish: the search's finalists re-measured with more repeats, and the rules that choose the winner.

A first look is a few runs of each of many candidates, so the fastest first look is often a lucky sample. The
finish races the fastest few again (with the stored kernel's schedule, and in a mixture each agent's own fastest),
races again what it could not decide, and crowns a schedule only for a lead beyond the noise; the identity (the
baseline itself) is always a contender. Each rule that breaks a tie is stated once below; docs/decisions.md keeps
the runs that made each rule what it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from repoos_agent.agent.budget import Budget
from repoos_agent.agent.control import SearchControl
from repoos_agent.agent.entry import Entry
from repoos_agent.agent.heuristic import HeuristicProposer
from repoos_agent.agent.ranking import by_speedup, counts_in_race
from repoos_agent.agent.search_config import SearchConfig
from repoos_agent.backends import build_baseline
from repoos_agent.errors import CompileError
from repoos_agent.evaluate import REASSOCIATION_TOLERANCE_SCALE, Evaluation, proved_build, python_original
from repoos_agent.measure import Timing
from repoos_agent.measure.cores import usable_cores
from repoos_agent.measure.isolated import RaceRules, shared_worker
from repoos_agent.measure.timing import seconds_text
from repoos_agent.model.signature import Signature
from repoos_agent.schedule import ScheduleError, parse_schedule
from repoos_agent.target import Target

RACE_FINALISTS = 3
"""The fastest first looks raced again; a mixture adds each agent's own fastest, a stored kernel its schedule."""
RACE_REPEATS = 15
"""Timed runs of each finalist in a race: several times a first look's, so its median and spread can be trusted."""
RACE_RETRIES = 2
"""Rounds in which the racing finish re-measures what it could not decide: a finalist whose race saw
two states of the machine, one raced at another team size than the others, or a tie within a wide spread."""
RETRY_PAUSE_S = 1.0
"""The pause before such a round: a re-measurement later in the run, when a passing load may be gone."""
NOISY_SPREAD = 0.15
"""A tie whose contenders spread wider than this is undecided rather than decided for the simplest."""
LEAD_FLOOR = 0.02
"""A lead this small never counts, however steady the runs: one race cannot promise so small a gain on the next."""


@dataclass(frozen=True)
class Contender:
    """A schedule in the race: its entry (None for the identity, the baseline itself), and the speedup over the
    baseline and spread of its latest race that counts."""

    entry: Entry | None
    speedup: float
    spread: float

    @property
    def schedule(self) -> str:
        """The schedule raced; "" for the identity."""
        return self.entry.schedule if self.entry is not None else ""

    @classmethod
    def raced(cls, entry: Entry, race: Evaluation) -> Contender:
        """`entry` at the figures of `race`, a re-measurement that counts (`counts_in_race`)."""
        return cls(entry, race.speedup or 0.0, race.spread or 0.0)


IDENTITY = Contender(None, 1.0, 0.0)
"""The source order: the baseline every speedup is over, so exactly 1.0x, and always in the race."""


@dataclass(frozen=True)
class Finish:
    """The racing finish's decision: the winner (None: the identity, the baseline itself) and how it was reached."""

    winner: Entry | None
    speedup: float
    spread: float
    machine_busy: bool
    remeasured: int
    note: str
    races: dict[str, Evaluation] = field(default_factory=dict)  # schedule -> its latest re-measurement that counts
    original: tuple[float, float] | None = None  # a NumPy program's original: speedup over the baseline, spread
    original_stays: bool = False  # ... and the winner did not beat it beyond the spread: the user's code stays


def leads_beyond_noise(lead: float, spread: float, other_spread: float) -> bool:
    """Whether a relative lead (0.1: 10% faster) of one side over the other counts: it exceeds both sides' spreads
    and `LEAD_FLOOR`. A lead within either spread may be that side's noise, so it decides nothing."""
    return lead > max(spread, other_spread, LEAD_FLOOR)


def beats(faster: Contender, slower: Contender) -> bool:
    """Whether `faster` leads `slower` beyond the noise of either (`leads_beyond_noise`)."""
    return leads_beyond_noise(faster.speedup / slower.speedup - 1, faster.spread, slower.spread)


def ties(raced: list[Contender]) -> list[Contender]:
    """The contenders, the identity among them, that no contender beats.

    Not only the fastest's lead counts: a fastest with a wide spread ties with everything below it, the
    identity too, and the identity, the simplest, would then take the tie from a steadier schedule that
    beats it clearly."""
    contenders = [IDENTITY, *raced]
    return [c for c in contenders if not any(beats(other, c) for other in contenders)]


def tie_preference(contender: Contender, keepers: list[str]) -> tuple[int, int, float]:
    """The order ties are given in, first best: the keepers in their order (the stored kernel's schedule, then a
    mixture's anchor), then the simplest schedule, then the fastest. Within the noise a schedule gains nothing
    sure, so a tie keeps what is already trusted, or else what does least."""
    schedule = contender.schedule
    kept = keepers.index(schedule) if schedule in keepers else len(keepers)
    return (kept, _complexity(schedule) if contender.entry is not None else 0, -contender.speedup)


def busy_machine_twin(choice: Contender, tied: list[Contender]) -> Contender:
    """On a busy machine, the tied parallel twin of `choice` (the same schedule with more loops parallel, at least
    as fast as the baseline), else `choice`. At the team a busy machine allows a parallel loop runs as fast as its
    serial form, and a swapped kernel sizes its team at each call, so the twin is never slower and faster once cores
    free up. Only a twin: that holds for `parallelize` alone, and a schedule that also transforms its loops may tie
    by noise alone and run slower."""
    serial = _serial_form(choice.schedule)
    twins = [c for c in tied if c.entry is not None and c.speedup >= 1.0 and _serial_form(c.schedule) == serial]
    return max(twins, key=lambda c: (_parallel_loops(c.schedule), c.speedup), default=choice)


def too_noisy_to_call(tied: list[Contender]) -> bool:
    """Whether a tie is measured again rather than given by preference: its contenders' spreads are so wide
    that another race may well break it."""
    return len(tied) > 1 and max(c.spread for c in tied) > NOISY_SPREAD


def original_holds(original: tuple[float, float], speedup: float, spread: float) -> bool:
    """Whether the user's own code stays: the winner at `speedup` ±`spread` does not beat the original (its speedup
    over the baseline, its spread) beyond the noise. A tie goes to the original: a schedule within the noise of
    NumPy's own speed gains nothing sure."""
    original_speedup, original_spread = original
    return not leads_beyond_noise(speedup / original_speedup - 1, spread, original_spread)


def racing_finish(
    target: Target,
    config: SearchConfig,
    leaderboard: list[Entry],
    race: Callable[[Entry, int], Evaluation],
    control: SearchControl,
    incumbent: Entry | None = None,
    budget: Budget | None = None,
) -> Finish:
    """Re-measure the finalists with more repeats (`race(entry, round)`, which also reports the race); a lead must
    exceed the spread to count. The race is where Z3 checks a finalist's loops, which the search deferred: one it
    refutes never counts, and the next fastest schedule takes its place.

    The incumbent (the stored kernel's schedule) is always a finalist when it is still legal and
    correct, and wins every tie: only a lead beyond the spread replaces a stored kernel. In a mixture,
    the heuristic's own pick from the same races wins the ties next (`_heuristics_pick`). Each finalist
    waits at the control's checkpoint: a pause holds the race, a cancel abandons it.

    What the first look cannot decide is measured again later in the run, up to `RACE_RETRIES`
    rounds: a race that saw two states of the machine, one run with another thread team than the
    last (a core was taken, or freed, in between: speedups of different teams do not compare), and
    a tie whose spread is too wide to call. On a busy machine, ties go to the schedule with more
    parallel loops (`busy_machine_twin`).
    """
    measured = [e for e in leaderboard if e.evaluation.verdict == "legal" and e.evaluation.correct and e.speedup > 0 and e.schedule]
    unique = {e.schedule: e for e in sorted(measured, key=lambda e: e.speedup)}  # the best entry of each schedule
    finalists = _finalists(measured, unique)
    if incumbent is not None and incumbent.schedule in unique and unique[incumbent.schedule] not in finalists:
        finalists.append(unique[incumbent.schedule])
    races: dict[str, tuple[Entry, Evaluation]] = {}
    shown: dict[str, Evaluation] = {}  # each finalist's latest re-measurement that counts, as every leaderboard shows it
    reserve = [entry for entry in by_speedup(unique.values()) if entry not in finalists]
    queue, remeasured = list(finalists), 0
    for attempt in range(RACE_RETRIES + 1):
        for entry in queue:
            control.checkpoint()
            evaluation = race(entry, attempt)
            races[entry.schedule] = (entry, evaluation)
            if counts_in_race(evaluation.verdict, evaluation.speedup):
                shown[entry.schedule] = evaluation
            elif evaluation.verdict == "verification_failed" and reserve:  # the next fastest goes up in its place
                finalists.append(reserve.pop(0))
                queue.append(finalists[-1])
        queue = _undecided(list(races.values()))
        if not queue or attempt == RACE_RETRIES:
            break
        if budget is not None and budget.over():  # what is undecided stays so, and the note says why
            budget.skip_round()
            break
        remeasured += len(queue)
        control.checkpoint()
        time.sleep(RETRY_PAUSE_S)
    raced = [Contender.raced(entry, ev) for entry, ev in races.values() if counts_in_race(ev.verdict, ev.speedup)]
    busy = any(ev.machine_busy for _, ev in races.values())
    stored = incumbent.schedule if incumbent is not None else None
    anchor = _heuristics_pick(measured, raced, stored, busy) if config.moa else None
    winner = _decide(raced, stored, busy, anchor)
    undecided = _undecided(list(races.values()))
    note = _finish_note(finalists, races, winner, _fastest(raced), stored, busy, remeasured, undecided, anchor)
    original = _race_original(target, config) if target.kernel.numpy_program else None
    stays = False
    if original is not None:
        original_speedup, original_spread = original
        faster = winner.entry is not None and winner.speedup > original_speedup
        duel = _race_winner_against_original(target, config, winner.schedule) if faster else None
        stays, verdict = _original_verdict(original, winner, duel)
        raced_too = f"The NumPy original raced too: {original_speedup:.2f}x over the baseline ±{original_spread:.0%}; it {verdict}."
        note = note.rstrip(".") + ". " + raced_too
    return Finish(winner.entry, winner.speedup, winner.spread, busy, remeasured, note, shown, original, stays)


def _original_verdict(original: tuple[float, float], winner: Contender, duel: OriginalRace | None) -> tuple[bool, str]:
    """Whether the user's own code stays, and why, in the words the finish sentence ends with.

    The head-to-head race decides when there is one. Each side's race against the native baseline is another
    race, minutes apart, and two ratios to a baseline measured at different times do not compare."""
    original_speedup, _ = original
    if original_speedup >= winner.speedup:
        return True, "is kept: it is the fastest"
    if duel is not None:
        head_to_head = f"raced head to head, {duel.describe()}"
        if not duel.clear_lead:
            return True, f"is kept: {head_to_head}"
        return False, f"is slower: {head_to_head}"
    if original_holds(original, winner.speedup, winner.spread):
        return True, f"is kept: the winner beats it by {winner.speedup / original_speedup - 1:.0%}, within the spread"
    return False, "is slower"


@dataclass(frozen=True)
class OriginalRace:
    """The finish's winner raced head to head against the NumPy original on the search's inputs."""

    original: Timing
    ours: Timing

    @property
    def ratio(self) -> float:
        """The winner's speedup over the original, median against median."""
        return self.original.median_s / self.ours.median_s

    @property
    def clear_lead(self) -> bool:
        """Whether the winner is faster beyond the noise: a median lead over `LEAD_FLOOR`, and the middle halves of
        the two contenders' runs do not overlap (the winner's third quartile below the original's first).

        Not a lead beyond either contender's spread: that lets the slowest quarter of one side decide, and NumPy's
        runs have a slow quarter (a temporary's fresh pages, a thread waking). Two runs of one build, alike in
        distribution, rarely lay their middle halves apart."""
        return self.ratio > 1 + LEAD_FLOOR and self.ours.middle_half()[1] < self.original.middle_half()[0]

    def describe(self) -> str:
        ours, theirs = (
            f"{seconds_text(low)} to {seconds_text(high)}" for low, high in (self.ours.middle_half(), self.original.middle_half())
        )
        return f"the winner ran at {self.ratio:.2f}x its speed, the middle half of its runs in {ours}, the original's in {theirs}"


def _finalists(measured: list[Entry], unique: dict[str, Entry]) -> list[Entry]:
    """The fastest `RACE_FINALISTS` schedules, then, in a mixture, each agent's own fastest that are not among them.

    A mixture measures more candidates than any of its agents alone, and the fastest first looks of a larger pool
    are more often lucky samples. With every agent's fastest in the race, the mixture's finish races what each
    agent's finish alone would have, and the race's own re-measurements pick among them."""
    finalists = by_speedup(unique.values())[:RACE_FINALISTS]
    for agent in dict.fromkeys(entry.agent for entry in measured):
        own = by_speedup({e.schedule: unique[e.schedule] for e in measured if e.agent == agent}.values())[:RACE_FINALISTS]
        finalists += [entry for entry in own if entry not in finalists]
    return finalists


def _race_original(target: Target, config: SearchConfig) -> tuple[float, float] | None:
    """The Python (NumPy) original raced against the native baseline on the search's inputs, outputs
    compared first: its speedup over the baseline and spread, or None when it could not be raced."""
    original = python_original(target)
    if original is None:
        return None
    kernel = target.kernel
    values = target.inputs(config.size, config.seed)
    baseline = build_baseline(kernel, Signature.of_values(kernel, values))
    rules = RaceRules(kernel.outputs, REASSOCIATION_TOLERANCE_SCALE, min_repeats=RACE_REPEATS)
    result = shared_worker().race(baseline, original, values, rules, config.timeout_s)
    if result.outcome != "ok" or result.speedup is None or result.candidate is None:
        return None
    return result.speedup, result.candidate.spread


def _race_winner_against_original(target: Target, config: SearchConfig, schedule: str) -> OriginalRace | None:
    """`schedule`'s build raced head to head against the NumPy original on the search's inputs, or None when the
    race could not run."""
    original = python_original(target)
    if original is None:
        return None
    kernel = target.kernel
    values = target.inputs(config.size, config.seed)
    try:
        ours = proved_build(target, Signature.of_values(kernel, values), schedule, config.allow_reassociation, config.compiler)
    except CompileError:
        return None
    rules = RaceRules(kernel.outputs, REASSOCIATION_TOLERANCE_SCALE, min_repeats=RACE_REPEATS)
    result = shared_worker().race(original, ours, values, rules, config.timeout_s)
    if result.outcome != "ok" or result.speedup is None or result.candidate is None or result.baseline is None:
        return None
    return OriginalRace(result.baseline, result.candidate)


def _fastest(raced: list[Contender]) -> Contender:
    """The fastest contender, the identity among them."""
    return max([IDENTITY, *raced], key=lambda c: c.speedup)


def _heuristics_pick(measured: list[Entry], raced: list[Contender], stored: str | None, busy: bool) -> str | None:
    """In a mixture, the schedule the heuristic's own finish would crown from the same races: its own finalists and
    the stored kernel's. None when the heuristic is not in the mixture or its pick is the baseline itself.

    The mixture's pool holds the heuristic's proposals, but crowning the fastest of a larger pool's ties crowns its
    luckiest sample. Keeping that pick on a tie leaves only a lead beyond the spread to change the answer."""
    own = {entry.schedule for entry in measured if entry.agent == HeuristicProposer.name}
    contenders = [c for c in raced if c.schedule in own or c.schedule == stored]
    if not own or not contenders:
        return None
    pick = _decide(contenders, stored, busy)
    return pick.schedule if pick.entry is not None else None


def _decide(raced: list[Contender], stored: str | None, busy: bool, anchor: str | None = None) -> Contender:
    """The winner among `raced` and the identity: of the `ties`, the first by `tie_preference` (the stored kernel's
    schedule, then a mixture's `anchor`, then the simplest, then the fastest); on a busy machine, the
    `busy_machine_twin` of a choice that is neither keeper."""
    keepers = [schedule for schedule in (stored, anchor) if schedule]
    tied = ties(raced)
    choice = min(tied, key=lambda contender: tie_preference(contender, keepers))
    if not busy or choice.schedule in keepers:
        return choice
    return busy_machine_twin(choice, tied)


def _complexity(schedule: str) -> int:
    try:
        return len(parse_schedule(schedule).primitives)
    except ScheduleError:
        return 0


def _serial_form(schedule: str) -> tuple[str, ...]:
    """The schedule's primitives other than `parallelize`: what its loops do, whichever run in parallel."""
    try:
        return tuple(str(p) for p in parse_schedule(schedule).primitives if p.name != "parallelize")
    except ScheduleError:
        return (schedule,)


def _undecided(races: list[tuple[Entry, Evaluation]]) -> list[Entry]:
    """The finalists to race again: unsettled races, races run with another team than the latest,
    and the members of a tie too noisy to call."""
    legal = [(entry, ev) for entry, ev in races if counts_in_race(ev.verdict, ev.speedup)]
    if not legal:
        return []
    _, latest = legal[-1]
    latest_team = latest.team
    again = [entry for entry, ev in legal if not ev.settled or ev.team != latest_team]
    tied = ties([Contender.raced(entry, ev) for entry, ev in legal])
    if too_noisy_to_call(tied):
        again += [c.entry for c in tied if c.entry is not None and c.entry not in again]
    return again


def _finish_note(
    finalists: list[Entry],
    races: dict[str, tuple[Entry, Evaluation]],
    winner: Contender,
    fastest: Contender,
    stored: str | None,
    busy: bool,
    remeasured: int,
    undecided: list[Entry],
    anchor: str | None = None,
) -> str:
    """Why the finish chose its winner, in words a user reads next to the leaderboard (which lists the winner first,
    though a tie may have gone to it from a faster one)."""
    if not finalists:
        return "no legal, correct schedule was measured faster than the baseline; the source order stays"
    parts = []
    if winner.entry is None:
        best = finalists[0]
        _, race = races.get(best.schedule, (best, None))
        again = f"{race.speedup:.2f}x" if race is not None and race.speedup else "no answer"
        parts.append(
            f"the racing finish re-measured `{best.schedule}` ({best.speedup:.2f}x at first) at {again}; "
            "no schedule beat the baseline beyond the spread"
        )
    else:
        first = winner.entry.speedup
        parts.append(f"`{winner.schedule}` won the racing finish at {_figures(winner)} ({first:.2f}x at first)")
        if fastest.entry is None or fastest.schedule != winner.schedule:
            faster = f"`{fastest.schedule}` at {_figures(fastest)}" if fastest.entry is not None else "the source order"
            parts.append(f"within the spread of {faster}, the fastest: {_tie_reason(winner.schedule, stored, anchor, busy)}")
    if remeasured:
        parts.append(f"{remeasured} race(s) re-measured later because the first look could not decide")
    if undecided:
        parts.append("still unsettled after the last round: the figures mix states of the machine")
    if busy:
        parts += _busy_notes(races)
    return "; ".join(parts)


def _figures(contender: Contender) -> str:
    return f"{contender.speedup:.2f}x ±{contender.spread:.0%}"


def _tie_reason(winner: str, stored: str | None, anchor: str | None, busy: bool) -> str:
    """Which tie rule gave `winner` the race, in the finish sentence's words."""
    if winner == stored:
        return "the stored kernel keeps a tie"
    if winner == anchor:
        return "in a mixture the heuristic's own pick keeps a tie"
    if busy:
        return "on a busy machine a tie goes to more parallel loops"
    return "the simpler schedule wins a tie"


def _busy_notes(races: dict[str, tuple[Entry, Evaluation]]) -> list[str]:
    """What a busy machine did to the finish: the teams parallel loops ran on, and, when they were ranked on fewer
    cores than the machine has, that a quiet machine may rank them otherwise."""
    teams = sorted({ev.team for _, ev in races.values() if ev.team is not None})
    notes = [
        f"the machine was busy: parallel loops ran on {'/'.join(map(str, teams))} thread(s); "
        "ties went to the schedule with more parallel loops"
    ]
    short = [ev.team for entry, ev in races.values() if ev.team is not None and _parallel_loops(entry.schedule)]
    cores = usable_cores()
    if short and min(short) < cores:
        # Parallel loops ranked on a short team rank by how they run on those cores, not on all of them.
        notes.append(
            f"schedules with parallel loops were ranked on {min(short)} of {cores} cores, so on a quiet machine "
            "their order may differ: optimize again then, and the stored kernel races in that finish, giving way "
            "only to a faster schedule"
        )
    return notes


def _parallel_loops(schedule: str) -> int:
    try:
        return sum(1 for primitive in parse_schedule(schedule).primitives if primitive.name == "parallelize")
    except ScheduleError:
        return 0
