"""How every entry point (`repoos`, `repoos-mcp`, `repoos-tui`) runs its parsed command.

Its own module, below the CLI: the MCP and TUI commands are registered by the CLI and run
under their own names too, so the way a command ends (one line on stderr, an exit code)
must live where all three can import it without importing each other.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

from repoos_agent.errors import RepoosError

UNRECORDED_EXIT = 3
"""Exit code of a command that did its work and printed it, but could not record it in the graph store
(the command sets `args.unrecorded`)."""


@dataclass(frozen=True)
class LazyHandler:
    """A command's handler named as `module:function`, imported when the command runs.

    The parser holds every command; were it to hold the handlers themselves, building it would import what
    every command runs (the agent, the study, the store), and `repoos --help` would wait for all of them."""

    name: str

    def resolve(self) -> Callable[[argparse.Namespace], int]:
        """The handler itself, its module imported (a misspelt name fails here, with the import's own error)."""
        module, _, function = self.name.partition(":")
        return getattr(importlib.import_module(module), function)

    def __call__(self, args: argparse.Namespace) -> int:
        """Run the handler on the parsed arguments; its exit code."""
        return self.resolve()(args)


def run_command(args: argparse.Namespace, prog: str = "repoos") -> int:
    """Run a parsed command; a user's mistake becomes one line on stderr, `prog: error: …`, and exit code 2, never a traceback."""
    try:
        code = args.run(args)
        return UNRECORDED_EXIT if code == 0 and getattr(args, "unrecorded", False) else code
    except RepoosError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader left (`repoos ingest FILE | head`): what it read is all it wanted. Python would print
        # a traceback flushing stdout at exit; point stdout at nothing so it has nothing to flush.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
