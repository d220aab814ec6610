"""A module's `str` constants as values: a token's kind in a tokenizer (`STRING = "string"`, `LITERALS[c]`).

Such a value is one of a few strings known before the function runs, so it is held as an int: its position among
the module's `str` constants that the source uses as values (`StrValues.values`). The positions are fixed before
lowering, from every use of such a constant in the module, so a local that holds one (`word = LITERALS[c]`) can
only hold one of them, and what reads it may go through all of them. It is modelled where that is exact:

- bound to a local from a constant's name or a module dict of them (`word = TRUE`, `word = LITERALS[c]`; a missing
  key reads past a one-entry table, so the call runs the original, which raises its `KeyError`);
- `len(word)`, read from a table of the constants' lengths;
- a slice of a `str` argument compared with one (`text[i : i + len(word)] != word`, or with a literal): the slice's
  length, then each character, as `slice_equals` does for bytes;
- an element of a tuple appended to the output (`out.append((word, i, j))`), as -1 minus its position, beside the
  characters' code points (`ir.STR`; `ir.tuple_element` builds it back);
- an interpolation of a raised message: one `raise` per constant, each message formatted when lowering.

Anything else that reads such a local (arithmetic, a comparison, a return) is refused: Python has a `str` there.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from tree_sitter import Node

from repoos_agent.fsm import ir
from repoos_agent.fsm.refusal import refuse
from repoos_agent.fsm.syntax import dicts_changed, slice_of
from repoos_agent.ingest.classify import walk
from repoos_agent.ingest.parse import text


class Lowering(Protocol):
    """What these values ask of the lowering that holds them (`lower.Lowering`), which imports this module."""

    locals: dict[str, str]
    sequences: dict[str, ir.Sequence]
    flags: set[str]
    views: Mapping[str, object]

    def dict_lookup(self, key: Node, table: dict[str | int, int], default: ir.Expr | None, assigned: frozenset[str]) -> ir.Expr: ...

    def lookup_table(self, node: Node, entries: bytes | tuple[int, ...], assigned: frozenset[str]) -> str: ...

    def slice_bounds(self, node: Node, assigned: frozenset[str]) -> tuple[str, ir.Expr, ir.Expr]: ...

    def raise_statement(self, node: Node, assigned: frozenset[str], fixed: Mapping[str, str] | None = None) -> ir.Raise: ...


READS = "`len(...)` of it, comparing a slice of a `str` with it, a tuple appended to the output and a raised message"


@dataclass
class StrValues:
    """The module's `str` constants used as values (`values`, by position), its dicts of them (each key to a
    position), and the function's locals that hold one."""

    values: tuple[str, ...] = ()
    names: dict[str, int] = field(default_factory=dict)
    dicts: dict[str, dict[str | int, int]] = field(default_factory=dict)
    locals: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, function: Node, constants: Mapping[str, object], shadowed: set[str]) -> StrValues:
        """The `str` constants of `function`'s module used anywhere as values (not only tested against with `in`
        or searched with `.find`), and its dicts whose values are all such constants or `str` literals, from the
        module's `constants`. Those `function` has as locals, `shadowed`, are not read by those names (Python reads
        the local there)."""
        strings = {name for name, value in constants.items() if type(value) is str}
        module = function
        while module.parent is not None:
            module = module.parent
        dicts = _constant_dicts(module, strings, constants)
        found: dict[str, int] = {}
        for node in walk(module):
            if node.type == "identifier" and text(node) in strings and _as_value(node):
                found.setdefault(constants[text(node)], len(found))  # type: ignore[arg-type]
        for table in dicts.values():
            for value in table.values():
                found.setdefault(value, len(found))
        return cls(
            values=tuple(found),
            names={name: found[constants[name]] for name in strings - shadowed if constants[name] in found},  # type: ignore[index]
            dicts={
                name: {key: found[value] for key, value in table.items()} for name, table in dicts.items() if name not in shadowed
            },
        )

    def value(self, lowering: Lowering, node: Node, assigned: frozenset[str]) -> ir.Expr | None:
        """The position `node` gives where it is a `str` constant (by name, or a dict of them read at a key) or a
        local holding one; None where it is not."""
        line = node.start_point[0] + 1
        name = text(node)
        if node.type == "identifier" and name in self.locals:
            if name not in assigned:
                raise refuse(node, f"`{name}` may be read before it is assigned (Python raises UnboundLocalError); assign it first")
            return ir.Local(name, ir.INT, line)
        if node.type == "identifier" and name in self.names:
            return ir.Const(self.names[name], line)
        owner = text(node.child_by_field_name("value")) if node.type == "subscript" else None
        if owner in self.dicts and len(node.children_by_field_name("subscript")) == 1:
            return lowering.dict_lookup(node.child_by_field_name("subscript"), self.dicts[owner], None, assigned)
        return None

    def assign(self, lowering: Lowering, left: Node, right: Node, operator: str | None, assigned: frozenset[str]) -> ir.Stmt | None:
        """`word = TRUE` or `word = LITERALS[c]`: the constant's position bound to `word`, which holds one at every
        assignment; None where neither side is such a `str`."""
        if left.type != "identifier":
            return None
        name = text(left)
        value = self.value(lowering, right, assigned) if operator is None else None
        if value is None:
            if name in self.locals:
                raise refuse(left, f"`{name}` holds a `str` constant elsewhere; keep one type per name")
            return None
        if name in self.locals:
            return ir.Assign(name, value, left.start_point[0] + 1)
        if name in lowering.locals or name in lowering.sequences or name in lowering.flags or name in lowering.views:
            raise refuse(left, f"`{name}` holds another type elsewhere and a `str` here; keep one type per name")
        lowering.locals[name] = ir.INT
        self.locals.add(name)
        return ir.Assign(name, value, left.start_point[0] + 1)

    def refuse_read(self, node: Node) -> None:
        """A local holding a `str` constant read where Python has a `str` and the lowering would have an int."""
        if text(node) in self.locals:
            raise refuse(node, f"`{text(node)}` holds a `str` constant: only {READS} are modelled")

    def refuse_bound(self, left: Node, value: ir.Expr) -> None:
        """A name bound other than by `assign` (unpacked, chained, a helper's result): neither it nor the value may
        be a `str` constant's, which only `assign` binds."""
        self.refuse_read(left)
        if isinstance(value, ir.Local) and value.name in self.locals:
            raise refuse(left, f"`{text(left)}` would hold the `str` constant of `{value.name}`: bind it alone")

    def length(self, lowering: Lowering, node: Node, argument: Node, assigned: frozenset[str]) -> ir.Expr | None:
        """`len(word)`: the constant's length, or read from a table of them by the local's position."""
        value = self.value(lowering, argument, assigned)
        if value is None:
            return None
        if isinstance(value, ir.Const):
            return ir.Const(len(self.values[value.value]), value.line)
        table = lowering.lookup_table(node, tuple(len(each) for each in self.values), assigned)
        return ir.Load(table, value, ir.INT, value.line)

    def element(self, lowering: Lowering, node: Node, assigned: frozenset[str]) -> ir.Expr | None:
        """A tuple element that is a `str` constant: -1 minus its position (a character is its code point)."""
        value = self.value(lowering, node, assigned)
        if value is None:
            return None
        line = node.start_point[0] + 1
        return ir.Const(-1 - value.value, line) if isinstance(value, ir.Const) else ir.Binary("-", ir.Const(-1, line), value, line)

    def slice_equals(self, lowering: Lowering, first: Node, second: Node, assigned: frozenset[str]) -> ir.Expr | None:
        """`text[i:j] == word` (or a `str` constant or literal) on a `str` argument: the slice's length is the
        string's, then each character equal, left to right (each load runs only where the length matched); for a
        local, that for the constant it holds. None where the slice is not of a `str` argument."""
        sliced, other = (first, second) if slice_of(first) is not None else (second, first)
        owner = slice_of(sliced)[0]  # type: ignore[index]
        if owner.type != "identifier" or text(owner) not in lowering.sequences or lowering.sequences[text(owner)].kind != ir.TEXT:
            return None
        line = sliced.start_point[0] + 1
        literal = _str_literal(other)
        value = None if literal is not None else self.value(lowering, other, assigned)
        if literal is None and value is None:
            raise refuse(other.parent, f"`{text(other.parent)[:60]}`: a slice of a `str` is compared only with a `str`")
        name, start, stop = lowering.slice_bounds(sliced, assigned)
        if literal is not None or isinstance(value, ir.Const):
            return _equals(name, start, stop, literal if literal is not None else self.values[value.value], line)  # type: ignore[union-attr]
        result: ir.Expr | None = None
        for position, string in enumerate(self.values):
            held = ir.Compare("==", value, ir.Const(position, line), line)  # type: ignore[arg-type]
            arm = ir.Logical("and", held, _equals(name, start, stop, string, line), line)
            result = arm if result is None else ir.Logical("or", result, arm, line)
        return result

    def raised(self, lowering: Lowering, node: Node, assigned: frozenset[str]) -> list[ir.Stmt] | None:
        """`raise ValueError(f"... {word}")`: one `raise` for each constant `word` may hold, chosen by an `if`
        ladder, its message formatted with that constant; None where no local holding a `str` is interpolated."""
        names = list(
            dict.fromkeys(
                text(field.named_children[0])
                for field in walk(node)
                if field.type == "interpolation" and text(field.named_children[0]) in self.locals
            )
        )
        if not names:
            return None
        for name in names:
            self.value(lowering, next(n for n in walk(node) if n.type == "identifier" and text(n) == name), assigned)
        line = node.start_point[0] + 1

        def ladder(fixed: Mapping[str, str], rest: list[str]) -> list[ir.Stmt]:
            if not rest:
                return [lowering.raise_statement(node, assigned, fixed)]
            held = ir.Local(rest[0], ir.INT, line)
            arms = [ladder({**fixed, rest[0]: string}, rest[1:]) for string in self.values]
            out = arms[-1]  # the last constant: the local holds one of them
            for position in reversed(range(len(arms) - 1)):
                out = [ir.If(ir.Compare("==", held, ir.Const(position, line), line), tuple(arms[position]), tuple(out), line)]
            return out

        return ladder({}, names)


