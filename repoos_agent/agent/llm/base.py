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
    """A backend could not produce a completion (after its retries); the message says why, without keys.
    `status` is the HTTP status of a server's refusal, when there was one."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ToolCall:
    """A model's request to run one of the engine's tools."""

    id: str
    name: str
    arguments: dict


@dataclass(frozen=True)
class ToolSpec:
    """A tool as a model sees it: name, what it is for, and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict
    strict: bool = False  # the server must decode the arguments under `parameters` exactly (OpenAI's strict mode)


@dataclass(frozen=True)
class Message:
    role: str  # "system", "user", "assistant" or "tool"
    content: str
    tool_calls: tuple[ToolCall, ...] = ()  # an assistant turn that called tools
    tool_call_id: str | None = None  # a tool result: the call it answers
    name: str | None = None  # a tool result: the tool's name


@dataclass(frozen=True)
class ReplyConstraint:
    """What a reply must match, in each form a server may take (from `schedule.grammar`): a llama.cpp grammar,
    and a JSON schema for structured outputs. A backend uses the first form its server accepts."""

    gbnf: str
    json_schema: dict


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int
    output_tokens: int
    model: str
    constraint: str = ""  # the form the server decoded under ("grammar", "json_schema", ...), "" for none


@dataclass(frozen=True)
class RetryPolicy:
    """Retries on HTTP 429, 5xx and time-outs, with exponential backoff; other errors fail at once."""

    attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    timeout_s: float = 60.0


@dataclass(frozen=True)
class ToolTurn:
    """A model's answer when it may call tools: text, tool calls (possibly none), tokens."""

    text: str
    calls: tuple[ToolCall, ...]
    input_tokens: int
    output_tokens: int


class ChatBackend(Protocol):
    """A model the agent talks to. `name` is `backend:model`, e.g. `openai:gpt-4o-mini` or `heuristic`."""

    name: str

    def complete(self, messages: Sequence[Message], constraint: ReplyConstraint | None = None) -> Completion: ...

    def complete_with_tools(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ToolTurn: ...
