"""Shift-register loops (bitwise CRCs): the eight bit steps after each input byte become one lookup in a 256-entry
table (Sarwate), or k bytes become k lookups in k tables (slicing-by-k).

The pattern is read off the IR, not off a catalog of known CRCs: a `for` loop over a byte sequence whose body
xors the byte into a register, then `for _ in range(8)` over one step that tests the register's top bit (shifting
left, masked to its width) or its bottom bit (shifting right, reflected) and xors a constant polynomial where it
is set. The tables are that step, evaluated here on Python ints, so any polynomial, width and initial value
written that way works. The identities behind the rewritten expressions hold because such a step is linear over
GF(2); `fsm.proof` checks the result all the same, and a table that is wrong in one entry is refuted there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cache

from repoos_agent.fsm import ir
from repoos_agent.fsm.rewrites.registry import NotApplicable, rewrite

BITS = 8
"""The bit steps one input byte takes, and so the inner loop's trip count."""
WORD = 64
"""The bits C holds a register in: a narrower register is one proven within fewer at the loop."""


@dataclass(frozen=True)
class ShiftRegister:
    """A bitwise CRC loop found in a function: the fold loop (a top-level statement, at `position`), the register,
    the inner bit loop and its step, the direction, the register's width (MSB-first; 0 where reflected, whose
    register has no top bit) and where the byte enters."""

    position: int
    loop: ir.ForEach
    register: str
    inner: ir.ForRange
    step: ir.If
    reflected: bool
    width: int
    entry: int | None
    """The bit at which `register ^= byte << entry` xors the byte in, None where the body does not do just that."""

    def table(self, times: int) -> ir.Table:
        """Entry `b`: the register after `times` bytes' bit steps from `b` at the register's low byte (reflected) or
        top byte (MSB-first), all other bits zero; `times=1` is Sarwate's table."""
        return self.tables(times)[-1]

    def tables(self, count: int) -> tuple[ir.Table, ...]:
        """`table(1)` to `table(count)`, each the one before run one byte further, computed once per register and
        count: the menu, the grammar and every proposal apply the rewrites again, and the step runs on Python ints."""
        return _tables(self.step, self.register, self.reflected, self.width, count)


@cache
def _tables(step: ir.If, register: str, reflected: bool, width: int, count: int) -> tuple[ir.Table, ...]:
    shift = 0 if reflected else width - BITS
    entries = tuple(byte << shift for byte in range(256))
    tables = []
    for _ in range(count):
        entries = tuple(_run_byte(step, register, value) for value in entries)
        top = max(entries)
        dtype = next(name for name, bits in (("uint8", 8), ("uint16", 16), ("uint32", 32), ("uint64", 64)) if top >> bits == 0)
        tables.append(ir.Table(dtype, entries))
    return tuple(tables)


def _run_byte(step: ir.If, register: str, value: int) -> int:
    """The register after one byte's 8 bit steps from `value`."""
    for _ in range(BITS):
        value = _run(step, register, value)
    return value


def find_shift_register(function: ir.Function, name: str) -> ShiftRegister:
    """The function's bitwise CRC loop, or `NotApplicable(name, ...)` naming what is missing and where."""
    reason = "no `for` loop over a byte sequence's elements at the function's top level"
    for position, loop in enumerate(function.body):
        if not isinstance(loop, ir.ForEach):
            continue
        inner = [s for s in loop.body if isinstance(s, ir.ForRange) and _counts_to(s, BITS)]
        if len(inner) != 1:
            reason = f"line {loop.line}: the loop over `{loop.sequence}` has no single inner `for _ in range(8)` bit loop"
            continue
        found = _bit_step(inner[0])
        if isinstance(found, str):
            reason = f"line {inner[0].line}: {found}"
            continue
        register, reflected, width = found
        if inner[0].variable in ir.locals_read(function.body):
            reason = f"line {inner[0].line}: the bit loop's counter `{inner[0].variable}` is read; a table would not set it"
            continue
        entered = [
            s
            for s in loop.body
            if isinstance(s, ir.Assign) and s.name == register and _xored_byte(s, register, loop.variable) is not None
        ]
        if not entered:
            reason = f"line {loop.line}: the loop's body does not xor `{loop.variable}` into `{register}`"
            continue
        entry = _xored_byte(entered[0], register, loop.variable) if loop.body == (entered[0], inner[0]) else None
        step = inner[0].body[0]
        assert isinstance(step, ir.If)  # `_bit_step` has checked it
        return ShiftRegister(position, loop, register, inner[0], step, reflected, width, entry)
    raise NotApplicable(name, reason)


