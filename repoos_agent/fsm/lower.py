"""The syntax tree of one function into the fsm IR, for the typed subset the track models; anything else refused.

The arguments' types come from a call's values (`parameter_types`), as the loop track reads ranks off them. A
refusal names the line and the construct, and what to write instead where there is a way. A name must be
assigned on every path before it is read: Python raises `UnboundLocalError` there, and C would read garbage.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

from tree_sitter import Node

from repoos_agent.errors import NotAnalyzableError
from repoos_agent.fsm import ir
from repoos_agent.ingest.classify import walk
from repoos_agent.ingest.parse import text

ARITHMETIC = frozenset({"+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>"})
COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
BOOL = "bool"
"""A condition's type: only `if`, `while`, `and`, `or` and `not` take it."""
IGNORED = frozenset({"comment", "pass_statement"})
NOT_MODELLED = {
    "try_statement": "`try`: exceptions as control flow are not modelled; test the condition instead",
    "with_statement": "`with` is not modelled",
    "function_definition": "a function inside the function is not modelled",
    "class_definition": "a class inside the function: objects are not modelled",
    "global_statement": "`global`: module state is not modelled",
    "nonlocal_statement": "`nonlocal` is not modelled",
    "delete_statement": "`del` is not modelled",
    "import_statement": "an import inside the function is not modelled",
    "match_statement": "`match` is not modelled; write an `if`/`elif` ladder",
    "dictionary": "a dict: only integers, bytes and integer arrays are modelled",
    "dictionary_comprehension": "a dict: only integers, bytes and integer arrays are modelled",
    "list": "a list: only integers, bytes and integer arrays are modelled (a constant table as `bytes` is)",
    "list_comprehension": "a list comprehension is not modelled; write the loop",
    "set": "a set is not modelled",
    "tuple": "a tuple is not modelled",
    "float": "a float: only integer arithmetic is modelled",
    "string": "a string as text is not modelled; only a `raise`'s constant message is",
    "concatenated_string": "a string as text is not modelled",
    "lambda": "a lambda is not modelled",
    "conditional_expression": "a conditional expression is not modelled; write an `if` statement",
    "attribute": "an attribute: objects are not modelled",
    "await": "`await` is not modelled",
    "yield": "a generator is not modelled",
}


class FsmRefusal(NotAnalyzableError):
    """What the fsm track cannot model, at its line: `line N: reason`."""

    def __init__(self, line: int, reason: str, path: Path | None = None) -> None:
        super().__init__(f"{path}:{line}: {reason}" if path else f"line {line}: {reason}", "fsm")
        self.line = line
        self.reason = reason
        self.path = path

    def __reduce__(self) -> tuple[type, tuple[int, str, Path | None]]:
        return FsmRefusal, (self.line, self.reason, self.path)  # a worker's refusal crosses back whole


def refuse(node: Node, reason: str) -> FsmRefusal:
    return FsmRefusal(node.start_point[0] + 1, reason)


def parameter_names(function: Node) -> list[str]:
    """The function's parameters in order; only plain (or annotated) names are modelled, and defaults that are ints."""
    names = []
    for child in function.child_by_field_name("parameters").named_children:
        if child.type == "identifier":
            names.append(text(child))
        elif child.type == "typed_parameter":
            names.append(text(child.named_children[0]))
        elif child.type in ("default_parameter", "typed_default_parameter"):
            names.append(text(child.child_by_field_name("name")))
        else:
            raise refuse(child, f"parameter `{text(child)}`: only plain names are modelled (no `*args`, `**kwargs`)")
    parameter_defaults(function)  # a default that is not an int is refused here, once for every caller
    return names


def parameter_defaults(function: Node) -> dict[str, int]:
    """The parameters that have a default, with it: an integer literal or a module integer constant, so the
    parameter is an int one. Other defaults are refused: a call that leaves them out could pass anything."""
    defaults: dict[str, int] = {}
    for child in function.child_by_field_name("parameters").named_children:
        if child.type not in ("default_parameter", "typed_default_parameter"):
            continue
        value, name = child.child_by_field_name("value"), text(child.child_by_field_name("name"))
        constant = module_constants(function).get(text(value)) if value.type == "identifier" else None
        try:
            literal = ast.literal_eval(text(value)) if constant is None else constant
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            literal = None  # not a literal
        if type(literal) is not int:
            raise refuse(
                child,
                f"parameter `{text(child)}`: only an int default (a literal or a module integer constant) is "
                "modelled; pass the value in the call instead",
            )
        defaults[name] = literal
    return defaults


