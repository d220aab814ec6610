"""The polyhedral model of one kernel: the single definition every later stage reads.

A `Kernel` is what ingest understood of a Python function: its integer
parameters, its arrays, and its statements, each with an iteration domain,
access relations and a position in the original execution order. The isl
objects live in one `isl.Context` per kernel (isl forbids mixing contexts).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from weakref import WeakKeyDictionary

import islpy as isl

from repoos_agent.model.affine import AffineExpr, Bound
from repoos_agent.model.expr import ArrayRef, Expr, Name


@dataclass(frozen=True)
class Loop:
    """One Python `for name in range(start, stop, step)` loop."""

    name: str
    start: Bound
    stop: Bound
    step: int
    line: int

    def constraint(self) -> str:
        """The loop's iteration range as isl constraint text."""
        v = self.name
        if self.step > 0:
            text = f"{self.start} <= {v} < {self.stop}"
        else:
            text = f"{self.stop} < {v} <= {self.start}"
        if abs(self.step) != 1:
            text += f" and exists (k_{v}: {v} = {self.start} + {self.step}*k_{v})"
        return text

    def time(self) -> str:
        """This loop's coordinate in the original schedule: it runs in the step's direction."""
        return self.name if self.step > 0 else f"-{self.name}"


@dataclass(frozen=True)
class Condition:
    """An affine comparison `left op right` from an `if` guard."""

    left: AffineExpr
    op: str
    right: AffineExpr

    def __str__(self) -> str:
        op = "=" if self.op == "==" else self.op
        return f"{self.left} {op} {self.right}"


@dataclass(frozen=True, eq=False)
class Access:
    """One array element (or local scalar) a statement reads or writes."""

    statement: str
    array: str
    kind: str  # "read" or "write"
    relation: isl.Map


@dataclass(frozen=True, eq=False)
class Statement:
    """One assignment in the loop nest, `S0`, `S1`, ... in source order."""

    name: str
    line: int
    column: int
    text: str
    loops: tuple[Loop, ...]
    guards: tuple[Condition, ...]
    target: ArrayRef | Name
    op: str  # "=", "+=", "-=", "*=", "/="
    value: Expr
    positions: tuple[int, ...]  # place in each enclosing body, outermost first (len = depth + 1)
    domain: isl.Set
    reads: tuple[Access, ...]
    writes: tuple[Access, ...]

    @property
    def iterators(self) -> tuple[str, ...]:
        return tuple(loop.name for loop in self.loops)

    @property
    def is_reduction(self) -> bool:
        """`acc += ...`-style updates: the order of their instances may be reassociated."""
        return self.op in ("+=", "*=")


@dataclass(frozen=True)
class Array:
    """An array argument (rank >= 1) or a local scalar (rank 0)."""

    name: str
    rank: int
    written: bool
    is_argument: bool


@dataclass(frozen=True)
class ShapeParameter:
    """A size read from an array's shape (`n = A.shape[0]`), not passed as an argument."""

    name: str
    array: str
    dim: int


@dataclass(frozen=True, eq=False)
class Kernel:
    """A modelled Python function: parameters, arrays, statements, and their isl context."""

    name: str
    path: str
    line: int
    source: str
    arguments: tuple[str, ...]
    parameters: tuple[str, ...]
    shape_parameters: tuple[ShapeParameter, ...]
    scalars: tuple[str, ...]  # read-only non-integer arguments, passed by value
    arrays: tuple[Array, ...]
    statements: tuple[Statement, ...]
    returns: str | None
    ctx: isl.Context = field(repr=False)

    @property
    def depth(self) -> int:
        return max((len(s.loops) for s in self.statements), default=0)

    def statement(self, name: str) -> Statement:
        for statement in self.statements:
            if statement.name == name:
                return statement
        raise KeyError(name)

    def array(self, name: str) -> Array:
        for array in self.arrays:
            if array.name == name:
                return array
        raise KeyError(name)

    def parameter_values(self, values: Mapping[str, object]) -> dict[str, int]:
        """The integer parameters' values in a call with `values`: arguments as given, shape
        parameters read from their array's shape."""
        known = {name: int(values[name]) for name in self.parameters if name in self.arguments and name in values}
        for shape in self.shape_parameters:
            array = values.get(shape.array)
            if array is not None:
                known[shape.name] = int(array.shape[shape.dim])
        return known

    @property
    def param_space(self) -> str:
        return "[" + ", ".join(self.parameters) + "]"

    @cached_property
    def domains(self) -> isl.UnionSet:
        result = isl.UnionSet.empty(isl.Space.params_alloc(self.ctx, 0))
        for statement in self.statements:
            result = result.union(isl.UnionSet.from_set(statement.domain))
        return result

    @cached_property
    def original_schedule(self) -> isl.UnionMap:
        """The source order as a 2d+1 schedule: `S[i, j] -> [p0, i, p1, j, p2]`."""
        width = 2 * self.depth + 1
        result = isl.UnionMap.empty(isl.Space.params_alloc(self.ctx, 0))
        for statement in self.statements:
            coordinates: list[str] = []
            for position, loop in zip(statement.positions, statement.loops, strict=False):
                coordinates += [str(position), loop.time()]
            coordinates.append(str(statement.positions[-1]))
            coordinates += ["0"] * (width - len(coordinates))
            text = f"{self.param_space} -> {{ {statement.name}[{', '.join(statement.iterators)}] -> [{', '.join(coordinates)}] }}"
            relation = isl.Map.read_from_str(self.ctx, text).intersect_domain(statement.domain)
            result = result.union(isl.UnionMap.from_map(relation))
        return result

    def accesses(self, kind: str) -> isl.UnionMap:
        result = isl.UnionMap.empty(isl.Space.params_alloc(self.ctx, 0))
        for statement in self.statements:
            for access in statement.reads if kind == "read" else statement.writes:
                result = result.union(isl.UnionMap.from_map(access.relation))
        return result


_LOCKS: WeakKeyDictionary[Kernel, threading.RLock] = WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def isl_lock(kernel: Kernel) -> threading.RLock:
    """isl contexts are not thread-safe: every use of a kernel's isl objects holds its lock."""
    with _LOCKS_GUARD:
        if kernel not in _LOCKS:
            _LOCKS[kernel] = threading.RLock()
        return _LOCKS[kernel]
