"""The tabular monitor: a tabular run (`repoos optimize app.py:f --db URL`) drawn from its events, live or replayed.

Its own app beside `SearchMonitor`: a tabular run has no leaderboard of schedules, no code to
show, nothing to pause; it shares the run log, its pacing and the help screen. A live run calls
`optimize_endpoint` in a worker thread and stores the contract when it is verified, as the CLI
does; each event reaches the UI thread as a message and is folded into a `TabularBoard`.
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
from tui.help import HelpScreen
from tui.replay import Replay, paced
from tui.tabular_board import TabularBoard
from tui.tabular_widgets import Outcome, QueryPane, RaceTable, TabularStatus

if TYPE_CHECKING:
    from repoos_agent.tabular.result import TabularResult
    from tui.tabular_run import LiveEndpoint


class TabularEvent(Message):
    """An event of the tabular run, delivered on the UI thread."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class TabularMonitor(App["TabularResult | None"]):
    """Watch an endpoint's query compile, verify and race against the ORM; the contract is stored as the CLI stores it."""

    CSS_PATH = "tabular_monitor.tcss"
    TITLE = "repoos tui"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit_run", "quit", tooltip="quit (a live run finishes first: it takes seconds and cannot stop halfway)"),
        Binding("question_mark", "help", "help", tooltip="this help"),
    ]

    def __init__(self, feed: LiveEndpoint | Replay) -> None:
        super().__init__()
        self.feed = feed
        self.board = TabularBoard()
        self.state = "starting"
        self.result: TabularResult | None = None
        self.failure: str | None = None  # why the run stopped with an error, for the command to report on exit
        self.unrecorded: str | None = None  # why a verified contract could not be stored (the CLI's exit code 3)
        self._worker: Worker[object] | None = None

    @property
    def live(self) -> bool:
        return not isinstance(self.feed, Replay)

    def compose(self) -> ComposeResult:
        yield TabularStatus(id="status")
        yield QueryPane(id="query")
        yield RaceTable(id="race")
        yield Outcome(id="outcome")
        yield RichLog(id="log", max_lines=LOG_LINES, wrap=False, markup=False)
        yield Footer()

    def on_mount(self) -> None:
        if isinstance(self.feed, Replay):
            self.state = f"replay x{self.feed.speed:g}"
            self._worker = self.run_worker(self._replay(self.feed), name="replay")
        else:
            self.feed.events.subscribe(lambda event: self.post_message(TabularEvent(event)))
            self.state = "running"
            self._worker = self.run_worker(self._optimize, name="tabular", thread=True)
        self.set_interval(0.5, self._show_status)
        self._show()

    def _optimize(self) -> None:
        """The worker thread: the run, then the store, as `repoos optimize --db` does them."""
        assert not isinstance(self.feed, Replay)
        try:
            self.result = self.feed.optimize()
        except RepoosError as error:
            self.call_from_thread(self._ended, "failed", str(error))
            return
        try:
            self.feed.store(self.result)
        except RepoosError as error:
            self.call_from_thread(self._unstored, str(error))
        self.call_from_thread(self._ended, "finished", None)

    def _ended(self, state: str, failure: str | None) -> None:
        self.state, self.failure = state, failure  # the failure's notification comes with its run_finished event
        self._show_status()

    def _unstored(self, reason: str) -> None:
        self.unrecorded = reason
        self._note(f"not recorded in the graph store: {reason}", severity="warning")

    async def _replay(self, replay: Replay) -> None:
        running = asyncio.Event()
        running.set()  # nothing pauses a tabular replay: it lasts as long as its race did
        async for event in paced(replay, running):
            self._apply(event)
        self.state = "replayed" if self.board.finished else "replayed (the log ends before the run did)"
        self._show_status()

    def on_tabular_event(self, message: TabularEvent) -> None:
        self._apply(message.event)

    def _apply(self, event: Event) -> None:
        """The one place an event reaches the screen, live or replayed."""
        self.query_one("#log", RichLog).write(self.board.apply(event))
        if event.kind == "run_finished" and self.board.failure:
            self.notify(self.board.failure, title="the run failed", severity="error", timeout=8)
        self._show()

    def _show(self) -> None:
        self.query_one(QueryPane).show(self.board)
        self.query_one(RaceTable).show(self.board)
        self.query_one(Outcome).show(self.board)
        self._show_status()

    def _show_status(self) -> None:
        self.query_one(TabularStatus).show(self.board, self.state, live=self.live and self.state == "running")

    def _note(self, text: str, severity: str = "information") -> None:
        """A notification that also stays in the event log."""
        self.query_one("#log", RichLog).write(self.board.note(text))
        self.notify(text, severity=severity, timeout=8)  # type: ignore[arg-type]

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.BINDINGS, leading=()))

    async def action_quit_run(self) -> None:
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
        """The run cannot stop halfway (a verification is one transaction); the app exits once it has ended."""
        assert self._worker is not None
        with contextlib.suppress(WorkerFailed):
            await self._worker.wait()
        self.exit(self.result)
