"""Reading Python source with tree-sitter: the syntax tree and syntax errors."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import tree_sitter_python
from tree_sitter import Language, Node, Parser, Tree

from repoos_agent.errors import SourceError, SourceLocation


@cache
def _parser() -> Parser:
    return Parser(Language(tree_sitter_python.language()))


def location(path: str, node: Node) -> SourceLocation:
    row, column = node.start_point
    return SourceLocation(path, row + 1, column + 1)


def text(node: Node) -> str:
    return node.text.decode("utf-8") if node.text is not None else ""


def slice_parts(node: Node) -> tuple[Node | None, Node | None, Node | None]:
    """A `slice` node's start, stop and step, None where left out (`x[:n]`, `x[::2]`)."""
    parts: list[Node | None] = [None, None, None]
    slot = 0
    for child in node.children:
        if child.type == ":":
            slot += 1
        elif child.is_named and child.type != "comment":
            parts[slot] = child
    return parts[0], parts[1], parts[2]


def read_source(path: str | Path) -> str:
    """The file's text, or a `SourceError` that says why it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SourceError(str(path), "no such file") from None
    except IsADirectoryError:
        raise SourceError(str(path), "is a directory, not a Python file") from None
    except UnicodeDecodeError as exc:
        raise SourceError(str(path), f"not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise SourceError(str(path), exc.strerror or "cannot be read") from None


def parse_source(source: str, path: str) -> Tree:
    """Parse `source`; a syntax error raises `SourceError` at its first bad token."""
    tree = _parser().parse(source.encode("utf-8"))
    if tree.root_node.has_error:
        bad = _first_error(tree.root_node)
        what = "missing " + bad.type if bad.is_missing else f"unexpected `{text(bad)[:40]}`"
        raise SourceError(location(path, bad), f"syntax error: {what}")
    return tree


def _first_error(node: Node) -> Node:
    for child in node.children:
        if child.is_error or child.is_missing:
            return child
        if child.has_error:
            return _first_error(child)
    return node


def functions(tree: Tree) -> list[Node]:
    """Top-level function definitions (also under decorators), in source order."""
    found = []
    for node in tree.root_node.children:
        if node.type == "decorated_definition":
            node = node.child_by_field_name("definition") or node
        if node.type == "function_definition":
            found.append(node)
    return found
