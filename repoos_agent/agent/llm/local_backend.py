"""The `local` backend: a model on this machine, served by llama.cpp and talked to as any OpenAI-compatible server.

Only the wire is borrowed from `OpenAIBackend`; what is local is the name agents show
(`local:smollm2`), the model file the search reports, and who runs the server: this
process (`local_server`), unless `--base-url` names one the user runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from repoos_agent.agent.llm.base import Completion, Message, ReplyConstraint, RetryPolicy, ToolSpec, ToolTurn
from repoos_agent.agent.llm.constrained import GRAMMAR, JSON_OBJECT
from repoos_agent.agent.llm.local_model import DEFAULT_LOCAL_MODEL, ModelInfo, local_model_name, resolve_local_model
from repoos_agent.agent.llm.local_server import acquire_server
from repoos_agent.agent.llm.openai_backend import LOCAL_SERVER_PLACEHOLDER_KEY, OpenAIBackend, serves_from_this_machine
from repoos_agent.backends.cc import engine_work

LOCAL_MAX_TOKENS = 512
"""A turn's schedules and brief reasoning fit in far less; a small model that rambles would otherwise write until its
context is full (minutes on a CPU)."""
LOCAL_RETRY = RetryPolicy(attempts=1, timeout_s=600.0)
"""One attempt with a long wait: the server answers one request at a time (the dialogues of `--k 3` queue), and
it finishes a request whose client gave up before it starts the retry, so retrying a time-out only waits longer."""
LLAMA_CPP_FORMS = (GRAMMAR, JSON_OBJECT)
"""How llama.cpp's server takes a constrained reply: its own GBNF grammar, else JSON mode with a schema (it answers
OpenAI's `json_schema` form with HTTP 500)."""


class LocalBackend(OpenAIBackend):
    """`OpenAIBackend` on a llama.cpp server; `name` is `local:<model>`, `model_info` the model it serves.

    A model served on this machine computes on the cores candidates are timed on: every request to it is
    the engine's own work (`engine_work`), which no timed run overlaps. Without it, `--k 3` timed one
    dialogue's candidates while the server answered another's prompt on both cores."""

    def __init__(self, model: str, base_url: str, model_info: ModelInfo, **options: Any) -> None:
        options = {"retry": LOCAL_RETRY, "max_tokens": LOCAL_MAX_TOKENS, "constraint_forms": LLAMA_CPP_FORMS, **options}
        super().__init__(model, base_url=base_url, **options)
        self.name = f"local:{model}"
        self.model_info = model_info
        self.on_this_machine = serves_from_this_machine(base_url)  # `--base-url` may name another host

    def __repr__(self) -> str:
        return f"LocalBackend(model={self.model!r}, base_url={self.base_url!r})"

    def complete(self, messages: Sequence[Message], constraint: ReplyConstraint | None = None) -> Completion:
        with self._holding_the_cores():
            return super().complete(messages, constraint)

    def complete_with_tools(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ToolTurn:
        with self._holding_the_cores():
            return super().complete_with_tools(messages, tools)

    def _holding_the_cores(self) -> AbstractContextManager[object]:
        return engine_work() if self.on_this_machine else nullcontext()


def local_backend(spec: str = DEFAULT_LOCAL_MODEL, base_url: str | None = None, tools: bool = False) -> LocalBackend:
    """The backend of `local:<spec>`: on the server at `base_url` when given (nothing is started), else on this
    process's llama.cpp server for the model, started if none runs yet; `tools` asks for native tool calling."""
    if base_url is not None:
        name = local_model_name(spec)
        return LocalBackend(name, base_url, ModelInfo(name, file="", size_mb=None))
    model = resolve_local_model(spec)
    server = acquire_server(model, tools=tools)
    # Our own server on 127.0.0.1 takes no key; never hand it the user's OpenAI key.
    return LocalBackend(model.name, server.base_url, model.info, api_key=LOCAL_SERVER_PLACEHOLDER_KEY)
