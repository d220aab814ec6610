"""The search: dialogues propose, the engine judges, the best measured schedule wins.

`k` dialogues run concurrently; each turn a dialogue proposes up to `candidates`
schedules, which are deduplicated (canonical text) across the whole run, proved,
built (builds overlap) and raced against the baseline (timed runs never overlap: the
measurement lock). Every step is an event. A racing finish re-measures the top few
with more repeats; the winner is the fastest whose lead exceeds the spread, else the
simpler schedule, and the identity (the baseline itself) is always in the pool. The
re-measurements are the figures the result's leaderboard ranks its finalists by, with
the winner first: the result's speedup is the one its leaderboard shows for it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from repoos_agent.agent.control import SearchCancelled, SearchControl
from repoos_agent.agent.dialogue import LLMProposer
from repoos_agent.agent.events import Event, EventStream
from repoos_agent.agent.heuristic import HeuristicProposer, Outcome
from repoos_agent.agent.llm.local_server import local_servers
from repoos_agent.agent.llm.prices import cost
from repoos_agent.agent.proposers import make_mixture, make_proposer
from repoos_agent.agent.ranking import beats_baseline, by_speedup, counts_in_race, winner_first
from repoos_agent.agent.tools import agent_tools
from repoos_agent.agent.tools_mode import run_tools_dialogue
from repoos_agent.backends import build_baseline
from repoos_agent.check import fresh_copy
from repoos_agent.errors import CompileError, RepoosError
from repoos_agent.evaluate import REASSOCIATION_TOLERANCE_SCALE, Evaluation, evaluate_schedule, proved_build, python_original
from repoos_agent.measure import Timing, time_runs
from repoos_agent.measure.cores import usable_cores
from repoos_agent.measure.isolated import RaceRules, shared_worker
from repoos_agent.measure.timing import seconds_text
from repoos_agent.model.signature import Signature
from repoos_agent.schedule import ScheduleError, parse_schedule
from repoos_agent.target import Target

RACE_FINALISTS = 3
EARLY_STOP_FRACTION = 0.3
"""A candidate whose first run is below 0.3x the best speedup so far is not timed further."""
RACE_REPEATS = 15
RACE_RETRIES = 2
"""Rounds in which the racing finish re-measures what it could not decide: a finalist whose race saw
two states of the machine, one raced at another team size than the others, or a tie within a wide spread."""
RETRY_PAUSE_S = 1.0
"""The pause before such a round: a re-measurement later in the run, when a passing load may be gone."""
NOISY_SPREAD = 0.15
"""A tie whose contenders spread wider than this is undecided rather than decided for the simplest."""


@dataclass(frozen=True)
class SearchConfig:
    backend: str = "heuristic"  # or openai:MODEL, gemini:MODEL, local:MODEL
    base_url: str | None = None
    moa: tuple[str, ...] = ()  # reference agents' specs; with them, `aggregator` proposes last
    aggregator: str | None = None
    iters: int = 5
    k: int = 1
    candidates: int = 4
    size: str | None = None
    compiler: str = "c"
    seed: int = 0
    allow_reassociation: bool = False
    timeout_s: float = 120.0
    mode: str = "dialogue"  # or "tools": the model calls the engine's tools itself
    incumbent: str | None = None  # the stored VerifiedKernel's schedule: it races in the finish and wins its ties
    constrain: bool = True  # models' replies decoded under the kernel's schedule grammar where their server can
    prompt: str = ""  # what models' prompts carry (`PromptOptions.parse`); "" is the measured default


@dataclass(frozen=True)
class Entry:
    """One evaluated proposal on the leaderboard."""

    schedule: str
    dialogue: int | None  # None, with `turn`, for the stored VerifiedKernel's schedule: no dialogue proposed it
    turn: int | None
    agent: str
    evaluation: Evaluation
    race: Evaluation | None = None  # its latest re-measurement in the racing finish that counts, when it was a finalist

    @property
    def speedup(self) -> float:
        """The figure it ranks by: the race's re-measurement (more repeats) when it has one, else its evaluation's."""
        return (self.race or self.evaluation).speedup or 0.0

    @property
    def spread(self) -> float | None:
        return (self.race or self.evaluation).spread


@dataclass(frozen=True)
class ModelUse:
    """One model's part in a search, summed over its dialogues."""

    agent: str  # `local:smollm2`, `openai:gpt-4o-mini`
    replies: int
    llm_s: float  # time spent waiting for its replies
    output_tokens: int
    constraint: str  # the form its last reply was decoded under, "" for none
    model_file: str = ""  # a local model's file, and its size
    model_mb: float | None = None

    @property
    def tokens_per_s(self) -> float | None:
        return self.output_tokens / self.llm_s if self.llm_s > 0 and self.output_tokens else None


