"""The selected row in full: its schedule, who proposed it and why, the engine's feedback, and (on demand) its code."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.console import Group
from rich.syntax import Syntax
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from repoos_agent.errors import RepoosError
from tui.board import Row

CodeSource = Callable[[str, str], str]
"""(schedule, language "c" or "mlir") -> the generated code; raises RepoosError when there is none."""


def describe(row: Row) -> Text:
    """The facts of one evaluation, as text: what the detail pane and the detail screen both start with."""
    event = row.event
    text = Text()
    text.append(row.schedule + "\n", style="bold")
    text.append(f"{event.verdict}", style="green" if event.verdict == "legal" else "red")
    text.append(f"  {row.speedup_text} {row.spread_text}  z3 verified: {event.verified or 'unknown'}\n")
    where = f" (dialogue {event.dialogue}, turn {event.turn})" if event.dialogue is not None else ""
    text.append(f"proposed by {event.agent}{where}")
    text.append(f": {row.reason}\n" if row.reason else "\n")
    times = event.times
    if times:
        text.append(
            f"legality {times.get('legality_ms', 0):.1f} ms, z3 {times.get('verify_ms', 0):.0f} ms, "
            f"build {times.get('build_ms', 0):.0f} ms\n",
            style="dim",
        )
    text.append(event.feedback or "(no feedback)")
    return text


class DetailPane(VerticalScroll):
    """Follows the leaderboard's cursor."""

    def compose(self) -> ComposeResult:
        yield Static("No evaluation yet: rows appear as the search measures schedules.", id="detail-text")

    def show(self, row: Row | None) -> None:
        if row is not None:
            self.query_one("#detail-text", Static).update(describe(row))


class DetailScreen(ModalScreen[None]):
    """One row in full, with its generated C or MLIR; `c` switches the language, `escape` closes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter", "dismiss", "close"),
        Binding("c", "toggle_language", "C/MLIR"),
    ]

    def __init__(self, row: Row, code: CodeSource | None, language: str = "c") -> None:
        super().__init__()
        self.row = row
        self.code = code
        self.language = language
        self.generated: tuple[str, str] | None = None  # (language, code) on screen, once generated

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="detail-screen"):
            yield Static(describe(self.row), id="detail-facts")
            yield Static("", id="detail-code")

    def on_mount(self) -> None:
        self.load_code()

    def action_toggle_language(self) -> None:
        self.language = "mlir" if self.language == "c" else "c"
        self.app.language = self.language  # type: ignore[attr-defined]
        self.load_code()

    def load_code(self) -> None:
        label = "MLIR" if self.language == "mlir" else "C"
        self.generated = None
        self.query_one("#detail-code", Static).update(Text(f"\ngenerating {label}…", style="dim"))
        self.generate(self.language)

    @work(thread=True, exclusive=True, group="code")
    def generate(self, language: str) -> None:
        """Code generation runs isl (up to a second on big kernels): off the UI thread."""
        label = "MLIR" if language == "mlir" else "C"
        source = ""
        if self.code is None:
            shown: object = Text(f"\nno generated {label} here: this replay's kernel could not be loaded", style="yellow")
        else:
            try:
                source = self.code(self.row.event.schedule or "", language)
                shown = Group(
                    Text(f"\ngenerated {label} (c toggles C/MLIR)", style="bold"),
                    Syntax(source, "c" if language == "c" else "text", word_wrap=True),
                )
            except RepoosError as error:
                shown = Text(f"\nno generated {label}: {error}", style="red")
        self.app.call_from_thread(self._show_code, shown, (language, source) if source else None)

    def _show_code(self, shown: object, generated: tuple[str, str] | None) -> None:
        self.generated = generated
        self.query_one("#detail-code", Static).update(shown)  # type: ignore[arg-type]
