"""The fsm track's IR, declared in one screen: structured control flow over typed integers and byte buffers.

No polyhedra: a branchy loop over bytes has no affine iteration space to model. Every node keeps its source line,
so the width analysis and the printer refuse at the user's line. A value is a Python int (`INT`, held in 64 bits
only where `ranges` proves it fits) or a NumPy element of a fixed width (its dtype's name), which only compares,
indexes, is stored or converted with `int(...)`: its own wrap-around rules are not modelled.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields, is_dataclass

INT = "int"
"""A Python int: unbounded in the source, 64 bits in C where the analysis proves it fits."""

DTYPES = {"uint8": "uint8_t", "int8": "int8_t", "int32": "int32_t", "int64": "int64_t", "uint32": "uint32_t"}
"""The NumPy element types an array argument may have, and their C types."""

CHAR = "char"
"""One character of a `str` argument, held as its code point: it compares with characters and gives `ord(c)`."""

BYTES, BYTEARRAY, ARRAY, BUFFER, TABLE = "bytes", "bytearray", "array", "buffer", "table"
INTS, TEXT, LIST = "ints", "text", "list"
"""Sequence kinds: an immutable and a mutable byte argument, a NumPy array argument, the local `bytearray()` the
function grows with `append` and returns, a module's constant `bytes` or tuple of ints (a small table), a list or tuple of
ints argument (read only, passed as `int64`), a `str` argument (read as its code points, passed as UTF-32), and
the local list of ints the function grows with `append` and returns."""
TUPLE = "tuple"
"""What a function returns when it returns a tuple of its local outputs (`Function.results`, in order)."""
OUTPUT = "output"
"""What a function returns when it returns one of its local outputs other than `buffer` (`Function.results[0]`)."""
NESTED = "nested"
"""What a function returns when it returns nested lists of strings (`Function.nested`), built back from flat streams
on the way back (`fsm/nested.py`)."""
STR = "str"
"""A tuple element that is a `str`: a character (its code point) or one of `Function.strings` (-1 - its position)."""
STRS = "strs"
"""A list of `str` argument (read only), passed as one `uint32` buffer: the count of strings, then each string's
start and the last one's end (positions in that buffer), then the strings' code points. A `str` of it is read only
through the loop that binds it (`for k, s in enumerate(strings)`): its length, its characters and its truth."""


@dataclass(frozen=True)
class Sequence:
    """An argument or local indexed by position: its kind and element dtype (`uint8` for bytes)."""

    name: str
    kind: str
    dtype: str = "uint8"
    written: bool = False

    @property
    def element(self) -> str:
        """What reading one element gives: a Python int for bytes and lists, the dtype's NumPy scalar for an array,
        a character for a `str`."""
        return self.dtype if self.kind == ARRAY else CHAR if self.kind == TEXT else INT


@dataclass(frozen=True)
class Const:
    value: int
    line: int


@dataclass(frozen=True)
class Local:
    name: str
    type: str
    line: int


@dataclass(frozen=True)
class Length:
    sequence: str
    line: int


@dataclass(frozen=True)
class Load:
    sequence: str
    index: Expr
    type: str
    line: int


@dataclass(frozen=True)
class Binary:
    op: str  # + - * // % & | ^ << >> min max, and clmul clmulhi (`carryless`), which only rewrites write
    left: Expr
    right: Expr
    line: int


@dataclass(frozen=True)
class Unary:
    op: str  # - ~
    operand: Expr
    line: int


@dataclass(frozen=True)
class ToInt:
    """`int(x)` of a NumPy element: from here on a Python int."""

    operand: Expr
    line: int


@dataclass(frozen=True)
class Compare:
    op: str  # < <= > >= == !=
    left: Expr
    right: Expr
    line: int


@dataclass(frozen=True)
class Logical:
    op: str  # and, or (on conditions only)
    left: Expr
    right: Expr
    line: int


@dataclass(frozen=True)
class Not:
    operand: Expr
    line: int


@dataclass(frozen=True)
class Select:
    """`then if condition else orelse` as a value, only one side evaluated: C's `?:`, which compilers turn into a
    conditional move where both sides are cheap (the `branchless` rewrite makes it from an `if`)."""

    condition: Expr
    then: Expr
    orelse: Expr
    line: int


@dataclass(frozen=True)
class BytesBelow:
    """Whether `count` elements of the byte sequence exist from `index` on (`index` not negative) and are all below
    `bound`: a word-at-a-time test, false near the end, so it never reads out of range."""

    sequence: str
    index: Expr
    count: int
    bound: int
    line: int


@dataclass(frozen=True)
class Word:
    """The 64-bit word of the eight bytes of a byte sequence from `index` on, in `order` ("little": the first byte
    lowest, or "big"), an int from 0 to 2**64 - 1: one load where a rewrite reads a word at a time (`clmul_fold`),
    which no source spells."""

    sequence: str
    index: Expr
    order: str
    line: int

    BYTES = 8


Expr = Const | Local | Length | Load | Binary | Unary | ToInt | Compare | Logical | Not | Select | BytesBelow | Word


@dataclass(frozen=True)
class Assign:
    name: str
    value: Expr
    line: int


@dataclass(frozen=True)
class Store:
    sequence: str
    index: Expr
    value: Expr
    line: int


@dataclass(frozen=True)
class Append:
    sequence: str
    value: Expr
    line: int


@dataclass(frozen=True)
class Pop:
    """`x.pop()` of a local array: its last element dropped. The lowering reads that element first, and tests
    that the array is not empty before (Python's IndexError there)."""

    sequence: str
    line: int


@dataclass(frozen=True)
class If:
    condition: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]
    line: int