@dataclass(frozen=True)
class SearchResult:
    run: str
    target: str
    size: str | None
    best: Entry | None  # None: the identity (the baseline) won
    best_speedup: float
    best_spread: float
    leaderboard: tuple[Entry, ...]  # the winner's entries first, then by `Entry.speedup` (`winner_first`)
    evaluations: int
    verdicts: dict[str, int]
    wall_s: float
    tokens: dict[str, int] = field(default_factory=dict)
    cost_usd: float | None = None  # None when a model's price is unknown (never guessed)
    cancelled: bool = False  # stopped by its caller: the best so far, without a racing finish
    kept_incumbent: bool = False  # the stored VerifiedKernel's schedule won the racing finish again
    machine_busy: bool = False  # another process held a core during the racing finish
    remeasured: int = 0  # finalists the racing finish timed again because it could not decide on the first look
    finish: str = ""  # how the racing finish decided, in a sentence or two
    original_speedup: float | None = None  # a NumPy program's original raced in the finish, over the native baseline
    original_won: bool = False  # ... and was the fastest: nothing beats the user's own code, so it stays
    invalid_kinds: dict[str, int] = field(default_factory=dict)  # invalid proposals by why: unparseable, unknown_name, ...
    models: tuple[ModelUse, ...] = ()  # each model that proposed: what it is, how it was constrained, how fast it answered

    @property
    def schedule(self) -> str:
        return self.best.schedule if self.best else ""


def most_evaluations(config: SearchConfig) -> int:
    """An upper bound on a search's evaluations, what a progress bar counts towards: every proposal of every agent of
    every dialogue and the stored schedule's, then every finalist of the racing finish in each of its rounds. A search
    usually makes fewer: proposers run out of ideas, the identity is never measured, only legal, correct schedules
    reach the race, and only what the first look could not decide is raced again."""
    agents = len(config.moa) + bool(config.aggregator) if config.moa else 1
    incumbent = 1 if config.incumbent else 0
    finalists = RACE_FINALISTS * agents + incumbent  # a mixture races each agent's own fastest too (`_finalists`)
    return config.k * config.iters * config.candidates * agents + incumbent + finalists * (1 + RACE_RETRIES)


def optimize(
    target: Target, config: SearchConfig, events: EventStream | None = None, control: SearchControl | None = None
) -> SearchResult:
    """Search schedules for `target`; see the module docstring. `control` may pause or cancel it from another thread."""
    events = events or EventStream()
    control = control or SearchControl()
    run = uuid.uuid4().hex[:8]
    events.emit(Event("run_started", run, detail={"target": target.label, "size": config.size, "config": config.__dict__}))
    try:
        with local_servers():  # the llama.cpp servers its local agents started stop with it
            return _search(target, config, events, control, run)
    except BaseException as error:
        # Subscribers (the MCP leaderboard, the TUI) must see the run end, not wait on it forever.
        events.emit(Event("run_finished", run, detail={"failed": str(error) or type(error).__name__}))
        raise


def evaluate_candidate(target: Target, schedule: str, config: SearchConfig, **measuring: Any) -> Evaluation:
    """`schedule` evaluated as the search evaluates its candidates: at the config's size, with its compiler, seed,
    timeout and reassociation rule. `measuring` passes `evaluate_schedule`'s `repeats` or `stop_below_speedup` on."""
    return evaluate_schedule(
        target,
        schedule,
        config.size,
        allow_reassociation=config.allow_reassociation,
        timeout_s=config.timeout_s,
        seed=config.seed,
        compiler=config.compiler,
        **measuring,
    )


