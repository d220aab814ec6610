"""Reading and rebuilding fsm IR statements, for the control-flow rewrites: which names a block assigns or reads,
which `break`/`continue` belong to a loop, and a bottom-up map over every block.

The IR is frozen dataclasses, so a rewrite builds new statements; `dataclasses.replace` keeps each node's line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from repoos_agent.fsm import ir

Block = tuple[ir.Stmt, ...]
LOOPS = (ir.While, ir.ForRange, ir.ForEach)


def blocks(statement: ir.Stmt) -> list[Block]:
    """The statement's nested blocks, in source order."""
    if isinstance(statement, ir.If):
        return [statement.then, statement.orelse]
    if isinstance(statement, LOOPS):
        return [statement.body]
    if isinstance(statement, ir.Switch):
        return [body for _, body in statement.cases] + [statement.default]
    return []


def with_blocks(statement: ir.Stmt, new: list[Block]) -> ir.Stmt:
    """The statement with its nested blocks replaced (in the order `blocks` gives them)."""
    if all(old is changed for old, changed in zip(blocks(statement), new, strict=True)):
        return statement
    if isinstance(statement, ir.If):
        return replace(statement, then=new[0], orelse=new[1])
    if isinstance(statement, LOOPS):
        return replace(statement, body=new[0])
    if isinstance(statement, ir.Switch):
        cases = tuple((values, body) for (values, _), body in zip(statement.cases, new, strict=False))
        return replace(statement, cases=cases, default=new[-1])
    return statement


def map_statements(body: Block, change: Callable[[ir.Stmt], Block]) -> Block:
    """Every statement rebuilt bottom-up: its blocks first, then `change` of it (the statements standing for it).
    A statement nothing changed is the same object, so a rewrite may find the one it chose by identity."""
    out: list[ir.Stmt] = []
    for statement in body:
        rebuilt = with_blocks(statement, [map_statements(block, change) for block in blocks(statement)])
        out.extend(change(rebuilt))
    return body if len(out) == len(body) and all(a is b for a, b in zip(out, body, strict=True)) else tuple(out)


def walk(body: Block) -> Iterator[ir.Stmt]:
    """Every statement, outer before inner, in source order."""
    for statement in body:
        yield statement
        for block in blocks(statement):
            yield from walk(block)


def expressions(statement: ir.Stmt) -> list[ir.Expr]:
    """The expressions a statement evaluates itself (not those of its nested blocks)."""
    if isinstance(statement, ir.Assign | ir.Append):
        return [statement.value]
    if isinstance(statement, ir.Store):
        return [statement.index, statement.value]
    if isinstance(statement, ir.If | ir.While):
        return [statement.condition]
    if isinstance(statement, ir.ForRange):
        return [statement.start, statement.stop]
    if isinstance(statement, ir.Switch):
        return [statement.value]
    if isinstance(statement, ir.Return) and statement.value is not None:
        return [statement.value]
    return []


def subexpressions(expr: ir.Expr) -> Iterator[ir.Expr]:
    """The expression and every expression inside it."""
    yield expr
    if isinstance(expr, ir.Binary | ir.Compare | ir.Logical):
        yield from subexpressions(expr.left)
        yield from subexpressions(expr.right)
    elif isinstance(expr, ir.Unary | ir.ToInt | ir.Not):
        yield from subexpressions(expr.operand)
    elif isinstance(expr, ir.Load | ir.BytesBelow | ir.Word):
        yield from subexpressions(expr.index)
    elif isinstance(expr, ir.Select):
        for part in (expr.condition, expr.then, expr.orelse):
            yield from subexpressions(part)


def reads(expr: ir.Expr) -> set[str]:
    """The locals an expression reads."""
    return {part.name for part in subexpressions(expr) if isinstance(part, ir.Local)}


def block_reads(body: Block) -> set[str]:
    """The locals a block reads anywhere, its loops' own variables included where the body reads them."""
    return {name for statement in walk(body) for expr in expressions(statement) for name in reads(expr)}


def assigned(body: Block) -> set[str]:
    """The locals a block assigns anywhere: assignments and loop variables."""
    names = set()
    for statement in walk(body):
        if isinstance(statement, ir.Assign):
            names.add(statement.name)
        elif isinstance(statement, ir.ForRange | ir.ForEach):
            names.add(statement.variable)
    return names


def own_exits(body: Block) -> Iterator[ir.Break | ir.Continue]:
    """The `break` and `continue` statements that leave or restart the loop whose body this is (not inner loops')."""
    for statement in body:
        if isinstance(statement, ir.Break | ir.Continue):
            yield statement
        elif not isinstance(statement, LOOPS):
            for block in blocks(statement):
                yield from own_exits(block)


def falls_through(body: Block) -> bool:
    """Whether running the block may reach its end (no `return`, `raise`, `break` or `continue` on some path)."""
    for statement in body:
        if isinstance(statement, ir.Break | ir.Continue | ir.Return | ir.Raise):
            return False
        if isinstance(statement, ir.If) and not (falls_through(statement.then) or falls_through(statement.orelse)):
            return False
        if isinstance(statement, ir.Switch) and not any(falls_through(block) for block in blocks(statement)):
            return False
        endless = isinstance(statement, ir.While) and isinstance(statement.condition, ir.Const) and statement.condition.value
        if endless and not any(isinstance(exit_, ir.Break) for exit_ in own_exits(statement.body)):
            return False
    return True


def without_continue(body: Block) -> Block:
    """The loop body with its own `continue` statements removed: what follows an `if` that may continue moves into
    the branches that fall through, so the body ends where a `continue` stood. Its meaning as a loop body is the
    same, and a copy of it may be followed by another (unrolling)."""
    out: list[ir.Stmt] = []
    for position, statement in enumerate(body):
        if isinstance(statement, ir.Continue):
            return tuple(out)
        if not isinstance(statement, LOOPS) and any(isinstance(e, ir.Continue) for e in own_exits((statement,))):
            rest = body[position + 1 :]
            new = [without_continue(block + rest if falls_through(block) else block) for block in blocks(statement)]
            return (*out, with_blocks(statement, new))
        out.append(statement)
    return tuple(out)


def fresh(function: ir.Function, stem: str, also: set[str] | dict[str, str] = frozenset()) -> str:
    """A local name neither the function nor `also` uses (a rewrite's own counter or flag); C prints it `py_NAME`."""
    taken = set(function.locals) | {p if isinstance(p, str) else p.name for p in function.parameters} | set(function.tables)
    taken |= set(also)
    count = 1
    while f"{stem}{count}" in taken:
        count += 1
    return f"{stem}{count}"


def substituted(function: ir.Function, target: ir.Stmt, new: Block, new_locals: dict[str, str]) -> ir.Function:
    """The function with the statement `target` (found by identity) replaced by `new`, and `new_locals` declared."""
    return replace(function, body=replaced(function.body, target, new), locals={**function.locals, **new_locals})


def replaced(body: Block, target: ir.Stmt, new: Block) -> Block:
    """The block with the statement `target`, found by identity wherever it is nested, replaced by `new`."""
    return map_statements(body, lambda statement: new if statement is target else (statement,))


def increment(name: str, by: int, line: int) -> ir.Assign:
    """`name = name + by`."""
    return ir.Assign(name, ir.Binary("+", ir.Local(name, ir.INT, line), ir.Const(by, line), line), line)
