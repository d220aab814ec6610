"""An independent legality oracle: run the source order and the generated nest on small inputs and compare.

isl decides legality (`legality.prove_legal`) and Z3 re-checks the generated loops (`verify.translation`);
this module shares neither. It enumerates every statement instance of the kernel in the source order
(the 2d+1 positions and the loops' ranges, evaluated in Python), and every instance the generated
`LoopNest` runs, in the order it runs them (interpreted in Python, not compiled), with the array cells
each instance reads and writes, index arrays read from the real inputs. The schedule is refuted when
two accesses to one cell, one of them a write, run in another order than the source's; iterations of
a parallel or vector loop are unordered, so two such accesses in different iterations are refuted
unless they are a reduction the generated code makes commute (atomic updates, per-thread copies, lane
sums, a BLAS call) and the project's reassociation rule allows it. Storage the generated code changes
(contracted temporaries, scalars private to a thread) is checked by value instead: every read must
take the value of the same write instance as in the source order.

Its verdict holds for the inputs given, not for all sizes: a refutation is a counterexample, an
acceptance is evidence.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property

from repoos_agent.codegen import loopnest as nest_ir
from repoos_agent.codegen.loopnest import LoopNest, build_loop_nest
from repoos_agent.model.affine import AffineExpr, Bound
from repoos_agent.model.expr import ArrayRef, IndexRead, Name, array_refs, index_refs, names
from repoos_agent.model.kernel import Condition, Kernel, Statement
from repoos_agent.schedule import LoweredSchedule

Cell = tuple[str, tuple[int, ...]]


@dataclass(frozen=True)
class CellAccess:
    """One array element (or local scalar, with no subscript) an instance reads or writes."""

    array: str
    index: tuple[int, ...]
    kind: str  # "read" or "write"

    @property
    def cell(self) -> Cell:
        return (self.array, self.index)


@dataclass(frozen=True)
class Instance:
    """One statement instance with the cells it touches, in the order it touches them."""

    statement: str
    iteration: tuple[int, ...]
    accesses: tuple[CellAccess, ...]

    def __str__(self) -> str:
        return f"{self.statement}({', '.join(str(v) for v in self.iteration)})"


@dataclass(frozen=True)
class Tag:
    """An iteration of a loop whose iterations run unordered: a parallel loop's threads, a vector loop's lanes."""

    instance: int  # which execution of the loop (a new one each time the code enters it)
    loop_id: str | None
    kind: str  # "threads" or "lanes"
    iteration: int


@dataclass(frozen=True)
class Executed:
    """Where the generated nest ran an instance: its place in the sequential order and the unordered loops around it."""

    seq: int
    tags: tuple[Tag, ...]


@dataclass(frozen=True)
class Conflict:
    """Two accesses to one cell that the generated nest runs out of the source's order (or at once)."""

    array: str
    index: tuple[int, ...]
    first: str  # the instance the source runs first
    second: str
    reason: str

    def __str__(self) -> str:
        where = f"{self.array}[{', '.join(str(i) for i in self.index)}]" if self.index else self.array
        if not self.array:  # an instance run twice, never, or that the source never runs
            return f"{self.first}: {self.reason}"
        if self.first == self.second:
            return f"{where}: {self.first} {self.reason}"
        return f"{where}: {self.first} then {self.second} in the source; {self.reason}"


@dataclass(frozen=True)
class OracleVerdict:
    legal: bool
    conflicts: tuple[Conflict, ...]
    instances: int


def evaluate(expr: AffineExpr | IndexRead, env: Mapping[str, int], values: Mapping[str, object]) -> int:
    """An affine subscript's value, or an index array's element (read from the inputs) plus its offset."""
    if isinstance(expr, AffineExpr):
        return expr.value(env)
    array = values[expr.ref.array]
    return int(array[tuple(evaluate(i, env, values) for i in expr.ref.indices)]) + expr.offset  # type: ignore[index]


def _bound(bound: Bound, env: Mapping[str, int]) -> int:
    pieces = [piece.value(env) for piece in bound.pieces]
    return (max if bound.combine == "max" else min)(pieces) if len(pieces) > 1 else pieces[0]


