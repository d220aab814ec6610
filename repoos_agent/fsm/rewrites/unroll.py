"""`unroll(n)`: the innermost loop over input elements runs `n` of its iterations per pass of a main loop, then
a remainder loop runs what is left; a `while` cursor loop that does not step by exactly one re-tests its
condition between copies instead, and needs no remainder.

Each copy's own `continue` is removed first (what follows moves into the branches that fall through), so a copy
ends where the source would start the next iteration. A `break` in a copy leaves the main loop and sets a flag
that keeps the remainder from running. `return` and `raise` leave the function from any copy as they would.
"""

from __future__ import annotations

from repoos_agent.fsm import ir
from repoos_agent.fsm.rewrites.registry import NotApplicable, rewrite
from repoos_agent.fsm.rewrites.statements import (
    LOOPS,
    Block,
    assigned,
    blocks,
    expressions,
    fresh,
    increment,
    own_exits,
    subexpressions,
    substituted,
    walk,
    with_blocks,
    without_continue,
)

NAME = "unroll"


@rewrite(NAME, "run n iterations of the innermost loop over input elements per pass, then the rest", n=(2, 4, 8))
def unroll(function: ir.Function, n: int = 2) -> ir.Function:
    """The function with its innermost loop over input elements (the first in source order) unrolled `n` times."""
    loops = [statement for statement in walk(function.body) if _over_elements(statement)]
    innermost = [loop for loop in loops if not any(_over_elements(inner) for inner in walk(blocks(loop)[0]))]
    if not innermost:
        raise NotApplicable(
            NAME, "no loop over input elements (`for b in data`, `for i in range(...)` reading `data[i]`, `while i < n`)"
        )
    loop = innermost[0]
    unrolled = _Unrolled(function, loop.line, n)
    if isinstance(loop, ir.ForEach):
        new = unrolled.for_each(loop)
    elif isinstance(loop, ir.ForRange):
        new = unrolled.for_range(loop)
    elif isinstance(loop, ir.While) and _counted(loop):
        new = unrolled.counted(loop)
    else:
        new = unrolled.retested(loop)  # type: ignore[arg-type]
    return substituted(function, loop, new, unrolled.new_locals)


def _over_elements(statement: ir.Stmt) -> bool:
    """`for b in data`; `for i in range(...)` whose body reads `data[i]`; `while i < bound`, a cursor loop."""
    if isinstance(statement, ir.ForEach):
        return True
    if isinstance(statement, ir.ForRange):
        return any(
            isinstance(expr, ir.Load) and isinstance(expr.index, ir.Local) and expr.index.name == statement.variable
            for inner in walk(statement.body)
            for top in expressions(inner)
            for expr in subexpressions(top)
        )
    return isinstance(statement, ir.While) and _cursor(statement) is not None


def _cursor(loop: ir.While) -> str | None:
    """The cursor of `while i < bound`, an int local compared with a length, a local or a constant."""
    condition = loop.condition
    if not (isinstance(condition, ir.Compare) and condition.op == "<" and isinstance(condition.left, ir.Local)):
        return None
    if condition.left.type == ir.INT and isinstance(condition.right, ir.Length | ir.Local | ir.Const):
        return condition.left.name
    return None


def _counted(loop: ir.While) -> bool:
    """Whether every pass steps the cursor by exactly one at its end, against a bound the body leaves alone: then
    `i < bound and i + (n - 1) < bound` lets `n` passes run without testing. A `continue` would skip the step."""
    cursor, bound = _cursor(loop), loop.condition.right  # type: ignore[union-attr]
    steps = [s for s in walk(loop.body) if isinstance(s, ir.Assign) and s.name == cursor]
    if not loop.body or steps != [loop.body[-1]] or steps[0] != increment(cursor, 1, steps[0].line):  # type: ignore[arg-type]
        return False
    if any(isinstance(exit_, ir.Continue) for exit_ in own_exits(loop.body)):
        return False
    if isinstance(bound, ir.Local):
        return bound.name not in assigned(loop.body)
    if isinstance(bound, ir.Length):
        return not any(isinstance(s, ir.Append | ir.Pop) and s.sequence == bound.sequence for s in walk(loop.body))
    return True