def _search(target: Target, config: SearchConfig, events: EventStream, control: SearchControl, run: str) -> SearchResult:
    start = time.perf_counter()
    seen: dict[str, Future[Evaluation]] = {}  # one evaluation per schedule, however many dialogues propose it
    seen_lock = threading.Lock()
    leaderboard: list[Entry] = []

    def evaluate(text: str) -> Evaluation:
        control.checkpoint()
        with seen_lock:
            pending = seen.get(text)
            owner = pending is None
            if owner:
                pending = seen[text] = Future()
            best = max((e.speedup for e in leaderboard if e.evaluation.verdict == "legal"), default=1.0)
        if not owner:
            return pending.result()
        try:
            evaluation = evaluate_candidate(target, text, config, stop_below_speedup=max(best, 1.0) * EARLY_STOP_FRACTION)
        except BaseException as error:
            pending.set_exception(error)
            raise
        pending.set_result(evaluation)
        return evaluation

    specs = [*config.moa, *([config.aggregator] if config.aggregator else [])] if config.moa else [config.backend]
    baseline_s = _baseline_seconds(target, config) if any(spec != "heuristic" for spec in specs) else None

    extents = target.kernel.parameter_values(target.inputs(config.size, config.seed))

    shared = dict(
        allow_reassociation=config.allow_reassociation,
        base_url=config.base_url,
        baseline_s=baseline_s,
        extents=extents,
        constrain=config.constrain,
        prompt=config.prompt,
    )

    def proposer_for(number: int):
        seed = config.seed + 1000 * number
        if config.moa:
            return make_mixture(list(config.moa), config.aggregator, target.kernel, seed, **shared)
        return make_proposer(config.backend, target.kernel, seed, **shared, tools=config.mode == "tools")

    proposers = [proposer_for(number) for number in range(config.k)]

    def dialogue(number: int) -> None:
        try:
            converse(number)
        except SearchCancelled:
            return
        except BaseException:
            control.cancel()  # the other dialogues stop at their next checkpoint instead of running to the end
            raise

    def converse(number: int) -> None:
        proposer = proposers[number]
        history: list[Outcome] = []
        with ThreadPoolExecutor(max_workers=max(1, config.candidates)) as builders:
            for turn in range(1, config.iters + 1):
                control.checkpoint()
                # The identity is always in the pool already; proposing it measures nothing new.
                ideas = [i for i in _deduplicated(proposer.propose(history, config.candidates)) if i.schedule]
                if not ideas:
                    error = getattr(proposer, "error", None)
                    if error:
                        events.emit(
                            Event("turn_started", run, dialogue=number, turn=turn, agent=proposer.name, feedback=f"error: {error}")
                        )
                    break
                # Tokens so far in this dialogue (its proposer's running total): monitors show the spend live.
                spent = dict(getattr(proposer, "tokens", {}))
                events.emit(Event("turn_started", run, dialogue=number, turn=turn, agent=proposer.name, tokens=spent))
                for idea in ideas:
                    events.emit(
                        Event(
                            "proposal",
                            run,
                            dialogue=number,
                            turn=turn,
                            agent=idea.agent,
                            schedule=idea.schedule,
                            detail={"reason": idea.reason},
                        )
                    )
                for idea, evaluation in zip(ideas, builders.map(evaluate, [i.schedule for i in ideas]), strict=True):
                    entry = Entry(idea.schedule, number, turn, idea.agent, evaluation)
                    with seen_lock:
                        leaderboard.append(entry)
                    history.append(Outcome(idea.schedule, evaluation.verdict, evaluation.speedup, evaluation.feedback, idea.agent))
                    events.emit(_evaluation_event(run, entry))

    def tools_dialogue(number: int) -> None:
        proposer = proposers[number]
        if not isinstance(proposer, LLMProposer):
            raise RepoosError("--mode tools needs a model backend (openai:MODEL, gemini:MODEL or local[:MODEL])")
        calls = [0]

        def record(schedule: str, evaluation: Evaluation) -> None:
            calls[0] += 1
            entry = Entry(str(evaluation.schedule or schedule), number, calls[0], proposer.name, evaluation)
            with seen_lock:
                leaderboard.append(entry)
            events.emit(_evaluation_event(run, entry))

        def on_call(name: str, arguments: dict) -> None:
            detail = {"tool": name, "arguments": arguments}
            events.emit(
                Event("proposal", run, dialogue=number, agent=proposer.name, schedule=arguments.get("schedule"), detail=detail)
            )

        def checked_call(name: str, arguments: dict) -> None:
            control.checkpoint()
            on_call(name, arguments)

        tools = agent_tools(
            target,
            config.size,
            config.compiler,
            record,
            measure=lambda schedule: evaluate_candidate(target, schedule, config),
            constrain=config.constrain,
        )
        try:
            run_tools_dialogue(proposer, tools, budget=config.iters * config.candidates, on_call=checked_call)
        except SearchCancelled:
            return
        except BaseException:
            control.cancel()
            raise

    with ThreadPoolExecutor(max_workers=max(1, config.k)) as dialogues:
        list(dialogues.map(tools_dialogue if config.mode == "tools" else dialogue, range(config.k)))

    cancelled, incumbent, finish = control.cancelled, None, None
    if not cancelled:
        try:
            incumbent = _measure_incumbent(config, evaluate, leaderboard, seen_lock, events, run)
            finish = _racing_finish(target, config, leaderboard, events, run, control, incumbent)
        except SearchCancelled:
            cancelled = True
    if finish is None:
        best, speedup, spread = _best_so_far(leaderboard)
    else:
        best, speedup, spread = finish.winner, finish.speedup, finish.spread
    original = finish.original if finish else None
    original_won = finish is not None and finish.original_stays
    if original_won:
        assert original is not None
        best, speedup, spread = None, original[0], original[1]
    kept = not cancelled and incumbent is not None and best is not None and best.schedule == incumbent.schedule
    verdicts = Counter(entry.evaluation.verdict for entry in leaderboard)
    races = finish.races if finish else {}
    ranked = [replace(entry, race=races.get(entry.schedule)) for entry in leaderboard]
    result = SearchResult(
        run=run,
        target=target.label,
        size=config.size,
        best=replace(best, race=races.get(best.schedule)) if best else None,
        best_speedup=speedup,
        best_spread=spread,
        leaderboard=tuple(winner_first(ranked, best.schedule if best else None)),
        evaluations=len(leaderboard),
        verdicts=dict(verdicts),
        wall_s=time.perf_counter() - start,
        tokens=_tokens(proposers),
        cost_usd=_cost(proposers),
        invalid_kinds=dict(Counter(e.evaluation.invalid_kind for e in leaderboard if e.evaluation.invalid_kind)),
        models=_model_uses(proposers),
        cancelled=cancelled,
        kept_incumbent=kept,
        machine_busy=finish.machine_busy if finish else False,
        remeasured=finish.remeasured if finish else 0,
        finish=finish.note if finish else "",
        original_speedup=original[0] if original else None,
        original_won=original_won,
    )
    events.emit(
        Event(
            "run_finished",
            run,
            schedule=result.schedule,
            speedup=speedup,
            spread=spread,
            detail={
                "evaluations": result.evaluations,
                "verdicts": result.verdicts,
                "wall_s": result.wall_s,
                "cancelled": result.cancelled,
                "machine_busy": result.machine_busy,
                "remeasured": result.remeasured,
                "finish": result.finish,
                "original_speedup": result.original_speedup,
                "original_won": result.original_won,
                "invalid_kinds": result.invalid_kinds,
                "models": [model_use_json(use) for use in result.models],
            },
            tokens=result.tokens,
        )
    )
    return result


