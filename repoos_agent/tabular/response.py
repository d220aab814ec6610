"""An endpoint's result as its client receives it, for comparing two ways of computing it.

A route of a FastAPI app or router in the endpoint's module (`readers.serving_routes`) is
serialized as FastAPI does: validated into its response model (`from_attributes`, as FastAPI
validates ORM objects) and dumped in JSON mode. Any other function's rows are compared as their columns' keys and each value's
`repr`, which keeps its type (a Decimal is not a float, a date is not text).
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi.encoders import jsonable_encoder
from pydantic import TypeAdapter
from sqlalchemy import inspect as mapped

from repoos_agent.tabular.readers import serving_routes


def response_of(function: Callable, result: object) -> object:
    """`result` of `function` as JSON-ready data: its (first) route's response, or its rows by key and `repr`."""
    routes = serving_routes(function)
    if not routes:
        return [_row(row) for row in result]  # type: ignore[union-attr]
    route = routes[0]
    if route.response_model is None:
        return jsonable_encoder(result)
    adapter = TypeAdapter(route.response_model)
    return adapter.dump_python(
        adapter.validate_python(result, from_attributes=True), mode="json", by_alias=route.response_model_by_alias,
        exclude_unset=route.response_model_exclude_unset, exclude_defaults=route.response_model_exclude_defaults,
        exclude_none=route.response_model_exclude_none,
    )  # fmt: skip


def _row(row: object) -> dict[str, str]:
    """A row (a named tuple or SQLAlchemy `Row`) or a mapped object, as its keys and each value's `repr`."""
    fields = getattr(row, "_fields", None)
    if fields is not None:
        return {key: repr(value) for key, value in zip(fields, row, strict=True)}  # type: ignore[call-overload]
    return {attribute.key: repr(getattr(row, attribute.key)) for attribute in mapped(row).mapper.column_attrs}
