"""Step equivalence: a variant of a fold over its input (`for x in data: s = step(s, x)`) is proved equal to the
baseline by checking that the two steps agree on every (state, input) pair, before the variant may race.

Both functions must be the same outside the fold loop. The variant's loop is either a loop over the same
elements with another body (one step per element), or slicing's pair of loops: `k` elements at a time from
index 0 to the last whole chunk, then one at a time to the end, which visits the same elements in the same order;
there, `k` baseline steps are checked against one variant step, and one against one for the rest. An unrolled
loop (`unroll(n)` of either) is a main loop of `n` passes and a remainder loop: the main body is checked against
as many baseline steps as it reads elements, the remainder against one element or chunk. Such loops may sit in
the branches of an `if` on the state at the loop's entry (slicing's narrow register): the tested branch is checked
over the loop head of the baseline run under the same test. A cursor loop given an ASCII fast path is proved apart
(`_fast_path`).

The state is every local the steps read or assign (the element and loop counters aside), over the values the
width analysis (`ranges.loop_head`) proves it can hold at the loop's head: a set the baseline's step maps into
itself, so agreeing on it from the first iteration on, the two loops agree to the end. Both functions' widths are
checked first, so their C code computes what Python does, and the steps are evaluated here as C evaluates them,
in 64-bit two's complement. A domain of at most `ENUMERATE_AT_ONCE` pairs is enumerated with NumPy. A larger one
is sampled, then proved by linearity where both steps are affine over GF(2), else enumerated up to
`ENUMERATE_AT_MOST` pairs or proved with Z3 bit-vectors. A table index out of range counts as a disagreement.
Locals only the variant has, which each of its loop bodies sets before reading (a fold's lanes), are its scratch:
neither state nor output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, is_dataclass, replace
from functools import partial

import numpy as np
import z3

from repoos_agent.fsm import carryless, ir
from repoos_agent.fsm.lower import FsmRefusal
from repoos_agent.fsm.ranges import HIGH, LOW, Widths, check_widths, loop_head
from repoos_agent.fsm.rewrites.statements import block_reads, increment, map_statements, walk

PROVED, REFUTED, NOT_APPLICABLE = "proved", "refuted", "not-applicable"
ENUMERATE_AT_MOST = 1 << 28
"""The most (state, input) pairs enumerated; past it, Z3 proves (a CRC-16 state and a byte: 2**24)."""
ENUMERATE_AT_ONCE = 1 << 20
"""Up to this many pairs, enumerating is quicker than trying linearity first (a CRC-16 state and a byte: 2**24 pairs
take seconds to enumerate and milliseconds to prove affine)."""
CHUNK = 1 << 20
"""Pairs evaluated at once by NumPy, to keep the arrays small."""
SAMPLES = 1 << 16
"""Random pairs tried before a proof: a wrong table entry is refuted at once, without a solver's time."""
SAMPLED_STEPS = 1 << 20
"""Baseline steps the samples run at most: an obligation of many elements (a fold's chunk of 256 bytes) tries fewer
pairs, as each costs that many steps; the proof that follows is exact either way."""
Z3_SECONDS = 60
"""Past this, Z3's silence is reported, never taken for a proof."""


@dataclass(frozen=True)
class Counterexample:
    """A state and input elements on which the steps disagree, and the state each step leaves."""

    state: dict[str, int]
    inputs: tuple[int, ...]
    baseline: dict[str, int]
    variant: dict[str, int]


@dataclass(frozen=True)
class Proof:
    """The verdict of the step check: how it was decided, on how many (state, input) pairs, and what it showed."""

    verdict: str
    method: str
    cases: int
    reason: str
    counterexample: Counterexample | None = None


class _NotAStep(Exception):
    """The functions are not a fold the step check models: why."""


@dataclass(frozen=True)
class _Obligation:
    """`elements` baseline steps (each the fold's body with its variable bound to the next element) against one run
    of `variant` (which reads element `j` as `sequence[index + j]`, or `sequence[c + d]` after `c = index + e`, with
    `j = d + e`, where `c` is one of `cursors`)."""

    elements: int
    baseline: tuple[ir.Stmt, ...]
    variable: str
    variant: tuple[ir.Stmt, ...]
    index: str | None
    cursors: frozenset[str] = frozenset()
    guard: ir.Expr | None = None
    """The test that the variant's loops run under (slicing's `narrow=1`): the state is then the loop head's where
    the test holds at the loop's entry."""


UNSIGNED = "a value past 2**63 - 1 is held unsigned: the step proof models 64-bit values as signed only"


def prove(baseline: ir.Function, variant: ir.Function) -> Proof:
    """Proved, refuted (with a counterexample) or not applicable (with why): the variant's fold step against the
    baseline's, as described above."""
    try:
        if check_widths(baseline).wide:
            return Proof(NOT_APPLICABLE, "none", 0, UNSIGNED)
        widths = check_widths(variant)
        signed = _sign_read(variant, baseline, widths)
        if signed is not None:
            return Proof(NOT_APPLICABLE, "none", 0, f"{UNSIGNED} ({signed})")
        loop, obligations = _obligations(baseline, variant)
    except FsmRefusal as reason:
        return Proof(NOT_APPLICABLE, "none", 0, str(reason))
    except _NotAStep as reason:
        skipped = _fast_path(baseline, variant)
        return skipped if skipped is not None else _local(baseline, variant, str(reason))
    dead = _counters(baseline.body + variant.body) - ir.locals_read(baseline.body + variant.body)
    dead |= _scratch(baseline, [obligation.variant for obligation in obligations])
    carried = sorted(widths.unsigned_locals - dead)
    if carried:  # a state past 2**63 - 1 carried from step to step: the bounds below are signed
        return Proof(NOT_APPLICABLE, "none", 0, f"{UNSIGNED} (`{carried[0]}` is carried from step to step)")
    methods, cases = [], 0
    for obligation in obligations:
        if _unchanged(obligation):
            methods.append("identity")
            continue
        try:
            head = loop_head(_guarded(baseline, loop, obligation.guard), loop)
            proof = _check(obligation, head, dead, baseline.tables | variant.tables)
        except (_NotAStep, FsmRefusal) as reason:
            return Proof(NOT_APPLICABLE, "none", 0, str(reason))
        if proof.verdict != PROVED:
            return proof
        methods.append(proof.method)
        cases += proof.cases
    method = " and ".join(dict.fromkeys(methods))
    steps = ", ".join(f"{o.elements} step(s) against 1" for o in obligations)
    return Proof(PROVED, method, cases, f"{steps}: agree on every state and input")


