"""What reads the endpoint's result: its FastAPI routes' response models, checked against the fast path's rows.

The fast path returns named tuples that carry the query's columns and nothing else. The ORM
returns mapped objects on which any attribute can be read: a relationship (loaded lazily, with
one more query), a `@property` or hybrid (computed in Python), a deferred column (loaded on
access). FastAPI reads the returned rows through the route's response model, so every field
that model reads must be one of the query's keys; otherwise the swapped endpoint would answer
differently (a default instead of the value, or a validation error). A route without a response
model is refused too: FastAPI then encodes the rows themselves, an ORM object as a JSON object
and a named tuple as a JSON array.

The entity's own mapping is checked as well where the fast path would build its rows wrong: a
column mapped under another attribute name, a deferred column (listed by the statement, absent
from its SQL) and a relationship loaded with `lazy="joined"` (whose columns the ORM adds to the
SQL). Functions that no route serves are not checked here: their callers are not known.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from pydantic import AliasChoices, AliasPath, BaseModel
from sqlalchemy import inspect as mapping_of
from sqlalchemy.ext.hybrid import hybrid_property
from sqlalchemy.orm import ColumnProperty, Mapper
from sqlalchemy.sql import Select

from repoos_agent.tabular.chain import QueryChain, TabularRefusal
from repoos_agent.tabular.compiled import entity_class

CONTAINERS = (list, tuple, set, frozenset, Sequence, Iterable, Collection)
"""Response types whose arguments are the type of each returned row."""


def check_response_readers(function: Callable, chain: QueryChain, statement: Select, keys: tuple[str, ...]) -> tuple[str, ...]:
    """Refuse `function` (a `TabularRefusal` naming its file:line, the model, the field and why) when a route
    serving it would read from a row something the fast path's rows (named tuples of `keys`) do not carry;
    the paths of the routes checked."""
    entity = entity_class(statement)
    if entity is not None:
        _refuse_misbuilt_rows(chain, entity, keys)
    routes = serving_routes(function)
    for route in routes:
        where = f"{chain.path}:{chain.line}: `{chain.function}` ({', '.join(sorted(route.methods))} {route.path})"
        if route.response_model is None:
            kind = f"`{entity.__name__}` objects as JSON objects" if entity else "the ORM's rows (which it cannot encode)"
            raise TabularRefusal(
                f"{where} has no response model: FastAPI would encode {kind}, and the fast path's named tuples as JSON arrays"
            )
        for model in _row_models(route.response_model, where):
            for field, attribute in _fields_read(model, where):
                if attribute not in keys:
                    owner, reason = _why_absent(attribute, entity, statement)
                    read = f"{owner.__name__}.{attribute}" if owner else attribute
                    raise TabularRefusal(
                        f"{where}: `{model.__name__}.{field}` reads `{read}`, {reason}; "
                        f"the fast path's rows carry only {', '.join(keys)}"
                    )
    return tuple(route.path for route in routes)


def serving_routes(function: Callable) -> list[APIRoute]:
    """The routes whose endpoint is `function`, on the FastAPI apps and routers among its module's globals."""
    target = inspect.unwrap(function)
    found: dict[tuple[str, frozenset[str]], APIRoute] = {}
    for value in list(getattr(target, "__globals__", {}).values()):
        if not isinstance(value, FastAPI | APIRouter):
            continue
        for route in value.routes:
            if isinstance(route, APIRoute) and inspect.unwrap(route.endpoint) is target:
                found.setdefault((route.path, frozenset(route.methods)), route)  # a router included in an app: once
    return list(found.values())


def _refuse_misbuilt_rows(chain: QueryChain, entity: type, keys: tuple[str, ...]) -> None:
    """The entity's mapping where the fast path's rows would not be the ORM's columns under the ORM's names."""
    mapper: Mapper = mapping_of(entity)
    where = f"{chain.path}:{chain.line}: `{chain.function}` returns `{entity.__name__}`"
    for attribute in mapper.column_attrs:
        if attribute.deferred:
            raise TabularRefusal(
                f"{where}: `{entity.__name__}.{attribute.key}` is deferred: the ORM loads it on access, "
                "and the fast path would read a column its SQL does not select"
            )
        named = [column.key for column in attribute.columns if column.key in keys]
        if named and attribute.key not in named:
            raise TabularRefusal(
                f"{where}: `{entity.__name__}.{attribute.key}` is mapped to column `{named[0]}`: "
                f"the fast path's rows would name it `{named[0]}`"
            )
    for relationship in mapper.relationships:
        if relationship.lazy == "joined":
            raise TabularRefusal(
                f'{where}: `{entity.__name__}.{relationship.key}` loads with lazy="joined": the ORM adds its columns '
                "to the SQL, and the fast path's rows would not be the entity's columns"
            )


def _row_models(annotation: object, where: str) -> Iterator[type]:
    """The model each returned row is validated as, through containers, `Optional`, unions and `Annotated`."""
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        yield from _row_models(arguments[0], where)
    elif origin in (typing.Union, types.UnionType) or origin in CONTAINERS:
        for argument in arguments:
            if argument not in (type(None), Ellipsis):
                yield from _row_models(argument, where)
    elif inspect.isclass(annotation) and (issubclass(annotation, BaseModel) or dataclasses.is_dataclass(annotation)):
        yield annotation
    else:
        raise TabularRefusal(
            f"{where}: its response model `{_name(annotation)}` is not a model of fields: FastAPI would encode the rows "
            "themselves, an ORM object as a JSON object and a named tuple as a JSON array"
        )


def _fields_read(model: type, where: str) -> Iterator[tuple[str, str]]:
    """(field, attribute read from the row) for each field of `model`; a validator given the whole row is refused,
    since what it reads cannot be known."""
    if not issubclass(model, BaseModel):
        for field in dataclasses.fields(model):
            yield field.name, field.name
        return
    for name, validator in model.__pydantic_decorators__.model_validators.items():
        if validator.info.mode in ("before", "wrap"):
            raise TabularRefusal(
                f"{where}: `{model.__name__}.{name}` validates the row itself (mode={validator.info.mode!r}): "
                "what it reads is not known"
            )
    for name, field in model.model_fields.items():
        alias = field.validation_alias or field.alias
        if isinstance(alias, AliasChoices | AliasPath):
            raise TabularRefusal(f"{where}: `{model.__name__}.{name}` reads through {type(alias).__name__}: not followed")
        yield name, alias or name


def _why_absent(attribute: str, entity: type | None, statement: Select) -> tuple[type | None, str]:
    """The mapped class that has `attribute` (None: no class of the query has it) and why the fast path's row
    does not."""
    owners = [entity] if entity else [d["entity"] for d in statement.column_descriptions if d.get("entity") is not None]
    for owner in dict.fromkeys(owners):
        mapper: Mapper = mapping_of(owner)
        if attribute in mapper.relationships:
            return owner, "a relationship: serializing it would lazy-load it"
        if isinstance(mapper.all_orm_descriptors.get(attribute), hybrid_property):
            return owner, "a hybrid property, computed on the mapped object"
        if isinstance(inspect.getattr_static(owner, attribute, None), property):
            return owner, "a @property, computed on the mapped object"
        if isinstance(mapper.attrs.get(attribute), ColumnProperty):
            return owner, "a column the query does not select"
        if entity is not None and hasattr(owner, attribute):
            return owner, "an attribute of the class, not a column"
    return None, "which the query does not select"


def _name(annotation: object) -> str:
    return getattr(annotation, "__name__", None) or repr(annotation)
