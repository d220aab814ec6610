"""What every language-model backend offers the agent: messages in, one completion out.

The agent never runs what a model writes: a completion is text from which it parses
schedules. Backends own the wire details (HTTP, retries, timeouts, token counts);
keys come from the environment and never appear in messages, logs or events.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from repoos_agent.errors import RepoosError


class LLMError(RepoosError):
    """A backend could not produce a completion (after its retries); the message says why, without keys."""


@dataclass(frozen=True)
class Message:
    role: str  # "system", "user" or "assistant"
    content: str


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int
    output_tokens: int
    model: str


@dataclass(frozen=True)
class RetryPolicy:
    """Retries on HTTP 429, 5xx and time-outs, with exponential backoff; other errors fail at once."""

    attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    timeout_s: float = 60.0


class ChatBackend(Protocol):
    """A model the agent talks to. `name` is `backend:model`, e.g. `openai:gpt-4o-mini` or `heuristic`."""

    name: str

    def complete(self, messages: Sequence[Message]) -> Completion: ...