def _unchanged(obligation: _Obligation) -> bool:
    """The variant runs the baseline's own loop there (a guarded variant's fallback): nothing to check."""
    return obligation.elements == 1 and obligation.index is None and _unlined(obligation.variant) == _unlined(obligation.baseline)


def _scratch(baseline: ir.Function, bodies: list[tuple[ir.Stmt, ...]]) -> set[str]:
    """The variant's own locals that each loop body reading them sets first: a step's scratch (clmul-fold's lanes),
    whose value at a loop's head is never seen, so they are neither state nor output of the step."""
    fresh = set().union(*(_assigned(body) for body in bodies)) - set(baseline.locals)
    return {name for name in fresh if all(name not in ir.locals_read(body) or _set_before_read(body, name) for body in bodies)}


def _sign_read(variant: ir.Function, baseline: ir.Function, widths: Widths) -> str | None:
    """Where the variant reads a value it holds unsigned as C would read it differently from Python, None where it
    never does. The evaluators compute 64-bit two's complement patterns, which are a value held in `uint64_t` exactly
    where only its bits are read: by `^ & |`, a carry-less product, an assignment, a `<<` the widths keep below
    2**64, and a `>>` by `c` masked to fewer than `64 - c` bits (a byte of a word). A comparison, a table index, a
    store or a returned value would read its sign, and a local the baseline has must keep its sign to compare."""
    kept = [name for name in widths.unsigned_locals if name in baseline.locals]
    if kept or widths.unsigned_outputs:
        return f"`{(kept or sorted(widths.unsigned_outputs))[0]}` is held unsigned"
    masked = {
        id(node.left)
        for node in ir.nodes(variant.body)
        if isinstance(node, ir.Binary) and node.op == "&" and isinstance(node.right, ir.Const)
        and isinstance(node.left, ir.Binary) and node.left.op == ">>" and isinstance(node.left.right, ir.Const)
        and node.right.value >= 0 and node.right.value.bit_length() <= 64 - node.left.right.value
    }  # fmt: skip
    for node in ir.nodes(variant.body):
        bits_only = isinstance(node, ir.Assign) or (
            isinstance(node, ir.Binary) and (node.op in ("^", "&", "|", "<<", *carryless.OPERATORS) or id(node) in masked)
        )
        for part in fields(node):  # type: ignore[arg-type]
            child = getattr(node, part.name)
            if isinstance(child, ir.Expr) and widths.held_unsigned(child) and not bits_only:
                return f"line {child.line}: a {type(node).__name__} reads its sign"
    return None


def _local(baseline: ir.Function, variant: ir.Function, why_not_a_fold: str) -> Proof:
    """The variant's changed statements against the baseline's, where it changes only straight-line statements in
    place (an `if` made selects): proved with Z3 when each changed part leaves every local as the baseline's does
    from every 64-bit state. Both functions' widths are proven, so neither's C computes past 64 bits on a state it
    reaches (a value the analysis cannot bound is checked and runs the original), and C's values are Python's there."""
    try:
        for part in ("name", "parameters", "buffer", "returns", "raises", "tables", "locals"):
            if getattr(baseline, part) != getattr(variant, part):
                raise _NotAStep(f"the variant changes the function's {part}")
        regions = _regions(baseline.body, variant.body)
        if not regions:
            raise _NotAStep("the variant is the baseline")
        cases = 0
        for base, changed in regions:
            proof = _z3_region(base, changed, {name: tuple(ir.entries(table)) for name, table in baseline.tables.items()})
            if proof.verdict != PROVED:
                return proof
            cases += proof.cases
    except _NotAStep as reason:
        return Proof(NOT_APPLICABLE, "none", 0, f"{why_not_a_fold}; nor does it change only straight-line statements ({reason})")
    return Proof(PROVED, "z3 on the changed statements", cases, f"{len(regions)} changed part(s) agree from every 64-bit state")


def _fast_path(baseline: ir.Function, variant: ir.Function) -> Proof | None:
    """A cursor loop given a skip at its top (`ascii-fast-path`): None where the variant has none. The variant minus
    the skip must be the baseline; then one pass of the loop's body on each byte below the skip's bound, from any
    state, must only add one to the cursor and to the counters the skip adds `w` to (other locals it sets being
    assigned again before any read), and take no other effect. By induction over the `w` bytes the skip steps over
    (each present, as the word test ensures, and the loop bound is the sequence's length), the skip leaves the state
    `w` passes of the loop would."""
    found: list[tuple[ir.While, ir.If]] = []

    def strip(statement: ir.Stmt) -> tuple[ir.Stmt, ...]:
        if isinstance(statement, ir.While) and statement.body and _skip(statement.body[0]) is not None:
            found.append((statement, statement.body[0]))  # type: ignore[arg-type]
            return (replace(statement, body=statement.body[1:]),)
        return (statement,)

    stripped = replace(variant, body=map_statements(variant.body, strip))
    if not found:
        return None
    try:
        if len(found) != 1:
            raise _NotAStep("the variant has more than one skip")
        if _unlined(stripped) != _unlined(baseline):
            raise _NotAStep("the variant minus its skip is not the baseline")
        check_widths(baseline)
        check_widths(variant)
        loop, skip = found[0]
        sequence, cursor, count, bound, counters = _skip(skip)  # type: ignore[misc]
        plain = replace(loop, body=loop.body[1:])
        _cursor_loop(stripped, plain, sequence, cursor)
        outside = block_reads(map_statements(stripped.body, lambda s: () if _unlined(s) == _unlined(plain) else (s,)))
        for byte in range(bound):
            _one_pass(stripped, plain, outside, {cursor, *counters}, byte, cursor)
    except (_NotAStep, FsmRefusal) as reason:
        return Proof(NOT_APPLICABLE, "fast path", 0, f"the skip is not proved: {reason}")
    return Proof(
        PROVED,
        f"fast path: one pass on each byte below {bound} checked, skip by induction",
        bound,
        f"one pass on each byte below {bound} adds one to {', '.join(sorted({cursor, *counters}))} only; "
        f"the skip of {count} such bytes is {count} passes",
    )


def _skip(statement: ir.Stmt) -> tuple[str, str, int, int, tuple[str, ...]] | None:
    """The sequence, cursor, width, bound and counters of `if BytesBelow(...): while BytesBelow(...): i += w ...;
    continue`, or None where the statement is not such a skip."""
    if not (isinstance(statement, ir.If) and isinstance(statement.condition, ir.BytesBelow) and not statement.orelse):
        return None
    test = statement.condition
    if not (isinstance(test.index, ir.Local) and len(statement.then) == 2 and isinstance(statement.then[1], ir.Continue)):
        return None
    loop = statement.then[0]
    if not (isinstance(loop, ir.While) and _unlined(loop.condition) == _unlined(test)):
        return None
    names = [s.name for s in loop.body if isinstance(s, ir.Assign)]
    steps = [increment(name, test.count, 0) for name in names]
    if len(names) != len(loop.body) or len(set(names)) != len(names) or _unlined(loop.body) != tuple(steps):
        return None
    cursor = test.index.name
    if cursor not in names:
        return None
    return test.sequence, cursor, test.count, test.bound, tuple(name for name in names if name != cursor)


