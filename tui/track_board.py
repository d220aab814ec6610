"""What every track's board knows about a run, folded from its events (live or replayed); no widgets.

A track's board folds the events that only its runs send; the start of the run, its end, the store and the clock
are the same for every track, so they are folded here once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

from repoos_agent.agent.events import Event
from tui.event_log import EventLog


@dataclass
class TrackBoard(EventLog):
    """One run of a track: its target, when it started, its finish event and the function it was stored for."""

    KERNEL: ClassVar[str]
    """What `repoos optimize` stores for the function, named in the event log's line for `contract_stored`."""

    target: str = ""
    finished: Event | None = None
    stored: str | None = None
    started: float | None = None
    last_time: float | None = None

    def apply(self, event: Event) -> str:
        """Fold one event in; returns the line the event log shows for it."""
        self.last_time = event.time
        if event.kind == "run_started":
            self.target, self.started = str(event.detail.get("target", "")), event.time
        line = self.fold(event)
        if line is not None:
            return self._logged(event, line)
        if event.kind == "run_finished":
            self.finished = event
            return self._logged(event, f"run failed: {self.failure}" if self.failure else f"run finished: {self.outcome()}")
        if event.kind == "contract_stored":
            self.stored = str(event.detail.get("function", ""))
            return self._logged(event, f"stored as the {self.KERNEL} of {self.stored}")
        return self._logged(event, event.kind)

    def fold(self, event: Event) -> str | None:
        """Fold an event only this track's runs send; its log line, or None for the events every track sends."""
        raise NotImplementedError

    def outcome(self) -> str:
        """What a run that finished without failing achieved, for the event log's last line."""
        raise NotImplementedError

    @property
    def failure(self) -> str | None:
        """Why the run failed, once it has."""
        failed = self.finished.detail.get("failed") if self.finished is not None else None
        return str(failed) if failed else None

    def elapsed(self, live: bool) -> float:
        """Seconds since the run started: the clock while it runs live, else the log's own times."""
        if self.started is None:
            return 0.0
        end = time.time() if live and self.finished is None else (self.last_time or self.started)
        return max(0.0, end - self.started)
