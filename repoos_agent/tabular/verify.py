"""Proving a fast path equal to its endpoint on the live database, and guarding every later call.

`verify_endpoint` runs the original endpoint and the fast path in one REPEATABLE READ
transaction (both see the same snapshot) and compares every row: the same values of the same
types, in the same order where the query orders, as the same multiset where it does not. The
`TabularContract` it returns keeps the SQL, a digest of the tables' schema (from
`information_schema`) and of the function's source. `GuardedEndpoint` runs the fast path only
while all three still hold and the session has no pending writes; otherwise it runs the
original and warns once per reason.
"""

from __future__ import annotations

import hashlib
import inspect
import textwrap
import time
import warnings
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sqlalchemy import bindparam, text
from sqlalchemy.orm import Session

from repoos_agent.ingest.parse import functions, parse_source
from repoos_agent.ingest.parse import text as source_text
from repoos_agent.tabular.chain import QueryChain, TabularRefusal, chain_of
from repoos_agent.tabular.compiled import CompiledQuery, build_statement, compile_query, driver_of
from repoos_agent.tabular.fast_path import FastQuery, PendingWrites
from repoos_agent.tabular.readers import check_response_readers

SCHEMA_RECHECK_S = 2.0


class TabularFallbackWarning(RuntimeWarning):
    """The fast path did not run for this call: the reason says why (no credentials, no values)."""


@dataclass(frozen=True)
class TabularContract:
    """What was verified: the query, the schema it was verified against, the source it came from."""

    chain: QueryChain
    query: CompiledQuery
    schema_digest: str
    rows_compared: int


@dataclass(frozen=True)
class Mismatch:
    """Where the fast path and the endpoint differ (the first row that does)."""

    reason: str


def schema_digest(session: Session, tables: tuple[str, ...]) -> str:
    """A digest of the columns (name, type, nullability, position) of `tables` in the current database."""
    statement = text(
        "SELECT table_name, column_name, column_type, is_nullable, ordinal_position FROM information_schema.columns "
        "WHERE table_schema = DATABASE() AND table_name IN :tables ORDER BY table_name, ordinal_position"
    ).bindparams(bindparam("tables", expanding=True))
    rows = session.execute(statement, {"tables": list(tables)}).all()
    return hashlib.sha256(repr([tuple(map(str, row)) for row in rows]).encode()).hexdigest()[:16]


def verify_endpoint(
    function: Callable, chain: QueryChain, session: Session, values: Mapping[str, object]
) -> TabularContract | Mismatch:
    """Compile the endpoint's query, refuse it if its routes' response models read what the fast path's rows lack,
    and compare the fast path with the endpoint on one snapshot."""
    session.rollback()
    session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
    try:
        query = compile_query(chain, function, session)
        check_response_readers(function, chain, build_statement(chain, function, session), query.keys)
        fast = FastQuery(query)
        try:
            expected = function(**{chain.session: session}, **values)
        except Exception as error:  # the endpoint's own failure: reported, never swapped
            raise TabularRefusal(f"{chain.path}:{chain.line}: `{chain.function}` failed on the live database: {error}") from None
        got = fast(session, values)
        difference = _difference(query, expected, got)
        digest = schema_digest(session, query.tables)
    finally:
        session.rollback()
    if difference is not None:
        return Mismatch(difference)
    return TabularContract(chain, query, digest, len(got))


def _difference(query: CompiledQuery, expected: list, got: list) -> str | None:
    if len(expected) != len(got):
        return f"{len(got)} rows against the endpoint's {len(expected)}"
    keys = query.keys
    mine = [tuple(row) for row in got]
    theirs = [tuple(getattr(row, key) for key in keys) if query.entity else tuple(row) for row in expected]
    for position, (a, b) in enumerate(zip(theirs, mine, strict=True)):
        kinds_a, kinds_b = tuple(type(v) for v in a), tuple(type(v) for v in b)
        if kinds_a != kinds_b:
            return f"row {position}: types {kinds_b} against the endpoint's {kinds_a}"
    if query.ordered:
        for position, (a, b) in enumerate(zip(theirs, mine, strict=True)):
            if a != b:
                return f"row {position} differs: {b!r} against the endpoint's {a!r}"
        return None
    return None if Counter(theirs) == Counter(mine) else "the rows differ (as a multiset)"


class GuardedEndpoint:
    """The endpoint with its verified fast path: same signature, same results, the original whenever a guard fails."""

    def __init__(self, function: Callable, contract: TabularContract) -> None:
        self.function = function
        self.contract = contract
        self.fast = FastQuery(contract.query)
        self.__signature__ = inspect.signature(function)
        self.__name__ = function.__name__
        self.__doc__ = function.__doc__
        self.__wrapped__ = function
        self.warned: set[str] = set()
        self.fast_calls = 0
        edited = _function_digest(inspect.getsource(function), contract.chain) != contract.chain.source_digest
        self.edited = "the function changed since it was verified" if edited else None

    def __call__(self, *args: object, **kwargs: object) -> object:
        bound = self.__signature__.bind(*args, **kwargs)
        bound.apply_defaults()
        session = bound.arguments[self.contract.chain.session]
        reason = self._stale(session)
        if reason is None:
            try:
                result = self.fast(session, bound.arguments)
            except PendingWrites as pending:
                reason = str(pending)
            else:
                self.fast_calls += 1
                return result
        if reason not in self.warned:
            self.warned.add(reason)
            warnings.warn(f"`{self.__name__}` runs its ORM query: {reason}", TabularFallbackWarning, stacklevel=2)
        return self.function(*args, **kwargs)

    def _stale(self, session: Session) -> str | None:
        """Why the contract does not hold for this call, or None. The schema is read again on each pooled
        connection at most every `SCHEMA_RECHECK_S` seconds: a query of `information_schema` per request
        would cost more than the fast path saves."""
        if self.edited:
            return self.edited
        driver = driver_of(session.get_bind().dialect)
        if driver != self.contract.query.dialect:
            return f"the session runs on {driver}, and the fast path was verified on {self.contract.query.dialect}"
        info = session.connection().connection.info
        tables = self.contract.query.tables
        digest, when = info.get(("repoos_schema", tables), (None, 0.0))
        if digest is None or time.monotonic() - when > SCHEMA_RECHECK_S:
            digest = schema_digest(session, tables)
            info[("repoos_schema", tables)] = (digest, time.monotonic())
        if digest != self.contract.schema_digest:
            return "the tables' schema changed since the fast path was verified"
        return None


def _function_digest(source: str, chain: QueryChain) -> str:
    """The digest `chain_of` gives the function as it is now ("" when it is no longer a query it reads)."""
    tree = parse_source(textwrap.dedent(source), chain.path)
    found = [node for node in functions(tree) if source_text(node.child_by_field_name("name")) == chain.function]
    try:
        return chain_of(found[0], chain.path).source_digest if found else ""
    except TabularRefusal:
        return ""