class _Unrolled:
    """The statements standing for one unrolled loop, and the locals they add (a counter, a bound, a flag)."""

    def __init__(self, function: ir.Function, line: int, n: int) -> None:
        self.function = function
        self.line = line
        self.n = n
        self.new_locals: dict[str, str] = {}

    def local(self, stem: str) -> str:
        name = fresh(self.function, stem, self.new_locals)
        self.new_locals[name] = ir.INT
        return name

    def at(self, name: str) -> ir.Local:
        return ir.Local(name, ir.INT, self.line)

    def ahead(self, test: str, name: str, offset: int, bound: ir.Expr) -> ir.Logical:
        """`name < bound and name + offset < bound`: `n` passes remain. The first test bounds the counter, so the
        width analysis proves the sum fits."""
        near = ir.Compare(test, self.at(name), bound, self.line)
        far = ir.Compare(test, ir.Binary("+", self.at(name), self.const(offset), self.line), bound, self.line)
        return ir.Logical("and", near, far, self.line)

    def const(self, value: int) -> ir.Const:
        return ir.Const(value, self.line)

    def copies(self, body: Block, first: list[ir.Stmt | None], flag: str | None) -> list[ir.Stmt]:
        """`n` copies of the body without its `continue`, each after its own first statement (if any), each
        `break` setting `flag` first."""
        plain = without_continue(body)
        if flag is not None:
            plain = _flagged(plain, ir.Assign(flag, self.const(1), self.line))
        return [s for head in first for s in ((head,) if head is not None else ()) + plain]

    def flag(self, body: Block) -> str | None:
        return self.local("_unroll_broke") if any(isinstance(e, ir.Break) for e in own_exits(body)) else None

    def remainder(self, condition: ir.Expr, flag: str | None) -> ir.Expr:
        if flag is None:
            return condition
        unbroken = ir.Compare("==", self.at(flag), self.const(0), self.line)
        return ir.Logical("and", unbroken, condition, self.line)

    def for_each(self, loop: ir.ForEach) -> Block:
        k = self.local("_unroll_k")
        element = next(
            (p.element for p in self.function.parameters if isinstance(p, ir.Sequence) and p.name == loop.sequence), ir.INT
        )
        length = ir.Length(loop.sequence, self.line)

        def load(offset: int) -> ir.Assign:
            index = self.at(k) if offset == 0 else ir.Binary("+", self.at(k), self.const(offset), self.line)
            return ir.Assign(loop.variable, ir.Load(loop.sequence, index, element, self.line), self.line)

        flag = self.flag(loop.body)
        main = self.copies(loop.body, [load(j) for j in range(self.n)], flag)
        rest = ir.While(
            self.remainder(ir.Compare("<", self.at(k), length, self.line), flag),
            (load(0), increment(k, 1, self.line), *loop.body),
            self.line,
        )
        return (
            ir.Assign(k, self.const(0), self.line),
            *self.cleared(flag),
            ir.While(self.ahead("<", k, self.n - 1, length), (*main, increment(k, self.n, self.line)), self.line),
            rest,
        )

    def for_range(self, loop: ir.ForRange) -> Block:
        k, end = self.local("_unroll_k"), self.local("_unroll_end")
        test = "<" if loop.step > 0 else ">"

        def value(offset: int) -> ir.Assign:
            shifted = self.at(k) if offset == 0 else ir.Binary("+", self.at(k), self.const(offset * loop.step), self.line)
            return ir.Assign(loop.variable, shifted, self.line)

        flag = self.flag(loop.body)
        main = self.copies(loop.body, [value(j) for j in range(self.n)], flag)
        rest = ir.While(
            self.remainder(ir.Compare(test, self.at(k), self.at(end), self.line), flag),
            (value(0), increment(k, loop.step, self.line), *loop.body),
            self.line,
        )
        return (
            ir.Assign(k, loop.start, self.line),
            ir.Assign(end, loop.stop, self.line),
            *self.cleared(flag),
            ir.While(
                self.ahead(test, k, (self.n - 1) * loop.step, self.at(end)),
                (*main, increment(k, self.n * loop.step, self.line)),
                self.line,
            ),
            rest,
        )

    def counted(self, loop: ir.While) -> Block:
        """`n` passes per test that `n` remain, then the source's loop for the rest."""
        cursor, bound = loop.condition.left, loop.condition.right  # type: ignore[union-attr]
        flag = self.flag(loop.body)
        main = self.copies(loop.body, [None] * self.n, flag)
        return (
            *self.cleared(flag),
            ir.While(self.ahead("<", cursor.name, self.n - 1, bound), tuple(main), self.line),
            ir.While(self.remainder(loop.condition, flag), loop.body, self.line),
        )

    def retested(self, loop: ir.While) -> Block:
        """`n` passes per iteration, the condition tested again before each pass after the first."""
        again = ir.If(ir.Not(loop.condition, self.line), (ir.Break(self.line),), (), self.line)
        plain = without_continue(loop.body)
        body = [*plain]
        for _ in range(self.n - 1):
            body += [again, *plain]
        return (ir.While(loop.condition, tuple(body), loop.line),)

    def cleared(self, flag: str | None) -> tuple[ir.Stmt, ...]:
        return () if flag is None else (ir.Assign(flag, self.const(0), self.line),)


def _flagged(body: Block, setting: ir.Assign) -> Block:
    """The body with each of its own `break` statements preceded by `setting`."""
    out: list[ir.Stmt] = []
    for statement in body:
        if isinstance(statement, ir.Break):
            out += [setting, statement]
        elif isinstance(statement, LOOPS):
            out.append(statement)
        else:
            out.append(with_blocks(statement, [_flagged(block, setting) for block in blocks(statement)]))
    return tuple(out)