def _cursor_loop(function: ir.Function, loop: ir.While, sequence: str, cursor: str) -> None:
    """`_NotAStep` unless `loop` is `while cursor < len(sequence)` (or `< n`, `n` only ever that length) over a byte
    argument: then each byte the word test found is one the loop would reach."""
    kinds = {p.name: p.kind for p in function.parameters if isinstance(p, ir.Sequence)}
    if kinds.get(sequence) not in (ir.BYTES, ir.BYTEARRAY):
        raise _NotAStep(f"line {loop.line}: `{sequence}` is not a bytes or bytearray argument")
    test = loop.condition
    if not (isinstance(test, ir.Compare) and test.op == "<" and _unlined(test.left) == ir.Local(cursor, ir.INT, 0)):
        raise _NotAStep(f"line {loop.line}: the loop's test is not `{cursor} < len({sequence})`")
    length = ir.Length(sequence, 0)
    bound = _unlined(test.right)
    if bound == length:
        return
    name = bound.name if isinstance(bound, ir.Local) else None
    values = [s.value for s in walk(function.body) if isinstance(s, ir.Assign) and s.name == name]
    counters = {s.variable for s in walk(function.body) if isinstance(s, ir.ForRange | ir.ForEach)}
    if (
        not isinstance(bound, ir.Local)
        or bound.name in function.parameters
        or bound.name in counters
        or not values
        or any(_unlined(v) != length for v in values)
    ):
        raise _NotAStep(f"line {loop.line}: the loop's bound is not `len({sequence})`")


def _one_pass(function: ir.Function, loop: ir.While, outside: set[str], counters: set[str], byte: int, cursor: str) -> None:
    """`_NotAStep` unless one pass of `loop`'s body with `byte` at the cursor, from any state (Z3 bit-vectors), adds
    one to each of `counters` and to nothing else, leaves every other local unchanged but those it assigns before
    any read (and `outside`, what the function reads elsewhere, does not read), and ends or continues without any
    other effect."""
    evaluator = _Evaluator(
        lambda value: z3.BitVecVal(value, 64),
        z3.If,
        lambda entries, index: _mux(entries, index),
        {"and": z3.And, "or": z3.Or, "not": z3.Not},
    )
    evaluator.tables = {name: tuple(ir.entries(table)) for name, table in function.tables.items()}
    names = sorted(ir.locals_read(loop.body) | _assigned(loop.body) | counters)
    before = {name: z3.BitVec(name, 64) for name in names}
    evaluator.elements, evaluator.index = (z3.BitVecVal(byte, 64),), cursor
    after = dict(before)
    _pass(evaluator, loop.body, after, cursor, byte)
    for name in names:
        change = z3.simplify(after[name] - before[name])  # type: ignore[operator]
        wanted = 1 if name in counters else 0
        if z3.is_bv_value(change) and change.as_long() == wanted:
            continue
        if name in counters or name in outside or not _set_before_read(loop.body, name):
            raise _NotAStep(f"line {loop.line}: a pass on byte {byte} does not leave `{name}` at {name}{' + 1' * wanted}")


def _pass(evaluator: _Evaluator, body: tuple[ir.Stmt, ...], env: dict, cursor: str, byte: int) -> bool:
    """Runs the pass on `env` in place, deciding each test from the byte alone; whether it reached a `continue`
    (else the block's end). Any other statement on its path is an effect the skip would not take."""
    for statement in body:
        if isinstance(statement, ir.Assign):
            env[statement.name] = evaluator.value(statement.value, env)
            if statement.name == cursor:
                evaluator.index = None  # a read at the cursor from here on is another byte
        elif isinstance(statement, ir.If):
            taken = z3.simplify(evaluator.condition(statement.condition, env))  # type: ignore[arg-type]
            if not (z3.is_true(taken) or z3.is_false(taken)):
                raise _NotAStep(f"line {statement.line}: on byte {byte} the test depends on more than the byte")
            if _pass(evaluator, statement.then if z3.is_true(taken) else statement.orelse, env, cursor, byte):
                return True
        elif isinstance(statement, ir.Continue):
            return True
        else:
            raise _NotAStep(f"line {statement.line}: on byte {byte} the pass reaches a {type(statement).__name__}")
    return False


def _set_before_read(body: tuple[ir.Stmt, ...], name: str) -> bool:
    """Whether a top-level statement of the loop body assigns `name` before anything in the body reads it: its value
    at the loop's head is never seen."""
    for statement in body:
        if isinstance(statement, ir.Assign) and statement.name == name:
            return name not in ir.locals_read((statement.value,))  # type: ignore[arg-type]
        if name in ir.locals_read((statement,)):
            return False
    return False


COMPOUND = {ir.If: ("then", "orelse"), ir.While: ("body",), ir.ForRange: ("body",), ir.ForEach: ("body",)}
"""The statements whose blocks `_regions` compares part by part, and those blocks."""


def _regions(base: tuple[ir.Stmt, ...], variant: tuple[ir.Stmt, ...]) -> list[tuple[tuple[ir.Stmt, ...], tuple[ir.Stmt, ...]]]:
    """Where two blocks differ: the same statements around each changed run, compared part by part inside a
    statement both keep with the same header (a loop, an `if`), else the runs themselves."""
    if _unlined(base) == _unlined(variant):
        return []
    start = 0
    while start < min(len(base), len(variant)) and _unlined(base[start]) == _unlined(variant[start]):
        start += 1
    end = 0
    while end < min(len(base), len(variant)) - start and _unlined(base[-1 - end]) == _unlined(variant[-1 - end]):
        end += 1
    middle = base[start : len(base) - end], variant[start : len(variant) - end]
    if len(middle[0]) == len(middle[1]) == 1 and type(middle[0][0]) is type(middle[1][0]) and type(middle[0][0]) in COMPOUND:
        first, second = middle[0][0], middle[1][0]
        blocks = COMPOUND[type(first)]
        if _unlined(replace(first, **{b: () for b in blocks})) == _unlined(replace(second, **{b: () for b in blocks})):
            return [region for block in blocks for region in _regions(getattr(first, block), getattr(second, block))]
    return [middle]


