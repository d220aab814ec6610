"""The semantic graph: what was ingested, proven and measured, and the contracts the runtime trusts.

SQLite (the file `.repoos/graph.sqlite`, found as git finds its repository, with `REPOOS_CEILING_DIRECTORIES` as
git's `GIT_CEILING_DIRECTORIES`) by default; a Neo4j server when `--graph` or `REPOOS_GRAPH` is a `bolt://` or
`neo4j://` address.
"""

from __future__ import annotations

import os
from pathlib import Path

from repoos_agent.store.graph import GraphStore, StoreError
from repoos_agent.store.identity import function_key, live_identity
from repoos_agent.store.records import (
    Array,
    Batch,
    Dependence,
    FsmKernel,
    Function,
    Loop,
    Measurement,
    Module,
    Schedule,
    Statement,
    TabularKernel,
    VerifiedKernel,
)
from repoos_agent.store.sqlite import SQLiteStore

STORE_PATH = Path(".repoos") / "graph.sqlite"
CEILING_VARIABLE = "REPOOS_CEILING_DIRECTORIES"
SERVER_SCHEMES = ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")

__all__ = [
    "Array", "Batch", "Dependence", "FsmKernel", "Function", "GraphStore", "Loop", "Measurement", "Module", "SQLiteStore",
    "Schedule", "Statement", "StoreError", "TabularKernel", "VerifiedKernel", "function_key", "live_identity", "missing_store",
    "open_store", "store_location",
]  # fmt: skip


def store_location(location: str | None = None, near: str | Path | None = None) -> str:
    """The graph store every command and swapped function uses: `location` (`--graph`), else `$REPOOS_GRAPH`, else
    the first `.repoos/graph.sqlite` found walking up from the directory of the file `near` (the function's, the
    script's), then from the working directory; with none found, `.repoos/graph.sqlite` in the working directory.

    Found as git finds its repository, not fixed to the working directory: a program started from another
    directory, or a command run from a subdirectory, reaches the store its kernels were optimized into. A walk
    never climbs into a directory listed in `$REPOOS_CEILING_DIRECTORIES` (separated as `PATH` is), so a store
    left in a shared parent such as `/tmp` is not picked up by whatever runs below it."""
    named = _named(location)
    if named:
        return named
    ceilings = _ceilings()
    for start in _search_starts(near):
        for directory in _walk_up(start, ceilings):
            if (directory / STORE_PATH).is_file():
                return str(directory / STORE_PATH)
    return str(Path.cwd() / STORE_PATH)


def _ceilings() -> frozenset[Path]:
    """The directories no walk climbs into: `$REPOOS_CEILING_DIRECTORIES`, absolute paths separated as `PATH` is."""
    listed = os.environ.get(CEILING_VARIABLE, "").split(os.pathsep)
    return frozenset(Path(entry).resolve() for entry in listed if entry and Path(entry).is_absolute())


def _walk_up(start: Path, ceilings: frozenset[Path]) -> list[Path]:
    """`start` and its parents, up to (not into) the first ceiling; `start` itself is always searched, as git does."""
    directories = [start]
    for parent in start.parents:
        if parent in ceilings:
            break
        directories.append(parent)
    return directories


def _named(location: str | None) -> str | None:
    """The store the user named: `--graph`, else `$REPOOS_GRAPH` (empty means unset)."""
    return location or os.environ.get("REPOOS_GRAPH") or None


def _search_starts(near: str | Path | None) -> tuple[Path, ...]:
    """Where the walks up start: the file's directory, then the working directory (once when they are one)."""
    starts = (Path(near).resolve().parent,) if near is not None else ()
    return tuple(dict.fromkeys((*starts, Path.cwd())))


def missing_store(location: str | None = None, near: str | Path | None = None) -> str:
    """Why there is no store to read at `store_location(location, near)`, naming where it was looked for; empty
    when there is one (a server is assumed to be there). Readers ask first, so that reading never creates an
    empty store as a side effect."""
    where = store_location(location, near)
    if where.startswith(SERVER_SCHEMES) or Path(where).exists():
        return ""
    if _named(location):
        return f"there is no graph store at {where}"
    searched = " or ".join(str(start) for start in _search_starts(near))
    above = "a directory above, below the ceilings in $" + CEILING_VARIABLE if _ceilings() else "a directory above"
    return f"there is no graph store: no {STORE_PATH} in {searched} or {above}"


def open_store(location: str | None = None, near: str | Path | None = None) -> GraphStore:
    """The store at `store_location(location, near)`: a Neo4j server for bolt/neo4j URLs, else a SQLite file."""
    where = store_location(location, near)
    if where.startswith(SERVER_SCHEMES):
        from repoos_agent.store.neo4j import Neo4jStore  # the driver loads only for servers

        return Neo4jStore(where)
    return SQLiteStore(where)
