"""The widgets every track's monitor builds on: the run's two-line header and a table of race figures."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.widgets import DataTable, Static

from tui.track_board import TrackBoard


class TrackStatus(Static):
    """The run's target and whether it goes on, above the track's own summary line."""

    def show(self, board: TrackBoard, state: str, live: bool) -> None:
        """Redraw both lines; `live` keeps the elapsed time running with the clock."""
        first = Text()
        first.append(board.target or "…", style="bold")
        first.append(" │ ")
        first.append(state, style="bold green" if state == "running" else "bold yellow")
        self.update(Text("\n").join([first, self.summary(board, live)]))

    def summary(self, board: TrackBoard, live: bool) -> Text:
        """The second line: what the track's run has done so far."""
        raise NotImplementedError


class FiguresTable(DataTable):
    """A read-only table of the race, its columns (label, width) fixed by the track; rows are redrawn per event."""

    COLUMNS: ClassVar[tuple[tuple[str, int], ...]]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="none", show_cursor=False, **kwargs)  # type: ignore[arg-type]

    def on_mount(self) -> None:
        for label, width in self.COLUMNS:
            self.add_column(label, width=width, key=label or "mark")
