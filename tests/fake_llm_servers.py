"""A real HTTP server on 127.0.0.1 that replays scripted provider answers, for testing backends through the real SDKs.

The server speaks whatever wire format its scripted replies carry; the builders below
write OpenAI chat-completions and Gemini generateContent bodies. Every request is
recorded (path, headers, JSON body) so tests can assert what the SDK really sent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class ScriptedReply:
    """One answer the server gives: a status, a JSON body, extra headers, and how long to stall first."""

    status: int = 200
    body: Mapping[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass(frozen=True)
class ReceivedRequest:
    path: str
    headers: Mapping[str, str]  # lower-case names
    body: Any


# When a client asks more often than the test scripted, it gets a loud, non-retryable answer.
SCRIPT_EXHAUSTED = ScriptedReply(status=418, body={"error": {"message": "fake server: no scripted reply left"}})


class FakeLLMServer:
    """Serves scripted replies in order on an ephemeral port, from a background thread, until the `with` block ends."""

    def __init__(self, replies: Sequence[ScriptedReply]) -> None:
        self.requests: list[ReceivedRequest] = []
        self._replies = list(replies)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self._stopping.set()  # wakes handlers that are stalling on purpose
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

    def _record(self, request: ReceivedRequest) -> ScriptedReply:
        with self._lock:
            self.requests.append(request)
            return self._replies.pop(0) if self._replies else SCRIPT_EXHAUSTED


def _handler_for(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class ScriptedHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            reply = server._record(ReceivedRequest(self.path, headers, json.loads(raw) if raw else None))
            if reply.delay_s and server._stopping.wait(reply.delay_s):
                return
            payload = json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out and left: that is what a stalling reply tests

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep pytest output clean; tests read `server.requests` instead

    return ScriptedHandler


def openai_answer(
    text: str | None, *, prompt_tokens: int = 0, completion_tokens: int = 0, model: str = "test-model"
) -> ScriptedReply:
    """A chat.completions response with one choice, as OpenAI-compatible servers send it."""
    return ScriptedReply(
        body={
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


def openai_error(status: int, message: str, headers: Mapping[str, str] | None = None) -> ScriptedReply:
    return ScriptedReply(
        status=status,
        body={"error": {"message": message, "type": "test_error", "code": None}},
        headers=headers or {},
    )


def gemini_answer(
    text: str, *, prompt_tokens: int = 0, candidates_tokens: int = 0, thoughts_tokens: int | None = None
) -> ScriptedReply:
    """A generateContent response with one candidate whose first part is the text."""
    usage: dict[str, int] = {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": candidates_tokens,
        "totalTokenCount": prompt_tokens + candidates_tokens + (thoughts_tokens or 0),
    }
    if thoughts_tokens is not None:
        usage["thoughtsTokenCount"] = thoughts_tokens
    return ScriptedReply(
        body={
            "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage,
            "modelVersion": "test-model",
        }
    )


def gemini_error(status: int, message: str, headers: Mapping[str, str] | None = None) -> ScriptedReply:
    status_names = {
        400: "INVALID_ARGUMENT",
        403: "PERMISSION_DENIED",
        429: "RESOURCE_EXHAUSTED",
        500: "INTERNAL",
        503: "UNAVAILABLE",
    }
    return ScriptedReply(
        status=status,
        body={"error": {"code": status, "message": message, "status": status_names.get(status, "UNKNOWN")}},
        headers=headers or {},
    )
