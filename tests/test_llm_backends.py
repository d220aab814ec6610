"""The OpenAI and Gemini backends, through the real SDK clients, against scripted HTTP servers on 127.0.0.1."""

from __future__ import annotations

import fcntl
import json
import logging
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from repoos_agent.agent.llm import retry
from repoos_agent.agent.llm.base import LLMError, Message, RetryPolicy
from repoos_agent.agent.llm.gemini_backend import GeminiBackend
from repoos_agent.agent.llm.local_backend import LocalBackend
from repoos_agent.agent.llm.local_model import ModelInfo
from repoos_agent.agent.llm.openai_backend import LOCAL_SERVER_PLACEHOLDER_KEY, OpenAIBackend
from repoos_agent.agent.llm.prices import PriceFileError, PriceTable, cost
from repoos_agent.agent.llm.retry import backoff_delay, retry_after_seconds
from repoos_agent.backends.cc import cores_lock_path
from tests.fake_llm_servers import (
    FakeLLMServer,
    ScriptedReply,
    gemini_answer,
    gemini_error,
    openai_answer,
    openai_error,
)

FAST = RetryPolicy(attempts=3, base_delay_s=0.01, max_delay_s=0.05, timeout_s=5.0)
SECRET = "sk-test-SECRET-0123456789"
CONVERSATION = [
    Message("system", "You write loop schedules."),
    Message("user", "Tile gemm."),
    Message("assistant", "tile(i, 32)"),
    Message("user", "Now parallelize."),
]


@pytest.fixture(autouse=True)
def no_ambient_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's real keys and endpoints must neither leak into nor change these tests."""
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(variable, raising=False)


def openai_backend(server: FakeLLMServer, retry: RetryPolicy = FAST, api_key: str | None = SECRET) -> OpenAIBackend:
    return OpenAIBackend("test-model", base_url=f"{server.url}/v1", api_key=api_key, retry=retry)


def gemini_backend(server: FakeLLMServer, retry: RetryPolicy = FAST) -> GeminiBackend:
    return GeminiBackend("gemini-test", api_key=SECRET, base_url=server.url, retry=retry)


# OpenAI-compatible servers


