"""`ascii-fast-path(w)`: a cursor loop whose common case passes a byte below a bound by stepping over it (UTF-8
validation's `if b < 0x80: i += 1; continue`) gets a fast path at the top of its body: while the `w` bytes at the
cursor all lie below the bound, tested a 64-bit word at a time (`& 0x8080808080808080` for ASCII), it steps over
all of them at once, adding `w` to any count the case keeps.

Checked on the loop's structure, or refused:
- the loop is `while i < len(data)`, or `while i < n` with `n` only ever `len(data)`, over a byte sequence, so
  each of the `w` skipped passes would have run;
- its body may start by reading `data[i]` into locals read nowhere outside the loop (a skipped pass's value is
  never seen), then tests the byte against a constant bound;
- the test's branch only adds one to `i` and to counters, then continues (or ends the body).
The word test is false where fewer than `w` bytes remain or the cursor is negative, so the source's loop handles
those bytes one by one.
"""

from __future__ import annotations

from dataclasses import replace

from repoos_agent.fsm import ir
from repoos_agent.fsm.rewrites.registry import NotApplicable, rewrite
from repoos_agent.fsm.rewrites.statements import (
    block_reads,
    increment,
    map_statements,
    replaced,
    walk,
)

NAME = "ascii-fast-path"
BYTE_KINDS = (ir.BYTES, ir.BYTEARRAY)


@rewrite(NAME, "skip runs of bytes below a bound (ASCII) a 64-bit word at a time at a cursor loop's top", w=(8, 16))
def ascii_fast_path(function: ir.Function, w: int = 8) -> ir.Function:
    """The function with a word-at-a-time fast path in the first loop that has the pattern."""
    reasons = []
    for loop in walk(function.body):
        if not isinstance(loop, ir.While):
            continue
        found = _pattern(function, loop)
        if isinstance(found, str):
            reasons.append(f"line {loop.line}: {found}")
            continue
        sequence, cursor, bound, counters = found
        line = loop.line
        below = ir.BytesBelow(sequence, ir.Local(cursor, ir.INT, line), w, bound, line)
        steps = tuple(increment(name, w, line) for name in (cursor, *counters))
        fast = ir.If(below, (ir.While(below, steps, line), ir.Continue(line)), (), line)
        new = (replace(loop, body=(fast, *loop.body)),)
        return replace(function, body=replaced(function.body, loop, new))
    if not reasons:
        raise NotApplicable(NAME, "no `while i < len(data)` cursor loop")
    raise NotApplicable(NAME, "; ".join(reasons))


def _pattern(function: ir.Function, loop: ir.While) -> tuple[str, str, int, tuple[str, ...]] | str:
    """The sequence, cursor, bound and counters of a loop with the pattern, or why it lacks it."""
    condition = loop.condition
    if not (isinstance(condition, ir.Compare) and condition.op == "<" and isinstance(condition.left, ir.Local)):
        return "the loop's test is not `i < len(data)`"
    cursor, sequence = condition.left.name, _length_of(function, condition.right)
    if sequence is None:
        return "the loop's bound is not the length of a bytes or bytearray argument"
    prefix = 0
    while prefix < len(loop.body) and _reads_element(loop.body[prefix], cursor, sequence):
        prefix += 1
    names = {s.name for s in loop.body[:prefix]}  # type: ignore[union-attr]
    if cursor in names or _read_outside(function, loop) & names:
        return "a local the loop assigns from `data[i]` is read outside it"
    if prefix == len(loop.body) or not isinstance(loop.body[prefix], ir.If):
        return "no test of the byte at the cursor starts the loop's body"
    test = loop.body[prefix]
    bound = _bound(test.condition, names, cursor, sequence)
    if bound is None:
        return "the first test is not the byte at the cursor below a constant (`b < 0x80`)"
    then, rest = test.then, loop.body[prefix + 1 :]
    ends = bool(then) and isinstance(then[-1], ir.Continue)
    steps = then[:-1] if ends else then
    if not ends and rest:
        return "the byte's branch neither continues nor ends the body"
    counters = tuple(s.name for s in steps if isinstance(s, ir.Assign))
    if len(counters) != len(steps) or len(set(counters)) != len(counters) or cursor not in counters:
        return "the byte's branch does more than step the cursor and counters by one"
    if any(s != increment(s.name, 1, s.line) or function.locals.get(s.name) != ir.INT for s in steps):  # type: ignore[union-attr]
        return "the byte's branch does more than step the cursor and counters by one"
    if names & set(counters):
        return "the byte's branch does more than step the cursor and counters by one"
    return sequence, cursor, bound, tuple(name for name in counters if name != cursor)


def _length_of(function: ir.Function, bound: ir.Expr) -> str | None:
    """The byte sequence whose length `bound` is: `len(data)`, or a local only ever assigned `len(data)`."""
    kinds = {p.name: p.kind for p in function.parameters if isinstance(p, ir.Sequence)}
    if isinstance(bound, ir.Length):
        return bound.sequence if kinds.get(bound.sequence) in BYTE_KINDS else None
    if not isinstance(bound, ir.Local) or bound.name in function.parameters:
        return None
    values = [s.value for s in walk(function.body) if isinstance(s, ir.Assign) and s.name == bound.name]
    loops = {s.variable for s in walk(function.body) if isinstance(s, ir.ForRange | ir.ForEach)}
    lengths = {v.sequence for v in values if isinstance(v, ir.Length)}
    if len(lengths) != 1 or len(values) != sum(isinstance(v, ir.Length) for v in values) or bound.name in loops:
        return None
    (sequence,) = lengths
    return sequence if kinds.get(sequence) in BYTE_KINDS else None


def _reads_element(statement: ir.Stmt, cursor: str, sequence: str) -> bool:
    """`b = data[i]`."""
    if not isinstance(statement, ir.Assign) or not isinstance(statement.value, ir.Load):
        return False
    load = statement.value
    return load.sequence == sequence and isinstance(load.index, ir.Local) and load.index.name == cursor


def _read_outside(function: ir.Function, loop: ir.While) -> set[str]:
    """The locals read by statements outside `loop`."""
    outside = map_statements(function.body, lambda s: () if s is loop else (s,))
    return block_reads(outside)


def _bound(condition: ir.Expr, names: set[str], cursor: str, sequence: str) -> int | None:
    """`K` where the condition is the byte (`b` or `data[i]`) below `K` (`< K`, `<= K - 1` or flipped), 1 to 256."""
    if not isinstance(condition, ir.Compare):
        return None
    op, left, right = condition.op, condition.left, condition.right
    if isinstance(left, ir.Const):
        op, left, right = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op), right, left
    if not isinstance(right, ir.Const) or op not in ("<", "<="):
        return None
    byte = (isinstance(left, ir.Local) and left.name in names) or _reads_element(ir.Assign("", left, 0), cursor, sequence)
    bound = right.value + (op == "<=")
    return bound if byte and 1 <= bound <= 256 else None
