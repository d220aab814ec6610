"""`dfa`: a loop over bytes whose body is an `if`-ladder over a small state and tests of the byte becomes a
state-transition table: the byte's class (`classes[b]`), then `state = next[state * C + class]`, then the body's
other effects (a count, a `raise` or `return` on an error state, a `break`) as a `switch` on an action table.

The engine derives the tables by running the body itself on every (state, byte) pair, never by reading meaning
into its tests: the bytes go in one class where they lead every state to the same next state and the same effects
(the coarsest partition the ladder's byte tests allow). The states are the constants the state is given before
the loop and every value a pass maps a state to from there, so the table covers every state the loop can see.

Each statement of the body is either evaluated (an assignment of the state, or an `if` testing only the state,
the byte and constants) or kept as an effect: one that neither reads nor assigns the state. An effect runs after
the new state is set, which changes nothing it sees; one that may leave the loop part way (a `break` or
`continue` inside it) is refused, since the state it leaves with would be the final one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from repoos_agent.fsm import ir
from repoos_agent.fsm.rewrites.registry import NotApplicable, rewrite
from repoos_agent.fsm.rewrites.statements import (
    Block,
    assigned,
    block_reads,
    blocks,
    fresh,
    map_statements,
    own_exits,
    reads,
    replaced,
    subexpressions,
    walk,
)

NAME = "dfa"
STATES = 64
"""The largest state value a table holds (rows `0..STATES - 1`): more is not a small state machine."""
EVALUATED = (ir.Const, ir.Local, ir.Binary, ir.Unary, ir.ToInt, ir.Compare, ir.Logical, ir.Not, ir.Select)
"""The expressions the engine evaluates on a (state, byte) pair: no element reads, no lengths."""
TERMINATORS = (ir.Break, ir.Continue, ir.Return, ir.Raise)


@rewrite(NAME, "turn an if-ladder over a small state and the byte into a state-transition table over byte classes")
def dfa(function: ir.Function) -> ir.Function:
    """The function with the first loop over bytes that is a state machine driven by tables."""
    reasons = []
    for loop in walk(function.body):
        if not isinstance(loop, ir.ForEach):
            continue
        candidates = _candidates(loop)
        if not candidates:
            reasons.append(f"line {loop.line}: no local of the loop is tested against constants and assigned in it")
        for state in candidates:
            machine = _Machine.build(function, loop, state)
            if isinstance(machine, str):
                reasons.append(f"line {loop.line}: `{state}`: {machine}")
                continue
            return machine.rewritten()
    if not reasons:
        raise NotApplicable(NAME, "no loop over bytes (`for b in data`)")
    raise NotApplicable(NAME, "; ".join(reasons))


def _candidates(loop: ir.ForEach) -> list[str]:
    """The int locals the loop's body assigns and tests against a constant, in order of first test."""
    changed = assigned(loop.body) - {loop.variable}
    found: list[str] = []
    for statement in walk(loop.body):
        if not isinstance(statement, ir.If | ir.Switch):
            continue
        tested = statement.condition if isinstance(statement, ir.If) else statement.value
        for part in subexpressions(tested):
            sides = (part.left, part.right) if isinstance(part, ir.Compare) else ()
            for side, other in zip(sides, reversed(sides), strict=True):
                named = isinstance(side, ir.Local) and side.type == ir.INT and side.name in changed
                if named and isinstance(other, ir.Const) and side.name not in found:
                    found.append(side.name)
        switched = isinstance(statement, ir.Switch) and isinstance(tested, ir.Local) and tested.name in changed
        if switched and tested.name not in found:
            found.append(tested.name)
    return found


class _Unevaluable(Exception):
    """A pass the engine cannot run on a (state, byte) pair: its reason."""


@dataclass(frozen=True)
class _Pass:
    """What one pass of the body does from a state on a byte: the state it ends with, and its effects in order."""

    state: int
    effects: tuple[int, ...]


