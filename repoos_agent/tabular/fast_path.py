"""Running a compiled query on the session's own connection, without ORM objects.

The ORM path compiles the query on every call, runs it, and builds one mapped object per row
(identity map, instance state, attribute events) that FastAPI then only reads. The fast path
sends the SQL compiled once, through the DB-API cursor of the connection the session already
holds (so its transaction, isolation and pool behave as before; its pending writes are refused,
since autoflush would have sent them first), and builds each row as a named tuple, which
FastAPI's `from_attributes` models read like the ORM's objects. Values are passed to the driver
as bound parameters, never formatted into the SQL.

Where the time goes once the ORM is gone, and what the fast path does about it (measured in
benchmarks/tabular.py, candidate by candidate):
- mysqlclient parses rows in C, but decodes DATE and DATETIME values with Python functions
  (`MySQLdb.times`), a Python frame per value. For this one query the connection's decoders are
  C callables (`date.fromisoformat`, `datetime.fromisoformat`), equal on every valid value; a
  value they reject (a zero date) makes the query run again with the driver's own decoders, which
  is safe because mysqlclient stores the whole result before decoding it.
- Each row tuple is re-made as the named tuple by `tuple.__new__` from C (`map` over a
  `partial`), not by the class's Python `_make`.
- The cyclic garbage collector is paused while the rows are made: the tuples hold no cycles,
  and its passes over a growing list of them cost as much as making them.
"""

from __future__ import annotations

import gc
from collections import namedtuple
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import partial

from sqlalchemy.orm import Session

from repoos_agent.tabular.compiled import CompiledQuery

MYSQL_DATE, MYSQL_DATETIME, MYSQL_TIMESTAMP = 10, 12, 7
"""The MySQL protocol's field types (MySQLdb.constants.FIELD_TYPE) whose decoders are replaced."""

C_DECODERS = {MYSQL_DATE: date.fromisoformat, MYSQL_DATETIME: datetime.fromisoformat, MYSQL_TIMESTAMP: datetime.fromisoformat}


class PendingWrites(Exception):
    """The session holds unflushed changes: only the ORM path (which autoflushes them) may run."""


@dataclass
class FastQuery:
    """A compiled query and the row type its results are built as."""

    query: CompiledQuery
    row: type = field(init=False)
    _make_row: partial = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.row = namedtuple(self.query.entity or "Row", self.query.keys)
        self._make_row = partial(tuple.__new__, self.row)

    def __call__(self, session: Session, values: Mapping[str, object]) -> list:
        if session.new or session.dirty or session.deleted:
            raise PendingWrites("the session has pending writes")
        connection = session.connection().connection.dbapi_connection
        parameters = self.query.bound(values)
        with _collector_paused():
            if _decodes_in_c(connection):
                try:
                    rows = _fetch(connection, self.query.sql, parameters, C_DECODERS)
                except ValueError:  # a value only the driver's own decoders accept (a zero date): theirs, as the ORM's
                    rows = _fetch(connection, self.query.sql, parameters, {})
            else:
                rows = _fetch(connection, self.query.sql, parameters, {})
            return list(map(self._make_row, rows))


def _decodes_in_c(connection: object) -> bool:
    """mysqlclient: it takes its decoders from the connection's `converter` map when a result is stored."""
    return type(connection).__module__.startswith("MySQLdb") and isinstance(getattr(connection, "converter", None), dict)


def _fetch(connection, sql: str, parameters: tuple | dict, decoders: Mapping[int, object]) -> tuple:
    """All rows of `sql`, decoded with the connection's decoders overridden by `decoders` for this query only."""
    saved = getattr(connection, "converter", None)
    if decoders:
        connection.converter = {**saved, **decoders}
    cursor = connection.cursor()
    try:
        cursor.execute(sql, parameters)
        return cursor.fetchall()
    finally:
        cursor.close()
        if decoders:
            connection.converter = saved


@contextmanager
def _collector_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
