"""The schedule language: the words an agent, a user or an assistant uses to ask for a loop order.

A schedule is a sequence of primitives separated by `;` or newlines, e.g.
`interchange(j, k); tile(i, j, 32, 32); parallelize(i_t)`. Parsing checks
syntax, arity and the values of numeric arguments; whether the named loops exist
in a kernel is decided when the schedule is applied to one (`schedule.state`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from repoos_agent.errors import RepoosError

MAX_PRIMITIVES = 64
MAX_TEXT = 4000


class ScheduleError(RepoosError):
    """A schedule that does not parse or does not apply; the message names the primitive and the token."""

    def __init__(self, message: str, primitive: str | None = None, index: int | None = None) -> None:
        where = f"primitive {index} `{primitive}`: " if primitive is not None and index is not None else ""
        super().__init__(where + message)
        self.primitive = primitive
        self.index = index
        self.reason = message


@dataclass(frozen=True)
class LoopRef:
    """A loop by name, optionally qualified by a statement: `j` or `S1.j`."""

    name: str
    statement: str | None = None

    def __str__(self) -> str:
        return f"{self.statement}.{self.name}" if self.statement else self.name


@dataclass(frozen=True)
class StatementRef:
    name: str

    def __str__(self) -> str:
        return self.name


Argument = LoopRef | StatementRef | int


@dataclass(frozen=True)
class Primitive:
    """One transformation, e.g. `tile(i, j, 32, 32)`; `index` is its 1-based place in the schedule."""

    name: str
    args: tuple[Argument, ...]
    index: int

    def __str__(self) -> str:
        return f"{self.name}({', '.join(str(a) for a in self.args)})"

    def loops(self) -> tuple[LoopRef, ...]:
        return tuple(a for a in self.args if isinstance(a, LoopRef))

    def numbers(self) -> tuple[int, ...]:
        return tuple(a for a in self.args if isinstance(a, int))


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule. `str()` is its canonical text: equal schedules print equal."""

    primitives: tuple[Primitive, ...]

    def __str__(self) -> str:
        return "; ".join(str(p) for p in self.primitives)


# Each signature: the kinds of arguments, "L" loop, "S" statement, "N" integer; "T" marks tile's variable form.
SIGNATURES: dict[str, str] = {
    "interchange": "LL",
    "tile": "T",
    "skew": "LLN",
    "reverse": "L",
    "shift": "LN",
    "fuse": "SSN",
    "distribute": "SS",
    "parallelize": "L",
    "vectorize": "LN",
    "unroll": "LN",
    "promote": "L",
    "blas": "S",
    "privatize": "S",
}
USAGE = {
    "interchange": "interchange(i, j)",
    "tile": "tile(i, 32) or tile(i, j, 32, 32) or tile(i, j, k, 32, 32, 32)",
    "skew": "skew(outer, inner, factor)",
    "reverse": "reverse(i)",
    "shift": "shift(S1.i, offset)",
    "fuse": "fuse(S0, S1, depth)",
    "distribute": "distribute(S0, S1)",
    "parallelize": "parallelize(i)",
    "vectorize": "vectorize(j, width)",
    "unroll": "unroll(k, factor)",
    "promote": "promote(k)",
    "blas": "blas(S1)",
    "privatize": "privatize(S1)",
}

# The numbers a constrained model may choose from (`schedule.grammar`), per primitive: the sizes and factors
# worth trying on a CPU, a subset of what parsing accepts. `fuse`'s depth is bounded by the kernel instead.
NUMBER_CHOICES: dict[str, tuple[int, ...]] = {
    "tile": (4, 6, 8, 16, 32, 64, 128, 256),
    "skew": (1, 2, -1),
    "shift": (1, -1, 2),
    "vectorize": (4, 8, 16),
    "unroll": (2, 4, 8),
}

_PRIMITIVE = re.compile(r"^\s*([A-Za-z_]\w*)\s*\((.*)\)\s*$", re.S)
_LOOP = re.compile(r"^(?:(S\d+)\.)?([A-Za-z_]\w*)$")
_STATEMENT = re.compile(r"^S\d+$")
_INTEGER = re.compile(r"^[+-]?\d+$")


