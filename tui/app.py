"""The search monitor: one Textual app that draws a run's event stream, live from a search or replayed from its log.

A live search runs `optimize` in a worker thread and subscribes to its `EventStream`;
each event is posted to the UI thread as a message and folded into the `Board`. A
replay posts the logged events through the same handler, so both show the same thing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing import resource_tracker
from typing import ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, RichLog
from textual.worker import Worker, WorkerFailed

from repoos_agent.agent.control import SearchControl
from repoos_agent.agent.events import Event, EventStream
from repoos_agent.agent.search import SearchConfig, SearchResult, optimize
from repoos_agent.errors import RepoosError
from repoos_agent.target import Target
from tui.board import Board
from tui.detail import CodeSource, DetailPane, DetailScreen
from tui.event_log import LOG_LINES
from tui.help import HelpScreen
from tui.leaderboard import Leaderboard
from tui.replay import Replay, paced
from tui.status import BestChart, StatusBar, VerdictCounts

SaveBest = Callable[[Event], str]
"""Saves the best schedule (an evaluation or the run's finish event); returns where it went, raises RepoosError."""


@dataclass(frozen=True)
class LiveSearch:
    """A search to run now; subscribe a run log to `events` before the app starts to record it."""

    target: Target
    config: SearchConfig
    events: EventStream = field(default_factory=EventStream)


class SearchEvent(Message):
    """An event of the run, delivered on the UI thread."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class SearchMonitor(App[SearchResult | None]):
    """Watch, pause and cancel a search; inspect any row's feedback and code; save the winner."""

    CSS_PATH = "monitor.tcss"
    TITLE = "repoos tui"
    BINDINGS: ClassVar[list[BindingType]] = [  # the tooltips are the help screen's text
        Binding("q", "quit_search", "quit", tooltip="cancel the search cleanly and quit"),
        Binding("p", "toggle_pause", "pause", tooltip="pause or resume (an evaluation under way finishes first)"),
        Binding("s", "save_best", "save best", tooltip="save the best schedule as the function's VerifiedKernel (graph store)"),
        Binding("enter", "details", "details", tooltip="the row in full, with its generated code"),
        Binding("c", "toggle_language", "C/MLIR", tooltip="generated code in C or MLIR"),
        Binding("question_mark", "help", "help", tooltip="this help"),
    ]

    def __init__(self, feed: LiveSearch | Replay, show_code: CodeSource | None = None, save_best: SaveBest | None = None) -> None:
        super().__init__()
        self.feed = feed
        self.show_code = show_code
        self.save_best = save_best
        self.board = Board()
        self.control = SearchControl()
        self.language = "c"
        self.state = "starting"
        self.result: SearchResult | None = None
        self.failure: str | None = None  # why the search stopped with an error, for the command to report on exit
        self._worker: Worker[object] | None = None
        self._replay_running = asyncio.Event()
        # Textual swaps sys.stderr for a capture whose fileno() is -1; multiprocessing's resource tracker, which
        # the measuring worker's spawn starts on first use, passes that fd to its child and fails. Start it now.
        resource_tracker.ensure_running()

    @property
    def live(self) -> bool:
        return isinstance(self.feed, LiveSearch)

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield Leaderboard(id="leaderboard")
        with Horizontal(id="bottom"):
            yield DetailPane(id="detail")
            with Vertical(id="side"):
                yield BestChart(id="best")
                yield VerdictCounts(id="verdicts")
                yield RichLog(id="log", max_lines=LOG_LINES, wrap=False, markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self._monitor.query_one(Leaderboard).focus()
        self._replay_running.set()
        if isinstance(self.feed, LiveSearch):
            self.feed.events.subscribe(self._forward)
            self.state = "running"
            self._worker = self.run_worker(self._search, name="search", thread=True)
        else:
            self.state = f"replay x{self.feed.speed:g}"
            self._worker = self.run_worker(self._replay(self.feed), name="replay")
        self.set_interval(1.0, self._show_status)
        self._show_status()

    def _forward(self, event: Event) -> None:
        """Runs on the search's threads: hand the event to the UI thread (thread-safe, never blocks the search)."""
        self.post_message(SearchEvent(event))

    def _search(self) -> SearchResult | None:
        assert isinstance(self.feed, LiveSearch)
        try:
            self.result = optimize(self.feed.target, self.feed.config, self.feed.events, self.control)
        except RepoosError as error:
            self.call_from_thread(self._failed, str(error))
            return None
        return self.result

    def _failed(self, reason: str) -> None:
        self.failure = reason
        self.state = "failed"
        self._note(f"search failed: {reason}", severity="error")
        self._show_status()

    async def _replay(self, replay: Replay) -> None:
        async for event in paced(replay, self._replay_running):
            self._apply(event)
        self.state = "replayed" if self.board.finished else "replayed (the log ends before the run did)"
        self._show_status()

    def on_search_event(self, message: SearchEvent) -> None:
        self._apply(message.event)

    def _apply(self, event: Event) -> None:
        """The one place an event reaches the screen, live or replayed."""
        line = self.board.apply(event)
        self._monitor.query_one("#log", RichLog).write(line)
        if event.kind == "evaluation" and not event.detail.get("race"):
            leaderboard = self._monitor.query_one(Leaderboard)
            leaderboard.show(self.board.ranked())
            self._monitor.query_one(DetailPane).show(leaderboard.selected)
            self._monitor.query_one(VerdictCounts).show(self.board)
        if event.kind == "run_finished" and self.live and not event.detail.get("failed"):  # a failure arrives via _failed
            self.state = "cancelled" if event.detail.get("cancelled") else "finished"
        self._monitor.query_one(BestChart).show(self.board)
        self._show_status()

    @property
    def _monitor(self) -> Screen:
        """The monitor's own screen, where its widgets live: events and the status timer keep arriving while
        the code view or the help is the screen on top, and `App.query_one` would search that one."""
        return self.screen_stack[0]

    def _show_status(self) -> None:
        running = self.live and self.state in ("running", "paused", "cancelling")
        self._monitor.query_one(StatusBar).show(self.board, self.state, live=running)

    def _note(self, text: str, severity: str = "information") -> None:
        """A notification that also stays in the event log."""
        self._monitor.query_one("#log", RichLog).write(self.board.note(text))
        self.notify(text, severity=severity, timeout=8)  # type: ignore[arg-type]

    def on_data_table_row_highlighted(self, _: DataTable.RowHighlighted) -> None:
        self._monitor.query_one(DetailPane).show(self._monitor.query_one(Leaderboard).selected)

    def on_data_table_row_selected(self, _: DataTable.RowSelected) -> None:
        self.action_details()

    def action_details(self) -> None:
        row = self._monitor.query_one(Leaderboard).selected
        if row is None:
            self.notify("no evaluation yet", severity="warning")
            return
        self.push_screen(DetailScreen(row, self.show_code, self.language))

    def action_toggle_language(self) -> None:
        self.language = "mlir" if self.language == "c" else "c"
        self.notify(f"generated code: {'MLIR' if self.language == 'mlir' else 'C'} (enter shows a row's code)")

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.BINDINGS))

    def action_toggle_pause(self) -> None:
        if self.state == "paused":
            self.control.resume()
            self._replay_running.set()
            self.state = "running" if self.live else f"replay x{self.feed.speed:g}"  # type: ignore[union-attr]
        elif self.state == "running" or self.state.startswith("replay x"):
            self.control.pause()
            self._replay_running.clear()
            self.state = "paused"
        self._show_status()

    def action_save_best(self) -> None:
        best = self.board.best_to_save()
        if self.save_best is None:
            self._note("saving needs the run's kernel, which this replay could not load", severity="warning")
        elif best is None:
            self._note("nothing to save: no schedule has beaten the baseline", severity="warning")
        else:
            self._save(best)

    @work(thread=True, group="save")
    def _save(self, best: Event) -> None:
        assert self.save_best is not None
        try:
            where = self.save_best(best)
        except RepoosError as error:
            self.call_from_thread(self._note, f"save failed: {error}", "error")
            return
        self.call_from_thread(self._note, f"saved: {where}")

    async def action_quit_search(self) -> None:
        if self.state == "cancelling":  # a second `q`: the exit is already waiting for the search to unwind
            return
        if self.live and self._worker is not None and self._worker.is_running:
            self.control.cancel()
            self.state = "cancelling"
            self._show_status()
            self._exit_when_unwound()
        else:
            self.exit(self.result)

    async def action_quit(self) -> None:
        """Textual's own quit key (ctrl+q) unwinds the search too."""
        await self.action_quit_search()

    @work(group="quit", exclusive=True)
    async def _exit_when_unwound(self) -> None:
        """The search stops at its next checkpoint (an evaluation under way finishes first); then the app exits."""
        assert self._worker is not None
        with contextlib.suppress(WorkerFailed):
            await self._worker.wait()
        self.exit(self.result)

    def on_unmount(self) -> None:
        self.control.cancel()  # however the app ends, no search thread outlives it