def timed_run_could_start() -> bool:
    """Whether a timed run could take the cores now: the measurement lock's exclusive side is free."""
    with open(cores_lock_path(), "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def test_no_candidate_is_timed_while_a_model_on_this_machine_answers() -> None:
    """A llama.cpp server on 127.0.0.1 computes on the cores candidates are timed on."""
    with FakeLLMServer([replace(openai_answer("tile(i, 32)"), delay_s=0.5)]) as server:
        backend = LocalBackend("smollm2", f"{server.url}/v1", ModelInfo("smollm2", "", None), retry=FAST)
        assert backend.on_this_machine
        answer: list[str] = []
        request = threading.Thread(target=lambda: answer.append(backend.complete(CONVERSATION).text))
        request.start()
        while not server.requests:
            time.sleep(0.01)
        assert not timed_run_could_start()
        request.join()
    assert answer == ["tile(i, 32)"]
    assert timed_run_could_start()


def test_a_model_served_by_another_host_does_not_hold_the_cores() -> None:
    backend = LocalBackend("smollm2", "http://10.1.2.3:8080/v1", ModelInfo("smollm2", "", None), retry=FAST)
    assert not backend.on_this_machine


def test_openai_answer_with_token_counts() -> None:
    with FakeLLMServer([openai_answer("tile(i, 64)", prompt_tokens=120, completion_tokens=7)]) as server:
        completion = openai_backend(server).complete(CONVERSATION)

    assert (completion.text, completion.input_tokens, completion.output_tokens) == ("tile(i, 64)", 120, 7)
    assert completion.model == "test-model"
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "test-model"
    assert request.body["messages"] == [{"role": m.role, "content": m.content} for m in CONVERSATION]
    assert "max_tokens" not in request.body  # the server's own limit unless asked


def test_openai_max_tokens_caps_every_answer() -> None:
    with FakeLLMServer([openai_answer("tile(i, 64)"), openai_answer("tile(i, 32)")]) as server:
        backend = OpenAIBackend("test-model", base_url=f"{server.url}/v1", api_key=SECRET, retry=FAST, max_tokens=512)
        backend.complete(CONVERSATION)
        backend.complete_with_tools(CONVERSATION, [])

    assert [request.body["max_tokens"] for request in server.requests] == [512, 512]


def test_openai_name_and_repr_say_which_model_without_the_key() -> None:
    backend = OpenAIBackend("gpt-4o-mini", api_key=SECRET)
    assert backend.name == "openai:gpt-4o-mini"
    assert "gpt-4o-mini" in repr(backend)
    assert SECRET not in repr(backend)


@pytest.mark.parametrize(
    "malformed",
    [
        {"choices": []},
        {},
        {"choices": [{"index": 0, "message": {"role": "assistant", "content": None}}]},
        {"choices": [{"index": 0}]},
        {"choices": "not a list", "usage": {"prompt_tokens": "many"}},
    ],
    ids=["empty-choices", "empty-object", "null-content", "no-message", "junk"],
)
def test_openai_malformed_answer_is_an_empty_completion(malformed: dict) -> None:
    with FakeLLMServer([ScriptedReply(body=malformed)]) as server:
        completion = openai_backend(server).complete(CONVERSATION)

    assert (completion.text, completion.input_tokens, completion.output_tokens) == ("", 0, 0)


def test_openai_rate_limit_is_retried() -> None:
    replies = [openai_error(429, "slow down"), openai_answer("ok", prompt_tokens=3, completion_tokens=1)]
    with FakeLLMServer(replies) as server:
        completion = openai_backend(server).complete(CONVERSATION)

    assert completion.text == "ok"
    assert len(server.requests) == 2


def test_openai_retry_after_is_honoured_but_capped() -> None:
    replies = [openai_error(429, "slow down", headers={"Retry-After": "30"}), openai_answer("ok")]
    started = time.monotonic()
    with FakeLLMServer(replies) as server:
        assert openai_backend(server).complete(CONVERSATION).text == "ok"

    assert time.monotonic() - started < 2  # waited max_delay_s, not the 30 s the server asked for


def test_openai_server_errors_give_up_after_the_last_attempt() -> None:
    expected = r"^openai:test-model: HTTP 503: overloaded \(gave up after 3 attempts\)$"
    with FakeLLMServer([openai_error(503, "overloaded")] * 3) as server, pytest.raises(LLMError, match=expected):
        openai_backend(server).complete(CONVERSATION)

    assert len(server.requests) == 3


def test_openai_time_out_becomes_llm_error_quickly() -> None:
    retry = RetryPolicy(attempts=2, base_delay_s=0.01, max_delay_s=0.05, timeout_s=0.2)
    stalls = [ScriptedReply(body={}, delay_s=10)] * 2
    started = time.monotonic()
    with FakeLLMServer(stalls) as server, pytest.raises(LLMError, match=r"timed out after 0.2s \(gave up after 2 attempts\)"):
        openai_backend(server, retry).complete(CONVERSATION)

    assert time.monotonic() - started < 3
    assert len(server.requests) == 2


def test_openai_bad_request_fails_at_once() -> None:
    replies = [openai_error(400, "unknown model"), openai_answer("never sent")]
    with FakeLLMServer(replies) as server, pytest.raises(LLMError, match=r"^openai:test-model: HTTP 400: unknown model$"):
        openai_backend(server).complete(CONVERSATION)

    assert len(server.requests) == 1


def test_openai_key_goes_in_the_bearer_header_and_nowhere_else(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    replies = [openai_error(401, f"Incorrect API key provided: {SECRET}")]
    with FakeLLMServer(replies) as server:
        backend = openai_backend(server)
        with pytest.raises(LLMError) as raised:
            backend.complete(CONVERSATION)

    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    message = str(raised.value)
    assert message == "openai:test-model: HTTP 401: Incorrect API key provided: [redacted]"
    assert SECRET not in repr(backend)
    assert SECRET not in caplog.text


def test_openai_local_server_without_key_gets_a_placeholder() -> None:
    with FakeLLMServer([openai_answer("ok")]) as server:
        openai_backend(server, api_key=None).complete(CONVERSATION)

    assert server.requests[0].headers["authorization"] == f"Bearer {LOCAL_SERVER_PLACEHOLDER_KEY}"


def test_openai_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with FakeLLMServer([openai_answer("ok")]) as server:
        openai_backend(server, api_key=None).complete(CONVERSATION)

    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"


def test_openai_cloud_without_key_says_what_to_set() -> None:
    with pytest.raises(LLMError, match="set OPENAI_API_KEY"):
        OpenAIBackend("gpt-4o-mini")


def test_openai_unreachable_server_fails_at_once() -> None:
    with FakeLLMServer([]) as server:
        pass  # stopped: nothing listens on its port any more
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"^openai:test-model: connection to http://127\.0\.0\.1:\d+/v1/ failed$"):
        openai_backend(server).complete(CONVERSATION)
    assert time.monotonic() - started < 2


# Gemini


def test_gemini_answer_with_token_counts() -> None:
    with FakeLLMServer([gemini_answer("tile(i, 64)", prompt_tokens=120, candidates_tokens=7)]) as server:
        completion = gemini_backend(server).complete(CONVERSATION)

    assert (completion.text, completion.input_tokens, completion.output_tokens) == ("tile(i, 64)", 120, 7)
    assert completion.model == "gemini-test"
    [request] = server.requests
    assert request.path == "/v1/models/gemini-test:generateContent"


def test_gemini_thinking_tokens_count_as_output() -> None:
    with FakeLLMServer([gemini_answer("ok", prompt_tokens=10, candidates_tokens=2, thoughts_tokens=30)]) as server:
        completion = gemini_backend(server).complete(CONVERSATION)

    assert (completion.input_tokens, completion.output_tokens) == (10, 32)


def test_gemini_system_instruction_and_roles_reach_the_server() -> None:
    with FakeLLMServer([gemini_answer("ok")]) as server:
        gemini_backend(server).complete(CONVERSATION)

    body = server.requests[0].body
    assert body["systemInstruction"]["parts"] == [{"text": "You write loop schedules."}]
    assert [(turn["role"], turn["parts"][0]["text"]) for turn in body["contents"]] == [
        ("user", "Tile gemm."),
        ("model", "tile(i, 32)"),
        ("user", "Now parallelize."),
    ]


def test_gemini_name_and_repr_say_which_model_without_the_key() -> None:
    backend = GeminiBackend("gemini-2.5-flash", api_key=SECRET)
    assert backend.name == "gemini:gemini-2.5-flash"
    assert "gemini-2.5-flash" in repr(backend)
    assert SECRET not in repr(backend)


@pytest.mark.parametrize(
    "malformed",
    [{}, {"candidates": []}, {"candidates": [{"content": {"role": "model", "parts": []}}]}],
    ids=["empty-object", "no-candidates", "no-parts"],
)
def test_gemini_malformed_answer_is_an_empty_completion(malformed: dict) -> None:
    with FakeLLMServer([ScriptedReply(body=malformed)]) as server:
        completion = gemini_backend(server).complete(CONVERSATION)

    assert (completion.text, completion.input_tokens, completion.output_tokens) == ("", 0, 0)


def test_gemini_answer_of_the_wrong_shape_fails_with_the_place() -> None:
    wrong_types = {"usageMetadata": {"promptTokenCount": "many"}}
    with FakeLLMServer([ScriptedReply(body=wrong_types)]) as server, pytest.raises(LLMError) as raised:
        gemini_backend(server).complete(CONVERSATION)

    assert str(raised.value).startswith("gemini:gemini-test: malformed answer: usage_metadata.promptTokenCount: Input should be")
    assert len(server.requests) == 1


def test_gemini_unreachable_server_fails_at_once() -> None:
    with FakeLLMServer([]) as server:
        pass  # stopped: nothing listens on its port any more
    with pytest.raises(LLMError, match=r"^gemini:gemini-test: connection to http://127\.0\.0\.1:\d+ failed$"):
        gemini_backend(server).complete(CONVERSATION)


def test_gemini_rate_limit_is_retried() -> None:
    replies = [gemini_error(429, "quota exceeded"), gemini_answer("ok", prompt_tokens=3, candidates_tokens=1)]
    with FakeLLMServer(replies) as server:
        completion = gemini_backend(server).complete(CONVERSATION)

    assert completion.text == "ok"
    assert len(server.requests) == 2


def test_gemini_server_errors_give_up_after_the_last_attempt() -> None:
    expected = r"^gemini:gemini-test: HTTP 500: internal \(gave up after 3 attempts\)$"
    with FakeLLMServer([gemini_error(500, "internal")] * 3) as server, pytest.raises(LLMError, match=expected):
        gemini_backend(server).complete(CONVERSATION)

    assert len(server.requests) == 3


def test_gemini_time_out_becomes_llm_error_quickly() -> None:
    retry = RetryPolicy(attempts=2, base_delay_s=0.01, max_delay_s=0.05, timeout_s=0.2)
    stalls = [ScriptedReply(body={}, delay_s=10)] * 2
    started = time.monotonic()
    with FakeLLMServer(stalls) as server, pytest.raises(LLMError, match=r"timed out after 0.2s \(gave up after 2 attempts\)"):
        gemini_backend(server, retry).complete(CONVERSATION)

    assert time.monotonic() - started < 3
    assert len(server.requests) == 2


def test_gemini_bad_request_fails_at_once() -> None:
    replies = [gemini_error(400, "model not found"), gemini_answer("never sent")]
    with FakeLLMServer(replies) as server, pytest.raises(LLMError, match=r"^gemini:gemini-test: HTTP 400: model not found$"):
        gemini_backend(server).complete(CONVERSATION)

    assert len(server.requests) == 1


def test_gemini_key_goes_in_its_header_and_nowhere_else(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with FakeLLMServer([gemini_error(403, f"API key {SECRET} is not valid")]) as server:
        backend = gemini_backend(server)
        with pytest.raises(LLMError) as raised:
            backend.complete(CONVERSATION)

    assert server.requests[0].headers["x-goog-api-key"] == SECRET
    assert str(raised.value) == "gemini:gemini-test: HTTP 403: API key [redacted] is not valid"
    assert SECRET not in repr(backend)
    assert SECRET not in caplog.text


@pytest.mark.parametrize("variable", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
def test_gemini_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    monkeypatch.setenv(variable, SECRET)
    with FakeLLMServer([gemini_answer("ok")]) as server:
        GeminiBackend("gemini-test", base_url=server.url, retry=FAST).complete(CONVERSATION)

    assert server.requests[0].headers["x-goog-api-key"] == SECRET


def test_gemini_without_key_says_which_variables_to_set() -> None:
    with pytest.raises(LLMError, match="set GEMINI_API_KEY or GOOGLE_API_KEY"):
        GeminiBackend("gemini-2.5-flash")


def test_gemini_rejects_an_unknown_role_before_sending() -> None:
    with FakeLLMServer([]) as server, pytest.raises(LLMError, match="unknown message role 'narrator'"):
        gemini_backend(server).complete([Message("narrator", "{}")])

    assert server.requests == []


# Backoff


def test_backoff_doubles_from_the_base_delay_up_to_the_cap() -> None:
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=3.0)
    assert [backoff_delay(policy, k, None) for k in range(4)] == [0.5, 1.0, 2.0, 3.0]


def test_backoff_follows_retry_after_within_the_cap() -> None:
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=3.0)
    assert backoff_delay(policy, 0, 2.0) == 2.0
    assert backoff_delay(policy, 0, 120.0) == 3.0


def test_retry_after_reads_seconds_and_http_dates(monkeypatch) -> None:
    now = datetime(2026, 12, 6, 12, 0, 0, tzinfo=UTC)  # the clock held still: a loaded host's delay changes nothing
    monkeypatch.setattr(retry, "time", SimpleNamespace(time=now.timestamp))
    in_ten_seconds = format_datetime(now + timedelta(seconds=10), usegmt=True)
    assert retry_after_seconds({"retry-after": "7"}) == 7.0
    assert retry_after_seconds({"retry-after": in_ten_seconds}) == 10.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


# Prices


def test_known_model_has_a_cost_and_unknown_model_has_none() -> None:
    assert cost("gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert cost("gpt-4o-mini-2024-07-18", 1000, 1000) is None
    assert cost("llama3.1:8b", 1000, 1000) is None


def test_price_file_overrides_and_extends_the_builtin_table(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o-mini": {"input": 1, "output": 2}, "my-finetune": {"input": 0.5, "output": 0}}))
    table = PriceTable.from_environment({"REPOOS_PRICES": str(prices)})

    assert table.cost("gpt-4o-mini", 1_000_000, 500_000) == pytest.approx(2.0)
    assert table.cost("my-finetune", 2_000_000, 10) == pytest.approx(1.0)
    assert table.cost("gemini-2.5-flash", 1_000_000, 0) == pytest.approx(0.30)


def test_cost_reads_the_price_file_named_by_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"local-model": {"input": 0, "output": 0}}))
    monkeypatch.setenv("REPOOS_PRICES", str(prices))

    assert cost("local-model", 5000, 5000) == 0.0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"m": {"input": 1}}', r"'m': expected \{\"input\": USD, \"output\": USD\}"),
        ('{"m": {"input": -1, "output": 1}}', "'m': prices must be non-negative numbers"),
        ('{"m": ', r"prices.json:1:7: not JSON"),
        ("[1, 2]", "expected an object"),
    ],
)
def test_malformed_price_file_names_the_problem(tmp_path: Path, content: str, message: str) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(content)
    with pytest.raises(PriceFileError, match=message):
        PriceTable.from_environment({"REPOOS_PRICES": str(prices)})
