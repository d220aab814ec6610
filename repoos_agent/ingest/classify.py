"""Sorting functions into tracks: which engine could ever speed them up (a track's own claim is its
registration's, `repoos_agent.tracks`; branch-heavy code is only named here until its track exists)."""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

BRANCH_NODES = frozenset({"if_statement", "elif_clause", "else_clause", "while_statement", "case_clause"})
FSM_BRANCH_THRESHOLD = 3


def walk(node: Node) -> Iterator[Node]:
    """Every node under `node` (itself included), for the classifiers' counts."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def fsm_reason(function: Node) -> str | None:
    """Branch-heavy procedural code: control flow decided by data, not by loop bounds."""
    branches = sum(1 for node in walk(function) if node.type in BRANCH_NODES)
    loops = sum(1 for node in walk(function) if node.type == "for_statement")
    if branches >= FSM_BRANCH_THRESHOLD and branches > loops:
        return f"{branches} branches against {loops} loops: control flow is decided by data"
    return None
