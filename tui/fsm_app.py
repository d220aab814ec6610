"""The fsm monitor: an arena run (`repoos optimize FILE.py:f` of a branchy function) drawn from its events, live or
replayed.

Its own app beside `SearchMonitor`: an arena run has one round of proposals, their verdicts, and a race. A live run
calls `race_target` in a worker thread and stores the winner, as the CLI does (the lifecycle is `TrackMonitor`'s);
each event is folded into an `FsmBoard`, which the leaderboard shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, RichLog

from tui.event_log import LOG_LINES
from tui.fsm_board import FsmBoard
from tui.fsm_widgets import FsmStatus, Leaderboard
from tui.track_monitor import TrackMonitor

if TYPE_CHECKING:
    from repoos_agent.fsm.arena import ArenaResult
    from tui.fsm_run import LiveBranchy
    from tui.replay import Replay


class FsmMonitor(TrackMonitor["ArenaResult", "LiveBranchy"]):
    """Watch a branchy function's variants proposed, checked and raced; the winner is stored as the CLI stores it."""

    CSS_PATH = "fsm_monitor.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit_run", "quit", tooltip="quit (a live run finishes first: a race cannot stop halfway)"),
        Binding("question_mark", "help", "help", tooltip="this help"),
    ]
    board: FsmBoard

    def __init__(self, feed: LiveBranchy | Replay) -> None:
        super().__init__(feed, FsmBoard())

    def compose(self) -> ComposeResult:
        yield FsmStatus(id="status")
        yield Leaderboard(id="board")
        yield RichLog(id="log", max_lines=LOG_LINES, wrap=False, markup=False)
        yield Footer()

    def _run(self, feed: LiveBranchy) -> ArenaResult:
        return feed.race()

    def _ended(self, state: str, failure: str | None) -> None:
        super()._ended(state, failure)
        if failure and not self.board.failure:  # a refusal before the race started has no run_finished event
            self.notify(failure, title="the run failed", severity="error", timeout=8)

    def _show_board(self) -> None:
        self.query_one(Leaderboard).show(self.board)