_COMPARE: dict[str, Callable[[int, int], bool]] = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


def _holds(condition: Condition, env: Mapping[str, int]) -> bool:
    return _COMPARE[condition.op](condition.left.value(env), condition.right.value(env))


class KernelRun:
    """A kernel at one set of inputs: its instances in source order, each with the cells it touches."""

    def __init__(self, kernel: Kernel, values: Mapping[str, object]) -> None:
        self.kernel = kernel
        self.values = values
        self.parameters = kernel.parameter_values(values)
        self.locals = frozenset(a.name for a in kernel.arrays if a.rank == 0)

    @cached_property
    def instances(self) -> tuple[Instance, ...]:
        """Every statement instance, sorted by the source's 2d+1 times."""
        width = 2 * self.kernel.depth + 1
        timed = []
        for statement in self.kernel.statements:
            for iteration in self._iterations(statement):
                time: list[int] = []
                for position, loop, value in zip(statement.positions, statement.loops, iteration, strict=False):
                    time += [position, value if loop.step > 0 else -value]
                time.append(statement.positions[-1])
                timed.append((tuple(time + [0] * (width - len(time))), statement, iteration))
        timed.sort(key=lambda entry: entry[0])
        return tuple(Instance(s.name, it, self._accesses(s, it)) for _, s, it in timed)

    def instance_count(self, limit: int) -> int:
        """How many instances the source runs, counted up to `limit` only (then `limit + 1`): cheap, for choosing sizes."""
        count = 0
        for statement in self.kernel.statements:
            for _ in self._iterations(statement):
                count += 1
                if count > limit:
                    return count
        return count

    @cached_property
    def index_of(self) -> dict[tuple[str, tuple[int, ...]], int]:
        return {(i.statement, i.iteration): k for k, i in enumerate(self.instances)}

    def _iterations(self, statement: Statement) -> Iterator[tuple[int, ...]]:
        env = dict(self.parameters)

        def walk(level: int, found: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
            if level == len(statement.loops):
                if all(_holds(guard, env) for guard in statement.guards):
                    yield found
                return
            loop = statement.loops[level]
            for value in range(_bound(loop.start, env), _bound(loop.stop, env), loop.step):
                env[loop.name] = value
                yield from walk(level + 1, (*found, value))

        yield from walk(0, ())

    def _accesses(self, statement: Statement, iteration: tuple[int, ...]) -> tuple[CellAccess, ...]:
        """The cells in the order the instance touches them: per run of its dynamic loops, the reads (bounds, index
        arrays, the target when it updates it, the value) and then the write."""
        env = dict(self.parameters) | dict(zip(statement.iterators, iteration, strict=True))
        found: list[CellAccess] = []
        reads = [*(index_refs(statement.target) if isinstance(statement.target, ArrayRef) else [])]
        if statement.op != "=":
            reads.append(statement.target)
        reads += array_refs(statement.value)
        scalars = [n for n in dict.fromkeys(names(statement.value)) if n in self.locals]

        def cell(ref: ArrayRef | Name) -> tuple[str, tuple[int, ...]]:
            if isinstance(ref, Name):
                return ref.name, ()
            return ref.array, tuple(evaluate(index, env, self.values) for index in ref.indices)

        def run(level: int) -> None:
            if level == len(statement.inner):
                found.extend(CellAccess(*cell(ref), "read") for ref in reads)
                found.extend(CellAccess(name, (), "read") for name in scalars)
                found.append(CellAccess(*cell(statement.target), "write"))
                return
            loop = statement.inner[level]
            for limit in (loop.start, loop.stop):
                if isinstance(limit, IndexRead):
                    found.extend(CellAccess(*cell(ref), "read") for ref in index_refs(limit.ref) + [limit.ref])
            for value in range(evaluate(loop.start, env, self.values), evaluate(loop.stop, env, self.values)):
                env[loop.name] = value
                run(level + 1)

        run(0)
        return tuple(found)

    def kind(self, index: int, cell: Cell) -> str:
        """How instance `index` touches `cell`: "read", "write", or "update" (its target, by a statement that commutes)."""
        instance = self.instances[index]
        if not any(a.kind == "write" and a.cell == cell for a in instance.accesses):
            return "read"
        statement = self.kernel.statement(instance.statement)
        return "update" if commutes(statement) and cell[0] == _target(statement) else "write"

    @cached_property
    def runs(self) -> dict[Cell, list[list[int]]]:
        """Per cell some instance writes, the instances touching it in source order, grouped into runs that commute
        among themselves: reads, or updates by one statement; a plain write is a run of its own."""
        touching: dict[Cell, list[int]] = defaultdict(list)
        for index, instance in enumerate(self.instances):
            for cell in dict.fromkeys(a.cell for a in instance.accesses):
                touching[cell].append(index)
        grouped: dict[Cell, list[list[int]]] = {}
        for cell, indices in touching.items():
            kinds = [(self.kind(k, cell), self.instances[k].statement) for k in indices]
            if all(kind == "read" for kind, _ in kinds):
                continue
            runs: list[list[int]] = []
            for position, (k, (kind, statement)) in enumerate(zip(indices, kinds, strict=True)):
                previous = kinds[position - 1] if position else None
                same = previous is not None and previous[0] == kind and (kind == "read" or previous[1] == statement)
                if same and kind != "write":
                    runs[-1].append(k)
                else:
                    runs.append([k])
            grouped[cell] = runs
        return grouped

    def executed(self, nest: LoopNest) -> tuple[list[tuple[int, Executed]], list[tuple[str, tuple[int, ...]]]]:
        """The instances `nest` runs (as indices into `instances`), in the order it runs them, and those it runs
        that the source never does."""
        ran: list[tuple[int, Executed]] = []
        strays: list[tuple[str, tuple[int, ...]]] = []
        counter = iter(range(1 << 62))
        env = dict(self.parameters)

        def visit(node: nest_ir.Node, tags: tuple[Tag, ...]) -> None:
            if isinstance(node, nest_ir.Block):
                for child in node.children:
                    visit(child, tags)
            elif isinstance(node, nest_ir.Call):
                key = (node.statement, tuple(_int(arg, env) for arg in node.args))
                if key in self.index_of:
                    ran.append((self.index_of[key], Executed(next(counter), tags)))
                else:
                    strays.append(key)
            elif isinstance(node, nest_ir.If):
                if _int(node.cond, env):
                    visit(node.then, tags)
                elif node.otherwise is not None:
                    visit(node.otherwise, tags)
            elif isinstance(node, nest_ir.Let):
                env[node.iterator] = _int(node.value, env)
                visit(node.body, tags)
            else:
                unordered = "threads" if node.parallel else "lanes" if node.vector else None
                instance = next(counter)
                env[node.iterator] = _int(node.init, env)
                while _int(node.cond, env):
                    inner = tags + (Tag(instance, node.loop_id, unordered, env[node.iterator]),) if unordered else tags
                    visit(node.body, inner)
                    env[node.iterator] += node.step

        visit(nest.root, ())
        return ran, strays


def _int(expr: nest_ir.IntExpr, env: Mapping[str, int]) -> int:
    """An isl AST expression's value (comparisons and `and`/`or` as 0 or 1)."""
    if isinstance(expr, nest_ir.IntConst):
        return expr.value
    if isinstance(expr, nest_ir.Var):
        return env[expr.name]
    op, args = expr.op, expr.args
    if op == "select":
        return _int(args[1], env) if _int(args[0], env) else _int(args[2], env)
    if op == "and":
        return int(all(_int(a, env) for a in args))
    if op == "or":
        return int(any(_int(a, env) for a in args))
    values = [_int(a, env) for a in args]
    if op == "neg":
        return -values[0]
    if op in _COMPARE:
        return int(_COMPARE[op](values[0], values[1]))
    return _ARITHMETIC[op](values[0], values[1])


_ARITHMETIC: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "div": lambda a, b: a // b if a % b == 0 else int(a / b),
    "fdiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "min": min,
    "max": max,
}


