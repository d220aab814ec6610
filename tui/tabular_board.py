"""What the monitor knows about a tabular run, folded from its events (live or replayed); no widgets.

The ORM's and the fast path's figures are computed from the race's samples with the same
`Timing` the run's own result uses, so the board, the finish event and `repoos optimize` agree.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from repoos_agent.agent.events import Event
from repoos_agent.measure.timing import Timing
from tui.event_log import EventLog

PATHS = (("orm_s", "ORM"), ("fast_s", "fast path"))
"""The two raced paths: the key of their time in a sample's `times`, and their label."""


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


@dataclass
class TabularBoard(EventLog):
    """One tabular run: the endpoint, its chain and SQL, the verification, both paths' samples, the outcome."""

    target: str = ""
    database: str = ""
    repeats: int = 0
    chain: str = ""
    sql: str = ""
    rows_compared: int | None = None
    mismatch: str | None = None
    samples: dict[str, list[float]] = field(default_factory=lambda: {key: [] for key, _ in PATHS})
    finished: Event | None = None
    stored: str | None = None
    started: float | None = None
    last_time: float | None = None

    def apply(self, event: Event) -> str:
        """Fold one event in; returns the line the event log shows for it."""
        self.last_time = event.time
        detail = event.detail
        if event.kind == "run_started":
            self.target, self.database = str(detail.get("target", "")), str(detail.get("database", ""))
            self.repeats = int(detail.get("repeats") or 0)
            self.started = event.time
            return self._logged(event, f"run {event.run} started: {self.target} on {self.database}")
        if event.kind == "chain_read":
            clauses = " ".join(f".{method}()" for method in detail.get("methods") or ())
            parameters = ", ".join(detail.get("parameters") or ())
            self.chain = f"{detail.get('style')}(...) {clauses} .all()" + (f"; values from {parameters}" if parameters else "")
            return self._logged(event, f"chain read at line {detail.get('line')}: {self.chain}")
        if event.kind == "query_compiled":
            self.sql = " ".join(str(detail.get("sql", "")).split())
            return self._logged(event, f"compiled for {detail.get('dialect')}: {self.sql}")
        if event.kind == "verification":
            if event.verified == "true":
                self.rows_compared = int(detail.get("rows_compared") or 0)
                return self._logged(event, f"verified: {self.rows_compared} rows equal to the ORM's")
            self.mismatch = event.feedback or "the fast path differs from the ORM"
            return self._logged(event, f"MISMATCH: {self.mismatch}")
        if event.kind == "race_sample":
            for key, _ in PATHS:
                self.samples[key].append(event.times[key])
            orm, fast = (milliseconds(event.times[key]) for key, _ in PATHS)
            return self._logged(event, f"sample {event.turn}/{self.repeats}: ORM {orm}, fast path {fast}")
        if event.kind == "run_finished":
            self.finished = event
            if self.failure:
                return self._logged(event, f"run failed: {self.failure}")
            return self._logged(event, f"run finished: {self.speedup:.2f}x over the ORM")
        if event.kind == "contract_stored":
            self.stored = str(detail.get("function", ""))
            return self._logged(event, f"stored as the TabularKernel of {self.stored}")
        return self._logged(event, event.kind)

    @property
    def failure(self) -> str | None:
        """Why the run failed, once it has."""
        failed = self.finished.detail.get("failed") if self.finished is not None else None
        return str(failed) if failed else None

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

    def elapsed(self, live: bool) -> float:
        """Seconds since the run started: the clock while it runs live, else the log's own times."""
        if self.started is None:
            return 0.0
        end = time.time() if live and self.finished is None else (self.last_time or self.started)
        return max(0.0, end - self.started)
