"""The `?` screen: what each key does, read from the app's own bindings so the help and the keys cannot drift apart."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

SELECTING = ("↑ ↓", "select a row; the pane below shows its feedback")
"""The leaderboard's cursor keys: the table's own bindings, not the app's, so listed here."""


class HelpScreen(ModalScreen[None]):
    """Lists `bindings` (each binding's tooltip, else its footer description) after `leading` (the cursor keys)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark", "dismiss", "close")]

    def __init__(self, bindings: Iterable[BindingType], leading: tuple[tuple[str, str], ...] = (SELECTING,)) -> None:
        super().__init__()
        self._app_bindings = tuple(Binding.make_bindings(bindings))
        self._leading = leading

    def compose(self) -> ComposeResult:
        keys = [*self._leading, *((self.app.get_key_display(b), b.tooltip or b.description) for b in self._app_bindings)]
        width = max(len(key) for key, _ in keys)
        with Vertical(id="help"):
            yield Static("[b]Keys[/b]")
            yield Static("\n".join(f"[b]{key:<{width}}[/b]  {what}" for key, what in keys))
            yield Static("[dim]escape closes[/dim]")