class _Machine:
    """A loop whose body is a state machine: its states, and each (state, byte)'s pass."""

    def __init__(self, function: ir.Function, loop: ir.ForEach, state: str) -> None:
        self.function = function
        self.loop = loop
        self.state = state
        self.effects: list[ir.Stmt] = []
        self.passes: dict[tuple[int, int], _Pass] = {}

    @classmethod
    def build(cls, function: ir.Function, loop: ir.ForEach, state: str) -> _Machine | str:
        """The machine of `loop` over the local `state`, or why the loop is not one."""
        machine = cls(function, loop, state)
        kinds = {p.name: p.kind for p in function.parameters if isinstance(p, ir.Sequence)}
        if kinds.get(loop.sequence) not in (ir.BYTES, ir.BYTEARRAY):
            return f"the loop runs over `{loop.sequence}`, not over a bytes or bytearray argument"
        if state in function.parameters:
            return "it is a parameter, whose values are not known"
        entry = machine.entry_states()
        if isinstance(entry, str):
            return entry
        unchecked = machine.check(loop.body)
        if unchecked is not None:
            return unchecked
        return machine.explore(entry) or machine

    def entry_states(self) -> set[int] | str:
        """The constants the state is given outside the loop: the values it can enter the loop with."""
        outside = map_statements(self.function.body, lambda s: () if s is self.loop else (s,))
        values = [s for s in walk(outside) if isinstance(s, ir.Assign) and s.name == self.state]
        if any(isinstance(s, ir.ForRange | ir.ForEach) and s.variable == self.state for s in walk(outside)):
            return "it is a loop variable outside this loop"
        for statement in values:
            if not isinstance(statement.value, ir.Const):
                return f"line {statement.line}: it is given a value other than a constant outside the loop"
        if not values:
            return "it is not given a value before the loop"
        return {s.value.value for s in values}  # type: ignore[union-attr]

    def evaluable(self, expr: ir.Expr) -> bool:
        parts = list(subexpressions(expr))
        return all(isinstance(part, EVALUATED) for part in parts) and reads(expr) <= {self.state, self.loop.variable}

    def check(self, body: Block) -> str | None:
        """Why a statement of `body` is neither evaluated nor an effect (the first one), or None."""
        for statement in body:
            touches = self.state in assigned((statement,)) | block_reads((statement,))
            if self.loop.variable in assigned((statement,)):
                return f"line {statement.line}: the loop's byte `{self.loop.variable}` is assigned"
            if isinstance(statement, ir.Assign) and statement.name == self.state:
                if not self.evaluable(statement.value):
                    return f"line {statement.line}: the state is given a value that reads more than the state and the byte"
            elif isinstance(statement, ir.If | ir.Switch):
                tested = statement.condition if isinstance(statement, ir.If) else statement.value
                if self.evaluable(tested):
                    reason = next(filter(None, (self.check(block) for block in blocks(statement))), None)
                    if reason is not None:
                        return reason
                elif touches:
                    return f"line {statement.line}: a test reads the state together with values other than the byte"
                elif any(True for _ in own_exits((statement,))):
                    return f"line {statement.line}: an effect may leave the loop part way (`break` or `continue` inside it)"
            elif touches:
                return f"line {statement.line}: a statement other than a test or an assignment reads or assigns the state"
        return None

    def explore(self, entry: set[int]) -> str | None:
        """Run the body on every byte from every state reached, or say why the states are not a small machine."""
        frontier = sorted(entry)
        seen = set(frontier)
        while frontier:
            state = frontier.pop()
            if not 0 <= state < STATES:
                return f"it takes the value {state}, outside the table's states 0 to {STATES - 1}"
            for byte in range(256):
                try:
                    done = self.run(self.loop.body, {self.state: state, self.loop.variable: byte}, [])
                except _Unevaluable as failed:
                    return f"{failed} (state {state}, byte {byte})"
                self.passes[(state, byte)] = done
                if done.state not in seen:
                    seen.add(done.state)
                    frontier.append(done.state)
        return None

    def run(self, body: Block, values: dict[str, int], effects: list[int]) -> _Pass:
        """One pass of `body` from `values`: the state it ends with (a `return` or `raise` keeps the state it
        started with, which nothing reads after), and the effects it ran."""
        started = values[self.state]
        ended = self.block(body, values, effects)
        state = started if ended in (ir.Return, ir.Raise) else values[self.state]
        return _Pass(state, tuple(effects))

    def block(self, body: Block, values: dict[str, int], effects: list[int]) -> type | None:
        """Run `body`; the kind of statement that left it early, or None where it fell through."""
        for statement in body:
            if isinstance(statement, ir.Assign) and statement.name == self.state:
                values[self.state] = _evaluate(statement.value, values)
                continue
            if isinstance(statement, ir.If) and self.evaluable(statement.condition):
                taken = statement.then if _evaluate(statement.condition, values) else statement.orelse
                ended = self.block(taken, values, effects)
            elif isinstance(statement, ir.Switch) and self.evaluable(statement.value):
                value = _evaluate(statement.value, values)
                taken = next((body for constants, body in statement.cases if value in constants), statement.default)
                ended = self.block(taken, values, effects)
            else:
                effects.append(self.effect(statement))
                ended = type(statement) if isinstance(statement, TERMINATORS) else None
            if ended is not None:
                return ended
        return None

    def effect(self, statement: ir.Stmt) -> int:
        """The statement's number among the effects (by identity: a statement at two places is two effects)."""
        for number, known in enumerate(self.effects):
            if known is statement:
                return number
        self.effects.append(statement)
        return len(self.effects) - 1

    def rewritten(self) -> ir.Function:
        """The function with the loop's body replaced by the table lookups and the effects keyed by them."""
        states = sorted({state for state, _ in self.passes})
        columns: dict[tuple[_Pass, ...], int] = {}
        classes = bytes(columns.setdefault(tuple(self.passes[(s, b)] for s in states), len(columns)) for b in range(256))
        width = len(columns)
        paths = list(dict.fromkeys(p.effects for p in self.passes.values()))
        if () in paths:  # the pass with no effects is the default, so it needs no case
            paths.remove(())
            paths.insert(0, ())
        rows = max(states) + 1
        size = 1 << max(rows * width - 1, 1).bit_length()
        transitions, actions = bytearray(size), bytearray(size)
        for (state, byte), done in self.passes.items():
            transitions[state * width + classes[byte]] = done.state
            actions[state * width + classes[byte]] = paths.index(done.effects)
        return self.function_with(classes, bytes(transitions), bytes(actions), paths, size)

    def function_with(self, classes: bytes, transitions: bytes, actions: bytes, paths: list, size: int) -> ir.Function:
        line = self.loop.line
        new_tables: dict[str, bytes] = {}
        new_locals: dict[str, str] = {}

        def table(stem: str, data: bytes) -> str:
            name = fresh(self.function, stem, {**new_tables, **new_locals})
            new_tables[name] = data
            return name

        def local(stem: str) -> ir.Local:
            name = fresh(self.function, stem, {**new_tables, **new_locals})
            new_locals[name] = ir.INT
            return ir.Local(name, ir.INT, line)

        def const(value: int) -> ir.Const:
            return ir.Const(value, line)

        width = max(classes) + 1
        byte = ir.Local(self.loop.variable, ir.INT, line)
        state = ir.Local(self.state, ir.INT, line)
        cls, at = local("_dfa_class"), local("_dfa_at")
        # The masks keep each index within its table's (power-of-two) length, which the tables' construction
        # already guarantees: they let the printer read without a bounds check.
        index = ir.Binary("+", ir.Binary("*", state, const(width), line), cls, line)
        masked_byte = ir.Binary("&", byte, const(255), line)
        body: list[ir.Stmt] = [
            ir.Assign(cls.name, ir.Load(table("_dfa_classes", classes), masked_byte, ir.INT, line), line),
            ir.Assign(at.name, ir.Binary("&", index, const(size - 1), line), line),
            ir.Assign(self.state, ir.Load(table("_dfa_next", transitions), at, ir.INT, line), line),
        ]
        effects = [tuple(self.effects[number] for number in path) for path in paths]
        if len(effects) == 1:
            body += effects[0]
        elif len(effects) > 1:
            action = ir.Load(table("_dfa_actions", actions), at, ir.INT, line)
            cases = tuple(((number,), path) for number, path in enumerate(effects) if number)
            body.append(ir.Switch(action, cases, effects[0], line))
        new = (replace(self.loop, body=tuple(body)),)
        return replace(
            self.function,
            body=replaced(self.function.body, self.loop, new),
            locals={**self.function.locals, **new_locals},
            tables={**self.function.tables, **new_tables},
        )