def merged_shape(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...] | None:
    """One shape for a list's tuples from two appends' (None where they differ): a position holding a character at
    one and a `str` constant at another holds a `STR`, which a character's code point is as it is."""
    if len(first) != len(second):
        return None
    merged = []
    for one, other in zip(first, second, strict=True):
        if one != other and {one, other} != {ir.CHAR, ir.STR}:
            return None
        merged.append(one if one == other else ir.STR)
    return tuple(merged)


def formatted(value: str, conversion: int, spec: str) -> str:
    """An f-string interpolation of a `str` constant, as Python formats it (`!r`, `!a`, a format spec)."""
    converted = {ord("r"): repr, ord("a"): ascii}.get(conversion, str)(value)
    return format(converted, spec)


def _equals(name: str, start: ir.Expr, stop: ir.Expr, string: str, line: int) -> ir.Expr:
    length = ir.Binary("max", ir.Binary("-", stop, start, line), ir.Const(0, line), line)
    result: ir.Expr = ir.Compare("==", length, ir.Const(len(string), line), line)
    for offset, character in enumerate(string):
        at = ir.Load(name, ir.Binary("+", start, ir.Const(offset, line), line), ir.CHAR, line)
        result = ir.Logical("and", result, ir.Compare("==", at, ir.Const(ord(character), line), line), line)
    return result