def _baseline_seconds(target: Target, config: SearchConfig) -> float:
    """The native baseline's time, for a model's first prompt."""
    values = target.inputs(config.size, config.seed)
    native = build_baseline(target.kernel, Signature.of_values(target.kernel, values))
    return time_runs(native, lambda: fresh_copy(values), min_repeats=3, min_total_s=0.05).median_s


def _tokens(proposers: list) -> dict[str, int]:
    totals = {"input": 0, "output": 0}
    for proposer in proposers:
        for kind, count in getattr(proposer, "tokens", {}).items():
            totals[kind] += count
    return totals


def model_use_json(use: ModelUse) -> dict:
    """A model's part as JSON, its tokens per second included."""
    return {**asdict(use), "tokens_per_s": use.tokens_per_s}


def _members(proposers: list) -> list:
    """Every agent of every dialogue: a Mixture-of-Agents' references and aggregator one by one."""
    return [
        m for p in proposers for m in [*getattr(p, "references", [p]), *([p.aggregator] if getattr(p, "aggregator", None) else [])]
    ]


def _model_uses(proposers: list) -> tuple[ModelUse, ...]:
    by_agent: dict[str, ModelUse] = {}
    for member in _members(proposers):
        if not isinstance(member, LLMProposer):
            continue
        info = getattr(member.backend, "model_info", None)
        seen = by_agent.get(member.name)
        by_agent[member.name] = ModelUse(
            agent=member.name,
            replies=member.replies + (seen.replies if seen else 0),
            llm_s=member.llm_s + (seen.llm_s if seen else 0.0),
            output_tokens=member.tokens["output"] + (seen.output_tokens if seen else 0),
            constraint=member.constraint or (seen.constraint if seen else ""),
            model_file=getattr(info, "file", "") if info else "",
            model_mb=getattr(info, "size_mb", None) if info else None,
        )
    return tuple(by_agent.values())


