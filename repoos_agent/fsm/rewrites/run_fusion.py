"""`run-fusion`: in an interpreter's loop dispatching on `op = program[pc]`, an opcode whose arm only adds a
constant to one local or element (`tape[p] = (tape[p] + 1) & 0xFF`, `pointer += 1`) counts how many times it
repeats from `pc` on, `k`, and adds `k` times the constant at once: one pass for a run of `+` or `>`.

The fold is exact by arithmetic, not by trust: `(x + d) & M` applied `k` times is `(x + k*d) & M` where `M` is
`2**w - 1` (a mask of low bits is the residue modulo `2**w`), and `x + d` applied `k` times is `x + k*d`. Checked
on the loop's structure, or refused:
- the arms before the folded one test only `op == K`, so every repeat of the opcode runs the same arm;
- the arm may end with `if x >= bound: raise ...` on the unmasked local it moves, with `bound` unchanged by the
  loop and the test facing the way the local moves: a test failing part way still fails after `k` steps, and
  raises the same exception, with nothing else changed in between;
- after the dispatch, the body only steps `pc` by one and counts (`steps += 1`), each count perhaps tested with
  `if steps > LIMIT: raise ...`; a run then stops short of the step that would raise, so that step runs alone.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace

from repoos_agent.fsm import ir
from repoos_agent.fsm.rewrites.registry import NotApplicable, rewrite
from repoos_agent.fsm.rewrites.statements import (
    Block,
    assigned,
    fresh,
    increment,
    reads,
    replaced,
    subexpressions,
    walk,
)

NAME = "run-fusion"
BYTE_KINDS = (ir.BYTES, ir.BYTEARRAY)
TAIL = "after the dispatch, the body does more than step the cursor by one and count (`pc += 1`, `steps += 1`)"


@rewrite(NAME, "apply a run of one additive opcode (`+`, `>`) in an interpreter's loop at once, by the run's length")
def run_fusion(function: ir.Function) -> ir.Function:
    """The function with each additive arm of the first interpreter loop that has the pattern folded over runs."""
    reasons = []
    for loop in walk(function.body):
        if not isinstance(loop, ir.While):
            continue
        found = _Interpreter.read(function, loop)
        if isinstance(found, str):
            reasons.append(f"line {loop.line}: {found}")
            continue
        return found.fused()
    if not reasons:
        raise NotApplicable(NAME, "no `while pc < len(program)` loop dispatching on `op = program[pc]`")
    raise NotApplicable(NAME, "; ".join(reasons))


class _Arm:
    """A foldable arm: its update (an assignment or a store), the constant it adds, and its trailing check."""

    def __init__(self, update: ir.Assign | ir.Store, step: int, mask: int | None, check: ir.If | None) -> None:
        self.update = update
        self.step = step
        self.mask = mask
        self.check = check


class _Interpreter:
    """An interpreter loop with its cursor, opcode, bound, counters (and their limits) and foldable arms."""

    def __init__(self, function: ir.Function, loop: ir.While) -> None:
        self.function = function
        self.loop = loop
        self.cursor = ""
        self.opcode = ""
        self.program = ""
        self.bound: ir.Expr = loop.condition
        self.counters: list[str] = []
        self.limits: list[tuple[str, int]] = []
        """Each tested counter and the first value at which its test raises."""
        self.arms: list[_Arm] = []

    @classmethod
    def read(cls, function: ir.Function, loop: ir.While) -> _Interpreter | str:
        interpreter = cls(function, loop)
        return interpreter.head() or interpreter.tail() or interpreter.dispatch() or interpreter

    def head(self) -> str | None:
        """`while pc < len(program): op = program[pc]`, over a byte argument nothing writes."""
        condition, body = self.loop.condition, self.loop.body
        if not (isinstance(condition, ir.Compare) and condition.op == "<" and isinstance(condition.left, ir.Local)):
            return "the loop's test is not `pc < len(program)`"
        self.cursor, self.bound = condition.left.name, condition.right
        read = body[0] if body else None
        if not (isinstance(read, ir.Assign) and isinstance(read.value, ir.Load) and _same(read.value.index, condition.left)):
            return "the loop's body does not start with `op = program[pc]`"
        self.opcode, self.program = read.name, read.value.sequence
        kinds = {p.name: p.kind for p in self.function.parameters if isinstance(p, ir.Sequence)}
        if kinds.get(self.program) not in BYTE_KINDS or _length_of(self.function, self.bound) != self.program:
            return "the loop's bound is not the length of the bytes or bytearray argument it reads opcodes from"
        if any(isinstance(s, ir.Store | ir.Append) and s.sequence == self.program for s in walk(self.function.body)):
            return f"`{self.program}` is written while it runs"
        if self.opcode in assigned(body[1:]):
            return "the opcode is assigned again in the loop"
        return None

    def tail(self) -> str | None:
        """After the dispatch: `pc += 1` once, counters stepped by one, each perhaps tested then to raise."""
        if len(self.loop.body) < 2 or not isinstance(self.loop.body[1], ir.If | ir.Switch):
            return "no dispatch on the opcode follows `op = program[pc]`"
        stepped = []
        for statement in self.loop.body[2:]:
            if isinstance(statement, ir.Assign) and statement == increment(statement.name, 1, statement.line):
                stepped.append(statement.name)
            elif isinstance(statement, ir.If) and (limit := _limit(statement, stepped)) is not None:
                self.limits.append(limit)
            else:
                return f"line {statement.line}: {TAIL}"
        if stepped.count(self.cursor) != 1 or len(set(stepped)) != len(stepped):
            return TAIL
        self.counters = [name for name in stepped if name != self.cursor]
        if any(self.function.locals.get(name) != ir.INT for name in stepped):
            return TAIL
        return None

    def dispatch(self) -> str | None:
        """The arms a run may fold: those reached by `op == K` tests alone, whose body only adds a constant."""
        statement = self.loop.body[1]
        if isinstance(statement, ir.Switch):
            if statement.value != ir.Local(self.opcode, ir.INT, statement.value.line):  # type: ignore[union-attr]
                return "the dispatch does not test the opcode"
            bodies = [body for _, body in statement.cases]
        else:
            bodies = []
            current: ir.Stmt | None = statement
            while isinstance(current, ir.If) and _tests_opcode(current.condition, self.opcode):
                bodies.append(current.then)
                current = current.orelse[0] if len(current.orelse) == 1 else None
        kept = {self.cursor, self.opcode, *self.counters}
        self.arms = [arm for arm in (_arm(self.function, body, kept, self.loop) for body in bodies) if arm is not None]
        if not self.arms:
            return "no arm of the dispatch only adds a constant to one local or element (`x = (x + 1) & 0xFF`)"
        writes = any(isinstance(arm.update, ir.Store) for arm in self.arms)
        if (
            writes
            and next(p.kind for p in self.function.parameters if isinstance(p, ir.Sequence) and p.name == self.program) != ir.BYTES
        ):
            return f"`{self.program}` is a bytearray, which the sequence an arm writes may share"
        return None

    def fused(self) -> ir.Function:
        line = self.loop.line
        k = fresh(self.function, "_run_k")
        run = ir.Local(k, ir.INT, line)
        cursor = ir.Local(self.cursor, ir.INT, line)
        ahead = ir.Binary("+", cursor, run, line)
        condition: ir.Expr = ir.Logical(
            "and",
            ir.Compare("<", ahead, self.bound, line),
            ir.Compare("==", ir.Load(self.program, ahead, ir.INT, line), ir.Local(self.opcode, ir.INT, line), line),
            line,
        )
        for counter, first in self.limits:  # stop before the step whose count would raise
            below = ir.Compare("<", ir.Binary("+", ir.Local(counter, ir.INT, line), run, line), ir.Const(first, line), line)
            condition = ir.Logical("and", condition, below, line)
        counting = (
            ir.Assign(k, ir.Const(1, line), line),
            ir.While(condition, (increment(k, 1, line),), line),
        )
        less_one = ir.Binary("-", run, ir.Const(1, line), line)
        catch_up = tuple(
            ir.Assign(name, ir.Binary("+", ir.Local(name, ir.INT, line), less_one, line), line)
            for name in (self.cursor, *self.counters)
        )
        body = self.function.body
        for arm in self.arms:
            fused = (*counting, _by_run(arm, run))
            if arm.check is None:
                body = replaced(body, arm.update, (*fused, *catch_up))
            else:
                body = replaced(replaced(body, arm.update, fused), arm.check, (arm.check, *catch_up))
        return replace(self.function, body=body, locals={**self.function.locals, k: ir.INT})


def _length_of(function: ir.Function, bound: ir.Expr) -> str | None:
    """The sequence whose length `bound` is: `len(program)`, or a local only ever assigned `len(program)`."""
    if isinstance(bound, ir.Length):
        return bound.sequence
    if not isinstance(bound, ir.Local) or bound.name in function.parameters:
        return None
    values = [s.value for s in walk(function.body) if isinstance(s, ir.Assign) and s.name == bound.name]
    loops = {s.variable for s in walk(function.body) if isinstance(s, ir.ForRange | ir.ForEach)}
    lengths = {v.sequence for v in values if isinstance(v, ir.Length)}
    if len(lengths) != 1 or not all(isinstance(v, ir.Length) for v in values) or bound.name in loops:
        return None
    return next(iter(lengths))


def _limit(check: ir.If, stepped: list[str]) -> tuple[str, int] | None:
    """`if steps > LIMIT: raise ...` on a counter stepped before it: the counter and the first value that raises."""
    condition = check.condition
    if check.orelse or len(check.then) != 1 or not isinstance(check.then[0], ir.Raise):
        return None
    if not (isinstance(condition, ir.Compare) and isinstance(condition.left, ir.Local) and isinstance(condition.right, ir.Const)):
        return None
    if condition.left.name not in stepped or condition.op not in (">", ">="):
        return None
    return condition.left.name, condition.right.value + (condition.op == ">")


def _tests_opcode(condition: ir.Expr, opcode: str) -> bool:
    """`op == K`, or several joined by `or`: true for one opcode value or another, whatever else holds."""
    if isinstance(condition, ir.Logical) and condition.op == "or":
        return _tests_opcode(condition.left, opcode) and _tests_opcode(condition.right, opcode)
    if not (isinstance(condition, ir.Compare) and condition.op == "=="):
        return False
    sides = {type(condition.left), type(condition.right)}
    named = {side.name for side in (condition.left, condition.right) if isinstance(side, ir.Local)}
    return sides == {ir.Local, ir.Const} and named == {opcode}


def _arm(function: ir.Function, body: Block, kept: set[str], loop: ir.While) -> _Arm | None:
    """The arm's additive update and check, where it is nothing else."""
    if not 1 <= len(body) <= 2 or not isinstance(body[0], ir.Assign | ir.Store):
        return None
    update = body[0]
    if isinstance(update, ir.Assign):
        if update.name in kept or function.locals.get(update.name) != ir.INT:
            return None
        target: ir.Expr = ir.Local(update.name, ir.INT, update.line)
    else:
        plain = all(isinstance(part, ir.Const | ir.Local | ir.Binary) for part in subexpressions(update.index))
        if not plain or reads(update.index) & kept:  # the element a run adds to stays the same one
            return None
        target = ir.Load(update.sequence, update.index, ir.INT, update.line)
    found = _additive(update.value, target)
    if found is None:
        return None
    step, mask = found
    check = body[1] if len(body) == 2 else None
    if check is not None and (mask is not None or not _monotone(check, update, step, loop)):
        return None
    return _Arm(update, step, mask, check)  # type: ignore[arg-type]


