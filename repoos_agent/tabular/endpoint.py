"""What `repoos bench` needs to know of an endpoint before touching a database.

Imports no SQLAlchemy: the loop track asks `is_endpoint` of every function it benches, and
the tabular extra may not be installed.
"""

from __future__ import annotations

from pathlib import Path

from repoos_agent.errors import RepoosError
from repoos_agent.store import TabularKernel, function_key, missing_store, open_store
from repoos_agent.tabular.chain import TabularRefusal, read_chain


def is_endpoint(path: str | Path, name: str, graph: str | None = None) -> bool:
    """Whether `name` of `path` is for the tabular track: its source reads as a query chain, or the graph store
    holds a TabularKernel for it."""
    try:
        read_chain(path, name)
    except TabularRefusal:
        return _has_tabular_kernel(path, name, graph)
    return True


def _has_tabular_kernel(path: str | Path, name: str, graph: str | None) -> bool:
    if missing_store(graph, path):
        return False
    try:
        store = open_store(graph, path)
    except RepoosError:
        return False  # an unreadable store holds nothing to serve; the loop track says why if it needs one
    try:
        return store.get(TabularKernel, function_key(path, name)) is not None
    finally:
        store.close()
