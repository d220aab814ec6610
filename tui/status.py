"""The run at a glance: the header line, best speedup over evaluations, and counts per verdict."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static

from repoos_agent.agent.display import speedup_cell, spread_cell
from repoos_agent.agent.events import Event
from tui.board import Board


class StatusBar(Static):
    """Kernel, size, backend(s), turn t/T, evaluations, elapsed, tokens, whether the run goes on, and whether its
    measurements ran on a busy machine (their figures are then not to be trusted)."""

    def show(self, board: Board, state: str, live: bool) -> None:
        tokens = board.tokens
        first = Text()
        first.append(f"{board.target or '…'} {board.size or ''}", style="bold")
        if board.machine_busy:  # early in the line: a long state or agent list must not push it out of sight
            first.append(" │ ")
            first.append("machine busy", style="bold red")
        first.append(f" │ {board.agents} │ compiler {board.compiler} │ ")
        first.append(state, style="bold yellow" if state != "running" else "bold green")
        second = Text(
            f"turn {board.turn}/{board.iters} │ {board.evaluations} evaluations │ {board.elapsed(live):.0f} s │ "
            f"tokens {tokens.get('input', 0)} in, {tokens.get('output', 0)} out"
        )
        self.update(Text("\n").join([first, second]))


class BestChart(Vertical):
    """Best speedup so far after each evaluation: a search that still learns climbs."""

    def compose(self) -> ComposeResult:
        yield Static("best -", id="best-label")
        yield Sparkline([], id="best-sparkline")

    def show(self, board: Board) -> None:
        label = f"best {board.best_speedup:.2f}x in {board.evaluations} evaluations"
        if board.finished is not None:
            label += "\n" + outcome(board, board.finished)
        self.query_one("#best-label", Static).update(label)
        self.query_one("#best-sparkline", Sparkline).data = list(board.best_series)


def outcome(board: Board, finished: Event) -> str:
    """How the run that `finished` chose its answer; when the baseline won, why (the best evaluation may read 1.28x)."""
    if finished.detail.get("failed"):
        return "the run failed: no winner"
    winner = _figures(board, finished) if finished.schedule else "the baseline"
    if finished.detail.get("cancelled"):
        return f"cancelled: best so far {winner}"
    if finished.schedule:
        return f"race winner: {winner}"
    if not board.races:
        return "race winner: the baseline\nno legal, correct schedule was measured: nothing to race"
    remeasured = ", ".join(_figures(board, race) for race in board.races)
    return f"race winner: the baseline\nre-measured {remeasured}: none beat 1x beyond the spread"


def _figures(board: Board, event: Event) -> str:
    """`#2 0.85x ±3%`: the leaderboard row of the event's schedule (its full text is a row away), and its measurement."""
    rank = board.rank_of(event.schedule)
    return f"{f'#{rank} ' if rank is not None else ''}{speedup_cell(event)} {spread_cell(event)}"


class VerdictCounts(Static):
    def show(self, board: Board) -> None:
        text = Text()
        for verdict, count in sorted(board.verdicts.items()):
            text.append(f"{verdict} {count}  ", style="green" if verdict == "legal" else "red")
        self.update(text or Text("no verdicts yet", style="dim"))
