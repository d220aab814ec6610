"""The app every track's monitor is: a run drawn from its events, live in a worker thread or replayed from its log.

A track's monitor gives only what differs (its widgets, its board, the run it calls); the lifecycle is here once:
a live run calls the track's run and store on a worker thread, as the CLI does, and each event reaches the UI
thread as a `TrackEvent`; a replay paces the log's events instead. Quitting a live run waits for it once: a run
cannot stop halfway (a verification is one transaction, a race one measurement).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Generic, Protocol, TypeVar

from textual import work
from textual.app import App
from textual.message import Message
from textual.widgets import RichLog
from textual.worker import Worker, WorkerFailed

from repoos_agent.agent.events import Event, EventStream
from repoos_agent.errors import RepoosError
from tui.help import HelpScreen
from tui.replay import Replay, paced
from tui.track_board import TrackBoard
from tui.track_widgets import TrackStatus

ResultT = TypeVar("ResultT")
FeedT = TypeVar("FeedT", bound="LiveRun")


class LiveRun(Protocol):
    """A run to start now: its events are sent on `events`."""

    @property
    def events(self) -> EventStream: ...


class TrackEvent(Message):
    """An event of the live run, delivered on the UI thread."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class TrackMonitor(App[ResultT | None], Generic[ResultT, FeedT]):
    """Watch one run of a track, live or replayed; the subclass composes its widgets (a `TrackStatus` with id
    `status`, a `RichLog` with id `log`) and draws its board in `_show_board`."""

    TITLE = "repoos tui"

    def __init__(self, feed: FeedT | Replay, board: TrackBoard) -> None:
        super().__init__()
        self.feed = feed
        self.board = board
        self.state = "starting"
        self.result: ResultT | None = None
        self.failure: str | None = None  # why the run stopped with an error, for the command to report on exit
        self._worker: Worker[object] | None = None

    @property
    def live(self) -> bool:
        return not isinstance(self.feed, Replay)

    def on_mount(self) -> None:
        if isinstance(self.feed, Replay):
            self.state = f"replay x{self.feed.speed:g}"
            self._worker = self.run_worker(self._replay(self.feed), name="replay")
        else:
            self.feed.events.subscribe(lambda event: self.post_message(TrackEvent(event)))
            self.state = "running"
            self._worker = self.run_worker(self._run_live, name="live", thread=True)
        self.set_interval(0.5, self._show_status)
        self._show()

    def _run_live(self) -> None:
        """The worker thread: the track's run and store, as `repoos optimize` does them."""
        assert not isinstance(self.feed, Replay)
        try:
            self.result = self._run(self.feed)
        except RepoosError as error:
            self.call_from_thread(self._ended, "failed", str(error))
            return
        self.call_from_thread(self._ended, "finished", None)

    def _run(self, feed: FeedT) -> ResultT:
        """On the worker thread: run and store as the CLI does; raises RepoosError as the CLI would."""
        raise NotImplementedError

    def _ended(self, state: str, failure: str | None) -> None:
        self.state, self.failure = state, failure
        self._show_status()

    async def _replay(self, replay: Replay) -> None:
        running = asyncio.Event()
        running.set()  # nothing pauses a track's replay: it lasts as long as its run did
        async for event in paced(replay, running):
            self._apply(event)
        self.state = "replayed" if self.board.finished else "replayed (the log ends before the run did)"
        self._show_status()

    def on_track_event(self, message: TrackEvent) -> None:
        self._apply(message.event)

    def _apply(self, event: Event) -> None:
        """The one place an event reaches the screen, live or replayed."""
        self.query_one("#log", RichLog).write(self.board.apply(event))
        if event.kind == "run_finished" and self.board.failure:
            self.notify(self.board.failure, title="the run failed", severity="error", timeout=8)
        self._show()

    def _show(self) -> None:
        self._show_board()
        self._show_status()

    def _show_board(self) -> None:
        """Redraw the track's own widgets from the board."""
        raise NotImplementedError

    def _show_status(self) -> None:
        self.query_one("#status", TrackStatus).show(self.board, self.state, live=self.live and self.state == "running")

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.BINDINGS, leading=()))

    async def action_quit_run(self) -> None:
        if self.state == "finishing":  # a second `q`: the exit is already waiting for the run
            return
        if self.live and self._worker is not None and self._worker.is_running:
            self.state = "finishing"
            self._show_status()
            self._exit_when_done()
        else:
            self.exit(self.result)

    async def action_quit(self) -> None:
        """Textual's own quit key (ctrl+q) lets the run finish too."""
        await self.action_quit_run()

    @work(group="quit", exclusive=True)
    async def _exit_when_done(self) -> None:
        """The run cannot stop halfway; the app exits once it has ended."""
        assert self._worker is not None
        with contextlib.suppress(WorkerFailed):
            await self._worker.wait()
        self.exit(self.result)
