"""The fsm monitor: an arena run (`repoos optimize FILE.py:f` of a branchy function) drawn from its events, live or
replayed.

Its own app beside `SearchMonitor`: an arena run has one round of proposals, their verdicts, and a race. A live run
calls `race_target` in a worker thread and stores the winner, as the CLI does; each event reaches the UI thread as a
message and is folded into an `FsmBoard`, which the leaderboard shows.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Footer, RichLog
from textual.worker import Worker, WorkerFailed

from repoos_agent.agent.events import Event
from repoos_agent.errors import RepoosError
from tui.event_log import LOG_LINES
from tui.fsm_board import FsmBoard
from tui.fsm_widgets import FsmStatus, Leaderboard
from tui.help import HelpScreen
from tui.replay import Replay, paced

if TYPE_CHECKING:
    from repoos_agent.fsm.arena import ArenaResult
    from tui.fsm_run import LiveBranchy


class FsmEvent(Message):
    """An event of the arena run, delivered on the UI thread."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class FsmMonitor(App["ArenaResult | None"]):
    """Watch a branchy function's variants proposed, checked and raced; the winner is stored as the CLI stores it."""

    CSS_PATH = "fsm_monitor.tcss"
    TITLE = "repoos tui"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit_run", "quit", tooltip="quit (a live run finishes first: a race cannot stop halfway)"),
        Binding("question_mark", "help", "help", tooltip="this help"),
    ]

    def __init__(self, feed: LiveBranchy | Replay) -> None:
        super().__init__()
        self.feed = feed
        self.board = FsmBoard()
        self.state = "starting"
        self.result: ArenaResult | None = None
        self.failure: str | None = None
        self._worker: Worker[object] | None = None

    @property
    def live(self) -> bool:
        return not isinstance(self.feed, Replay)

    def compose(self) -> ComposeResult:
        yield FsmStatus(id="status")
        yield Leaderboard(id="board")
        yield RichLog(id="log", max_lines=LOG_LINES, wrap=False, markup=False)
        yield Footer()

    def on_mount(self) -> None:
        if isinstance(self.feed, Replay):
            self.state = f"replay x{self.feed.speed:g}"
            self._worker = self.run_worker(self._replay(self.feed), name="replay")
        else:
            self.feed.events.subscribe(lambda event: self.post_message(FsmEvent(event)))
            self.state = "running"
            self._worker = self.run_worker(self._race, name="fsm", thread=True)
        self.set_interval(0.5, self._show_status)
        self._show()

    def _race(self) -> None:
        """The worker thread: the race, then the store, as `repoos optimize` does them."""
        assert not isinstance(self.feed, Replay)
        try:
            self.result = self.feed.race()
        except RepoosError as error:
            self.call_from_thread(self._ended, "failed", str(error))
            return
        self.call_from_thread(self._ended, "finished", None)

    def _ended(self, state: str, failure: str | None) -> None:
        self.state, self.failure = state, failure
        if failure and not self.board.failure:  # a refusal before the race started has no run_finished event
            self.notify(failure, title="the run failed", severity="error", timeout=8)
        self._show_status()

    async def _replay(self, replay: Replay) -> None:
        running = asyncio.Event()
        running.set()  # nothing pauses an arena replay: it lasts as long as its race did
        async for event in paced(replay, running):
            self._apply(event)
        self.state = "replayed" if self.board.finished else "replayed (the log ends before the run did)"
        self._show_status()

    def on_fsm_event(self, message: FsmEvent) -> None:
        self._apply(message.event)

    def _apply(self, event: Event) -> None:
        """The one place an event reaches the screen, live or replayed."""
        self.query_one("#log", RichLog).write(self.board.apply(event))
        if event.kind == "run_finished" and self.board.failure:
            self.notify(self.board.failure, title="the run failed", severity="error", timeout=8)
        self._show()

    def _show(self) -> None:
        self.query_one(Leaderboard).show(self.board)
        self._show_status()

    def _show_status(self) -> None:
        self.query_one(FsmStatus).show(self.board, self.state, live=self.live and self.state == "running")

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.BINDINGS, leading=()))

    async def action_quit_run(self) -> None:
        if self.state == "finishing":  # a second `q`: the exit is already waiting for the race
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
        assert self._worker is not None
        with contextlib.suppress(WorkerFailed):
            await self._worker.wait()
        self.exit(self.result)
