"""Completions from Google's Gemini models through the real `google-genai` client.

Gemini has no system role in the conversation: system messages become the request's
`system_instruction`, and the assistant's turns are called `model`. The SDK's own
retries stay off (it retries only when given `retry_options`), so `call_with_retries`
decides, the same way as for every other backend.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import httpx2
import pydantic
from google import genai
from google.genai import errors, types

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
from repoos_agent.agent.llm.constrained import RESPONSE_SCHEMA, complete_constrained
from repoos_agent.agent.llm.retry import DEFAULT_RETRY_POLICY, TransientFailure, call_with_retries, http_failure

API_KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

_GEMINI_ROLES = {"user": "user", "assistant": "model"}


class GeminiBackend:
    """A Gemini model over the Gemini Developer API; `name` is `gemini:<model>`."""

    def __init__(
        self, model: str, api_key: str | None = None, base_url: str | None = None, retry: RetryPolicy = DEFAULT_RETRY_POLICY
    ) -> None:
        self.model = model
        self.name = f"gemini:{model}"
        self.base_url = base_url
        self._retry = retry
        self._api_key = _resolve_api_key(api_key)
        http_options = types.HttpOptions(base_url=base_url, timeout=round(retry.timeout_s * 1000))  # milliseconds
        # vertexai=False: an ambient GOOGLE_GENAI_USE_VERTEXAI must not send our key to another service.
        self._client = genai.Client(api_key=self._api_key, vertexai=False, http_options=http_options)

    def __repr__(self) -> str:
        return f"GeminiBackend(model={self.model!r}, base_url={self.base_url!r})"

    def complete(self, messages: Sequence[Message], constraint: ReplyConstraint | None = None) -> Completion:
        """One completion for the conversation, retried on 429, 5xx and time-outs; `LLMError` if it cannot be had.
        With a `constraint`, the reply is JSON under `response_schema` unless the server refuses it."""
        system_instruction, contents = _split_conversation(messages, self.name)

        def attempt(form: str | None) -> Completion:
            config = types.GenerateContentConfig(system_instruction=system_instruction)
            if form == RESPONSE_SCHEMA and constraint is not None:
                config = types.GenerateContentConfig(
                    system_instruction=system_instruction,
                    response_mime_type="application/json",
                    response_schema=gemini_schema(constraint.json_schema),
                )
            response = self._request(contents, config)
            input_tokens, output_tokens = _token_counts(response.usage_metadata)
            return Completion(text=response.text or "", input_tokens=input_tokens, output_tokens=output_tokens, model=self.model)

        if constraint is None:
            return call_with_retries(lambda: attempt(None), self._retry, self.name)
        return complete_constrained(self.base_url or "gemini", (RESPONSE_SCHEMA,), attempt, self._retry, self.name)

    def complete_with_tools(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ToolTurn:
        """One turn with Gemini function declarations; the model's function calls come back parsed."""
        system_instruction, contents = _split_conversation(messages, self.name)
        declarations = [
            types.FunctionDeclaration(name=t.name, description=t.description, parameters_json_schema=t.parameters) for t in tools
        ]
        config = types.GenerateContentConfig(
            system_instruction=system_instruction,
            tools=[types.Tool(function_declarations=declarations)],
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        response = call_with_retries(lambda: self._request(contents, config), self._retry, self.name)
        input_tokens, output_tokens = _token_counts(response.usage_metadata)
        calls = tuple(
            ToolCall(call.id or f"{call.name}-{index}", call.name or "", dict(call.args or {}))
            for index, call in enumerate(response.function_calls or [])
        )
        text = "".join(part.text or "" for part in _parts(response))
        return ToolTurn(text=text, calls=calls, input_tokens=input_tokens, output_tokens=output_tokens)

    def _request(self, contents: list[types.Content], config: types.GenerateContentConfig) -> types.GenerateContentResponse:
        try:
            return self._client.models.generate_content(model=self.model, contents=contents, config=config)
        except errors.APIError as error:
            raise http_failure(error.code, error.message, self._api_key, _headers_of(error)) from None
        except httpx2.TimeoutException:
            raise TransientFailure(f"timed out after {self._retry.timeout_s:g}s") from None
        except httpx2.TransportError:
            raise LLMError(f"connection to {self.base_url or 'the Gemini API'} failed") from None
        except pydantic.ValidationError as error:
            # Unlike the openai client, this SDK validates answers: a body of the wrong shape is not a reply to show the agent.
            raise LLMError(f"malformed answer: {_first_problem(error)}") from None


def gemini_schema(schema: object) -> object:
    """A JSON schema in the OpenAPI subset `response_schema` takes: no `additionalProperties`, and enums of
    strings only (an integer enum becomes the strings of its numbers, which the schedule parser reads the same)."""
    if isinstance(schema, list):
        return [gemini_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {key: gemini_schema(value) for key, value in schema.items() if key != "additionalProperties"}
    if converted.get("type") == "integer" and "enum" in converted:
        converted = {**converted, "type": "string", "enum": [str(value) for value in converted["enum"]]}
    return converted


def _resolve_api_key(api_key: str | None) -> str:
    key = api_key or next((os.environ[name] for name in API_KEY_VARIABLES if os.environ.get(name)), None)
    if not key:
        raise LLMError(f"gemini: no API key; set {' or '.join(API_KEY_VARIABLES)}")
    return key


def _split_conversation(messages: Sequence[Message], backend_name: str) -> tuple[str | None, list[types.Content]]:
    """System messages joined into one instruction; the other turns as Gemini contents."""
    system_parts: list[str] = []
    contents: list[types.Content] = []
    for message in messages:
        if message.role == "system":
            system_parts.append(message.content)
        elif message.role == "tool":
            response = types.FunctionResponse(id=message.tool_call_id, name=message.name, response={"result": message.content})
            contents.append(types.Content(role="user", parts=[types.Part(function_response=response)]))
        elif message.role in _GEMINI_ROLES:
            parts = [types.Part(text=message.content)] if message.content else []
            parts += [
                types.Part(function_call=types.FunctionCall(id=c.id, name=c.name, args=c.arguments)) for c in message.tool_calls
            ]
            contents.append(types.Content(role=_GEMINI_ROLES[message.role], parts=parts))
        else:
            raise LLMError(f"{backend_name}: unknown message role {message.role!r}; expected system, user, assistant or tool")
    return ("\n\n".join(system_parts) or None), contents


def _parts(response: types.GenerateContentResponse) -> list[types.Part]:
    candidates = response.candidates or []
    content = candidates[0].content if candidates else None
    return list(content.parts or []) if content is not None else []


def _token_counts(usage: types.GenerateContentResponseUsageMetadata | None) -> tuple[int, int]:
    """(input, output) tokens. Thinking models bill their thoughts as output but count them apart from the answer."""
    if usage is None:
        return 0, 0
    return usage.prompt_token_count or 0, (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)


def _first_problem(error: pydantic.ValidationError) -> str:
    problem = error.errors()[0]
    return f"{'.'.join(str(part) for part in problem['loc'])}: {problem['msg']}"


def _headers_of(error: errors.APIError) -> httpx2.Headers:
    response = error.response
    return response.headers if isinstance(response, httpx2.Response) else httpx2.Headers()
