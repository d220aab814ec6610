"""The syntax tree of one function into the fsm IR, for the typed subset the track models; anything else refused.

The arguments' types come from a call's values (`parameter_types`), as the loop track reads ranks off them. A
refusal names the line and the construct, and what to write instead where there is a way. A name must be
assigned on every path before it is read: Python raises `UnboundLocalError` there, and C would read garbage.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass, replace

from tree_sitter import Node

from repoos_agent.fsm import ir
from repoos_agent.fsm.inline_returns import has_return_in_loop, returns_out_of_loops
from repoos_agent.fsm.nested import Nest, find_nest, mark, sealed_reuse
from repoos_agent.fsm.refusal import FsmRefusal, refuse
from repoos_agent.fsm.scratch import ScratchArrays, folded_constant, helper_arrays, record_arity, returned_names
from repoos_agent.fsm.str_values import StrValues, formatted, merged_shape
from repoos_agent.fsm.syntax import dicts_changed, slice_of
from repoos_agent.ingest.classify import walk
from repoos_agent.ingest.parse import parse_source, text

ARITHMETIC = frozenset({"+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>"})
COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
INSTANCE_CLASSES = {
    "int": (ir.INT,),
    "bool": (),
    "bytes": (ir.BYTES,),
    "bytearray": (ir.BYTEARRAY,),
    "str": (ir.TEXT,),
    "list": (ir.INTS,),
    "tuple": (ir.INTS,),
}
"""The builtin classes `isinstance` is decided against, and the lowered kinds whose values are exactly of that class
(the native code takes an int argument only where `type(value) is int`, so never a bool)."""
DICT_KEYS = 64
"""The most keys a module dict read as a lookup may have: each lookup compares the keys in turn."""
CHARACTER_TESTS = frozenset(
    {"isdigit", "isdecimal", "isnumeric", "isalpha", "isalnum", "isspace", "isupper", "islower", "isprintable", "isascii"}
)
"""The tests of one character that are modelled, each read from a table of the first 256 code points."""
SELF = "self."
STATE = "self."
"""A method's attributes while it runs: `self.` and the attribute's name for a sequence, and the `int64` array of
its int attributes (`self.` alone); the IR names them `self__NAME` and `self__`."""
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


def parameter_names(function: Node) -> list[str]:
    """The function's parameters in order; only plain (or annotated) names are modelled, and defaults that are ints."""
    names = []
    for child in function.child_by_field_name("parameters").named_children:
        if is_method(function) and child == function.child_by_field_name("parameters").named_children[0]:
            continue  # `self`: its attributes are the method's state (`lower_function`'s `attributes`)
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


def parameter_defaults(function: Node) -> dict[str, int | bytes | tuple[int, ...]]:
    """The parameters that have a default, with it: an integer literal or a module integer constant (an int
    parameter), `True` or `False` (a flag, read only as a condition), or a `bytes` literal or tuple of ints (a
    table the call may replace; the call's value types it).
    Other defaults are refused: a call that leaves them out could pass anything."""
    defaults: dict[str, int | bytes | tuple[int, ...]] = {}
    for child in function.child_by_field_name("parameters").named_children:
        if child.type not in ("default_parameter", "typed_default_parameter"):
            continue
        value, name = child.child_by_field_name("value"), text(child.child_by_field_name("name"))
        constant = module_constants(function).get(text(value)) if value.type == "identifier" else None
        try:
            literal = ast.literal_eval(text(value)) if constant is None else constant
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            literal = None  # not a literal
        table = type(literal) is bytes or (type(literal) is tuple and all(type(element) is int for element in literal))
        if type(literal) not in (int, bool) and not table:
            raise refuse(
                child,
                f"parameter `{text(child)}`: only an int or bool default (a literal or a module integer constant), a "
                "`bytes` literal or a tuple of ints is modelled; pass the value in the call instead",
            )
        defaults[name] = literal
    return defaults


def lower_function(
    function: Node, types: Mapping[str, ir.Sequence | str], attributes: Mapping[str, ir.Sequence | str] | None = None
) -> ir.Function:
    """The IR of `function` given its parameters' types (a `Sequence` or `ir.INT` each). A method's state on `self`
    is given by `attributes`' types: its int attributes are read from and written to the `int64` array `self__`
    (first parameter, one element each in `attributes`' order), the others are sequence parameters `self__NAME`."""
    names = parameter_names(function)
    if is_method(function) and attributes is None:
        raise refuse(
            function.child_by_field_name("parameters").named_children[0],
            "parameter `self`: a method's state on `self` is modelled where the method is compiled with its instance "
            "(`repoos_agent.fsm.method.FsmMethod`)",
        )
    lowering = _Lowering(text(function.child_by_field_name("name")), {name: types[name] for name in names})
    held = frozenset(SELF + name for name, kind in (attributes or {}).items() if not isinstance(kind, ir.Sequence))
    if attributes is not None:
        lowering.state_of(function, attributes)
    lowering.constants = {name: value for name, value in module_constants(function).items() if name not in local_names(function)}
    lowering.join_names = joined_names(function)
    lowering.text_names = joined_names(function, "")
    if (nest := find_nest(function, names)) is not None:
        lowering.nested(nest)
    lowering.planned = planned_buffer(function)
    lowering.helpers = module_functions(function)
    lowering.outer_names = local_names(function)
    lowering.outermost = function
    lowering.texts = StrValues.of(function, module_constants(function), local_names(function))
    lowering.named_in_returns = returned_names(function)
    body, end = lowering.block(function.child_by_field_name("body"), frozenset(names) | held)
    if end is not None:  # the end is reached: the function returns None there
        lowering.returned(None, function.child_by_field_name("body"))
    body = lowering.emptied_records(body)
    parameters = tuple(lowering.sequence(name) if isinstance(types[name], ir.Sequence) else name for name in names)
    if attributes is not None:
        lowering.written.add(STATE)
        body = _written_back(body, lowering.changed, end is not None)
        sequences = [STATE, *(SELF + name for name, kind in attributes.items() if isinstance(kind, ir.Sequence))]
        ints = [SELF + name for name, kind in attributes.items() if not isinstance(kind, ir.Sequence)]
        parameters = (*(lowering.sequence(name) for name in sequences), *ints, *parameters)
    lowered = ir.Function(
        name=lowering.name,
        parameters=parameters,
        locals=dict(lowering.locals),
        buffer=lowering.buffer,
        body=body,
        returns=lowering.returns or "none",
        raises=tuple(lowering.raises),
        tables={name: value for name, value in lowering.constants.items() if name in lowering.used and name in lowering.tables()},
        buffer_kind=lowering.sequences[lowering.buffer].kind if lowering.buffer else ir.BUFFER,
        flags=tuple(name for name in names if types[name] == BOOL),
        outputs=tuple(lowering.sequences[name] for name in lowering.outputs),
        results=lowering.results or (),
        tuples=dict(lowering.tuples),
        nested=nest.chain if nest is not None else (),
        strings=lowering.texts.values if any(ir.STR in shape for shape in lowering.tuples.values()) else (),
    )
    _only_grown(lowered)
    sealed_reuse(lowered)
    if attributes is None:
        return lowered
    return _renamed(lowered, {name: name.replace(".", "__") for name in [*lowering.sequences, *held]})  # type: ignore[return-value]


def _only_grown(function: ir.Function) -> None:
    """A list of tuples is flat in C: only appended to, emptied and returned, never read, so that its flat length
    stays a multiple of its arity."""
    if not function.tuples:
        return
    if function.buffer in function.tuples and function.returns not in (ir.LIST, ir.OUTPUT, ir.TUPLE, "none"):
        raise FsmRefusal(_first_return(function.body), f"`{function.buffer}` holds tuples: it is returned as it is")
    read = _reading(function.body, frozenset(function.tuples))
    if read is not None:
        raise FsmRefusal(
            read.line,
            f"`{read.sequence}` holds tuples: only `{read.sequence}.append((...))`, emptying and returning it are modelled",
        )


def _reading(value: object, names: frozenset[str]) -> ir.Length | ir.Load | ir.Store | ir.ForEach | ir.BytesBelow | ir.Word | None:
    """The first node that reads or writes one of `names` other than by `Append`."""
    if isinstance(value, tuple):
        return next((found for item in value if (found := _reading(item, names)) is not None), None)
    if not is_dataclass(value):
        return None
    if isinstance(value, ir.Length | ir.Load | ir.Store | ir.ForEach | ir.BytesBelow | ir.Word) and value.sequence in names:
        return value
    return next((found for part in fields(value) if (found := _reading(getattr(value, part.name), names)) is not None), None)


def _first_return(body: tuple[ir.Stmt, ...]) -> int:
    found = _returns_in(body)
    return found.line if found is not None else 0


def _returns_in(value: object) -> ir.Return | None:
    if isinstance(value, ir.Return):
        return value
    if isinstance(value, tuple):
        return next((found for item in value if (found := _returns_in(item)) is not None), None)
    if is_dataclass(value) and not isinstance(value, ir.Function):
        return next((found for part in fields(value) if (found := _returns_in(getattr(value, part.name))) is not None), None)
    return None


def _shape(kinds: tuple[str, ...]) -> str:
    named = {ir.CHAR: "a character", ir.STR: "a str", ir.INT: "an int"}
    return "(" + ", ".join(named[kind] for kind in kinds) + ")"