def lower_function(function: Node, types: Mapping[str, ir.Sequence | str]) -> ir.Function:
    """The IR of `function` given its parameters' types (a `Sequence` or `ir.INT` each)."""
    names = parameter_names(function)
    lowering = _Lowering(text(function.child_by_field_name("name")), {name: types[name] for name in names})
    lowering.constants = {name: value for name, value in module_constants(function).items() if name not in local_names(function)}
    body, end = lowering.block(function.child_by_field_name("body"), frozenset(names))
    if end is not None:  # the end is reached: the function returns None there
        lowering.returned(None, function.child_by_field_name("body"))
    parameters = tuple(lowering.sequence(name) if isinstance(types[name], ir.Sequence) else name for name in names)
    return ir.Function(
        name=lowering.name,
        parameters=parameters,
        locals=dict(lowering.locals),
        buffer=lowering.buffer,
        body=body,
        returns=lowering.returns or "none",
        raises=tuple(lowering.raises),
        tables={name: value for name, value in lowering.constants.items() if name in lowering.used and name in lowering.tables()},
        buffer_kind=lowering.sequences[lowering.buffer].kind if lowering.buffer else ir.BUFFER,
    )


def local_names(function: Node) -> set[str]:
    """The names a function binds anywhere in its body, which Python takes as its locals throughout."""
    names = set(parameter_names(function))
    for node in walk(function.child_by_field_name("body")):
        if node.type in ("assignment", "augmented_assignment", "for_statement"):
            target = node.child_by_field_name("left")
            targets = target.named_children if target is not None and target.type == "pattern_list" else [target]
            names.update(text(name) for name in targets if name is not None and name.type == "identifier")
    return names


def module_constants(function: Node) -> dict[str, int | bytes | tuple[int, ...]]:
    """The module's names bound once, at its top level, to an integer, a `bytes` literal or a tuple of ints:
    constants and tables the function may read (as the loop track reads module constants). A module's list is not
    one: any code may change it."""
    module = function
    while module.parent is not None:
        module = module.parent
    found: dict[str, int | bytes | tuple[int, ...]] = {}
    bound: dict[str, int] = {}
    for statement in module.named_children:
        assignment = statement.named_children[0] if statement.type == "expression_statement" else None
        if assignment is None or assignment.type != "assignment":
            continue
        left, right = assignment.child_by_field_name("left"), assignment.child_by_field_name("right")
        if left.type != "identifier" or right is None:
            continue
        bound[text(left)] = bound.get(text(left), 0) + 1
        try:
            value = ast.literal_eval(text(right))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue  # not a literal
        if type(value) is tuple and all(type(element) is int and -(1 << 63) <= element < 1 << 63 for element in value):
            found[text(left)] = value  # a table of ints, each held in 64 bits
        elif type(value) in (int, bytes):
            found[text(left)] = value
    return {name: value for name, value in found.items() if bound[name] == 1}