def parse_schedule(text: str) -> Schedule:
    """Parse schedule text; every error names the primitive, the argument and what was expected."""
    if len(text) > MAX_TEXT:
        raise ScheduleError(f"schedule text is {len(text)} characters; at most {MAX_TEXT} are accepted")
    lines = [line.split("#", 1)[0] for line in text.splitlines()]
    pieces = [p.strip() for p in re.split(r"[;\n]", "\n".join(lines)) if p.strip()]
    if len(pieces) > MAX_PRIMITIVES:
        raise ScheduleError(f"{len(pieces)} primitives; a schedule has at most {MAX_PRIMITIVES}")
    return Schedule(tuple(_parse_primitive(piece, index) for index, piece in enumerate(pieces, start=1)))


def _parse_primitive(piece: str, index: int) -> Primitive:
    match = _PRIMITIVE.match(piece)
    if not match:
        raise ScheduleError("expected NAME(ARGUMENTS), e.g. `interchange(i, j)`", piece, index)
    name, inside = match.group(1), match.group(2).strip()
    if name not in SIGNATURES:
        raise ScheduleError(f"unknown primitive `{name}`; known: {', '.join(SIGNATURES)}", piece, index)
    tokens = [t.strip() for t in inside.split(",")] if inside else []
    if any(not t for t in tokens):
        raise ScheduleError(f"empty argument; usage: {USAGE[name]}", piece, index)
    signature = SIGNATURES[name]
    if signature == "T":
        if len(tokens) not in (2, 4, 6):
            raise ScheduleError(
                f"tile takes 1 to 3 loops and as many sizes, got {len(tokens)} arguments; usage: {USAGE[name]}", piece, index
            )
        signature = "L" * (len(tokens) // 2) + "N" * (len(tokens) // 2)
    if len(tokens) != len(signature):
        raise ScheduleError(f"takes {len(signature)} arguments, got {len(tokens)}; usage: {USAGE[name]}", piece, index)
    args = tuple(
        _argument(token, kind, position, name, piece, index)
        for position, (token, kind) in enumerate(zip(tokens, signature, strict=True), start=1)
    )
    primitive = Primitive(name, args, index)
    _check_values(primitive, piece)
    return primitive


def _argument(token: str, kind: str, position: int, name: str, piece: str, index: int) -> Argument:
    expected = {"L": "a loop name like `i` or `S1.j`", "S": "a statement like `S0`", "N": "an integer"}[kind]
    if kind == "N":
        if _INTEGER.match(token):
            return int(token)
    elif kind == "S":
        if _STATEMENT.match(token):
            return StatementRef(token)
    else:
        match = _LOOP.match(token)
        if match and not _STATEMENT.match(token):
            return LoopRef(match.group(2), match.group(1))
    raise ScheduleError(f"argument {position} `{token}`: expected {expected}; usage: {USAGE[name]}", piece, index)


def _check_values(primitive: Primitive, piece: str) -> None:
    name, numbers = primitive.name, primitive.numbers()

    def fail(message: str) -> None:
        raise ScheduleError(message, piece, primitive.index)

    if name == "tile" and any(size < 1 for size in numbers):
        fail(f"tile sizes must be positive integers, got {', '.join(map(str, numbers))}")
    if name == "tile" and any(size > 1 << 20 for size in numbers):
        fail("tile sizes above 1048576 are not useful")
    if name == "skew" and numbers[0] == 0:
        fail("skew factor 0 changes nothing; use a non-zero integer")
    if name in ("vectorize", "unroll") and not 2 <= numbers[0] <= 64:
        fail(f"{'width' if name == 'vectorize' else 'factor'} must be between 2 and 64, got {numbers[0]}")
    if name == "fuse" and numbers[0] < 1:
        fail(f"fusion depth must be at least 1, got {numbers[0]}")
    if name in ("interchange",) and primitive.args[0] == primitive.args[1]:
        fail("interchange of a loop with itself changes nothing")
    if name in ("fuse", "distribute") and primitive.args[0] == primitive.args[1]:
        fail(f"{name} needs two different statements")
    loops = primitive.loops()
    if len(set(loops)) != len(loops):
        fail("the same loop is named twice")
