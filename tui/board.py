"""What the monitor knows about a run, folded from its event stream (live or replayed).

The board holds no widgets: the app draws it. It reads the same events the CLI's
live leaderboard reads and ranks them the same way (by speedup, racing re-measurements
kept apart), so the terminal and the TUI never disagree about a run.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from repoos_agent.agent.display import speedup_cell, spread_cell
from repoos_agent.agent.events import Event
from repoos_agent.agent.ranking import beats_baseline, by_speedup
from tui.event_log import EventLog


@dataclass(frozen=True)
class Row:
    """One evaluated proposal, with the reason its agent gave for proposing it."""

    key: str
    event: Event
    reason: str = ""

    @property
    def speedup(self) -> float:
        return self.event.speedup or 0.0

    @property
    def schedule(self) -> str:
        return self.event.schedule or "(identity)"

    @property
    def proposer(self) -> str:
        """Who proposed it: in a Mixture-of-Agents run the agent differs per row, the dialogue tells runs apart."""
        agent = self.event.agent or "?"
        # `openai:gpt-4o-mini` and `openai:gpt-4o` must stay apart in a narrow column: the model says more than the backend.
        name = agent.split(":", 1)[-1]
        return f"{name} d{self.event.dialogue}" if self.event.dialogue is not None else name  # the store's entry: no dialogue

    @property
    def speedup_text(self) -> str:
        return speedup_cell(self.event)

    @property
    def spread_text(self) -> str:
        return spread_cell(self.event)


@dataclass
class Board(EventLog):
    """The state of one run: leaderboard rows, verdict counts, best speedup over evaluations, tokens, log."""

    target: str = ""
    size: str | None = None
    config: dict[str, object] = field(default_factory=dict)
    started: float | None = None
    last_time: float | None = None
    turn: int = 0
    rows: list[Row] = field(default_factory=list)
    verdicts: Counter[str] = field(default_factory=Counter)
    best_series: list[float] = field(default_factory=list)
    races: list[Event] = field(default_factory=list)
    finished: Event | None = None
    machine_busy: bool = False  # the latest evaluation's or the finish's word: their figures were measured beside other load
    _tokens: dict[int, dict[str, int]] = field(default_factory=dict)
    _reasons: dict[tuple[int | None, int | None, str | None], str] = field(default_factory=dict)

    def apply(self, event: Event) -> str:
        """Fold one event in; returns the line the event log shows for it."""
        self.last_time = event.time
        busy = event.detail.get("machine_busy") if event.kind in ("evaluation", "run_finished") else None
        if busy is not None:  # an event from before the flag existed says nothing
            self.machine_busy = bool(busy)
        if event.kind == "run_started":
            self.target = str(event.detail.get("target", ""))
            self.size = event.detail.get("size")  # type: ignore[assignment]
            config = event.detail.get("config")
            self.config = dict(config) if isinstance(config, dict) else {}
            self.started = event.time
            return self._logged(event, f"run {event.run} started: {self.target} {self.size or ''}")
        if event.kind == "turn_started":
            self.turn = max(self.turn, event.turn or 0)
            if event.dialogue is not None and event.tokens:
                self._tokens[event.dialogue] = dict(event.tokens)
            return self._logged(event, f"d{event.dialogue} turn {event.turn}" + (f": {event.feedback}" if event.feedback else ""))
        if event.kind == "proposal":
            self._reasons[(event.dialogue, event.turn, event.schedule)] = str(event.detail.get("reason", ""))
            return self._logged(event, f"{event.agent} d{event.dialogue} proposes {event.schedule or '(a tool call)'}")
        if event.kind == "evaluation" and event.detail.get("race"):
            self.races.append(event)
            return self._logged(event, f"race {speedup_cell(event)} {spread_cell(event)} {event.schedule}")
        if event.kind == "evaluation":
            reason = self._reasons.get((event.dialogue, event.turn, event.schedule), "")
            self.rows.append(Row(f"e{len(self.rows)}", event, reason))
            self.verdicts[event.verdict or "?"] += 1
            self.best_series.append(max(self.best_speedup, event.speedup or 0.0))
            return self._logged(event, f"{event.verdict} {speedup_cell(event)} {event.schedule or '(identity)'}")
        if event.kind == "run_finished":
            self.finished = event
            if event.detail.get("failed"):
                return self._logged(event, f"run failed: {event.detail['failed']}")
            ending = "cancelled" if event.detail.get("cancelled") else "finished"
            winner = event.schedule or "(identity: the baseline)"
            return self._logged(event, f"run {ending}: best {winner} {speedup_cell(event)} {spread_cell(event)}")
        return self._logged(event, event.kind)

    def ranked(self) -> list[Row]:
        """Rows fastest first, by the ranking every leaderboard uses (`by_speedup`)."""
        return by_speedup(self.rows)

    def rank_of(self, schedule: str | None) -> int | None:
        """The leaderboard rank (from 1) of the best row of `schedule`, to point from the race to its row."""
        return next((rank for rank, row in enumerate(self.ranked(), start=1) if row.event.schedule == schedule), None)

    @property
    def best_speedup(self) -> float:
        return self.best_series[-1] if self.best_series else 0.0

    @property
    def evaluations(self) -> int:
        return len(self.rows)

    @property
    def tokens(self) -> dict[str, int]:
        """Input and output tokens spent so far: the run's total once finished, else the dialogues' running totals."""
        if self.finished is not None and self.finished.tokens:
            return dict(self.finished.tokens)
        totals = {"input": 0, "output": 0}
        for spent in self._tokens.values():
            for kind, count in spent.items():
                totals[kind] = totals.get(kind, 0) + count
        return totals

    @property
    def iters(self) -> int:
        value = self.config.get("iters", 0)
        return value if isinstance(value, int) else 0

    @property
    def agents(self) -> str:
        """The backend, or the Mixture-of-Agents members and aggregator."""
        moa = self.config.get("moa") or []
        if moa:
            aggregator = self.config.get("aggregator")
            return "moa " + ", ".join(str(m) for m in moa) + (f" → {aggregator}" if aggregator else "")
        return str(self.config.get("backend", ""))

    @property
    def compiler(self) -> str:
        return str(self.config.get("compiler", ""))

    def elapsed(self, live: bool) -> float:
        """Seconds since the run started: the clock for a live run, the log's own times for a replay or a finished run."""
        if self.started is None:
            return 0.0
        if self.finished is not None:
            wall = self.finished.detail.get("wall_s")
            return float(wall) if isinstance(wall, int | float) else self.finished.time - self.started
        end = time.time() if live else (self.last_time or self.started)
        return max(0.0, end - self.started)

    def best_to_save(self) -> Event | None:
        """The schedule `s` saves: the raced winner once the run finished, else the best correct measurement above 1x."""
        if self.finished is not None:
            return self.finished if self.finished.schedule else None
        measured = [row for row in self.rows if row.event.schedule and beats_baseline(row.event.verdict, row.speedup)]
        return max(measured, key=lambda row: row.speedup).event if measured else None
