"""Steering a running search from outside: pause, resume, cancel.

The TUI pauses and quits, the MCP server cancels a call its client gave up on. The
search asks `checkpoint()` before every evaluation: a paused search waits there, a
cancelled one unwinds with `SearchCancelled`, so no evaluation is cut off halfway and
nothing half-built is ever reported.
"""

from __future__ import annotations

import threading


class SearchCancelled(Exception):
    """Raised at a checkpoint of a cancelled search; the search catches it and reports what it has."""


class BudgetSpent(SearchCancelled):
    """Raised where a search with a budget would start work its budget no longer covers: the dialogues end there,
    and the finish races what they measured."""


class SearchControl:
    """Thread-safe switches a caller holds while `optimize` runs in another thread."""

    def __init__(self) -> None:
        self._cancelled = threading.Event()
        self._running = threading.Event()
        self._running.set()
        self._switch = threading.Lock()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def cancel(self) -> None:
        with self._switch:
            self._cancelled.set()
            self._running.set()  # a paused search must wake up to notice

    def pause(self) -> None:
        with self._switch:  # a cancel between the check and the clear would leave the search asleep for good
            if not self.cancelled:
                self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def checkpoint(self) -> None:
        """Wait while paused; raise `SearchCancelled` once cancelled."""
        self._running.wait()
        if self._cancelled.is_set():
            raise SearchCancelled
