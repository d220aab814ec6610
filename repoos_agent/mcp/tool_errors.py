"""Tool errors an assistant can act on: one line that names the field to fix, in the server's own terms.

Two kinds reach a client. Arguments the input schema rejects: the SDK would pass on
pydantic's report (a block per field, `[type=…, input_value=…]`, a link to
errors.pydantic.dev), so `ServedTool` rewrites it as `size: must be one of MINI, …
(got 'HUGE')`. And the engine's `RepoosError`s, whose text names the CLI's options where
inputs are concerned (`--arg`); an `InputError` is told the MCP fields (`args`, `size`) instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from repoos_agent.errors import RepoosError
from repoos_agent.inputs import MCP_FIELDS, InputError

SHOWN_INPUT = 60
"""Characters of a rejected value quoted back: enough to recognise it, not to echo a whole payload."""


class ServedTool(Tool):
    """A tool whose rejected arguments come back as one line naming each field, not as pydantic's report."""

    async def run(self, arguments: dict[str, Any], context: Context, convert_result: bool = False) -> Any:
        """The SDK's run; a `ToolError` caused by argument validation (how the SDK reports it, and how its server
        recognises it to log the rejected fields) is raised again with `describe_invalid_arguments`'s text."""
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as error:
            cause = error.__cause__
            if isinstance(error, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(f"Error executing tool {self.name}: {describe_invalid_arguments(cause)}") from cause


def describe_invalid_arguments(error: ValidationError) -> str:
    """Each rejected field and what it must be, on one line: `iters: input should be a valid integer (got 'x')`."""
    return "; ".join(_describe(detail) for detail in error.errors(include_url=False))


def _describe(detail: ErrorDetails) -> str:
    field = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in detail["loc"]).lstrip(".")
    if detail["type"] == "missing":
        return f"{field}: required"
    if detail["type"] == "literal_error":
        # pydantic's `expected` reads "'MINI', 'SMALL' or 'LARGE'": the values themselves are what to type.
        expected = str(detail.get("ctx", {}).get("expected", "")).replace(" or ", ", ").replace("'", "")
        reason = f"must be one of {expected}"
    else:
        reason = detail["msg"][:1].lower() + detail["msg"][1:]
    shown = repr(detail["input"])
    if len(shown) > SHOWN_INPUT:
        shown = shown[: SHOWN_INPUT - 1] + "…"
    return f"{field}: {reason} (got {shown})"


@contextmanager
def engine_errors_as_tool_errors() -> Iterator[None]:
    """A user's mistake inside the block (a `RepoosError`) reaches the client as a tool error with the engine's message,
    its inputs named as the tools name them."""
    try:
        yield
    except InputError as error:
        raise ToolError(error.for_fields(MCP_FIELDS)) from None
    except RepoosError as error:
        raise ToolError(str(error)) from None
