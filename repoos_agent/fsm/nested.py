"""Nested lists of strings as an output: `rows.append(fields)`, `fields.append("".join(field))` or
`fields.append("")`, `field.append(c)`, each list rebound to `[]` to start a new element, the outermost returned.

C has no lists of lists, so each list of the chain is one flat stream of its own, written by `Append` only: the
list of characters' stream holds code points; every other list's stream holds pairs of positions, each pair one
element (a string as the start and end of its characters in the characters' stream, a list as the start and end of
its elements' pairs in the stream below). A list other than the returned one is the tail of its stream from a mark,
a local the lowering adds: `fields = []` sets the mark to the stream's length, so what a dropped list held stays in
the stream, and no pair points at it. The returned list is its whole stream, emptied by `rows = []`. Nothing is
copied while the function runs; the call builds the Python lists back from the streams (`rebuild`), and the
streams grow at run time as any output does.

Exact only while no list is shared: `rows.append(fields)` puts the list object itself into `rows`, so a later
`fields.append(...)` would change the row already appended, and a second `rows.append(fields)` would put one list in
twice. Both are refused at their line (`sealed_reuse`): once appended, a list is only rebound. A string is a value,
so a list of characters may go on growing after its join.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from tree_sitter import Node

from repoos_agent.fsm import ir
from repoos_agent.fsm.refusal import FsmRefusal, refuse
from repoos_agent.ingest.classify import walk
from repoos_agent.ingest.parse import text


def mark(name: str) -> str:
    """The local holding where the list `name` starts in its stream (a leading digit: no Python name has it)."""
    return f"0_{name}_start"


@dataclass(frozen=True)
class Nest:
    """A function's nested output: its lists, the returned one first, the list of characters last."""

    chain: tuple[str, ...]

    @property
    def root(self) -> str:
        return self.chain[0]

    @property
    def characters(self) -> str:
        return self.chain[-1]

    def bound(self, left: Node, right: Node, operator: str | None) -> ir.Assign:
        """`fields = []`: a new list starts where its stream ends; `rows = []` empties the returned stream."""
        name, line = text(left), left.start_point[0] + 1
        if operator is not None or right.type != "list" or right.named_children:
            raise refuse(left, f"`{name}` is a list of the nested output `{self.root}`: only `{name} = []` binds it")
        if name == self.root:
            return ir.Assign(name, ir.Const(0, line), line)
        return ir.Assign(mark(name), ir.Length(name, line), line)

    def element(self, owner: str, argument: Node, assigned: frozenset[str]) -> list[ir.Stmt]:
        """`rows.append(fields)`, `fields.append("".join(field))` or `fields.append("")`: the element's start and
        end appended to the owner's stream."""
        child, line = self.chain[self.chain.index(owner) + 1], argument.start_point[0] + 1
        self.ready(argument, owner, assigned)
        named = _joined(argument) if child == self.characters else text(argument) if argument.type == "identifier" else None
        if child == self.characters and _string(argument) == "":
            start: ir.Expr = ir.Const(0, line)
            end: ir.Expr = ir.Const(0, line)
        elif named == child:
            self.ready(argument, child, assigned)
            start, end = ir.Local(mark(child), ir.INT, line), ir.Length(child, line)
        else:
            allowed = f'`"".join({child})` or `""`' if child == self.characters else f"`{child}`"
            raise refuse(argument, f"`{owner}.append({text(argument)[:40]})`: only {allowed} is appended to `{owner}`")
        return [ir.Append(owner, start, line), ir.Append(owner, end, line)]

    def returned(self, value: Node, assigned: frozenset[str]) -> str:
        """`return rows`: the nested output, only the outermost list."""
        if text(value) != self.root:
            raise refuse(value, f"`return {text(value)}`: `{text(value)}` is inside the nested output `{self.root}`")
        self.ready(value, self.root, assigned)
        return ir.NESTED

    def ready(self, node: Node, name: str, assigned: frozenset[str]) -> None:
        if name not in assigned:
            raise refuse(node, f"`{name}` may be used before `{name} = []` runs; create it first")


def find_nest(function: Node, parameters: Collection[str]) -> Nest | None:
    """The chain of lists ending in a list of strings joined from one list of characters (`X.append("".join(C))`),
    each list appended into the next (`Y.append(X)`); None where no list is appended a join."""
    appends = []
    for node in walk(function.child_by_field_name("body")):
        callee = node.child_by_field_name("function") if node.type == "call" else None
        if callee is None or callee.type != "attribute" or text(callee.child_by_field_name("attribute")) != "append":
            continue
        owner, arguments = callee.child_by_field_name("object"), node.child_by_field_name("arguments").named_children
        if owner.type == "identifier" and len(arguments) == 1:
            appends.append((text(owner), arguments[0]))
    appends.sort(key=lambda pair: pair[1].start_byte)
    joins = [(owner, joined, argument) for owner, argument in appends if (joined := _joined(argument)) is not None]
    if not joins:
        return None
    owner, characters, _ = joins[0]
    for other, joined, argument in joins[1:]:
        if (other, joined) != (owner, characters):
            raise refuse(
                argument,
                f"`{other}.append({text(argument)[:40]})`: one list of strings joined from one list of characters "
                f'(here `{owner}.append("".join({characters}))`) is modelled per function',
            )
    chain = [characters, owner]
    while parents := sorted({o for o, argument in appends if argument.type == "identifier" and text(argument) == chain[-1]}):
        at = next(argument for o, argument in appends if o == parents[-1] and text(argument) == chain[-1])
        if len(parents) > 1:
            raise refuse(at, f"`{chain[-1]}` is appended to `{parents[0]}` and to `{parents[1]}`: a list goes into one list")
        if parents[0] in chain:
            raise refuse(at, f"`{parents[0]}.append({chain[-1]})`: a list inside itself is not modelled")
        chain.append(parents[0])
    for name in chain:
        if name in parameters:
            raise refuse(function, f"`{name}` is an argument: only local lists created with `[]` are built as nested output")
    return Nest(tuple(reversed(chain)))


