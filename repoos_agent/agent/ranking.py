"""How evaluations rank and which may stand as the best so far, one rule for every leaderboard: the search's
result, the CLI's live table, the MCP leaderboard resource and the TUI, so no two of them can disagree about a run."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:  # the monitors rank events without loading the engine
    from repoos_agent.legality import Verdict


class Measured(Protocol):
    """Anything with a speedup over the baseline: a search entry, an event, a leaderboard row."""

    @property
    def speedup(self) -> float | None: ...


class Ranked(Measured, Protocol):
    """A measured schedule: a search entry, an event, a leaderboard row."""

    @property
    def schedule(self) -> str | None: ...


M = TypeVar("M", bound=Measured)
R = TypeVar("R", bound=Ranked)


def by_speedup(items: Iterable[M]) -> list[M]:
    """Fastest first; unmeasured ones (no speedup) last; equal speedups keep their arrival order."""
    return sorted(items, key=lambda item: -(item.speedup or 0.0))


def winner_first(items: Iterable[R], winner: str | None) -> list[R]:
    """`by_speedup`, but the winner's entries lead (None or "": the source order won, nothing leads): the racing finish
    may choose a simpler schedule, or the stored one, within the spread of a faster one, and the first row of a finished
    run's leaderboard must be its result."""
    ranked = by_speedup(items)
    return sorted(ranked, key=lambda item: not (winner and item.schedule == winner))  # stable: each part keeps its rank


def beats_baseline(verdict: Verdict | None, speedup: float | None) -> bool:
    """Whether a measurement may stand as the best so far when there is no racing finish to decide (a cancelled
    search, the TUI's save before the run ends): legal and faster than the source order. A "legal" verdict with a
    speedup is a correct one: `evaluate_schedule` times only a candidate whose outputs equal the baseline's."""
    return verdict == "legal" and (speedup or 0.0) > 1.0


def counts_in_race(verdict: Verdict | None, speedup: float | None) -> bool:
    """Whether a racing re-measurement counts, as a contender and as its schedule's figures on the result's
    leaderboard (and the MCP server's and the CLI's live one, which follow the events): legal and timed. A re-run
    can fail where the first run passed (a timeout on a loaded machine); the first figures then stand, and the
    schedule is out of the race."""
    return verdict == "legal" and bool(speedup)
