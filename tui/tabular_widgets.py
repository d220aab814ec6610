"""The tabular monitor's widgets: the run's header, the query and its verification, the race of both paths, the outcome."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.widgets import Static

from tui.tabular_board import PATHS, TabularBoard, milliseconds
from tui.track_widgets import FiguresTable, TrackStatus


class TabularStatus(TrackStatus):
    """Endpoint and whether the run goes on; samples so far, elapsed, the database (its password masked)."""

    def summary(self, board: TabularBoard, live: bool) -> Text:  # type: ignore[override]
        return Text(f"{board.sampled}/{board.repeats} samples │ {board.elapsed(live):.1f} s │ {board.database}")


class QueryPane(Static):
    """The chain read from the source, the SQL it compiles to (placeholders, never values), and the verdict."""

    def show(self, board: TabularBoard) -> None:
        text = Text()
        text.append("chain ", style="bold")
        text.append(board.chain or "…")
        text.append("\nsql   ", style="bold")
        text.append(board.sql or "…")
        text.append("\n")
        if board.mismatch is not None:
            text.append(f"MISMATCH: {board.mismatch}", style="bold red")
        elif board.rows_compared is not None:
            text.append(f"verified: {board.rows_compared} rows equal to the ORM's", style="green")
        else:
            text.append("not verified" if board.failure else "verifying…", style="dim")
        self.update(text)


class RaceTable(FiguresTable):
    """The ORM and the fast path, raced alternately on one session: median, spread and samples as they arrive."""

    COLUMNS: ClassVar[tuple[tuple[str, int], ...]] = (("path", 10), ("median", 10), ("spread", 7), ("samples", 8), ("latest", 10))

    def show(self, board: TabularBoard) -> None:
        self.clear()
        for key, label in PATHS:
            timing, samples = board.timing(key), board.samples[key]
            self.add_row(
                label,
                Text(milliseconds(timing.median_s) if timing else "-", justify="right"),
                f"±{timing.spread:.0%}" if timing else "",
                f"{len(samples)}/{board.repeats}",
                Text(milliseconds(samples[-1]) if samples else "-", justify="right"),
                key=key,
            )


class Outcome(Static):
    """The speedup, so far or final, and whether the contract is stored; or why the run failed."""

    def show(self, board: TabularBoard) -> None:
        speedup = board.speedup
        text = Text()
        if board.failure:
            text.append(f"the run failed: {board.failure}", style="bold red")
        elif speedup is not None:
            final = board.finished is not None
            text.append(f"speedup {speedup:.2f}x", style="bold green" if final else "bold")
            text.append(" over the ORM on the same session" + ("" if final else " (so far)"))
        else:
            text.append("speedup -", style="dim")
        if board.stored:
            text.append("\nstored in the graph store: `repoos_agent.tabular.swap.install(app)` serves it")
        self.update(text)
