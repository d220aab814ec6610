"""Running a compiled query on the session's own connection, without ORM objects.

The ORM path compiles the query on every call, runs it, and builds one mapped object per row
(identity map, instance state, attribute events) that FastAPI then only reads. The fast path
sends the SQL compiled once, through the DB-API cursor of the connection the session already
holds (so its transaction, isolation and pool behave as before; its pending writes are refused,
since autoflush would have sent them first), and builds each row as a named tuple in C
(`_make`), which FastAPI's `from_attributes` models read like the ORM's objects. Values are
passed to the driver as bound parameters, never formatted into the SQL.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from repoos_agent.tabular.compiled import CompiledQuery


class PendingWrites(Exception):
    """The session holds unflushed changes: only the ORM path (which autoflushes them) may run."""


@dataclass
class FastQuery:
    """A compiled query and the row type its results are built as."""

    query: CompiledQuery
    row: type = field(init=False)

    def __post_init__(self) -> None:
        self.row = namedtuple(self.query.entity or "Row", self.query.keys)

    def __call__(self, session: Session, values: Mapping[str, object]) -> list:
        if session.new or session.dirty or session.deleted:
            raise PendingWrites("the session has pending writes")
        cursor = session.connection().connection.dbapi_connection.cursor()
        try:
            cursor.execute(self.query.sql, self.query.bound(values))
            rows = cursor.fetchall()
        finally:
            cursor.close()
        return list(map(self.row._make, rows))