def _cost(proposers: list) -> float | None:
    """Dollars spent on model calls, from the price table; 0 for the heuristic, None if any price is unknown."""
    members = _members(proposers)
    total = 0.0
    for member in members:
        backend = getattr(member, "backend", None)
        if backend is None:
            continue
        spent = cost(backend.model, member.tokens["input"], member.tokens["output"])
        if spent is None:
            return None
        total += spent
    return total


def _evaluation_event(run: str, entry: Entry, race: Evaluation | None = None, race_round: int = 0) -> Event:
    """The event of `entry`'s evaluation, or of its re-measurement `race` in the racing finish (`race_round`
    0 for the first look, 1 and up for the rounds that race again what the first could not decide)."""
    evaluation = race or entry.evaluation
    return Event(
        "evaluation",
        run,
        dialogue=entry.dialogue,
        turn=entry.turn,
        agent=entry.agent,
        schedule=entry.schedule,
        verdict=evaluation.verdict,
        speedup=evaluation.speedup,
        spread=evaluation.spread,
        verified=evaluation.verified,
        feedback=evaluation.feedback,
        times={
            "legality_ms": evaluation.legality_ms,
            "verify_ms": evaluation.verify_ms,
            "build_ms": evaluation.build_ms,
            **({"candidate_s": evaluation.candidate_s, "baseline_s": evaluation.baseline_s} if evaluation.candidate_s else {}),
        },
        timed=evaluation.timed,
        detail={
            **({"race": True, "round": race_round} if race else {}),
            **({"team": evaluation.team, "machine_busy": evaluation.machine_busy} if evaluation.team is not None else {}),
            **({"unsettled": evaluation.unsettled} if evaluation.unsettled else {}),
        },
    )


def _canonical(text: str) -> str:
    try:
        return str(parse_schedule(text))
    except ScheduleError:
        return text.strip()


def _deduplicated(ideas: list) -> list:
    """One proposal per canonical schedule (the first agent to propose it keeps the credit)."""
    kept, seen = [], set()
    for idea in ideas:
        canonical = _canonical(idea.schedule)
        if canonical not in seen:
            seen.add(canonical)
            kept.append(replace(idea, schedule=canonical))
    return kept


def _complexity(schedule: str) -> int:
    try:
        return len(parse_schedule(schedule).primitives)
    except ScheduleError:
        return 0


def _best_so_far(leaderboard: list[Entry]) -> tuple[Entry | None, float, float]:
    """A cancelled search's answer: its best correct measurement, or the identity when nothing beat the baseline."""
    measured = [e for e in leaderboard if beats_baseline(e.evaluation.verdict, e.speedup)]
    if not measured:
        return None, 1.0, 0.0
    best = max(measured, key=lambda e: e.speedup)
    return best, best.speedup, best.evaluation.spread or 0.0


def _measure_incumbent(
    config: SearchConfig,
    evaluate: Callable[[str], Evaluation],
    leaderboard: list[Entry],
    lock: threading.Lock,
    events: EventStream,
    run: str,
) -> Entry | None:
    """The stored VerifiedKernel's schedule evaluated like any proposal (once: a dialogue may have
    proposed it already), on the leaderboard as the store's; None without one."""
    if not config.incumbent:
        return None
    schedule = _canonical(config.incumbent)
    with lock:
        known = next((e for e in leaderboard if e.schedule == schedule), None)
    if known is not None:
        return known
    entry = Entry(schedule, None, None, "store", evaluate(schedule))
    with lock:
        leaderboard.append(entry)
    events.emit(_evaluation_event(run, entry))
    return entry


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


