"""What a parsed schedule is made of: loops and statements by name, primitives, the schedule, its error.

Below the registry of primitives (`schedule.primitives`), which checks these terms, and the parser
(`schedule.language`) and the engine (`schedule.state`), which make and apply them.
"""

from __future__ import annotations

from dataclasses import dataclass

from repoos_agent.errors import RepoosError


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
