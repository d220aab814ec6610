"""The schedule language: the words an agent, a user or an assistant uses to ask for a loop order.

A schedule is a sequence of primitives separated by `;` or newlines, e.g.
`interchange(j, k); tile(i, j, 32, 32); parallelize(i_t)`. Parsing checks
syntax, arity and the values of numeric arguments, as each primitive's spec
declares them (`schedule.primitives`); whether the named loops exist in a kernel
is decided when the schedule is applied to one (`schedule.state`).
"""

from __future__ import annotations

import re

from repoos_agent.schedule.primitives import EXPECTED, NUMBER, PRIMITIVES, STATEMENT
from repoos_agent.schedule.terms import Argument, LoopRef, Primitive, Schedule, ScheduleError, StatementRef

MAX_PRIMITIVES = 64
MAX_TEXT = 4000

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
    spec = PRIMITIVES.get(name)
    if spec is None:
        raise ScheduleError(f"unknown primitive `{name}`; known: {', '.join(PRIMITIVES)}", piece, index)
    tokens = [t.strip() for t in inside.split(",")] if inside else []
    if any(not t for t in tokens):
        raise ScheduleError(f"empty argument; usage: {spec.usage}", piece, index)
    arity = spec.arity_error(len(tokens))
    if arity is not None:
        raise ScheduleError(arity, piece, index)
    signature = spec.signature(len(tokens) // 2)
    args = tuple(
        _argument(token, kind, position, spec.usage, piece, index)
        for position, (token, kind) in enumerate(zip(tokens, signature, strict=True), start=1)
    )
    primitive = Primitive(name, args, index)
    reason = spec.check(primitive)
    if reason is not None:
        raise ScheduleError(reason, piece, index)
    return primitive


def _argument(token: str, kind: str, position: int, usage: str, piece: str, index: int) -> Argument:
    if kind == NUMBER:
        if _INTEGER.match(token):
            return int(token)
    elif kind == STATEMENT:
        if _STATEMENT.match(token):
            return StatementRef(token)
    else:
        match = _LOOP.match(token)
        if match and not _STATEMENT.match(token):
            return LoopRef(match.group(2), match.group(1))
    raise ScheduleError(f"argument {position} `{token}`: expected {EXPECTED[kind]}; usage: {usage}", piece, index)
