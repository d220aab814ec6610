"""The endpoint's query as SQL, compiled by SQLAlchemy for the live dialect, with its values as bound parameters.

The chain's source is evaluated in the endpoint's own module, with the session parameter bound
to the live session and every other parameter bound to a SQLAlchemy `bindparam` of its name:
the result is the ORM's own statement, which SQLAlchemy's compiler turns into the dialect's SQL
with placeholders. No SQL is written here, and no value is ever formatted into it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sqlalchemy import bindparam
from sqlalchemy.orm import Query, Session
from sqlalchemy.sql import Select

from repoos_agent.tabular.chain import QueryChain, TabularRefusal


@dataclass(frozen=True)
class CompiledQuery:
    """One SELECT: the dialect's SQL text, the endpoint parameters it binds, and what each result column is."""

    sql: str
    parameters: tuple[str, ...]  # endpoint parameters, by the placeholder names the SQL uses
    keys: tuple[str, ...]  # the attribute each result column fills
    entity: str | None  # the mapped class an entity query returns, by name (None: rows of a projection)
    ordered: bool  # the query has ORDER BY: results compare in order
    tables: tuple[str, ...]  # the tables it reads, for the schema digest
    dialect: str  # and driver, `mysql+pymysql`: the decoders that verification saw
    positional: bool = False  # the driver takes a sequence in `parameters` order (mysqlclient), not a mapping (PyMySQL)

    def bound(self, values: Mapping[str, object]) -> tuple | dict:
        """The endpoint's values as the driver binds them."""
        if self.positional:
            return tuple(values[name] for name in self.parameters)
        return {name: values[name] for name in self.parameters}


def build_statement(chain: QueryChain, function: Callable, session: Session) -> Select:
    """`chain`'s SELECT, built by the ORM in `function`'s module: the session bound to `session`, every other
    parameter to a `bindparam` of its name."""
    namespace = dict(function.__globals__)
    namespace[chain.session] = session
    namespace.update({name: bindparam(name) for name in chain.parameters})
    try:
        built = eval(compile(f"({chain.statement})", f"{chain.path}:{chain.function}", "eval"), namespace)
    except Exception as error:  # the user's own expression: any failure is a refusal, not a crash
        raise TabularRefusal(f"{chain.path}:{chain.line}: building the query of `{chain.function}` failed: {error}") from None
    statement = built.statement if isinstance(built, Query) else built
    if not isinstance(statement, Select):
        raise TabularRefusal(f"{chain.path}:{chain.line}: `{chain.function}` does not build a SELECT")
    return statement


def compile_query(chain: QueryChain, function: Callable, session: Session) -> CompiledQuery:
    """Build `chain`'s statement in `function`'s module and compile it for `session`'s dialect."""
    statement = build_statement(chain, function, session)
    dialect = session.get_bind().dialect
    compiled = statement.compile(dialect=dialect)
    _refuse_converted_types(chain, statement, dialect)
    entity = _entity(statement, chain)
    keys = tuple(column.key for column in statement.selected_columns)
    tables = tuple(sorted({table.name for table in statement.get_final_froms() for table in _tables(table)}))
    placeholders = tuple(compiled.positiontup or compiled.params)
    unknown = [name for name in placeholders if name not in chain.parameters]
    if unknown:
        raise TabularRefusal(f"{chain.path}:{chain.line}: the query binds values that are not parameters: {', '.join(unknown)}")
    ordered = bool(statement._order_by_clauses)
    return CompiledQuery(compiled.string, placeholders, keys, entity, ordered, tables, driver_of(dialect), compiled.positional)


def entity_class(statement: Select) -> type | None:
    """The mapped class of an entity query (`db.query(Model)`), or None for a projection."""
    descriptions = statement.column_descriptions
    if (
        len(descriptions) == 1
        and inspect.isclass(descriptions[0].get("type"))
        and descriptions[0].get("entity") is descriptions[0]["type"]
    ):
        return descriptions[0]["type"]
    return None


def _entity(statement: Select, chain: QueryChain) -> str | None:
    """The name of the entity an entity query returns; a query of an entity and other columns is refused."""
    entity = entity_class(statement)
    if entity is not None:
        return entity.__name__
    for description in statement.column_descriptions:
        if description.get("expr") is description.get("entity") and description.get("entity") is not None:
            raise TabularRefusal(f"{chain.path}:{chain.line}: a query of an entity and other columns is not compiled")
    return None


def _refuse_converted_types(chain: QueryChain, statement: Select, dialect) -> None:
    """A column whose type converts values in Python (a TypeDecorator, JSON, an Enum) would come back raw from the
    driver: refused, so the fast path never returns a value the ORM would have converted."""
    for column in statement.selected_columns:
        processor = column.type.result_processor(dialect, None)
        if processor is not None and type(column.type).__name__ not in ("Numeric", "DECIMAL", "NUMERIC"):
            raise TabularRefusal(
                f"{chain.path}:{chain.line}: column `{column.key}` ({column.type}) converts its values in Python; not compiled"
            )


def _tables(from_clause) -> list:
    found = []
    for element in [from_clause, *getattr(from_clause, "_from_objects", [])]:
        if hasattr(element, "name") and hasattr(element, "columns") and element not in found:
            found.append(element)
        for side in ("left", "right"):
            if hasattr(element, side):
                found += _tables(getattr(element, side))
    return found


def driver_of(dialect) -> str:
    """`mysql+pymysql`: the dialect and the DB-API driver whose decoders made the rows verification compared."""
    return f"{dialect.name}+{dialect.driver}"