def _written_back(body: tuple[ir.Stmt, ...], changed: list[str], end: bool) -> tuple[ir.Stmt, ...]:
    """A method's body with the int attributes it assigns stored into the state array (element `k` for the `k`th
    of `changed`) before every `return` and `raise`, and at its end where that is reached."""

    def stores(line: int) -> list[ir.Stmt]:
        return [ir.Store(STATE, ir.Const(k, line), ir.Local(name, ir.INT, line), line) for k, name in enumerate(changed)]

    def block(statements: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        for statement in statements:
            if isinstance(statement, ir.Return | ir.Raise):
                out += stores(statement.line)
            elif isinstance(statement, ir.Switch):
                cases = tuple((values, block(inner)) for values, inner in statement.cases)
                statement = replace(statement, cases=cases, default=block(statement.default))
            else:
                nested = {
                    field: block(getattr(statement, field)) for field in ("then", "orelse", "body") if hasattr(statement, field)
                }
                statement = replace(statement, **nested) if nested else statement
            out.append(statement)
        return tuple(out)

    line = body[-1].line if body else 0
    return block(body) + (tuple(stores(line)) if end else ())


def is_method(function: Node) -> bool:
    """Whether a function is defined in a class's body and takes `self` first (a method on an instance)."""
    body = function.parent.parent if function.parent is not None and function.parent.type == "block" else None
    first = function.child_by_field_name("parameters").named_children[:1]
    return body is not None and body.type == "class_definition" and [text(node) for node in first] == ["self"]


def _renamed(value: object, names: Mapping[str, str]) -> object:
    """An IR node with its sequences renamed (a method's `self.data` as the C name `self__data`)."""
    if isinstance(value, tuple):
        return tuple(_renamed(each, names) for each in value)
    if not is_dataclass(value) or isinstance(value, ir.Table | type):
        return value
    changes = {field.name: _renamed(getattr(value, field.name), names) for field in fields(value)}
    for field in ("sequence", "name", "buffer", "variable"):
        if isinstance(changes.get(field), str):
            changes[field] = names.get(changes[field], changes[field])
    if isinstance(value, ir.Function):
        changes["tables"] = {names.get(name, name): table for name, table in value.tables.items()}
        changes["locals"] = {names.get(name, name): kind for name, kind in value.locals.items()}
        changes["parameters"] = tuple(names.get(p, p) if isinstance(p, str) else p for p in changes["parameters"])
    return replace(value, **changes)


def local_names(function: Node) -> set[str]:
    """The names a function binds anywhere in its body, which Python takes as its locals throughout."""
    names = set(parameter_names(function))
    for node in walk(function.child_by_field_name("body")):
        if node.type in ("assignment", "augmented_assignment", "for_statement"):
            target = node.child_by_field_name("left")
            targets = target.named_children if target is not None and target.type == "pattern_list" else [target]
            names.update(text(name) for name in targets if name is not None and name.type == "identifier")
    return names


def _created_empty(right: Node, kind: str) -> bool:
    """Whether `right` is `bytearray()` (for a `BUFFER`) or `[]` (for a `LIST`)."""
    if kind == ir.LIST:
        return right.type == "list" and not right.named_children
    function = right.child_by_field_name("function") if right.type == "call" else None
    return function is not None and text(function) == "bytearray" and not right.child_by_field_name("arguments").named_children


def planned_buffer(function: Node) -> str | None:
    """The name the function binds to `bytearray()` first, if any."""
    for node in walk(function.child_by_field_name("body")):
        right = node.child_by_field_name("right") if node.type == "assignment" else None
        if right is not None and right.type == "call" and text(right.child_by_field_name("function")) == "bytearray":
            return text(node.child_by_field_name("left"))
    return None


def joined_names(function: Node, joiner: bytes | str = b"") -> set[str]:
    """The names the function passes to `b"".join(...)` (its local lists of byte strings), or to `"".join(...)` (its
    local lists of characters) with `joiner` `""`."""
    found = set()
    for node in walk(function):
        if node.type == "call" and _is_join(node.child_by_field_name("function"), joiner):
            found.update(text(argument) for argument in node.child_by_field_name("arguments").named_children)
    return found


def module_constants(function: Node) -> dict[str, int | bytes | str | tuple[int, ...] | dict[str | int, int]]:
    """The module's names bound once, at its top level, to an integer, a `bytes` or `str` literal, a tuple of ints or
    a dict of one-character strings (or ints) to ints: constants and tables the function may read (as the loop track
    reads module constants; a `str` only for membership and `find`, a dict for lookups and membership). A module's
    list is not one, nor a dict the function changes: any code may change it."""
    module = function
    while module.parent is not None:
        module = module.parent
    found: dict[str, int | bytes | str | tuple[int, ...]] = {}
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
            value = folded_constant(text(right), found)
            if value is None:
                continue  # not a literal, nor one of constants
        if type(value) is tuple and all(type(element) is int and -(1 << 63) <= element < 1 << 63 for element in value):
            found[text(left)] = value  # a table of ints, each held in 64 bits
        elif type(value) in (int, bytes, str) or (type(value) is dict and _lookup_dict(value)):
            found[text(left)] = value
    changed = dicts_changed(module)
    return {name: value for name, value in found.items() if bound[name] == 1 and not (type(value) is dict and name in changed)}


class _Lowering(ScratchArrays):
    """One function's lowering: the types of its names, its local buffer, what it returns and raises."""

    def __init__(self, name: str, types: dict[str, ir.Sequence | str]) -> None:
        self.name = name
        self.sequences = {n: t for n, t in types.items() if isinstance(t, ir.Sequence) and t.kind != ir.STRS}
        self.string_lists = {n: t for n, t in types.items() if isinstance(t, ir.Sequence) and t.kind == ir.STRS}
        """The list of `str` arguments: apart from `sequences`, so that only the constructs modelled for them read them."""
        self.views: dict[str, _View] = {}
        """The names a loop over a list of `str` binds to each of its `str`s."""
        self.locals: dict[str, str] = {n: ir.INT if t == BOOL else t for n, t in types.items() if isinstance(t, str)}
        self.written: set[str] = set()
        self.buffer: str | None = None
        self.outputs: list[str] = []
        """The local outputs created after `buffer`: each a `bytearray()` or a list of ints, grown with `append`."""
        self.tuples: dict[str, tuple[str, ...]] = {}
        """The lists grown with tuples, and each one's element kinds by position."""
        self.plain: set[str] = set()
        """The outputs grown with single values."""
        self.results: tuple[str, ...] | None = None
        """The outputs a `return` of one output beside `buffer`, or of a tuple of outputs, gives back."""
        self.returns: str | None = None
        self.raises: list[ir.Raise] = []
        self.broken: list[bool] = []
        self.iterated: list[str] = []
        self.constants: dict[str, int | bytes | str | tuple[int, ...] | dict[str | int, int]] = {}
        self.used: set[str] = set()
        self.joined: str | None = None
        """The local list of byte strings the function returns as `b"".join(parts)`: it is the output buffer, each
        appended byte string copied into it."""
        self.join_names: set[str] = set()
        self.text_names: set[str] = set()
        self.changed: list[str] = []
        """The int attributes a method assigns, in order: each is stored into the state array at every exit."""
        self.planned: str | None = None
        """The function's `name = bytearray()`, which a `return b""` or a returned slice before it copies into."""
        self.flags: set[str] = {n for n, t in types.items() if t == BOOL}
        """The locals (and parameters with a bool default) that hold a bool, read only as conditions."""
        self.text: str | None = None
        """The local list of characters the function returns as `"".join(chars)`: a list of code points, which the
        call gives back as a `str`."""
        self.temporaries = 0
        self.helpers: dict[str, Node] = {}
        """The helper functions the function may call, inlined at each call: its own nested `def`s (once defined)
        and the module's functions."""
        self.outer_names: set[str] = set()
        self.inlining: list[_Inlined] = []
        self.inlined = 0
        self.outermost: Node | None = None
        self.texts = StrValues()
        """The module's `str` constants used as values, and the locals holding one (`str_values`)."""
        self.nest: Nest | None = None
        """The nested lists of strings the function returns (`fsm/nested.py`), if any."""
        self.records: dict[str, int] = {}
        """The lists of tuples of ints the function does not return, each one array per field, and their arity."""
        self.named_in_returns: set[str] = set()

    def nested(self, nest: Nest) -> None:
        """The nested output's lists: each a `LIST` output holding its flat stream, the returned one `buffer`; the
        mark where each other one starts a local."""
        self.nest = nest
        self.text_names -= set(nest.chain)
        self.buffer = nest.root
        self.outputs += nest.chain[1:]
        self.sequences.update({name: ir.Sequence(name, ir.LIST, "int64", written=True) for name in nest.chain})
        self.locals.update({mark(name): ir.INT for name in nest.chain[1:]})

    def state_of(self, function: Node, attributes: Mapping[str, ir.Sequence | str]) -> None:
        """A method's attributes: each int one an int parameter `self.NAME` (stored into the state array `self.` at
        every exit where the method assigns it), each sequence one a sequence parameter."""
        clash = sorted(name for name in local_names(function) if name.startswith("self__"))
        if clash:
            raise refuse(function, f"`{clash[0]}` is a name the lowering gives a method's attribute; rename it")
        self.sequences[STATE] = ir.Sequence(STATE, ir.ARRAY, "int64")
        for name, kind in attributes.items():
            if isinstance(kind, ir.Sequence):
                self.sequences[SELF + name] = ir.Sequence(SELF + name, kind.kind, kind.dtype)
            else:
                self.locals[SELF + name] = ir.INT

    def attribute(self, node: Node) -> str | None:
        """The local an int attribute of `self` is held in (None where `node` is not an attribute of `self`)."""
        if node.type != "attribute" or STATE not in self.sequences or text(node.child_by_field_name("object")) != "self":
            return None
        name = SELF + text(node.child_by_field_name("attribute"))
        if name not in self.locals:
            kind = "a sequence" if name in self.sequences else "not an int, bytes, bytearray or str attribute"
            raise refuse(node, f"`{text(node)}` is {kind}; only an int attribute is read or assigned as a value")
        return name

    def sequence(self, name: str) -> ir.Sequence:
        declared = self.sequences[name] if name in self.sequences else self.string_lists[name]
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
        if kind == "function_definition" and node.parent.parent == self.outermost:
            self.helpers[text(node.child_by_field_name("name"))] = node
            return [], assigned | {text(node.child_by_field_name("name"))}
        if kind == "nonlocal_statement" and self.inlining:
            return [], assigned  # the names it declares are the enclosing function's, left unrenamed
        if kind == "return_statement" and self.inlining:
            return self.inlining[-1].returned(self, node, assigned), None
        if kind == "return_statement" and (inlined := self.inlined_call(node.named_children[0] if node.named_children else None)):
            lowered, results = self.inline(inlined, assigned)
            if len(results) != 1:
                raise refuse(node, f"`{text(node)[:60]}`: only one int or character is returned")
            kind = self.value_type(results[0], node)
            if self.returns not in (None, kind):
                raise refuse(node, f"returns {_named(kind)} here and {_named(self.returns)} elsewhere; return one kind of value")
            self.returns = kind
            return [*lowered, ir.Return(results[0], line)], None
        if kind == "return_statement":
            value = node.named_children[0] if node.named_children else None
            if value is not None and (slice_of(value) is not None or _bytes_literal(value) is not None):
                return self.sliced_return(value, node, assigned), None
            return [ir.Return(self.returned(value, node, assigned), line)], None
        if kind == "raise_statement":
            return self.texts.raised(self, node, assigned) or [self.raise_statement(node, assigned)], None
        raise refuse(node, NOT_MODELLED.get(kind, f"`{kind.replace('_', ' ')}` is not modelled"))

    def expression_statement(self, node: Node, assigned: frozenset[str]) -> tuple[list[ir.Stmt], frozenset[str]]:
        line = node.start_point[0] + 1
        if (scratch := self.scratch_statement(node, assigned)) is not None:
            bound = self.target_names(node.child_by_field_name("left")) if node.type == "assignment" else frozenset()
            return scratch, assigned | bound
        if node.type == "call" and (inlined := self.inlined_call(node)):
            return self.inline(inlined, assigned)[0], assigned
        if node.type in ("assignment", "augmented_assignment") and (
            inlined := self.inlined_call(node.child_by_field_name("right"))
        ):
            return self.assign_inlined(node, inlined, assigned)
        if node.type == "assignment":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if right is None:
                raise refuse(node, f"`{text(node)}` declares without assigning")
            if left.type == "pattern_list":
                return self.unpack(left, right, assigned), assigned | self.target_names(left)
            if right.type == "assignment":
                return self.chained(node, assigned)
            if _sized_bytearray(left, right):
                return self.sized_buffer(left, right, assigned), assigned | self.target_names(left)
            if (
                left.type == "identifier"
                and right.type == "subscript"
                and text(right.child_by_field_name("value")) in self.string_lists
            ):
                return self.string_at(left, right, assigned), assigned | {text(left)}
            return self.checked(self.assign(left, right, None, assigned)), assigned | self.target_names(left)
        if node.type == "augmented_assignment":
            operator = text(node.child_by_field_name("operator"))[:-1]
            left = node.child_by_field_name("left")
            if operator == "+" and left.type == "identifier" and text(left) == self.buffer and self.buffer != self.joined:
                self.ready(left, self.buffer, assigned)
                return self.extend(self.buffer, node.child_by_field_name("right"), assigned), assigned
            if operator not in ARITHMETIC:
                raise refuse(node, f"`{operator}=` is not modelled")
            left = node.child_by_field_name("left")
            return self.checked(self.assign(left, node.child_by_field_name("right"), operator, assigned)), assigned
        if node.type == "call":
            callee = node.child_by_field_name("function")
            method = text(callee.child_by_field_name("attribute")) if callee.type == "attribute" else None
            if method is not None and self.nest is not None and text(callee.child_by_field_name("object")) in self.nest.chain:
                return self.nested_append(node, method, assigned), assigned
            if method in ("append", "extend") and text(callee.child_by_field_name("object")) == self.buffer:
                arguments = node.child_by_field_name("arguments").named_children
                if len(arguments) != 1:
                    raise refuse(node, f"`{method}` takes one value")
                if method == "extend" or self.buffer == self.joined:
                    if method == "extend" and self.buffer == self.joined:
                        raise refuse(
                            node,
                            f'`{self.joined}.extend`: only `append` of byte strings is modelled on a list joined with `b"".join`',
                        )
                    self.ready(callee, self.buffer, assigned, joining=True)
                    return self.extend(self.buffer, arguments[0], assigned), assigned
            if method == "append":
                owner = text(callee.child_by_field_name("object"))
                if owner != self.buffer and owner not in self.outputs:
                    raise refuse(node, f"`{owner}.append`: only a local `bytearray()` or list `[]` the function returns is grown")
                self.ready(callee, owner, assigned)
                arguments = node.child_by_field_name("arguments").named_children
                if len(arguments) != 1:
                    raise refuse(node, "`append` takes one value")
                if owner == self.text:
                    return self.append_character(owner, arguments[0], assigned), assigned
                if text(arguments[0]) in self.outputs or text(arguments[0]) == self.buffer:
                    raise refuse(node, f"`{text(node)[:60]}`: an output appended to another (a list of lists) is not modelled")
                if arguments[0].type == "tuple":
                    return self.append_tuple(owner, arguments[0], assigned), assigned
                if owner in self.tuples:
                    raise refuse(node, f"`{text(node)[:60]}`: `{owner}` holds tuples elsewhere; append one kind of value")
                self.plain.add(owner)
                value = self.integer(arguments[0], assigned)
                if self.sequences[owner].kind == ir.LIST:
                    value = self.as_int(value, arguments[0])  # a list keeps a NumPy scalar as one
                elif not _surely_byte(value, self.sequences):  # Python raises ValueError past a byte: the original runs there
                    identity = self.lookup_table(arguments[0], bytes(range(256)), assigned)
                    negative = ir.Compare("<", value, ir.Const(0, line), line)
                    value = ir.Load(identity, ir.Select(negative, ir.Const(256, line), value, line), ir.INT, line)
                return [ir.Append(owner, value, line)], assigned
        raise refuse(node, f"`{text(node)[:60]}`: only assignments, `append` and control flow are modelled as statements")

    def nested_append(self, node: Node, method: str, assigned: frozenset[str]) -> list[ir.Stmt]:
        """`append` onto a list of the nested output: a character onto its list of characters, else an element."""
        owner = text(node.child_by_field_name("function").child_by_field_name("object"))
        arguments = node.child_by_field_name("arguments").named_children
        if method != "append" or len(arguments) != 1:
            raise refuse(node, f"`{text(node)[:60]}`: only `{owner}.append(...)` of one value is modelled on `{owner}`")
        if owner != self.nest.characters:  # type: ignore[union-attr]
            return self.nest.element(owner, arguments[0], assigned)  # type: ignore[union-attr]
        self.nest.ready(node, owner, assigned)  # type: ignore[union-attr]
        return self.append_character(owner, arguments[0], assigned)

    def checked(self, statement: ir.Stmt) -> list[ir.Stmt]:
        """An assignment, with Python's test of a value stored into a local `bytearray` (`scratch.stored`)."""
        return self.stored(statement, isinstance(statement, ir.Store) and _surely_byte(statement.value, self.sequences))

    def append_tuple(self, owner: str, argument: Node, assigned: frozenset[str]) -> list[ir.Stmt]:
        """`out.append((c, i, j))` onto a list: each element appended to the flat list in order, with the same kind
        (an int or a character) at each position at every append, so the call builds the tuples back exactly."""
        line = argument.start_point[0] + 1
        if self.sequences[owner].kind != ir.LIST:
            raise refuse(argument, f"`{owner}` is a `bytearray`: a tuple is appended only to a list")
        if owner in self.plain:
            raise refuse(argument, f"`{text(argument)[:60]}`: `{owner}` holds ints elsewhere; append one kind of value")
        values, kinds = [], []
        for element in argument.named_children:
            character = _character(element)
            if character is not None:
                values.append(ir.Const(ord(character), line))
                kinds.append(ir.CHAR)
                continue
            if (string := self.texts.element(self, element, assigned)) is not None:
                values.append(string)
                kinds.append(ir.STR)
                continue
            value = self.expression(element, assigned)
            kind = self.value_type(value, element)
            if kind != ir.CHAR:
                value, kind = self.as_int(value, element), ir.INT
            values.append(value)
            kinds.append(kind)
        shape = tuple(kinds)
        if not shape:
            raise refuse(argument, "`()`: an empty tuple is not modelled")
        merged = merged_shape(self.tuples.get(owner, shape), shape)
        if merged is None:
            raise refuse(
                argument,
                f"`{text(argument)[:60]}` is a tuple of {_shape(shape)} here and of {_shape(self.tuples[owner])} "
                f"elsewhere: the tuples of `{owner}` have one shape",
            )
        self.tuples[owner] = merged
        return [ir.Append(owner, value, line) for value in values]

    def append_character(self, owner: str, argument: Node, assigned: frozenset[str]) -> list[ir.Stmt]:
        """`chars.append(c)` or `chars.append(chr(x))` onto a list joined with `"".join`: its code point appended;
        `chr` of a number outside Python's code points raises its ValueError there."""
        line = argument.start_point[0] + 1
        callee = argument.child_by_field_name("function") if argument.type == "call" else None
        if callee is not None and text(callee) == "chr" and len(argument.child_by_field_name("arguments").named_children) == 1:
            given = argument.child_by_field_name("arguments").named_children[0]
            value = self.as_int(self.integer(given, assigned), given)
            outside = ir.Logical(
                "or", ir.Compare("<", value, ir.Const(0, line), line), ir.Compare(">", value, ir.Const(0x10FFFF, line), line), line
            )
            raised = ir.Raise("ValueError", "chr() arg not in range(0x110000)", len(self.raises) + 1, line)
            self.raises.append(raised)
            # past a C int Python raises OverflowError, with a message of its own: the original runs there
            c_int = ir.Logical(
                "and",
                ir.Compare(">=", value, ir.Const(-(1 << 31), line), line),
                ir.Compare("<", value, ir.Const(1 << 31, line), line),
                line,
            )
            overflow = ir.Load(
                self.lookup_table(argument, b"\x00", assigned),
                ir.Select(c_int, ir.Const(0, line), ir.Const(1, line), line),
                ir.INT,
                line,
            )
            checked = ir.Assign(self.temporary(line), overflow, line)
            return [ir.If(outside, (checked, raised), (), line), ir.Append(owner, value, line)]
        value = self.compared(argument, assigned) if _character(argument) is not None else self.expression(argument, assigned)
        if expression_type(value) != ir.CHAR:
            raise refuse(argument, f'`{text(argument)}`: only characters are appended to `{owner}`, which is joined with `"".join`')
        return [ir.Append(owner, ir.ToInt(value, line) if not isinstance(value, ir.Const) else value, line)]

    def target_names(self, left: Node) -> frozenset[str]:
        targets = left.named_children if left.type == "pattern_list" else [left]
        return frozenset(text(target) for target in targets if target.type == "identifier")

    def chained(self, node: Node, assigned: frozenset[str]) -> tuple[list[ir.Stmt], frozenset[str]]:
        """`a = b = 0`: the value computed once and bound to each name, left to right."""
        targets = []
        while node.type == "assignment" and node.child_by_field_name("right") is not None:
            targets.append(node.child_by_field_name("left"))
            node = node.child_by_field_name("right")
        if any(target.type != "identifier" for target in targets):
            raise refuse(targets[0], f"`{text(targets[0].parent)[:60]}`: only names are bound in a chained assignment")
        first = self.assign(targets[0], node, None, assigned)
        line = node.start_point[0] + 1
        held = ir.Local(text(targets[0]), self.locals[text(targets[0])], line)
        bound = self.flag if text(targets[0]) in self.flags else lambda target, value: self.bind(target, value, node)
        rest = [bound(target, held) for target in targets[1:]]
        return [first, *rest], assigned | {text(target) for target in targets}

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
        read = ir.locals_read(tuple(lowered))
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
        if (held_str := self.texts.assign(self, left, right, operator, assigned)) is not None:
            return held_str
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
        if left.type == "attribute" and (held := self.attribute(left)) is not None:
            value = self.as_int(self.integer(right, assigned), right)
            if operator is not None:
                value = ir.Binary(operator, ir.Local(held, ir.INT, line), value, line)
            self.changed.append(held) if held not in self.changed else None
            return ir.Assign(held, value, line)
        if left.type != "identifier":
            raise refuse(left, f"`{text(left)}`: only a name or one element is assigned")
        name = text(left)
        if self.nest is not None and name in self.nest.chain:
            return self.nest.bound(left, right, operator)
        if operator is None and name in self.outputs and _created_empty(right, self.sequences[name].kind):
            return ir.Assign(name, ir.Const(0, line), line)  # a new empty one: nothing else holds the old one
        if name in self.outputs:
            empty = "bytearray()" if self.sequences[name].kind == ir.BUFFER else "[]"
            raise refuse(left, f"`{name}` is a local output: only `{name}.append(...)` and `{name} = {empty}` again are modelled")
        if name in self.sequences and not (name == self.planned == self.buffer and operator is None):
            raise refuse(left, f"`{name}` is an argument sequence; assigning it again is not modelled")
        if operator is not None:
            current = self.name_value(left, assigned)
            value: ir.Expr = ir.Binary(operator, self.as_int(current, left), self.integer(right, assigned), line)
        elif right.type == "call" and text(right.child_by_field_name("function")) == "bytearray":
            return self.new_buffer(left, right, ir.BUFFER)
        elif right.type == "list" and not right.named_children:
            return self.new_buffer(left, right, ir.LIST)
        elif right.type in ("true", "false", "comparison_operator", "not_operator", "boolean_operator"):
            value = self.expression(right, assigned, conditions=True)
            if right.type == "boolean_operator" and not _is_condition(value):
                raise refuse(right, f"`{text(right)}` gives one of its operands, not a bool; compare them")
            return self.flag(left, value)
        else:
            value = self.expression(right, assigned)
        return self.bind(left, value, right)

    def flag(self, left: Node, value: ir.Expr) -> ir.Assign:
        """`found = False`, `seen = b == 10`, `double = not double`: a local holding a bool, kept as 0 or 1 and read
        only as a condition (as a number or a result, Python would show `True`)."""
        name, line = text(left), left.start_point[0] + 1
        if name in self.sequences or name in self.views or (name in self.locals and name not in self.flags):
            raise refuse(left, f"`{name}` holds {_named(self.locals.get(name))} elsewhere and a bool here; keep one type per name")
        self.locals[name] = ir.INT
        self.flags.add(name)
        held = value if isinstance(value, ir.Const) else ir.Select(value, ir.Const(1, line), ir.Const(0, line), line)
        return ir.Assign(name, held, line)

    def bind(self, left: Node, value: ir.Expr, right: Node) -> ir.Assign:
        """`name = value`, keeping one type per name."""
        name = text(left)
        self.texts.refuse_bound(left, value)
        if name in self.sequences or name in self.string_lists:
            raise refuse(left, f"`{name}` is an argument sequence; assigning it again is not modelled")
        if name in self.views:
            raise refuse(left, f"`{name}` is a `str` of `{self.views[name].strings}` elsewhere; keep one type per name")
        kind = self.value_type(value, right)
        if self.locals.setdefault(name, kind) != kind or name == self.buffer or name in self.flags:
            raise refuse(left, f"`{name}` holds a {self.locals[name]} elsewhere and a {kind} here; keep one type per name")
        return ir.Assign(name, value, left.start_point[0] + 1)

    def new_buffer(self, left: Node, right: Node, kind: str, sized: bool = False) -> ir.Stmt:
        empty = sized or right.type == "list" or not right.child_by_field_name("arguments").named_children
        if self.buffer == text(left) == self.planned and kind == ir.BUFFER and empty:  # a `return b""` came first
            return ir.Assign(self.buffer, ir.Const(0, left.start_point[0] + 1), left.start_point[0] + 1)
        name = text(left)
        if self.buffer is not None and empty and name not in self.sequences:
            if self.special(name):
                joined = next(n for n in (name, self.buffer) if n in self.join_names | self.text_names)
                raise refuse(right, f"`{joined}` is joined: a list joined with `join` is modelled as the only output")
            return self.new_output(left, kind)
        if self.buffer is not None or not empty:
            raise refuse(right, "only one output, a `bytearray()` or a list `[]` created empty, is modelled")
        if name in self.locals:
            raise refuse(left, f"`{name}` is already an integer")
        if kind == ir.LIST and name in self.join_names:
            kind, self.joined = ir.BUFFER, name
        elif kind == ir.LIST and name in self.text_names:
            self.text = name
        self.buffer = name
        self.sequences[name] = ir.Sequence(name, kind, "uint8" if kind == ir.BUFFER else "int64", written=True)
        return ir.Assign(name, ir.Const(0, left.start_point[0] + 1), left.start_point[0] + 1)

    def special(self, name: str) -> bool:
        """Whether a list is joined (`b"".join`, `"".join`) or the function's first output is: those are modelled
        as the only output."""
        joins = self.join_names | self.text_names
        return name in joins or self.buffer in joins or self.buffer == self.joined or self.buffer == self.text

    def new_output(self, left: Node, kind: str) -> ir.Assign:
        """A local output beside `buffer`: its own buffer, grown with `append`, read by index and length, returned
        alone or in a tuple of outputs."""
        name, line = text(left), left.start_point[0] + 1
        if name in self.locals or name in self.string_lists or name in self.views or name in self.flags:
            raise refuse(left, f"`{name}` holds another type elsewhere; keep one type per name")
        self.outputs.append(name)
        self.sequences[name] = ir.Sequence(name, kind, "uint8" if kind == ir.BUFFER else "int64", written=True)
        return ir.Assign(name, ir.Const(0, line), line)

    def inlined_call(self, node: Node | None) -> Node | None:
        """`node` if it is a call of a helper the lowering inlines."""
        if node is None or node.type != "call" or node.child_by_field_name("function").type != "identifier":
            return None
        name = text(node.child_by_field_name("function"))
        return (
            node
            if name in self.helpers and (name not in self.outer_names or self.helpers[name].parent.parent == self.outermost)
            else None
        )

    def assign_inlined(self, node: Node, call: Node, assigned: frozenset[str]) -> tuple[list[ir.Stmt], frozenset[str]]:
        """`x = f(...)`, `a, b = f(...)` or `x += f(...)`: the helper's body, then its results bound."""
        left, line = node.child_by_field_name("left"), node.start_point[0] + 1
        targets = left.named_children if left.type == "pattern_list" else [left]
        if any(target.type != "identifier" for target in targets):
            raise refuse(left, f"`{text(left)}`: only names are bound to a helper's results")
        arrays = helper_arrays(self.helpers[text(call.child_by_field_name("function"))])
        lowered, results = self.inline(call, assigned, targets if node.type == "assignment" else None)
        if len(results) + len(arrays) != len(targets):
            raise refuse(
                node, f"`{text(node)[:60]}`: `{text(call.child_by_field_name('function'))}` returns {len(results)} values here"
            )
        targets = [target for position, target in enumerate(targets) if position not in arrays]
        if node.type == "augmented_assignment":
            operator = text(node.child_by_field_name("operator"))[:-1]
            if operator not in ARITHMETIC:
                raise refuse(node, f"`{operator}=` is not modelled")
            current = self.as_int(self.name_value(left, assigned), left)
            return [*lowered, self.bind(left, ir.Binary(operator, current, self.as_int(results[0], call), line), call)], assigned
        return [*lowered, *(self.bind(t, r, call) for t, r in zip(targets, results, strict=True))], assigned | self.target_names(
            left
        )

    def inline(
        self, call: Node, assigned: frozenset[str], targets: list[Node] | None = None
    ) -> tuple[list[ir.Stmt], list[ir.Expr]]:
        """A helper's body at its call: its arguments bound to its parameters (a sequence passed by name is read in
        place), its locals renamed apart, its `return`s turned into its results' assignments. Its free names are the
        enclosing function's (a nested `def`, read as they are at the call) or the module's constants. A local array
        it returns is built under the name it is bound to (`targets`), as Python binds that very object."""
        name, line = text(call.child_by_field_name("function")), call.start_point[0] + 1
        helper = self.helpers[name]
        if name in (frame.name for frame in self.inlining) or name == self.name:
            raise refuse(call, f"recursion: `{name}` calls itself; write the loop")
        if helper.parent.type == "decorated_definition":
            raise refuse(call, f"`{name}` is decorated; only a plain helper function is inlined")
        nested = helper.parent.parent == self.outermost
        if nested and name not in assigned:
            raise refuse(call, f"`{name}` may be called before its `def` runs; define it first")
        parameters, defaults = parameter_names(helper), parameter_defaults(helper)
        given = self.call_arguments(call, parameters, defaults)
        self.inlined += 1
        prefix = f"_inl{self.inlined}_"
        if any(child.type == "=" for node in walk(helper) if node.type == "interpolation" for child in node.children):
            raise refuse(helper, f"`{name}`: an f-string's `{{name=}}` shows the name, which inlining renames; write it out")
        declared_nonlocal = {text(n) for node in walk(helper) if node.type == "nonlocal_statement" for n in node.named_children}
        if any(node.type == "global_statement" for node in walk(helper)):
            raise refuse(helper, f"`{name}`: `global` is not modelled")
        own = local_names(helper) - declared_nonlocal
        renames: dict[str, str] = {local: prefix + local for local in own}
        arrays = self.arrays_bound(call, helper, targets, own)
        renames |= {helper_arrays(helper)[position]: target for position, target in arrays.items()}
        statements: list[ir.Stmt] = []
        bound: set[str] = set()
        for parameter in parameters:
            argument = given[parameter]
            if isinstance(argument, int):
                value: ir.Expr = ir.Const(argument, line)
            elif argument.type == "identifier" and (text(argument) in self.sequences or text(argument) in self.tables()):
                self.ready(argument, text(argument), assigned)
                renames[parameter] = text(argument)
                continue
            else:
                value = self.expression(argument, assigned)
            self.locals[renames[parameter]] = self.value_type(value, argument)
            statements.append(ir.Assign(renames[parameter], value, line))
            bound.add(renames[parameter])
        if not nested:
            free = {text(node) for node in walk(helper.child_by_field_name("body")) if node.type == "identifier"} - own
            shadowed = sorted(free & self.outer_names - set(self.helpers))
            if shadowed:
                raise refuse(call, f"`{name}` reads the module's `{shadowed[0]}`, which `{self.name}` has as a local; rename one")
        body = _renamed_body(helper, renames)
        frame = _Inlined(name, arrays)
        self.inlining.append(frame)
        lowered, end = self.block(body, assigned | bound)
        self.inlining.pop()
        if has_return_in_loop(lowered):
            lowered = returns_out_of_loops(lowered, self.temporary(line))
        if end is not None and frame.kinds:
            raise refuse(call, f"`{name}` returns a value on some paths and None at its end; return one kind of value")
        statements += _tails(list(lowered))
        return statements, frame.results(line)

    def arrays_bound(self, call: Node, helper: Node, targets: list[Node] | None, own: set[str]) -> dict[int, str]:
        """The names a helper's returned local arrays are bound to at this call, by position: each a name of the
        caller's that holds no other value and that the helper does not read."""
        arrays = helper_arrays(helper)
        if arrays and targets is None:
            raise refuse(call, f"`{text(call)[:60]}` returns local arrays: bind them to names (`a, b = {text(call)[:40]}`)")
        free = {text(node) for node in walk(helper.child_by_field_name("body")) if node.type == "identifier"} - own
        bound: dict[int, str] = {}
        for position in arrays:
            target = text(targets[position]) if targets is not None and position < len(targets) else ""
            taken = target in self.locals or target in self.string_lists or target in self.views or target in self.flags
            if not target or taken or (target in self.sequences and not self.local_array(target)) or target in free:
                raise refuse(call, f"`{text(call)[:60]}` returns a local array: bind it to a name of its own")
            bound[position] = target
        return bound

    def call_arguments(self, call: Node, parameters: list[str], defaults: Mapping[str, object]) -> dict[str, Node | int]:
        """Each parameter's argument: positional, by keyword, or its int default."""
        given: dict[str, Node | int] = {}
        arguments = call.child_by_field_name("arguments").named_children
        for position, argument in enumerate(arguments):
            if argument.type == "keyword_argument":
                given[text(argument.child_by_field_name("name"))] = argument.child_by_field_name("value")
            elif argument.type in ("list_splat", "dictionary_splat") or position >= len(parameters):
                raise refuse(
                    argument, f"`{text(call)[:60]}`: only positional and keyword arguments, as many as the parameters, are modelled"
                )
            else:
                given[parameters[position]] = argument
        for parameter in parameters:
            if parameter not in given:
                if type(defaults.get(parameter)) is not int:
                    raise refuse(call, f"`{text(call)[:60]}` leaves out `{parameter}`; pass it (only an int default is filled in)")
                given[parameter] = defaults[parameter]  # type: ignore[assignment]
        if set(given) - set(parameters):
            raise refuse(call, f"`{text(call)[:60]}` passes an argument the helper does not take")
        return given

    def temporary(self, line: int, kind: str = ir.INT) -> str:
        """A fresh local the lowering needs (a leading digit: no Python name clashes with it)."""
        self.temporaries += 1
        name = f"{line}_t{self.temporaries}"
        self.locals[name] = kind
        return name

    def extend(self, owner: str, source: Node, assigned: frozenset[str]) -> list[ir.Stmt]:
        """`out.extend(x)`, `out += x` (or `parts.append(x)` on a joined list): each element of a bytes literal, a
        sequence or a slice of one appended in order. A slice's bounds are computed once, before any is appended."""
        line = source.start_point[0] + 1
        literal = _bytes_literal(source)
        if literal is not None:
            return [ir.Append(owner, ir.Const(byte, line), line) for byte in literal]
        if source.type == "identifier" and (text(source) in self.sequences or text(source) in self.tables()):
            self.ready(source, text(source), assigned)
            name, start, stop = text(source), ir.Const(0, line), ir.Length(text(source), line)
        elif slice_of(source) is not None:
            name, start, stop = self.slice_bounds(source, assigned)
        else:
            raise refuse(source, f"`{text(source)[:60]}`: only a bytes literal, a sequence or a slice of one is appended")
        sequence = self.sequences[name]
        bytes_like = sequence.kind in (ir.BYTES, ir.BYTEARRAY, ir.BUFFER) or (
            sequence.kind == ir.TABLE and isinstance(self.constants.get(name), bytes)
        )
        if self.sequences[owner].kind == ir.BUFFER and not bytes_like:
            raise refuse(source, f"`{text(source)[:60]}` is not bytes; only bytes are appended to `{owner}`")
        if sequence.element != ir.INT:
            raise refuse(source, f"`{text(source)[:60]}` holds {_named(sequence.element)}s; only ints are appended to `{owner}`")
        if owner == self.joined and source.type == "identifier" and sequence.kind not in (ir.BYTES, ir.TABLE):
            raise refuse(source, f"`{name}` may change after it is appended to `{owner}`; append a slice of it (`{name}[:]`)")
        position = self.temporary(line)
        load = ir.Load(name, ir.Local(position, ir.INT, line), ir.INT, line)
        return [ir.ForRange(position, start, stop, 1, (ir.Append(owner, load, line),), line)]

    def slice_bounds(self, node: Node, assigned: frozenset[str]) -> tuple[str, ir.Expr, ir.Expr]:
        """`data[i:j]`'s sequence and its bounds as Python clamps them: a negative bound counts from the end, and
        both are held within `0..len(data)`."""
        value, lower, upper = slice_of(node)  # type: ignore[misc]
        name, line = text(value), node.start_point[0] + 1
        self.ready(node, name, assigned)
        if value.type != "identifier" or name not in self.sequences:
            raise refuse(node, f"`{text(node)}`: only a slice of a sequence argument, a table or the output is modelled")
        length = ir.Length(name, line)

        def bound(bound_node: Node | None, default: ir.Expr) -> ir.Expr:
            if bound_node is None:
                return default
            at = self.as_int(self.integer(bound_node, assigned), bound_node)
            if isinstance(at, ir.Const):
                return (
                    ir.Binary("max", ir.Binary("+", at, length, line), ir.Const(0, line), line)
                    if at.value < 0
                    else ir.Binary("min", at, length, line)
                )
            negative = ir.Compare("<", at, ir.Const(0, line), line)
            from_end = ir.Binary("max", ir.Binary("+", at, length, line), ir.Const(0, line), line)
            return ir.Select(negative, from_end, ir.Binary("min", at, length, line), line)

        return name, bound(lower, ir.Const(0, line)), bound(upper, length)

    def sliced_return(self, value: Node, node: Node, assigned: frozenset[str]) -> list[ir.Stmt]:
        """`return data[i:j]`: the slice copied into the output buffer, which the call gives back as the slice's type
        (`bytes` of `bytes`, `bytearray` of a `bytearray`)."""
        line = node.start_point[0] + 1
        literal = _bytes_literal(value) is not None
        sequence = None if literal else self.sequences.get(text(slice_of(value)[0]))  # type: ignore[index]
        if not literal and (
            sequence is None or sequence.kind not in (ir.BYTES, ir.BYTEARRAY, ir.TABLE) or sequence.element != ir.INT
        ):
            raise refuse(value, f"`return {text(value)}`: only a slice of a `bytes` or `bytearray` argument or table is returned")
        if self.buffer is None:
            self.buffer = self.planned or f"{line}_sliced"
            self.sequences[self.buffer] = ir.Sequence(self.buffer, ir.BUFFER, "uint8", written=True)
        elif self.sequences[self.buffer].kind != ir.BUFFER:
            raise refuse(value, f"`return {text(value)}` beside the output list `{self.buffer}`: return one kind of value")
        kind = ir.BUFFER if sequence is not None and sequence.kind == ir.BYTEARRAY else ir.BYTES
        if self.returns not in (None, kind):
            raise refuse(node, f"returns {_named(kind)} here and {_named(self.returns)} elsewhere; return one kind of value")
        self.returns = kind
        copied = self.extend(self.buffer, value, assigned)
        return [ir.Assign(self.buffer, ir.Const(0, line), line), *copied, ir.Return(None, line)]

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
        prelude, condition = self.inlined_condition(node.child_by_field_name("condition"), assigned)
        alternatives = node.children_by_field_name("alternative")
        decided = _decided(condition)
        if decided is not None:  # a type check decided by the lowered types: only the side that runs is lowered
            if decided:
                then, after = self.block(node.child_by_field_name("consequence"), assigned)
                return [*prelude, *then], after
            if not alternatives:
                return prelude, assigned
            if alternatives[0].type == "else_clause":
                orelse, otherwise = self.block(alternatives[0].child_by_field_name("body"), assigned)
                return [*prelude, *orelse], otherwise
            lowered, otherwise = self.if_statement(_ElifLadder(alternatives[0], alternatives[1:]), assigned)  # type: ignore[arg-type]
            return [*prelude, *lowered], otherwise
        then, after = self.block(node.child_by_field_name("consequence"), assigned)
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
        return [*prelude, ir.If(condition, then, orelse, node.start_point[0] + 1)], joined

    def inlined_condition(self, node: Node, assigned: frozenset[str]) -> tuple[list[ir.Stmt], ir.Expr]:
        """An `if`'s (or `elif`'s) condition: a helper's call, under any `not`s, runs first (nothing else in the
        condition runs before it); anything else is an ordinary condition."""
        negated, inner = False, node
        while inner.type in ("not_operator", "parenthesized_expression"):
            negated ^= inner.type == "not_operator"
            inner = inner.child_by_field_name("argument") if inner.type == "not_operator" else inner.named_children[0]
        call = self.inlined_call(inner)
        if call is None:
            return [], self.condition(node, assigned)
        lowered, results = self.inline(call, assigned)
        if len(results) != 1:
            raise refuse(node, f"`{text(node)[:60]}`: a helper returning {len(results)} values is not a condition")
        condition = results[0]
        if expression_type(condition) == ir.CHAR:
            raise refuse(node, f"`{text(node)}`: a character as a condition is not modelled; compare it")
        line = node.start_point[0] + 1
        return lowered, ir.Not(condition, line) if negated else condition

    def for_statement(self, node: Node, assigned: frozenset[str]) -> tuple[list[ir.Stmt], frozenset[str]]:
        if node.child_by_field_name("alternative") is not None:
            raise refuse(node, "`for ... else` is not modelled")
        variable, iterable = node.child_by_field_name("left"), node.child_by_field_name("right")
        if (strings := self.strings_iterated(iterable)) is not None:
            return self.strings_loop(node, variable, iterable, strings, assigned)
        if (view := self.view(iterable, assigned)) is not None:
            return self.view_loop(node, variable, view, assigned)
        if iterable.type == "call" and text(iterable.child_by_field_name("function")) == "enumerate":
            return self.enumerate_loop(node, variable, iterable, assigned)
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
        reversed_call = iterable.type == "call" and text(iterable.child_by_field_name("function")) == "reversed"
        if reversed_call or slice_of(iterable) is not None:
            return self.positions_loop(node, variable, iterable, assigned)
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

    def enumerate_loop(
        self, node: Node, variable: Node, iterable: Node, assigned: frozenset[str]
    ) -> tuple[list[ir.Stmt], frozenset[str]]:
        """`for i, b in enumerate(data[, start])`: a `range` over the positions, the element read at the top of each
        pass (a sequence argument's length does not change while the loop runs)."""
        arguments = iterable.child_by_field_name("arguments").named_children
        targets = variable.named_children if variable.type in ("pattern_list", "tuple_pattern") else []
        if len(targets) != 2 or any(target.type != "identifier" for target in targets) or not 1 <= len(arguments) <= 2:
            raise refuse(variable, f"`for {text(variable)} in {text(iterable)}`: unpack `enumerate(sequence)` into two names")
        index, element = (text(target) for target in targets)
        if index == element:
            raise refuse(variable, f"`{text(variable)}` binds one name twice")
        start = self.constant(arguments[1]) if len(arguments) == 2 else 0
        seen = arguments[0]
        self.ready(seen, text(seen), assigned)
        sequence = self.sequences.get(text(seen))
        if seen.type != "identifier" or sequence is None or sequence.kind in (ir.BUFFER, ir.LIST):
            raise refuse(seen, f"`for` over `{text(iterable)}`: only sequence arguments and tables are enumerated")
        line = node.start_point[0] + 1
        self.declare(targets[0], ir.INT)
        self.declare(targets[1], sequence.element)
        position: ir.Expr = ir.Local(index, ir.INT, line)
        if start:
            position = ir.Binary("-", position, ir.Const(start, line), line)
        first = ir.Assign(element, ir.Load(sequence.name, position, sequence.element, line), line)
        self.iterated.append(sequence.name)
        self.broken.append(False)
        body, _ = self.block(node.child_by_field_name("body"), assigned | {index, element})
        self.broken.pop()
        self.iterated.pop()
        stop = (
            ir.Binary("+", ir.Length(sequence.name, line), ir.Const(start, line), line) if start else ir.Length(sequence.name, line)
        )
        return [ir.ForRange(index, ir.Const(start, line), stop, 1, (first, *body), line)], assigned

    def positions_loop(
        self, node: Node, variable: Node, iterable: Node, assigned: frozenset[str]
    ) -> tuple[list[ir.Stmt], frozenset[str]]:
        """`for b in reversed(data)` or `for b in data[i:j]`: a `range` over the positions (a slice's bounds clamped
        as Python's, computed once), the element read at the top of each pass. The sequence is not written in the
        loop, so reading it in place gives what Python's reversed iterator or slice copy gives."""
        line = node.start_point[0] + 1
        if slice_of(iterable) is not None:
            name, start, stop = self.slice_bounds(iterable, assigned)
            step = 1
        else:
            arguments = iterable.child_by_field_name("arguments").named_children
            if len(arguments) != 1 or arguments[0].type != "identifier":
                raise refuse(iterable, f"`for` over `{text(iterable)}`: only `reversed` of a sequence argument is iterated")
            name = text(arguments[0])
            self.ready(arguments[0], name, assigned)
            start, stop, step = ir.Binary("-", ir.Length(name, line), ir.Const(1, line), line), ir.Const(-1, line), -1
        sequence = self.sequences.get(name)
        if sequence is None or sequence.kind in (ir.BUFFER, ir.LIST):
            raise refuse(iterable, f"`for` over `{text(iterable)}`: only sequence arguments and tables are iterated")
        if variable.type != "identifier":
            raise refuse(variable, f"loop target `{text(variable)}` must be one name")
        self.declare(variable, sequence.element)
        position = self.temporary(line)
        first = ir.Assign(text(variable), ir.Load(name, ir.Local(position, ir.INT, line), sequence.element, line), line)
        self.iterated.append(name)
        self.broken.append(False)
        body, _ = self.block(node.child_by_field_name("body"), assigned | {text(variable)})
        self.broken.pop()
        self.iterated.pop()
        return [ir.ForRange(position, start, stop, step, (first, *body), line)], assigned

    def strings_iterated(self, iterable: Node) -> str | None:
        """The list of `str` argument a `for` runs over, itself or under `enumerate`, where it is one."""
        if iterable.type == "call" and text(iterable.child_by_field_name("function")) == "enumerate":
            iterable = next(iter(iterable.child_by_field_name("arguments").named_children), iterable)
        return text(iterable) if iterable.type == "identifier" and text(iterable) in self.string_lists else None

    def strings_loop(
        self, node: Node, variable: Node, iterable: Node, strings: str, assigned: frozenset[str]
    ) -> tuple[list[ir.Stmt], frozenset[str]]:
        """`for s in strings` or `for k, s in enumerate(strings[, start])` over a list of `str` argument: a `range`
        over its count, each pass reading where its `str` starts and ends in the list's buffer; `s` is read in place
        through those two positions (a `str` is immutable, and the list is read only)."""
        line = node.start_point[0] + 1
        start, index = 0, None
        element = variable
        if iterable.type == "call":
            arguments = iterable.child_by_field_name("arguments").named_children
            targets = variable.named_children if variable.type in ("pattern_list", "tuple_pattern") else []
            if len(targets) != 2 or not 1 <= len(arguments) <= 2:
                raise refuse(variable, f"`for {text(variable)} in {text(iterable)}`: unpack `enumerate(sequence)` into two names")
            index, element = targets
            start = self.constant(arguments[1]) if len(arguments) == 2 else 0
        if element.type != "identifier" or (index is not None and index.type != "identifier"):
            raise refuse(variable, f"loop target `{text(variable)}`: only names are bound")
        name = text(element)
        if index is not None and text(index) == name:
            raise refuse(variable, f"`{text(variable)}` binds one name twice")
        if name in assigned or name in self.locals or name in self.sequences or name in self.string_lists:
            raise refuse(element, f"`{name}` is bound elsewhere too; a `str` of `{strings}` is modelled under a name of its own")
        counter = self.temporary(line) if index is None else text(index)
        if index is not None:
            self.declare(index, ir.INT)
        self.used.add(strings)
        position: ir.Expr = ir.Local(counter, ir.INT, line)
        if start:
            position = ir.Binary("-", position, ir.Const(start, line), line)
        view = _View(strings, self.temporary(line), self.temporary(line))
        first = (
            ir.Assign(view.start, ir.Load(strings, ir.Binary("+", position, ir.Const(1, line), line), ir.INT, line), line),
            ir.Assign(view.end, ir.Load(strings, ir.Binary("+", position, ir.Const(2, line), line), ir.INT, line), line),
        )
        self.views[name] = view
        self.broken.append(False)
        body, _ = self.block(node.child_by_field_name("body"), assigned | {counter, name})
        self.broken.pop()
        stop: ir.Expr = ir.Load(strings, ir.Const(0, line), ir.INT, line)
        if start:
            stop = ir.Binary("+", stop, ir.Const(start, line), line)
        return [ir.ForRange(counter, ir.Const(start, line), stop, 1, (*first, *body), line)], assigned

    def string_at(self, left: Node, right: Node, assigned: frozenset[str]) -> list[ir.Stmt]:
        """`s = strings[k]`: `k` counted from the end where negative; a `k` outside the list reads at `OUTSIDE`, so
        the call runs the original (its IndexError). `s` is bound here only, read in place as in a loop over the
        list."""
        strings, name, line = text(right.child_by_field_name("value")), text(left), left.start_point[0] + 1
        pieces = right.children_by_field_name("subscript")
        if len(pieces) != 1 or pieces[0].type == "slice":
            raise refuse(right, f"`{text(right)}`: only one `str` of `{strings}` is read at a time")
        if name in self.views or name in self.locals or name in self.sequences or name in self.string_lists:
            raise refuse(left, f"`{name}` is bound elsewhere too; a `str` of `{strings}` is modelled under a name of its own")
        index = self.as_int(self.integer(pieces[0], assigned), pieces[0])
        count, zero = ir.Load(strings, ir.Const(0, line), ir.INT, line), ir.Const(0, line)
        self.used.add(strings)
        held = self.temporary(line)
        at = ir.Select(ir.Compare("<", index, zero, line), ir.Binary("+", index, count, line), index, line)
        inside = ir.Logical("and", ir.Compare(">=", at, zero, line), ir.Compare("<", at, count, line), line)
        position = ir.Local(held, ir.INT, line)
        view = _View(strings, self.temporary(line), self.temporary(line))
        self.views[name] = view
        return [
            ir.Assign(held, ir.Select(inside, at, ir.Const(OUTSIDE, line), line), line),
            ir.Assign(view.start, ir.Load(strings, ir.Binary("+", position, ir.Const(1, line), line), ir.INT, line), line),
            ir.Assign(view.end, ir.Load(strings, ir.Binary("+", position, ir.Const(2, line), line), ir.INT, line), line),
        ]

    def view(self, node: Node, assigned: frozenset[str]) -> _View | None:
        """The `str` of a list a name is bound to by a loop over that list (None where `node` is not one)."""
        name = text(node)
        if node.type != "identifier" or name not in self.views:
            return None
        if name not in assigned:
            raise refuse(node, f"`{name}` may be read before it is assigned (Python raises UnboundLocalError); assign it first")
        return self.views[name]

    def length_of(self, node: Node, assigned: frozenset[str]) -> ir.Expr:
        """`len(s)` of a list's `str` (its end less its start), or `len(strings)` of the list (its count)."""
        line = node.start_point[0] + 1
        view = self.view(node, assigned)
        if view is None:
            self.used.add(text(node))
            return ir.Load(text(node), ir.Const(0, line), ir.INT, line)
        return ir.Binary("-", ir.Local(view.end, ir.INT, line), ir.Local(view.start, ir.INT, line), line)

    def view_character(self, node: Node, view: _View, assigned: frozenset[str]) -> ir.Expr:
        """`s[i]` of a list's `str`: `i` counted from the end where negative, then read at the `str`'s start; an `i`
        outside the `str` reads at `OUTSIDE`, out of every range, so the call runs the original (its IndexError)."""
        pieces = node.children_by_field_name("subscript")
        if len(pieces) != 1 or pieces[0].type == "slice":
            raise refuse(node, f"`{text(node)}`: only one character of a `str` of `{view.strings}` is read at a time")
        line = node.start_point[0] + 1
        index = self.as_int(self.integer(pieces[0], assigned), pieces[0])
        length = self.length_of(node.child_by_field_name("value"), assigned)
        zero = ir.Const(0, line)
        at = ir.Select(ir.Compare("<", index, zero, line), ir.Binary("+", index, length, line), index, line)
        inside = ir.Logical("and", ir.Compare(">=", at, zero, line), ir.Compare("<", at, length, line), line)
        start = ir.Local(view.start, ir.INT, line)
        where = ir.Select(inside, ir.Binary("+", start, at, line), ir.Const(OUTSIDE, line), line)
        return ir.Load(view.strings, where, ir.CHAR, line)

    def view_loop(self, node: Node, variable: Node, view: _View, assigned: frozenset[str]) -> tuple[list[ir.Stmt], frozenset[str]]:
        """`for c in s` over a list's `str`: its characters in place, from its start to its end."""
        if variable.type != "identifier":
            raise refuse(variable, f"loop target `{text(variable)}` must be one name")
        line = node.start_point[0] + 1
        self.declare(variable, ir.CHAR)
        position = self.temporary(line)
        first = ir.Assign(text(variable), ir.Load(view.strings, ir.Local(position, ir.INT, line), ir.CHAR, line), line)
        self.broken.append(False)
        body, _ = self.block(node.child_by_field_name("body"), assigned | {text(variable)})
        self.broken.pop()
        start, end = ir.Local(view.start, ir.INT, line), ir.Local(view.end, ir.INT, line)
        return [ir.ForRange(position, start, end, 1, (first, *body), line)], assigned

    def sized_buffer(self, left: Node, right: Node, assigned: frozenset[str]) -> list[ir.Stmt]:
        """`out = bytearray(n)`: the output made of `n` zero bytes (appended one at a time), after Python's
        ValueError for a negative `n`."""
        arguments = right.child_by_field_name("arguments").named_children
        given = arguments[0]
        named = text(given) if given.type == "identifier" else None
        if (
            len(arguments) != 1
            or given.type in ("keyword_argument", "list_splat", "dictionary_splat", "string", "concatenated_string")
            or named in self.sequences
            or named in self.string_lists
            or named in self.tables()
        ):
            raise refuse(right, f"`{text(right)[:60]}`: only `bytearray()` and `bytearray(n)` of an int are modelled as the output")
        line = right.start_point[0] + 1
        count = self.as_int(self.integer(given, assigned), given)
        held = self.temporary(line)
        raised = ir.Raise("ValueError", "negative count", len(self.raises) + 1, line)
        self.raises.append(raised)
        created = self.new_buffer(left, right, ir.BUFFER, sized=True)
        position = self.temporary(line)
        fill = ir.ForRange(
            position, ir.Const(0, line), ir.Local(held, ir.INT, line), 1, (ir.Append(text(left), ir.Const(0, line), line),), line
        )
        negative = ir.Compare("<", ir.Local(held, ir.INT, line), ir.Const(0, line), line)
        return [ir.Assign(held, count, line), ir.If(negative, (raised,), (), line), created, fill]

    def declare(self, variable: Node, kind: str) -> None:
        name = text(variable)
        if name in self.views:
            raise refuse(variable, f"`{name}` is a `str` of `{self.views[name].strings}` elsewhere; keep one type per name")
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
        elif self.nest is not None and value.type == "identifier" and text(value) in self.nest.chain:
            kind, lowered = self.nest.returned(value, assigned), None
        elif self.joined is not None and value.type == "call" and _is_bytes_join(value.child_by_field_name("function")):
            joined = value.child_by_field_name("arguments").named_children
            if [text(argument) for argument in joined] != [self.joined]:
                raise refuse(value, f'`{text(value)[:60]}`: only `b"".join({self.joined})` is joined')
            self.ready(value, self.joined, assigned, joining=True)
            kind, lowered = ir.BYTES, None
        elif self.text is not None and value.type == "call" and _is_join(value.child_by_field_name("function"), ""):
            if [text(argument) for argument in value.child_by_field_name("arguments").named_children] != [self.text]:
                raise refuse(value, f'`{text(value)[:60]}`: only `"".join({self.text})` is joined')
            self.ready(value, self.text, assigned)
            kind, lowered = ir.TEXT, None
        elif (
            self.buffer is not None
            and value.type == "call"
            and text(value.child_by_field_name("function")) == "bytes"
            and [text(argument) for argument in value.child_by_field_name("arguments").named_children] == [self.buffer]
            and self.sequences[self.buffer].kind == ir.BUFFER
        ):
            self.ready(value, self.buffer, assigned)
            kind, lowered = ir.BYTES, None
        elif value.type == "identifier" and text(value) == self.buffer and not self.outputs:
            self.ready(value, self.buffer, assigned)
            kind, lowered = self.sequences[self.buffer].kind, None
        elif value.type in ("identifier", "expression_list", "tuple") and self.names_an_array(value):
            kind, lowered = self.returned_outputs(value, assigned), None
        else:
            lowered = self.expression(value, assigned)
            kind = self.value_type(lowered, value)
        if self.returns not in (None, kind):
            raise refuse(node, f"returns {_named(kind)} here and {_named(self.returns)} elsewhere; return one kind of value")
        self.returns = kind
        return lowered

    def returned_outputs(self, value: Node, assigned: frozenset[str]) -> str:
        """`return out`, `return ops, args`: outputs by name (`OUTPUT`, `TUPLE`), the same ones at every `return`."""
        names = [value] if value.type == "identifier" else value.named_children
        outputs = {self.buffer, *self.outputs}
        for name in names:
            if name.type != "identifier" or text(name) not in outputs:
                raise refuse(name, f"`{text(name)[:60]}`: a tuple of the local outputs (`bytearray()`, lists of ints) is returned")
            if self.special(text(name)):
                raise refuse(name, f"`{text(name)}` is joined: return its join alone")
            self.ready(name, text(name), assigned)
        results = tuple(text(name) for name in names)
        if len(set(results)) != len(results):
            raise refuse(value, f"`{text(value)[:60]}` returns one output twice: return each once")
        if self.results not in (None, results):
            elsewhere = ", ".join(self.results)
            raise refuse(value, f"returns `{text(value)[:60]}` here and `{elsewhere}` elsewhere: return the same outputs")
        self.results = results
        return ir.OUTPUT if value.type == "identifier" else ir.TUPLE

    def raise_statement(self, node: Node, assigned: frozenset[str], fixed: Mapping[str, str] | None = None) -> ir.Raise:
        """`raise E(message)`; `fixed` gives the `str` constant each local it names holds on this path."""
        exception = node.named_children[0] if node.named_children else None
        if exception is None or len(node.named_children) > 1:
            raise refuse(node, "a bare `raise` or `raise ... from ...` is not modelled")
        message, values = "", []
        if exception.type == "call":
            arguments = exception.child_by_field_name("arguments").named_children
            if len(arguments) > 1 or (arguments and arguments[0].type not in ("string", "concatenated_string")):
                raise refuse(node, "a raised exception's message must be one string (an f-string of ints is modelled)")
            if arguments:
                message, values = self.message(arguments[0], assigned, fixed or {})
            exception = exception.child_by_field_name("function")
        if exception.type != "identifier":
            raise refuse(node, f"`raise {text(exception)}`: raise an exception class by its name")
        characters = tuple(expression_type(value) == ir.CHAR for value in values)
        line = node.start_point[0] + 1
        raised = ir.Raise(text(exception), message, len(self.raises) + 1, line, tuple(values), characters)
        self.raises.append(raised)
        return raised

    def message(self, node: Node, assigned: frozenset[str], fixed: Mapping[str, str]) -> tuple[str, list[ir.Expr]]:
        """A raised message as a `str.format` template and the values of its interpolations, each an int or a
        character (formatted by Python itself, so `{i:04x}` and `{c!r}` read as the f-string does), or a local
        `fixed` gives the `str` constant of (formatted here)."""
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
            if text(expression) in fixed:
                shown = formatted(fixed[text(expression)], part.conversion, spec)
                template.append(shown.replace("{", "{{").replace("}", "}}"))
                continue
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

    def ready(self, node: Node, name: str, assigned: frozenset[str], joining: bool = False) -> None:
        if name == self.text and node.type not in ("attribute", "call"):
            raise refuse(
                node, f'`{name}` is joined with `"".join`: only `{name}.append(...)` of characters and the join are modelled'
            )
        self.readied(node, name, assigned, joining)

    def readied(self, node: Node, name: str, assigned: frozenset[str], joining: bool) -> None:
        """The output `bytearray()` is used only where it was created on every path before; a table is emitted
        where it is read; a list joined with `b"".join` is only appended to and joined (`joining`); a list of the
        nested output only as `nested.py` models it."""
        if self.nest is not None and name in self.nest.chain:
            raise refuse(
                node,
                f"`{name}` is a list of the nested output `{self.nest.root}`: only `append`, `{name} = []` and "
                f"`return {self.nest.root}` are modelled",
            )
        if name == self.joined and self.joined is not None and not joining:
            raise refuse(
                node, f'`{name}` is joined with `b"".join`: only `{name}.append(...)` of byte strings and the join are modelled'
            )
        if name in self.tables() and name not in self.sequences:
            self.sequences[name] = ir.Sequence(name, ir.TABLE, "uint8" if isinstance(self.constants[name], bytes) else "int64")
        self.used.add(name)
        if (name == self.buffer or name in self.outputs) and name not in assigned:
            raise refuse(node, f"`{name}` may be used before `{name} = bytearray()` runs; create it first")

    def tables(self) -> set[str]:
        """The module's `bytes` constants the function may read."""
        return {name for name, value in self.constants.items() if isinstance(value, bytes | tuple)}

    def name_value(self, node: Node, assigned: frozenset[str], flag: bool = False) -> ir.Expr:
        name = text(node)
        self.texts.refuse_read(node)
        if name in self.flags and not flag:
            raise refuse(node, f"`{name}` holds a bool: it is modelled only as a condition (as a number Python shows `True`)")
        if name in self.sequences or name in self.tables():
            raise refuse(node, f"`{name}` is a sequence; index it or take its `len`")
        if name in self.views or name in self.string_lists:
            raise refuse(node, f"`{name}` is {_strings_named(name, self.views)}: only {STRINGS_READ} are modelled")
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
        if kind == "identifier" and conditions and (text(node) in self.views or text(node) in self.string_lists):
            return ir.Compare(
                "!=", self.length_of(node, assigned), ir.Const(0, line), line
            )  # a `str` or list is true where not empty
        if kind == "identifier" and conditions and (text(node) in self.sequences or text(node) in self.tables()):
            self.ready(node, text(node), assigned)  # `if not data:`, a sequence is true where it is not empty
            return ir.Compare("!=", ir.Length(text(node), line), ir.Const(0, line), line)
        if kind == "attribute" and (held := self.attribute(node)) is not None:
            return ir.Local(held, ir.INT, line)
        if kind == "identifier" and conditions and text(node) in self.flags:
            return ir.Compare("!=", self.name_value(node, assigned, flag=True), ir.Const(0, line), line)
        if kind == "identifier":
            return self.name_value(node, assigned)
        if kind == "subscript":
            if (field := self.record_field(node, assigned)) is not None:
                return field
            self.whole_record(node)
            name = text(node.child_by_field_name("value"))
            if isinstance(self.constants.get(name), dict) and len(node.children_by_field_name("subscript")) == 1:
                return self.dict_lookup(node.child_by_field_name("subscript"), self.constants[name], None, assigned)  # type: ignore[arg-type]
            if (view := self.view(node.child_by_field_name("value"), assigned)) is not None:
                return self.view_character(node, view, assigned)
            if name in self.string_lists:
                raise refuse(
                    node, f"`{text(node)}`: a `str` of `{name}` is read through `for s in {name}`, `enumerate` or `s = {name}[k]`"
                )
            self.ready(node, name, assigned)
            if name not in self.sequences:
                raise refuse(node, f"`{name}` is not a sequence argument, a module's table or the output `bytearray()`")
            if len(node.children_by_field_name("subscript")) != 1 or node.child_by_field_name("subscript").type == "slice":
                raise refuse(
                    node,
                    f"`{text(node)}`: a slice is modelled only where it is appended, extended, compared with a bytes "
                    "literal or returned; elsewhere one element is read at a time",
                )
            index = self.as_int(self.integer(node.child_by_field_name("subscript"), assigned), node)
            return ir.Load(name, index, self.sequences[name].element, line)
        if kind == "binary_operator":
            operator = text(node.child_by_field_name("operator"))
            if operator not in ARITHMETIC and operator != "**":
                raise refuse(node, f"`{operator}` is not modelled (integer arithmetic: {' '.join(sorted(ARITHMETIC))})")
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if operator == "**":
                return self.power(node, left, right, assigned)
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

    def power(self, node: Node, left: Node, right: Node, assigned: frozenset[str]) -> ir.Expr:
        """`2**32`: a power of constants is its value (a mask or a modulus written as a power); others are refused."""
        base, exponent = self.expression(left, assigned), self.expression(right, assigned)
        if not (isinstance(base, ir.Const) and isinstance(exponent, ir.Const) and 0 <= exponent.value <= 64):
            raise refuse(node, f"`{text(node)}`: only a power of integer constants (an exponent up to 64) is modelled")
        value = base.value**exponent.value
        if not -(1 << 63) <= value < 1 << 63:
            raise refuse(node, f"`{text(node)}` does not fit in 64 bits")
        return ir.Const(value, node.start_point[0] + 1)

    def call(self, node: Node, assigned: frozenset[str]) -> ir.Expr:
        callee = node.child_by_field_name("function")
        name, line = text(callee), node.start_point[0] + 1
        arguments = node.child_by_field_name("arguments").named_children
        if name == self.name:
            raise refuse(node, f"recursion: `{name}` calls itself; write the loop")
        if self.inlined_call(node) is not None:
            raise refuse(
                node,
                f"`{text(node)[:60]}`: a helper is inlined where its call is a statement, an assignment's whole value "
                "or a `return`'s; assign it to a name first",
            )
        if name == "isinstance" and len(arguments) == 2:
            return ir.Const(int(self.instance_of(arguments[0], arguments[1])), line)
        if name == "len" and len(arguments) == 1 and (text(arguments[0]) in self.views or text(arguments[0]) in self.string_lists):
            return self.length_of(arguments[0], assigned)
        if name == "len" and len(arguments) == 1 and (length := self.texts.length(self, node, arguments[0], assigned)):
            return length
        if name == "len" and len(arguments) == 1:
            measured = text(arguments[0])
            self.ready(node, measured, assigned)
            if measured not in self.sequences:
                raise refuse(node, f"`{text(node)}`: only a sequence's length is modelled")
            return ir.Length(measured, line)
        if name == "ord" and len(arguments) == 1 and (character := _character(arguments[0])) is not None:
            return ir.Const(ord(character), line)
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
            self.pop_inside(node)
            return self.method(node, callee, arguments, assigned)
        raise refuse(
            node, f"`{name}(...)` is not modelled (calls: `len`, `int`, `min`/`max` of two ints, `range` in a `for`, `bytearray()`)"
        )

    def method(self, node: Node, callee: Node, arguments: list[Node], assigned: frozenset[str]) -> ir.Expr:
        """`c.isdigit()` and the other character tests of a `str`'s character, `ALPHABET.find(c)` on a module `str`
        or `bytes` constant, `TABLE.get(c, default)` on a module dict. A test or a search reads a table Python
        computed; where the character is past the table (a test past Latin-1, a `bytes` search of an int outside
        0..255, which Python refuses), the index is out of range and the call runs the original."""
        owner, method, line = (
            callee.child_by_field_name("object"),
            text(callee.child_by_field_name("attribute")),
            node.start_point[0] + 1,
        )
        constant = self.constants.get(text(owner)) if owner.type == "identifier" and text(owner) not in self.locals else None
        if method in CHARACTER_TESTS and not arguments:
            value = self.expression(owner, assigned)
            if expression_type(value) == ir.CHAR:
                table = self.lookup_table(owner, bytes(int(getattr(chr(code), method)()) for code in range(256)), assigned)
                inside = ir.Compare("<", value, ir.Const(256, line), line)
                index = ir.Select(inside, ir.ToInt(value, line), ir.Const(256, line), line)
                return ir.Compare("!=", ir.Load(table, index, ir.INT, line), ir.Const(0, line), line)
        if method == "find" and len(arguments) == 1 and type(constant) in (str, bytes):
            value = self.compared(arguments[0], assigned)
            character = expression_type(value) == ir.CHAR or _character(arguments[0]) is not None
            if character and type(constant) is str:
                found = tuple(constant.find(chr(code)) for code in range(max(map(ord, constant), default=0) + 1))
                table = self.lookup_table(owner, found, assigned)
                inside = ir.Compare("<", value, ir.Const(len(found), line), line)
                return ir.Select(inside, ir.Load(table, ir.ToInt(value, line), ir.INT, line), ir.Const(-1, line), line)
            if not character and type(constant) is bytes:
                table = self.lookup_table(owner, tuple(constant.find(byte) for byte in range(256)), assigned)
                negative = ir.Compare("<", value, ir.Const(0, line), line)
                return ir.Load(table, ir.Select(negative, ir.Const(256, line), value, line), ir.INT, line)
        if method == "get" and len(arguments) == 2 and isinstance(constant, dict):
            default = self.as_int(self.integer(arguments[1], assigned), arguments[1])
            return self.dict_lookup(arguments[0], constant, default, assigned)
        raise refuse(node, f"`{text(node)[:60]}`: method calls on objects are not modelled")

    def lookup_table(self, node: Node, entries: bytes | tuple[int, ...], assigned: frozenset[str]) -> str:
        """A constant table the lowering computed, read like a module's."""
        name = f"{node.start_point[0] + 1}_lookup{len(self.constants)}"
        self.constants[name] = entries
        self.ready(node, name, assigned)
        return name

    def dict_lookup(self, key: Node, table: dict[str | int, int], default: ir.Expr | None, assigned: frozenset[str]) -> ir.Expr:
        """`TABLE[key]` or `TABLE.get(key, default)` on a module dict of one-character strings or ints to ints: the
        keys compared in order; a missing key gives the default, or (`KeyError` in Python) reads past a one-entry
        table, so the call runs the original."""
        line = key.start_point[0] + 1
        if record_arity(table) is not None:
            read = key.parent.parent if key.parent.type == "argument_list" else key.parent
            raise refuse(read, f"`{text(read)[:60]}` is a tuple: unpack it at once (`a, b = TABLE[key]`)")
        value = self.compared(key, assigned)
        character = expression_type(value) == ir.CHAR or _character(key) is not None
        if character != isinstance(next(iter(table), ""), str):
            looked = _named(ir.CHAR if character else ir.INT)
            raise refuse(key, f"`{text(key.parent.parent)[:60]}` looks up {looked} in a dict of other keys")
        if default is None:
            default = ir.Load(self.lookup_table(key, b"\x00", assigned), ir.Const(1, line), ir.INT, line)
        result = default
        for each, found in reversed(table.items()):
            wanted = ir.Const(ord(each) if isinstance(each, str) else each, line)
            result = ir.Select(ir.Compare("==", value, wanted, line), ir.Const(found, line), result, line)
        return result

    def instance_of(self, value: Node, classes: Node) -> bool:
        """`isinstance(x, int)` or `isinstance(data, (bytes, bytearray))`, decided by the type the function was
        lowered for: the native code is only called with exactly that type (any other call runs the original,
        which raises as it would), so a type check at entry becomes a guard at the call."""
        names = classes.named_children if classes.type == "tuple" else [classes]
        shadowed = [text(n) for n in names if text(n) in self.constants or text(n) in self.helpers or text(n) in self.locals]
        if value.type != "identifier" or not names or shadowed or any(text(n) not in INSTANCE_CLASSES for n in names):
            raise refuse(
                value.parent.parent,
                f"`{text(value.parent.parent)[:60]}`: only `isinstance` of a name against builtin "
                f"{', '.join(INSTANCE_CLASSES)} (or a tuple of them) is modelled",
            )
        name = text(value)
        held = self.sequences[name].kind if name in self.sequences else self.locals.get(name)
        ambiguous = held == ir.INTS and len({"list", "tuple"} & {text(n) for n in names}) == 1  # a list or a tuple
        if held is None or name == self.buffer or name in self.flags or ambiguous:
            raise refuse(value, f"`isinstance({name}, ...)`: `{name}`'s type is not known exactly here")
        return any(held in INSTANCE_CLASSES[text(n)] for n in names)

    def comparison(self, node: Node, assigned: frozenset[str]) -> ir.Expr:
        operands = node.named_children
        operators = [" ".join(text(child).split()) for child in node.children if not child.is_named]
        line = node.start_point[0] + 1
        if operators in (["in"], ["not in"]):
            found = self.membership(operands[0], operands[1], assigned)
            return ir.Not(found, line) if operators == ["not in"] else found
        if operators in (["=="], ["!="]) and any(slice_of(operand) is not None for operand in operands):
            equal = self.texts.slice_equals(self, *operands, assigned) or self.slice_equals(*operands, assigned)
            return ir.Not(equal, line) if operators == ["!="] else equal
        if any(operator not in COMPARISONS for operator in operators):
            raise refuse(node, f"`{text(node)}`: only integer comparisons are modelled (not `in` or `is`)")
        values = [self.compared(operand, assigned) for operand in operands]
        characters = {
            expression_type(value) == ir.CHAR or _character(operand) is not None
            for value, operand in zip(values, operands, strict=True)
        }
        if len(characters) > 1:
            raise refuse(node, f"`{text(node)}` compares a character with a number; write `ord(...)` for its code point")
        result: ir.Expr | None = None
        for operator, left, right in zip(operators, values, values[1:], strict=False):
            pair = ir.Compare(operator, left, right, line)
            result = pair if result is None else ir.Logical("and", result, pair, line)
        return result  # type: ignore[return-value]

    def membership(self, left: Node, right: Node, assigned: frozenset[str]) -> ir.Expr:
        """`x in (1, 2, 3)`, `c in "+-"`, `x in b"abc"` or `x in TABLE` against constants: an int or a character
        equal to one of them. An int tested against bytes reads a 256-entry table at `x`: Python raises ValueError
        for an `x` outside 0..255, and there the index is out of range, so the call runs the original."""
        line = left.start_point[0] + 1
        value = self.compared(left, assigned)
        character = expression_type(value) == ir.CHAR
        literal = _bytes_literal(right)
        if literal is None and right.type == "identifier" and isinstance(self.constants.get(text(right)), bytes):
            literal = self.constants[text(right)]  # type: ignore[assignment]
        if literal is not None and not character:
            table = f"{line}_in{len(self.constants)}"
            self.constants[table] = bytes(int(byte in literal) for byte in range(256))
            self.ready(right, table, assigned)
            index = (
                value
                if isinstance(value, ir.Load) and self.sequences[value.sequence].dtype == "uint8" and value.type == ir.INT
                else (ir.Select(ir.Compare("<", value, ir.Const(0, line), line), ir.Const(256, line), value, line))
            )
            return ir.Compare("!=", ir.Load(table, index, ir.INT, line), ir.Const(0, line), line)
        if right.type == "identifier" and character and type(self.constants.get(text(right))) is str:
            candidates = [ir.Const(ord(c), line) for c in dict.fromkeys(self.constants[text(right)])]  # type: ignore[union-attr]
        elif (
            right.type == "string"
            and character
            and _bytes_literal(right) is None
            and not any(c.type == "interpolation" for c in right.named_children)
        ):
            candidates = [ir.Const(ord(c), line) for c in dict.fromkeys(ast.literal_eval(text(right)))]
        elif right.type == "identifier" and isinstance(self.constants.get(text(right), self.texts.dicts.get(text(right))), dict):
            keys = list(self.constants.get(text(right), self.texts.dicts.get(text(right))))  # type: ignore[arg-type]
            if isinstance(keys[0], str) != character:
                raise refuse(right, f"`{text(left)} in {text(right)}` mixes characters and numbers; compare like with like")
            candidates = [ir.Const(ord(key) if isinstance(key, str) else key, line) for key in keys]
        elif right.type == "tuple":
            candidates = [self.compared(element, assigned) for element in right.named_children]
            if {
                expression_type(c) == ir.CHAR or _character(e) is not None
                for c, e in zip(candidates, right.named_children, strict=True)
            } - {character}:
                raise refuse(right, f"`{text(left)} in {text(right)}` mixes characters and numbers; compare like with like")
        elif right.type == "identifier" and isinstance(self.constants.get(text(right)), tuple) and not character:
            candidates = [ir.Const(element, line) for element in self.constants[text(right)]]  # type: ignore[union-attr]
        else:
            raise refuse(
                right,
                f"`{text(left)} in {text(right)[:40]}`: only membership in a tuple, a `str` or `bytes` literal, or a module "
                "constant, of an int or a character of the same kind, is modelled",
            )
        result: ir.Expr = ir.Compare("!=", ir.Const(0, line), ir.Const(0, line), line)
        for position, candidate in enumerate(candidates):
            equal = ir.Compare("==", value, candidate, line)
            result = equal if position == 0 else ir.Logical("or", result, equal, line)
        return result

    def slice_equals(self, first: Node, second: Node, assigned: frozenset[str]) -> ir.Expr:
        """`data[i:j] == b"..."`: the slice's length is the literal's, then each byte equal, left to right (a load
        runs only where the length matched, so it is in range)."""
        sliced, literal = (first, _bytes_literal(second)) if slice_of(first) is not None else (second, _bytes_literal(first))
        if literal is None:
            raise refuse(first.parent, f"`{text(first.parent)[:60]}`: a slice is compared only with a bytes literal")
        name, start, stop = self.slice_bounds(sliced, assigned)
        sequence = self.sequences[name]
        if sequence.kind not in (ir.BYTES, ir.BYTEARRAY, ir.BUFFER, ir.TABLE) or sequence.element != ir.INT:
            raise refuse(sliced, f"`{text(sliced)}` is not bytes; only a slice of bytes equals a bytes literal")
        line = sliced.start_point[0] + 1
        result: ir.Expr = ir.Compare(
            "==", ir.Binary("max", ir.Binary("-", stop, start, line), ir.Const(0, line), line), ir.Const(len(literal), line), line
        )
        for offset, byte in enumerate(literal):
            at = ir.Load(name, ir.Binary("+", start, ir.Const(offset, line), line), ir.INT, line)
            result = ir.Logical("and", result, ir.Compare("==", at, ir.Const(byte, line), line), line)
        return result

    def compared(self, node: Node, assigned: frozenset[str]) -> ir.Expr:
        """A comparison's operand: an int, a character, or a one-character literal (its code point)."""
        if (character := _character(node)) is not None:
            return ir.Const(ord(character), node.start_point[0] + 1)
        value = self.expression(node, assigned)
        return value if expression_type(value) == ir.CHAR else self.integer(node, assigned)


OUTSIDE = -(1 << 62)
"""An index below every sequence, even counted from the end: a read there leaves the native code, and the call
runs the original."""
STRINGS_READ = (
    "its `len`, its truth, one character `s[i]` and `for c in s` (of a list: `for s in list`, `enumerate`, `s = list[k]` and `len`)"
)


@dataclass(frozen=True)
class _View:
    """A `str` of a list of `str` argument, as a loop over the list binds it: the list, and the locals that hold the
    position of its first code point and the position past its last in the list's buffer."""

    strings: str
    start: str
    end: str


def _strings_named(name: str, views: Mapping[str, _View]) -> str:
    return f"a `str` of `{views[name].strings}`" if name in views else "a list of `str`"


def _sized_bytearray(left: Node, right: Node) -> bool:
    """Whether an assignment is `name = bytearray(x)`, of one argument."""
    return (
        left.type == "identifier"
        and right.type == "call"
        and text(right.child_by_field_name("function")) == "bytearray"
        and right.child_by_field_name("arguments").type == "argument_list"
        and len(right.child_by_field_name("arguments").named_children) >= 1
    )


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


def _surely_byte(value: ir.Expr, sequences: Mapping[str, ir.Sequence]) -> bool:
    """Whether a value is within 0..255 by its form: a constant, a byte read, a mask or a remainder by at most 256."""
    if isinstance(value, ir.Load):
        return sequences[value.sequence].dtype == "uint8"
    if isinstance(value, ir.Const):
        return 0 <= value.value <= 255
    if isinstance(value, ir.Binary) and value.op == "&":
        return any(isinstance(side, ir.Const) and 0 <= side.value <= 255 for side in (value.left, value.right))
    if isinstance(value, ir.Binary) and value.op == "%":
        return isinstance(value.right, ir.Const) and 0 < value.right.value <= 256
    if isinstance(value, ir.Select):
        return _surely_byte(value.then, sequences) and _surely_byte(value.orelse, sequences)
    return False


def _lookup_dict(value: dict[object, object]) -> bool:
    """Whether a dict literal is a lookup table the lowering compares keys against: a few one-character strings or
    ints (within 64 bits) to ints within 64 bits, or to tuples of such ints of one length (unpacked at once)."""
    keys_ok = all(type(key) is str and len(key) == 1 for key in value) or all(
        type(key) is int and -(1 << 63) <= key < 1 << 63 for key in value
    )
    values_ok = (
        all(type(each) is int and -(1 << 63) <= each < 1 << 63 for each in value.values()) or record_arity(value) is not None
    )
    return 0 < len(value) <= DICT_KEYS and keys_ok and values_ok


def _bytes_literal(node: Node) -> bytes | None:
    """A `bytes` literal's value (no interpolations)."""
    if node.type not in ("string", "concatenated_string") or any(child.type == "interpolation" for child in walk(node)):
        return None
    value = ast.literal_eval(text(node))
    return value if isinstance(value, bytes) else None


def _is_bytes_join(callee: Node | None) -> bool:
    """Whether a call's function is `b"".join`."""
    return _is_join(callee, b"")


def _is_join(callee: Node | None, joiner: bytes | str) -> bool:
    """Whether a call's function is `b"".join` (`joiner` `b""`) or `"".join` (`joiner` `""`)."""
    if callee is None or callee.type != "attribute" or text(callee.child_by_field_name("attribute")) != "join":
        return False
    joined = callee.child_by_field_name("object")
    if isinstance(joiner, bytes):
        return _bytes_literal(joined) == joiner
    return joined.type == "string" and not joined.named_children[1:-1] and ast.literal_eval(text(joined)) == joiner


class _Inlined:
    """One helper being inlined: the locals its results are assigned to, and their kinds (the same at every
    `return`); a condition returned is held as 0 or 1 and given back as a condition."""

    def __init__(self, name: str, arrays: Mapping[int, str]) -> None:
        self.name = name
        self.names: list[str] = []
        self.kinds: list[str] | None = None
        self.arrays = arrays
        """The positions of the results that are local arrays, built under the caller's names (not assigned)."""

    def returned(self, lowering: _Lowering, node: Node, assigned: frozenset[str]) -> list[ir.Stmt]:
        line = node.start_point[0] + 1
        value = node.named_children[0] if node.named_children else None
        nodes = [] if value is None else value.named_children if value.type in ("expression_list", "tuple") else [value]
        for position, array in self.arrays.items():
            if position >= len(nodes) or text(nodes[position]) != array:
                raise refuse(node, f"`{self.name}` returns its local array `{array}` elsewhere: return it here too")
            lowering.ready(nodes[position], array, assigned)
        nodes = [each for position, each in enumerate(nodes) if position not in self.arrays]
        values = [
            ir.Compare("!=", ir.Const(int(each.type == "true"), line), ir.Const(0, line), line)
            if each.type in ("true", "false")
            else lowering.expression(each, assigned, conditions=True)
            for each in nodes
        ]
        kinds = [expression_type(each) for each in values]
        for each, place in zip(nodes, values, strict=True):
            if expression_type(place) == BOOL and not _is_condition(place):
                raise refuse(each, f"`{text(each)}` gives one of its operands, not a bool; compare them")
        if self.kinds is None:
            self.kinds = kinds
            self.names = [lowering.temporary(line, ir.INT if kind == BOOL else kind) for kind in kinds]
        elif self.kinds != kinds:
            raise refuse(
                node,
                f"`{self.name}` returns {', '.join(map(_named, kinds)) or 'None'} here and "
                f"{', '.join(map(_named, self.kinds)) or 'None'} elsewhere",
            )
        for each, kind, place in zip(nodes, kinds, values, strict=True):
            if kind == ir.CHAR or kind == BOOL:
                continue
            lowering.value_type(place, each)
        held = [
            ir.Select(v, ir.Const(1, line), ir.Const(0, line), line) if k == BOOL else v for v, k in zip(values, kinds, strict=True)
        ]
        return [*(ir.Assign(n, v, line) for n, v in zip(self.names, held, strict=True)), ir.Return(None, line)]

    def results(self, line: int) -> list[ir.Expr]:
        found: list[ir.Expr] = []
        for name, kind in zip(self.names, self.kinds or [], strict=True):
            local = ir.Local(name, ir.INT if kind == BOOL else kind, line)
            found.append(ir.Compare("!=", local, ir.Const(0, line), line) if kind == BOOL else local)
        return found


def _tails(statements: list[ir.Stmt]) -> list[ir.Stmt]:
    """An inlined body without its `return`s: what follows an `if` that returns on one side moves into the other
    side (into both where neither returns on every path), so each `return` ends its path. A `return` inside a loop
    is not among them: `inline_returns` has turned it into leaving the loops first."""
    out: list[ir.Stmt] = []
    for position, statement in enumerate(statements):
        if isinstance(statement, ir.Return):
            return out
        rest = statements[position + 1 :]
        if isinstance(statement, ir.If) and _returns(statement):
            then = _tails([*statement.then, *rest])
            orelse = _tails([*statement.orelse, *rest])
            return [*out, ir.If(statement.condition, tuple(then), tuple(orelse), statement.line)]
        out.append(statement)
    return out


def _decided(condition: ir.Expr) -> bool | None:
    """A condition's truth where it is known while lowering (an `isinstance` and `not`s of it), else None."""
    if isinstance(condition, ir.Const):
        return condition.value != 0
    if isinstance(condition, ir.Not):
        inner = _decided(condition.operand)
        return None if inner is None else not inner
    return None


def _is_condition(value: ir.Expr) -> bool:
    """Whether a value is a Python bool: a comparison, a `not`, or `and`/`or` of those (of ints they give an int)."""
    if isinstance(value, ir.Logical):
        return _is_condition(value.left) and _is_condition(value.right)
    return isinstance(value, ir.Compare | ir.Not)


def _returns(statement: ir.Stmt) -> bool:
    if isinstance(statement, ir.Return):
        return True
    nested = [getattr(statement, field, ()) for field in ("then", "orelse", "body")]
    return any(_returns(inner) for block in nested for inner in block)


def _renamed_body(helper: Node, renames: Mapping[str, str]) -> Node:
    """The helper's body with its locals renamed, parsed again at the same lines (so a refusal names the line)."""
    source, start = helper.text or b"", helper.start_byte
    pieces: list[bytes] = []
    at = 0
    for node in sorted(walk(helper.child_by_field_name("body")), key=lambda node: node.start_byte):
        if node.type != "identifier" or text(node) not in renames:
            continue
        parent = node.parent
        if parent is not None and (
            (parent.type == "attribute" and parent.child_by_field_name("attribute") == node)
            or (parent.type == "keyword_argument" and parent.child_by_field_name("name") == node)
        ):
            continue
        pieces += [source[at : node.start_byte - start], renames[text(node)].encode()]
        at = node.end_byte - start
    renamed = "\n" * helper.start_point[0] + b"".join([*pieces, source[at:]]).decode()
    tree = parse_source(renamed, "<inlined>")
    definition = next(node for node in walk(tree.root_node) if node.type == "function_definition")
    return definition.child_by_field_name("body")


def module_functions(function: Node) -> dict[str, Node]:
    """The module's top-level functions other than `function`, each a helper it may call (inlined)."""
    module = function
    while module.parent is not None:
        module = module.parent
    found: dict[str, Node] = {}
    for statement in module.named_children:
        definition = statement.child_by_field_name("definition") if statement.type == "decorated_definition" else statement
        if definition is not None and definition.type == "function_definition" and definition != function:
            found[text(definition.child_by_field_name("name"))] = definition
    return found


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


def _named(kind: str | None) -> str:
    named = {"none": "None", ir.BUFFER: "the output bytearray", ir.LIST: "the output list", ir.INT: "an int"}
    named |= {ir.INTS: "list of ints", ir.TEXT: "`str`", ir.CHAR: "a character", ir.BYTES: "`bytes`"}
    return named.get(kind or "none", f"a NumPy {kind}")
