"""The graph in a Neo4j server (5.x), through the official driver, with idempotent `MERGE`s.

The Cypher here is the subset Neo4j 5 and FalkorDB's Bolt endpoint both accept:
`MERGE` on a `key` property per label, `SET n = $properties` (a node's properties are
exactly its record), `UNWIND` for relations, explicit transactions, and queries run
with `session.run`. Two FalkorDB faults shape the writes: requests over 4 KB crash it
(so long text goes in pieces) and float parameters lose all but six decimals (so
floats are written as literals, which it keeps exact).
Labels and relation types come from the fixed sets in `records`, never from input.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections import defaultdict

import neo4j
from neo4j.exceptions import AuthError, ConfigurationError, DriverError, Neo4jError, ServiceUnavailable

from repoos_agent.store.graph import R, StoreError
from repoos_agent.store.records import KINDS, MODEL_RELATIONS, RELATIONS, Batch, from_properties, to_properties


def connect(url: str, timeout_s: float = 5.0) -> neo4j.Driver:
    """A driver for `url` (credentials from REPOOS_GRAPH_USER / REPOOS_GRAPH_PASSWORD), checked to answer."""
    user = os.environ.get("REPOOS_GRAPH_USER")
    auth = (user, os.environ.get("REPOOS_GRAPH_PASSWORD", "")) if user else None
    try:
        driver = neo4j.GraphDatabase.driver(url, auth=auth, connection_timeout=timeout_s)
    except (ConfigurationError, ValueError) as error:
        raise StoreError(f"graph store {url}: not a usable Neo4j address ({error})") from None
    try:
        driver.verify_connectivity()
    except (ServiceUnavailable, AuthError, DriverError, Neo4jError, OSError) as error:
        driver.close()
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise StoreError(f"cannot reach the Neo4j server at {url}: {reason}") from None
    return driver


class Neo4jStore:
    """A `GraphStore` on a Neo4j-compatible server. Pass a driver to share one across stores."""

    def __init__(self, url: str, driver: neo4j.Driver | None = None, database: str | None = None) -> None:
        self.location = url
        self._own_driver = driver is None
        self._driver = driver or connect(url)
        self._database = database or os.environ.get("REPOOS_GRAPH_DATABASE")
        self._indexed = False
        self._interpolates: bool | None = None

    def _session(self) -> neo4j.Session:
        return self._driver.session(database=self._database) if self._database else self._driver.session()

    def _learn_quoting(self, session: neo4j.Session) -> None:
        """Whether the server pastes parameters into the query (see `_safe`): asked once, by echoing a probe,
        before any transaction is open."""
        if self._interpolates is None:
            probe = "a\\tb"
            self._interpolates = session.run("RETURN $probe AS v", probe=probe).single()["v"] != probe

    def _safe(self, parameters: dict) -> dict:
        """`parameters` as this server must receive them. FalkorDB's Bolt endpoint (4.16) pastes string
        parameters into the query between single quotes and reads escapes there: a quote in a value
        failed the query ("An unknown error occurred") and `a\\b` came back as `a<backspace>`. Such a
        server gets every string with `\\` and `'` escaped."""
        return _escaped(parameters) if self._interpolates else parameters

    def _ensure_indexes(self, session: neo4j.Session) -> None:
        """An index on `key` per label; an existing one (Neo4j says so, FalkorDB errors) is fine."""
        if self._indexed:
            return
        for kind in KINDS:
            # Both servers refuse a duplicate index (FalkorDB knows no IF NOT EXISTS); it only speeds lookups.
            with contextlib.suppress(Neo4jError):
                session.run(f"CREATE INDEX FOR (n:{kind}) ON (n.key)").consume()
        self._indexed = True

    def write(self, batch: Batch) -> None:
        try:
            self._write(batch)
        except (Neo4jError, DriverError) as error:
            raise StoreError(f"graph store {self.location}: write failed: {_reason(error)}") from None

    def _write(self, batch: Batch) -> None:
        with self._session() as session:
            self._learn_quoting(session)
            self._ensure_indexes(session)
            with session.begin_transaction() as tx:
                for kind, key in batch.replace:
                    for relation in MODEL_RELATIONS:
                        query = f"MATCH (:{_label(kind)} {{key: $key}})-[:{relation}]->(n) DETACH DELETE n"
                        tx.run(query, self._safe({"key": key})).consume()
                for node in batch.nodes:
                    _merge_node(tx, node, self._safe)
                by_shape: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
                for edge in batch.edges:
                    by_shape[(edge.source_kind, edge.relation, edge.target_kind)].append({"a": edge.source, "b": edge.target})
                for (source_kind, relation, target_kind), rows in by_shape.items():
                    query = (
                        f"UNWIND $rows AS row MATCH (a:{_label(source_kind)} {{key: row.a}}) "
                        f"MATCH (b:{_label(target_kind)} {{key: row.b}}) MERGE (a)-[:{_relation(relation)}]->(b)"
                    )
                    for part in _within_budget(rows):
                        tx.run(query, self._safe({"rows": part})).consume()
                tx.commit()

    def get(self, cls: type[R], key: str) -> R | None:
        rows = self._read(f"MATCH (n:{_label(cls.KIND)} {{key: $key}}) RETURN n", key=key)  # type: ignore[attr-defined]
        return from_properties(cls, dict(rows[0]["n"])) if rows else None

    def all(self, cls: type[R]) -> list[R]:
        rows = self._read(f"MATCH (n:{_label(cls.KIND)}) RETURN n ORDER BY n.key")  # type: ignore[attr-defined]
        return [from_properties(cls, dict(row["n"])) for row in rows]

    def find(self, cls: type[R], field: str, value: str) -> list[R]:
        if not field.isidentifier():
            raise StoreError(f"graph store: `{field}` is not a field name")
        rows = self._read(f"MATCH (n:{_label(cls.KIND)}) WHERE n.{field} = $value RETURN n ORDER BY n.key", value=value)  # type: ignore[attr-defined]
        return [from_properties(cls, dict(row["n"])) for row in rows]

    def related(self, source: object, relation: str, cls: type[R]) -> list[R]:
        rows = self._read(
            f"MATCH (:{_label(source.KIND)} {{key: $key}})-[:{_relation(relation)}]->(n:{_label(cls.KIND)}) "  # type: ignore[attr-defined]
            "RETURN n ORDER BY n.key",
            key=source.key,  # type: ignore[attr-defined]
        )
        return [from_properties(cls, dict(row["n"])) for row in rows]

    def count(self, cls: type) -> int:
        return self._read(f"MATCH (n:{_label(cls.KIND)}) RETURN count(n) AS c")[0]["c"]  # type: ignore[attr-defined]

    def edge_count(self) -> int:
        return self._read("MATCH ()-[r]->() RETURN count(r) AS c")[0]["c"]

    def _read(self, query: str, **parameters: object) -> list:
        try:
            with self._session() as session:
                self._learn_quoting(session)
                return list(session.run(query, self._safe(parameters)))
        except (Neo4jError, DriverError) as error:
            raise StoreError(f"graph store {self.location}: read failed: {_reason(error)}") from None

    def close(self) -> None:
        if self._own_driver:
            self._driver.close()


MESSAGE_BUDGET = 3000
"""Bytes of parameters per query. FalkorDB's Bolt endpoint (4.16) crashes on a request over 4 KB,
so long text (generated C and MLIR) goes in pieces and relations in small batches; Neo4j is
indifferent to the split."""


def _size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode())


def _escaped(value: object) -> object:
    """Strings (also inside lists and maps) with backslashes and single quotes escaped."""
    if isinstance(value, str):
        return value.replace("\\", "\\\\").replace("'", "\\'")
    if isinstance(value, dict):
        return {key: _escaped(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_escaped(item) for item in value]
    return value


def _merge_node(tx: neo4j.Transaction, node: object, safe) -> None:
    """`MERGE` the node and make its properties exactly the record's, in requests within the budget."""
    label = _label(node.KIND)  # type: ignore[attr-defined]
    short: dict[str, object] = {}
    long: dict[str, str] = {}
    floats: list[str] = []
    for name, value in to_properties(node).items():
        if isinstance(value, float):
            floats.append(f", n.{name} = {_float_literal(value)}")
        elif isinstance(value, str) and _size(value) > MESSAGE_BUDGET // 4:
            long[name] = value
        else:
            short[name] = value
    first = True
    for part in _within_budget([{name: value} for name, value in short.items()]):
        properties = {name: value for item in part for name, value in item.items()}
        assignments = f"n = $properties{''.join(floats)}" if first else "n += $properties"
        tx.run(f"MERGE (n:{label} {{key: $key}}) SET {assignments}", safe({"key": node.key, "properties": properties})).consume()  # type: ignore[attr-defined]
        first = False
    for name, text in long.items():
        pieces = _pieces(text)
        tx.run(f"MATCH (n:{label} {{key: $key}}) SET n.{name} = $piece", safe({"key": node.key, "piece": pieces[0]})).consume()  # type: ignore[attr-defined]
        for piece in pieces[1:]:
            query = f"MATCH (n:{label} {{key: $key}}) SET n.{name} = n.{name} + $piece"
            tx.run(query, safe({"key": node.key, "piece": piece})).consume()  # type: ignore[attr-defined]


