"""Chat completions from any OpenAI-compatible server: OpenAI itself, Ollama, vLLM, LM Studio, llama.cpp.

The real `openai` client does the HTTP; its own retries are off (`max_retries=0`) so
that `call_with_retries` decides, the same way for every backend. Servers that are
"compatible" differ in small ways, so the answer is read defensively: a reply with no
choices or no text becomes an empty completion, which the agent rejects as invalid.
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Sequence
from urllib.parse import urlsplit

import openai
from openai.types.chat import ChatCompletion

from repoos_agent.agent.llm.base import (
    Completion,
    LLMError,
    Message,
    ReplyConstraint,
    RetryPolicy,
    ToolCall,
    ToolSpec,
    ToolTurn,
)
from repoos_agent.agent.llm.constrained import GRAMMAR, JSON_OBJECT, JSON_SCHEMA, complete_constrained
from repoos_agent.agent.llm.retry import DEFAULT_RETRY_POLICY, TransientFailure, call_with_retries, http_failure

# Local servers ignore the key, but the SDK refuses to start without one.
LOCAL_SERVER_PLACEHOLDER_KEY = "not-needed"


class OpenAIBackend:
    """A chat model behind an OpenAI-compatible `/chat/completions` endpoint; `name` is `openai:<model>`."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        retry: RetryPolicy = DEFAULT_RETRY_POLICY,
        constraint_forms: tuple[str, ...] = (JSON_SCHEMA, JSON_OBJECT),
        max_tokens: int | None = None,
    ) -> None:
        """`constraint_forms`: how a constrained reply is asked for, best first (`agent.llm.constrained`); a server
        known to be llama.cpp takes its grammar first. `max_tokens` caps each answer's length (None: the server's
        own limit; a local server's is its whole context)."""
        self.model = model
        self.max_tokens = max_tokens
        self.name = f"openai:{model}"
        self.base_url = base_url
        self.constraint_forms = constraint_forms
        self._retry = retry
        self._api_key = _resolve_api_key(api_key, base_url)
        self._client = openai.OpenAI(base_url=base_url, api_key=self._api_key, max_retries=0, timeout=retry.timeout_s)

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.model!r}, base_url={self.base_url!r})"

    def complete(self, messages: Sequence[Message], constraint: ReplyConstraint | None = None) -> Completion:
        """One completion for the conversation, retried on 429, 5xx and time-outs; `LLMError` if it cannot be had.
        With a `constraint`, the reply is decoded under the first of `constraint_forms` the server takes."""
        wire_messages = [{"role": message.role, "content": message.content} for message in messages]

        def attempt(form: str | None) -> Completion:
            response = self._request(wire_messages, shape=_shape(form, constraint) if constraint and form else {})
            usage = response.usage
            return Completion(
                text=_first_choice_text(response),
                input_tokens=_token_count(getattr(usage, "prompt_tokens", None)),
                output_tokens=_token_count(getattr(usage, "completion_tokens", None)),
                model=self.model,  # the name asked for, which prices are keyed on; servers may report a dated snapshot
            )

        if constraint is None or not self.constraint_forms:
            return call_with_retries(lambda: attempt(None), self._retry, self.name)
        server = str(self._client.base_url)
        return complete_constrained(server, self.constraint_forms, attempt, self._retry, self.name)

    def complete_with_tools(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ToolTurn:
        """One turn with native function calling (`tools` on the wire); the model's calls come back parsed."""
        wire_messages = [_wire_message(message) for message in messages]
        wire_tools = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    **({"strict": True} if t.strict else {}),
                },
            }
            for t in tools
        ]
        response = call_with_retries(lambda: self._request(wire_messages, wire_tools), self._retry, self.name)
        usage = response.usage
        message = response.choices[0].message if response.choices else None
        calls = []
        for call in (getattr(message, "tool_calls", None) or []) if message else []:
            try:
                arguments = json.loads(call.function.arguments or "{}")
            except json.JSONDecodeError:
                arguments = {"__unparsable__": call.function.arguments}
            calls.append(ToolCall(call.id, call.function.name, arguments if isinstance(arguments, dict) else {}))
        return ToolTurn(
            text=(getattr(message, "content", None) or "") if message else "",
            calls=tuple(calls),
            input_tokens=_token_count(getattr(usage, "prompt_tokens", None)),
            output_tokens=_token_count(getattr(usage, "completion_tokens", None)),
        )

    def _request(self, wire_messages: list[dict], tools: list[dict] | None = None, shape: dict | None = None) -> ChatCompletion:
        limit = {"max_tokens": self.max_tokens} if self.max_tokens else {}
        try:
            if tools:
                return self._client.chat.completions.create(model=self.model, messages=wire_messages, tools=tools, **limit)
            return self._client.chat.completions.create(model=self.model, messages=wire_messages, **(shape or {}), **limit)
        except openai.APITimeoutError:
            raise TransientFailure(f"timed out after {self._retry.timeout_s:g}s") from None
        except openai.APIStatusError as error:
            raise http_failure(error.status_code, _server_message(error), self._api_key, error.response.headers) from None
        except openai.APIConnectionError:
            raise LLMError(f"connection to {self._client.base_url} failed") from None


def _shape(form: str, constraint: ReplyConstraint) -> dict:
    """The request's keyword arguments that ask for `form`."""
    if form == GRAMMAR:
        return {"extra_body": {"grammar": constraint.gbnf}}
    if form == JSON_SCHEMA:
        schema = {"name": "schedules", "strict": True, "schema": constraint.json_schema}
        return {"response_format": {"type": "json_schema", "json_schema": schema}}
    if form == JSON_OBJECT:
        return {"response_format": {"type": "json_object", "schema": constraint.json_schema}}
    raise ValueError(f"unknown constraint form {form!r}")


def _wire_message(message: Message) -> dict:
    """Our message as OpenAI's chat format, tool calls and tool results included."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
            for c in message.tool_calls
        ]
    return wire


def _resolve_api_key(api_key: str | None, base_url: str | None) -> str:
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if key:
        return key
    if base_url is not None and _is_local(base_url):
        return LOCAL_SERVER_PLACEHOLDER_KEY
    raise LLMError(f"openai: no API key for {base_url or 'the OpenAI API'}; set OPENAI_API_KEY")


def _address(base_url: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | str:
    """The server's host: an IP address where it is one, else the name."""
    host = urlsplit(base_url).hostname or ""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return host


def serves_from_this_machine(base_url: str) -> bool:
    """Whether the server's address is this machine's own (`localhost`, a loopback address)."""
    address = _address(base_url)
    if isinstance(address, str):
        return address == "localhost" or address.endswith(".localhost")
    return address.is_loopback


def _is_local(base_url: str) -> bool:
    """Servers on this machine or the private network (Ollama, vLLM, LM Studio...) usually run without keys."""
    if serves_from_this_machine(base_url):
        return True
    address = _address(base_url)
    return not isinstance(address, str) and (address.is_private or address.is_unspecified)


def _first_choice_text(response: ChatCompletion) -> str:
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        return ""
    content = getattr(getattr(choices[0], "message", None), "content", None)
    return content if isinstance(content, str) else ""


def _token_count(value: object) -> int:
    """Compatible servers may omit usage or send junk; a count we cannot trust is 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _server_message(error: openai.APIStatusError) -> str | None:
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    return body if isinstance(body, str) else None