def commutes(statement: Statement) -> bool:
    """Whether the statement's instances may commute on their target at all: `t += e` or `t *= e` with `e` not
    reading `t`, or a running NumPy extremum (`t = np.maximum(t, e)`)."""
    return (statement.is_reduction and statement.accumulates_only) or statement.extremum is not None


class Rules:
    """Which reorderings of one statement's updates of an element the generated code makes and the project allows."""

    def __init__(self, lowered: LoweredSchedule, allow_reassociation: bool, nest: LoopNest) -> None:
        self.allow = allow_reassociation
        self.atomic = lowered.atomic | lowered.privatized
        self.blas = {call.update for call in lowered.blas}
        self.lane_sums = {node.loop_id: node.lane_sums for node in _loops(nest.root) if node.lane_sums}

    def reordered(self, statement: Statement) -> bool:
        """Two instances run one after the other, in the other order than the source's: BLAS sums a product's
        updates in its own order; otherwise only reassociation allows it."""
        if statement.name in self.blas:
            return self.allow or statement.product
        return self.allow and statement.is_reduction and statement.accumulates_only

    def unordered(self, statement: Statement, tag: Tag) -> bool:
        """Two instances in different iterations of an unordered loop: the threads update it atomically (or in
        copies), or the lanes split it; reassociation allows that, or the order was never the source's."""
        if tag.kind == "threads":
            return statement.name in self.atomic and (self.allow or statement.product)
        own_order = statement.product or statement.pairwise or statement.extremum is not None
        return statement.name in self.lane_sums.get(tag.loop_id, frozenset()) and (self.allow or own_order)


