"""How evaluations rank and which may stand as the best so far, one rule for every leaderboard: the search's
result, the CLI's live table, the MCP leaderboard resource and the TUI, so no two of them can disagree about a run."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar


class Measured(Protocol):
    """Anything with a speedup over the baseline: a search entry, an event, a leaderboard row."""

    @property
    def speedup(self) -> float | None: ...


M = TypeVar("M", bound=Measured)


def by_speedup(items: Iterable[M]) -> list[M]:
    """Fastest first; unmeasured ones (no speedup) last; equal speedups keep their arrival order."""
    return sorted(items, key=lambda item: -(item.speedup or 0.0))


def beats_baseline(verdict: str | None, speedup: float | None) -> bool:
    """Whether a measurement may stand as the best so far when there is no racing finish to decide (a cancelled
    search, the TUI's save before the run ends): legal and faster than the source order. A "legal" verdict with a
    speedup is a correct one: `evaluate_schedule` times only a candidate whose outputs equal the baseline's."""
    return verdict == "legal" and (speedup or 0.0) > 1.0