def _z3_region(base: tuple[ir.Stmt, ...], variant: tuple[ir.Stmt, ...], tables: dict[str, tuple[int, ...]]) -> Proof:
    """Both runs of statements from every 64-bit state of the locals they read: the same locals after, and every
    table read within its table."""
    ranges: list[z3.BoolRef] = []

    def lookup(entries: tuple[int, ...], index: z3.BitVecRef) -> z3.BitVecRef:
        ranges.append(z3.ULT(index, z3.BitVecVal(len(entries), 64)))
        return _mux(entries, index)

    evaluator = _Evaluator(lambda value: z3.BitVecVal(value, 64), z3.If, lookup, {"and": z3.And, "or": z3.Or, "not": z3.Not})
    evaluator.tables = tables
    names = sorted(ir.locals_read(base + variant) | _assigned(base + variant))
    env = {name: z3.BitVec(name, 64) for name in names}
    before, after = evaluator.run(base, env), evaluator.run(variant, env)
    solver = z3.Solver()
    solver.set("timeout", Z3_SECONDS * 1000)
    solver.add(z3.Or(*[z3.Not(r) for r in ranges], *[before[name] != after[name] for name in names]))
    answer = solver.check()
    cases = 1 << (64 * len(names))
    if answer == z3.unsat:
        return Proof(PROVED, "z3", cases, "Z3: the changed statements leave the same locals from every state")
    if answer == z3.unknown:
        return Proof(NOT_APPLICABLE, "z3", cases, f"Z3 gave no answer within {Z3_SECONDS} s ({solver.reason_unknown()})")
    model = solver.model()
    state = {name: model.eval(env[name], model_completion=True).as_signed_long() for name in names}
    shown = {name: model.eval(after[name], model_completion=True).as_signed_long() for name in names}  # type: ignore[attr-defined]
    wanted = {name: model.eval(before[name], model_completion=True).as_signed_long() for name in names}  # type: ignore[attr-defined]
    counterexample = Counterexample(state, (), wanted, shown)
    return Proof(
        REFUTED, "z3", cases, f"the changed statements differ from state {state}: {wanted} against {shown}", counterexample
    )


def _guarded(baseline: ir.Function, loop: ir.ForEach, guard: ir.Expr | None) -> ir.Function:
    """The baseline with its fold loop run only where `guard` holds at its entry: where the width analysis finds
    the state at that loop's head is where the baseline's step keeps a state that passed the test (a set it maps
    into itself), which is what a guarded variant's loops must agree with it on."""
    if guard is None:
        return baseline
    position = baseline.body.index(loop)
    guarded = ir.If(guard, (loop,), (), loop.line)
    return replace(baseline, body=(*baseline.body[:position], guarded, *baseline.body[position + 1 :]))


def _obligations(baseline: ir.Function, variant: ir.Function) -> tuple[ir.ForEach, list[_Obligation]]:
    """The baseline's fold loop and what the variant must agree with it on; `_NotAStep` where the shapes differ."""
    for part in ("name", "parameters", "buffer", "returns", "raises", "outputs", "results", "tuples", "nested"):
        if getattr(baseline, part) != getattr(variant, part):
            raise _NotAStep(f"the variant changes the function's {part}")
    if any(variant.tables.get(name) != table for name, table in baseline.tables.items()):
        raise _NotAStep("the variant changes a table of the baseline")
    if any(variant.locals.get(name) != kind for name, kind in baseline.locals.items()):
        raise _NotAStep("the variant changes a local's type")
    sequences = {p.name: p for p in baseline.parameters if isinstance(p, ir.Sequence)}
    position, loop = next(
        ((n, s) for n, s in enumerate(baseline.body) if isinstance(s, ir.ForEach) and s.sequence in sequences),
        (None, None),
    )
    if loop is None or position is None:
        raise _NotAStep("the baseline has no top-level loop over a sequence argument's elements")
    if sequences[loop.sequence].kind not in (ir.BYTES, ir.BYTEARRAY):
        raise _NotAStep(f"line {loop.line}: the step check models bytes and bytearray elements only")
    rest = baseline.body[position + 1 :]
    tail = len(variant.body) - len(rest)
    if variant.body[:position] != baseline.body[:position] or tail < position or variant.body[tail:] != rest:
        raise _NotAStep("the variant changes the function outside its fold loop")
    return loop, _loops(loop, variant.body[position:tail], baseline, baseline.body[:position] + rest)


def _loops(loop: ir.ForEach, middle: tuple[ir.Stmt, ...], baseline: ir.Function, outside: tuple[ir.Stmt, ...]) -> list[_Obligation]:
    """What the variant's statements in place of the fold loop must agree with it on: a loop over the same
    elements, unroll's or slicing's loops, or an `if` on the state at the loop's entry (`_is_test`) with such loops
    in each branch, the first branch's checked where the test holds."""
    if (
        len(middle) == 1
        and isinstance(middle[0], ir.ForEach)
        and (middle[0].variable, middle[0].sequence) == (loop.variable, loop.sequence)
    ):
        return [_Obligation(1, loop.body, loop.variable, middle[0].body, None)]
    if len(middle) == 1 and isinstance(middle[0], ir.If) and _is_test(middle[0].condition):
        test = middle[0]
        within = _loops(loop, test.then, baseline, outside)
        if any(obligation.guard is not None for obligation in within):
            raise _NotAStep(f"line {test.line}: the variant tests the state twice before its loops")
        return [replace(obligation, guard=test.condition) for obligation in within] + _loops(loop, test.orelse, baseline, outside)
    if loop.variable in ir.locals_read(outside):
        raise _NotAStep(f"line {loop.line}: `{loop.variable}` is read outside the loop, and the variant's loops do not set it")
    unrolled = _unrolled(loop, middle, baseline)
    return unrolled if unrolled is not None else _sliced(loop, middle, baseline)


def _is_test(condition: ir.Expr) -> bool:
    """A condition on int locals and constants alone (comparisons joined by `and`, `or`, `not`), which reads no
    sequence and cannot fail: it only picks which loops run from the same state."""
    if isinstance(condition, ir.Logical):
        return _is_test(condition.left) and _is_test(condition.right)
    if isinstance(condition, ir.Not):
        return _is_test(condition.operand)
    return isinstance(condition, ir.Compare) and all(
        isinstance(side, ir.Const) or (isinstance(side, ir.Local) and side.type == ir.INT)
        for side in (condition.left, condition.right)
    )


