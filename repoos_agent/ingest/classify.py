"""Sorting functions into tracks: what the classifiers share (a track's own claim is its registration's,
`repoos_agent.tracks`)."""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node


def walk(node: Node) -> Iterator[Node]:
    """Every node under `node` (itself included), for the classifiers' counts."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)
