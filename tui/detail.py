"""The selected row in full: its schedule, who proposed it and why, the engine's feedback, and (on demand) its code."""

from __future__ import annotations

import re
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
LOOP_OPENINGS = {"c": re.compile(r"\s*for \("), "mlir": re.compile(r"\s*(scf|affine)\.(for|parallel)\b")}
"""How a loop starts in each generated language: the code view opens at the first one."""


def loop_nest_line(code: str, language: str) -> int | None:
    """The line where the first loop nest starts, with the pragmas above it (`#pragma omp for`); None without a loop.

    Generated C starts with a dozen helper functions, and the kernel function with its bounds
    checks: the loops, which is what a schedule changes, come later. The first loop of the file
    is the kernel's own or, for a parallel schedule, that of the outlined region it runs in
    parallel (`rp_region_0`, defined before the kernel function)."""
    lines = code.splitlines()
    first = next((number for number, line in enumerate(lines) if LOOP_OPENINGS[language].match(line)), None)
    while first and lines[first - 1].lstrip().startswith("#pragma"):
        first -= 1
    return first


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
            yield Static("", id="detail-loops")  # the code from its loop nest on: the view scrolls to it

    def on_mount(self) -> None:
        self.load_code()

    def action_toggle_language(self) -> None:
        self.language = "mlir" if self.language == "c" else "c"
        self.app.language = self.language  # type: ignore[attr-defined]
        self.load_code()

    def load_code(self) -> None:
        label = "MLIR" if self.language == "mlir" else "C"
        self.generated = None
        self.query_one("#detail-screen").border_title = None
        self.query_one("#detail-code", Static).update(Text(f"\ngenerating {label}…", style="dim"))
        self.query_one("#detail-loops", Static).update("")
        self.generate(self.language)

    @work(thread=True, exclusive=True, group="code")
    def generate(self, language: str) -> None:
        """Code generation runs isl (up to a second on big kernels): off the UI thread."""
        label = "MLIR" if language == "mlir" else "C"
        source = ""
        loops: Syntax | None = None
        if self.code is None:
            shown: object = Text(f"\nno generated {label} here: this replay's kernel could not be loaded", style="yellow")
        else:
            try:
                source = self.code(self.row.event.schedule or "", language)
            except RepoosError as error:
                shown = Text(f"\nno generated {label}: {error}", style="red")
            else:
                lexer = "c" if language == "c" else "text"
                lines = source.splitlines(keepends=True)
                split = loop_nest_line(source, language)
                split = len(lines) if split is None else split
                shown = Group(
                    Text(f"\ngenerated {label} (c toggles C/MLIR)", style="bold"),
                    Syntax("".join(lines[:split]).rstrip("\n"), lexer, word_wrap=True),
                )
                if split < len(lines):
                    loops = Syntax("".join(lines[split:]), lexer, word_wrap=True)
        self.app.call_from_thread(self._show_code, shown, loops, (language, source) if source else None)

    def _show_code(self, shown: object, loops: Syntax | None, generated: tuple[str, str] | None) -> None:
        self.generated = generated
        self.query_one("#detail-code", Static).update(shown)  # type: ignore[arg-type]
        self.query_one("#detail-loops", Static).update(loops or "")
        if loops is not None:
            self.query_one("#detail-screen").border_title = "opened at the loops (↑ for the rest)"
            self.call_after_refresh(self._scroll_to_loops)

    def _scroll_to_loops(self) -> None:
        self.query_one("#detail-screen").scroll_to_widget(self.query_one("#detail-loops"), animate=False, top=True)
