"""The tabular monitor: a tabular run (`repoos optimize app.py:f --db URL`) drawn from its events, live or replayed.

Its own app beside `SearchMonitor`: a tabular run has no leaderboard of schedules, no code to
show, nothing to pause; it shares the run log, its pacing and the help screen. A live run calls
`optimize_endpoint` in a worker thread and stores the contract when it is verified, as the CLI
does (the lifecycle is `TrackMonitor`'s); each event is folded into a `TabularBoard`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, RichLog

from repoos_agent.errors import RepoosError
from tui.event_log import LOG_LINES
from tui.tabular_board import TabularBoard
from tui.tabular_widgets import Outcome, QueryPane, RaceTable, TabularStatus
from tui.track_monitor import TrackMonitor

if TYPE_CHECKING:
    from repoos_agent.tabular.result import TabularResult
    from tui.replay import Replay
    from tui.tabular_run import LiveEndpoint


class TabularMonitor(TrackMonitor["TabularResult", "LiveEndpoint"]):
    """Watch an endpoint's query compile, verify and race against the ORM; the contract is stored as the CLI stores it."""

    CSS_PATH = "tabular_monitor.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit_run", "quit", tooltip="quit (a live run finishes first: it takes seconds and cannot stop halfway)"),
        Binding("question_mark", "help", "help", tooltip="this help"),
    ]
    board: TabularBoard

    def __init__(self, feed: LiveEndpoint | Replay) -> None:
        super().__init__(feed, TabularBoard())
        self.unrecorded: str | None = None  # why a verified contract could not be stored (the CLI's exit code 3)

    def compose(self) -> ComposeResult:
        yield TabularStatus(id="status")
        yield QueryPane(id="query")
        yield RaceTable(id="race")
        yield Outcome(id="outcome")
        yield RichLog(id="log", max_lines=LOG_LINES, wrap=False, markup=False)
        yield Footer()

    def _run(self, feed: LiveEndpoint) -> TabularResult:
        """The run, then the store; a store that fails is a warning: the verified run is kept."""
        result = feed.optimize()
        try:
            feed.store(result)
        except RepoosError as error:
            self.call_from_thread(self._unstored, str(error))
        return result

    def _unstored(self, reason: str) -> None:
        self.unrecorded = reason
        self._note(f"not recorded in the graph store: {reason}", severity="warning")

    def _show_board(self) -> None:
        self.query_one(QueryPane).show(self.board)
        self.query_one(RaceTable).show(self.board)
        self.query_one(Outcome).show(self.board)

    def _note(self, text: str, severity: str = "information") -> None:
        """A notification that also stays in the event log."""
        self.query_one("#log", RichLog).write(self.board.note(text))
        self.notify(text, severity=severity, timeout=8)  # type: ignore[arg-type]