@dataclass(frozen=True)
class While:
    condition: Expr
    body: tuple[Stmt, ...]
    line: int


@dataclass(frozen=True)
class ForRange:
    variable: str
    start: Expr
    stop: Expr
    step: int
    body: tuple[Stmt, ...]
    line: int


@dataclass(frozen=True)
class ForEach:
    """`for b in data`: each element of a sequence argument, in order."""

    variable: str
    sequence: str
    body: tuple[Stmt, ...]
    line: int


@dataclass(frozen=True)
class Break:
    line: int


@dataclass(frozen=True)
class Continue:
    line: int


@dataclass(frozen=True)
class Return:
    value: Expr | None
    line: int


@dataclass(frozen=True)
class Raise:
    """`raise ValueError(f"message {i}")`: the native code leaves with `code` and the values of the message's
    interpolations, and the call formats `message` (a `str.format` template, `{0}` for the first value) and raises
    it again. `characters` says which values are a `str`'s characters, formatted as `chr` of their code point."""

    exception: str
    message: str
    code: int
    line: int
    values: tuple[Expr, ...] = ()
    characters: tuple[bool, ...] = ()


@dataclass(frozen=True)
class Switch:
    """An `if`/`elif` ladder comparing one value with distinct constants: each case's constants and body, then the
    default; a `break` in a case leaves the enclosing loop, as in the source (C's `switch`, a jump table)."""

    value: Expr
    cases: tuple[tuple[tuple[int, ...], tuple[Stmt, ...]], ...]
    default: tuple[Stmt, ...]
    line: int


Stmt = Assign | Store | Append | Pop | If | While | ForRange | ForEach | Break | Continue | Return | Raise | Switch


@dataclass(frozen=True)
class Function:
    """One lowered function: its parameters in order (a `Sequence` or an int's name), its locals' types, its body,
    what it returns (`INT`, a dtype, `BUFFER`, `LIST` or "none"), the exceptions its codes stand for, the module's
    constant tables it reads (a `bytes` literal or a tuple of ints of the source, or a `Table` a rewrite computed),
    and what its local output `buffer` is (`BUFFER`: a bytearray; `LIST`: ints)."""

    name: str
    parameters: tuple[Sequence | str, ...]
    locals: dict[str, str]
    buffer: str | None
    body: tuple[Stmt, ...]
    returns: str
    raises: tuple[Raise, ...]
    tables: dict[str, bytes | tuple[int, ...] | Table]
    buffer_kind: str = BUFFER
    flags: tuple[str, ...] = ()
    """The int parameters that have a bool default: read only as conditions, so a call passes a bool or an int."""
    outputs: tuple[Sequence, ...] = ()
    """The local outputs beside `buffer`, each a `bytearray()` (`BUFFER`) or a list of ints (`LIST`) created empty and
    grown with `append`, each its own buffer in C; `Assign(name, ...)` of one empties it, as of `buffer`."""
    results: tuple[str, ...] = ()
    """The outputs a function returning `TUPLE` or `OUTPUT` gives back, in order."""
    tuples: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """The `LIST` outputs grown with tuples (`out.append((c, i, j))`): each one's element kinds by position (`INT`,
    `CHAR` or `STR`). Such a list is flat in C, one `Append` per element in order, and is built into tuples on the way
    back; it is only appended to, emptied and returned, so its flat length is always a multiple of the arity."""
    nested: tuple[str, ...] = ()
    """For a function returning `NESTED`: its nested lists, the returned one first and the list of characters last,
    each a `LIST` output holding one flat stream: code points for the last, pairs of positions in the next one's
    stream for the others (`fsm/nested.py`)."""
    strings: tuple[str, ...] = ()
    """The module's `str` constants a `STR` tuple element may be, by position (`lower`'s `str_values`)."""

    @property
    def output_names(self) -> frozenset[str]:
        """Every local output: `buffer` and the others, which no statement assigns a value (only empties)."""
        return frozenset([*([self.buffer] if self.buffer is not None else []), *(output.name for output in self.outputs)])

    def output_kind(self, name: str) -> str:
        """A local output's kind: `BUFFER` (bytes) or `LIST` (ints)."""
        return self.buffer_kind if name == self.buffer else next(o.kind for o in self.outputs if o.name == name)


TABLE_DTYPES = {"uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t"}


@dataclass(frozen=True)
class Table:
    """A constant table a rewrite computed (a CRC's byte table): unsigned entries of one width, read as ints."""

    dtype: str
    entries: tuple[int, ...]


def entries(table: bytes | tuple[int, ...] | Table) -> bytes | tuple[int, ...]:
    """A constant table's entries, whichever kind it is."""
    return table.entries if isinstance(table, Table) else table


def tuple_element(cell: int, kind: str, strings: tuple[str, ...]) -> int | str:
    """A flat list's cell as the tuple element it stands for (`Function.tuples`): an int, a character, or a `STR`'s
    character or constant. A cell outside what `kind` holds (a model's value on a path the code never takes) is
    shown as the int it is."""
    if kind == STR and -len(strings) <= cell < 0:
        return strings[-1 - cell]
    return chr(cell) if kind in (CHAR, STR) and 0 <= cell <= 0x10FFFF else cell


def nodes(value: object) -> Iterator[object]:
    """Every IR node in `value` (a node or a tuple of them), depth first."""
    if isinstance(value, tuple):
        for item in value:
            yield from nodes(item)
    elif is_dataclass(value) and not isinstance(value, type):
        yield value
        for part in fields(value):
            yield from nodes(getattr(value, part.name))


def locals_read(value: object) -> set[str]:
    """Every local read in `value` (nodes, or a tuple of them), nested blocks and every operand included."""
    return {node.name for node in nodes(value) if isinstance(node, Local)}
