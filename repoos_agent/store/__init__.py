"""The semantic graph: what was ingested, proven and measured, and the contracts the runtime trusts.

SQLite (a file under `.repoos/`) by default; a Neo4j server when `--graph` or
`REPOOS_GRAPH` is a `bolt://` or `neo4j://` address.
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
    Function,
    Loop,
    Measurement,
    Module,
    Schedule,
    Statement,
    VerifiedKernel,
)
from repoos_agent.store.sqlite import SQLiteStore

DEFAULT_PATH = Path(".repoos") / "graph.sqlite"
SERVER_SCHEMES = ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")

__all__ = [
    "Array", "Batch", "Dependence", "Function", "GraphStore", "Loop", "Measurement", "Module", "SQLiteStore", "Schedule",
    "Statement", "StoreError", "VerifiedKernel", "function_key", "live_identity", "open_store", "store_exists", "store_location",
]  # fmt: skip


def store_location(location: str | None = None) -> str:
    """`location`, else `$REPOOS_GRAPH`, else `.repoos/graph.sqlite` in the working directory."""
    return location or os.environ.get("REPOOS_GRAPH") or str(DEFAULT_PATH)


def store_exists(location: str | None = None) -> bool:
    """Whether there is a store to read at `store_location(location)` (a server is assumed to be there; a file
    must exist). Readers ask first, so that reading never creates an empty store as a side effect."""
    where = store_location(location)
    return where.startswith(SERVER_SCHEMES) or Path(where).exists()


def open_store(location: str | None = None) -> GraphStore:
    """The store at `store_location(location)`: a Neo4j server for bolt/neo4j URLs, else a SQLite file."""
    where = store_location(location)
    if where.startswith(SERVER_SCHEMES):
        from repoos_agent.store.neo4j import Neo4jStore  # the driver loads only for servers

        return Neo4jStore(where)
    return SQLiteStore(where)
