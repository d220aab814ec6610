"""`jump-table`: an `if`/`elif` ladder comparing one local with distinct constants (an interpreter's dispatch on
its opcode) becomes a `switch`, which C compilers turn into a table of jumps: one indirect jump instead of a
test per opcode before it.

An arm's test is `x == k`, or several joined by `or`; the ladder ends at its `else`, at a test of something
else, or at a constant an earlier arm already took (the rest is the default, in order). Each arm's body is
rewritten too, so a ladder nested in an arm becomes a switch of its own.
"""

from __future__ import annotations

from dataclasses import replace

from repoos_agent.fsm import ir
from repoos_agent.fsm.rewrites.registry import NotApplicable, rewrite
from repoos_agent.fsm.rewrites.statements import Block, blocks, with_blocks

NAME = "jump-table"
ARMS = 3
"""The fewest arms worth a table: two tests are as cheap as an indirect jump."""


@rewrite(NAME, "turn an if/elif ladder over one value's constants into a switch (a jump table)")
def jump_table(function: ir.Function) -> ir.Function:
    """The function with every ladder of at least `ARMS` arms turned into a `switch`."""
    turned: list[int] = []
    body = _switched(function.body, turned)
    if not turned:
        raise NotApplicable(NAME, f"no `if`/`elif` ladder comparing one local with {ARMS} or more distinct constants")
    return replace(function, body=body)


def _switched(body: Block, turned: list[int]) -> Block:
    out: list[ir.Stmt] = []
    for statement in body:
        ladder = _ladder(statement) if isinstance(statement, ir.If) else None
        if ladder is not None:
            value, arms, default = ladder
            cases = tuple((constants, _switched(arm, turned)) for constants, arm in arms)
            out.append(ir.Switch(value, cases, _switched(default, turned), statement.line))
            turned.append(statement.line)
        else:
            out.append(with_blocks(statement, [_switched(block, turned) for block in blocks(statement)]))
    return tuple(out)


def _ladder(statement: ir.If) -> tuple[ir.Local, list[tuple[tuple[int, ...], Block]], Block] | None:
    """The local a ladder tests, its arms (constants and body) and its default; None below `ARMS` arms."""
    found = _constants(statement.condition)
    if found is None:
        return None
    value = found[0]
    arms: list[tuple[tuple[int, ...], Block]] = []
    taken: set[int] = set()
    current: ir.Stmt = statement
    while True:
        found = _constants(current.condition) if isinstance(current, ir.If) else None
        if found is None or found[0].name != value.name or taken & set(found[1]) or len(set(found[1])) < len(found[1]):
            default: Block = (current,)
            break
        arms.append((found[1], current.then))  # type: ignore[union-attr]
        taken |= set(found[1])
        if len(current.orelse) != 1:  # type: ignore[union-attr]
            default = current.orelse  # type: ignore[union-attr]
            break
        current = current.orelse[0]  # type: ignore[union-attr]
    return (value, arms, default) if len(arms) >= ARMS else None


def _constants(condition: ir.Expr) -> tuple[ir.Local, tuple[int, ...]] | None:
    """`x == k` or `k == x`, or several joined by `or`, on one local: the local and the constants."""
    if isinstance(condition, ir.Logical) and condition.op == "or":
        left, right = _constants(condition.left), _constants(condition.right)
        if left is None or right is None or left[0].name != right[0].name:
            return None
        return left[0], left[1] + right[1]
    if not (isinstance(condition, ir.Compare) and condition.op == "=="):
        return None
    for value, constant in ((condition.left, condition.right), (condition.right, condition.left)):
        if isinstance(value, ir.Local) and isinstance(constant, ir.Const):
            return value, (constant.value,)
    return None