def _unrolled(loop: ir.ForEach, middle: tuple[ir.Stmt, ...], baseline: ir.Function) -> list[_Obligation] | None:
    """`unroll(n)` of the fold loop (`k = 0`, n elements per pass of a main loop, then a remainder loop of one), or
    of slicing's chunk loop (`k` from the chunks' start, n chunks per pass, the remaining chunks one at a time, then
    slicing's own loop of one): what each loop must agree with, or None where the loops have neither shape. The
    main loop's body is checked against as many baseline steps as it reads elements; the remainder loops' steps
    against one element's or one chunk's (the fold loop, or slicing's chunks, rebuilt from the remainder)."""
    if len(middle) == 3 and isinstance(middle[0], ir.Assign) and _unlined(middle[0].value) == ir.Const(0, 0):
        k, stop, step, start = middle[0].name, ir.Length(loop.sequence, 0), 1, 1
    elif len(middle) == 5 and all(isinstance(s, ir.Assign) for s in middle[:2]) and isinstance(middle[4], ir.ForRange):
        k, stop, step, start = middle[0].name, ir.Local(middle[1].name, ir.INT, 0), None, 2  # type: ignore[union-attr]
    else:
        return None
    main, remainder = middle[start : start + 2]
    if not (isinstance(main, ir.While) and isinstance(remainder, ir.While) and main.body and len(remainder.body) >= 2):
        return None
    if step is None:  # slicing's chunks: the remainder binds the chunk loop's variable, then steps by the chunk
        head, advance = remainder.body[:2]
        if not (isinstance(head, ir.Assign) and isinstance(advance, ir.Assign) and _unlined(head.value) == ir.Local(k, ir.INT, 0)):
            return None
        step, variable = _step_of(advance, k), head.name
    else:
        advance, variable = remainder.body[1], None
        step = (
            _step_of(advance, k)
            if _unlined(remainder.body[0]) == ir.Assign(loop.variable, ir.Load(loop.sequence, ir.Local(k, ir.INT, 0), ir.INT, 0), 0)
            else None
        )
    if step is None or step < 1:
        return None
    passes = _step_of(main.body[-1], k)
    n = passes // step if passes is not None and passes % step == 0 else None
    at = ir.Local(k, ir.INT, 0)
    last = ir.Binary("+", at, ir.Const((n - 1) * step, 0), 0) if n is not None else at
    shapes = [
        (_unlined(main.condition), ir.Logical("and", ir.Compare("<", at, stop, 0), ir.Compare("<", last, stop, 0), 0)),
        (_unlined(remainder.condition), ir.Compare("<", at, stop, 0)),
    ]
    copies, body = main.body[:-1], remainder.body[2:]
    fresh = {k} if variable is None else {k, middle[1].name}  # type: ignore[union-attr]
    if n is None or n < 2 or any(got != want for got, want in shapes) or fresh & set(baseline.locals):
        raise _NotAStep(f"line {loop.line}: the variant's loops are not unroll's main loop of n passes and its remainder")
    if k in _assigned(copies + body) or (variable is not None and middle[1].name in _assigned(copies + body)):  # type: ignore[union-attr]
        raise _NotAStep(f"line {loop.line}: the unrolled body assigns its own counter")
    if variable is None:
        return [
            _Obligation(n, loop.body, loop.variable, copies, k),
            _Obligation(1, loop.body, loop.variable, body, None),
        ]
    chunks = ir.ForRange(variable, middle[0].value, middle[1].value, step, body, loop.line)  # type: ignore[union-attr]
    sliced = _sliced(loop, (chunks, middle[4]), baseline)
    return [_Obligation(n * step, loop.body, loop.variable, copies, k, frozenset({variable})), *sliced]


def _step_of(statement: ir.Stmt, counter: str) -> int | None:
    """`c` where the statement is `counter = counter + c`."""
    if not (isinstance(statement, ir.Assign) and statement.name == counter and isinstance(statement.value, ir.Binary)):
        return None
    value = _unlined(statement.value)
    if value.op == "+" and value.left == ir.Local(counter, ir.INT, 0) and isinstance(value.right, ir.Const):
        return value.right.value
    return None


def _sliced(loop: ir.ForEach, middle: tuple[ir.Stmt, ...], baseline: ir.Function) -> list[_Obligation]:
    """Slicing's two loops over `loop`'s elements: `k` at a time up to `len - len % k`, then one at a time."""
    if len(middle) != 2 or not all(isinstance(s, ir.ForRange) for s in middle):
        raise _NotAStep(f"line {loop.line}: the variant's loop is neither a loop over the same elements nor slicing's two loops")
    chunks, rest = middle
    assert isinstance(chunks, ir.ForRange) and isinstance(rest, ir.ForRange)
    k, index = chunks.step, chunks.variable
    length = ir.Length(loop.sequence, 0)
    whole = ir.Binary("-", length, ir.Binary("%", length, ir.Const(k, 0), 0), 0)
    shapes = [
        (_unlined(chunks.start), ir.Const(0, 0)),
        (_unlined(chunks.stop), whole),
        (_unlined(rest.start), whole),
        (_unlined(rest.stop), length),
        ((rest.variable, rest.step), (index, 1)),
    ]
    if k < 1 or index in baseline.locals or any(got != want for got, want in shapes):
        raise _NotAStep(f"line {loop.line}: the variant's loops are not `range(0, n - n % k, k)` then `range(n - n % k, n)`")
    return [
        _Obligation(k, loop.body, loop.variable, chunks.body, index),
        _Obligation(1, loop.body, loop.variable, rest.body, index),
    ]


def _check(obligation: _Obligation, head: dict, dead: set[str], tables: dict[str, bytes | tuple[int, ...] | ir.Table]) -> Proof:
    """Enumerate the obligation's domain if it is small, else prove it with Z3."""
    bodies = obligation.baseline + obligation.variant
    positions = {obligation.variable, obligation.index, *obligation.cursors}
    state = sorted((ir.locals_read(bodies) | _assigned(bodies)) - dead - positions)
    bounds = {}
    for name in state:
        known = head.get(name)
        bounds[name] = (max(LOW, known.lo), min(HIGH, known.hi)) if known is not None else (LOW, HIGH)
    cases = 256**obligation.elements
    for lo, hi in bounds.values():
        cases *= hi - lo + 1
    outputs = sorted(_assigned(bodies) - dead - positions)
    if cases <= ENUMERATE_AT_ONCE:
        return _enumerate(obligation, bounds, outputs, tables, cases)
    found = _sampled(obligation, bounds, outputs, tables)
    if found is not None:
        return Proof(REFUTED, "sampling", cases, _refuted(obligation, found), found)
    try:  # k CRC steps at once are hard for a SAT solver, and affine
        return _linearity(obligation, bounds, outputs, tables, cases)
    except _NotAffine:
        pass  # enumeration or Z3 decides
    if cases <= ENUMERATE_AT_MOST:
        return _enumerate(obligation, bounds, outputs, tables, cases)
    return _z3(obligation, bounds, outputs, tables, cases)


