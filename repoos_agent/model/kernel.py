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
import numpy as np

from repoos_agent.model.affine import AffineExpr, Bound
from repoos_agent.model.expr import ArrayRef, Call, Expr, IndexRead, Name, array_refs, index_refs, names, value_arrays


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


LoopLimit = AffineExpr | IndexRead


@dataclass(frozen=True)
class DynamicLoop:
    """A loop whose bounds are read from arrays (`for k in range(rowptr[i], rowptr[i + 1])`).

    Its trip count is data, so it is not a dimension of any iteration domain: it runs inside
    one statement instance, as written, and schedules move the loops around it. `start` and
    `stop` are sizes or `IndexRead`s; the generated code checks them against the arrays its
    variable indexes before the run."""

    name: str
    start: LoopLimit
    stop: LoopLimit
    line: int

    def limit_refs(self) -> list[ArrayRef]:
        """The index-array elements the bounds read."""
        reads = [limit.ref for limit in (self.start, self.stop) if isinstance(limit, IndexRead)]
        return [found for ref in reads for found in index_refs(ref) + [ref]]


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
    free_dims: frozenset[int] = frozenset()  # subscripts read from data or a dynamic loop: any element


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
    product: bool = False  # the update of a NumPy product (`@`, `np.dot`), whose summation order NumPy leaves to BLAS
    pairwise: bool = False  # the update of `np.sum`/`np.mean`, which NumPy adds pairwise in blocks of eight running sums
    inner: tuple[DynamicLoop, ...] = ()  # loops with bounds read from arrays, run inside each instance

    @property
    def iterators(self) -> tuple[str, ...]:
        return tuple(loop.name for loop in self.loops)

    def array_refs(self) -> list[ArrayRef]:
        """Every array element the statement touches: dynamic loops' bounds, the target, index arrays, the value."""
        refs = [found for loop in self.inner for found in loop.limit_refs()]
        if isinstance(self.target, ArrayRef):
            refs += index_refs(self.target) + [self.target]
        return refs + array_refs(self.value)

    @property
    def is_array_sum(self) -> bool:
        """`t[...] += e` where `e` does not read `t`: its updates of one element commute, so a parallel loop
        that carries nothing else may apply them atomically or sum them in a copy of `t` per thread."""
        return self.op == "+=" and isinstance(self.target, ArrayRef) and self.accumulates_only

    @property
    def is_scatter(self) -> bool:
        """`t[idx[i]] += e` where `e` does not read `t`: a sum through an index array."""
        return self.is_array_sum and bool(self.writes[0].free_dims)

    @property
    def irregular(self) -> bool:
        """Whether some access goes through an index array or a dynamic loop: its elements are over-approximated."""
        return bool(self.inner) or any(access.free_dims for access in self.reads + self.writes)

    @property
    def is_reduction(self) -> bool:
        """`acc += ...`-style updates: the order of their instances may be reassociated."""
        return self.op in ("+=", "*=")

    @property
    def extremum(self) -> str | None:
        """`max` or `min` for a running NumPy extremum, `t = np.maximum(t, e)` (either order) where `e` never
        reads `t`: `np.max(x, axis=…)` lowers to one. Its updates of one element commute exactly, with no
        rounding and NaN wherever one is, so a vector loop's lanes may split it as they split a sum
        (`legality.lane_reduction`). Python's `max(t, e)` is none: it drops a NaN `e` but keeps a NaN
        `t`, so where a NaN falls decides the result."""
        value, target = self.value, self.target
        if self.op != "=" or not isinstance(value, Call) or value.function not in ("max", "min") or len(value.args) != 2:
            return None
        if value.module != "np" or target not in value.args:
            return None
        other = value.args[1] if value.args[0] == target else value.args[0]
        return None if self._reads_target(other) else value.function

    @property
    def accumulates_only(self) -> bool:
        """`t += e` where `e` never reads `t`'s array (or scalar): only then do the updates commute."""
        return not self._reads_target(self.value)

    def _reads_target(self, expr: Expr) -> bool:
        """Whether `expr` reads the array (or scalar) this statement writes."""
        target = self.target
        if isinstance(target, ArrayRef):
            return any(ref.array == target.array for ref in array_refs(expr))
        return target.name in names(expr)