class _Lowering:
    """One function's lowering: the types of its names, its local buffer, what it returns and raises."""

    def __init__(self, name: str, types: dict[str, ir.Sequence | str]) -> None:
        self.name = name
        self.sequences = {n: t for n, t in types.items() if isinstance(t, ir.Sequence)}
        self.locals: dict[str, str] = {n: t for n, t in types.items() if isinstance(t, str)}
        self.written: set[str] = set()
        self.buffer: str | None = None
        self.returns: str | None = None
        self.raises: list[ir.Raise] = []
        self.broken: list[bool] = []
        self.iterated: list[str] = []
        self.constants: dict[str, int | bytes | tuple[int, ...]] = {}
        self.used: set[str] = set()

    def sequence(self, name: str) -> ir.Sequence:
        declared = self.sequences[name]
        return ir.Sequence(name, declared.kind, declared.dtype, name in self.written)

    # statements: each takes the names assigned on every path so far and returns them after (None: never reached)

    def block(self, node: Node, assigned: frozenset[str] | None) -> tuple[tuple[ir.Stmt, ...], frozenset[str] | None]:
        statements: list[ir.Stmt] = []
        for child in node.named_children:
            if child.type in IGNORED or (child.type == "expression_statement" and child.named_children[0].type == "string"):
                continue
            if assigned is None:
                break  # after a `return`, `raise`, `break` or `continue`: never runs
            lowered, assigned = self.statement(child, assigned)
            statements.extend(lowered)
        return tuple(statements), assigned

    def statement(self, node: Node, assigned: frozenset[str]) -> tuple[list[ir.Stmt], frozenset[str] | None]:
        line = node.start_point[0] + 1
        kind = node.type
        if kind == "expression_statement":
            return self.expression_statement(node.named_children[0], assigned)
        if kind == "if_statement":
            return self.if_statement(node, assigned)
        if kind == "while_statement":
            if node.child_by_field_name("alternative") is not None:
                raise refuse(node, "`while ... else` is not modelled")
            condition = self.condition(node.child_by_field_name("condition"), assigned)
            self.broken.append(False)
            body, _ = self.block(node.child_by_field_name("body"), assigned)
            broke = self.broken.pop()
            endless = isinstance(condition, ir.Const) and condition.value != 0 and not broke
            return [ir.While(condition, body, line)], None if endless else assigned
        if kind == "for_statement":
            return self.for_statement(node, assigned)
        if kind == "break_statement":
            self.broken[-1] = True
            return [ir.Break(line)], None
        if kind == "continue_statement":
            return [ir.Continue(line)], None
        if kind == "return_statement":
            value = node.named_children[0] if node.named_children else None
            return [ir.Return(self.returned(value, node, assigned), line)], None
        if kind == "raise_statement":
            return [self.raise_statement(node, assigned)], None
        raise refuse(node, NOT_MODELLED.get(kind, f"`{kind.replace('_', ' ')}` is not modelled"))

    def expression_statement(self, node: Node, assigned: frozenset[str]) -> tuple[list[ir.Stmt], frozenset[str]]:
        line = node.start_point[0] + 1
        if node.type == "assignment":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if right is None:
                raise refuse(node, f"`{text(node)}` declares without assigning")
            if left.type == "pattern_list":
                return self.unpack(left, right, assigned), assigned | self.target_names(left)
            return [self.assign(left, right, None, assigned)], assigned | self.target_names(left)
        if node.type == "augmented_assignment":
            operator = text(node.child_by_field_name("operator"))[:-1]
            if operator not in ARITHMETIC:
                raise refuse(node, f"`{operator}=` is not modelled")
            left = node.child_by_field_name("left")
            return [self.assign(left, node.child_by_field_name("right"), operator, assigned)], assigned
        if node.type == "call":
            callee = node.child_by_field_name("function")
            if callee.type == "attribute" and text(callee.child_by_field_name("attribute")) == "append":
                owner = text(callee.child_by_field_name("object"))
                if owner != self.buffer:
                    raise refuse(node, f"`{owner}.append`: only a local `bytearray()` or list `[]` the function returns is grown")
                self.ready(callee, owner, assigned)
                arguments = node.child_by_field_name("arguments").named_children
                if len(arguments) != 1:
                    raise refuse(node, "`append` takes one value")
                value = self.integer(arguments[0], assigned)
                if self.sequences[owner].kind == ir.LIST:
                    value = self.as_int(value, arguments[0])  # a list keeps a NumPy scalar as one
                return [ir.Append(owner, value, line)], assigned
        raise refuse(node, f"`{text(node)[:60]}`: only assignments, `append` and control flow are modelled as statements")

    def target_names(self, left: Node) -> frozenset[str]:
        targets = left.named_children if left.type == "pattern_list" else [left]
        return frozenset(text(target) for target in targets if target.type == "identifier")

    def unpack(self, left: Node, right: Node, assigned: frozenset[str]) -> list[ir.Stmt]:
        """`a, b = x, y`: every value is computed before any name is bound, so where a value reads a name the
        statement binds (`a, b = b, a + b`), it is held in a temporary first (named with a leading digit, which no
        Python name has)."""
        targets, values = left.named_children, right.named_children if right.type == "expression_list" else [right]
        if right.type != "expression_list" or len(targets) != len(values):
            raise refuse(left, f"`{text(left)} = {text(right)[:40]}`: only as many values as names are unpacked")
        for target in targets:
            if target.type != "identifier":
                raise refuse(target, f"`{text(target)}`: only names are unpacked into")
        names = [text(target) for target in targets]
        if len(set(names)) != len(names):
            raise refuse(left, f"`{text(left)}` binds one name twice")
        lowered = [self.expression(value, assigned) for value in values]
        read = {name for value in lowered for name in _locals_read(value)}
        line = left.start_point[0] + 1
        statements: list[ir.Stmt] = []
        bound: list[ir.Expr] = []
        for position, (value, node) in enumerate(zip(lowered, values, strict=True)):
            if read & set(names[position + 1 :]) or read & set(names[:position]):
                temporary = f"{line}_{position}"
                self.locals[temporary] = self.value_type(value, node)
                statements.append(ir.Assign(temporary, value, line))
                value = ir.Local(temporary, self.locals[temporary], line)
            bound.append(value)
        statements += [self.bind(target, value, node) for target, value, node in zip(targets, bound, values, strict=True)]
        return statements

    def assign(self, left: Node, right: Node, operator: str | None, assigned: frozenset[str]) -> ir.Stmt:
        line = left.start_point[0] + 1
        if left.type == "subscript":
            name = text(left.child_by_field_name("value"))
            sequence = self.writable(left, name)
            self.ready(left, name, assigned)
            index = self.integer(left.child_by_field_name("subscript"), assigned)
            value = self.expression(right, assigned)
            if operator is not None:
                current = ir.Load(name, index, sequence.element, line)
                value = ir.Binary(operator, self.as_int(current, left), self.as_int(value, right), line)
            self.stored_type(value, sequence, right)
            self.written.add(name)
            return ir.Store(name, index, value, line)
        if left.type != "identifier":
            raise refuse(left, f"`{text(left)}`: only a name or one element is assigned")
        name = text(left)
        if name in self.sequences:
            raise refuse(left, f"`{name}` is an argument sequence; assigning it again is not modelled")
        if operator is not None:
            current = self.name_value(left, assigned)
            value: ir.Expr = ir.Binary(operator, self.as_int(current, left), self.integer(right, assigned), line)
        elif right.type == "call" and text(right.child_by_field_name("function")) == "bytearray":
            return self.new_buffer(left, right, ir.BUFFER)
        elif right.type == "list" and not right.named_children:
            return self.new_buffer(left, right, ir.LIST)
        else:
            value = self.expression(right, assigned)
        return self.bind(left, value, right)

    def bind(self, left: Node, value: ir.Expr, right: Node) -> ir.Assign:
        """`name = value`, keeping one type per name."""
        name = text(left)
        if name in self.sequences:
            raise refuse(left, f"`{name}` is an argument sequence; assigning it again is not modelled")
        kind = self.value_type(value, right)
        if self.locals.setdefault(name, kind) != kind or name == self.buffer:
            raise refuse(left, f"`{name}` holds a {self.locals[name]} elsewhere and a {kind} here; keep one type per name")
        return ir.Assign(name, value, left.start_point[0] + 1)

    def new_buffer(self, left: Node, right: Node, kind: str) -> ir.Stmt:
        empty = right.type == "list" or not right.child_by_field_name("arguments").named_children
        if self.buffer is not None or not empty:
            raise refuse(right, "only one output, a `bytearray()` or a list `[]` created empty, is modelled")
        name = text(left)
        if name in self.locals:
            raise refuse(left, f"`{name}` is already an integer")
        self.buffer = name
        self.sequences[name] = ir.Sequence(name, kind, "uint8" if kind == ir.BUFFER else "int64", written=True)
        return ir.Assign(name, ir.Const(0, left.start_point[0] + 1), left.start_point[0] + 1)

    def writable(self, node: Node, name: str) -> ir.Sequence:
        sequence = self.sequences.get(name)
        if sequence is None:
            raise refuse(node, f"`{name}` is not a sequence argument or the output `bytearray()`")
        if sequence.kind in (ir.BYTES, ir.TABLE):
            raise refuse(node, f"`{name}` is `bytes`, which is immutable; pass a `bytearray`")
        if sequence.kind in (ir.INTS, ir.TEXT):
            raise refuse(node, f"`{name}` is a {_named(sequence.kind)} argument, which is read only")
        if name in self.iterated:
            raise refuse(node, f"`{name}` is written inside a loop over its own elements")
        return sequence

    def stored_type(self, value: ir.Expr, sequence: ir.Sequence, node: Node) -> None:
        kind = self.value_type(value, node)
        if kind not in (ir.INT, sequence.dtype if sequence.kind == ir.ARRAY else ir.INT):
            raise refuse(node, f"storing a NumPy {kind} into `{sequence.name}` casts; write `int(...)`")

    def if_statement(self, node: Node, assigned: frozenset[str]) -> tuple[list[ir.Stmt], frozenset[str] | None]:
        condition = self.condition(node.child_by_field_name("condition"), assigned)
        then, after = self.block(node.child_by_field_name("consequence"), assigned)
        alternatives = node.children_by_field_name("alternative")
        orelse: tuple[ir.Stmt, ...] = ()
        otherwise: frozenset[str] | None = assigned
        if alternatives:
            first, rest = alternatives[0], alternatives[1:]
            if first.type == "else_clause":
                orelse, otherwise = self.block(first.child_by_field_name("body"), assigned)
            else:
                ladder = _ElifLadder(first, rest)
                lowered, otherwise = self.if_statement(ladder, assigned)  # type: ignore[arg-type]
                orelse = tuple(lowered)
        joined = otherwise if after is None else after if otherwise is None else after & otherwise
        return [ir.If(condition, then, orelse, node.start_point[0] + 1)], joined

    def for_statement(self, node: Node, assigned: frozenset[str]) -> tuple[list[ir.Stmt], frozenset[str]]:
        if node.child_by_field_name("alternative") is not None:
            raise refuse(node, "`for ... else` is not modelled")
        variable, iterable = node.child_by_field_name("left"), node.child_by_field_name("right")
        if variable.type != "identifier":
            raise refuse(variable, f"loop target `{text(variable)}` must be one name")
        name, line = text(variable), node.start_point[0] + 1
        if iterable.type == "call" and text(iterable.child_by_field_name("function")) == "range":
            start, stop, step = self.range_arguments(iterable, assigned)
            self.declare(variable, ir.INT)
            self.broken.append(False)
            body, _ = self.block(node.child_by_field_name("body"), assigned | {name})
            self.broken.pop()
            return [ir.ForRange(name, start, stop, step, body, line)], assigned
        self.ready(iterable, text(iterable), assigned)
        sequence = self.sequences.get(text(iterable))
        if sequence is None or sequence.kind in (ir.BUFFER, ir.LIST):
            raise refuse(iterable, f"`for` over `{text(iterable)}`: only `range(...)` and sequence arguments are iterated")
        self.declare(variable, sequence.element)
        self.iterated.append(sequence.name)
        self.broken.append(False)
        body, _ = self.block(node.child_by_field_name("body"), assigned | {name})
        self.broken.pop()
        self.iterated.pop()
        return [ir.ForEach(name, sequence.name, body, line)], assigned

    def declare(self, variable: Node, kind: str) -> None:
        name = text(variable)
        if name in self.sequences or self.locals.setdefault(name, kind) != kind:
            raise refuse(variable, f"`{name}` holds a {self.locals.get(name, 'sequence')} elsewhere and a {kind} here")

    def range_arguments(self, call: Node, assigned: frozenset[str]) -> tuple[ir.Expr, ir.Expr, int]:
        arguments = call.child_by_field_name("arguments").named_children
        if not 1 <= len(arguments) <= 3:
            raise refuse(call, "`range` takes one to three arguments")
        step = 1
        if len(arguments) == 3:
            step = self.constant(arguments[2])
            if step == 0:
                raise refuse(arguments[2], "a `range` step must be a non-zero integer constant")
        if len(arguments) == 1:
            return ir.Const(0, call.start_point[0] + 1), self.integer(arguments[0], assigned), step
        return self.integer(arguments[0], assigned), self.integer(arguments[1], assigned), step

    def constant(self, node: Node) -> int:
        value = self.expression(node, frozenset())
        if isinstance(value, ir.Const):
            return value.value
        if isinstance(value, ir.Unary) and value.op == "-" and isinstance(value.operand, ir.Const):
            return -value.operand.value
        raise refuse(node, f"`{text(node)}` must be an integer constant")

    def returned(self, value: Node | None, node: Node, assigned: frozenset[str] = frozenset()) -> ir.Expr | None:
        if value is None:
            kind, lowered = "none", None
        elif value.type == "identifier" and text(value) == self.buffer:
            self.ready(value, self.buffer, assigned)
            kind, lowered = self.sequences[self.buffer].kind, None
        else:
            lowered = self.expression(value, assigned)
            kind = self.value_type(lowered, value)
        if self.returns not in (None, kind):
            raise refuse(node, f"returns {_named(kind)} here and {_named(self.returns)} elsewhere; return one kind of value")
        self.returns = kind
        return lowered

    def raise_statement(self, node: Node, assigned: frozenset[str]) -> ir.Raise:
        exception = node.named_children[0] if node.named_children else None
        if exception is None or len(node.named_children) > 1:
            raise refuse(node, "a bare `raise` or `raise ... from ...` is not modelled")
        message, values = "", []
        if exception.type == "call":
            arguments = exception.child_by_field_name("arguments").named_children
            if len(arguments) > 1 or (arguments and arguments[0].type not in ("string", "concatenated_string")):
                raise refuse(node, "a raised exception's message must be one string (an f-string of ints is modelled)")
            if arguments:
                message, values = self.message(arguments[0], assigned)
            exception = exception.child_by_field_name("function")
        if exception.type != "identifier":
            raise refuse(node, f"`raise {text(exception)}`: raise an exception class by its name")
        characters = tuple(expression_type(value) == ir.CHAR for value in values)
        line = node.start_point[0] + 1
        raised = ir.Raise(text(exception), message, len(self.raises) + 1, line, tuple(values), characters)
        self.raises.append(raised)
        return raised

    def message(self, node: Node, assigned: frozenset[str]) -> tuple[str, list[ir.Expr]]:
        """A raised message as a `str.format` template and the values of its interpolations, each an int or a
        character (formatted by Python itself, so `{i:04x}` and `{c!r}` read as the f-string does)."""
        parsed = ast.parse(f"({text(node)})", mode="eval").body
        parts = parsed.values if isinstance(parsed, ast.JoinedStr) else [parsed]
        fields = sorted((child for child in walk(node) if child.type == "interpolation"), key=lambda child: child.start_byte)
        template, values = [], []
        for part in parts:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                template.append(part.value.replace("{", "{{").replace("}", "}}"))
                continue
            if not isinstance(part, ast.FormattedValue):
                raise refuse(node, "a raised exception's message must be a string")
            field = fields[len(values)]
            spec = ""
            if part.format_spec is not None:
                pieces = part.format_spec.values  # type: ignore[attr-defined]
                if not all(isinstance(piece, ast.Constant) for piece in pieces):
                    raise refuse(field, f"`{text(field)}`: a format spec with an interpolation is not modelled")
                spec = "".join(piece.value for piece in pieces)
            if "{" in spec or "}" in spec:
                raise refuse(field, f"`{text(field)}`: a format spec with braces is not modelled")
            expression = field.named_children[0]
            value = self.expression(expression, assigned)
            if expression_type(value) != ir.CHAR:
                value = self.as_int(self.integer(expression, assigned), expression)
            conversion = f"!{chr(part.conversion)}" if part.conversion != -1 else ""
            template.append(f"{{{len(values)}{conversion}{':' + spec if spec else ''}}}")
            values.append(value)
        return "".join(template), values

    # expressions

    def condition(self, node: Node, assigned: frozenset[str]) -> ir.Expr:
        value = self.expression(node, assigned, conditions=True)
        if expression_type(value) == ir.CHAR:  # a "\x00" is true in Python, its code point false in C
            raise refuse(node, f"`{text(node)}`: a character as a condition is not modelled; compare it")
        return value

    def integer(self, node: Node, assigned: frozenset[str]) -> ir.Expr:
        """An expression that must be a Python int (an index, an operand, an appended byte)."""
        value = self.expression(node, assigned)
        if self.value_type(value, node) == ir.CHAR:
            raise refuse(node, f"`{text(node)}` is a character of a `str`; write `ord({text(node)})` for its code point")
        if self.value_type(value, node) not in (ir.INT, *ir.DTYPES):
            raise refuse(node, f"`{text(node)}` is not an integer")
        return value

    def as_int(self, value: ir.Expr, node: Node) -> ir.Expr:
        kind = self.value_type(value, node)
        if kind == ir.CHAR:
            raise refuse(node, f"`{text(node)}` is a character of a `str`; write `ord({text(node)})` for its code point")
        if kind != ir.INT:
            raise refuse(
                node,
                f"`{text(node)}` is a NumPy {kind}, whose arithmetic wraps by NumPy's rules; write `int({text(node)})`",
            )
        return value

    def value_type(self, value: ir.Expr, node: Node) -> str:
        kind = expression_type(value)
        if kind == BOOL:
            raise refuse(node, f"`{text(node)}`: a comparison used as a number is not modelled")
        return kind

    def ready(self, node: Node, name: str, assigned: frozenset[str]) -> None:
        """The output `bytearray()` is used only where it was created on every path before; a table is emitted
        where it is read."""
        if name in self.tables() and name not in self.sequences:
            self.sequences[name] = ir.Sequence(name, ir.TABLE, "uint8" if isinstance(self.constants[name], bytes) else "int64")
        self.used.add(name)
        if name == self.buffer and name not in assigned:
            raise refuse(node, f"`{name}` may be used before `{name} = bytearray()` runs; create it first")

    def tables(self) -> set[str]:
        """The module's `bytes` constants the function may read."""
        return {name for name, value in self.constants.items() if isinstance(value, bytes | tuple)}

    def name_value(self, node: Node, assigned: frozenset[str]) -> ir.Expr:
        name = text(node)
        if name in self.sequences or name in self.tables():
            raise refuse(node, f"`{name}` is a sequence; index it or take its `len`")
        if name not in self.locals and isinstance(self.constants.get(name), int):
            return ir.Const(self.constants[name], node.start_point[0] + 1)  # type: ignore[arg-type]
        if name not in self.locals:
            raise refuse(node, f"`{name}` is not a local, an argument or a loop variable (module state is not modelled)")
        if name not in assigned:
            raise refuse(node, f"`{name}` may be read before it is assigned (Python raises UnboundLocalError); assign it first")
        return ir.Local(name, self.locals[name], node.start_point[0] + 1)

    def expression(self, node: Node, assigned: frozenset[str], conditions: bool = False) -> ir.Expr:
        line, kind = node.start_point[0] + 1, node.type
        if kind == "parenthesized_expression":
            return self.expression(node.named_children[0], assigned, conditions)
        if kind == "integer":
            try:
                return ir.Const(int(text(node).replace("_", ""), 0), line)
            except ValueError:
                raise refuse(node, f"`{text(node)}` is not an integer literal the track models") from None
        if kind in ("true", "false") and conditions:
            return ir.Const(int(kind == "true"), line)
        if kind == "identifier" and conditions and (text(node) in self.sequences or text(node) in self.tables()):
            self.ready(node, text(node), assigned)  # `if not data:`, a sequence is true where it is not empty
            return ir.Compare("!=", ir.Length(text(node), line), ir.Const(0, line), line)
        if kind == "identifier":
            return self.name_value(node, assigned)
        if kind == "subscript":
            name = text(node.child_by_field_name("value"))
            self.ready(node, name, assigned)
            if name not in self.sequences:
                raise refuse(node, f"`{name}` is not a sequence argument, a module's table or the output `bytearray()`")
            if len(node.children_by_field_name("subscript")) != 1 or node.child_by_field_name("subscript").type == "slice":
                raise refuse(node, f"`{text(node)}`: only one element is read at a time (no slices)")
            index = self.as_int(self.integer(node.child_by_field_name("subscript"), assigned), node)
            return ir.Load(name, index, self.sequences[name].element, line)
        if kind == "binary_operator":
            operator = text(node.child_by_field_name("operator"))
            if operator not in ARITHMETIC:
                raise refuse(node, f"`{operator}` is not modelled (integer arithmetic: {' '.join(sorted(ARITHMETIC))})")
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            return ir.Binary(
                operator,
                self.as_int(self.integer(left, assigned), left),
                self.as_int(self.integer(right, assigned), right),
                line,
            )
        if kind == "unary_operator":
            operator = text(node.child_by_field_name("operator"))
            operand = node.child_by_field_name("argument")
            value = self.as_int(self.integer(operand, assigned), operand)
            if operator == "+":
                return value
            if isinstance(value, ir.Const) and operator == "-":
                return ir.Const(-value.value, line)
            return ir.Unary(operator, value, line)
        if kind == "call":
            return self.call(node, assigned)
        if kind == "comparison_operator":
            return self.comparison(node, assigned)
        if conditions and kind == "boolean_operator":
            operator = text(node.child_by_field_name("operator"))
            left = self.expression(node.child_by_field_name("left"), assigned, conditions=True)
            return ir.Logical(operator, left, self.expression(node.child_by_field_name("right"), assigned, conditions=True), line)
        if conditions and kind == "not_operator":
            return ir.Not(self.expression(node.child_by_field_name("argument"), assigned, conditions=True), line)
        if kind in ("boolean_operator", "not_operator", "true", "false"):
            raise refuse(node, f"`{text(node)}` as a value is not modelled; use it as a condition")
        raise refuse(node, NOT_MODELLED.get(kind, f"`{text(node)[:60]}` ({kind.replace('_', ' ')}) is not modelled"))

    def call(self, node: Node, assigned: frozenset[str]) -> ir.Expr:
        callee = node.child_by_field_name("function")
        name, line = text(callee), node.start_point[0] + 1
        arguments = node.child_by_field_name("arguments").named_children
        if name == self.name:
            raise refuse(node, f"recursion: `{name}` calls itself; write the loop")
        if name == "len" and len(arguments) == 1:
            measured = text(arguments[0])
            self.ready(node, measured, assigned)
            if measured not in self.sequences:
                raise refuse(node, f"`{text(node)}`: only a sequence's length is modelled")
            return ir.Length(measured, line)
        if name == "ord" and len(arguments) == 1:
            value = self.expression(arguments[0], assigned)
            if expression_type(value) == ir.CHAR:
                return ir.ToInt(value, line)
            raise refuse(node, f"`{text(node)}`: only `ord` of a `str` argument's character is modelled")
        if name == "int" and len(arguments) == 1:
            value = self.integer(arguments[0], assigned)
            return value if expression_type(value) == ir.INT else ir.ToInt(value, line)
        if (
            name in ("min", "max")
            and len(arguments) == 2
            and all(a.type not in ("list_splat", "dictionary_splat", "keyword_argument") for a in arguments)
        ):
            left, right = (self.as_int(self.integer(argument, assigned), argument) for argument in arguments)
            return ir.Binary(name, left, right, line)
        if callee.type == "attribute":
            raise refuse(node, f"`{text(node)[:60]}`: method calls on objects are not modelled")
        raise refuse(
            node, f"`{name}(...)` is not modelled (calls: `len`, `int`, `min`/`max` of two ints, `range` in a `for`, `bytearray()`)"
        )

    def comparison(self, node: Node, assigned: frozenset[str]) -> ir.Expr:
        operands = node.named_children
        operators = [text(child) for child in node.children if not child.is_named]
        if any(operator not in COMPARISONS for operator in operators):
            raise refuse(node, f"`{text(node)}`: only integer comparisons are modelled (not `in` or `is`)")
        values = [self.compared(operand, assigned) for operand in operands]
        characters = {
            expression_type(value) == ir.CHAR or _character(operand) is not None
            for value, operand in zip(values, operands, strict=True)
        }
        if len(characters) > 1:
            raise refuse(node, f"`{text(node)}` compares a character with a number; write `ord(...)` for its code point")
        line = node.start_point[0] + 1
        result: ir.Expr | None = None
        for operator, left, right in zip(operators, values, values[1:], strict=False):
            pair = ir.Compare(operator, left, right, line)
            result = pair if result is None else ir.Logical("and", result, pair, line)
        return result  # type: ignore[return-value]

    def compared(self, node: Node, assigned: frozenset[str]) -> ir.Expr:
        """A comparison's operand: an int, a character, or a one-character literal (its code point)."""
        if (character := _character(node)) is not None:
            return ir.Const(ord(character), node.start_point[0] + 1)
        value = self.expression(node, assigned)
        return value if expression_type(value) == ir.CHAR else self.integer(node, assigned)


