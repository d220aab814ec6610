"""The embedded graph store: one SQLite file, WAL mode, one transaction per write.

Nodes and edges are two tables; a node's properties are one JSON document. WAL
mode and a transaction per batch mean a process killed mid-write loses only the
batch it was writing. A file that is not a RepoOS store, or is damaged, is
reported and left exactly as it was: it may be the user's data.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

from repoos_agent.store.graph import R, StoreError
from repoos_agent.store.records import MODEL_RELATIONS, Batch, from_properties, to_properties

FORMAT = "repoos-graph/1"
SCHEMA = """
CREATE TABLE IF NOT EXISTS repoos_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (
    kind TEXT NOT NULL, key TEXT NOT NULL, properties TEXT NOT NULL, PRIMARY KEY (kind, key)
);
CREATE TABLE IF NOT EXISTS edges (
    source_kind TEXT NOT NULL, source TEXT NOT NULL, relation TEXT NOT NULL, target_kind TEXT NOT NULL, target TEXT NOT NULL,
    PRIMARY KEY (source_kind, source, relation, target_kind, target)
);
CREATE INDEX IF NOT EXISTS edges_by_target ON edges (target_kind, target);
"""


class SQLiteStore:
    """A `GraphStore` in one SQLite file (created with its parent directory when missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self._lock = threading.Lock()
        existed = self.path.exists() and self.path.stat().st_size > 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        except (OSError, sqlite3.Error) as error:
            raise StoreError(f"graph store {self.path}: cannot open it: {error}") from None
        try:
            self._check(existed)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            # Always, idempotently: a second process may be creating the same new store right now, or a
            # first one may have died between the WAL header and its schema.
            with self._transaction():
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
                self._db.execute("INSERT OR IGNORE INTO repoos_meta VALUES ('format', ?)", (FORMAT,))
        except (sqlite3.DatabaseError, StoreError) as error:
            self._db.close()
            if isinstance(error, StoreError):
                raise
            raise self._unusable(error) from None

    def _unusable(self, error: sqlite3.DatabaseError) -> StoreError:
        """A lock, a read-only file or a full disk is said as such; only other database errors mean damage."""
        if isinstance(error, sqlite3.OperationalError):
            return StoreError(f"graph store {self.path}: cannot use it now: {error}")
        return StoreError(self._damaged(str(error)))

    def _damaged(self, reason: str) -> str:
        return (
            f"graph store {self.path} is damaged or not a RepoOS graph ({reason}); it was left untouched: "
            "move it away to start a new store, or point --graph / REPOOS_GRAPH at another file"
        )

    def _check(self, existed: bool) -> None:
        """An existing file must be an intact SQLite database holding a RepoOS graph."""
        if not existed:
            return
        result = self._db.execute("PRAGMA quick_check").fetchone()
        if result is None or result[0] != "ok":
            raise StoreError(self._damaged(f"integrity check: {result[0] if result else 'no answer'}"))
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return  # a database with nothing in it yet (being created, or its creator died): the schema follows
        if "repoos_meta" not in tables:
            raise StoreError(self._damaged("it has no RepoOS tables"))
        row = self._db.execute("SELECT value FROM repoos_meta WHERE name = 'format'").fetchone()
        if row is None or row[0] != FORMAT:
            raise StoreError(self._damaged(f"format {row[0] if row else 'unknown'}, expected {FORMAT}"))

    def _transaction(self):
        return _Transaction(self._db)

    def write(self, batch: Batch) -> None:
        with self._lock, self._transaction():
            for kind, key in batch.replace:
                self._delete_model(kind, key)
            self._db.executemany(
                "INSERT INTO nodes VALUES (?, ?, ?) ON CONFLICT (kind, key) DO UPDATE SET properties = excluded.properties",
                [(node.KIND, node.key, json.dumps(to_properties(node))) for node in batch.nodes],  # type: ignore[attr-defined]
            )
            self._db.executemany(
                "INSERT OR IGNORE INTO edges VALUES (?, ?, ?, ?, ?)",
                [(e.source_kind, e.source, e.relation, e.target_kind, e.target) for e in batch.edges],
            )

    def _delete_model(self, kind: str, key: str) -> None:
        marks = ", ".join("?" * len(MODEL_RELATIONS))
        owned = self._db.execute(
            f"SELECT target_kind, target FROM edges WHERE source_kind = ? AND source = ? AND relation IN ({marks})",
            (kind, key, *MODEL_RELATIONS),
        ).fetchall()
        for target_kind, target in owned:
            self._db.execute("DELETE FROM nodes WHERE kind = ? AND key = ?", (target_kind, target))
            self._db.execute("DELETE FROM edges WHERE (source_kind = ? AND source = ?)", (target_kind, target))
            self._db.execute("DELETE FROM edges WHERE (target_kind = ? AND target = ?)", (target_kind, target))

    def get(self, cls: type[R], key: str) -> R | None:
        row = self._query("SELECT properties FROM nodes WHERE kind = ? AND key = ?", (cls.KIND, key))  # type: ignore[attr-defined]
        return from_properties(cls, json.loads(row[0][0])) if row else None

    def all(self, cls: type[R]) -> list[R]:
        rows = self._query("SELECT properties FROM nodes WHERE kind = ? ORDER BY key", (cls.KIND,))  # type: ignore[attr-defined]
        return [from_properties(cls, json.loads(row[0])) for row in rows]

    def find(self, cls: type[R], field: str, value: str) -> list[R]:
        rows = self._query(
            "SELECT properties FROM nodes WHERE kind = ? AND json_extract(properties, ?) = ? ORDER BY key",
            (cls.KIND, f"$.{field}", value),  # type: ignore[attr-defined]
        )
        return [from_properties(cls, json.loads(row[0])) for row in rows]

    def related(self, source: object, relation: str, cls: type[R]) -> list[R]:
        rows = self._query(
            "SELECT n.properties FROM edges e JOIN nodes n ON n.kind = e.target_kind AND n.key = e.target "
            "WHERE e.source_kind = ? AND e.source = ? AND e.relation = ? AND e.target_kind = ? ORDER BY n.key",
            (source.KIND, source.key, relation, cls.KIND),  # type: ignore[attr-defined]
        )
        return [from_properties(cls, json.loads(row[0])) for row in rows]

    def count(self, cls: type) -> int:
        return self._query("SELECT count(*) FROM nodes WHERE kind = ?", (cls.KIND,))[0][0]  # type: ignore[attr-defined]

    def edge_count(self) -> int:
        return self._query("SELECT count(*) FROM edges", ())[0][0]

    def _query(self, sql: str, parameters: tuple) -> list[tuple]:
        try:
            with self._lock:
                return self._db.execute(sql, parameters).fetchall()
        except sqlite3.DatabaseError as error:
            raise self._unusable(error) from None

    def close(self) -> None:
        self._db.close()


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any error; SQLite errors become `StoreError`."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as failure:  # another writer held the lock past the timeout
            raise StoreError(f"graph store write failed: {failure}") from None

    def __exit__(self, kind, error, traceback) -> bool:
        if error is None:
            try:
                self._db.execute("COMMIT")
            except sqlite3.Error as failure:  # a full disk, say: nothing of the batch is kept
                self._rollback()
                raise StoreError(f"graph store write failed: {failure}") from None
            return False
        self._rollback()
        if isinstance(error, sqlite3.Error):
            raise StoreError(f"graph store write failed: {error}") from None
        return False

    def _rollback(self) -> None:
        """Roll back what is still open: after a full disk or an I/O error SQLite has often rolled back itself."""
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")
