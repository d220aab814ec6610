"""One retry loop for every backend, so rate limits and flaky servers are handled the same way everywhere.

Backends turn their SDK's exceptions into two kinds: `TransientFailure` (HTTP 429,
5xx, time-outs) is retried with exponential backoff; an `LLMError` fails at once.
The SDKs' own retries are switched off so that this loop is the only one.
Reasons are built here with the API key redacted, because servers sometimes echo
the key they were sent in their error message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import TypeVar

from repoos_agent.agent.llm.base import LLMError, RetryPolicy

log = logging.getLogger(__name__)

T = TypeVar("T")

_MAX_SERVER_MESSAGE_CHARS = 200

# RetryPolicy is frozen, so one shared default instance is safe as a parameter default.
DEFAULT_RETRY_POLICY = RetryPolicy()


class TransientFailure(Exception):
    """A failed attempt worth repeating; `reason` is safe to show, `retry_after_s` is the server's wish if it sent one."""

    def __init__(self, reason: str, retry_after_s: float | None = None, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after_s = retry_after_s
        self.status = status


def is_retryable_status(status: int) -> bool:
    """Rate limits and server errors may pass if we wait; every other 4xx will fail the same way again."""
    return status == 429 or 500 <= status <= 599


def http_failure(status: int, server_message: str | None, secret: str, headers: Mapping[str, str]) -> TransientFailure | LLMError:
    """The exception for an HTTP error answer: a `TransientFailure` to retry, or an `LLMError` without retry."""
    reason = describe_http_status(status, server_message, secret)
    if is_retryable_status(status):
        return TransientFailure(reason, retry_after_seconds(headers), status)
    return LLMError(reason, status)


def describe_http_status(status: int, server_message: str | None, secret: str) -> str:
    """`HTTP 400: <the server's message on one line, shortened, with the key redacted>`."""
    if not server_message:
        return f"HTTP {status}"
    one_line = " ".join(server_message.split())
    if secret:
        one_line = one_line.replace(secret, "[redacted]")
    if len(one_line) > _MAX_SERVER_MESSAGE_CHARS:
        one_line = one_line[: _MAX_SERVER_MESSAGE_CHARS - 1] + "…"
    return f"HTTP {status}: {one_line}"


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The `Retry-After` header as seconds (it may be a number or an HTTP date); None if absent or unreadable."""
    value = headers.get("retry-after") or headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def backoff_delay(policy: RetryPolicy, retries_so_far: int, retry_after_s: float | None) -> float:
    """The server's Retry-After if it sent one, else base_delay_s * 2**k; never longer than max_delay_s."""
    wanted = retry_after_s if retry_after_s is not None else policy.base_delay_s * 2**retries_so_far
    return min(wanted, policy.max_delay_s)


def call_with_retries(attempt: Callable[[], T], policy: RetryPolicy, backend_name: str) -> T:
    """Run `attempt` up to `policy.attempts` times while it raises `TransientFailure`; then raise `LLMError`.

    An `LLMError` from `attempt` passes through at once. Error messages start with the
    backend's name so a user can tell which model failed.
    """
    attempts = max(1, policy.attempts)
    for retries_so_far in range(attempts):
        try:
            return attempt()
        except TransientFailure as failure:
            last_reason = failure.reason
            if retries_so_far + 1 == attempts:
                break
            delay = backoff_delay(policy, retries_so_far, failure.retry_after_s)
            log.info(
                "%s: %s; retrying in %.2fs (attempt %d of %d)", backend_name, failure.reason, delay, retries_so_far + 2, attempts
            )
            time.sleep(delay)
        except LLMError as error:
            raise LLMError(f"{backend_name}: {error}") from None
    raise LLMError(f"{backend_name}: {last_reason} (gave up after {attempts} attempts)")
