"""A bitwise CRC folded sixteen bytes at a time with carry-less products, as zlib and the Linux kernel do
with PCLMULQDQ: a table CRC waits for each lookup before the next, where four lanes of products run side by side.

Within a chunk of the input, four 16-byte lanes each carry the CRC contribution of the bytes they have read. A lane
moves `d` bytes further along the input by two carry-less products with constants, and the next 16 bytes are xored
in. At the chunk's end the lanes are folded into one, whose CRC the slicing-by-16 tables give. The register enters
by xor into the chunk's first bytes, which holds for a register within its width (the CRC's shift moves the register
out as the bytes come in); a register the loop's entry finds outside it takes the original loop. A reflected CRC
reads its words little-endian, the first byte lowest, and an MSB-first one big-endian, so that in both a word's
bits run in the polynomial's order and one product moves them.

The constants are not taken from a catalog: for each distance the rewrite solves, over GF(2), for the word whose
product with every unit word gives the CRC that word followed by that many zero bytes gives, using the loop's own
bit step. A polynomial with no such word is refused. `fsm.proof` then proves the chunk's step by linearity, like
slicing's.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from repoos_agent.fsm import ir
from repoos_agent.fsm.rewrites.registry import NotApplicable, rewrite
from repoos_agent.fsm.rewrites.shift_register import BITS, ShiftRegister, bytewise_register, entries_width, table_step, within
from repoos_agent.fsm.rewrites.statements import fresh

LANES = 4
"""Lanes folded side by side: a product's latency over its throughput on current x86 cores."""
LANE_BYTES = 16
"""The bytes one lane holds: two words, one 128-bit register."""
WORD_BYTES = ir.Word.BYTES


@rewrite(
    "clmul-fold",
    "a bitwise CRC folded 16 bytes at a time by carry-less products (PCLMULQDQ), four lanes side by side, "
    "over chunks of `chunk` bytes; the rest by the byte table",
    chunk=(256, 1024, 64),
)
def clmul_fold(function: ir.Function, chunk: int = 256) -> ir.Function:
    """The fold loop as a test that the register is within the CRC's width, then a loop over whole chunks of `chunk`
    bytes and a loop over the rest by the byte table; the original loop where the test fails."""
    found = bytewise_register(function, "clmul-fold")
    loop = found.loop
    slices = found.tables(LANE_BYTES)
    width = entries_width(slices)
    if width > 8 * WORD_BYTES:
        raise NotApplicable("clmul-fold", f"line {found.inner.line}: the tables' entries take {width} bits")
    constants = fold_constants(found, chunk)
    if constants is None:
        raise NotApplicable("clmul-fold", f"line {found.inner.line}: no carry-less constant moves this CRC's words along")
    names = _fresh_names(function, [f"{found.register}_table{m}_" for m in range(1, LANE_BYTES + 1)])
    fold = _Fold(found, names, chunk, constants, function)
    return replace(
        function,
        locals={**function.locals, fold.index: ir.INT, **dict.fromkeys(fold.scratch, ir.INT)},
        body=(
            *function.body[: found.position],
            ir.If(within(found, width), fold.loops(), (loop,), loop.line),
            *function.body[found.position + 1 :],
        ),
        tables={**function.tables, **dict(zip(names, slices, strict=True))},
    )


def _fresh_names(function: ir.Function, stems: list[str]) -> list[str]:
    """A name for each stem that neither the function nor another of them uses."""
    names: list[str] = []
    for stem in stems:
        names.append(fresh(function, stem, set(names)))
    return names


def fold_constants(found: ShiftRegister, chunk: int) -> dict[int, int] | None:
    """For each distance `d` a fold moves a word by, the word `K` whose carry-less product with a word `w` has, as
    16 bytes, the CRC of `w` followed by `d` zero bytes (from a zero register); None where one has no solution."""
    last = LANES * LANE_BYTES if chunk > LANES * LANE_BYTES else (LANES - 1) * LANE_BYTES
    distances = {d + extra for d in range(LANE_BYTES, last + 1, LANE_BYTES) for extra in (0, WORD_BYTES)}
    return _constants(found.table(1), found.width, tuple(sorted(distances)))


