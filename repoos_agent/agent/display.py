"""The live leaderboard `repoos optimize` shows on a terminal: the event stream, drawn with rich."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import replace

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from repoos_agent.agent.events import Event
from repoos_agent.agent.ranking import counts_in_race, winner_first

ROWS = 12


class LiveLeaderboard:
    """Subscribe it to the event stream inside `with`; it redraws on every evaluation."""

    def __init__(self, target: str, console: Console | None = None) -> None:
        self.target = target
        self.console = console or Console(stderr=True)
        self.entries: list[Event] = []
        self.winner: str | None = None  # the racing finish's, once the run has finished
        self.verdicts: Counter[str] = Counter()
        self.started = time.perf_counter()
        self._lock = threading.Lock()
        self._live = Live(self._render(), console=self.console, refresh_per_second=4, transient=False)

    def __enter__(self) -> LiveLeaderboard:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.__exit__(*exc)

    def __call__(self, event: Event) -> None:
        with self._lock:
            if event.kind == "evaluation" and event.detail.get("race"):
                # Ranked as the result is: a counted re-measurement replaces its schedule's figures, the winner leads.
                if counts_in_race(event.verdict, event.speedup):
                    self.entries = [
                        replace(e, speedup=event.speedup, spread=event.spread) if e.schedule == event.schedule else e
                        for e in self.entries
                    ]
            elif event.kind == "evaluation":
                self.entries.append(event)
                self.verdicts[event.verdict or "?"] += 1
            elif event.kind == "run_finished":
                self.winner = event.schedule
            else:
                return
            self._live.update(self._render())

    def _render(self) -> Group:
        best = max((e.speedup or 0 for e in self.entries), default=0.0)
        busy = busy_note(self.entries[-1]) if self.entries else ""
        header = Text(
            f"{self.target}: {len(self.entries)} evaluations, best {best:.2f}x, {time.perf_counter() - self.started:.0f} s  "
            + "  ".join(f"{verdict} {count}" for verdict, count in sorted(self.verdicts.items()))
            + (f"  {busy}" if busy else ""),
            style="bold",
        )
        table = Table(expand=True)
        for column in ("#", "agent", "schedule", "verdict", "speedup", "spread", "z3"):
            table.add_column(column, overflow="fold" if column == "schedule" else "ellipsis")
        ranked = winner_first(self.entries, self.winner)[:ROWS]
        for rank, event in enumerate(ranked, start=1):
            table.add_row(
                str(rank),
                event.agent or "",
                event.schedule or "(identity)",
                event.verdict or "",
                speedup_cell(event),
                spread_cell(event),
                event.verified or "",
            )
        return Group(header, table)


def speedup_cell(event: Event) -> str:
    return f"{event.speedup:.2f}x" if event.speedup else "-"


def spread_cell(event: Event) -> str:
    """An early-stopped candidate ran once: it has a speedup but no spread to rank it by."""
    return f"±{event.spread:.0%}" if event.spread is not None else ("1 run" if event.speedup else "")


def busy_note(event: Event) -> str:
    """ "machine busy: parallel loops on 1 thread" when the latest race found a core taken ("" otherwise)."""
    if not event.detail.get("machine_busy"):
        return ""
    return f"machine busy: parallel loops on {event.detail.get('team', '?')} thread(s)"