def _float_literal(value: float) -> str:
    """A float as Cypher text: FalkorDB rounds float parameters to six decimals, literals it keeps exact."""
    if math.isnan(value):
        return "(0.0 / 0.0)"
    if math.isinf(value):
        return "(1.0 / 0.0)" if value > 0 else "(-1.0 / 0.0)"
    return repr(value)


def _within_budget(rows: list[dict]) -> list[list[dict]]:
    """`rows` in consecutive groups whose encoded size stays under the budget."""
    groups: list[list[dict]] = [[]]
    used = 0
    for row in rows:
        size = _size(row)
        if groups[-1] and used + size > MESSAGE_BUDGET:
            groups.append([])
            used = 0
        groups[-1].append(row)
        used += size
    return groups if groups[-1] else []


def _pieces(text: str) -> list[str]:
    """`text` cut into pieces of at most a third of the budget in UTF-8 (whole characters)."""
    pieces, start, limit = [], 0, MESSAGE_BUDGET // 3
    while start < len(text):
        end = min(len(text), start + limit)
        while _size(text[start:end]) > limit:
            end = start + max(1, (end - start) // 2)
        pieces.append(text[start:end])
        start = end
    return pieces


def _label(kind: str) -> str:
    if kind not in KINDS:
        raise StoreError(f"graph store: unknown node kind `{kind}`")
    return kind


def _relation(relation: str) -> str:
    if relation not in RELATIONS:
        raise StoreError(f"graph store: unknown relation `{relation}`")
    return relation


def _reason(error: Exception) -> str:
    """The server's message; FalkorDB sends none, so fall back to the error's type."""
    message = getattr(error, "message", None) or str(error)
    return message.splitlines()[0] if message else type(error).__name__