class _Evaluator:
    """Runs step statements on a whole domain at once, NumPy arrays or Z3 bit-vectors, as the C code computes them:
    64-bit two's complement, arithmetic `>>`, signed comparisons. `where` selects, `lookup` reads a table."""

    def __init__(
        self,
        const: Callable[[int], object],
        where: Callable[[object, object, object], object],
        lookup: Callable[[tuple[int, ...], object], object],
        logical: dict[str, Callable[..., object]],
    ) -> None:
        self.const, self.where, self.lookup, self.logical = const, where, lookup, logical
        self.tables: dict[str, tuple[int, ...]] = {}
        self.elements: tuple[object, ...] = ()
        self.index: str | None = None
        self.cursors: frozenset[str] = frozenset()
        self.offsets: dict[str, int] = {}

    def run(self, statements: tuple[ir.Stmt, ...], env: dict[str, object]) -> dict[str, object]:
        for statement in statements:
            at = self.position(statement.value) if isinstance(statement, ir.Assign) and statement.name in self.cursors else None
            if isinstance(statement, ir.Assign) and at is not None:
                self.offsets[statement.name] = at
            elif isinstance(statement, ir.Assign):
                self.offsets.pop(statement.name, None)
                env = {**env, statement.name: self.value(statement.value, env)}
            elif isinstance(statement, ir.If):
                condition = self.condition(statement.condition, env)
                env = self.merged(statement, condition, self.run(statement.then, env), self.run(statement.orelse, env))
            elif (
                isinstance(statement, ir.ForRange)
                and isinstance(statement.start, ir.Const)
                and isinstance(statement.stop, ir.Const)
            ):
                for count in range(statement.start.value, statement.stop.value, statement.step):
                    env = self.run(statement.body, {**env, statement.variable: self.const(count)})
            else:
                raise _NotAStep(
                    f"line {statement.line}: a {type(statement).__name__} in the step is not modelled by the step check"
                )
        return env

    def merged(self, statement: ir.If, condition: object, then: dict[str, object], orelse: dict[str, object]) -> dict[str, object]:
        """The state after an `if`: each name from the branch its condition takes."""
        return {name: self.where(condition, then[name], orelse[name]) for name in then.keys() & orelse.keys()}

    def condition(self, expr: ir.Expr, env: dict[str, object]) -> object:
        if isinstance(expr, ir.Compare):
            left, right = self.value(expr.left, env), self.value(expr.right, env)
            return COMPARE[expr.op](left, right)
        if isinstance(expr, ir.Logical):
            return self.logical[expr.op](self.condition(expr.left, env), self.condition(expr.right, env))
        if isinstance(expr, ir.Not):
            return self.logical["not"](self.condition(expr.operand, env))
        return self.value(expr, env) != self.const(0)

    def value(self, expr: ir.Expr, env: dict[str, object]) -> object:
        if isinstance(expr, ir.Const):
            return self.const(expr.value)
        if isinstance(expr, ir.Local) and expr.type == ir.INT and expr.name in env:
            return env[expr.name]
        if isinstance(expr, ir.Binary) and expr.op in ARITHMETIC:
            return ARITHMETIC[expr.op](self.value(expr.left, env), self.value(expr.right, env))
        if isinstance(expr, ir.Select):
            condition = self.condition(expr.condition, env)
            return self.where(condition, self.value(expr.then, env), self.value(expr.orelse, env))
        if isinstance(expr, ir.Compare | ir.Logical | ir.Not):
            return self.where(self.condition(expr, env), self.const(1), self.const(0))
        if isinstance(expr, ir.Unary):
            operand = self.value(expr.operand, env)
            return -operand if expr.op == "-" else ~operand  # type: ignore[operator]
        if isinstance(expr, ir.Load) and expr.sequence in self.tables:
            return self.lookup(self.tables[expr.sequence], self.value(expr.index, env))
        if isinstance(expr, ir.Load) and self.position(expr.index) in range(len(self.elements)):
            return self.elements[self.position(expr.index)]  # type: ignore[index]
        if isinstance(expr, ir.Word) and self.position(expr.index) in range(len(self.elements) - ir.Word.BYTES + 1):
            first = self.position(expr.index)
            positions = range(first, first + ir.Word.BYTES)  # type: ignore[operator]
            word = None
            for t, at in enumerate(reversed(positions) if expr.order == "big" else positions):  # byte `t` from the lowest
                term = self.elements[at] if t == 0 else self.elements[at] << self.const(8 * t)  # type: ignore[operator]
                word = term if word is None else word ^ term
            return word
        raise _NotAStep(f"line {expr.line}: `{type(expr).__name__}` in the step is not modelled by the step check")

    def position(self, expr: ir.Expr) -> int | None:
        """Which element `expr` indexes: `index`, a cursor set from it, either plus a constant; None otherwise."""
        if isinstance(expr, ir.Binary) and expr.op == "+" and isinstance(expr.right, ir.Const):
            base = self.position(expr.left)
            return None if base is None else base + expr.right.value
        if isinstance(expr, ir.Local) and self.index is not None and expr.name == self.index:
            return 0
        return self.offsets.get(expr.name) if isinstance(expr, ir.Local) else None

    def both(self, obligation: _Obligation, env: dict[str, object], elements: tuple[object, ...]) -> tuple[dict, dict]:
        """The state after the baseline's steps (one per element) and after the variant's one run."""
        base = env
        for element in elements:
            base = self.run(obligation.baseline, {**base, obligation.variable: element})
        self.elements, self.index, self.cursors, self.offsets = elements, obligation.index, obligation.cursors, {}
        variant = self.run(obligation.variant, {**env, obligation.variable: elements[0]} if obligation.index is None else env)
        self.elements, self.index, self.cursors, self.offsets = (), None, frozenset(), {}
        return base, variant


def _carryless(op: str, a: object, b: object) -> object:
    """A carry-less product on the evaluator's values: Z3 vectors, or NumPy int64 patterns."""
    if isinstance(a, z3.BitVecRef) or isinstance(b, z3.BitVecRef):
        return carryless.on_bitvectors(op, a, b)  # type: ignore[arg-type]
    return carryless.on_arrays(op, a, b)


ARITHMETIC = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "<<": lambda a, b: a << b,
    ">>": lambda a, b: a >> b,
    **{op: partial(_carryless, op) for op in carryless.OPERATORS},
}
COMPARE = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


def _pattern(value: int) -> np.int64:
    """A constant as the evaluators hold it: its 64-bit two's complement pattern (a value held unsigned past
    2**63 - 1 reads as negative, with the same bits)."""
    return np.uint64(value).view(np.int64) if value > HIGH else np.int64(value)


