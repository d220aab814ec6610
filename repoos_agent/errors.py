"""One exception hierarchy for the whole engine.

Every error a user can cause derives from `RepoosError` and carries the place
and the reason in its message; the CLI prints it on one line and exits non-zero,
the MCP server turns it into a tool error, the TUI into a notification.
"""

from __future__ import annotations

from dataclasses import dataclass


class RepoosError(Exception):
    """A mistake in the user's input or environment, with a message that says where."""


@dataclass(frozen=True)
class SourceLocation:
    """A place in a Python source file, 1-based like editors show it."""

    path: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"


class SourceError(RepoosError):
    """The source cannot be read or parsed (missing file, syntax error)."""

    def __init__(self, location: SourceLocation | str, reason: str) -> None:
        super().__init__(f"{location}: {reason}")
        self.location = location
        self.reason = reason


class NotAnalyzableError(RepoosError):
    """A function exists but lies outside the affine subset the engine models; `track` is the one ingest sent it
    to instead ("other" when none), whose own `check` may take it."""

    def __init__(self, message: str, track: str = "other") -> None:
        super().__init__(message)
        self.track = track


class UnknownTargetError(RepoosError):
    """A kernel name or `path:function` that names nothing."""


class ArgumentSpecError(RepoosError):
    """A malformed `--arg NAME=SPEC` or a kernel argument that has no input."""


class CompileError(RepoosError):
    """The C compiler rejected generated code or is missing."""


class KernelRuntimeError(RepoosError):
    """The native kernel refused a call (for example an index out of an array's bounds)."""