def _evaluate(expr: ir.Expr, values: dict[str, int]) -> int:
    """`expr`'s value as Python computes it, on the state's and the byte's values."""
    if isinstance(expr, ir.Const):
        return expr.value
    if isinstance(expr, ir.Local):
        return values[expr.name]
    if isinstance(expr, ir.ToInt):
        return _evaluate(expr.operand, values)
    if isinstance(expr, ir.Not):
        return int(not _evaluate(expr.operand, values))
    if isinstance(expr, ir.Unary):
        operand = _evaluate(expr.operand, values)
        return -operand if expr.op == "-" else ~operand
    if isinstance(expr, ir.Select):
        return _evaluate(expr.then if _evaluate(expr.condition, values) else expr.orelse, values)
    if isinstance(expr, ir.Logical):
        left = bool(_evaluate(expr.left, values))
        if left == (expr.op == "or"):
            return int(left)
        return int(bool(_evaluate(expr.right, values)))
    left, right = _evaluate(expr.left, values), _evaluate(expr.right, values)  # type: ignore[union-attr]
    if isinstance(expr, ir.Compare):
        return int(COMPARED[expr.op](left, right))
    if expr.op in ("//", "%") and right == 0:  # type: ignore[union-attr]
        raise _Unevaluable(f"line {expr.line}: `{expr.op}` by zero")  # type: ignore[union-attr]
    if expr.op in ("<<", ">>") and right < 0:  # type: ignore[union-attr]
        raise _Unevaluable(f"line {expr.line}: a shift by {right}")  # type: ignore[union-attr]
    return ARITHMETIC[expr.op](left, right)  # type: ignore[union-attr]


COMPARED = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}
ARITHMETIC = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "<<": lambda a, b: a << b,
    ">>": lambda a, b: a >> b,
    "min": min,
    "max": max,
}