def bytewise_register(function: ir.Function, name: str) -> ShiftRegister:
    """The function's bitwise CRC loop where a rewrite may take its input bytes several at a time (`slicing`,
    `clmul-fold`): over a bytes or bytearray argument, its body just the byte xored in at the register's low byte
    (reflected) or top byte (MSB-first) then the bit loop, a register of whole bytes, and the byte not read after
    the loop; else `NotApplicable(name, ...)` with the line and what differs."""
    found = find_shift_register(function, name)
    loop = found.loop
    sequence = next((p for p in function.parameters if isinstance(p, ir.Sequence) and p.name == loop.sequence), None)
    if sequence is None or sequence.kind not in (ir.BYTES, ir.BYTEARRAY):
        raise NotApplicable(name, f"line {loop.line}: `{loop.sequence}` is not a bytes or bytearray argument")
    if found.entry != (0 if found.reflected else found.width - BITS):
        raise NotApplicable(
            name,
            f"line {loop.line}: the body is not just `{found.register} ^= {loop.variable}` at the register's "
            f"{'low' if found.reflected else 'top'} byte, then the bit loop",
        )
    if not found.reflected and found.width % BITS:
        raise NotApplicable(name, f"line {found.inner.line}: a {found.width}-bit register is not whole bytes")
    if loop.variable in ir.locals_read(function.body[: found.position] + function.body[found.position + 1 :]):
        raise NotApplicable(name, f"line {loop.line}: `{loop.variable}` is read after the loop")
    return found


@rewrite("byte-table", "a bitwise CRC's 8 bit steps per byte become one lookup in a 256-entry table (Sarwate)")
def byte_table(function: ir.Function) -> ir.Function:
    """The inner bit loop replaced by one lookup in a table the engine computes from the loop's own step."""
    found = find_shift_register(function, "byte-table")
    table = _fresh(function, f"{found.register}_table")
    step = table_step(found, table, found.inner.line)
    body = tuple(step if s is found.inner else s for s in found.loop.body)
    outer = replace(found.loop, body=body)
    return replace(
        function,
        body=(*function.body[: found.position], outer, *function.body[found.position + 1 :]),
        tables={**function.tables, table: found.table(1)},
    )


@rewrite(
    "slicing",
    "a bitwise CRC over k bytes at a time through k tables (slicing-by-k), the rest by the byte table; narrow=1: "
    "a reflected register found within the CRC's width at the loop runs without its upper bytes",
    k=(8, 4, 16),
    narrow=(0, 1),
)
def slicing(function: ir.Function, k: int = 8, narrow: int = 0) -> ir.Function:
    """A loop over `k` bytes at a time, each `k` steps folded into `k` lookups, then one table lookup per remaining
    byte. The register's bytes that the next `k` input bytes meet are xored into those bytes' indices.

    The `crc` a caller passes may be any int, so the loop keeps all 64 bits of a reflected register: its upper
    bytes are shifted into the indices too. With `narrow=1` a test at the loop's entry, that the register is within
    the CRC's width (its tables' widest entry, in whole bytes), picks a loop that reads only those bytes, since the
    step keeps a register within that width there; the 64-bit loop runs otherwise. An MSB-first register is masked
    by the source, and its loop reads only its width already."""
    found = bytewise_register(function, "slicing")
    loop = found.loop
    if narrow and not found.reflected:
        raise NotApplicable(
            "slicing",
            f"line {found.inner.line}: `narrow=1` is for a reflected register: this MSB-first one is masked to its "
            f"{found.width} bits by the source, and its sliced loop reads only those already",
        )
    names = [_fresh(function, f"{found.register}_table{m}") for m in range(1, k + 1)]
    index = _fresh(function, "i")
    tables = dict(zip(names, found.tables(k), strict=True))
    sliced = _Sliced(found, names, index, k)
    loops: tuple[ir.Stmt, ...] = sliced.loops(WORD)
    if narrow:
        width = entries_width(tables.values())
        if width >= WORD:
            raise NotApplicable("slicing", f"line {found.inner.line}: `narrow=1`: the tables' entries take {width} bits")
        loops = (ir.If(within(found, width), sliced.loops(width), loops, loop.line),)
    return replace(
        function,
        locals={**function.locals, index: ir.INT},
        body=(*function.body[: found.position], *loops, *function.body[found.position + 1 :]),
        tables={**function.tables, **tables},
    )