@cache
def _constants(table: ir.Table, width: int, distances: tuple[int, ...]) -> dict[int, int] | None:
    solved = {}
    for distance in distances:
        constant = _solve(table.entries, width, distance)
        if constant is None:
            return None
        solved[distance] = constant
    return solved


def _crc(entries: tuple[int, ...], width: int, data: bytes) -> int:
    """The register after `data` from zero, by the byte table (the loop's own bit step, eight at a time): reflected
    where `width` is 0, else MSB-first in `width` bits."""
    register = 0
    for byte in data:
        if width:
            top = (register >> (width - BITS)) ^ byte
            register = ((register << BITS) & ((1 << width) - 1)) ^ entries[top & 0xFF]
        else:
            register = (register >> BITS) ^ entries[(register ^ byte) & 0xFF]
    return register


def _solve(entries: tuple[int, ...], width: int, distance: int) -> int | None:
    """`K` with `crc(product(1 << i, K)) == crc((1 << i) followed by distance zero bytes)` for every bit `i` of a
    word (its bytes in the CRC's order), by Gaussian elimination over GF(2): the product is linear in `K`, so each
    (i, CRC bit) is one equation."""
    order = "big" if width else "little"

    def crc_of(value: int) -> int:
        return _crc(entries, width, value.to_bytes(LANE_BYTES, order))

    unknowns = 8 * WORD_BYTES
    columns = [crc_of(1 << j) for j in range(unknowns + 8 * WORD_BYTES)]  # `1 << i` times bit j of K: `1 << (i + j)`
    pivots: dict[int, tuple[int, int]] = {}
    for i in range(8 * WORD_BYTES):
        target = _crc(entries, width, (1 << i).to_bytes(WORD_BYTES, order) + bytes(distance))
        for bit in range(max(entries).bit_length()):
            row = sum(1 << j for j in range(unknowns) if columns[i + j] >> bit & 1)
            rhs = target >> bit & 1
            for pivot, (mask, value) in pivots.items():
                if row >> pivot & 1:
                    row, rhs = row ^ mask, rhs ^ value
            if not row:
                if rhs:
                    return None
                continue
            top = row.bit_length() - 1
            for pivot, (mask, value) in list(pivots.items()):
                if mask >> top & 1:
                    pivots[pivot] = (mask ^ row, value ^ rhs)
            pivots[top] = (row, rhs)
    return sum(1 << pivot for pivot, (_, value) in pivots.items() if value)