@dataclass(frozen=True)
class Array:
    """An array argument (rank >= 1) or a local scalar (rank 0)."""

    name: str
    rank: int
    written: bool
    is_argument: bool


@dataclass(frozen=True)
class DtypeRule:
    """How an allocated array's element type follows from the arguments' types, as NumPy decides it.

    `sources` are the arguments (arrays and scalars) whose types meet in the value, plus
    `<int>`/`<float>` for Python literals; scalars and literals are weak (NEP 50: a float32
    array times 2.0 stays float32), unless a NumPy function made a NumPy scalar of them
    (`!a`: float64 or int64, strong, so `x32 / np.log(a)` is float64). `floating` marks values
    that true division or a math function made: integers become float64. `fixed` is an
    explicit `dtype=` or `.astype`. `widened` marks NumPy's sums and products of an array's
    elements (`np.sum`, `np.cumprod`): integers narrower than int64 become int64."""

    sources: tuple[str, ...] = ()  # `!` before a source: a NumPy scalar made of it, strong (`np.log(a)`)
    floating: bool = False
    fixed: str | None = None
    widened: bool = False

    def merged(self, other: DtypeRule) -> DtypeRule:
        """The rule of a value computed from both: their sources meet (an explicit type as a strong source)."""
        sources = tuple(dict.fromkeys(self._sources() + other._sources()))
        return DtypeRule(sources, self.floating or other.floating, widened=self.widened or other.widened)

    def _sources(self) -> tuple[str, ...]:
        return (f"={self.fixed}",) if self.fixed else self.sources

    def resolve(self, arrays: Mapping[str, str], scalars: Mapping[str, str]) -> str:
        """The element type's NumPy name, given the arguments' array dtypes and scalar kinds."""
        name = self._resolved(arrays, scalars)
        return "int64" if self.widened and np.dtype(name).kind in "bi" and np.dtype(name).itemsize < 8 else name

    def _resolved(self, arrays: Mapping[str, str], scalars: Mapping[str, str]) -> str:
        if self.fixed:
            return self.fixed
        strong: list[np.dtype] = []
        weak: set[str] = set()
        for marked in self.sources:
            source = marked.removeprefix("!")
            if source.startswith("="):
                strong.append(np.dtype(source[1:]))
            elif source in arrays:
                strong.append(np.dtype(arrays[source]))
            elif marked.startswith("!"):
                strong.append(np.dtype("float64" if source == "<float>" or scalars.get(source) == "float" else "int64"))
            elif source == "<float>" or scalars.get(source) == "float":
                weak.add("f")
            else:
                weak.add("i")
        # Weak scalars by NEP 50's rule, spelled out rather than left to np.result_type: NumPy 1.x's
        # result_type promotes by value (uint8, int8 and 0 give int8 there, int16 in the arithmetic).
        if strong:
            result = np.result_type(*strong)
        else:
            result = np.dtype("float64" if "f" in weak or not weak else "int64")
        if "f" in weak and result.kind in "biu":
            result = np.dtype("float64")
        if "i" in weak and result.kind == "b":
            result = np.dtype("int64")
        if self.floating and result.kind in "biu":
            result = np.dtype("float64")
        if result.kind == "b":
            result = np.dtype("int64")
        return result.name


