"""`unswitch`: a test inside a loop on values the loop never changes is made once, before it, and each outcome
gets its own copy of the loop with the test's branch in place of the test.

The test may only read locals no statement of the loop assigns (its variable included), constants and lengths
of sequences the loop does not grow. It may not read an element or divide: either could raise, and the hoisted
test runs even where the loop would run no time.
"""

from __future__ import annotations

from dataclasses import replace

from repoos_agent.fsm import ir
from repoos_agent.fsm.rewrites.registry import NotApplicable, rewrite
from repoos_agent.fsm.rewrites.statements import LOOPS, Block, assigned, blocks, reads, replaced, subexpressions, walk

NAME = "unswitch"


@rewrite(NAME, "hoist a test of loop-invariant values out of the loop, one copy of the loop per outcome")
def unswitch(function: ir.Function) -> ir.Function:
    """The function with the first such test (the outermost loop's first, in source order) hoisted."""
    for loop in walk(function.body):
        if not isinstance(loop, LOOPS):
            continue
        test = next((s for s in _tests(loop.body) if _invariant(function, loop, s.condition)), None)
        if test is None:
            continue
        copies = [replace(loop, body=replaced(loop.body, test, branch)) for branch in (test.then, test.orelse)]
        new = (ir.If(test.condition, (copies[0],), (copies[1],), loop.line),)
        return replace(function, body=replaced(function.body, loop, new))
    raise NotApplicable(NAME, "no `if` inside a loop tests only values the loop leaves unchanged")


def _tests(body: Block) -> list[ir.If]:
    """The `if` statements of a loop body, outside its inner loops, in source order."""
    found = []
    for statement in body:
        if isinstance(statement, ir.If):
            found.append(statement)
        if not isinstance(statement, LOOPS):
            for block in blocks(statement):
                found += _tests(block)
    return found


def _invariant(function: ir.Function, loop: ir.While | ir.ForRange | ir.ForEach, condition: ir.Expr) -> bool:
    changed = assigned((loop,))
    grown = {s.sequence for s in walk(loop.body) if isinstance(s, ir.Append | ir.Pop)}
    for part in subexpressions(condition):
        if isinstance(part, ir.Load | ir.BytesBelow | ir.Word) or (isinstance(part, ir.Binary) and part.op in ("//", "%")):
            return False
        if isinstance(part, ir.Length) and (part.sequence in grown or part.sequence in function.output_names):
            return False
    return not isinstance(condition, ir.Const) and not reads(condition) & changed
