"""The search: dialogues propose, the engine judges, the best measured schedule wins.

`k` dialogues run concurrently; each turn a dialogue proposes up to `candidates`
schedules, which are deduplicated (canonical text) across the whole run, proved,
built (builds overlap) and raced against the baseline (timed runs never overlap: the
measurement lock). Every step is an event. The racing finish (`repoos_agent.agent.finish`)
then re-measures the top few with more repeats and chooses the winner; its
re-measurements are the figures the result's leaderboard ranks its finalists by, with
the winner first: the result's speedup is the one its leaderboard shows for it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace

from repoos_agent.agent.budget import Budget
from repoos_agent.agent.candidate import evaluate_candidate
from repoos_agent.agent.control import BudgetSpent, SearchCancelled, SearchControl
from repoos_agent.agent.dialogue import LLMProposer
from repoos_agent.agent.entry import Entry
from repoos_agent.agent.events import Event, EventStream
from repoos_agent.agent.finish import RACE_FINALISTS, RACE_REPEATS, RACE_RETRIES, racing_finish
from repoos_agent.agent.heuristic import Outcome
from repoos_agent.agent.llm.local_server import local_servers
from repoos_agent.agent.llm.prices import cost
from repoos_agent.agent.proposers import make_mixture, make_proposer
from repoos_agent.agent.ranking import beats_baseline, counts_in_race, winner_first
from repoos_agent.agent.remote_looks import RemoteFirstLooks
from repoos_agent.agent.search_config import SearchConfig
from repoos_agent.agent.tools import agent_tools
from repoos_agent.agent.tools_mode import run_tools_dialogue
from repoos_agent.backends import build_baseline
from repoos_agent.check import fresh_copy
from repoos_agent.cluster import cluster_client
from repoos_agent.errors import RepoosError
from repoos_agent.evaluate import Evaluation
from repoos_agent.measure import time_runs
from repoos_agent.model.signature import Signature
from repoos_agent.schedule import ScheduleError, parse_schedule
from repoos_agent.target import Target
from repoos_agent.verify.translation import DEFERRED

FirstLook = Callable[[str, float], Evaluation]
"""A candidate's first look: its schedule and the speedup below which its timing stops early, to its evaluation."""
EARLY_STOP_FRACTION = 0.3
"""A candidate whose first run is below 0.3x the best speedup so far is not timed further."""


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
    budget: str = ""  # what `--budget` cut, in a sentence ("" when it cut nothing or there was none)
    # `best_speedup` is the figure of the race that crowned the winner; the fresh figure is the winner raced once more
    # after the choice (`_measured_again`), None when it was not (no schedule won, cancelled, out of budget).
    fresh_speedup: float | None = None
    fresh_spread: float | None = None

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
    finalists = RACE_FINALISTS * agents + incumbent  # a mixture races each agent's own fastest too (`finish._finalists`)
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
        with local_servers(), first_looks(target, config) as look:  # its llama.cpp servers and cluster end with it
            return _search(target, config, events, control, run, look)
    except BaseException as error:
        # Subscribers (the MCP leaderboard, the TUI) must see the run end, not wait on it forever.
        events.emit(Event("run_finished", run, detail={"failed": str(error) or type(error).__name__}))
        raise


@contextmanager
def first_looks(target: Target, config: SearchConfig) -> Iterator[FirstLook]:
    """How a candidate gets its first look: here, or on the workers of `config.cluster` (`remote_looks`)."""
    if config.cluster is None:
        yield lambda schedule, stop: evaluate_candidate(target, schedule, config, stop_below_speedup=stop)
        return
    with cluster_client(config.cluster) as client:
        yield RemoteFirstLooks(client, target, config)