@dataclass(frozen=True)
class _Sliced:
    """Slicing's two loops for a found register, its `k` tables' names (one step's table first) and the index."""

    found: ShiftRegister
    names: list[str]
    index: str
    k: int

    def loops(self, width: int) -> tuple[ir.ForRange, ir.ForRange]:
        """`k` bytes at a time to the last whole chunk, then one at a time, for a register known to be within
        `width` bits at the loop (`WORD`: any int C holds; a reflected register's bytes past `width` are zero)."""
        found, k, index, line = self.found, self.k, self.index, self.found.loop.line
        sequence, register = found.loop.sequence, found.register

        def local(name: str) -> ir.Local:
            return ir.Local(name, ir.INT, line)

        def const(value: int) -> ir.Const:
            return ir.Const(value, line)

        def at(offset: int) -> ir.Load:
            position = local(index) if offset == 0 else ir.Binary("+", local(index), const(offset), line)
            return ir.Load(sequence, position, ir.INT, line)

        terms: list[ir.Expr] = []
        for j in range(k):
            # a reflected register past 64 bits is its sign, which `>> 63` gives as Python's `>> 8 * j` does
            shift = min(BITS * j, 63) if found.reflected else found.width - BITS - BITS * j
            byte: ir.Expr = at(j)
            if (found.reflected and (width == WORD or BITS * j < width)) or (not found.reflected and shift >= 0):
                byte = ir.Binary("^", ir.Binary(">>", local(register), const(shift), line), byte, line)
            terms.append(ir.Load(self.names[k - 1 - j], ir.Binary("&", byte, const(0xFF), line), ir.INT, line))
        if found.reflected and (width == WORD or BITS * k < width):
            terms.append(ir.Binary(">>", local(register), const(min(BITS * k, 63)), line))
        elif not found.reflected and BITS * k < found.width:
            terms.append(
                ir.Binary("&", ir.Binary("<<", local(register), const(BITS * k), line), const((1 << found.width) - 1), line)
            )
        folded = terms[0]
        for term in terms[1:]:
            folded = ir.Binary("^", folded, term, line)
        length = ir.Length(sequence, line)
        whole = ir.Binary("-", length, ir.Binary("%", length, const(k), line), line)
        entry = at(0) if found.entry == 0 else ir.Binary("<<", at(0), const(found.entry or 0), line)
        entered = ir.Binary("^", local(register), entry, line)
        step = table_step(found, self.names[0], line)
        return (
            ir.ForRange(index, const(0), whole, k, (ir.Assign(register, folded, line),), line),
            ir.ForRange(index, whole, length, 1, (ir.Assign(register, entered, line), step), line),
        )


