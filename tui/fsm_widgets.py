"""The fsm monitor's widgets: the run's header and the leaderboard of proposals, verdicts and race figures."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from repoos_agent.fsm.arena import BASELINE, QUALIFIED
from tui.fsm_board import FsmBoard
from tui.track_widgets import FiguresTable, TrackStatus

VERDICT_STYLES = {"baseline": "bold", "qualified": "green", "wrong": "bold red", "malformed": "red", "unproven": "yellow"}


class FsmStatus(TrackStatus):
    """Target and whether the run goes on; proposals, race turns and elapsed time."""

    def summary(self, board: FsmBoard, live: bool) -> Text:  # type: ignore[override]
        if board.failure:
            return Text(f"the run failed: {board.failure}", style="bold red")
        second = Text(f"{board.proposed} proposals │ race turn {board.turns} │ {board.elapsed(live):.1f} s")
        if board.crowned is not None:
            second.append(f" │ crowned {board.crowned}", style="bold green")
        return second


class Leaderboard(FiguresTable):
    """Every proposal, the racers fastest first: verdict, median, spread and speedup as the samples arrive; the
    crowned one marked."""

    COLUMNS: ClassVar[tuple[tuple[str, int], ...]] = (
        ("", 1),
        ("variant", 34),
        ("verdict", 12),
        ("median", 11),
        ("spread", 7),
        ("x base", 7),
        ("why", 60),
    )

    def show(self, board: FsmBoard) -> None:
        self.clear()
        for contender in board.leaderboard():
            timing, speedup = contender.timing, board.over_baseline(contender)
            verdict = contender.verdict or "checking…"
            self.add_row(
                Text("*", style="bold green") if contender.label == board.crowned else "",
                contender.label,
                Text(verdict, style=VERDICT_STYLES.get(verdict, "")),
                Text(f"{timing.median_s * 1e3:.4f} ms" if timing else "-", justify="right"),
                f"±{timing.spread:.0%}" if timing else "",
                Text(f"{speedup:.2f}x" if speedup else "", justify="right"),
                "" if contender.verdict in (BASELINE, QUALIFIED) else contender.reason,
                key=contender.label,
            )
