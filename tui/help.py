"""The `?` screen: what each key does."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = (
    ("↑ ↓", "select a row; the pane below shows its feedback"),
    ("enter", "the row in full, with its generated code"),
    ("c", "generated code in C or MLIR"),
    ("p", "pause or resume (an evaluation under way finishes first)"),
    ("s", "save the best schedule as the function's VerifiedKernel (graph store)"),
    ("q", "cancel the search cleanly and quit"),
    ("?", "this help"),
)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark", "dismiss", "close")]

    def compose(self) -> ComposeResult:
        width = max(len(key) for key, _ in KEYS)
        with Vertical(id="help"):
            yield Static("[b]Keys[/b]")
            yield Static("\n".join(f"[b]{key:<{width}}[/b]  {what}" for key, what in KEYS))
            yield Static("[dim]escape closes[/dim]")