def _additive(value: ir.Expr, target: ir.Expr) -> tuple[int, int | None] | None:
    """`target + d`, `target - d`, or either under `& (2**w - 1)`: `d` (not 0) and the mask."""
    mask = None
    if isinstance(value, ir.Binary) and value.op == "&":
        constants = [side for side in (value.left, value.right) if isinstance(side, ir.Const)]
        others = [side for side in (value.left, value.right) if not isinstance(side, ir.Const)]
        if len(constants) != 1 or len(others) != 1 or constants[0].value < 0 or constants[0].value & (constants[0].value + 1):
            return None
        mask, value = constants[0].value, others[0]
    if not (isinstance(value, ir.Binary) and value.op in ("+", "-")):
        return None
    if _same(value.left, target) and isinstance(value.right, ir.Const):
        step = value.right.value if value.op == "+" else -value.right.value
    elif value.op == "+" and _same(value.right, target) and isinstance(value.left, ir.Const):
        step = value.left.value
    else:
        return None
    return (step, mask) if step else None


def _monotone(check: ir.Stmt, update: ir.Assign | ir.Store, step: int, loop: ir.While) -> bool:
    """`if x >= bound: raise ...` facing the way `x` moves, on a bound the loop leaves alone: once true, it stays
    true for the rest of a run."""
    if not (isinstance(check, ir.If) and not check.orelse and len(check.then) == 1 and isinstance(check.then[0], ir.Raise)):
        return False
    condition = check.condition
    if not isinstance(update, ir.Assign) or not isinstance(condition, ir.Compare):
        return False
    op, left, right = condition.op, condition.left, condition.right
    if isinstance(right, ir.Local) and right.name == update.name:
        op, left, right = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op), right, left
    if not (isinstance(left, ir.Local) and left.name == update.name):
        return False
    grown = {s.sequence for s in walk(loop.body) if isinstance(s, ir.Append | ir.Pop)}
    steady = not reads(right) & assigned(loop.body) and all(
        isinstance(part, ir.Const | ir.Local | ir.Length | ir.Binary)
        and not (isinstance(part, ir.Length) and part.sequence in grown)
        for part in subexpressions(right)
    )
    return steady and op in ((">", ">=") if step > 0 else ("<", "<="))


def _by_run(arm: _Arm, run: ir.Local) -> ir.Stmt:
    """The arm's update adding `run` times its constant."""
    update, line = arm.update, arm.update.line
    target = (
        ir.Local(update.name, ir.INT, line)
        if isinstance(update, ir.Assign)
        else ir.Load(update.sequence, update.index, ir.INT, line)
    )
    amount: ir.Expr = run if abs(arm.step) == 1 else ir.Binary("*", ir.Const(abs(arm.step), line), run, line)
    value: ir.Expr = ir.Binary("+" if arm.step > 0 else "-", target, amount, line)
    if arm.mask is not None:
        value = ir.Binary("&", value, ir.Const(arm.mask, line), line)
    if isinstance(update, ir.Assign):
        return ir.Assign(update.name, value, line)
    return ir.Store(update.sequence, update.index, value, line)


def _same(first: object, second: object) -> bool:
    """Equal expressions, whatever lines they were written on."""
    if not (is_dataclass(first) and type(first) is type(second)):
        return first == second
    return all(_same(getattr(first, f.name), getattr(second, f.name)) for f in fields(first) if f.name != "line")
