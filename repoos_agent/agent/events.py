"""One event stream for a run: each step of a search or of a tabular run becomes a typed event.

The CLI's progress lines, the JSONL run log, and later the TUI and MCP progress all
subscribe to the same stream, so there is one account of what happened.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:  # a reader of events (the TUI's replay) need not load the engine
    from repoos_agent.legality import Verdict

RunKind = Literal["run_started", "run_finished"]
"""Every run, of either track, starts and finishes with these."""
SearchKind = Literal["turn_started", "proposal", "evaluation"]
"""A loop kernel's schedule search, between its start and finish."""
TabularKind = Literal["chain_read", "query_compiled", "verification", "race_sample", "contract_stored"]
"""An ORM endpoint's tabular run (`repoos_agent.tabular.run_events` builds them), between its start and finish. The
fsm track's arena (`repoos_agent.fsm.arena`) uses `proposal`, `verification`, `race_sample` and `contract_stored` too,
with its verdicts in `detail`."""
EventKind = Literal[RunKind, SearchKind, TabularKind]
RUN_KINDS: tuple[RunKind, ...] = get_args(RunKind)
SEARCH_KINDS: tuple[SearchKind, ...] = get_args(SearchKind)
TABULAR_KINDS: tuple[TabularKind, ...] = get_args(TabularKind)
EVENT_KINDS: tuple[EventKind, ...] = get_args(EventKind)


@dataclass(frozen=True)
class Event:
    """Something that happened in run `run`; fields not relevant to a kind stay empty."""

    kind: EventKind
    run: str
    time: float = field(default_factory=time.time)
    dialogue: int | None = None
    turn: int | None = None
    agent: str | None = None
    schedule: str | None = None
    verdict: Verdict | None = None
    speedup: float | None = None
    spread: float | None = None
    verified: str | None = None
    feedback: str | None = None
    times: dict[str, float] = field(default_factory=dict)  # legality_ms, verify_ms, build_ms, candidate_s, ...
    timed: tuple[tuple[float, float], ...] = ()
    tokens: dict[str, int] = field(default_factory=dict)
    detail: dict[str, object] = field(default_factory=dict)


class EventStream:
    """Fan-out of events to subscribers; safe to emit from concurrent dialogues."""

    def __init__(self) -> None:
        self._subscribers: list[Callable[[Event], None]] = []
        self._lock = threading.Lock()
        self.events: list[Event] = []

    def subscribe(self, subscriber: Callable[[Event], None]) -> None:
        with self._lock:
            self._subscribers.append(subscriber)

    def emit(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)
            subscribers = list(self._subscribers)
        for subscriber in subscribers:
            subscriber(event)


class JsonlLog:
    """Writes each event as one JSON line, flushed at once, so a log survives an interrupted run."""

    def __init__(self, path: str | Path) -> None:
        self._handle: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._handle.write(json.dumps(asdict(event)) + "\n")
            self._handle.flush()

    def close(self) -> None:
        self._handle.close()