def _search(
    target: Target, config: SearchConfig, events: EventStream, control: SearchControl, run: str, look: FirstLook
) -> SearchResult:
    start = time.perf_counter()
    budget = Budget(config.budget_s)
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
            evaluation = look(text, max(best, 1.0) * EARLY_STOP_FRACTION)
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
                if budget.proposals_over():
                    budget.skip_turns(config.iters - turn + 1)
                    break
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
            if budget.proposals_over():
                budget.skip_turns(1)
                raise BudgetSpent
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

    checked: dict[str, Evaluation] = {}  # each finalist's latest race, counted or not: where Z3 checked it

    def race(entry: Entry, race_round: int) -> Evaluation:
        """A finalist checked by Z3 and re-measured with the finish's repeats, and reported as round `race_round` of
        its race: one Z3 refutes is `verification_failed` there and never crowned."""
        evaluation = checked[entry.schedule] = evaluate_candidate(target, entry.schedule, config, repeats=RACE_REPEATS, verify=True)
        events.emit(_evaluation_event(run, entry, race=evaluation, race_round=race_round))
        return evaluation

    cancelled, incumbent, finish = control.cancelled, None, None
    if not cancelled:
        try:
            incumbent = _measure_incumbent(config, evaluate, leaderboard, seen_lock, events, run)
            finish = racing_finish(target, config, leaderboard, race, control, incumbent, budget)
        except SearchCancelled:
            cancelled = True
    if finish is None:
        best, speedup, spread = _best_so_far(leaderboard)
        if best is not None and best.evaluation.verified == DEFERRED:  # no finish checked it: Z3 does now
            proof = checked[best.schedule] = _checked_now(target, config, best, events, run)
            best, speedup, spread = (best, speedup, spread) if proof.verdict == "legal" else (None, 1.0, 0.0)
    else:
        best, speedup, spread = finish.winner, finish.speedup, finish.spread
    original = finish.original if finish else None
    original_won = finish is not None and finish.original_stays
    if original_won:
        assert original is not None
        best, speedup, spread = None, original[0], original[1]
    fresh = _measured_again(target, config, best, budget) if finish is not None and best is not None else None
    kept = not cancelled and incumbent is not None and best is not None and best.schedule == incumbent.schedule
    verdicts = Counter(entry.evaluation.verdict for entry in leaderboard)
    races = finish.races if finish else {}
    ranked = [_with_proof(entry, races.get(entry.schedule), checked.get(entry.schedule)) for entry in leaderboard]
    result = SearchResult(
        run=run,
        target=target.label,
        size=config.size,
        best=_with_proof(best, races.get(best.schedule), checked.get(best.schedule)) if best else None,
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
        budget=budget.describe(),
        fresh_speedup=fresh.speedup if fresh else None,
        fresh_spread=fresh.spread if fresh else None,
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
                "budget": result.budget,
                "fresh_speedup": result.fresh_speedup,
                "fresh_spread": result.fresh_spread,
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


def _best_so_far(leaderboard: list[Entry]) -> tuple[Entry | None, float, float]:
    """A cancelled search's answer: its best correct measurement, or the identity when nothing beat the baseline."""
    measured = [e for e in leaderboard if beats_baseline(e.evaluation.verdict, e.speedup)]
    if not measured:
        return None, 1.0, 0.0
    best = max(measured, key=lambda e: e.speedup)
    return best, best.speedup, best.evaluation.spread or 0.0


def _with_proof(entry: Entry, race: Evaluation | None, checked: Evaluation | None) -> Entry:
    """`entry` with its race that counts, and with Z3's verdict from the evaluation that `checked` its loops where its
    first look deferred it (a refuted finalist's race does not count, but its verdict shows)."""
    if checked is None or entry.evaluation.verified != DEFERRED:
        return replace(entry, race=race)
    proof = {part: getattr(checked, part) for part in ("verified", "verification", "counterexample", "verify_ms")}
    return replace(entry, evaluation=replace(entry.evaluation, **proof), race=race)


def _measured_again(target: Target, config: SearchConfig, winner: Entry, budget: Budget) -> Evaluation | None:
    """The crowned schedule raced once more against the baseline after the choice, with the finish's repeats. The
    races that chose it also chose the fastest of several noisy figures, so their figure leans high; this one did
    not take part in the choice. None when the race fails or the budget is spent (the budget's note says so)."""
    if budget.over():
        budget.skip_fresh()
        return None
    evaluation = evaluate_candidate(target, winner.schedule, config, repeats=RACE_REPEATS, verify=False)
    return evaluation if counts_in_race(evaluation.verdict, evaluation.speedup) else None


def _checked_now(target: Target, config: SearchConfig, best: Entry, events: EventStream, run: str) -> Evaluation:
    """Z3's check of a cancelled search's best so far, whose first look deferred it and which no finish raced: one
    it refutes is not crowned (the identity answers instead), as in the finish."""
    checked = evaluate_candidate(target, best.schedule, config, measure=False, verify=True)
    events.emit(Event("verification", run, schedule=best.schedule, verified=checked.verified, feedback=checked.verification))
    return checked


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
