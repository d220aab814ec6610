"""The tabular track's registration (`repoos_agent.tracks`): which functions are ORM endpoints, their bench leg,
their swap by a `TabularKernel`, `repoos optimize --db`, its MCP tool and its monitor.

Reading an endpoint needs only its source and the store; SQLAlchemy loads when one is swapped or optimized."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from tree_sitter import Node

from repoos_agent.ingest.classify import walk
from repoos_agent.ingest.parse import text
from repoos_agent.store import TabularKernel
from repoos_agent.tabular.chain import TabularRefusal, chain_of
from repoos_agent.tabular.credentials import without_password
from repoos_agent.tabular.endpoint import is_endpoint
from repoos_agent.tracks import Track

TABULAR_METHODS = frozenset({"query", "filter", "filter_by", "group_by", "order_by", "execute", "select", "where", "join"})
NUMERIC_MODULES = frozenset({"np", "numpy", "math"})


def tabular_reason(function: Node) -> str | None:
    """ORM/SQL-style code: method chains like `.query(...).filter(...)`."""
    methods = []
    for node in walk(function):
        if node.type == "call":
            callee = node.child_by_field_name("function")
            if callee is not None and callee.type == "attribute":
                owner = callee.child_by_field_name("object")
                if text(owner) in NUMERIC_MODULES:
                    continue  # `np.where(c, x, y)` is an elementwise choice, not a query
                method = text(callee.child_by_field_name("attribute"))
                if method == "join" and owner.type in ("string", "concatenated_string"):
                    continue  # `b"".join(parts)` joins strings or bytes, not tables
                if method in TABULAR_METHODS:
                    methods.append(method)
    if methods:
        return "query-style calls (" + ", ".join(f".{m}()" for m in sorted(set(methods))) + "): a database plan, not a loop nest"
    return None


def claim(function: Node, path: str) -> str | None:
    """A function with query-style calls is this track's: the ORM query it returns, or why it would not compile it."""
    calls = tabular_reason(function)
    if calls is None:
        return None
    try:
        chain = chain_of(function, path)
    except TabularRefusal as refusal:
        return f"{calls}; not compiled: {refusal}"
    clauses = " ".join(f".{method}()" for method in chain.methods)
    bound = f"; values from {', '.join(chain.parameters)}" if chain.parameters else ""
    return f"an ORM query on `{chain.session}`: {chain.style}(...) {clauses} .all(){bound}"


def swap(function: Callable[..., object], record: TabularKernel) -> Callable[..., object]:
    """The endpoint on its guarded fast path (SQLAlchemy loads only for programs with endpoints)."""
    from repoos_agent.tabular.swap import swap_endpoint

    return swap_endpoint(function, record=record)


def recheck(function: Callable[..., object]) -> None:
    """A swapped endpoint's routes checked again once its module has run, as `install` checks them."""
    from repoos_agent.tabular.swap import recheck_routes

    recheck_routes(function)  # type: ignore[arg-type]


def optimize(args: argparse.Namespace) -> int:
    """`repoos optimize app.py:function --db URL` (SQLAlchemy loads only then)."""
    from repoos_agent.tabular.command import optimize_command

    return optimize_command(args)


TRACK = Track(
    name="tabular",
    claim=claim,
    benches=is_endpoint,
    bench_leg="repoos_agent.tabular.bench_leg",
    bench_output="json",
    takes_database=True,
    hide_secrets=without_password,
    contract=TabularKernel,
    swap=swap,
    recheck=recheck,
    optimize=optimize,
    mcp="repoos_agent.mcp.tabular_tools",
    monitor="tui.tabular_command",
)
