"""The leaderboard: every evaluated proposal, ranked by speedup, redrawn as evaluations arrive."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from repoos_agent.verify.translation import DEFERRED
from tui.board import Row
from tui.schedule_cells import clipped, schedule_cells

COLUMNS = (("#", 3), ("agent", 12), ("schedule", 0), ("verdict", 9), ("speedup", 7), ("spread", 6), ("z3", 5))
"""Column labels and widths; the schedule column takes what the others leave."""
VERDICT_STYLES = {"legal": "green", "illegal": "red", "invalid": "red", "verification_failed": "bold red"}


def clipped_middle(text: str, width: int) -> str:
    """Keeps both ends (`gpt-4o-…ini d0`): a model's name differs at its end, the dialogue number is last."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


class Leaderboard(DataTable):
    """A DataTable redrawn in rank order on every evaluation; the cursor keeps to its row (see `show`)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self._rows: list[Row] = []

    def on_mount(self) -> None:
        self._add_columns()

    def on_resize(self) -> None:
        self.show(self._rows)

    def _schedule_width(self) -> int:
        fixed = sum(width for _, width in COLUMNS) + 2 * self.cell_padding * len(COLUMNS) + 2  # + the scrollbar
        return max(12, self.size.width - fixed)

    def _add_columns(self) -> None:
        for label, width in COLUMNS:
            self.add_column(label, width=width or self._schedule_width(), key=label)

    def show(self, rows: list[Row]) -> None:
        """Redraw with `rows` (already ranked), keeping the cursor on the same row."""
        selected = self.selected
        # On the top row the cursor follows the leader; moved elsewhere, it stays on the user's row while ranks shift.
        stay = self.cursor_row > 0
        self._rows = rows
        self.clear(columns=True)
        self._add_columns()
        schedules = schedule_cells([row.schedule for row in rows], self._schedule_width())
        for rank, (row, schedule) in enumerate(zip(rows, schedules, strict=True), start=1):
            event = row.event
            verdict = event.verdict or ""
            self.add_row(
                str(rank),
                clipped_middle(row.proposer, 12),
                schedule,
                Text(clipped(verdict, 9), style=VERDICT_STYLES.get(verdict, "yellow")),
                Text(row.speedup_text, justify="right"),
                row.spread_text,
                {"true": "true", "false": "FALSE", DEFERRED: "–"}.get(event.verified or "", "?"),
                height=None,  # a schedule that reads like others takes the lines that tell it apart
                key=row.key,
            )
        keys = [row.key for row in rows]
        if selected is not None and selected.key in keys and stay:
            self.move_cursor(row=keys.index(selected.key), scroll=False)

    @property
    def selected(self) -> Row | None:
        """The row under the cursor."""
        if not self._rows or not 0 <= self.cursor_row < len(self._rows):
            return None
        return self._rows[self.cursor_row]