def _racing_finish(
    target: Target,
    config: SearchConfig,
    leaderboard: list[Entry],
    events: EventStream,
    run: str,
    control: SearchControl,
    incumbent: Entry | None = None,
) -> Finish:
    """Re-measure the finalists with more repeats; a lead must exceed the spread to count.

    The incumbent (the stored kernel's schedule) is always a finalist when it is still legal and
    correct, and wins every tie: only a lead beyond the spread replaces a stored kernel. In a mixture,
    the heuristic's own pick from the same races wins the ties next (`_heuristics_pick`). Each finalist
    waits at the control's checkpoint: a pause holds the race, a cancel abandons it.

    What the first look cannot decide is measured again later in the run, up to `RACE_RETRIES`
    rounds: a race that saw two states of the machine, one run with another thread team than the
    last (a core was taken, or freed, in between: speedups of different teams do not compare), and
    a tie whose spread is too wide to call. On a busy machine, ties go to the schedule with more
    parallel loops: at the team the machine allowed they ran as fast as their serial twins, and a
    swapped kernel sizes its team at each call, so they are never slower and faster once cores free up.
    """
    measured = [e for e in leaderboard if e.evaluation.verdict == "legal" and e.evaluation.correct and e.speedup > 0 and e.schedule]
    unique = {e.schedule: e for e in sorted(measured, key=lambda e: e.speedup)}  # the best entry of each schedule
    finalists = _finalists(measured, unique)
    if incumbent is not None and incumbent.schedule in unique and unique[incumbent.schedule] not in finalists:
        finalists.append(unique[incumbent.schedule])
    races: dict[str, tuple[Entry, Evaluation]] = {}
    shown: dict[str, Evaluation] = {}  # each finalist's latest re-measurement that counts, as every leaderboard shows it
    queue, remeasured = finalists, 0
    for attempt in range(RACE_RETRIES + 1):
        for entry in queue:
            control.checkpoint()
            evaluation = evaluate_candidate(target, entry.schedule, config, repeats=RACE_REPEATS)
            races[entry.schedule] = (entry, evaluation)
            if counts_in_race(evaluation.verdict, evaluation.speedup):
                shown[entry.schedule] = evaluation
            events.emit(_evaluation_event(run, entry, race=evaluation, race_round=attempt))
        queue = _undecided(list(races.values()))
        if not queue or attempt == RACE_RETRIES:
            break
        remeasured += len(queue)
        control.checkpoint()
        time.sleep(RETRY_PAUSE_S)
    raced = [(entry, ev.speedup, ev.spread or 0.0) for entry, ev in races.values() if counts_in_race(ev.verdict, ev.speedup)]
    busy = any(ev.machine_busy for _, ev in races.values())
    stored = incumbent.schedule if incumbent is not None else None
    anchor = _heuristics_pick(measured, raced, stored, busy) if config.moa else None
    winner = _decide(raced, stored, busy, anchor)
    undecided = _undecided(list(races.values()))
    note = _finish_note(finalists, races, winner, _fastest(raced), stored, busy, remeasured, undecided, anchor)
    original = _race_original(target, config) if target.kernel.numpy_program else None
    stays = False
    if original is not None:
        faster = winner[0] is not None and winner[1] > original[0]
        duel = _race_winner_against_original(target, config, winner[0].schedule) if faster and winner[0] else None
        stays, verdict = _original_verdict(original, winner, duel)
        raced_too = f"The NumPy original raced too: {original[0]:.2f}x over the baseline ±{original[1]:.0%}; it {verdict}."
        note = note.rstrip(".") + ". " + raced_too
    return Finish(winner[0], winner[1], winner[2], busy, remeasured, note, shown, original, stays)


def _original_verdict(
    original: tuple[float, float], winner: tuple[Entry | None, float, float], duel: OriginalRace | None
) -> tuple[bool, str]:
    """Whether the user's own code stays, and why, in the words the finish sentence ends with.

    The head-to-head race decides when there is one. Each side's race against the native baseline is another
    race, minutes apart, and the two ratios do not compare: in one NumPy eval the finishes crowned cholesky's
    `blas(S4)` and a fused mvt from those figures, and raced against NumPy afterwards they ran at 0.37x and 0.72x."""
    if original[0] >= winner[1]:
        return True, "is kept: it is the fastest"
    if duel is not None:
        head_to_head = f"raced head to head, {duel.describe()}"
        if not duel.clear_lead:
            return True, f"is kept: {head_to_head}"
        return False, f"is slower: {head_to_head}"
    if original_holds(original, winner[1], winner[2]):
        return True, f"is kept: the winner beats it by {winner[1] / original[0] - 1:.0%}, within the spread"
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
        """Whether the winner is faster beyond the noise: a median lead over 2%, and the middle halves of the two
        contenders' runs do not overlap (the winner's third quartile below the original's first).

        A lead within either contender's interquartile spread, the rule before, lets the slowest quarter of one side
        decide, and NumPy's runs have a slow quarter (a temporary's fresh pages, a thread waking): in one NumPy eval
        it kept the original against gemm, covariance, correlation, mlp and cross-entropy winners that ran 1.13x to
        1.53x faster head to head, at spreads of 22% to 579%. Raced again, each of their middle halves lay wholly
        below the original's. Two runs of one build, alike in distribution, rarely lay their middle halves apart."""
        return self.ratio > 1.02 and self.ours.middle_half()[1] < self.original.middle_half()[0]

    def describe(self) -> str:
        ours, theirs = (
            f"{seconds_text(low)} to {seconds_text(high)}" for low, high in (self.ours.middle_half(), self.original.middle_half())
        )
        return f"the winner ran at {self.ratio:.2f}x its speed, the middle half of its runs in {ours}, the original's in {theirs}"


