"""How a command records what it found in the graph store, where `repoos_agent.swap` and `repoos run` look for it.

Apart from the search's options: `repoos check` and `repoos ingest` record too, and must not load the agent.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TypeVar

from repoos_agent.errors import RepoosError
from repoos_agent.store import open_store

Recorded = TypeVar("Recorded")


def record_findings(args: argparse.Namespace, write: Callable[..., Recorded], *values: object, near: str) -> Recorded | None:
    """Write a command's findings to the graph store: `--graph`, else the one `store_location` finds from
    `near` (the kernel's file), where `repoos_agent.swap` of that kernel will look for them.

    The work is done by then (a search may have taken hours): a store that cannot be
    opened or written is a warning and exit code 3, never the loss of the result."""
    try:
        store = open_store(args.graph, near)
        try:
            return write(store, *values)
        finally:
            store.close()
    except RepoosError as error:
        print(f"repoos: warning: not recorded in the graph store: {error}", file=sys.stderr)
        args.unrecorded = True
        return None