def _str_literal(node: Node) -> str | None:
    if node.type != "string" or any(child.type == "interpolation" for child in node.named_children):
        return None
    value = ast.literal_eval(text(node))
    return value if type(value) is str else None


def _as_value(node: Node) -> bool:
    """Whether a module `str` constant's name is used as a value there: not where it is bound, tested against with
    `in`, or a method's object (`DIGITS.find(c)`)."""
    parent = node.parent
    if parent is None:
        return False
    if parent.type == "assignment" and parent.child_by_field_name("left") == node:
        return False
    if parent.type == "attribute" and parent.child_by_field_name("object") == node:
        return False
    if parent.type == "comparison_operator" and node != parent.named_children[0]:
        operators = [" ".join(text(child).split()) for child in parent.children if not child.is_named]
        return operators not in (["in"], ["not in"])
    return True


def _constant_dicts(module: Node, strings: set[str], constants: Mapping[str, object]) -> dict[str, dict[str | int, str]]:
    """The module's dicts bound once at its top level, never changed, of one-character `str` (or int) keys to `str`
    constants by name or `str` literals."""
    bound: dict[str, int] = {}
    found: dict[str, dict[str | int, str]] = {}
    for statement in module.named_children:
        assignment = statement.named_children[0] if statement.type == "expression_statement" else None
        if assignment is None or assignment.type != "assignment" or assignment.child_by_field_name("left").type != "identifier":
            continue
        name, right = text(assignment.child_by_field_name("left")), assignment.child_by_field_name("right")
        bound[name] = bound.get(name, 0) + 1
        if right is None or right.type != "dictionary" or not right.named_children:
            continue
        table: dict[str | int, str] = {}
        for pair in right.named_children:
            key_node, value_node = pair.child_by_field_name("key"), pair.child_by_field_name("value")
            if pair.type != "pair" or key_node.type not in ("string", "integer"):
                break
            key = ast.literal_eval(text(key_node))
            value = constants.get(text(value_node)) if value_node.type == "identifier" and text(value_node) in strings else None
            value = _str_literal(value_node) if value is None else value
            if not ((type(key) is str and len(key) == 1) or type(key) is int) or type(value) is not str:
                break
            table[key] = value
        else:
            if len({type(key) for key in table}) == 1:
                found[name] = table
    changed = dicts_changed(module)
    return {name: table for name, table in found.items() if bound[name] == 1 and name not in changed}
