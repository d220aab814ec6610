"""Constrained decoding, whichever form a server takes, learned once per server.

Servers that call themselves OpenAI-compatible differ here: OpenAI takes `response_format` with a
`json_schema`; llama.cpp's server answers that with HTTP 500 but takes `json_object` with a schema,
and its own GBNF `grammar`; others ignore what they do not know. A backend lists the forms it can
send, best first. The first request to a server tries them in turn without retries: a refusal (an
HTTP error) or a reply that ignores the form marks that form refused for the server, for the rest of
the process, and the next form is tried. A server that takes none is used unconstrained: a refused
grammar is never a failed search.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from repoos_agent.agent.llm.base import Completion, LLMError, RetryPolicy
from repoos_agent.agent.llm.retry import TransientFailure, call_with_retries

GRAMMAR = "grammar"  # llama.cpp's GBNF, `extra_body={"grammar": ...}`
JSON_SCHEMA = "json_schema"  # OpenAI structured outputs, strict
JSON_OBJECT = "json_object"  # JSON mode with a schema, as llama-cpp-python takes it
RESPONSE_SCHEMA = "response_schema"  # Gemini's


@dataclass
class ServerForms:
    """What one server was seen to accept and refuse; `refused` maps a form to why."""

    confirmed: set[str] = field(default_factory=set)
    refused: dict[str, str] = field(default_factory=dict)


_SERVERS: dict[str, ServerForms] = {}
_LOCK = threading.Lock()


def server_forms(server: str) -> ServerForms:
    with _LOCK:
        return _SERVERS.setdefault(server, ServerForms())


def honoured(form: str, text: str) -> bool:
    """Whether a reply looks decoded under `form`: JSON forms give a JSON object, the grammar schedule blocks."""
    if form == GRAMMAR:
        return text.lstrip().startswith("<schedule>")
    try:
        return isinstance(json.loads(text), dict)
    except json.JSONDecodeError:
        return False


def complete_constrained(
    server: str,
    forms: Sequence[str],
    request: Callable[[str | None], Completion],
    retry: RetryPolicy,
    backend_name: str,
) -> Completion:
    """A completion under the first of `forms` the server takes; `request(form)` makes one attempt (None: no
    constraint) and raises `TransientFailure` or `LLMError` the way backends' requests do."""
    record = server_forms(server)
    for form in forms:
        if form in record.refused:
            continue
        if form in record.confirmed:
            return replace(call_with_retries(lambda form=form: request(form), retry, backend_name), constraint=form)
        try:
            completion = request(form)
        except (TransientFailure, LLMError) as error:
            if error.status is None:  # no answer at all (a time-out, a lost connection): not a verdict on the form
                raise LLMError(f"{backend_name}: {error}") from None
            if error.status == 429:  # a rate limit says nothing about the form either: wait, as any request would
                completion = call_with_retries(lambda form=form: request(form), retry, backend_name)
                record.confirmed.add(form)
                return replace(completion, constraint=form)
            record.refused[form] = f"HTTP {error.status}"
            continue
        if not honoured(form, completion.text):
            record.refused[form] = "ignored"
            return completion  # a reply all the same: parsed as free text, and the next turn tries the next form
        record.confirmed.add(form)
        return replace(completion, constraint=form)
    return call_with_retries(lambda: request(None), retry, backend_name)