def entries_width(tables: Iterable[ir.Table]) -> int:
    """The bits the tables' widest entry takes, in whole bytes: the CRC's width, where a register stays."""
    return -(-max(max(table.entries) for table in tables).bit_length() // BITS) * BITS


def within(found: ShiftRegister, width: int) -> ir.Logical:
    """`0 <= register <= 2**width - 1`, tested at the loop's entry: a variant that holds only the register's low
    `width` bits runs where it holds, the original loop (or a wider one) elsewhere."""
    line, register = found.loop.line, ir.Local(found.register, ir.INT, found.loop.line)
    return ir.Logical(
        "and",
        ir.Compare(">=", register, ir.Const(0, line), line),
        ir.Compare("<=", register, ir.Const((1 << width) - 1, line), line),
        line,
    )


def table_step(found: ShiftRegister, table: str, line: int) -> ir.Assign:
    """`register = (register >> 8) ^ T[register & 0xFF]` (reflected), or, MSB-first,
    `register = ((register << 8) & mask) ^ T[(register >> (width - 8)) & 0xFF]`."""
    register = ir.Local(found.register, ir.INT, line)

    def lookup(index: ir.Expr) -> ir.Load:
        return ir.Load(table, ir.Binary("&", index, ir.Const(0xFF, line), line), ir.INT, line)

    if found.reflected:
        value: ir.Expr = ir.Binary("^", ir.Binary(">>", register, ir.Const(BITS, line), line), lookup(register), line)
    else:
        value = lookup(ir.Binary(">>", register, ir.Const(found.width - BITS, line), line))
        if found.width > BITS:
            shifted = ir.Binary(
                "&", ir.Binary("<<", register, ir.Const(BITS, line), line), ir.Const((1 << found.width) - 1, line), line
            )
            value = ir.Binary("^", shifted, value, line)
    return ir.Assign(found.register, value, line)


def _counts_to(loop: ir.ForRange, trips: int) -> bool:
    return (
        isinstance(loop.start, ir.Const)
        and loop.start.value == 0
        and isinstance(loop.stop, ir.Const)
        and loop.stop.value == trips
        and loop.step == 1
    )


def _bit_step(inner: ir.ForRange) -> tuple[str, bool, int] | str:
    """(register, reflected, width) of a bit loop whose body is one shift-register step, or why it is not one."""
    if len(inner.body) != 1 or not isinstance(inner.body[0], ir.If):
        return "the bit loop's body is not one `if` on a register bit"
    step = inner.body[0]
    tested = _tested_bit(step.condition)
    if tested is None:
        return "the bit loop's `if` does not test one bit of a register (`if crc & 0x8000:`)"
    register, bit, when_set = tested
    branches = [step.then, step.orelse]
    if not all(len(b) == 1 and isinstance(b[0], ir.Assign) and b[0].name == register for b in branches):
        return f"each branch of the bit loop's `if` must assign `{register}` once"
    set_value, clear_value = (b[0].value for b in (branches if when_set else branches[::-1]))  # type: ignore[union-attr]
    reflected = bit == 1
    mask = None if reflected else 2 * bit - 1
    if not reflected and bit < 1 << (BITS - 1):
        return f"the register's top bit {bit:#x} is below a byte's width"
    shift = ">>" if reflected else "<<"
    shifted = ir.Binary(shift, ir.Local(register, ir.INT, 0), ir.Const(1, 0), 0)
    if not (_is_shift(_unmasked(clear_value, mask), shifted) and _is_shift_xor(_unmasked(set_value, mask), shifted, mask)):
        direction = (
            "`(crc >> 1) ^ POLY` and `crc >> 1`" if reflected else f"`((crc << 1) ^ POLY) & {mask:#x}` and `(crc << 1) & {mask:#x}`"
        )
        return f"the branches on bit {bit:#x} are not {direction}"
    width = 0 if reflected else (2 * bit - 1).bit_length()
    return register, reflected, width


def _tested_bit(condition: ir.Expr) -> tuple[str, int, bool] | None:
    """`crc & BIT`, `(crc & BIT) != 0` or `(crc & BIT) == 0`: the register, the bit, and whether `then` runs when set."""
    when_set = True
    if isinstance(condition, ir.Compare) and condition.op in ("!=", "==") and condition.right == ir.Const(0, condition.right.line):
        when_set = condition.op == "!="
        condition = condition.left
    if not (isinstance(condition, ir.Binary) and condition.op == "&"):
        return None
    for register, bit in ((condition.left, condition.right), (condition.right, condition.left)):
        local = isinstance(register, ir.Local) and register.type == ir.INT
        if local and isinstance(bit, ir.Const) and bit.value > 0 and bit.value & (bit.value - 1) == 0:
            return register.name, bit.value, when_set  # type: ignore[union-attr]
    return None


def _unmasked(value: ir.Expr, mask: int | None) -> ir.Expr | None:
    """`value` without its outer `& mask` (MSB-first), or as it is (reflected, where there is none); None if absent."""
    if mask is None:
        return value
    if isinstance(value, ir.Binary) and value.op == "&" and isinstance(value.right, ir.Const) and value.right.value == mask:
        return value.left
    return None


def _is_shift(value: ir.Expr | None, shifted: ir.Binary) -> bool:
    """`value` is `register << 1` (or `>> 1`), lines aside."""
    if not (isinstance(value, ir.Binary) and value.op == shifted.op and isinstance(value.left, ir.Local)):
        return False
    assert isinstance(shifted.left, ir.Local)
    return value.left.name == shifted.left.name and isinstance(value.right, ir.Const) and value.right.value == 1


def _is_shift_xor(value: ir.Expr | None, shifted: ir.Binary, mask: int | None) -> bool:
    """`value` is the shift xor a non-negative constant polynomial (within the mask, MSB-first)."""
    if not (isinstance(value, ir.Binary) and value.op == "^"):
        return False
    for shift, poly in ((value.left, value.right), (value.right, value.left)):
        if _is_shift(shift, shifted) and isinstance(poly, ir.Const) and poly.value >= 0 and (mask is None or poly.value <= mask):
            return True
    return False


def _xored_byte(statement: ir.Assign, register: str, variable: str) -> int | None:
    """The bit `c` of `register = register ^ (variable << c)` (or `^ variable`: 0), None for any other assignment."""
    value = statement.value
    if not (isinstance(value, ir.Binary) and value.op == "^"):
        return None
    for kept, byte in ((value.left, value.right), (value.right, value.left)):
        if not (isinstance(kept, ir.Local) and kept.name == register):
            continue
        if isinstance(byte, ir.Local) and byte.name == variable:
            return 0
        shifted = isinstance(byte, ir.Binary) and byte.op == "<<" and byte.left == ir.Local(variable, ir.INT, byte.left.line)
        if shifted and isinstance(byte.right, ir.Const) and 0 <= byte.right.value < 64:  # type: ignore[union-attr]
            return byte.right.value  # type: ignore[union-attr]
    return None


def _run(step: ir.If, register: str, value: int) -> int:
    """One bit step on a Python int, by evaluating its IR (the `if` and its two assignments)."""
    env = {register: value}
    taken = step.then if _evaluate(step.condition, env) else step.orelse
    for statement in taken:
        assert isinstance(statement, ir.Assign)
        env[statement.name] = _evaluate(statement.value, env)
    return env[register]


OPERATORS = {
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "<<": lambda a, b: a << b,
    ">>": lambda a, b: a >> b,
    "!=": lambda a, b: int(a != b),
    "==": lambda a, b: int(a == b),
}


def _evaluate(expr: ir.Expr, env: dict[str, int]) -> int:
    """The exact Python value of a bit step's expression (the operators `_bit_step` lets through)."""
    if isinstance(expr, ir.Const):
        return expr.value
    if isinstance(expr, ir.Local):
        return env[expr.name]
    assert isinstance(expr, ir.Binary | ir.Compare)
    return OPERATORS[expr.op](_evaluate(expr.left, env), _evaluate(expr.right, env))


def _fresh(function: ir.Function, stem: str) -> str:
    """A name no parameter, local or table of `function` has."""
    taken = {*function.locals, *function.tables, *(p.name if isinstance(p, ir.Sequence) else p for p in function.parameters)}
    name, n = stem, 1
    while name in taken:
        n += 1
        name = f"{stem}_{n}"
    return name
