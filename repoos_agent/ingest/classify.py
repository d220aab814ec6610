"""Sorting functions into tracks: which engine could ever speed them up."""

from __future__ import annotations

from tree_sitter import Node

from repoos_agent.ingest.parse import text

TABULAR_METHODS = frozenset({"query", "filter", "filter_by", "group_by", "order_by", "execute", "select", "where", "join"})
BRANCH_NODES = frozenset({"if_statement", "elif_clause", "else_clause", "while_statement", "case_clause"})
FSM_BRANCH_THRESHOLD = 3
NUMERIC_MODULES = frozenset({"np", "numpy", "math"})


def _walk(node: Node):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def tabular_reason(function: Node) -> str | None:
    """ORM/SQL-style code: method chains like `.query(...).filter(...)`."""
    methods = []
    for node in _walk(function):
        if node.type == "call":
            callee = node.child_by_field_name("function")
            if callee is not None and callee.type == "attribute":
                if text(callee.child_by_field_name("object")) in NUMERIC_MODULES:
                    continue  # `np.where(c, x, y)` is an elementwise choice, not a query
                method = text(callee.child_by_field_name("attribute"))
                if method in TABULAR_METHODS:
                    methods.append(method)
    if methods:
        return "query-style calls (" + ", ".join(f".{m}()" for m in sorted(set(methods))) + "): a database plan, not a loop nest"
    return None


def fsm_reason(function: Node) -> str | None:
    """Branch-heavy procedural code: control flow decided by data, not by loop bounds."""
    branches = sum(1 for node in _walk(function) if node.type in BRANCH_NODES)
    loops = sum(1 for node in _walk(function) if node.type == "for_statement")
    if branches >= FSM_BRANCH_THRESHOLD and branches > loops:
        return f"{branches} branches against {loops} loops: control flow is decided by data"
    return None