def _loops(node: nest_ir.Node) -> Iterator[nest_ir.For]:
    if isinstance(node, nest_ir.For):
        yield node
        yield from _loops(node.body)
    elif isinstance(node, nest_ir.Block):
        for child in node.children:
            yield from _loops(child)
    elif isinstance(node, nest_ir.If):
        yield from _loops(node.then)
        if node.otherwise is not None:
            yield from _loops(node.otherwise)
    elif isinstance(node, nest_ir.Let):
        yield from _loops(node.body)


def _apart(first: Executed, second: Executed) -> Tag | None:
    """The unordered loop that runs the two in different iterations, or None when one runs before the other."""
    theirs = {tag.instance: tag.iteration for tag in second.tags}
    for tag in first.tags:
        if tag.instance in theirs and theirs[tag.instance] != tag.iteration:
            return tag
    return None


Stored = Callable[[tuple[int, ...], Executed], tuple]
"""Where the generated code keeps an element of a renamed array, accessed at a place in the nest."""


class Checker:
    """The checks of one schedule against the source order, on one `KernelRun`."""

    def __init__(self, run: KernelRun, lowered: LoweredSchedule, allow_reassociation: bool) -> None:
        self.run = run
        self.kernel = run.kernel
        self.nest = build_loop_nest(run.kernel, lowered)
        self.rules = Rules(lowered, allow_reassociation, self.nest)
        self.lowered = lowered
        self.conflicts: list[Conflict] = []

    def verdict(self, limit: int) -> OracleVerdict:
        ran, strays = self.run.executed(self.nest)
        instances = self.run.instances
        when: list[Executed | None] = [None] * len(instances)
        for statement, iteration in strays:
            self.conflicts.append(
                Conflict("", (), f"{statement}{iteration}", "", "the generated nest runs an instance the source never runs")
            )
        for index, executed in ran:
            if when[index] is not None:
                self._add(index, index, ("", ()), "the generated nest runs this instance twice")
            when[index] = executed
        self.conflicts += [
            Conflict("", (), str(instances[k]), "", "the generated nest never runs this instance")
            for k, w in enumerate(when)
            if w is None
        ]
        if not self.conflicts:
            times = [w for w in when if w is not None]
            renamed = self._renamed_storage()
            self._check_order(times, renamed)
            self._check_values(times, renamed)
            self._check_copies(times)
        return OracleVerdict(not self.conflicts, tuple(self.conflicts[:limit]), len(instances))

    def _add(self, first: int, second: int, cell: Cell, reason: str) -> None:
        instances = self.run.instances
        self.conflicts.append(Conflict(cell[0], cell[1], str(instances[first]), str(instances[second]), reason))

    def _renamed_storage(self) -> dict[str, Stored]:
        """The arrays the generated code stores otherwise than the source (contracted temporaries, scalars
        private to a parallel loop), each with where it keeps an element."""
        renamed: dict[str, Stored] = {}
        for contraction in self.lowered.contracted:
            owners = {contraction.private_to, *contraction.vector_loops} - {None}

            def stored(index: tuple[int, ...], at: Executed, kept=contraction.kept, owners=owners) -> tuple:
                copies = tuple((t.instance, t.iteration) for t in at.tags if t.loop_id in owners)
                return (tuple(index[d] for d in kept), copies)

            renamed[contraction.array] = stored
        for node in _loops(self.nest.root):
            for scalar in node.private:

                def private(index: tuple[int, ...], at: Executed, loop_id=node.loop_id) -> tuple:
                    return (index, tuple((t.instance, t.iteration) for t in at.tags if t.loop_id == loop_id))

                renamed[scalar] = private
        return renamed

    def _check_order(self, times: list[Executed], renamed: Mapping[str, Stored]) -> None:
        """Every two conflicting accesses to one cell keep the source's order, up to the reductions allowed."""
        for cell, runs in self.run.runs.items():
            if cell[0] in renamed:
                continue
            for position, run in enumerate(runs):
                if len(run) > 1 and self.run.kind(run[0], cell) == "update":
                    self._check_updates(cell, run, times)
                if position:
                    self._check_before(cell, runs[position - 1], run, times)
            if self.conflicts:
                return

    def _check_updates(self, cell: Cell, run: list[int], times: list[Executed]) -> None:
        """The updates of one statement to one element: any two swapped or run at once must be allowed."""
        statement = self.kernel.statement(self.run.instances[run[0]].statement)
        tags = {tag for k in run for tag in times[k].tags}
        if self.rules.reordered(statement) and all(self.rules.unordered(statement, tag) for tag in tags):
            return
        for position, first in enumerate(run):
            for second in run[position + 1 :]:
                apart = _apart(times[first], times[second])
                if apart is not None and not self.rules.unordered(statement, apart):
                    how = "atomic" if apart.kind == "threads" else "split across lanes"
                    self._add(
                        first,
                        second,
                        cell,
                        f"they run at once in {_loop_text(self.lowered, apart)}, and the update is not {how} there "
                        "(or not allowed to be)",
                    )
                    return
                if apart is None and times[second].seq < times[first].seq and not self.rules.reordered(statement):
                    self._add(first, second, cell, "the generated nest swaps two updates of a sum whose order the source fixes")
                    return

    def _check_before(self, cell: Cell, before: list[int], after: list[int], times: list[Executed]) -> None:
        """Everything in run `before` runs before everything in run `after` (so, by transitivity, before all later runs)."""
        latest = max(before, key=lambda k: times[k].seq)
        earliest = min(after, key=lambda k: times[k].seq)
        if times[latest].seq > times[earliest].seq:
            self._add(latest, earliest, cell, "the generated nest runs the second first")
            return
        where: dict[int, dict[int, tuple[int, int]]] = defaultdict(dict)  # loop instance -> iteration -> one of each run
        for side, group in enumerate((before, after)):
            for k in group:
                for tag in times[k].tags:
                    where[tag.instance].setdefault(tag.iteration, (-1, -1))
                    first, second = where[tag.instance][tag.iteration]
                    where[tag.instance][tag.iteration] = (k, second) if side == 0 else (first, k)
        for loop_instance, iterations in where.items():
            firsts = {it: pair[0] for it, pair in iterations.items() if pair[0] >= 0}
            seconds = {it: pair[1] for it, pair in iterations.items() if pair[1] >= 0}
            for iteration, first in firsts.items():
                second = next((k for other, k in seconds.items() if other != iteration), None)
                if second is not None:
                    tag = next(t for t in times[first].tags if t.instance == loop_instance)
                    self._add(first, second, cell, f"they run at once in {_loop_text(self.lowered, tag)}")
                    return

    def _check_values(self, times: list[Executed], renamed: Mapping[str, Stored]) -> None:
        """Storage the generated code changes: each read takes the value of the same write instance as in the source,
        and no two iterations of an unordered loop touch one stored cell where one of them writes it."""
        if not renamed:
            return
        instances = self.run.instances
        source: dict[tuple[int, int], int | None] = {}
        last: dict[Cell, int] = {}
        for k, instance in enumerate(instances):
            for position, access in enumerate(instance.accesses):
                if access.array in renamed and access.kind == "read":
                    source[(k, position)] = last.get(access.cell)
                elif access.array in renamed:
                    last[access.cell] = k
        stored_last: dict[tuple, int] = {}
        touched: dict[tuple, list[tuple[int, str]]] = defaultdict(list)
        for k in sorted(range(len(instances)), key=lambda k: times[k].seq):
            for position, access in enumerate(instances[k].accesses):
                if access.array not in renamed:
                    continue
                stored = (access.array, renamed[access.array](access.index, times[k]))
                touched[stored].append((k, access.kind))
                if access.kind == "write":
                    stored_last[stored] = k
                    continue
                writer, expected = stored_last.get(stored), source[(k, position)]
                if writer != expected:
                    got = str(instances[writer]) if writer is not None else "no write"
                    wanted = str(instances[expected]) if expected is not None else "no write"
                    self._add(k, k, access.cell, f"reads the value {got} wrote, where the source reads {wanted}'s")
                    return
        for stored, accesses in touched.items():
            for position, (k, kind) in enumerate(accesses):
                for other, other_kind in accesses[position + 1 :]:
                    tag = _apart(times[k], times[other])
                    if tag is not None and "write" in (kind, other_kind):
                        self._add(
                            k,
                            other,
                            (stored[0], stored[1][0]),
                            f"they touch one stored cell at once in {_loop_text(self.lowered, tag)}",
                        )
                        return

    def _check_copies(self, times: list[Executed]) -> None:
        """A parallel loop whose sums go to per-thread copies: nothing else in it may touch the array, whose name
        there means the thread's copy."""
        sums = self.lowered.privatized
        if not sums:
            return
        instances = self.run.instances
        copied = {_target(self.kernel.statement(name)): name for name in sums}
        regions = {t.instance for k, i in enumerate(instances) if i.statement in sums for t in times[k].tags if t.kind == "threads"}
        for k, instance in enumerate(instances):
            if instance.statement in sums or not regions & {t.instance for t in times[k].tags}:
                continue
            for access in instance.accesses:
                if access.array in copied:
                    sums_of = copied[access.array]
                    reason = f"runs in the parallel loop whose sums {sums_of} go to per-thread copies of `{access.array}`"
                    self._add(k, k, access.cell, reason)
                    return