class _ElifLadder:
    """An `elif` clause read as the `if` statement it stands for, so the ladder lowers as nested ifs."""

    def __init__(self, clause: Node, rest: list[Node]) -> None:
        self.clause = clause
        self.rest = rest
        self.start_point = clause.start_point

    def child_by_field_name(self, field: str) -> Node | None:
        return self.clause.child_by_field_name(field)

    def children_by_field_name(self, field: str) -> list[Node]:
        return self.rest if field == "alternative" else []


def expression_type(value: ir.Expr) -> str:
    """What an expression gives: a Python int, a NumPy element's dtype, or a condition."""
    if isinstance(value, ir.Compare | ir.Logical | ir.Not):
        return BOOL
    if isinstance(value, ir.Local | ir.Load):
        return value.type
    return ir.INT


def _character(node: Node) -> str | None:
    """A one-character `str` literal's character, compared as its code point with a `str` argument's characters."""
    if node.type != "string" or any(child.type == "interpolation" for child in node.named_children):
        return None
    value = ast.literal_eval(text(node))
    return value if isinstance(value, str) and len(value) == 1 else None


def _locals_read(value: ir.Expr) -> set[str]:
    """The locals an expression reads."""
    if isinstance(value, ir.Local):
        return {value.name}
    children = [getattr(value, field) for field in ("index", "left", "right", "operand") if hasattr(value, field)]
    return {name for child in children for name in _locals_read(child)}


def _named(kind: str | None) -> str:
    named = {"none": "None", ir.BUFFER: "the output bytearray", ir.LIST: "the output list", ir.INT: "an int"}
    named |= {ir.INTS: "list of ints", ir.TEXT: "`str`", ir.CHAR: "a character"}
    return named.get(kind or "none", f"a NumPy {kind}")
