"""What the monitor knows about a tabular run, folded from its events (live or replayed); no widgets.

The ORM's and the fast path's figures are computed from the race's samples with the same
`Timing` the run's own result uses, so the board, the finish event and `repoos optimize` agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from repoos_agent.agent.events import Event
from repoos_agent.measure.timing import Timing
from tui.track_board import TrackBoard

PATHS = (("orm_s", "ORM"), ("fast_s", "fast path"))
"""The two raced paths: the key of their time in a sample's `times`, and their label."""


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


@dataclass
class TabularBoard(TrackBoard):
    """One tabular run: the endpoint, its chain and SQL, the verification, both paths' samples, the outcome."""

    KERNEL: ClassVar[str] = "TabularKernel"

    database: str = ""
    repeats: int = 0
    chain: str = ""
    sql: str = ""
    rows_compared: int | None = None
    mismatch: str | None = None
    samples: dict[str, list[float]] = field(default_factory=lambda: {key: [] for key, _ in PATHS})

    def fold(self, event: Event) -> str | None:
        """Fold the chain, its SQL, the verification or a sample in; the track's start line; None for the others."""
        detail = event.detail
        if event.kind == "run_started":
            self.database, self.repeats = str(detail.get("database", "")), int(detail.get("repeats") or 0)
            return f"run {event.run} started: {self.target} on {self.database}"
        if event.kind == "chain_read":
            clauses = " ".join(f".{method}()" for method in detail.get("methods") or ())
            parameters = ", ".join(detail.get("parameters") or ())
            self.chain = f"{detail.get('style')}(...) {clauses} .all()" + (f"; values from {parameters}" if parameters else "")
            return f"chain read at line {detail.get('line')}: {self.chain}"
        if event.kind == "query_compiled":
            self.sql = " ".join(str(detail.get("sql", "")).split())
            return f"compiled for {detail.get('dialect')}: {self.sql}"
        if event.kind == "verification":
            if event.verified == "true":
                self.rows_compared = int(detail.get("rows_compared") or 0)
                return f"verified: {self.rows_compared} rows equal to the ORM's"
            self.mismatch = event.feedback or "the fast path differs from the ORM"
            return f"MISMATCH: {self.mismatch}"
        if event.kind == "race_sample":
            for key, _ in PATHS:
                self.samples[key].append(event.times[key])
            orm, fast = (milliseconds(event.times[key]) for key, _ in PATHS)
            return f"sample {event.turn}/{self.repeats}: ORM {orm}, fast path {fast}"
        return None

    def outcome(self) -> str:
        return f"{self.speedup:.2f}x over the ORM"

    def timing(self, key: str) -> Timing | None:
        """The path's median and spread over the samples so far (None before the first)."""
        return Timing.of(self.samples[key]) if self.samples[key] else None

    @property
    def speedup(self) -> float | None:
        """The ORM's median over the fast path's: the run's own figure once it finished, else so far."""
        if self.finished is not None and self.finished.speedup:
            return self.finished.speedup
        orm, fast = (self.timing(key) for key, _ in PATHS)
        return orm.median_s / fast.median_s if orm and fast and fast.median_s else None

    @property
    def sampled(self) -> int:
        return len(self.samples[PATHS[0][0]])
