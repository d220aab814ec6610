"""One evaluated proposal on a search's leaderboard: what the search records and the racing finish ranks."""

from __future__ import annotations

from dataclasses import dataclass

from repoos_agent.evaluate import Evaluation


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
