"""Questions about the syntax tree that the lowering and its helper modules both ask: what a slice is, and which of
a module's names its code changes in place."""

from __future__ import annotations

from tree_sitter import Node

from repoos_agent.fsm.refusal import refuse
from repoos_agent.ingest.classify import walk
from repoos_agent.ingest.parse import text


def dicts_changed(module: Node) -> set[str]:
    """The names the module changes in place: an element assigned or deleted, or a method called other than a
    read (a dict changed there is not a constant)."""
    changed = set()
    for node in walk(module):
        if node.type == "subscript" and node.parent is not None and node.parent.type in ("assignment", "augmented_assignment"):
            if node.parent.child_by_field_name("left") == node:
                changed.add(text(node.child_by_field_name("value")))
        elif node.type == "subscript" and node.parent is not None and node.parent.type == "delete_statement":
            changed.add(text(node.child_by_field_name("value")))
        elif node.type == "attribute" and text(node.child_by_field_name("attribute")) not in ("get", "keys", "values", "items"):
            changed.add(text(node.child_by_field_name("object")))
    return changed


def slice_of(node: Node) -> tuple[Node, Node | None, Node | None] | None:
    """`data[i:j]` as its sequence and its bounds (None where left out); a slice with a step is not one."""
    if node.type != "subscript" or len(node.children_by_field_name("subscript")) != 1:
        return None
    piece = node.child_by_field_name("subscript")
    if piece.type != "slice":
        return None
    bounds: list[Node | None] = [None]
    for child in piece.children:
        if child.type == ":":
            bounds.append(None)
        else:
            bounds[-1] = child
    if len(bounds) > 2 and bounds[2] is not None:
        raise refuse(node, f"`{text(node)}`: a slice with a step is not modelled")
    return node.child_by_field_name("value"), bounds[0], bounds[1]
