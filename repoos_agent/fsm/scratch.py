"""Local work arrays in the fsm lowering: stacks and growable arrays a function builds for itself, and the module
dicts of constant keys to tuples of ints it unpacks.

A compiler's pass, an interpreter's tape, a bracket stack: each is a local `bytearray()`, `bytearray(n)` or list
`[]` of ints that the function grows, pops, indexes and measures but does not return. They are local outputs as
`lower.py` makes them (each its own growable buffer in C); what this module adds is the rest of what such an
array is used for. `x.pop()` tests that `x` is not empty first (Python's `IndexError`, with its message), reads
the last element and drops it (`ir.Pop`). A value stored into a local `bytearray` that is not a byte by its form
is tested first (Python's `ValueError`, with its message). A list of tuples of ints the function never returns
is a record stack: one array per field (the list itself holds the first), each appended and popped together, so
`x[i][j]` is one load and `a, b = x.pop()` reads each field. A helper that returns its local arrays
(`ops, args = compile(program)`) builds them under the caller's names, as Python binds the very objects. The
width analysis (`ranges`) follows the values each array holds, so ints read back are bounded as locals are.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import replace

from tree_sitter import Node

from repoos_agent.fsm import ir
from repoos_agent.fsm.refusal import refuse
from repoos_agent.ingest.classify import walk
from repoos_agent.ingest.parse import text

FIELD = "{k}f_{name}"
"""The C-safe name of field `k` (from 1) of a record stack `name`: a leading digit, which no Python name has, and an
`f_` no lowering temporary has."""


def field_name(name: str, k: int) -> str:
    """The array that holds field `k` of the record stack `name` (the stack itself holds field 0)."""
    return name if k == 0 else FIELD.format(k=k, name=name)


def record_arity(value: Mapping[object, object]) -> int | None:
    """The length of the tuples a dict maps every key to, where each is a non-empty tuple of ints within 64 bits
    of that one length (a dict `a, b = TABLE[key]` unpacks); None otherwise."""
    lengths = {len(each) if type(each) is tuple else -1 for each in value.values()}
    if len(lengths) != 1 or min(lengths) < 1:
        return None
    fits = all(type(x) is int and -(1 << 63) <= x < 1 << 63 for each in value.values() for x in each)  # type: ignore[attr-defined]
    return min(lengths) if fits else None


def folded_constant(source: str, known: Mapping[str, object]) -> object | None:
    """The value of a module constant written with earlier integer constants and `ord` of a character (`{ord("+"):
    (ADD, 1)}`): literals, tuples, dicts, unary minus and those names and calls only; None for anything else."""
    try:
        tree = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return _folded(tree, known)


def _folded(node: ast.expr, known: Mapping[str, object]) -> object | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, str, bytes):
        return node.value
    if isinstance(node, ast.Name):
        value = known.get(node.id)
        return value if type(value) is int else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = _folded(node.operand, known)
        return -operand if type(operand) is int else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "ord" and not node.keywords:
        argument = _folded(node.args[0], known) if len(node.args) == 1 else None
        return ord(argument) if type(argument) is str and len(argument) == 1 and "ord" not in known else None
    if isinstance(node, ast.Tuple):
        elements = [_folded(each, known) for each in node.elts]
        return None if any(each is None for each in elements) else tuple(elements)
    if isinstance(node, ast.Dict) and all(key is not None for key in node.keys):
        keys = [_folded(key, known) for key in node.keys]  # type: ignore[arg-type]
        values = [_folded(value, known) for value in node.values]
        if any(each is None for each in [*keys, *values]) or len(set(keys)) != len(keys):
            return None
        return dict(zip(keys, values, strict=True))
    return None


def returned_names(function: Node) -> set[str]:
    """The names a function's own `return`s give back (alone or in a tuple): a list named there is an output, any
    other list of tuples a record stack."""
    found = set()
    for node in walk(function.child_by_field_name("body")):
        if node.type == "return_statement" and node.named_children and _own(node, function):
            value = node.named_children[0]
            found.update(text(each) for each in (value.named_children if value.type in ("expression_list", "tuple") else [value]))
    return found


def helper_arrays(helper: Node) -> dict[int, str]:
    """The positions of a helper's results that are its own local arrays (bound to `bytearray(...)` or `[]` in
    it), by the name returned there. Every `return` must give the same array at that position."""
    arrays = {
        text(node.child_by_field_name("left"))
        for node in walk(helper.child_by_field_name("body"))
        if node.type == "assignment" and _creates_array(node.child_by_field_name("right"))
    }
    found: dict[int, str] = {}
    for node in walk(helper.child_by_field_name("body")):
        if node.type != "return_statement" or not node.named_children or not _own(node, helper):
            continue
        value = node.named_children[0]
        values = value.named_children if value.type in ("expression_list", "tuple") else [value]
        for position, each in enumerate(values):
            if each.type == "identifier" and text(each) in arrays:
                found.setdefault(position, text(each))
    return found


def _own(node: Node, function: Node) -> bool:
    """Whether `node` belongs to `function` itself, not to a function defined inside it."""
    parent = node.parent
    while parent is not None and parent != function:
        if parent.type == "function_definition":
            return False
        parent = parent.parent
    return True


def _creates_array(right: Node | None) -> bool:
    if right is None:
        return False
    if right.type == "list":
        return not right.named_children
    return right.type == "call" and text(right.child_by_field_name("function")) == "bytearray"


class ScratchArrays:
    """The lowering of local work arrays, mixed into the lowering (`lower._Lowering`), whose state it reads."""

    sequences: dict[str, ir.Sequence]
    outputs: list[str]
    buffer: str | None
    raises: list[ir.Raise]
    constants: dict[str, object]
    records: dict[str, int]
    named_in_returns: set[str]
    plain: set[str]
    tuples: dict[str, tuple[str, ...]]

    def local_array(self, name: str) -> bool:
        """Whether `name` is a local `bytearray()` or list of ints the function grows (not one it joins)."""
        return (name == self.buffer or name in self.outputs) and not self.special(name)  # type: ignore[attr-defined]

    def names_an_array(self, value: Node) -> bool:
        """Whether a returned value names a local array (alone or in a tuple): else it is an int, even where the
        function builds arrays for its own work."""
        names = value.named_children if value.type in ("expression_list", "tuple") else [value]
        return self.buffer is not None and any(
            each.type == "identifier" and text(each) in (self.buffer, *self.outputs) for each in names
        )

    def scratch_statement(self, node: Node, assigned: frozenset[str]) -> list[ir.Stmt] | None:
        """The statements for `x.pop()`, `v = x.pop()`, `a, b = x.pop()`, `stack.append((a, b))` onto a record
        stack, and `a, b = TABLE[key]` or `a, b = stack[i]`; None where `node` is none of them."""
        if node.type == "call" and (popped := self.popped_array(node)) is not None:
            return self.pop(node, popped, None, assigned)
        if node.type == "call" and (grown := self.grown_record(node)) is not None:
            return self.append_record(grown, node.child_by_field_name("arguments").named_children[0], assigned)
        if node.type != "assignment" or node.child_by_field_name("right") is None:
            return None
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if (popped := self.popped_array(right)) is not None and left.type in ("identifier", "pattern_list"):
            return self.pop(right, popped, left, assigned)
        if left.type == "pattern_list" and right.type == "subscript":
            return self.unpacked(left, right, assigned)
        return None

    def popped_array(self, node: Node) -> str | None:
        """The local array `node` pops (`x.pop()`), or None."""
        callee = node.child_by_field_name("function") if node.type == "call" else None
        if callee is None or callee.type != "attribute" or text(callee.child_by_field_name("attribute")) != "pop":
            return None
        owner = callee.child_by_field_name("object")
        if owner.type != "identifier" or not self.local_array(text(owner)):
            return None
        if node.child_by_field_name("arguments").named_children:
            raise refuse(node, f"`{text(node)[:60]}`: only `{text(owner)}.pop()` of the last element is modelled")
        return text(owner)

    def pop_inside(self, node: Node) -> None:
        """`x.pop()` inside an expression is refused: it changes `x` while the expression runs."""
        if self.popped_array(node) is not None:
            raise refuse(node, f"`{text(node)}` inside an expression: assign it to a name first (`v = {text(node)}`)")

    def pop(self, call: Node, owner: str, left: Node | None, assigned: frozenset[str]) -> list[ir.Stmt]:
        """`x.pop()`: Python's IndexError where `x` is empty, then its last element bound (each field of a record
        to its own name) and dropped."""
        line = call.start_point[0] + 1
        self.ready(call, owner, assigned)  # type: ignore[attr-defined]
        kind = "list" if self.sequences[owner].kind == ir.LIST else "bytearray"
        raised = ir.Raise("IndexError", f"pop from empty {kind}", len(self.raises) + 1, line)
        self.raises.append(raised)
        last = ir.Binary("-", ir.Length(owner, line), ir.Const(1, line), line)
        fields = [field_name(owner, k) for k in range(self.records.get(owner, 1))]
        statements: list[ir.Stmt] = [ir.If(ir.Compare("==", ir.Length(owner, line), ir.Const(0, line), line), (raised,), (), line)]
        if left is not None:
            targets = left.named_children if left.type == "pattern_list" else [left]
            if (left.type == "pattern_list") != (owner in self.records) or len(targets) != len(fields):
                shape = f"a tuple of {len(fields)} ints" if owner in self.records else "an int"
                raise refuse(left, f"`{text(left.parent)[:60]}`: `{owner}.pop()` gives {shape}; bind each to one name")
            if any(target.type != "identifier" for target in targets):
                raise refuse(left, f"`{text(left)}`: only names are bound to a popped element")
            held = [ir.Load(name, last, ir.INT, line) for name in fields]
            statements += [self.bind(t, v, call) for t, v in zip(targets, held, strict=True)]  # type: ignore[attr-defined]
        return [*statements, *(ir.Pop(name, line) for name in fields)]

    def grown_record(self, node: Node) -> str | None:
        """The record stack `node` appends a tuple to (`stack.append((a, b))`), or None. A list of tuples named in
        a `return` is an output instead, flat in C (`lower.append_tuple`)."""
        callee = node.child_by_field_name("function")
        if callee.type != "attribute" or text(callee.child_by_field_name("attribute")) != "append":
            return None
        owner, arguments = text(callee.child_by_field_name("object")), node.child_by_field_name("arguments").named_children
        if not self.local_array(owner) or owner in self.named_in_returns or self.sequences[owner].kind != ir.LIST:
            return None
        if len(arguments) == 1 and arguments[0].type == "tuple":
            return owner
        if owner in self.records:
            raise refuse(node, f"`{text(node)[:60]}`: `{owner}` holds tuples elsewhere; append one kind of value")
        return None

    def append_record(self, owner: str, argument: Node, assigned: frozenset[str]) -> list[ir.Stmt]:
        """`stack.append((a, b))`: the tuple's ints computed in order, then each appended to its field's array."""
        line = argument.start_point[0] + 1
        self.ready(argument, owner, assigned)  # type: ignore[attr-defined]
        if owner in self.plain:
            raise refuse(argument, f"`{text(argument)[:60]}`: `{owner}` holds ints elsewhere; append one kind of value")
        values = [self.as_int(self.integer(each, assigned), each) for each in argument.named_children]  # type: ignore[attr-defined]
        if not values:
            raise refuse(argument, "`()`: an empty tuple is not modelled")
        if self.records.setdefault(owner, len(values)) != len(values):
            raise refuse(
                argument, f"`{text(argument)[:60]}` has {len(values)} ints, the other tuples of `{owner}` {self.records[owner]}"
            )
        for k in range(1, len(values)):
            name = field_name(owner, k)
            if name not in self.sequences:
                self.outputs.append(name)
                self.sequences[name] = ir.Sequence(name, ir.LIST, "int64", written=True)
        statements: list[ir.Stmt] = []
        held = []
        for k, value in enumerate(values):
            if k < len(values) - 1 and not isinstance(value, ir.Const | ir.Local):  # all computed before any is appended
                temporary = self.temporary(line)  # type: ignore[attr-defined]
                statements.append(ir.Assign(temporary, value, line))
                value = ir.Local(temporary, ir.INT, line)
            held.append(value)
        return [*statements, *(ir.Append(field_name(owner, k), value, line) for k, value in enumerate(held))]

    def record_field(self, node: Node, assigned: frozenset[str]) -> ir.Expr | None:
        """`stack[i][j]` of a record stack: field `j` (a constant) of its `i`th tuple; None where `node` is not one.
        An `i` out of range leaves for the original (its IndexError), as any load does."""
        inner = node.child_by_field_name("value")
        if inner.type != "subscript" or text(inner.child_by_field_name("value")) not in self.records:
            return None
        owner = text(inner.child_by_field_name("value"))
        arity = self.records[owner]
        column = self.constant(node.child_by_field_name("subscript"))  # type: ignore[attr-defined]
        if not -arity <= column < arity:
            raise refuse(node, f"`{text(node)}`: the tuples of `{owner}` have {arity} ints (Python raises IndexError)")
        self.ready(node, owner, assigned)  # type: ignore[attr-defined]
        index = self.as_int(self.integer(inner.child_by_field_name("subscript"), assigned), inner)  # type: ignore[attr-defined]
        return ir.Load(field_name(owner, column % arity), index, ir.INT, node.start_point[0] + 1)

    def whole_record(self, node: Node) -> None:
        """A record stack's tuple read whole as a value is refused: it is unpacked or read by field."""
        if node.type == "subscript" and text(node.child_by_field_name("value")) in self.records:
            owner = text(node.child_by_field_name("value"))
            raise refuse(node, f"`{text(node)}` is a tuple of `{owner}`: unpack it (`a, b = {text(node)}`) or read one field")

    def unpacked(self, left: Node, right: Node, assigned: frozenset[str]) -> list[ir.Stmt] | None:
        """`a, b = TABLE[key]` of a module dict of tuples, or `a, b = stack[i]` of a record stack: the key or index
        computed once, then each name bound to its field. None where `right` is neither."""
        name = text(right.child_by_field_name("value"))
        arity = self.records.get(name)
        table = self.constants.get(name) if name not in self.sequences else None
        if arity is None and not (isinstance(table, dict) and (arity := record_arity(table)) is not None):
            return None
        targets, line = left.named_children, left.start_point[0] + 1
        if len(targets) != arity or any(target.type != "identifier" for target in targets):
            raise refuse(left, f"`{text(left.parent)[:60]}`: `{text(right)}` is a tuple of {arity} ints; bind each to one name")
        pieces = right.children_by_field_name("subscript")
        if len(pieces) != 1 or pieces[0].type == "slice":
            raise refuse(right, f"`{text(right)}`: one key or index is modelled")
        temporary = self.temporary(line)  # type: ignore[attr-defined]
        if isinstance(table, dict):
            key = self.compared(pieces[0], assigned)  # type: ignore[attr-defined]
            if (self.value_type(key, pieces[0]) == ir.CHAR) != isinstance(next(iter(table)), str):  # type: ignore[attr-defined]
                raise refuse(right, f"`{text(right)}` looks up a key of another kind than the dict's")
            held = ir.Local(temporary, self.value_type(key, pieces[0]), line)  # type: ignore[attr-defined]
            first = ir.Assign(temporary, key, line)
            values = [self.looked_up(held, table, k, right) for k in range(arity)]
        else:
            self.ready(right, name, assigned)  # type: ignore[attr-defined]
            first = ir.Assign(temporary, self.as_int(self.integer(pieces[0], assigned), pieces[0]), line)  # type: ignore[attr-defined]
            held = ir.Local(temporary, ir.INT, line)
            values = [ir.Load(field_name(name, k), held, ir.INT, line) for k in range(arity)]
        self.locals[temporary] = held.type  # type: ignore[attr-defined]
        return [first, *(self.bind(t, v, right) for t, v in zip(targets, values, strict=True))]  # type: ignore[attr-defined]

    def looked_up(self, key: ir.Local, table: dict[object, object], k: int, node: Node) -> ir.Expr:
        """Field `k` of `TABLE[key]`: the keys compared in order; a missing key (KeyError in Python) reads past a
        one-entry table, so the call runs the original."""
        line = key.line
        missing = self.lookup_table(node, b"\x00", frozenset())  # type: ignore[attr-defined]
        result: ir.Expr = ir.Load(missing, ir.Const(1, line), ir.INT, line)
        for each, found in reversed(table.items()):
            wanted = ir.Const(ord(each) if isinstance(each, str) else each, line)  # type: ignore[arg-type]
            result = ir.Select(ir.Compare("==", key, wanted, line), ir.Const(found[k], line), result, line)  # type: ignore[index]
        return result

    def stored(self, statement: ir.Stmt, byte: bool) -> list[ir.Stmt]:
        """A store into a local `bytearray` of a value that is not a byte by its form (`byte` false): the index and
        the value computed first, then Python's ValueError where the value is outside 0..255 (a bytearray tests
        the value before the index)."""
        if not isinstance(statement, ir.Store) or byte or not self.local_array(statement.sequence):
            return [statement]
        if self.sequences[statement.sequence].kind != ir.BUFFER:
            return [statement]
        line = statement.line
        index, value = self.temporary(line), self.temporary(line)  # type: ignore[attr-defined]
        raised = ir.Raise("ValueError", "byte must be in range(0, 256)", len(self.raises) + 1, line)
        self.raises.append(raised)
        held = ir.Local(value, ir.INT, line)
        outside = ir.Logical(
            "or", ir.Compare("<", held, ir.Const(0, line), line), ir.Compare(">", held, ir.Const(255, line), line), line
        )
        return [
            ir.Assign(index, statement.index, line),
            ir.Assign(value, statement.value, line),
            ir.If(outside, (raised,), (), line),
            ir.Store(statement.sequence, ir.Local(index, ir.INT, line), held, line),
        ]

    def emptied_records(self, body: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        """`body` with every emptying of a record stack (`stack = []`) emptying each of its fields' arrays."""
        out: list[ir.Stmt] = []
        for statement in body:
            if isinstance(statement, ir.Assign) and statement.name in self.records:
                out += [
                    ir.Assign(field_name(statement.name, k), statement.value, statement.line)
                    for k in range(self.records[statement.name])
                ]
                continue
            nested = {
                part: self.emptied_records(getattr(statement, part))
                for part in ("then", "orelse", "body", "default")
                if hasattr(statement, part)
            }
            if isinstance(statement, ir.Switch):
                nested["cases"] = tuple((values, self.emptied_records(block)) for values, block in statement.cases)  # type: ignore[assignment]
            out.append(replace(statement, **nested) if nested else statement)
        return tuple(out)
