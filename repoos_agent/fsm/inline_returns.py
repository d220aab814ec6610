"""An inlined helper's `return`s from inside its loops, turned into leaving those loops.

The IR has no `goto` and inlining has no call to return from: a helper's `return` becomes the assignment of its
results and then the end of the helper's path (`lower._tails` moves what follows an `if` that returns into its other
side). Inside a loop that cannot work, as the loop's next pass and the statements after the loop would still run.
So a `return` inside the helper's loops sets a flag and breaks out of the innermost loop; after each loop that
may be left so, the flag breaks out of the enclosing loop in turn, and after the outermost one it ends the helper's
path (a `return` at the top of the helper's body, which `_tails` handles as any other). Nothing else changes:
a loop left this way is left at the same point as Python leaves it, and the flag is only read after a loop.
"""

from __future__ import annotations

from dataclasses import replace

from repoos_agent.fsm import ir

LOOPS = (ir.While, ir.ForRange, ir.ForEach)


def returns_out_of_loops(body: tuple[ir.Stmt, ...], flag: str) -> tuple[ir.Stmt, ...]:
    """`body` (an inlined helper's, its `return`s lowered as `Return(None)` after its results' assignments) where
    each `return` inside a loop sets the int local `flag` to 1 and leaves the loops it is in; `flag` is set to 0 first."""
    lowered, _ = _block(body, 0, flag)
    line = body[0].line
    return (ir.Assign(flag, ir.Const(0, line), line), *lowered)


def has_return_in_loop(body: tuple[ir.Stmt, ...]) -> bool:
    """Whether a `return` is inside one of `body`'s loops (then `returns_out_of_loops` needs a flag)."""
    return _block(body, 0, "")[1]


def _block(statements: tuple[ir.Stmt, ...], depth: int, flag: str) -> tuple[tuple[ir.Stmt, ...], bool]:
    """The statements at loop depth `depth` (0: outside the helper's loops) with their returns in loops turned into
    breaks, and whether any was (inside a loop, each such `return` leaves it, and the loops around it in turn)."""
    out: list[ir.Stmt] = []
    left = False
    for statement in statements:
        if isinstance(statement, ir.Return) and depth:
            out += [ir.Assign(flag, ir.Const(1, statement.line), statement.line), ir.Break(statement.line)]
            left = True
        elif isinstance(statement, ir.If):
            then, then_left = _block(statement.then, depth, flag)
            orelse, orelse_left = _block(statement.orelse, depth, flag)
            out.append(replace(statement, then=then, orelse=orelse))
            left |= then_left or orelse_left
        elif isinstance(statement, LOOPS):
            body, body_left = _block(statement.body, depth + 1, flag)
            out.append(replace(statement, body=body))
            if body_left:
                line = statement.line
                leave: ir.Stmt = ir.Break(line) if depth else ir.Return(None, line)
                out.append(ir.If(ir.Compare("!=", ir.Local(flag, ir.INT, line), ir.Const(0, line), line), (leave,), (), line))
                left = True
        else:
            out.append(statement)
    return tuple(out), left