class _Fold:
    """The statements of the folded loops for a found register: the slicing tables' names (one byte's first), the
    chunk index, the chunk's bytes and the fold constants by distance."""

    def __init__(
        self, found: ShiftRegister, names: list[str], chunk: int, constants: dict[int, int], function: ir.Function
    ) -> None:
        self.found, self.names, self.chunk, self.constants = found, names, chunk, constants
        self.line = found.loop.line
        stems = [f"{found.register}_lane{lane}_{half}" for lane in range(LANES) for half in ("lo", "hi")]
        *halves, self.moved, self.index = _fresh_names(
            replace(function, tables={**function.tables, **dict.fromkeys(names)}), [*stems, f"{found.register}_moved", "i"]
        )
        self.lanes = [(halves[2 * lane], halves[2 * lane + 1]) for lane in range(LANES)]
        self.scratch = (*halves, self.moved)

    def loops(self) -> tuple[ir.ForRange, ir.ForRange]:
        """Whole chunks, folded; then one byte at a time by the byte table."""
        line, found = self.line, self.found
        length = ir.Length(found.loop.sequence, line)
        whole = ir.Binary("-", length, ir.Binary("%", length, ir.Const(self.chunk, line), line), line)
        register = ir.Local(found.register, ir.INT, line)
        byte: ir.Expr = ir.Load(found.loop.sequence, ir.Local(self.index, ir.INT, line), ir.INT, line)
        if found.entry:
            byte = ir.Binary("<<", byte, ir.Const(found.entry, line), line)
        return (
            ir.ForRange(self.index, ir.Const(0, line), whole, self.chunk, self.chunk_body(), line),
            ir.ForRange(
                self.index,
                whole,
                length,
                1,
                (ir.Assign(found.register, ir.Binary("^", register, byte, line), line), table_step(found, self.names[0], line)),
                line,
            ),
        )

    def chunk_body(self) -> tuple[ir.Stmt, ...]:
        line, register = self.line, self.found.register
        statements: list[ir.Stmt] = []
        for lane, (lo, hi) in enumerate(self.lanes):
            first: ir.Expr = self.word(2 * lane)
            if lane == 0:
                entered: ir.Expr = ir.Local(register, ir.INT, line)
                if not self.found.reflected:  # the register's top byte meets the first byte, the word's top one
                    entered = ir.Binary("<<", entered, ir.Const(8 * WORD_BYTES - self.found.width, line), line)
                first = ir.Binary("^", entered, first, line)
            statements += [ir.Assign(lo, first, line), ir.Assign(hi, self.word(2 * lane + 1), line)]
        span = LANES * LANE_BYTES
        for block in range(1, self.chunk // span):
            for lane, pair in enumerate(self.lanes):
                words = (self.word(block * span // WORD_BYTES + 2 * lane), self.word(block * span // WORD_BYTES + 2 * lane + 1))
                statements += self.moved_along(pair, span, words)
        last_lo, last_hi = self.lanes[-1]
        for lane, pair in enumerate(self.lanes[:-1]):
            distance = (LANES - 1 - lane) * LANE_BYTES
            statements += self.moved_along(pair, distance, (ir.Local(last_lo, ir.INT, line), ir.Local(last_hi, ir.INT, line)))
            last_lo, last_hi = pair
        statements.append(ir.Assign(register, self.reduced(last_lo, last_hi), line))
        return tuple(statements)

    def moved_along(self, pair: tuple[str, str], distance: int, added: tuple[ir.Expr, ir.Expr]) -> list[ir.Stmt]:
        """The lane `pair` moved `distance` bytes along, with the 16 bytes `added` xored in there. The product's low
        word holds the lane's first bytes where they are read little-endian (reflected), its high word otherwise."""
        line = self.line
        lo, hi = (ir.Local(name, ir.INT, line) for name in pair)
        moved = ir.Local(self.moved, ir.INT, line)
        far, near = ir.Const(self.constants[distance + WORD_BYTES], line), ir.Const(self.constants[distance], line)

        def half(op: str, added: ir.Expr) -> ir.Expr:
            both = ir.Binary("^", ir.Binary(op, moved, far, line), ir.Binary(op, hi, near, line), line)
            return ir.Binary("^", both, added, line)

        first, second = ("clmul", "clmulhi") if self.found.reflected else ("clmulhi", "clmul")
        return [
            ir.Assign(self.moved, lo, line),
            ir.Assign(pair[0], half(first, added[0]), line),
            ir.Assign(pair[1], half(second, added[1]), line),
        ]

    def reduced(self, lo: str, hi: str) -> ir.Expr:
        """The register from the last lane's 16 bytes: byte `j` through the table of `16 - j` bytes' steps."""
        line = self.line
        terms = []
        for j in range(LANE_BYTES):
            word = ir.Local(lo if j < WORD_BYTES else hi, ir.INT, line)
            shift = BITS * (j % WORD_BYTES if self.found.reflected else WORD_BYTES - 1 - j % WORD_BYTES)
            value = word if shift == 0 else ir.Binary(">>", word, ir.Const(shift, line), line)
            index = ir.Binary("&", value, ir.Const(0xFF, line), line)
            terms.append(ir.Load(self.names[LANE_BYTES - 1 - j], index, ir.INT, line))
        folded = terms[0]
        for term in terms[1:]:
            folded = ir.Binary("^", folded, term, line)
        return folded

    def word(self, position: int) -> ir.Word:
        """The little-endian 64-bit word at word `position` of the chunk."""
        line, offset = self.line, WORD_BYTES * position
        start = ir.Local(self.index, ir.INT, line)
        at = start if offset == 0 else ir.Binary("+", start, ir.Const(offset, line), line)
        return ir.Word(self.found.loop.sequence, at, "little" if self.found.reflected else "big", line)
