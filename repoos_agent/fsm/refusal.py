"""The fsm track's one refusal: what it cannot model, at the user's line. Apart from `lower.py` so that the modules
the lowering calls on (`nested.py`) refuse as it does."""

from __future__ import annotations

from pathlib import Path

from tree_sitter import Node

from repoos_agent.errors import NotAnalyzableError


class FsmRefusal(NotAnalyzableError):
    """What the fsm track cannot model, at its line: `line N: reason`."""

    def __init__(self, line: int, reason: str, path: Path | None = None) -> None:
        super().__init__(f"{path}:{line}: {reason}" if path else f"line {line}: {reason}", "fsm")
        self.line = line
        self.reason = reason
        self.path = path

    def __reduce__(self) -> tuple[type, tuple[int, str, Path | None]]:
        return FsmRefusal, (self.line, self.reason, self.path)  # a worker's refusal crosses back whole


def refuse(node: Node, reason: str) -> FsmRefusal:
    """A refusal at `node`'s line."""
    return FsmRefusal(node.start_point[0] + 1, reason)
