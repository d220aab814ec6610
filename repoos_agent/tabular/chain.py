"""An endpoint's ORM query, read from its source: the chain of calls and nothing else.

The fast path replaces the whole endpoint, so the endpoint must be exactly a query: one
`return` of `db.query(...)` (or `db.scalars(select(...))`) with `filter`/`where`, `join`,
`order_by`, `group_by`, `limit` and `offset`, ending in `.all()`. Its other parameters are the
query's bound values. Anything else (a statement before the return, a method outside that
list, a use of the results) is refused with its line and column: the function would do more
than the query, and the fast path would not do it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from tree_sitter import Node

from repoos_agent.errors import RepoosError
from repoos_agent.ingest.parse import functions, location, parse_source, read_source, text

CHAIN_METHODS = ("filter", "where", "join", "outerjoin", "order_by", "group_by", "limit", "offset")
"""What a chain may apply between its start and `.all()`: each is a clause of one SELECT."""


class TabularRefusal(RepoosError):
    """An endpoint the tabular track does not compile, with `file:line:column: reason`."""


@dataclass(frozen=True)
class QueryChain:
    """The query an endpoint returns, as its source writes it."""

    path: str
    function: str
    line: int
    session: str  # the parameter that is the SQLAlchemy session
    parameters: tuple[str, ...]  # the other parameters: the query's bound values
    statement: str  # the source of the query without its terminal call (a Query or a Select)
    style: str  # "query" (`db.query(...)...`) or "select" (`db.scalars(select(...)...)`)
    methods: tuple[str, ...]  # the clauses, in order
    source_digest: str  # of the function's source: an edited function is not the one verified


def read_chain(path: str | Path, function: str) -> QueryChain:
    """The query chain of `function` in `path`, or a `TabularRefusal` naming the place and the reason."""
    source = read_source(path)
    tree = parse_source(source, str(path))
    found = [node for node in functions(tree) if text(node.child_by_field_name("name")) == function]
    if not found:
        raise TabularRefusal(f"{path}: no top-level function named `{function}`")
    return chain_of(found[0], str(path))


def chain_of(node: Node, path: str) -> QueryChain:
    name = text(node.child_by_field_name("name"))
    parameters = _parameters(node, path)
    body = [child for child in node.child_by_field_name("body").named_children if child.type != "comment"]
    if body and body[0].type == "expression_statement" and body[0].named_children[0].type == "string":
        body = body[1:]
    if len(body) != 1 or body[0].type != "return_statement" or not body[0].named_children:
        where = body[0] if body else node
        raise _refusal(
            path, where, f"`{name}` must be one `return` of a query ending in `.all()`: the fast path replaces the whole function"
        )
    expression = _unparenthesised(body[0].named_children[0])
    terminal = _method(expression)
    if terminal != "all" or expression.child_by_field_name("arguments").named_children:
        raise _refusal(path, expression, "the query must end in `.all()`")
    inner = expression.child_by_field_name("function").child_by_field_name("object")
    inner = _unparenthesised(inner)
    if _method(inner) == "scalars":
        return _select_chain(name, node, inner, parameters, path)
    methods: list[str] = []
    current = inner
    while _method(current) in CHAIN_METHODS:
        methods.append(_method(current))
        current = _unparenthesised(current.child_by_field_name("function").child_by_field_name("object"))
    if _method(current) != "query":
        raise _refusal(
            path, current, f"`.{_method(current) or text(current)[:40]}` is not a query clause (known: {', '.join(CHAIN_METHODS)})"
        )
    session = text(current.child_by_field_name("function").child_by_field_name("object"))
    if session not in parameters:
        raise _refusal(path, current, f"`{session}.query` must be called on a parameter of `{name}` (the session)")
    row, _ = node.start_point
    return QueryChain(
        path, name, row + 1, session, tuple(p for p in parameters if p != session), text(inner), "query",
        tuple(reversed(methods)), _digest(node),
    )  # fmt: skip


def _select_chain(name: str, node: Node, scalars: Node, parameters: list[str], path: str) -> QueryChain:
    """`db.scalars(select(M).where(...)...).all()`: the 2.0 style."""
    session = text(scalars.child_by_field_name("function").child_by_field_name("object"))
    if session not in parameters:
        raise _refusal(path, scalars, f"`{session}.scalars` must be called on a parameter of `{name}` (the session)")
    arguments = scalars.child_by_field_name("arguments").named_children
    if len(arguments) != 1:
        raise _refusal(path, scalars, "`scalars` takes one `select(...)`")
    methods: list[str] = []
    current = _unparenthesised(arguments[0])
    while _method(current) in CHAIN_METHODS:
        methods.append(_method(current))
        current = _unparenthesised(current.child_by_field_name("function").child_by_field_name("object"))
    if current.type != "call" or text(current.child_by_field_name("function")) not in ("select", "sqlalchemy.select"):
        raise _refusal(path, current, f"`{text(current)[:40]}` is not a `select(...)` with query clauses")
    row, _ = node.start_point
    return QueryChain(
        path, name, row + 1, session, tuple(p for p in parameters if p != session), text(arguments[0]), "select",
        tuple(reversed(methods)), _digest(node),
    )  # fmt: skip


def _parameters(node: Node, path: str) -> list[str]:
    names = []
    for child in node.child_by_field_name("parameters").named_children:
        if child.type == "identifier":
            names.append(text(child))
        elif child.type in ("typed_parameter", "default_parameter", "typed_default_parameter"):
            target = child.child_by_field_name("name") or child.named_children[0]
            names.append(text(target))
        else:
            raise _refusal(path, child, f"parameter `{text(child)}`: only plain named parameters are compiled")
    return names


def _method(node: Node) -> str | None:
    if node.type != "call":
        return None
    callee = node.child_by_field_name("function")
    if callee.type != "attribute":
        return None
    return text(callee.child_by_field_name("attribute"))


def _unparenthesised(node: Node) -> Node:
    while node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    return node


def _digest(node: Node) -> str:
    return hashlib.sha256(text(node).encode()).hexdigest()[:16]


def _refusal(path: str, node: Node, reason: str) -> TabularRefusal:
    where = location(path, node)
    return TabularRefusal(f"{path}:{where.line}:{where.column}: {reason}")