def _finalists(measured: list[Entry], unique: dict[str, Entry]) -> list[Entry]:
    """The fastest `RACE_FINALISTS` schedules, then, in a mixture, each agent's own fastest that are not among them.

    A mixture measures more candidates than any of its agents alone, and the fastest first looks of a larger pool
    are more often lucky samples (on syr2k at MEDIUM a mixture crowned a tile that ran at 0.75x of the heuristic's
    own pick head to head). With every agent's fastest in the race, the mixture's finish races what each agent's
    finish alone would have, and the race's own re-measurements pick among them."""
    finalists = by_speedup(unique.values())[:RACE_FINALISTS]
    for agent in dict.fromkeys(entry.agent for entry in measured):
        own = by_speedup({e.schedule: unique[e.schedule] for e in measured if e.agent == agent}.values())[:RACE_FINALISTS]
        finalists += [entry for entry in own if entry not in finalists]
    return finalists


def original_holds(original: tuple[float, float], speedup: float, spread: float) -> bool:
    """Whether the user's own code stays: the winner does not beat it by more than either spread (or 2%).
    A tie goes to the original: a schedule within the noise of NumPy's own speed gains nothing sure,
    and measured again it ran below NumPy (2mm at 0.79x, mlp at 0.82x after winning their finishes)."""
    return speedup / original[0] - 1 <= max(spread, original[1], 0.02)


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


def _fastest(raced: list[tuple[Entry | None, float, float]]) -> tuple[Entry | None, float, float]:
    """The fastest contender, the identity (1.0x, no spread) among them."""
    return max([(None, 1.0, 0.0), *raced], key=lambda c: c[1])


def _ties(raced: list[tuple[Entry | None, float, float]]) -> list[tuple[Entry | None, float, float]]:
    """The contenders (the identity among them) that no contender beats by more than the spread of the two.

    Not only the fastest's lead counts: a fastest with a wide spread ties with everything below it, and
    the identity, the simplest, then took the tie from a steadier schedule that beat it clearly. That is
    how cavity-flow at LARGE kept its source order: three parallel schedules re-raced at 1.40x ±46%,
    1.31x ±9% and 1.18x ±19%, and the first's ±46% reached down to 1.00x."""
    contenders = [(None, 1.0, 0.0), *raced]

    def beaten(c: tuple[Entry | None, float, float]) -> bool:
        return any(other[1] / c[1] - 1 > max(other[2], c[2], 0.02) for other in contenders)

    return [c for c in contenders if not beaten(c)]


def _heuristics_pick(measured: list[Entry], raced: list[tuple[Entry, float, float]], stored: str | None, busy: bool) -> str | None:
    """In a mixture, the schedule the heuristic's own finish would crown from the same races: its own finalists and
    the stored kernel's. None when the heuristic is not in the mixture or its pick is the baseline itself.

    The mixture's pool holds the heuristic's proposals, but crowning the fastest of a larger pool's ties crowns its
    luckiest sample: the seventh study run's mixture lost gemm to the heuristic alone at 0.84x with a tile the
    heuristic had also measured. Keeping that pick on a tie leaves only a lead beyond the spread to change the answer."""
    own = {entry.schedule for entry in measured if entry.agent == HeuristicProposer.name}
    contenders = [c for c in raced if c[0].schedule in own or c[0].schedule == stored]
    if not own or not contenders:
        return None
    pick = _decide(contenders, stored, busy)[0]
    return pick.schedule if pick is not None else None