@dataclass(frozen=True)
class Extent:
    """One dimension of an allocated array: `ceil(max(0, size) / divisor)` (a divisor for strided slices)."""

    size: AffineExpr
    divisor: int = 1

    def value(self, parameters: Mapping[str, int]) -> int:
        return max(0, -(-self.size.value(parameters) // self.divisor))

    def __str__(self) -> str:
        return str(self.size) if self.divisor == 1 else f"ceil(({self.size})/{self.divisor})"


@dataclass(frozen=True)
class Allocation:
    """An array the kernel needs but is not given: a result it returns, or a temporary.

    The caller allocates it (extents from the sizes, element type by NumPy's rules) and passes
    it like an argument, so code generation, legality and verification see one kind of array."""

    name: str
    shape: tuple[Extent, ...]
    dtype: DtypeRule
    role: str  # "result" or "temporary"
    line: int

    def extents(self, parameters: Mapping[str, int]) -> tuple[int, ...]:
        return tuple(extent.value(parameters) for extent in self.shape)

    def as_json(self) -> dict:
        """The form a stored contract keeps, so a swapped kernel allocates without its model."""
        shape = [[[list(term) for term in e.size.terms], e.size.constant, e.divisor] for e in self.shape]
        rule = self.dtype
        dtype = {"sources": list(rule.sources), "floating": rule.floating, "fixed": rule.fixed, "widened": rule.widened}
        return {"name": self.name, "shape": shape, "dtype": dtype, "role": self.role, "line": self.line}

    @staticmethod
    def from_json(data: Mapping) -> Allocation:
        shape = tuple(
            Extent(AffineExpr(tuple((name, value) for name, value in terms), constant), divisor)
            for terms, constant, divisor in data["shape"]
        )
        rule = data["dtype"]
        dtype = DtypeRule(tuple(rule["sources"]), rule["floating"], rule["fixed"], rule.get("widened", False))
        return Allocation(data["name"], shape, dtype, data["role"], data["line"])


@dataclass(frozen=True)
class ReturnValue:
    """One value the function returns: an array (an argument or an allocation), or the single
    element of a one-element allocation when the Python function returns a scalar."""

    name: str
    scalar: bool = False


def returned_value(returns: tuple[ReturnValue, ...], as_tuple: bool, arrays: Mapping[str, object]) -> object:
    """What the Python function returns, built from the arrays a native call filled."""
    values = [arrays[r.name][0] if r.scalar else arrays[r.name] for r in returns]  # type: ignore[index]
    if as_tuple:
        return tuple(values)
    return values[0] if values else None


def named_results(returns: tuple[ReturnValue, ...], as_tuple: bool, result: object) -> dict[str, np.ndarray]:
    """The inverse: what a Python call returned, as arrays named like the native kernel's results."""
    if not returns:
        return {}
    parts = list(result) if as_tuple and isinstance(result, tuple) else [result]
    if len(parts) != len(returns):
        raise ValueError(f"returned {len(parts)} values where the model has {len(returns)}")
    return {r.name: np.asarray([part]) if r.scalar else np.asarray(part) for r, part in zip(returns, parts, strict=True)}


@dataclass(frozen=True)
class Failure:
    """A condition NumPy raises on that only the computation finds (`np.linalg.cholesky` of a matrix that is not
    positive definite): statements set the integer local `flag`; a call that ends with it set is undone and runs
    as the original, which raises."""

    flag: str
    message: str


@dataclass(frozen=True)
class ShapeParameter:
    """A size read from an array's shape (`n = A.shape[0]`), not passed as an argument."""

    name: str
    array: str
    dim: int


@dataclass(frozen=True)
class DerivedSize:
    """A size the function computes from other sizes before its loops (`h = len(x) // 2`, `m = nx * ny`,
    `n % 2` in a guard). To isl it is one more parameter, so the model stays affine in its parameters; the
    native entry computes it from the others with Python's semantics, and `Kernel.assumed` states what is
    known of it: a floor division's or a remainder's exact relation to its operand (by a constant), and
    nothing of a product or of a division by a size, which stay opaque (conservative)."""

    name: str
    op: str  # "*", "//" or "%"
    left: AffineExpr
    right: AffineExpr

    def value(self, sizes: Mapping[str, int]) -> int:
        """Its value at `sizes`, as Python computes it (floor division and remainder of negative values too)."""
        left, right = self.left.value(sizes), self.right.value(sizes)
        if self.op == "*":
            return left * right
        return left // right if self.op == "//" else left % right

    def fact(self) -> str:
        """What isl may know of it, as constraint text ("" for nothing): `h = floor((n)/2)` for `n // 2`."""
        if self.op == "*" or not self.right.is_constant:
            return ""
        divisor = self.right.constant
        numerator = self.left if divisor > 0 else -self.left
        quotient = f"floor(({numerator})/{abs(divisor)})"
        if self.op == "//":
            return f"{self.name} = {quotient}"
        return f"{self.name} = {self.left} - {divisor}*{quotient}"

    def __str__(self) -> str:
        return f"{_operand(self.left)} {self.op} {_operand(self.right)}"

    def as_json(self) -> list:
        """The form a stored contract keeps, so a swapped call sizes its allocations without the model."""
        return [
            self.name,
            self.op,
            [[list(t) for t in self.left.terms], self.left.constant],
            [[list(t) for t in self.right.terms], self.right.constant],
        ]

    @staticmethod
    def from_json(data: list) -> DerivedSize:
        name, op, left, right = data
        return DerivedSize(name, op, *(AffineExpr(tuple((n, c) for n, c in terms), constant) for terms, constant in (left, right)))


def _operand(expr: AffineExpr) -> str:
    return str(expr) if len(expr.terms) + bool(expr.constant) <= 1 else f"({expr})"


def derived_values(derived: tuple[DerivedSize, ...], sizes: Mapping[str, int]) -> dict[str, int]:
    """`sizes` with the derived sizes' values added, each computed from those before it (a division by zero
    raises ZeroDivisionError, as the Python function would)."""
    known = dict(sizes)
    for size in derived:
        known[size.name] = size.value(known)
    return known


Default = int | float
"""A parameter's literal default (`eps=1.0`, `n=64`, `flag=True`): what a call that leaves it out passes."""


@dataclass(frozen=True)
class SameKindCast:
    """A copy NumPy refuses unless its source's type casts to its target's within a kind (`np.copyto`'s default):
    the types are the call's, so a call whose types NumPy would refuse is refused when it is built."""

    source: DtypeRule
    target: DtypeRule
    line: int
    text: str


@dataclass(frozen=True)
class DtypeRequirement:
    """A value modelled for some element types only (`np.histogram` computes its bins in the data's type, modelled
    for float64): a call of other types is refused when it is built, and the swapped call runs the original."""

    value: DtypeRule
    allowed: tuple[str, ...]
    line: int
    text: str


@dataclass(frozen=True)
class FiniteCheck:
    """An array argument whose values must all be finite: NumPy raises on a NaN or an infinity in it (the data of
    `np.histogram` without `range=`), which a loop cannot do halfway through. The native entry reads every
    value before the run (conservative: the whole argument, where NumPy reads a view of it) and a call that
    holds one runs the original, which raises."""

    array: str
    line: int
    text: str


@dataclass(frozen=True)
class SizeFloor:
    """A size NumPy raises on below `least`: `np.histogram`'s `bins` below 1, a new array's extent below 0
    (`np.empty(len(p) - 1)` of an empty `p`). The native entry checks it, and a call where it fails runs the
    original, which raises; an allocation's extent alone would be clamped to 0 and return an empty array."""

    size: AffineExpr
    least: int
    line: int
    text: str


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
    returns: tuple[ReturnValue, ...]
    ctx: isl.Context = field(repr=False)
    returns_tuple: bool = False  # `return a, b`: the function returns a tuple even of one value
    defaults: tuple[tuple[str, Default], ...] = ()  # `eps=1.0`: the literal defaults a call may leave out
    allocations: tuple[Allocation, ...] = ()
    numpy_program: bool = False  # the array front-end lowered some of it: the NumPy original races the winner
    assumptions: tuple[tuple[AffineExpr, AffineExpr], ...] = ()  # sizes NumPy's broadcasting requires equal
    entry_code: str = ""  # the source's checks at entry (and what they read), which a swapped call runs in Python first
    constants: tuple[tuple[str, int | float], ...] = ()  # the module's constants it reads, as it was built with them
    unit_axes: tuple[tuple[str, int], ...] = ()  # (argument, axis) modelled as extent 1: a call must have them 1
    casts: tuple[SameKindCast, ...] = ()  # copies NumPy makes only where `casting="same_kind"` allows (np.copyto)
    requirements: tuple[DtypeRequirement, ...] = ()  # values modelled for some element types only
    finite: tuple[FiniteCheck, ...] = ()  # arguments checked finite at entry (NumPy raises otherwise)
    size_floors: tuple[SizeFloor, ...] = ()  # sizes checked at entry against NumPy's least (it raises below)
    derived: tuple[DerivedSize, ...] = ()  # parameters computed from the others (`h = n // 2`), in order
    failures: tuple[Failure, ...] = ()  # what NumPy raises on that the computation finds, each set by a local flag

    @cached_property
    def assumed(self) -> isl.Set:
        """The parameter values a call may have: the `assumptions` hold (NumPy would raise otherwise), and each
        derived size is what its definition computes. The generated code is built for these alone; its entry
        computes the derived sizes and checks the assumptions before anything else."""
        space = "[" + ", ".join(self.parameters) + "]"
        facts = [f"{a} = {b}" for a, b in self.assumptions] + [size.fact() for size in self.derived if size.fact()]
        return isl.Set.read_from_str(self.ctx, f"{space} -> {{ : {' and '.join(facts) or 'true'} }}")

    @property
    def c_arguments(self) -> tuple[str, ...]:
        """What the native entry point takes: the Python arguments, then the allocated arrays."""
        return self.arguments + tuple(a.name for a in self.allocations)

    @property
    def outputs(self) -> tuple[str, ...]:
        """The arrays a caller can observe after a call: written arguments, then returned allocations."""
        written = tuple(a.name for a in self.arrays if a.is_argument and a.written and a.rank > 0 and a.name in self.arguments)
        results = tuple(a.name for a in self.allocations if a.role == "result")
        return written + results

    @property
    def index_arrays(self) -> tuple[str, ...]:
        """The arrays whose values are subscripts or loop bounds (`col` in `x[col[k]]`)."""
        found: dict[str, None] = {}
        for statement in self.statements:
            for ref in statement.array_refs():
                found.update(
                    (index.ref.array, None) for index in ref.indices if isinstance(index, IndexRead) and not index.computed
                )
            found.update(
                (limit.ref.array, None)
                for loop in statement.inner
                for limit in (loop.start, loop.stop)
                if isinstance(limit, IndexRead)
            )
        return tuple(found)

    @property
    def index_only_arrays(self) -> tuple[str, ...]:
        """The index arrays the kernel reads as subscripts and loop bounds alone, never computing with their
        elements: each element is read as an int64, so any integer type serves (SciPy's and NPBench's CSR
        matrices hold `uint32` row pointers)."""
        valued = {array for statement in self.statements for array in value_arrays(statement.value)}
        return tuple(array for array in self.index_arrays if array not in valued)

    @property
    def irregular(self) -> bool:
        """Index arrays or data-dependent loop bounds somewhere: legality is conservative there."""
        return any(statement.irregular for statement in self.statements)

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
        parameters read from their array's shape, derived sizes computed from them."""
        known = {name: int(values[name]) for name in self.parameters if name in self.arguments and name in values}
        for shape in self.shape_parameters:
            array = values.get(shape.array)
            if array is not None:
                known[shape.name] = int(array.shape[shape.dim])
        for size in self.derived:
            if size.left.variables | size.right.variables <= known.keys():
                known[size.name] = size.value(known)
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


_LOCKS: WeakKeyDictionary[Kernel, threading.RLock] = WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def isl_lock(kernel: Kernel) -> threading.RLock:
    """isl contexts are not thread-safe: every use of a kernel's isl objects holds its lock."""
    with _LOCKS_GUARD:
        if kernel not in _LOCKS:
            _LOCKS[kernel] = threading.RLock()
        return _LOCKS[kernel]
