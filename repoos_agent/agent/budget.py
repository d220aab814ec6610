"""A search's time budget (`--budget SECONDS`): where it stops starting work, and what it skipped.

The proposals get `FOR_PROPOSALS` of the budget: past it no dialogue starts a new turn (a turn already started
finishes, its candidates built and timed together). The racing finish then races its finalists once, and races
again what it could not decide only while the budget lasts, and measures the winner again after the choice only
if some is left. Nothing is cut halfway: a turn that started builds and
times its candidates, and the finish's first round races every finalist, so a search overruns a budget shorter than
those take, and says what it cut and how long it took.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

FOR_PROPOSALS = 0.6
"""The budget's share for proposing and first looks; the rest is the racing finish's."""


@dataclass
class Budget:
    """The clock of one search, and what it skipped: turns never started, race rounds never run."""

    seconds: float | None
    skipped_turns: int = 0
    skipped_rounds: int = 0
    skipped_fresh: bool = False
    start: float = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.start = time.perf_counter()

    def spent(self) -> float:
        return time.perf_counter() - self.start

    def proposals_over(self) -> bool:
        """Whether the proposals' share is spent: no new turn starts."""
        return self.seconds is not None and self.spent() >= FOR_PROPOSALS * self.seconds

    def over(self) -> bool:
        """Whether the whole budget is spent: no new race round starts."""
        return self.seconds is not None and self.spent() >= self.seconds

    def skip_turns(self, count: int) -> None:
        with self._lock:
            self.skipped_turns += count

    def skip_round(self, count: int = 1) -> None:
        with self._lock:
            self.skipped_rounds += count

    def skip_fresh(self) -> None:
        self.skipped_fresh = True

    def describe(self) -> str:
        """What the budget cut, in a sentence ("" without a budget or when it cut nothing)."""
        if self.seconds is None or not (self.skipped_turns or self.skipped_rounds or self.skipped_fresh):
            return ""
        parts = []
        if self.skipped_turns:
            parts.append(f"{self.skipped_turns} turn(s) of proposals not started")
        if self.skipped_rounds:
            parts.append(f"{self.skipped_rounds} re-measurement round(s) of the finish not run")
        if self.skipped_fresh:
            parts.append("the winner not measured again after the choice")
        return f"The budget of {self.seconds:g} s cut the search ({'; '.join(parts)}); it took {self.spent():.0f} s."