def sealed_reuse(function: ir.Function) -> None:
    """Refuses, at its line, a list of the nest changed or appended again after it was appended into its parent
    and before it is rebound: Python's result would share that list."""
    if not function.nested:
        return
    chain = function.nested
    inner = {mark(name): (name, parent) for parent, name in itertools.pairwise(chain[:-1])}
    _Sealing(inner).block(function.body, frozenset())


class _Sealing:
    """The lists that may be appended and not yet rebound at each statement, through branches and loops (to a
    fixed point), as the source runs."""

    def __init__(self, inner: dict[str, tuple[str, str]]) -> None:
        self.inner = inner
        self.parents = dict(inner.values())
        self.exits: list[list[frozenset[str]]] = []

    def block(self, statements: Sequence[ir.Stmt], sealed: frozenset[str] | None) -> frozenset[str] | None:
        for statement in statements:
            if sealed is None:
                return None
            sealed = self.statement(statement, sealed)
        return sealed

    def statement(self, statement: ir.Stmt, sealed: frozenset[str]) -> frozenset[str] | None:
        if isinstance(statement, ir.Append):
            if statement.sequence in sealed:
                name = statement.sequence
                raise FsmRefusal(
                    statement.line,
                    f"`{name}` is changed after `{self.parents[name]}.append({name})`, which shares it; "
                    f"start a new list with `{name} = []` first",
                )
            value = statement.value
            if isinstance(value, ir.Local) and value.name in self.inner and self.inner[value.name][1] == statement.sequence:
                name, parent = self.inner[value.name]
                if name in sealed:
                    raise FsmRefusal(
                        statement.line, f"`{parent}.append({name})` again before `{name} = []`: one list would be in twice"
                    )
                return sealed | {name}
            return sealed
        if isinstance(statement, ir.Assign):
            return sealed - {self.inner[statement.name][0]} if statement.name in self.inner else sealed
        if isinstance(statement, ir.If):
            return _union(self.block(statement.then, sealed), self.block(statement.orelse, sealed))
        if isinstance(statement, ir.Switch):
            return _union(*(self.block(body, sealed) for _, body in statement.cases), self.block(statement.default, sealed))
        if isinstance(statement, ir.While | ir.ForRange | ir.ForEach):
            return self.loop(statement.body, sealed)
        if isinstance(statement, ir.Break | ir.Continue):
            self.exits[-1].append(sealed)
            return None
        if isinstance(statement, ir.Return | ir.Raise):
            return None
        return sealed

    def loop(self, body: tuple[ir.Stmt, ...], sealed: frozenset[str]) -> frozenset[str]:
        """The state after a loop: its head's, once a pass adds nothing (the test may fail there), or a `break`'s.
        A `continue`'s state goes to the head, as does a `break`'s, conservatively (they are not told apart)."""
        head = sealed
        while True:
            self.exits.append([])
            end = self.block(body, head)
            exits = self.exits.pop()
            widened = _union(head, end, *exits)
            if widened == head:
                return head
            head = widened  # type: ignore[assignment]


def _union(*states: frozenset[str] | None) -> frozenset[str] | None:
    reached = [state for state in states if state is not None]
    return frozenset().union(*reached) if reached else None


def rebuild(characters: str, streams: Sequence[Sequence[int]]) -> list:
    """The nested lists from their streams (the returned list's first, the list of strings' last) and the characters
    the strings' pairs point into: each element a new list, as the source's `[]` made it. The C code appends pairs
    whole; a stream cut short (the bounded check shows a wrong variant's) loses its last half pair."""
    level: list = [characters[start:end] for start, end in zip(streams[-1][0::2], streams[-1][1::2], strict=False)]
    for stream in reversed(streams[:-1]):
        level = [level[start // 2 : end // 2] for start, end in zip(stream[0::2], stream[1::2], strict=False)]
    return level


def _joined(node: Node) -> str | None:
    """`C` where `node` is `"".join(C)` of one name."""
    callee = node.child_by_field_name("function") if node.type == "call" else None
    if callee is None or callee.type != "attribute" or text(callee.child_by_field_name("attribute")) != "join":
        return None
    arguments = node.child_by_field_name("arguments").named_children
    if _string(callee.child_by_field_name("object")) != "" or len(arguments) != 1 or arguments[0].type != "identifier":
        return None
    return text(arguments[0])


def _string(node: Node) -> str | None:
    """A plain string literal's value (not an f-string, not bytes)."""
    if node.type != "string" or any(child.type == "interpolation" for child in node.named_children):
        return None
    try:
        value = ast.literal_eval(text(node))
    except ValueError:  # an f-string without interpolations
        return None
    return value if isinstance(value, str) else None
