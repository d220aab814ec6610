"""`branchless`: an `if` whose branches only assign locals becomes one select per local (`x = c ? a : b` in C),
which compilers lower to a conditional move instead of a jump the data would mispredict.

Ladders fold from the inside out: `if x > hi: x = hi elif x < lo: x = lo` is `x = x > hi ? hi : (x < lo ? lo : x)`,
the `min`/`max` a clamp means. C evaluates only the chosen side, as Python does, so a read that would fail on the
other side never runs. Where a branch assigns several locals, the condition and the values must read none of
them: each select then sees the values from before the `if`, as the source's branches do.
"""

from __future__ import annotations

from dataclasses import replace

from repoos_agent.fsm import ir
from repoos_agent.fsm.rewrites.registry import NotApplicable, rewrite
from repoos_agent.fsm.rewrites.statements import Block, map_statements, reads

NAME = "branchless"


@rewrite(NAME, "turn an if whose branches only assign locals into selects (conditional moves)")
def branchless(function: ir.Function) -> ir.Function:
    """The function with every such `if` (innermost first) turned into selects."""
    turned = []

    def change(statement: ir.Stmt) -> Block:
        selects = _selects(function, statement)
        if selects is None:
            return (statement,)
        turned.append(statement.line)
        return selects

    body = map_statements(function.body, change)
    if not turned:
        raise NotApplicable(NAME, "no `if` whose branches only assign locals (`if c: x = a else: x = b`)")
    return replace(function, body=body)


def _selects(function: ir.Function, statement: ir.Stmt) -> Block | None:
    """The assignments of selects standing for `statement`, or None where it is not such an `if`."""
    if not isinstance(statement, ir.If):
        return None
    branches = [_assignments(function, block) for block in (statement.then, statement.orelse)]
    if branches[0] is None or branches[1] is None:
        return None
    then, orelse = branches
    names = list(dict.fromkeys([*then, *orelse]))
    if not names:
        return None
    values = [*then.values(), *orelse.values(), statement.condition]
    if len(names) > 1 and any(reads(value) & set(names) for value in values):
        return None
    line = statement.line
    return tuple(
        ir.Assign(
            name,
            ir.Select(
                statement.condition,
                then.get(name, ir.Local(name, function.locals[name], line)),
                orelse.get(name, ir.Local(name, function.locals[name], line)),
                line,
            ),
            line,
        )
        for name in names
    )


def _assignments(function: ir.Function, block: Block) -> dict[str, ir.Expr] | None:
    """Each local a block assigns and its value, where the block is nothing but one assignment per local."""
    found: dict[str, ir.Expr] = {}
    for statement in block:
        if not isinstance(statement, ir.Assign) or statement.name in function.output_names or statement.name in found:
            return None
        found[statement.name] = statement.value
    return found
