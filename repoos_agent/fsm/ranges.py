"""Widths: where a Python int may be held in 64 bits, by an interval analysis of the IR; anything else refused.

Python ints do not overflow, so the C code may only hold a value in `int64_t` where every value it can take fits.
Two things prove it. An interval analysis follows each local through the branches (narrowed by conditions such as
`if shift > 56: raise ...`) and loops (iterated to a fixed point, with widening); and a mask with a non-negative
constant, `(crc << 1 ^ 0x1021) & 0xFFFF`, keeps only low bits, which arithmetic modulo 2**64 computes exactly for
`+ - * << & | ^ ~` (not for `//`, `%` or `>>`), so the expression under it may wrap in C as the source states.

A local whose bounds still move after a few passes (a counter, `pos += 1`) is bounded by `GUARD`, and the C code
checks that bound after each assignment to it: past it, the call runs the Python original. Nothing wraps silently.
An assignment whose value is proven within `GUARD` at the loop's fixed point (`i += 1` under `while i < n`,
`a %= 65521`) could never fail that check, so it is left out there, and so is one side of it where that side
is proven (`a += data[i]` cannot go below it).

A local list of ints the function does not return (a stack, a compiled program's arguments) is followed as one
more value of the state, under `elements(name)`: the hull of every value stored or appended into it, which a load
from it gives. Where that hull still moves after a few passes it is held to `GUARD` as a counter is, and C checks
each value stored into the list.

Beside its bounds, a value carries the sequences it stays below (`i < len(data)` after `while i < n` with
`n = len(data)`), so that an index proven non-negative and below its sequence's length is read without a check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from math import gcd

from repoos_agent.fsm import carryless, ir
from repoos_agent.fsm.lower import FsmRefusal

INFINITY = 1 << 256
LOW, HIGH = -(1 << 63), (1 << 63) - 1
UNSIGNED_HIGH = (1 << 64) - 1
"""The most an unsigned 64-bit value holds: a value past `HIGH` (a 64-bit varint) is held as `uint64_t`, where
the operations that are exact on it (`| & ^ >>`, a `<<` proven below 2**64, a comparison with a value that is
never negative) are all that read it."""
GUARD = 1 << 61
"""The bound a widened local is held to at run time (the call runs the original past it): the sum or difference
of two guarded locals (`b += a` in Adler-32) still fits 64 bits."""
ARGUMENT = GUARD >> 1
"""The bound an int argument is held to (the call runs the original past it): a loop's `range(start, start + count)`
stays within `GUARD`, so a counter starting there may still grow by a few times its value."""
LENGTH = 1 << 60
"""The largest length a sequence can have: more elements than any 64-bit machine maps bytes (at most 2**57 with
five-level paging), and small enough that a counter one past a length is within `GUARD`."""
WIDEN_AFTER = 3
MAX_PATHS = 4
"""The most cases of an `and`/`or` test kept apart after an `if` that leaves on one side (`if a and b: raise`), each
followed to the end of its block (at a loop's head they are joined): `not a`, or `a and not b`."""
DTYPE_RANGES = {"uint8": (0, 255), "int8": (-128, 127), "int32": (-(1 << 31), (1 << 31) - 1)}
DTYPE_RANGES |= {"int64": (LOW, HIGH), "uint32": (0, (1 << 32) - 1), ir.INT: (LOW, HIGH), ir.CHAR: (0, 0x10FFFF)}


ELEMENTS = "[]"
"""The prefix of the state's entry for what a followed local list holds (no local has a name starting with it)."""


def elements(name: str) -> str:
    """The state's (and `Widths.guarded`'s) name for the values the local list `name` holds."""
    return ELEMENTS + name


def followed(function: ir.Function) -> frozenset[str]:
    """The local lists of ints whose values the analysis follows: those the function does not return (a returned
    list may hold any 64-bit int, as it always could)."""
    returned = set(function.results) if function.returns in (ir.OUTPUT, ir.TUPLE) else {function.buffer}
    return frozenset(name for name in function.output_names if function.output_kind(name) == ir.LIST and name not in returned)


Below = tuple[tuple[str, int], ...]
"""Sequences a value stays below, each `(sequence, k)` meaning `value + k <= len(sequence)` (k at least 0)."""


@dataclass(frozen=True)
class Interval:
    """The values `lo` to `hi` that are `residue` modulo `stride` (a stride of 1 says nothing more): `shift += 7`
    from 0 keeps `shift` a multiple of 7, so that `shift != 63` under `shift <= 63` means `shift <= 56`."""

    lo: int
    hi: int
    below: Below = ()
    stride: int = 1
    residue: int = 0

    def fits(self) -> bool:
        return self.lo >= LOW and self.hi <= HIGH

    def wide(self) -> bool:
        """Whether the value may be past `HIGH`: an unsigned 64-bit value."""
        return self.hi > HIGH

    def congruence(self) -> tuple[int, int]:
        """`(stride, residue)`, a single value being its own residue modulo 0."""
        return (0, self.lo) if self.lo == self.hi else (self.stride, self.residue)

    def hull(self, other: Interval) -> Interval:
        (first, r1), (second, r2) = self.congruence(), other.congruence()
        stride = gcd(first, second, r1 - r2) or 1
        lo, hi = min(self.lo, other.lo), max(self.hi, other.hi)
        return Interval(lo, hi, _weakest(self.below, other.below), stride, r1 % stride)


@dataclass(frozen=True)
class Widths:
    """What the analysis proved for the printer about the function it analysed: the locals C checks against `GUARD`
    after an assignment, the sides of that check proven to hold per assignment (by `id` of its node: whether its
    value is never below `-GUARD`, and never above `GUARD`), and the loads and stores whose index is always within
    range."""

    guarded: frozenset[str]
    within_guard: Mapping[int, tuple[bool, bool]]
    in_range: frozenset[int]
    unsigned: frozenset[int] = frozenset()
    """The operations (by `id` of their node) whose value may be past `HIGH`: C computes them on `uint64_t`."""
    unsigned_locals: frozenset[str] = frozenset()
    """The locals that may hold a value past `HIGH`, never a negative one: `uint64_t` in C."""
    unsigned_outputs: frozenset[str] = frozenset()
    """The returned lists of ints that may hold a value past `HIGH`, never a negative one: read back as `uint64`."""

    @property
    def wide(self) -> bool:
        """Whether any value is held as an unsigned 64-bit one."""
        return bool(self.unsigned or self.unsigned_locals or self.unsigned_outputs)

    def held_unsigned(self, expr: ir.Expr) -> bool:
        """Whether C holds `expr` in `uint64_t` (a constant past `HIGH`, a local or an operation found to be possibly
        past it): there `>>` shifts in zeros and a comparison is unsigned, elsewhere the same bits read as signed."""
        if isinstance(expr, ir.Const):
            return expr.value > HIGH
        return id(expr) in self.unsigned or (isinstance(expr, ir.Local) and expr.name in self.unsigned_locals)


TOP = Interval(-INFINITY, INFINITY)
BYTE = Interval(0, 255)
State = dict[str, Interval]


def check_widths(function: ir.Function) -> Widths:
    """Refuse (`FsmRefusal` at the line) any operation whose Python result may not fit 64 bits, any stored or appended
    value that may not fit its element, any shift or division Python would raise on; return the locals that C
    guards at run time (`GUARD`) and the indexes proven in range."""
    analysis = _Analysis(function)
    analysis.block(function.body, analysis.entry())
    within_guard = {node: (low, high) for node, (low, high) in analysis.within_guard.items() if low or high}
    in_range = frozenset(node for node, within in analysis.in_range.items() if within)
    unsigned_locals = frozenset(name for name, (wide, _) in analysis.holds.items() if wide)
    unsigned_outputs = frozenset(name for name, (wide, _) in analysis.appended.items() if wide)
    for names, holds in ((unsigned_locals, analysis.holds), (unsigned_outputs, analysis.appended)):
        for name in names:
            negative = holds[name][1]
            if negative is not None:
                raise FsmRefusal(negative, f"`{name}` may be negative here and past 2**63 - 1 elsewhere: no 64-bit type holds both")
    variables = sorted((line, name) for name, line in _loop_variables(function.body) if name in unsigned_locals)
    if variables:
        line, name = variables[0]
        raise FsmRefusal(line, f"`{name}` is a loop's variable and may be past 2**63 - 1 elsewhere: not modelled")
    widths = Widths(frozenset(analysis.guarded), within_guard, in_range, frozenset(analysis.unsigned))
    return replace(widths, unsigned_locals=unsigned_locals, unsigned_outputs=unsigned_outputs)


def loop_head(function: ir.Function, loop: ir.ForEach | ir.ForRange | ir.While) -> dict[str, Interval]:
    """The values each int local can hold at the head of `loop` (a statement of `function`, by identity), on every
    iteration: a set the loop's body maps into itself, which is what a proof about one iteration may assume."""
    analysis = _Analysis(function)
    analysis.block(function.body, analysis.entry())
    heads = [head for seen, head in analysis.heads if seen is loop]  # one a case of a test kept apart before it
    if heads:
        return _join(*heads)  # type: ignore[return-value]
    raise ValueError(f"line {loop.line}: the loop is not a statement of `{function.name}`, or is never reached")


def element_range(kind: str) -> Interval:
    return Interval(*DTYPE_RANGES[kind])


def _clamp(value: int) -> int:
    return max(-INFINITY, min(INFINITY, value))


def _bits(interval: Interval) -> Interval:
    """The values a bitwise result of operands within `interval` can take: a negative operand within
    `[-2**w, 2**w - 1]` is a `w + 1`-bit two's complement number, and so is the result (a full `int64` stays one)."""
    width = max(interval.hi.bit_length(), (-interval.lo - 1).bit_length() if interval.lo < 0 else 0)
    return Interval(0, (1 << width) - 1) if interval.lo >= 0 else Interval(-(1 << width), (1 << width) - 1)


class _Analysis:
    def __init__(self, function: ir.Function) -> None:
        self.function = function
        self.sequences = {p.name: p for p in function.parameters if isinstance(p, ir.Sequence)}
        if function.buffer is not None:
            dtype = "int64" if function.buffer_kind == ir.LIST else "uint8"
            self.sequences[function.buffer] = ir.Sequence(function.buffer, function.buffer_kind, dtype)
        self.sequences.update({output.name: output for output in function.outputs})
        self.followed = followed(function)
        self.checking = True
        self.guarded: set[str] = set()
        self.loops: list[tuple[list[State], list[State]]] = []
        self.heads: list[tuple[ir.Stmt, State]] = []
        self.paths = 1
        """How many cases of tests the statement being analysed is one of (`block`), at most `MAX_PATHS`."""
        self.preceding: tuple[ir.Stmt, ...] = ()
        """The statements before the one being analysed in its block: where a loop's bound was set."""
        self.deltas: frozenset[str] = frozenset()
        """The locals whose change since the loop's head is followed (as `_delta(name)`), in a counted loop's pass."""
        self.within_guard: dict[int, tuple[bool, bool]] = {}
        self.in_range: dict[int, bool] = {}
        self.unsigned: set[int] = set()
        self.holds: dict[str, tuple[bool, int | None]] = {}
        self.appended: dict[str, tuple[bool, int | None]] = {}
        """Per local (`holds`) and per returned list of ints (`appended`): whether a value it takes may be past
        `HIGH`, and a line where one may be negative (None where none may)."""
        """Per assignment node, and per load or store node: whether each place it is met (checked at the fixed point,
        a node may stand in several places) has its value within `GUARD`, or its index in range."""

    def entry(self) -> State:
        """An int argument is within `ARGUMENT`: the call runs the original for one past it."""
        arguments = {p: Interval(-ARGUMENT, ARGUMENT) for p in self.function.parameters if isinstance(p, str)}
        return arguments | {elements(name): Interval(0, 0) for name in self.followed}  # empty: nothing read yet

    def refuse(self, line: int, reason: str) -> Interval:
        if self.checking:
            raise FsmRefusal(line, reason)
        return TOP

    # expressions

    def value(self, expr: ir.Expr, state: State, masked: bool = False, wide: bool = False) -> Interval:
        """The values `expr` can take; under a mask (`masked`) ring arithmetic may wrap, elsewhere it must fit 64
        signed bits, or (`wide`, where the reader is exact on `uint64_t`) 64 unsigned bits."""
        result = self.evaluated(expr, state, masked)
        if masked or not HIGH < result.hi <= UNSIGNED_HIGH:  # past that, an unknown refused where it is used
            return result
        if not wide or result.lo < 0:
            return self.refuse(
                expr.line,
                f"a value of {_shown(result)}, past 2**63 - 1, is held as an unsigned 64-bit value: only `| & ^ >>`, "
                "a `<<` below 2**64, a comparison with a value that is never negative, an assignment and an append "
                "to the returned list read it",
            )
        if self.checking and isinstance(expr, ir.Binary | ir.Word):
            self.unsigned.add(id(expr))
        return result

    def evaluated(self, expr: ir.Expr, state: State, masked: bool) -> Interval:
        """The values `expr` can take, as `value` says, before a value past 64 signed bits is judged."""
        if isinstance(expr, ir.Const):
            if not (Interval(expr.value, expr.value).fits() or 0 <= expr.value <= UNSIGNED_HIGH):  # unsigned: `value`
                return self.refuse(expr.line, f"the constant {expr.value} does not fit 64 bits")
            return Interval(expr.value, expr.value)
        if isinstance(expr, ir.Local):
            return state.get(expr.name, element_range(expr.type)) if expr.type == ir.INT else element_range(expr.type)
        if isinstance(expr, ir.Length):
            table = self.function.tables.get(expr.sequence)
            if table is not None:
                return Interval(len(ir.entries(table)), len(ir.entries(table)))
            # the local output's length is not a bound: `out = bytearray()` empties it
            return Interval(0, LENGTH, () if expr.sequence in self.function.output_names else ((expr.sequence, 0),))
        if isinstance(expr, ir.Load):
            self.indexed(expr, expr.sequence, self.value(expr.index, state))
            if elements(expr.sequence) in state:
                return replace(state[elements(expr.sequence)], below=())
            return self.element(expr.sequence)
        if isinstance(expr, ir.ToInt):
            self.value(expr.operand, state)
            return element_range(expr.operand.type) if isinstance(expr.operand, ir.Local | ir.Load) else TOP
        if isinstance(expr, ir.Logical):  # the right side runs only where the left one lets it
            self.value(expr.left, state)
            after = self.refine(expr.left, expr.op == "and", state)
            if after is not None:
                self.value(expr.right, after)
            return Interval(0, 1)
        if isinstance(expr, ir.Compare):
            left, right = self.value(expr.left, state, wide=True), self.value(expr.right, state, wide=True)
            if (left.wide() or right.wide()) and min(left.lo, right.lo) < 0:
                return self.refuse(expr.line, "a comparison of an unsigned 64-bit value with a value that may be negative")
            return Interval(0, 1)
        if isinstance(expr, ir.Not):
            self.value(expr.operand, state)
            return Interval(0, 1)
        if isinstance(expr, ir.BytesBelow):
            self.value(expr.index, state)
            return Interval(0, 1)
        if isinstance(expr, ir.Word):  # in range where its first byte and its last one are
            self.indexed(expr, expr.sequence, self.value(expr.index, state))
            last = ir.Binary("+", expr.index, ir.Const(ir.Word.BYTES - 1, expr.line), expr.line)
            self.indexed(expr, expr.sequence, self.value(last, state))
            return Interval(0, UNSIGNED_HIGH)
        if isinstance(expr, ir.Select):  # each side where the condition lets it run, as an `if` would
            self.value(expr.condition, state)
            sides = [
                self.value(side, taken, masked)
                for side, taken in (
                    (expr.then, self.refine(expr.condition, True, state)),
                    (expr.orelse, self.refine(expr.condition, False, state)),
                )
                if taken is not None
            ]
            return sides[0].hull(sides[-1]) if sides else Interval(0, 0)
        if isinstance(expr, ir.Unary):
            operand = self.value(expr.operand, state, masked)
            result = Interval(-operand.hi, -operand.lo) if expr.op == "-" else Interval(-operand.hi - 1, -operand.lo - 1)
            return self.fitted(result, expr, masked)
        return self.binary(expr, state, masked)

    def indexed(self, node: ir.Load | ir.Store | ir.Word, sequence: str, index: Interval) -> None:
        """Note whether `index` is within `sequence` here: not negative, and below a table's length or (`below`) the
        sequence's own."""
        if not self.checking:
            return
        table = self.function.tables.get(sequence)
        if table is not None:
            within = index.lo >= 0 and index.hi < len(ir.entries(table))
        else:
            within = index.lo >= 0 and any(name == sequence and k >= 1 for name, k in index.below)
        self.in_range[id(node)] = self.in_range.get(id(node), True) and within

    def element(self, sequence: str) -> Interval:
        """The values one element of `sequence` holds: a constant table's own, its dtype's for an array, 64 bits for
        a list of ints, a code point for a `str`, a byte otherwise."""
        table = ir.entries(self.function.tables.get(sequence, b""))
        if table:  # a constant table: its least and greatest value
            return Interval(min(table), max(table))
        kind = self.sequences.get(sequence)
        if kind is None or kind.kind in (ir.BYTES, ir.BYTEARRAY, ir.BUFFER, ir.TABLE):
            return BYTE
        return element_range(ir.CHAR if kind.kind == ir.TEXT else ir.INT if kind.kind in (ir.INTS, ir.LIST) else kind.dtype)

    def fitted(self, result: Interval, expr: ir.Binary | ir.Unary, masked: bool) -> Interval:
        if result.fits():
            return result
        if masked:
            return Interval(_clamp(result.lo), _clamp(result.hi))
        return self.refuse(
            expr.line,
            f"`{expr.op}` may give a value past 64 bits (Python ints grow without bound): "
            "mask it as the checksum means it (`& 0xFFFFFFFF`), or bound it with a test that raises",
        )

    def binary(self, expr: ir.Binary, state: State, masked: bool) -> Interval:
        op = expr.op
        if op in ("min", "max"):  # picks one operand: each must hold its exact value
            left, right = self.value(expr.left, state, False), self.value(expr.right, state, False)
            pick = min if op == "min" else max
            below = _strongest(left.below, right.below) if op == "min" else _weakest(left.below, right.below)
            return Interval(pick(left.lo, right.lo), pick(left.hi, right.hi), below)
        if op in carryless.OPERATORS:  # a product over GF(2): as many bits as its operands' together, less one
            left, right = self.value(expr.left, state, wide=True), self.value(expr.right, state, wide=True)
            if min(left.lo, right.lo) < 0:
                reason = f"`{op}` of a value that may be negative: a carry-less product reads 64 unsigned bits"
                return self.refuse(expr.line, reason)
            bits = max(0, left.hi.bit_length() + right.hi.bit_length() - 1)
            return Interval(0, (1 << (min(bits, 64) if op == "clmul" else max(0, bits - 64))) - 1)
        if op == "&" and (mask := _mask(expr)) is not None:
            constant, other = mask
            operand = self.value(other, state, masked=True)
            return Interval(0, constant if operand.lo < 0 else min(constant, operand.hi))
        ring = op in ("+", "-", "*", "&", "|", "^")
        bitwise = op in ("&", "|", "^", "<<", ">>")
        left = self.value(expr.left, state, masked and (ring or op == "<<"), wide=bitwise)
        right = self.value(expr.right, state, masked and ring, wide=op in ("&", "|", "^"))
        if op == "+":
            below = () if masked else _strongest(_shifted(left.below, -right.hi), _shifted(right.below, -left.hi))
            result = Interval(left.lo + right.lo, left.hi + right.hi, below, *_summed(left, right, 1))
            return self.fitted(result, expr, masked)
        if op == "-":
            below = () if masked else _shifted(left.below, right.lo)
            return self.fitted(Interval(left.lo - right.hi, left.hi - right.lo, below, *_summed(left, right, -1)), expr, masked)
        if op == "*":
            corners = [a * b for a in (left.lo, left.hi) for b in (right.lo, right.hi)]
            return self.fitted(Interval(min(corners), max(corners)), expr, masked)
        if op in ("&", "|", "^"):
            if op != "&" and (left.wide() or right.wide()) and min(left.lo, right.lo) < 0:
                return self.refuse(expr.line, f"`{op}` of an unsigned 64-bit value with a value that may be negative")
            if op == "&" and (left.lo >= 0 or right.lo >= 0):
                return Interval(0, min(x.hi for x in (left, right) if x.lo >= 0))
            return _bits(left.hull(right))
        if op in ("<<", ">>"):
            if right.lo < 0 or right.hi > 63:
                return self.refuse(expr.line, f"a shift by {_shown(right)} bits: only shifts proven within 0 to 63 are modelled")
            if op == ">>":
                return Interval(min(left.lo >> right.lo, left.lo >> right.hi), max(left.hi >> right.lo, left.hi >> right.hi))
            corners = [left.lo << right.lo, left.lo << right.hi, left.hi << right.lo, left.hi << right.hi]
            result = Interval(min(corners), max(corners))
            if not masked and result.lo >= 0 and result.hi <= UNSIGNED_HIGH:  # exact on `uint64_t`
                return result
            return self.fitted(result, expr, masked)
        if right.lo <= 0 <= right.hi:
            return self.refuse(expr.line, f"`{op}` by a divisor that may be 0 (Python raises ZeroDivisionError); test it first")
        if left.lo <= LOW and right.lo <= -1 <= right.hi:
            return self.refuse(expr.line, f"`{op}` of the least 64-bit value by -1 is not modelled")
        if op == "%":
            return Interval(0, right.hi - 1) if right.lo > 0 else Interval(right.lo + 1, 0)
        corners = [a // b for a in (left.lo, left.hi) for b in (right.lo, right.hi)]
        return self.fitted(Interval(min(corners), max(corners)), expr, masked)

    # conditions

    def refine(self, condition: ir.Expr, truth: bool, state: State | None) -> State | None:
        """`state` where `condition` is `truth`, None where it cannot be."""
        if state is None:
            return None
        if isinstance(condition, ir.Const):
            return state if bool(condition.value) == truth else None
        if isinstance(condition, ir.Not):
            return self.refine(condition.operand, not truth, state)
        if isinstance(condition, ir.Logical):
            both = (condition.op == "and") == truth
            first = self.refine(condition.left, truth, state)
            if both:
                return self.refine(condition.right, truth, first)
            return _join(first, self.refine(condition.right, truth, self.refine(condition.left, not truth, state)))
        if isinstance(condition, ir.Compare):
            return self.compared(condition, truth, state)
        return state

    def compared(self, condition: ir.Compare, truth: bool, state: State) -> State | None:
        op = condition.op if truth else NEGATED[condition.op]
        left, right = condition.left, condition.right
        found = _counter(left)
        if found is None:
            found = _counter(right)
            if found is None:
                return state
            right, op = left, FLIPPED[op]
        left, shift = found  # `i + shift < x` bounds `i` as `i < x - shift` does
        checking, self.checking = self.checking, False
        other = self.value(right, state)
        self.checking = checking
        current = state.get(left.name, element_range(ir.INT))
        lo, hi, below = current.lo, current.hi, current.below
        if op in ("<", "<=", "=="):  # `i + shift < x` and `x + k <= len(s)`: `i + shift + 1 + k <= len(s)`
            below = _strongest(below, _shifted(other.below, shift + (op == "<")))
        if op in ("<", "<="):
            hi = min(hi, other.hi - shift - (op == "<"))
        elif op in (">", ">="):
            lo = max(lo, other.lo - shift + (op == ">"))
        elif op == "==":
            lo, hi = max(lo, other.lo - shift), min(hi, other.hi - shift)
        elif op == "!=" and other.lo == other.hi:  # an end of the values, found after rounding to the stride
            lo, hi = _rounded(lo, hi, current)
            lo, hi = lo + (lo == other.lo - shift), hi - (hi == other.hi - shift)
        lo, hi = _rounded(lo, hi, current)
        if lo > hi:
            return None
        return {**state, left.name: Interval(lo, hi, below, current.stride, current.residue)}

    # statements: each takes the state before and returns the state after (None: never falls through)

    def block(self, statements: tuple[ir.Stmt, ...], state: State | None, start: int = 0) -> State | None:
        """The state after `statements[start:]`; after an `if` that leaves on one side, each case of its `and`/`or`
        test that falls through is followed apart to the block's end (`paths`)."""
        for position in range(start, len(statements)):
            if state is None:
                return None
            statement = statements[position]
            self.preceding = statements[:position]
            if not isinstance(statement, ir.If):
                state = self.statement(statement, state)
                continue
            paths = self.branched(statement, state)
            if len(paths) <= 1:
                state = paths[0] if paths else None
                continue
            self.paths *= len(paths)
            try:
                return _join(*(self.block(statements, path, position + 1) for path in paths))
            finally:
                self.paths //= len(paths)
        return state

    def branched(self, statement: ir.If, state: State) -> list[State]:
        """The states after an `if`: one, the join of its branches, or where one branch never falls through and
        the test is an `and`/`or`, each case in which the other branch is taken, through that branch: after
        `if shift == 63 and byte > 1: raise`, `shift != 63` apart from `shift == 63 and byte <= 1`."""
        condition = statement.condition
        self.value(condition, state)
        then = self.block(statement.then, self.refine(condition, True, state))
        orelse = self.block(statement.orelse, self.refine(condition, False, state))
        if isinstance(condition, ir.Logical) and (then is None) != (orelse is None):
            truth, taken = (False, statement.orelse) if then is None else (True, statement.then)
            cases = self.cases(condition, truth, state)
            if len(cases) > 1 and self.paths * len(cases) <= MAX_PATHS:
                outs = [self.block(taken, case) for case in cases]
                return [out for out in outs if out is not None]
        joined = _join(then, orelse)
        return [] if joined is None else [joined]

    def cases(self, condition: ir.Expr, truth: bool, state: State | None) -> list[State]:
        """The states where `condition` is `truth`, one a case of its `and`/`or` (`not (a and b)`: `not a`, or `a`
        and `not b`), at most `MAX_PATHS` (joined into one past that)."""
        if state is None:
            return []
        if not isinstance(condition, ir.Logical):
            refined = self.refine(condition, truth, state)
            return [] if refined is None else [refined]
        if (condition.op == "and") == truth:  # both sides hold
            found = [
                case for first in self.cases(condition.left, truth, state) for case in self.cases(condition.right, truth, first)
            ]
        else:  # the left side decides, or it does not and the right side does
            decided = self.cases(condition.left, truth, state)
            found = decided + [
                case for first in self.cases(condition.left, not truth, state) for case in self.cases(condition.right, truth, first)
            ]
        if len(found) > MAX_PATHS:
            joined = _join(*found)
            return [] if joined is None else [joined]
        return found

    def statement(self, statement: ir.Stmt, state: State) -> State | None:
        if isinstance(statement, ir.Assign):
            if statement.name in self.function.output_names:
                return state
            value = self.value(statement.value, state, wide=statement.name not in self.function.parameters)
            if self.function.locals[statement.name] != ir.INT:
                return state
            if self.checking:
                self.held(self.holds, statement.name, value, statement.line)
                low, high = self.within_guard.get(id(statement), (True, True))
                self.within_guard[id(statement)] = (low and value.lo >= -GUARD, high and value.hi <= GUARD)
            if statement.name in self.guarded:  # within `GUARD`, at values of its stride, as widening leaves it
                low, high = _rounded(max(value.lo, -GUARD), min(value.hi, GUARD), value)
                value = replace(value, lo=low, hi=high)
            if statement.name in self.deltas:
                return {**state, statement.name: value, _delta(statement.name): self.changed(statement, state)}
            return {**state, statement.name: value}
        if isinstance(statement, ir.Store):
            self.indexed(statement, statement.sequence, self.value(statement.index, state))
            return self.stored(statement, state)
        if isinstance(statement, ir.Append):
            return self.stored(statement, state)
        if isinstance(statement, ir.Pop):
            return state
        if isinstance(statement, ir.If):
            return _join(*self.branched(statement, state))
        if isinstance(statement, ir.Switch):
            return self.switch(statement, state)
        if isinstance(statement, ir.While):
            trips = _while_trips(statement, self.preceding)
            return self.loop(statement, state, lambda s: self.refine(statement.condition, True, s), trips)
        if isinstance(statement, ir.ForRange):
            return self.for_range(statement, state)
        if isinstance(statement, ir.ForEach):
            element = self.element(statement.sequence)
            return self.loop(statement, state, lambda s: {**s, statement.variable: element})
        if isinstance(statement, ir.Break | ir.Continue):
            self.loops[-1][isinstance(statement, ir.Continue)].append(state)
            return None
        if isinstance(statement, ir.Return) and statement.value is not None:
            self.value(statement.value, state)
        if isinstance(statement, ir.Raise):
            for value in statement.values:
                self.value(value, state)
        return None

    def held(self, holds: dict[str, tuple[bool, int | None]], name: str, value: Interval, line: int) -> None:
        """Note in `holds` whether `name` takes a value past `HIGH` here, or one that may be negative."""
        wide, negative = holds.get(name, (False, None))
        holds[name] = (wide or value.wide(), negative if negative is not None or value.lo >= 0 else line)

    def stored(self, statement: ir.Store | ir.Append, state: State) -> State:
        """The value must fit the element (or, appended to a returned list of ints, 64 unsigned bits: `appended`);
        a followed list's values take it in (held within `GUARD` where guarded, with the sides proven noted, as for
        an assignment)."""
        sequence = statement.sequence
        returned = (
            isinstance(statement, ir.Append)
            and self.function.output_kind(sequence) == ir.LIST
            and sequence not in self.followed
            and sequence not in self.function.tuples
        )
        value = self.value(statement.value, state, wide=returned)
        if returned and self.checking:
            self.held(self.appended, sequence, value, statement.line)
        if not (returned and value.wide()):
            self.fits_element(value, statement.sequence, statement.line)
        name = elements(statement.sequence)
        if name not in state:
            return state
        if self.checking:
            low, high = self.within_guard.get(id(statement), (True, True))
            self.within_guard[id(statement)] = (low and value.lo >= -GUARD, high and value.hi <= GUARD)
        if name in self.guarded:
            value = Interval(max(value.lo, -GUARD), min(value.hi, GUARD))
        return {**state, name: state[name].hull(Interval(value.lo, value.hi))}

    def switch(self, statement: ir.Switch, state: State) -> State | None:
        """Each case where the value equals one of its constants, the default where it equals none."""
        self.value(statement.value, state)
        outs = []
        rest: State | None = state
        for values, body in statement.cases:
            equal = [
                self.refine(ir.Compare("==", statement.value, ir.Const(v, statement.line), statement.line), True, state)
                for v in values
            ]
            outs.append(self.block(body, _join(*equal)))
            for v in values:
                rest = self.refine(ir.Compare("!=", statement.value, ir.Const(v, statement.line), statement.line), True, rest)
        return _join(*outs, self.block(statement.default, rest))

    def fits_element(self, value: Interval, sequence: str, line: int) -> None:
        bounds = self.element(sequence)
        kind = self.sequences[sequence].dtype
        if value.lo < bounds.lo or value.hi > bounds.hi:
            self.refuse(line, f"a value of {_shown(value)} stored in `{sequence}`, whose elements are {kind}: mask it")

    def for_range(self, statement: ir.ForRange, state: State) -> State | None:
        start, stop = self.value(statement.start, state), self.value(statement.stop, state)
        step = statement.step
        if not Interval(stop.lo + min(step, 0), stop.hi + max(step, 0)).fits():
            self.refuse(statement.line, "a `range` whose bound is within a step of 64 bits is not modelled")
        if step > 0:  # below `stop`, and a whole step below it where both are multiples of the step
            whole = _whole_steps(statement)
            variable = Interval(start.lo, max(start.lo, stop.hi - 1), _shifted(stop.below, step if whole else 1))
        else:
            variable = Interval(min(start.hi, stop.lo + 1), start.hi)
        trips = _range_trips(statement, start, stop)
        return self.loop(statement, state, lambda s: {**s, statement.variable: variable}, trips)

    def loop(self, loop: ir.While | ir.ForRange | ir.ForEach, entry: State, enter, trips: int | None = None) -> State | None:
        """The state after a loop: its head iterated silently to a fixed point (a bound still moving after
        `WIDEN_AFTER` passes jumps to `GUARD`, and may settle lower on the next pass: `shift <= 56`), then the
        body checked once at that head. A loop that runs at most `trips` times takes its head from `counted`
        where that bounds it within `GUARD`, with no widening. A `for` loop may run no time, and
        leaves by running out as well as by `break`; a `while` loop leaves where its condition is false."""
        checking, self.checking = self.checking, False
        head = self.counted(loop, entry, enter, trips) if trips is not None else None
        if head is not None:
            self.checking = checking
            return self.checked_loop(loop, head, enter)
        head = entry
        limits, bitwise = _limits(loop), _bitwise(loop.body)
        steps = sum(len(values) for values in limits.values()) + len(bitwise)
        for passes in range(WIDEN_AFTER + len(self.function.locals) + steps + 2):
            new = _join(entry, *self.passed(loop.body, enter(head))[::2])
            if _settled(new, head):
                break
            if passes >= WIDEN_AFTER:
                head = self.widened(head, new, entry, _assigned(loop.body), limits, bitwise)
            else:
                head = new
        else:
            self.checking = checking
            raise FsmRefusal(loop.line, "the width analysis found no bound for this loop's values")
        self.checking = checking
        return self.checked_loop(loop, head, enter)

    def checked_loop(self, loop: ir.While | ir.ForRange | ir.ForEach, head: State, enter) -> State | None:
        """The body checked once at the loop's `head` (every state the head can see), and the state after the loop."""
        if self.checking:
            self.heads.append((loop, head))
        out, breaks, continues = self.passed(loop.body, enter(head))
        if isinstance(loop, ir.While):
            self.value(loop.condition, head)
            return _join(self.refine(loop.condition, False, head), breaks)
        return _join(head, out, continues, breaks)

    def counted(self, loop: ir.While | ir.ForRange | ir.ForEach, entry: State, enter, trips: int) -> State | None:
        """The head of a loop whose body runs at most `trips` times and holds no loop, where it stays within
        `GUARD`: None elsewhere (the fixed point with widening decides then).

        A head `H` holds every state after `j <= trips` passes when, from states in `H`, one pass changes each
        local `x` that only ever grows by what it adds (`x = x + e`, `x = x - e`) by an amount within `D`, and
        `H[x]` holds `entry[x] + j * D` for every such `j` (by induction on `j`), as far as the pass itself
        lets it (`i < end` caps the counter): the sums of a zlib-style block of bytes, bounded without a check.
        Every other local must hold what a pass leaves, as at a fixed point. A side still moving after a pass
        takes the growth's bound at once; the head is taken once the next pass stays within it."""
        assigned = {name for name in _assigned(loop.body) if self.function.locals.get(name) == ir.INT}
        if _holds_loop(loop.body):
            return None
        head = entry
        for _ in range(len(assigned) + 3):
            start = {**head, **{_delta(name): Interval(0, 0) for name in assigned}}
            self.deltas = frozenset(assigned)
            out, _, continues = self.passed(loop.body, enter(start))
            self.deltas = frozenset()
            ends = _join(out, continues) or {}
            new = dict(entry)
            for name, value in ends.items():
                if name.endswith(DELTA):
                    continue
                if name in assigned and name in entry:  # a side still moving is bounded by the growth alone
                    change, now = ends[_delta(name)], head[name]
                    low, high = entry[name].lo + min(0, trips * change.lo), entry[name].hi + max(0, trips * change.hi)
                    low, high = low if value.lo < now.lo else max(value.lo, low), high if value.hi > now.hi else min(value.hi, high)
                    value = Interval(low, high, value.below)
                new[name] = new[name].hull(value) if name in new else value
            if _covered(new, head):
                within = all(head[name].lo >= -GUARD and head[name].hi <= GUARD for name in assigned if name in head)
                return head if within else None
            head = {name: head[name].hull(value) if name in head else value for name, value in new.items()}
        return None

    def changed(self, statement: ir.Assign, state: State) -> Interval:
        """How much the local `statement` assigns has changed since the loop's head, after it: what it had changed
        before plus what `x = x + e` adds (`x - e` takes away), or anything where it is assigned otherwise."""
        before = state.get(_delta(statement.name), TOP)
        value, name = statement.value, statement.name
        if not isinstance(value, ir.Binary) or value.op not in ("+", "-"):
            return TOP
        if _is_local(value.left, name):
            step = self.value(value.right, state)
            step = step if value.op == "+" else Interval(-step.hi, -step.lo)
        elif value.op == "+" and _is_local(value.right, name):
            step = self.value(value.left, state)
        else:
            return TOP
        return Interval(_clamp(before.lo + step.lo), _clamp(before.hi + step.hi))

    def passed(self, body, state: State | None) -> tuple[State | None, State | None, State | None]:
        """One pass over a loop body: the state falling through its end, and the join of its breaks and continues."""
        self.loops.append(([], []))
        out = self.block(body, state)
        breaks, continues = self.loops.pop()
        return out, _join(*breaks), _join(*continues)

    def widened(
        self, head: State, new: State, entry: State, assigned: set[str], limits: dict[str, list[int]], bitwise: set[str]
    ) -> State:
        """`new` with each bound still moving, or past `GUARD` where the loop assigns the local (a value that grows
        by multiplying gets there before widening starts), set to `GUARD`, which C checks after each assignment: a
        value the loop is entered with is not checked, so the bound keeps it whole.

        A bound still moving first stops at the next constant the loop tests the local against (`limits`: `shift`
        in `if shift == 63 ...` stops at 63), where the next pass may show it holds. A local the loop only sets by
        `| & ^ >>` (`bitwise`), not negative, stays within the widths of what it takes in: its upper bound goes to
        `HIGH`, then to 2**64 - 1, unguarded (past that, the next pass guards it as any other)."""
        widened = dict(new)
        for name, value in new.items():
            old = head.get(name)
            if old is None:
                continue
            if value.below != old.below:  # what a local stays below may shrink pass after pass: forget it
                value = widened[name] = replace(value, below=())
            if value.congruence() != old.congruence() and old.lo != old.hi:  # a stride may shrink pass after pass
                value = widened[name] = replace(value, stride=1, residue=0)
            if name in bitwise and 0 <= value.lo == old.lo and value.hi <= UNSIGNED_HIGH:
                if value.hi > old.hi:
                    widened[name] = replace(value, hi=HIGH if value.hi <= HIGH else UNSIGNED_HIGH)
            elif (value.lo, value.hi) != (old.lo, old.hi) or (name in assigned and (value.lo < -GUARD or value.hi > GUARD)):
                self.guarded.add(name)
                stops = limits.get(name, [])
                low = value.lo
                if value.lo < old.lo or value.lo < -GUARD:
                    low = max((stop for stop in stops if -GUARD <= stop <= value.lo), default=-GUARD)
                high = value.hi
                if value.hi > old.hi or value.hi > GUARD:
                    high = min((stop for stop in stops if value.hi <= stop <= GUARD), default=GUARD)
                low, high = _rounded(low, high, value)
                moved = replace(value, lo=low, hi=high)
                widened[name] = moved.hull(entry[name]) if name in entry else moved
        return widened


DELTA = "'delta"
"""The suffix of a counted loop's phantom local: how much the local of that name has changed since the head."""
MAX_TRIPS = 1 << 32
"""A loop bound past which counting passes is not worth it: its sums would pass `GUARD` in any case."""


def _delta(name: str) -> str:
    return name + DELTA


def _is_local(expr: ir.Expr, name: str) -> bool:
    return isinstance(expr, ir.Local) and expr.name == name


def _holds_loop(body: tuple[ir.Stmt, ...]) -> bool:
    """Whether a loop stands anywhere in `body`."""
    for statement in body:
        if isinstance(statement, ir.While | ir.ForRange | ir.ForEach):
            return True
        if isinstance(statement, ir.If) and (_holds_loop(statement.then) or _holds_loop(statement.orelse)):
            return True
        if isinstance(statement, ir.Switch) and any(
            _holds_loop(block) for block in (statement.default, *(b for _, b in statement.cases))
        ):
            return True
    return False


def _range_trips(loop: ir.ForRange, start: Interval, stop: Interval) -> int | None:
    """The most times `loop` runs: from its bounds' values, or from a stop written as its start plus a constant
    (`range(i, min(i + 5552, n))`); None where neither bounds it."""
    if loop.step <= 0:
        return None
    spans = [stop.hi - start.lo] if stop.hi < INFINITY and start.lo > -INFINITY else []
    span = _span_over(loop.stop, loop.start)
    spans += [span] if span is not None else []
    return _trips(min(spans), loop.step) if spans else None


def _while_trips(loop: ir.While, before: tuple[ir.Stmt, ...]) -> int | None:
    """The most times `while i < end` (alone, or a conjunct of an `and`) runs, where every pass adds at least 1 to
    `i` at its top level, nothing in it lowers `i`, sets `end` or continues, and the statements before it set
    `end = min(i + C, ...)` (or `i + C`) with `i` only raised since: then `end - i <= C` on entry."""
    for counter, end in _exit_tests(loop.condition):
        if end.name in _targets(loop.body) or _continues(loop.body):
            continue
        raised = _raised_by(loop.body, counter.name)
        if raised is None or raised < 1:
            continue
        span = _span_before(before, counter.name, end.name)
        if span is not None:
            return _trips(span, raised)
    return None


def _trips(span: int, step: int) -> int | None:
    trips = max(0, -(-span // step))
    return trips if trips <= MAX_TRIPS else None


def _exit_tests(condition: ir.Expr) -> list[tuple[ir.Local, ir.Local]]:
    """Each `i < end` of two int locals the loop needs true to run: the condition, or a conjunct of its `and`."""
    if isinstance(condition, ir.Logical) and condition.op == "and":
        return _exit_tests(condition.left) + _exit_tests(condition.right)
    if isinstance(condition, ir.Compare) and condition.op == "<":
        left, right = condition.left, condition.right
        if isinstance(left, ir.Local) and isinstance(right, ir.Local) and left.type == right.type == ir.INT:
            return [(left, right)]
    return []


def _increment(statement: ir.Stmt, name: str) -> int | None:
    """`c` of `name = name + c` with a constant `c`, None for any other statement."""
    if not (isinstance(statement, ir.Assign) and statement.name == name and isinstance(statement.value, ir.Binary)):
        return None
    value = statement.value
    if value.op != "+":
        return None
    for kept, added in ((value.left, value.right), (value.right, value.left)):
        if _is_local(kept, name) and isinstance(added, ir.Const):
            return added.value
    return None


def _raised_by(body: tuple[ir.Stmt, ...], name: str) -> int | None:
    """The least one pass over `body` adds to `name`: the constants its top-level `name = name + c` add; None where
    any assignment to `name`, at any depth, is not such a non-negative step."""
    if not _only_raised(body, name):
        return None
    return sum(_increment(statement, name) or 0 for statement in body)


def _only_raised(statements: tuple[ir.Stmt, ...], name: str) -> bool:
    """Whether every assignment to `name` in `statements`, at any depth, adds a non-negative constant to it."""
    for statement in statements:
        if isinstance(statement, ir.ForRange | ir.ForEach) and statement.variable == name:
            return False
        if isinstance(statement, ir.Assign) and statement.name == name:
            step = _increment(statement, name)
            if step is None or step < 0:
                return False
        blocks = [getattr(statement, field, ()) for field in ("then", "orelse", "body", "default")]
        if isinstance(statement, ir.Switch):
            blocks += [block for _, block in statement.cases]
        if not all(_only_raised(block, name) for block in blocks):
            return False
    return True


def _continues(statements: tuple[ir.Stmt, ...]) -> bool:
    """Whether a `continue` stands anywhere in `statements` (one in a nested loop too: a conservative answer)."""
    for statement in statements:
        if isinstance(statement, ir.Continue):
            return True
        blocks = [getattr(statement, field, ()) for field in ("then", "orelse", "body", "default")]
        if isinstance(statement, ir.Switch):
            blocks += [block for _, block in statement.cases]
        if any(_continues(block) for block in blocks):
            return True
    return False


def _span_over(stop: ir.Expr, start: ir.Expr) -> int | None:
    """`C` where `stop` is `start + C`, `min(start + C, x)` or `min(x, start + C)` (so `stop - start <= C`)."""
    sides = (stop.left, stop.right) if isinstance(stop, ir.Binary) and stop.op == "min" else (stop,)
    for side in sides:
        constant = isinstance(side, ir.Binary) and side.op == "+" and isinstance(side.right, ir.Const)
        if constant and _unlined(side.left) == _unlined(start):  # type: ignore[union-attr]
            return side.right.value  # type: ignore[union-attr]
    return None


def _span_before(before: tuple[ir.Stmt, ...], counter: str, end: str) -> int | None:
    """`C` where the last of `before` to set `end` sets it to `counter + C` (or the `min` of that and more), and
    the statements after it only raise `counter`."""
    for statement in reversed(before):
        if isinstance(statement, ir.Assign) and statement.name == end:
            return _span_over(statement.value, ir.Local(counter, ir.INT, 0))
        if end in _targets((statement,)) or not _only_raised((statement,), counter):
            return None
    return None


def _unlined(expr: ir.Expr) -> object:
    """`expr` with every line set to 0, to compare two expressions by what they compute."""
    if isinstance(expr, ir.Const | ir.Local | ir.Length):
        return replace(expr, line=0)
    if isinstance(expr, ir.Binary | ir.Compare | ir.Logical):
        return (type(expr).__name__, expr.op, _unlined(expr.left), _unlined(expr.right))
    return expr


NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def _summed(left: Interval, right: Interval, sign: int) -> tuple[int, int]:
    """The stride and residue of `left + right` (`sign` 1) or `left - right` (-1): modulo what both strides share."""
    (first, r1), (second, r2) = left.congruence(), right.congruence()
    stride = gcd(first, second) or 1
    return stride, (r1 + sign * r2) % stride


def _rounded(lo: int, hi: int, like: Interval) -> tuple[int, int]:
    """`lo` and `hi` moved inwards to the nearest values of `like`'s residue modulo its stride."""
    if like.stride <= 1:
        return lo, hi
    return lo + (like.residue - lo) % like.stride, hi - (hi - like.residue) % like.stride


def _mask(expr: ir.Binary) -> tuple[int, ir.Expr] | None:
    """`x & C` with a non-negative constant `C`: the constant and `x`."""
    for constant, other in ((expr.right, expr.left), (expr.left, expr.right)):
        if isinstance(constant, ir.Const) and 0 <= constant.value <= HIGH:
            return constant.value, other
    return None


def _shifted(below: Below, by: int) -> Below:
    """What `value - by` stays below, where `value` stays below `below` (a negative `k` says nothing useful)."""
    return tuple((name, k + by) for name, k in below if k + by >= 0)


def _strongest(*belows: Below) -> Below:
    """Each fact of either (both hold): per sequence, the larger `k`."""
    best: dict[str, int] = {}
    for below in belows:
        for name, k in below:
            best[name] = max(k, best.get(name, k))
    return tuple(sorted(best.items()))


def _weakest(first: Below, second: Below) -> Below:
    """The facts of both (either may hold): per sequence in both, the smaller `k`."""
    other = dict(second)
    return tuple(sorted((name, min(k, other[name])) for name, k in first if name in other))


def _whole_steps(loop: ir.ForRange) -> bool:
    """`range(c, e - e % step, step)` with `c` a multiple of `step`: every value is a whole step below the stop
    (an unrolled loop's main part)."""
    stop = loop.stop
    return (
        isinstance(loop.start, ir.Const)
        and loop.start.value % loop.step == 0
        and isinstance(stop, ir.Binary)
        and stop.op == "-"
        and isinstance(stop.right, ir.Binary)
        and stop.right.op == "%"
        and stop.right.left == stop.left
        and stop.right.right == ir.Const(loop.step, stop.right.right.line)
    )


def _counter(side: ir.Expr) -> tuple[ir.Local, int] | None:
    """An int local, or one plus a constant (an unrolled loop's test `k + 3 < n`), and that constant."""
    if isinstance(side, ir.Local) and side.type == ir.INT:
        return side, 0
    if isinstance(side, ir.Binary) and side.op == "+" and isinstance(side.right, ir.Const):
        found = _counter(side.left)
        return None if found is None or found[1] else (found[0], side.right.value)
    return None


def _limits(loop: ir.While | ir.ForRange | ir.ForEach) -> dict[str, list[int]]:
    """Per int local, the constants the loop tests it against (`shift == 63`, `k + 1 < 8`), each and one either
    side: where a widened bound may stop before `GUARD`."""
    found: dict[str, set[int]] = {}

    def visit(expr: object) -> None:
        if isinstance(expr, ir.Compare):
            for side, other in ((expr.left, expr.right), (expr.right, expr.left)):
                counter = _counter(side)
                if counter is not None and isinstance(other, ir.Const):
                    value = other.value - counter[1]
                    found.setdefault(counter[0].name, set()).update((value - 1, value, value + 1))
        for field in ("left", "right", "operand", "condition", "then", "orelse", "value", "index", "body", "default"):
            part = getattr(expr, field, None)
            for each in part if isinstance(part, tuple) else (part,):
                if isinstance(each, ir.Expr | ir.Stmt):
                    visit(each)
        if isinstance(expr, ir.Switch):
            for _, block in expr.cases:
                for each in block:
                    visit(each)

    visit(loop)
    return {name: sorted(values) for name, values in found.items()}


def _bitwise(body: tuple[ir.Stmt, ...]) -> set[str]:
    """The locals a loop body sets, at any depth, only to a non-negative constant or by `| & ^ >>`: their widths
    are those of what they take in."""
    kinds: dict[str, bool] = {}

    def visit(statements: tuple[ir.Stmt, ...]) -> None:
        for statement in statements:
            if isinstance(statement, ir.Assign):
                value = statement.value
                ok = (isinstance(value, ir.Const) and value.value >= 0) or (
                    isinstance(value, ir.Binary) and value.op in ("|", "&", "^", ">>")
                )
                kinds[statement.name] = kinds.get(statement.name, True) and ok
            if isinstance(statement, ir.ForRange | ir.ForEach):
                kinds[statement.variable] = False
            for field in ("then", "orelse", "body", "default"):
                visit(getattr(statement, field, ()))
            if isinstance(statement, ir.Switch):
                for _, block in statement.cases:
                    visit(block)

    visit(body)
    return {name for name, ok in kinds.items() if ok}


def _loop_variables(body: tuple[ir.Stmt, ...]) -> set[tuple[str, int]]:
    """Each `for` loop's variable in `body`, at any depth, with the loop's line."""
    return {(node.variable, node.line) for node in ir.nodes(body) if isinstance(node, ir.ForRange | ir.ForEach)}


def _assigned(body: tuple[ir.Stmt, ...]) -> set[str]:
    """The locals a loop body assigns, at any depth."""
    return {node.name for node in ir.nodes(body) if isinstance(node, ir.Assign)}


def _targets(statements: tuple[ir.Stmt, ...]) -> set[str]:
    """The locals `statements` set, at any depth: by assignment, and as a `for` loop's variable."""
    names = _assigned(statements)
    for statement in statements:
        if isinstance(statement, ir.ForRange | ir.ForEach):
            names |= {statement.variable} | _targets(statement.body)
        for block in (getattr(statement, field, ()) for field in ("then", "orelse", "body", "default")):
            names |= _targets(block)
        if isinstance(statement, ir.Switch):
            for _, block in statement.cases:
                names |= _targets(block)
    return names


def _settled(new: State, head: State) -> bool:
    """Whether `head` already holds at the loop's head: `new` has its bounds and stays below at least what it does
    (a head that forgot a fact the next pass proves again still holds)."""
    if new.keys() != head.keys():
        return False
    for name, value in new.items():
        old = head[name]
        if (value.lo, value.hi) != (old.lo, old.hi) or _strongest(value.below, old.below) != value.below:
            return False
        if not _within_congruence(value, old):
            return False
    return True


def _within_congruence(value: Interval, bound: Interval) -> bool:
    """Whether every value of `value`'s stride and residue is of `bound`'s."""
    (stride, residue), (outer, outer_residue) = value.congruence(), bound.congruence()
    if outer == 0:
        return stride == 0 and residue == outer_residue
    return stride % outer == 0 and (residue - outer_residue) % outer == 0


def _covered(new: State, head: State) -> bool:
    """Whether `head` holds every state of `new`: each bound within, and no fact of what it stays below that `new`
    lacks."""
    for name, value in new.items():
        old = head.get(name)
        if old is None or value.lo < old.lo or value.hi > old.hi or _strongest(value.below, old.below) != value.below:
            return False
        if not _within_congruence(value, old):
            return False
    return True


def _join(*states: State | None) -> State | None:
    reached = [state for state in states if state is not None]
    if not reached:
        return None
    joined = dict(reached[0])
    for state in reached[1:]:
        for name, value in state.items():
            joined[name] = joined[name].hull(value) if name in joined else value
    return joined


def _shown(interval: Interval) -> str:
    def bound(value: int) -> str:
        return "-inf" if value <= -INFINITY else "inf" if value >= INFINITY else str(value)

    return f"{bound(interval.lo)} to {bound(interval.hi)}"
