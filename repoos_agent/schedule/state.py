"""Applying primitives to a kernel: from the source order to a new multidimensional schedule.

Each statement's schedule is kept in the 2d+1 form `[p0, l0, p1, l1, ..., pd]`:
`l` are loop dimensions (affine, or `floor` for tiles, of the statement's own
iterators) and `p` the statement's position in each loop body. A loop is
identified across statements by an id, so "the j loop around S1" stays one
thing however it is renamed or moved; primitives address loops by name (`j`),
qualified by a statement where a name is shared (`S1.j`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from itertools import chain, count
from typing import NoReturn

import islpy as isl

from repoos_agent.model.kernel import Kernel, Statement
from repoos_agent.schedule.primitives import PRIMITIVES
from repoos_agent.schedule.products import NotAProduct, ProductCall, product_call, shared_depth
from repoos_agent.schedule.terms import LoopRef, Primitive, Schedule, ScheduleError, StatementRef


@dataclass(frozen=True)
class LoopDim:
    """One loop dimension of one statement's schedule."""

    id: str  # stable identity, shared by every statement inside this loop
    name: str  # what primitives call it
    expr: str  # isl expression over the statement's iterators


@dataclass
class StatementSchedule:
    statement: str
    iterators: tuple[str, ...]
    dims: list[LoopDim]
    positions: list[Fraction]  # one more than dims: position before each loop and after the last


@dataclass(frozen=True)
class Contraction:
    """A temporary stored by the dimensions it keeps (none: a scalar), as `legality.contraction` proved it may be.

    `private_to` is the parallel loop whose threads each keep their own copy; `vector_loops` the
    vector loops whose lanes do (only a scalar can be in one)."""

    array: str
    kept: tuple[int, ...]
    private_to: str | None = None
    vector_loops: tuple[str, ...] = ()


@dataclass(frozen=True)
class LoweredSchedule:
    """What code generation and legality need: the schedule map, loop identities and the marks."""

    schedule: isl.UnionMap  # statement instance -> [p0, l0, p1, ...], all of one width
    width: int
    loop_ids: dict[str, tuple[str, ...]]  # statement -> loop id per level
    loop_names: dict[str, str]  # loop id -> name
    parallel: frozenset[str]
    vector: dict[str, int]
    unroll: dict[str, int]
    promote: frozenset[str] = frozenset()  # loops whose body's updated elements live in registers across them
    marked_by: dict[str, Primitive] = field(default_factory=dict)  # loop id -> the primitive that marked it
    private: dict[str, frozenset[str]] = field(default_factory=dict)  # parallel loop id -> scalars each thread copies (legality)
    blas: tuple[ProductCall, ...] = ()  # products code generation prints as one BLAS call each (`blas(S1)`)
    atomic: frozenset[str] = frozenset()  # sums into arrays (`t[...] += e`) a parallel loop updates atomically (legality)
    privatized: frozenset[str] = frozenset()  # such sums that accumulate into per-thread copies instead (`privatize(S1)`)
    contracted: tuple[Contraction, ...] = ()  # temporaries stored in fewer dimensions (legality)
    lane_sums: dict[str, frozenset[str]] = field(default_factory=dict)  # vector loop id -> sums its lanes split (legality)

    def statements_in(self, loop_id: str) -> tuple[str, ...]:
        return tuple(s for s, ids in self.loop_ids.items() if loop_id in ids)

    def qualified_name(self, loop_id: str) -> str:
        """How a primitive names this loop: `j`, or `S1.j` where other loops are also called `j`."""
        name = self.loop_names[loop_id]
        shared = sum(1 for other in self.loop_names.values() if other == name) > 1
        return f"{self.statements_in(loop_id)[0]}.{name}" if shared else name

    def level_of(self, loop_id: str) -> int:
        for ids in self.loop_ids.values():
            if loop_id in ids:
                return ids.index(loop_id)
        raise KeyError(loop_id)