def _target(statement: Statement) -> str:
    return statement.target.array if isinstance(statement.target, ArrayRef) else statement.target.name


def _loop_text(lowered: LoweredSchedule, tag: Tag) -> str:
    what = "parallel" if tag.kind == "threads" else "vector"
    name = lowered.loop_names.get(tag.loop_id, "?") if tag.loop_id else "?"
    return f"{what} loop `{name}`"


def check_schedule(run: KernelRun, lowered: LoweredSchedule, allow_reassociation: bool = False, limit: int = 5) -> OracleVerdict:
    """Whether the nest generated for `lowered` keeps every conflicting pair of accesses of `run` in the source's
    order, up to the reductions the generated code makes commute and the project allows (at most `limit` conflicts shown)."""
    return Checker(run, lowered, allow_reassociation).verdict(limit)


def small_sizes(sizes: Mapping[str, int], fits: Callable[[dict[str, int]], bool]) -> dict[str, int]:
    """The largest uniform shrink of `sizes` (each at least 2) that `fits`: a few thousand instances."""
    for scale in (1.0, 0.5, 0.35, 0.25, 0.18, 0.12, 0.08, 0.05, 0.0):
        shrunk = {name: max(2, min(value, round(value * scale))) for name, value in sizes.items()}
        if fits(shrunk):
            return shrunk
    raise ValueError(f"no small sizes fit for {dict(sizes)}")