def _enumerate(obligation: _Obligation, bounds: dict, outputs: list[str], tables: dict, cases: int) -> Proof:
    """Every (state, elements) pair, `CHUNK` at a time, with NumPy."""
    radices = [hi - lo + 1 for lo, hi in bounds.values()] + [256] * obligation.elements

    def grid() -> Iterator[list[np.ndarray]]:
        for start in range(0, cases, CHUNK):
            flat = np.arange(start, min(cases, start + CHUNK), dtype=np.int64)
            digits = []
            for radix in reversed(radices):
                digits.append(flat % radix)
                flat = flat // radix
            yield [digit + lo for digit, (lo, _) in zip(digits[::-1], bounds.values(), strict=False)] + digits[::-1][len(bounds) :]

    found = _search(obligation, bounds, outputs, tables, grid())
    if found is not None:
        return Proof(REFUTED, "enumeration", cases, _refuted(obligation, found), found)
    return Proof(PROVED, "enumeration", cases, f"all {cases} pairs enumerated")


def _sampled(obligation: _Obligation, bounds: dict, outputs: list[str], tables: dict) -> Counterexample | None:
    """A disagreement among `SAMPLES` random pairs (the bounds' ends among them; fewer where each runs many steps,
    `SAMPLED_STEPS`), found before a proof is tried."""
    rng = np.random.default_rng(0)
    samples = max(2, min(SAMPLES, SAMPLED_STEPS // obligation.elements))
    columns = []
    for lo, hi in bounds.values():
        column = rng.integers(lo, hi, samples, dtype=np.int64, endpoint=True)
        column[:2] = lo, hi
        columns.append(column)
    columns += [rng.integers(0, 255, samples, dtype=np.int64, endpoint=True) for _ in range(obligation.elements)]
    return _search(obligation, bounds, outputs, tables, iter([columns]))


def _search(
    obligation: _Obligation, bounds: dict, outputs: list[str], tables: dict, chunks: Iterator[list[np.ndarray]]
) -> Counterexample | None:
    """The first pair, among `chunks` (arrays of each state name's values, then each element's), on which the steps
    disagree or read a table out of range."""
    out_of_range: list[np.ndarray] = []

    def lookup(entries: tuple[int, ...], index: np.ndarray) -> np.ndarray:
        index = np.broadcast_to(index, shape)
        bad = (index < 0) | (index >= len(entries))
        out_of_range.append(bad)
        return np.asarray(entries, dtype=np.uint64).view(np.int64)[np.where(bad, 0, index)]

    evaluator = _Evaluator(_pattern, np.where, lookup, {"and": np.logical_and, "or": np.logical_or, "not": np.logical_not})
    evaluator.tables = {name: tuple(ir.entries(table)) for name, table in tables.items()}
    with np.errstate(over="ignore"):
        for columns in chunks:
            shape = columns[0].shape
            env = dict(zip(bounds, columns, strict=False))
            elements = tuple(columns[len(bounds) :])
            out_of_range.clear()
            base, variant = evaluator.both(obligation, env, elements)
            wrong = np.zeros(shape, dtype=bool)
            for bad in out_of_range:
                wrong |= bad
            for name in outputs:
                wrong |= np.broadcast_to(base[name] != variant[name], shape)
            if wrong.any():
                at = int(np.argmax(wrong))
                return Counterexample(
                    {name: int(env[name][at]) for name in bounds},
                    tuple(int(e[at]) for e in elements),
                    {name: int(np.broadcast_to(base[name], shape)[at]) for name in outputs},
                    {name: int(np.broadcast_to(variant[name], shape)[at]) for name in outputs},
                )
    return None


class _NotAffine(Exception):
    """A step the linearity rules do not cover: where."""


class _Affine(_Evaluator):
    """The NumPy evaluator, run on 0 and each unit input (one bit of one state word or element set), which also
    checks rule by rule that the step is affine over GF(2) in its input bits: xor; `&`, `|` with a constant; a shift
    by a constant (arithmetic `>>` too); `~`; a table that is affine in its index, read at `x & (len - 1)`; and an
    `if` on one bit of an affine value whose branches differ by a constant (`crc = (crc << 1) ^ POLY` or not). An
    affine function is known from its values there, so two affine steps that agree there agree everywhere."""

    def __init__(self, tables: dict[str, tuple[int, ...]]) -> None:
        super().__init__(_pattern, np.where, self.read, {})
        self.tables = tables

    def read(self, entries: tuple[int, ...], index: np.ndarray) -> np.ndarray:
        return np.asarray(entries, dtype=np.uint64).view(np.int64)[index]

    def value(self, expr: ir.Expr, env: dict[str, object]) -> object:
        if isinstance(expr, ir.Binary):
            commutes = ("&", "|", *carryless.OPERATORS)
            constant = isinstance(expr.right, ir.Const) or (isinstance(expr.left, ir.Const) and expr.op in commutes)
            if not (expr.op == "^" or (expr.op in ("<<", ">>", *commutes) and constant)):
                raise _NotAffine(f"line {expr.line}: `{expr.op}`")
        elif isinstance(expr, ir.Unary) and expr.op != "~":
            raise _NotAffine(f"line {expr.line}: unary `{expr.op}`")
        elif isinstance(expr, ir.Load) and expr.sequence in self.tables:
            entries, index = self.tables[expr.sequence], expr.index
            masked = (
                isinstance(index, ir.Binary) and index.op == "&" and index.right == ir.Const(len(entries) - 1, index.right.line)
            )
            if not (masked and len(entries) & (len(entries) - 1) == 0 and _affine_table(entries)):
                raise _NotAffine(f"line {expr.line}: a table read not at `x & {len(entries) - 1}`, or not affine in its index")
        elif not isinstance(expr, ir.Const | ir.Local | ir.Load | ir.Word):
            raise _NotAffine(f"line {expr.line}: `{type(expr).__name__}`")
        return super().value(expr, env)

    def condition(self, expr: ir.Expr, env: dict[str, object]) -> object:
        tested = (
            expr.left if isinstance(expr, ir.Compare) and expr.op in ("!=", "==") and expr.right == ir.Const(0, expr.line) else expr
        )
        bit = tested.right if isinstance(tested, ir.Binary) and tested.op == "&" else None
        if not (isinstance(bit, ir.Const) and bit.value > 0 and bit.value & (bit.value - 1) == 0):
            raise _NotAffine(f"line {expr.line}: a condition that is not one bit of a value")
        return super().condition(expr, env)

    def merged(self, statement: ir.If, condition: object, then: dict[str, object], orelse: dict[str, object]) -> dict[str, object]:
        for name in then.keys() & orelse.keys():
            apart = np.broadcast_to(np.bitwise_xor(then[name], orelse[name]), condition.shape)  # type: ignore[attr-defined]
            if (apart != apart[0]).any():
                raise _NotAffine(f"line {statement.line}: the branches differ in `{name}` by more than a constant")
        return super().merged(statement, condition, then, orelse)


def _affine_table(entries: tuple[int, ...]) -> bool:
    """Every entry is entry 0 xor the entries of its index's bits (each xor entry 0): affine in the index."""
    units = [entries[1 << bit] ^ entries[0] for bit in range((len(entries) - 1).bit_length())]
    for index, entry in enumerate(entries):
        expected = entries[0]
        for bit, unit in enumerate(units):
            if index >> bit & 1:
                expected ^= unit
        if entry != expected:
            return False
    return True


def _linearity(obligation: _Obligation, bounds: dict, outputs: list[str], tables: dict, cases: int) -> Proof:
    """Both steps affine by `_Affine`'s rules, and equal on 0 and each unit input: equal on every input. A state
    bounded to `[0, 2**w - 1]` is the space of its low `w` bits, so its units are those bits alone."""
    widths = [_low_bits(lo, hi) for lo, hi in bounds.values()] + [8] * obligation.elements
    points = 1 + sum(widths)
    units: list[np.ndarray] = []
    for n, bits in enumerate(widths):
        unit = np.zeros(points, dtype=np.uint64)
        first = 1 + sum(widths[:n])
        unit[first : first + bits] = np.left_shift(np.uint64(1), np.arange(bits, dtype=np.uint64))
        units.append(unit.view(np.int64))
    env = dict(zip(bounds, units, strict=False))
    elements = tuple(units[len(bounds) :])
    with np.errstate(over="ignore"):
        base, variant = _Affine({name: tuple(ir.entries(table)) for name, table in tables.items()}).both(obligation, env, elements)
    for name in outputs:
        wrong = np.broadcast_to(base[name] != variant[name], (points,))
        if wrong.any():
            at = int(np.argmax(wrong))
            counterexample = Counterexample(
                {state: int(env[state][at]) for state in bounds},
                tuple(int(e[at]) for e in elements),
                {out: int(np.broadcast_to(base[out], (points,))[at]) for out in outputs},
                {out: int(np.broadcast_to(variant[out], (points,))[at]) for out in outputs},
            )
            return Proof(REFUTED, "linearity", cases, _refuted(obligation, counterexample), counterexample)
    return Proof(PROVED, "linearity", cases, f"both steps affine over GF(2), equal on 0 and the {points - 1} unit inputs")


def _low_bits(lo: int, hi: int) -> int:
    """`w` where the bounds are exactly `[0, 2**w - 1]` (w below 64), else 64: every state word's bit."""
    return hi.bit_length() if lo == 0 and hi & (hi + 1) == 0 and hi.bit_length() < 64 else 64


def _z3(obligation: _Obligation, bounds: dict, outputs: list[str], tables: dict, cases: int) -> Proof:
    """A Z3 bit-vector proof over the whole domain: no state within bounds and no elements make the steps differ."""
    ranges: list[z3.BoolRef] = []

    def lookup(entries: tuple[int, ...], index: z3.BitVecRef) -> z3.BitVecRef:
        ranges.append(z3.ULT(index, z3.BitVecVal(len(entries), 64)))
        return _mux(entries, index)

    evaluator = _Evaluator(lambda value: z3.BitVecVal(value, 64), z3.If, lookup, {"and": z3.And, "or": z3.Or, "not": z3.Not})
    evaluator.tables = {name: tuple(ir.entries(table)) for name, table in tables.items()}
    env = {name: z3.BitVec(name, 64) for name in bounds}
    elements = tuple(z3.ZeroExt(56, z3.BitVec(f"element{j}", 8)) for j in range(obligation.elements))
    base, variant = evaluator.both(obligation, env, elements)  # type: ignore[arg-type]
    solver = z3.Solver()
    solver.set("timeout", Z3_SECONDS * 1000)
    for name, (lo, hi) in bounds.items():
        solver.add(env[name] >= lo, env[name] <= hi)
    solver.add(z3.Or(*[z3.Not(r) for r in ranges], *[base[name] != variant[name] for name in outputs]))
    answer = solver.check()
    if answer == z3.unsat:
        return Proof(PROVED, "z3", cases, "Z3: no state within the loop head's bounds and no input bytes make them differ")
    if answer == z3.unknown:
        return Proof(NOT_APPLICABLE, "z3", cases, f"Z3 gave no answer within {Z3_SECONDS} s ({solver.reason_unknown()})")
    model = solver.model()

    def number(value: object) -> int:
        return model.eval(value, model_completion=True).as_signed_long()  # type: ignore[attr-defined]

    counterexample = Counterexample(
        {name: number(env[name]) for name in bounds},
        tuple(number(e) for e in elements),
        {name: number(base[name]) for name in outputs},
        {name: number(variant[name]) for name in outputs},
    )
    return Proof(REFUTED, "z3", cases, _refuted(obligation, counterexample), counterexample)


def _mux(entries: tuple[int, ...], index: z3.BitVecRef) -> z3.BitVecRef:
    """`entries[index]` as a tree of selects on the index's low bits (the caller requires `index < len(entries)`)."""
    width = max(1, (len(entries) - 1).bit_length())
    level = [z3.BitVecVal(entries[n] if n < len(entries) else 0, 64) for n in range(1 << width)]
    for bit in range(width):
        chosen = z3.Extract(bit, bit, index) == 1
        level = [z3.If(chosen, level[n + 1], level[n]) for n in range(0, len(level), 2)]
    return level[0]


def _refuted(obligation: _Obligation, counterexample: Counterexample) -> str:
    return (
        f"{obligation.elements} baseline step(s) and the variant's differ from state {counterexample.state} on input "
        f"{list(counterexample.inputs)}: {counterexample.baseline} against {counterexample.variant}"
    )


def _assigned(statements: tuple[ir.Stmt, ...]) -> set[str]:
    return {node.name for node in ir.nodes(statements) if isinstance(node, ir.Assign)} | _counters(statements)


def _counters(statements: tuple[ir.Stmt, ...]) -> set[str]:
    return {node.variable for node in ir.nodes(statements) if isinstance(node, ir.ForRange)}


def _unlined(value: object) -> object:
    """`value` with every line set to 0, to compare shapes."""
    if isinstance(value, tuple):
        return tuple(_unlined(item) for item in value)
    if is_dataclass(value) and not isinstance(value, type):
        changes = {part.name: _unlined(getattr(value, part.name)) for part in fields(value)}
        return replace(value, **{**changes, **({"line": 0} if "line" in changes else {})})
    return value