def source_dims(statement: Statement) -> list[LoopDim]:
    """The loops around `statement` as the source wrote them. A loop's identity is its place in the nest
    (its position at every level down to it), not only its name and line: the nests one NumPy line lowers
    to (`s = A.T @ r` zeroes `s`, then accumulates into it) all start on that line, yet are different loops."""
    return [
        LoopDim(f"{loop.name}@{loop.line}:{'.'.join(str(p) for p in statement.positions[: level + 1])}", loop.name, loop.time())
        for level, loop in enumerate(statement.loops)
    ]


class ScheduleState:
    """A kernel's schedule under construction; `apply` each primitive, then `lower`."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.statements: dict[str, StatementSchedule] = {}
        for statement in kernel.statements:
            dims = source_dims(statement)
            positions = [Fraction(p) for p in statement.positions]
            self.statements[statement.name] = StatementSchedule(statement.name, statement.iterators, dims, positions)
        self.parallel: set[str] = set()
        self.vector: dict[str, int] = {}
        self.unroll: dict[str, int] = {}
        self.promote: set[str] = set()
        self.marked_by: dict[str, Primitive] = {}
        self.blas: dict[str, ProductCall] = {}  # update statement -> the call that replaces it and its initializer
        self._blas_by: dict[str, Primitive] = {}
        self.privatized: set[str] = set()
        self._fresh = 0

    def copy(self) -> ScheduleState:
        """An independent state at the same point, sharing the kernel: what trying one more primitive needs
        (`schedule.grammar` tries thousands)."""
        twin = ScheduleState.__new__(ScheduleState)
        twin.kernel = self.kernel
        twin.statements = {
            name: replace(schedule, dims=list(schedule.dims), positions=list(schedule.positions))
            for name, schedule in self.statements.items()
        }
        twin.parallel, twin.promote = set(self.parallel), set(self.promote)
        twin.vector, twin.unroll, twin.marked_by = dict(self.vector), dict(self.unroll), dict(self.marked_by)
        twin.blas, twin._blas_by, twin._fresh = dict(self.blas), dict(self._blas_by), self._fresh
        twin.privatized = set(self.privatized)
        return twin

    # -- naming -----------------------------------------------------------------------------------

    def loop_names(self) -> list[str]:
        """Every addressable loop name, qualified where a name is shared by different loops."""
        by_name: dict[str, set[str]] = {}
        for schedule in self.statements.values():
            for dim in schedule.dims:
                by_name.setdefault(dim.name, set()).add(dim.id)
        names = []
        for name, ids in sorted(by_name.items()):
            if len(ids) == 1:
                names.append(name)
            else:
                names += sorted(f"{s.statement}.{name}" for s in self.statements.values() if any(d.name == name for d in s.dims))
        return names

    def statements_with(self, loop_id: str) -> list[str]:
        return [s.statement for s in self.statements.values() if any(d.id == loop_id for d in s.dims)]

    def level(self, loop_id: str) -> int:
        for schedule in self.statements.values():
            for level, dim in enumerate(schedule.dims):
                if dim.id == loop_id:
                    return level
        raise KeyError(loop_id)

    def _candidates(self, ref: LoopRef, primitive: Primitive) -> list[str]:
        if ref.statement is not None and ref.statement not in self.statements:
            self._fail(primitive, f"unknown statement `{ref.statement}`; statements are {', '.join(self.statements)}")
        ids: dict[str, None] = {}
        for schedule in self.statements.values():
            if ref.statement is None or schedule.statement == ref.statement:
                ids.update((dim.id, None) for dim in schedule.dims if dim.name == ref.name)
        if not ids:
            where = f" around {ref.statement}" if ref.statement else ""
            self._fail(primitive, f"unknown loop `{ref}`{where}; loops are {', '.join(self.loop_names())}")
        return list(ids)

    def resolve_all(self, refs: tuple[LoopRef, ...], primitive: Primitive) -> list[str]:
        """The ids of the loops `refs` name. A shared name (`j`) is settled by the other loops of the
        primitive: it must mean the one loop that shares statements with all of them."""
        candidates = [self._candidates(ref, primitive) for ref in refs]
        chosen: list[str | None] = [c[0] if len(c) == 1 else None for c in candidates]
        for k, options in enumerate(candidates):
            if chosen[k] is not None:
                continue
            fixed = [set(self.statements_with(c)) for c in chosen if c is not None]
            close = [i for i in options if fixed and all(f & set(self.statements_with(i)) for f in fixed)]
            if len(close) != 1:
                if refs[k].statement is not None:  # every option is around that statement: after a `fuse`, two share a name
                    depths = ", ".join(str(self.level(i) + 1) for i in options)
                    self._fail(
                        primitive,
                        f"loop name `{refs[k]}` is ambiguous: {refs[k].statement} is inside {len(options)} loops "
                        f"named `{refs[k].name}` (depths {depths}), which a name cannot tell apart",
                    )
                choices = sorted(f"{self.statements_with(i)[0]}.{refs[k].name}" for i in options)
                self._fail(primitive, f"loop name `{refs[k]}` is ambiguous: {', '.join(choices)}")
            chosen[k] = close[0]
        return [c for c in chosen if c is not None]

    def resolve(self, ref: LoopRef, primitive: Primitive) -> str:
        return self.resolve_all((ref,), primitive)[0]

    def _statement(self, ref: StatementRef, primitive: Primitive) -> StatementSchedule:
        if ref.name not in self.statements:
            raise ScheduleError(
                f"unknown statement `{ref.name}`; statements are {', '.join(self.statements)}", str(primitive), primitive.index
            )
        return self.statements[ref.name]

    def _fresh_id(self, base: str) -> str:
        self._fresh += 1
        return f"{base}#{self._fresh}"

    # -- primitives -------------------------------------------------------------------------------

    def apply_all(self, schedule: Schedule) -> ScheduleState:
        for primitive in schedule.primitives:
            self.apply(primitive)
        return self

    def apply(self, primitive: Primitive) -> None:
        """Apply one primitive by the method its spec names; `ScheduleError` says why it does not apply."""
        getattr(self, PRIMITIVES[primitive.name].apply)(primitive)
        for call in self.blas.values():
            self._check_untouched(call, primitive)

    def _fail(self, primitive: Primitive, message: str) -> NoReturn:
        raise ScheduleError(message, str(primitive), primitive.index)

    def _band(self, primitive: Primitive, refs: tuple[LoopRef, ...]) -> list[str]:
        """Resolve loops that must enclose exactly the same statements (a perfect band)."""
        ids = self.resolve_all(refs, primitive)
        members = [set(self.statements_with(i)) for i in ids]
        for ref, inside in zip(refs[1:], members[1:], strict=True):
            if inside != members[0]:
                outside = sorted(members[0] ^ inside)
                verb = "is" if len(outside) == 1 else "are"
                self._fail(
                    primitive,
                    f"`{refs[0]}` and `{ref}` are not a perfect band: {', '.join(outside)} {verb} inside only one of them",
                )
        return ids

    def _interchange(self, primitive: Primitive) -> None:
        a, b = self._band(primitive, primitive.loops())
        for name in self.statements_with(a):
            dims = self.statements[name].dims
            i, j = next(k for k, d in enumerate(dims) if d.id == a), next(k for k, d in enumerate(dims) if d.id == b)
            dims[i], dims[j] = dims[j], dims[i]

    def _tile(self, primitive: Primitive) -> None:
        loops = primitive.loops()
        sizes = primitive.numbers()
        ids = self._band(primitive, loops)
        levels = [self.level(i) for i in ids]
        if levels != list(range(levels[0], levels[0] + len(levels))):
            self._fail(
                primitive,
                f"tile takes adjacent loops of one band, outermost first; these are at depths {', '.join(map(str, levels))}",
            )
        first = levels[0]
        tile_ids = {i: self._fresh_id(f"{i}/tile") for i in ids}
        members = [self.statements[name] for name in self.statements_with(ids[0])]
        if len({tuple(m.positions[first + 1 : first + len(ids)]) for m in members}) > 1 or any(
            [d.id for d in m.dims[first : first + len(ids)]] != list(ids) for m in members
        ):
            self._fail(primitive, "the loops are not perfectly nested: statements sit between them")
        taken = {d.name for m in members for d in m.dims}
        for schedule in members:
            band = schedule.dims[first : first + len(ids)]
            tiles = [
                LoopDim(tile_ids[d.id], _tile_name(d.name, taken), f"floor(({d.expr})/{size})")
                for d, size in zip(band, sizes, strict=True)
            ]
            schedule.dims[first : first + len(ids)] = tiles + band
            schedule.positions[first + 1 : first + 1] = [Fraction(0)] * len(ids)

    def _skew(self, primitive: Primitive) -> None:
        outer_ref, inner_ref = primitive.loops()
        (factor,) = primitive.numbers()
        outer, inner = self.resolve_all((outer_ref, inner_ref), primitive)
        members = self.statements_with(inner)
        if not set(members) <= set(self.statements_with(outer)) or self.level(outer) >= self.level(inner):
            self._fail(primitive, f"`{outer_ref}` must enclose `{inner_ref}` (skew the inner loop by the outer one)")
        for name in members:
            dims = self.statements[name].dims
            o = next(d for d in dims if d.id == outer)
            k = next(k for k, d in enumerate(dims) if d.id == inner)
            dims[k] = replace(dims[k], expr=f"({dims[k].expr}) + {factor}*({o.expr})")

    def _reverse(self, primitive: Primitive) -> None:
        (loop,) = primitive.loops()
        loop_id = self.resolve(loop, primitive)
        for name in self.statements_with(loop_id):
            dims = self.statements[name].dims
            k = next(k for k, d in enumerate(dims) if d.id == loop_id)
            dims[k] = replace(dims[k], expr=f"-({dims[k].expr})")

    def _shift(self, primitive: Primitive) -> None:
        (loop,) = primitive.loops()
        (offset,) = primitive.numbers()
        loop_id = self.resolve(loop, primitive)
        members = self.statements_with(loop_id)
        if loop.statement is None and len(members) > 1:
            self._fail(
                primitive,
                f"shifting every statement of `{loop}` alike changes nothing; "
                f"name one, e.g. shift({members[-1]}.{loop.name}, {offset})",
            )
        name = loop.statement or members[0]
        dims = self.statements[name].dims
        k = next(k for k, d in enumerate(dims) if d.id == loop_id)
        dims[k] = replace(dims[k], expr=f"({dims[k].expr}) + {offset}")

    def _fuse(self, primitive: Primitive) -> None:
        first_ref, second_ref = (a for a in primitive.args if isinstance(a, StatementRef))
        (depth,) = primitive.numbers()
        first, second = self._statement(first_ref, primitive), self._statement(second_ref, primitive)
        if len(first.dims) < depth or len(second.dims) < depth:
            self._fail(
                primitive,
                f"depth {depth} exceeds the loops around {first.statement} ({len(first.dims)}) "
                f"or {second.statement} ({len(second.dims)})",
            )
        moved = [
            s
            for s in self.statements.values()
            if s.dims[:depth] == second.dims[:depth] and s.positions[:depth] == second.positions[:depth]
        ]
        place = first.positions[depth] + Fraction(1, 2)
        for schedule in moved:
            for level in range(depth):
                schedule.dims[level] = replace(first.dims[level], expr=schedule.dims[level].expr)
            offset = schedule.positions[depth] - second.positions[depth]
            schedule.positions[:depth] = list(first.positions[:depth])
            schedule.positions[depth] = place + offset / 1024

    def _distribute(self, primitive: Primitive) -> None:
        first_ref, second_ref = (a for a in primitive.args if isinstance(a, StatementRef))
        first, second = self._statement(first_ref, primitive), self._statement(second_ref, primitive)
        shared = 0
        while shared < min(len(first.dims), len(second.dims)) and first.dims[shared].id == second.dims[shared].id:
            shared += 1
        if shared == 0:
            self._fail(primitive, f"{first.statement} and {second.statement} share no loop")
        level = shared - 1
        if (first.positions[shared], first.statement) >= (second.positions[shared], second.statement):
            self._fail(primitive, f"{first.statement} must come before {second.statement} in the loop they share")
        split_at = second.positions[shared]
        loop = first.dims[level]
        members = [m for m in self.statements.values() if len(m.dims) > level and m.dims[level].id == loop.id]
        moving = [m for m in members if m.positions[shared] >= split_at]
        staying_ids = {d.id for m in members if m not in moving for d in m.dims[level:]}
        here = first.positions[level]
        siblings = [
            m.positions[level]
            for m in self.statements.values()
            if [d.id for d in m.dims[:level]] == [d.id for d in first.dims[:level]]
            and m.positions[:level] == first.positions[:level]
            and m.positions[level] > here
        ]
        # The new loop goes right after the split one and before whatever came next, however often
        # this level has been split already.
        place = (here + min(siblings, default=here + 1)) / 2
        copies: dict[str, str] = {}
        for schedule in moving:
            for k in range(level, len(schedule.dims)):
                old = schedule.dims[k].id
                if old in staying_ids:
                    schedule.dims[k] = replace(schedule.dims[k], id=copies.setdefault(old, self._fresh_id(old)))
            schedule.positions[level] = place
        for old, new in copies.items():  # `parallelize(i); distribute(S0, S1)` runs both halves of `i` in parallel
            self._copy_marks(old, new)

    def _copy_marks(self, old: str, new: str) -> None:
        """The parallel, vector and unroll marks of loop `old` on its copy `new`; legality checks each copy.
        Not `promote`: it names one statement's loop, which only one of the copies holds."""
        if old in self.parallel:
            self.parallel.add(new)
        if old in self.vector:
            self.vector[new] = self.vector[old]
        if old in self.unroll:
            self.unroll[new] = self.unroll[old]
        if new in self.parallel or new in self.vector or new in self.unroll:
            self.marked_by[new] = self.marked_by[old]

    def _mark(self, primitive: Primitive) -> str:
        loop_id = self.resolve(primitive.loops()[0], primitive)
        self.marked_by[loop_id] = primitive
        for call in self.blas.values():
            self._check_unmarked(call, loop_id, primitive)
        return loop_id

    # -- blas ---------------------------------------------------------------------------------------

    def _blas(self, primitive: Primitive) -> None:
        """`blas(S1)`: the update S1 and its initializer run as one BLAS call where the initializer's nest
        was (`schedule.products` decides which call). Their nests must stay as the source wrote them."""
        (ref,) = (a for a in primitive.args if isinstance(a, StatementRef))
        self._statement(ref, primitive)
        if ref.name in self.blas or any(c.initializer == ref.name for c in self.blas.values()):
            self._fail(primitive, f"{ref.name} is already part of a `blas`")
        try:
            call = product_call(self.kernel, ref.name)
        except NotAProduct as reason:
            self._fail(primitive, f"{reason}; blas applies to a product one cblas_?gemm or cblas_?gemv computes")
        if call.initializer in self.blas:
            self._fail(primitive, f"{call.initializer} is already part of a `blas`")
        self._check_untouched(call, primitive, earlier=True)
        for loop_id, marker in self.marked_by.items():
            self._check_unmarked(call, loop_id, marker, by=primitive)
        self.blas[ref.name] = call
        self._blas_by[ref.name] = primitive

    def _privatize(self, primitive: Primitive) -> None:
        """`privatize(S1)`: the sum S1 (`t[idx[i]] += e`, or `t[j] += e` over `i`) accumulates into a zeroed copy of `t` per thread
        of its parallel loop, added into `t` when the loop ends, instead of updating `t` atomically.
        Whether a parallel loop carries the sum is legality's to say."""
        (ref,) = (a for a in primitive.args if isinstance(a, StatementRef))
        self._statement(ref, primitive)
        if not self.kernel.statement(ref.name).is_array_sum:
            reason = f"{ref.name} is not a sum into an array (`t[...] += e`, `e` not reading `t`): nothing to privatize"
            self._fail(primitive, reason)
        self.privatized.add(ref.name)

    def _pair(self, call: ProductCall) -> tuple[str, str]:
        return (call.initializer, call.update)

    def _check_untouched(self, call: ProductCall, primitive: Primitive, earlier: bool = False) -> None:
        """A primitive that moves, reorders, tiles or skews the pair's loops is refused: the call replaces
        the nests as the source wrote them."""
        for name in self._pair(call):
            statement = self.kernel.statement(name)
            dims = source_dims(statement)
            schedule = self.statements[name]
            if schedule.dims != dims or schedule.positions != [Fraction(p) for p in statement.positions]:
                when = "an earlier primitive transformed" if earlier else "it transforms"
                self._fail(
                    primitive,
                    f"{when} the loops of {name}, which `blas({call.update})` runs as one BLAS call; "
                    "a product run by BLAS keeps its nests as written",
                )

    def _check_unmarked(self, call: ProductCall, loop_id: str, marker: Primitive, by: Primitive | None = None) -> None:
        """A mark that names the pair's loops (`parallelize(S1.i)`, a loop only they run in, or one around
        both) is refused; one on a loop the pair shares with other statements, outside the product's own
        loops, marks the others' iterations, and the call replaces the pair's."""
        pair = set(self._pair(call))
        holders = set(self.statements_with(loop_id))
        ref = marker.loops()[0]
        around = {d.id for d in source_dims(self.kernel.statement(call.update))[: len(call.prefix)]}
        if ref.statement in pair or (holders and holders <= pair) or loop_id in around:
            self._fail(
                by or marker,
                f"`{marker}` marks a loop of {' and '.join(sorted(holders & pair))}, which `blas({call.update})` "
                "runs as one BLAS call",
            )

    def _check_adjacent(self, call: ProductCall) -> None:
        """Nothing runs between the initializer's nest and the update's: the call runs both at once."""
        first, second = self.statements[call.initializer], self.statements[call.update]
        depth = shared_depth(self.kernel.statement(call.initializer), self.kernel.statement(call.update))
        low, high = first.positions[depth], second.positions[depth]
        prefix = [d.id for d in first.dims[:depth]]
        for other in self.statements.values():
            if other.statement in self._pair(call) or len(other.dims) < depth:
                continue
            inside = [d.id for d in other.dims[:depth]] == prefix and other.positions[:depth] == first.positions[:depth]
            if inside and low <= other.positions[depth] <= high:
                self._fail(
                    self._blas_by[call.update],
                    f"{other.statement} runs between {call.initializer} and {call.update}; the BLAS call runs both at once",
                )

    def _parallelize(self, primitive: Primitive) -> None:
        self.parallel.add(self._mark(primitive))

    def _vectorize(self, primitive: Primitive) -> None:
        self.vector[self._mark(primitive)] = primitive.numbers()[0]  # innermost by the end: checked in `lower`

    def _unroll(self, primitive: Primitive) -> None:
        self.unroll[self._mark(primitive)] = primitive.numbers()[0]

    def _promote(self, primitive: Primitive) -> None:
        self.promote.add(self._mark(primitive))

    # -- lowering ---------------------------------------------------------------------------------

    @property
    def width(self) -> int:
        """Dimensions of the time the statements map to: a position before, between and after each loop."""
        return 2 * max((len(s.dims) for s in self.statements.values()), default=0) + 1

    def timeline(self) -> isl.UnionMap:
        """Statement instance -> time, one isl union map of a single width, positions renumbered to
        integers: the order alone, whether or not the marks check (see `lower`)."""
        kernel = self.kernel
        width = self.width
        depth = (width - 1) // 2
        ranks = [sorted({s.positions[k] for s in self.statements.values() if k < len(s.positions)}) for k in range(depth + 1)]
        result = isl.UnionMap.empty(isl.Space.params_alloc(kernel.ctx, 0))
        for statement in kernel.statements:
            schedule = self.statements[statement.name]
            coordinates: list[str] = []
            for level, dim in enumerate(schedule.dims):
                coordinates += [str(ranks[level].index(schedule.positions[level])), dim.expr]
            coordinates.append(str(ranks[len(schedule.dims)].index(schedule.positions[-1])))
            coordinates += ["0"] * (width - len(coordinates))
            text = f"{kernel.param_space} -> {{ {statement.name}[{', '.join(schedule.iterators)}] -> [{', '.join(coordinates)}] }}"
            relation = isl.Map.read_from_str(kernel.ctx, text).intersect_domain(statement.domain)
            result = result.union(isl.UnionMap.from_map(relation))
        return result

    def lower(self) -> LoweredSchedule:
        """The schedule as code generation and legality take it: the timeline, the loops and the marks,
        once every mark is checked against the loops as they are at the end."""
        present = {d.id for s in self.statements.values() for d in s.dims}
        for loop_id in sorted((self.parallel | set(self.vector) | set(self.unroll) | self.promote) - present):
            primitive = self.marked_by[loop_id]
            self._fail(
                primitive,
                f"the loop `{primitive.loops()[0]}` it marks is gone by the end of the schedule (a later primitive merged "
                "it into another loop: `fuse` does); mark the fused loop after the `fuse`",
            )
        for loop_id in sorted(self.vector):
            for name in self.statements_with(loop_id):
                if self.statements[name].dims[-1].id != loop_id:
                    self._fail(
                        self.marked_by[loop_id],
                        f"`{self.marked_by[loop_id].loops()[0]}` is not the innermost loop around {name} at the end of "
                        "the schedule; vectorize the innermost loop, after the primitives that reorder the loops",
                    )
        for loop_id in sorted((self.parallel | set(self.vector)) & set(self.unroll)):
            primitive = self.marked_by[loop_id]
            raise ScheduleError(
                "unrolling a loop that is also parallel or vectorized is not supported; unroll an inner loop",
                str(primitive),
                primitive.index,
            )
        for loop_id in sorted(self.promote):
            self._check_promotion(loop_id)
        for call in self.blas.values():
            self._check_adjacent(call)
        loop_names = {d.id: d.name for s in self.statements.values() for d in s.dims}
        return LoweredSchedule(
            schedule=self.timeline(),
            width=self.width,
            loop_ids={name: tuple(d.id for d in s.dims) for name, s in self.statements.items()},
            loop_names=loop_names,
            parallel=frozenset(self.parallel),
            vector=dict(self.vector),
            unroll=dict(self.unroll),
            promote=frozenset(self.promote),
            marked_by=dict(self.marked_by),
            blas=tuple(self.blas.values()),
            privatized=frozenset(self.privatized),
        )

    def _check_promotion(self, loop_id: str) -> None:
        """`promote(k)` keeps one statement's target elements in registers across `k`: the loop must hold
        that one statement inside further loops, and run in order (not parallel, vectorized or unrolled)."""
        primitive = self.marked_by[loop_id]
        members = self.statements_with(loop_id)
        name = primitive.loops()[0]
        if len(members) != 1:
            self._fail(primitive, f"`{name}` holds {', '.join(members)}; promote needs a loop around one statement")
        dims = self.statements[members[0]].dims
        if dims[-1].id == loop_id:
            self._fail(
                primitive,
                f"`{name}` is the innermost loop around {members[0]}; promote the loop outside the ones that "
                "walk the updated elements, e.g. tile(i, k, j, 6, 64, 24); interchange(i, k); promote(k)",
            )
        if loop_id in self.parallel or loop_id in self.vector or loop_id in self.unroll:
            self._fail(primitive, f"`{name}` is also parallel, vectorized or unrolled; promote a loop that runs in order")


def apply_schedule(kernel: Kernel, schedule: Schedule) -> LoweredSchedule:
    """Apply every primitive in order; a primitive that does not apply raises `ScheduleError`."""
    return ScheduleState(kernel).apply_all(schedule).lower()


def _tile_name(name: str, taken: set[str]) -> str:
    """`i_t` for the tile loop of `i`; `i_t2`, `i_t3`, ... when `i` is tiled again (two-level tiling)."""
    candidates = chain([f"{name}_t"], (f"{name}_t{number}" for number in count(2)))
    return next(candidate for candidate in candidates if candidate not in taken)