def _decide(
    raced: list[tuple[Entry, float, float]], stored: str | None, busy: bool, anchor: str | None = None
) -> tuple[Entry | None, float, float]:
    """Among ties the stored kernel's schedule wins, then a mixture's `anchor` (the heuristic's own pick), then the
    simplest, then the fastest. On a busy machine, the parallel twin of a choice that is neither (the same schedule
    with more loops parallel, at least as fast as the baseline) takes it.

    Only a twin: at the team a busy machine allows, a parallel loop runs as fast as its serial form, and a
    swapped kernel sizes its team at each call. A schedule that also transforms the loops is no twin: on atax,
    a distribution and a tile with three parallel loops tied the source order at 1.01x ±9% on a busy host and
    was crowned; raced again, it ran at 0.73x."""
    keepers = [schedule for schedule in (stored, anchor) if schedule]
    ties = _ties(raced)

    def preference(contender: tuple[Entry | None, float, float]) -> tuple:
        entry = contender[0]
        schedule = entry.schedule if entry is not None else ""
        kept = keepers.index(schedule) if schedule in keepers else len(keepers)
        return (kept, _complexity(schedule) if entry else 0, -contender[1])

    choice = min(ties, key=preference)
    if not busy or (choice[0] is not None and choice[0].schedule in keepers):
        return choice
    serial = _serial_form(choice[0].schedule if choice[0] is not None else "")
    twins = [c for c in ties if c[0] is not None and c[1] >= 1.0 and _serial_form(c[0].schedule) == serial]
    return max(twins, key=lambda c: (_parallel_loops(c[0].schedule), c[1]), default=choice)


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
    latest_team = legal[-1][1].team
    again = [entry for entry, ev in legal if not ev.settled or ev.team != latest_team]
    ties = _ties([(entry, ev.speedup, ev.spread or 0.0) for entry, ev in legal])
    if len(ties) > 1 and max(spread for _, _, spread in ties) > NOISY_SPREAD:
        again += [entry for entry, _, _ in ties if entry is not None and entry not in again]
    return again


def _finish_note(
    finalists: list[Entry],
    races: dict[str, tuple[Entry, Evaluation]],
    winner: tuple[Entry | None, float, float],
    fastest: tuple[Entry | None, float, float],
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
    if winner[0] is None:
        best = finalists[0]
        raced = races.get(best.schedule)
        again = f"{raced[1].speedup:.2f}x" if raced and raced[1].speedup else "no answer"
        parts.append(
            f"the racing finish re-measured `{best.schedule}` ({best.speedup:.2f}x at first) at {again}; "
            "no schedule beat the baseline beyond the spread"
        )
    else:
        first = winner[0].speedup
        parts.append(f"`{winner[0].schedule}` won the racing finish at {winner[1]:.2f}x ±{winner[2]:.0%} ({first:.2f}x at first)")
        if fastest[0] is None or fastest[0].schedule != winner[0].schedule:
            faster = f"`{fastest[0].schedule}` at {fastest[1]:.2f}x ±{fastest[2]:.0%}" if fastest[0] else "the source order"
            if winner[0].schedule == stored:
                reason = "the stored kernel keeps a tie"
            elif winner[0].schedule == anchor:
                reason = "in a mixture the heuristic's own pick keeps a tie"
            elif busy:
                reason = "on a busy machine a tie goes to more parallel loops"
            else:
                reason = "the simpler schedule wins a tie"
            parts.append(f"within the spread of {faster}, the fastest: {reason}")
    if remeasured:
        parts.append(f"{remeasured} race(s) re-measured later because the first look could not decide")
    if undecided:
        parts.append("still unsettled after the last round: the figures mix states of the machine")
    if busy:
        teams = sorted({ev.team for _, ev in races.values() if ev.team is not None})
        parts.append(
            f"the machine was busy: parallel loops ran on {'/'.join(map(str, teams))} thread(s); "
            "ties went to the schedule with more parallel loops"
        )
        short = [ev.team for entry, ev in races.values() if ev.team is not None and _parallel_loops(entry.schedule)]
        cores = usable_cores()
        if short and min(short) < cores:
            # gemm at LARGE: tiles ranked on one core crowned one that re-raced quiet at 78% of the quiet search's
            parts.append(
                f"schedules with parallel loops were ranked on {min(short)} of {cores} cores, so on a quiet machine "
                "their order may differ: optimize again then, and the stored kernel races in that finish, giving way "
                "only to a faster schedule"
            )
    return "; ".join(parts)


def _parallel_loops(schedule: str) -> int:
    try:
        return sum(1 for primitive in parse_schedule(schedule).primitives if primitive.name == "parallelize")
    except ScheduleError:
        return 0
