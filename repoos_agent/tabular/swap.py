"""Serving stored fast paths: an endpoint, or every route of a FastAPI app that has a verified contract.

The contract (`TabularKernel` in the graph store, written by `repoos optimize app.py:f --db URL`)
is found by the function's file and name. The endpoint is wrapped in a `GuardedEndpoint`, which
runs the fast path while the function's source, the tables' schema and the session's state
allow it, and the ORM otherwise. A FastAPI route keeps its path, dependencies and response
model: only the callable its dependant calls is replaced. The route's response model is checked
again when it is installed (`readers`): the contract digests the function, not the model, and a
model edited since verification may read what the fast path's rows lack; that route keeps its
ORM query, with a warning.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from sqlalchemy.orm import Session

from repoos_agent.store import TabularKernel, function_key, missing_store, open_store
from repoos_agent.tabular.chain import TabularRefusal, read_chain
from repoos_agent.tabular.compiled import CompiledQuery, build_statement
from repoos_agent.tabular.readers import check_response_readers, serving_routes
from repoos_agent.tabular.verify import GuardedEndpoint, TabularContract, TabularFallbackWarning


def stored_contract(function: Callable, graph: str | None = None) -> TabularContract | None:
    """The verified contract of `function`, or None when the store has none (or there is no store: reading
    never creates one)."""
    path = inspect.getsourcefile(function)
    if path is None or missing_store(graph, path):
        return None
    store = open_store(graph, path)
    try:
        record = store.get(TabularKernel, function_key(path, function.__name__))
    finally:
        store.close()
    return None if record is None else contract_of(record, path, function.__name__)


def contract_of(record: TabularKernel, path: str, name: str) -> TabularContract:
    """The contract `record` holds, with the chain `name` of `path` reads as now (its session parameter) but the
    source digest that was verified: a function edited since then runs its ORM query."""
    query = CompiledQuery(
        record.sql, record.parameters, record.keys, record.entity or None, record.ordered, record.tables, record.dialect,
        record.positional,
    )  # fmt: skip
    chain = replace(read_chain(path, name), source_digest=record.source_digest)
    return TabularContract(chain, query, record.schema_digest, record.rows_compared)


def swap_endpoint(function: Callable, graph: str | None = None, record: TabularKernel | None = None) -> Callable:
    """`function` guarded by its fast path (`record`, else the one the store holds), or `function` itself when
    nothing was verified for it or it is no longer a query (then with a warning saying why)."""
    try:
        if record is None:
            contract = stored_contract(function, graph)
        else:
            contract = contract_of(record, inspect.getsourcefile(function) or "", function.__name__)
    except TabularRefusal as refusal:
        warnings.warn(f"`{function.__name__}` runs its ORM query: {refusal}", TabularFallbackWarning, stacklevel=2)
        return function
    return function if contract is None else GuardedEndpoint(function, contract)


def install(app, graph: str | None = None) -> list[str]:
    """Every route of the FastAPI `app` whose endpoint has a contract now runs its fast path; the routes' paths."""
    installed = []
    for route in app.routes:
        dependant = getattr(route, "dependant", None)
        call = getattr(dependant, "call", None)
        if call is None or isinstance(call, GuardedEndpoint) or not Path(inspect.getsourcefile(call) or "").exists():
            continue
        swapped = swap_endpoint(call, graph)
        if swapped is call:
            continue
        refusal = readers_refusal(swapped)
        if refusal:
            warnings.warn(f"{route.path} keeps its ORM query: {refusal}", TabularFallbackWarning, stacklevel=2)
            continue
        dependant.call = swapped
        installed.append(route.path)
    return installed


def readers_refusal(swapped: GuardedEndpoint) -> str:
    """Why a route serving `swapped` must keep its ORM query (its response model reads what the fast path's rows
    lack), or "" when none must."""
    call, chain = swapped.function, swapped.contract.chain
    try:  # the statement is only built, never run: a session without an engine suffices
        check_response_readers(call, chain, build_statement(chain, call, Session()), swapped.contract.query.keys)
    except TabularRefusal as refusal:
        return str(refusal)
    return ""


def recheck_routes(swapped: GuardedEndpoint) -> None:
    """After the module that registered `swapped` on its routes has run (`repoos run` swaps before the route
    decorator, when no route exists to check): the check `install` makes; a refused route is put back on its
    ORM query, with a warning."""
    refusal = readers_refusal(swapped)
    if not refusal:
        return
    for route in serving_routes(swapped.function):
        if route.dependant.call is swapped:
            route.dependant.call = swapped.function
            warnings.warn(f"{route.path} keeps its ORM query: {refusal}", TabularFallbackWarning, stacklevel=2)
