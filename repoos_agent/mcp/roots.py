"""Which files the server may read: Python files under the roots it was started with, nothing else.

A coding assistant passes paths it got from a user or a model; a path that leaves the
roots (`..`, an absolute path elsewhere, a symlink pointing out) is refused before any
file is opened, with a message that names the roots.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from repoos_agent.errors import RepoosError


class OutsideRootsError(RepoosError):
    """A path the server was not started to read."""


class AllowedRoots:
    """The directories given with `--root` (resolved once, at start)."""

    def __init__(self, directories: Sequence[str | Path]) -> None:
        resolved = []
        for directory in directories:
            path = Path(directory).expanduser().resolve()
            if not path.is_dir():
                raise RepoosError(f"--root {directory}: not a directory")
            resolved.append(path)
        self.directories: tuple[Path, ...] = tuple(resolved)

    def python_file(self, text: str) -> Path:
        """`text` resolved to a Python file under a root (relative paths from the working directory), or an error saying why not."""
        try:
            resolved = Path(text).expanduser().resolve()
        except (OSError, ValueError, RuntimeError) as error:  # a NUL byte, a symlink loop, an unreadable directory
            raise OutsideRootsError(f"`{text}` is not a readable path: {error}") from None
        if not any(resolved.is_relative_to(root) for root in self.directories):
            roots = ", ".join(str(root) for root in self.directories)
            raise OutsideRootsError(f"`{text}` is outside the directories this server may read ({roots}); start it with --root")
        if resolved.suffix != ".py":
            raise OutsideRootsError(f"`{text}` is not a Python file; the server reads only .py files")
        return resolved  # the checked path itself: the engine must open this one, not re-read the text
