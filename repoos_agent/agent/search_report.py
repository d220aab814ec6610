"""A search as an outside caller sees it: the config from a caller's few choices, the result as a typed report.

The MCP server's `optimize` tool returns `SearchReport`; `RunBoard` keeps the leaderboard
of the latest run, filled live from the event stream, for the server's leaderboard resource.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

from repoos_agent.agent.events import Event
from repoos_agent.agent.llm.local_model import DEFAULT_LOCAL_MODEL
from repoos_agent.agent.ranking import by_speedup, counts_in_race, winner_first
from repoos_agent.agent.search import ModelUse, SearchResult


@dataclass(frozen=True)
class LeaderboardRow:
    """One evaluated proposal. A finalist of the racing finish ranks by its re-measurement (more repeats, and the
    figures the winner was chosen by); `first_speedup` is what the dialogue's evaluation measured."""

    schedule: str
    agent: str
    verdict: str
    speedup: float | None  # the figure it ranks by: the racing finish's re-measurement when `raced`, else `first_speedup`
    spread: float | None
    verified: str
    raced: bool
    first_speedup: float | None


@dataclass(frozen=True)
class SearchReport:
    """The winner (the fastest schedule whose lead exceeds the spread; "" is the source order), how it won, and the
    leaderboard: the winner's rows first, showing its `speedup`, then the rest fastest first."""

    run: str
    target: str
    size: str | None
    schedule: str
    speedup: float
    spread: float
    verified: str
    evaluations: int
    verdicts: dict[str, int]
    wall_s: float
    cancelled: bool  # stopped by its caller: the best measured so far, without a racing finish
    input_tokens: int
    output_tokens: int
    cost_usd: float | None  # None when a model's price is unknown
    finish: str  # how the racing finish decided: the winner's figures, a tie it kept, a busy machine
    machine_busy: bool  # another process held a core during the racing finish
    remeasured: int  # finalists the racing finish timed again, later in the run, because the first look could not decide
    leaderboard: tuple[LeaderboardRow, ...]
    budget: str = ""  # what the time budget cut ("" when it cut nothing or there was none)
    fresh_speedup: float | None = None  # the winner raced again after the choice (`speedup` is the race that chose it)
    fresh_spread: float | None = None


@dataclass(frozen=True)
class LeaderboardSnapshot:
    """The latest run as it stands: `status` is none (no run yet), running, finished, cancelled or failed."""

    status: str
    run: str | None
    target: str | None
    size: str | None
    best_schedule: str | None
    best_speedup: float | None
    rows: tuple[LeaderboardRow, ...]


def describe_model_use(use: ModelUse) -> str:
    """`local:smollm2 (SmolLM2-135M-Instruct.Q4_1.gguf, 98 MB): 5 replies in 12.3 s, 85 tokens/s, decoded under grammar`."""
    file = f" ({use.model_file}, {use.model_mb:.0f} MB)" if use.model_file and use.model_mb is not None else ""
    rate = f", {use.tokens_per_s:.0f} tokens/s" if use.tokens_per_s else ""
    decoded = f"decoded under {use.constraint}" if use.constraint else "unconstrained"
    return f"{use.agent}{file}: {use.replies} replies in {use.llm_s:.1f} s{rate}, {decoded}"


def backend_spec(backend: str, model: str | None) -> str:
    """`openai` with model `gpt-x` is `openai:gpt-x`, `local` without one `local:smollm2`; a spec that names its model
    already stays as it is."""
    if ":" in backend or backend == "heuristic":
        return backend
    if backend == "local":
        return f"local:{model or DEFAULT_LOCAL_MODEL}"
    return f"{backend}:{model or ''}".rstrip(":")


def leaderboard_rows(result: SearchResult) -> tuple[LeaderboardRow, ...]:
    """The result's leaderboard as rows, in its order (the winner first)."""
    return tuple(
        LeaderboardRow(
            schedule=e.schedule,
            agent=e.agent,
            verdict=e.evaluation.verdict,
            speedup=(e.race or e.evaluation).speedup,
            spread=e.spread,
            verified=e.evaluation.verified,
            raced=e.race is not None,
            first_speedup=e.evaluation.speedup,
        )
        for e in result.leaderboard
    )


def report_search(result: SearchResult) -> SearchReport:
    """The result as the MCP tool returns it."""
    best = result.best.evaluation if result.best else None
    return SearchReport(
        run=result.run,
        target=result.target,
        size=result.size,
        schedule=result.schedule,
        speedup=result.best_speedup,
        spread=result.best_spread,
        verified=best.verified if best else "n/a (the source order: the baseline itself)",
        evaluations=result.evaluations,
        verdicts=result.verdicts,
        wall_s=result.wall_s,
        cancelled=result.cancelled,
        input_tokens=result.tokens.get("input", 0),
        output_tokens=result.tokens.get("output", 0),
        cost_usd=result.cost_usd,
        finish=result.finish,
        machine_busy=result.machine_busy,
        remeasured=result.remeasured,
        leaderboard=leaderboard_rows(result),
        budget=result.budget,
        fresh_speedup=result.fresh_speedup,
        fresh_spread=result.fresh_spread,
    )


class RunBoard:
    """The latest run's leaderboard, an event-stream subscriber; safe to read while the search's threads write.

    It ranks as the result does: a racing re-measurement replaces its schedule's figures, and once the run has
    finished its winner's rows lead."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshot = LeaderboardSnapshot("none", None, None, None, None, None, ())

    def __call__(self, event: Event) -> None:
        with self._lock:
            current = self._snapshot
            if event.kind == "run_started":
                target, size = event.detail.get("target"), event.detail.get("size")
                self._snapshot = LeaderboardSnapshot("running", event.run, str(target), size and str(size), None, None, ())
            elif event.run != current.run:
                return
            elif event.kind == "evaluation" and event.detail.get("race"):
                self._snapshot = replace(current, rows=_remeasured(current.rows, event))
            elif event.kind == "evaluation":
                self._snapshot = replace(current, rows=tuple(by_speedup((*current.rows, _row(event)))))
            elif event.kind == "run_finished":
                status = "failed" if event.detail.get("failed") else "cancelled" if event.detail.get("cancelled") else "finished"
                rows = tuple(winner_first(current.rows, event.schedule))
                self._snapshot = replace(
                    current, status=status, best_schedule=event.schedule, best_speedup=event.speedup, rows=rows
                )

    def snapshot(self) -> LeaderboardSnapshot:
        with self._lock:
            return self._snapshot


def _row(event: Event) -> LeaderboardRow:
    return LeaderboardRow(
        event.schedule or "",
        event.agent or "",
        event.verdict or "",
        event.speedup,
        event.spread,
        event.verified or "",
        raced=False,
        first_speedup=event.speedup,
    )


def _remeasured(rows: tuple[LeaderboardRow, ...], race: Event) -> tuple[LeaderboardRow, ...]:
    """`rows` with the racing re-measurement `race` as its schedule's figures, when it counts, and its Z3 verdict
    (a race checks what the first look deferred) whether or not it counts."""
    proved = tuple(replace(row, verified=race.verified or row.verified) if row.schedule == race.schedule else row for row in rows)
    if not counts_in_race(race.verdict, race.speedup):
        return proved
    updated = (
        replace(row, speedup=race.speedup, spread=race.spread, raced=True) if row.schedule == race.schedule else row
        for row in proved
    )
    return tuple(by_speedup(updated))
