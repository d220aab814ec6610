"""The event log every monitor's board keeps: the last lines it showed, each stamped with its event's time."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from repoos_agent.agent.events import Event

LOG_LINES = 200


@dataclass
class EventLog:
    """A board's log: a line per event folded in, and the monitor's own notes (a save, a failed store)."""

    log: deque[str] = field(default_factory=lambda: deque(maxlen=LOG_LINES), kw_only=True)

    def _logged(self, event: Event, line: str) -> str:
        return self.note(line, event.time)

    def note(self, line: str, when: float | None = None) -> str:
        """Add a line to the event log, stamped with `when` (now by default); returns the line."""
        stamp = time.strftime("%H:%M:%S", time.localtime(when if when is not None else time.time()))
        self.log.append(f"{stamp} {line}")
        return self.log[-1]
