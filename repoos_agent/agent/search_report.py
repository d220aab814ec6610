"""A search as an outside caller sees it: the config from a caller's few choices, the result as a typed report.

The MCP server's `optimize` tool returns `SearchReport`; `RunBoard` keeps the leaderboard
of the latest run, filled live from the event stream, for the server's leaderboard resource.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

from repoos_agent.agent.events import Event
from repoos_agent.agent.ranking import by_speedup
from repoos_agent.agent.search import SearchResult


@dataclass(frozen=True)
class LeaderboardRow:
    schedule: str
    agent: str
    verdict: str
    speedup: float | None
    spread: float | None
    verified: str


@dataclass(frozen=True)
class SearchReport:
    """The winner (the fastest schedule whose lead exceeds the spread; "" is the source order) and the leaderboard."""

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
    leaderboard: tuple[LeaderboardRow, ...]


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


def backend_spec(backend: str, model: str | None) -> str:
    """`openai` with model `gpt-x` is `openai:gpt-x`; a spec that names its model already stays as it is."""
    if ":" in backend or backend == "heuristic":
        return backend
    return f"{backend}:{model or ''}".rstrip(":")


def report_search(result: SearchResult) -> SearchReport:
    best = result.best.evaluation if result.best else None
    rows = tuple(
        LeaderboardRow(e.schedule, e.agent, e.evaluation.verdict, e.evaluation.speedup, e.evaluation.spread, e.evaluation.verified)
        for e in result.leaderboard
    )
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
        leaderboard=rows,
    )


class RunBoard:
    """The latest run's leaderboard, an event-stream subscriber; safe to read while the search's threads write."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshot = LeaderboardSnapshot("none", None, None, None, None, None, ())

    def __call__(self, event: Event) -> None:
        with self._lock:
            current = self._snapshot
            if event.kind == "run_started":
                target, size = event.detail.get("target"), event.detail.get("size")
                self._snapshot = LeaderboardSnapshot("running", event.run, str(target), size and str(size), None, None, ())
            elif event.kind == "evaluation" and event.run == current.run and not event.detail.get("race"):
                row = LeaderboardRow(
                    event.schedule or "", event.agent or "", event.verdict or "", event.speedup, event.spread, event.verified or ""
                )
                rows = tuple(by_speedup((*current.rows, row)))
                self._snapshot = replace(current, rows=rows)
            elif event.kind == "run_finished" and event.run == current.run:
                status = "failed" if event.detail.get("failed") else "cancelled" if event.detail.get("cancelled") else "finished"
                self._snapshot = replace(current, status=status, best_schedule=event.schedule, best_speedup=event.speedup)

    def snapshot(self) -> LeaderboardSnapshot:
        with self._lock:
            return self._snapshot
