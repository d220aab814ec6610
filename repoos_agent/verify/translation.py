"""Translation validation: Z3 proves the generated loop nest computes what the source computes.

Independently of isl's dependence analysis, for all parameter values the kernel assumes (the sizes
NumPy's broadcasting requires equal; the generated entry refuses any other call):
(a) every statement instance of the source runs exactly once (none spurious, none
    repeated, none lost), (b) whenever two instances touch the same element and one
    writes, they run in the source's order, and (c) no two iterations of a parallel
    loop touch the same element with a write, other than the loop's private scalars,
    each read of which must see its own iteration's write (`verify.privatization`).
The source semantics come from the model (Python `range` bounds, guards,
subscripts); the generated side is the `LoopNest` both backends print. Only the
"none lost" check uses isl's schedule, as a witness of *where* each instance should
run, after proving that isl's domain holds every instance the source runs; a wrong
witness can only make the check fail.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass

import islpy as isl
import z3

from repoos_agent.codegen.loopnest import WRAPPERS, Block, For, If, Let, LoopNest, Node, plain
from repoos_agent.model.expr import ArrayRef, array_refs, index_refs, names
from repoos_agent.model.kernel import Kernel, Statement, isl_lock
from repoos_agent.schedule import LoweredSchedule
from repoos_agent.verify.privatization import stale_read
from repoos_agent.verify.smt import (
    Execution,
    Occurrence,
    in_domain,
    instance_env,
    instantiate,
    isl_relation,
    isl_set,
    lex_less_equal,
    occurrences,
    original_before,
    parameters,
    subscript,
)

QUERY_TIMEOUT_MS = 5000
DEFERRED = "deferred"
"""The Z3 label of loops not checked yet (`Verification.label`'s third state): a search checks its finalists only."""


@dataclass(frozen=True)
class Verification:
    """`verified` is True (proved), False (refuted, with a counterexample) or None (unknown: a timeout)."""

    verified: bool | None
    reason: str
    counterexample: str | None = None
    queries: int = 0
    elapsed_ms: float = 0.0
    kept: bool = False  # read from the verdicts kept for nests proved before (`verified_nests`), not proved now

    @property
    def label(self) -> str:
        return {True: "true", False: "false", None: "unknown"}[self.verified]


class _Refuted(Exception):
    def __init__(self, reason: str, counterexample: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.counterexample = counterexample


class _Unknown(Exception):
    pass


_Z3_LOCK = threading.Lock()
"""Z3's Python API shares one global context, which is not thread-safe: one proof at a time."""


def verify_loop_nest(kernel: Kernel, lowered: LoweredSchedule, nest: LoopNest, reassociates: bool = False) -> Verification:
    """Prove (a), (b) and (c) for `nest`; a refutation carries parameter values and instances.

    With `reassociates`, the updates of an accumulating statement (`t += e`, `e` not reading `t`)
    to one element may run in any order: (b) then skips those pairs, as legality allowed."""
    with _Z3_LOCK, isl_lock(kernel):
        return _verify(kernel, lowered, nest, reassociates)


def _verify(kernel: Kernel, lowered: LoweredSchedule, nest: LoopNest, reassociates: bool) -> Verification:
    start = time.perf_counter()
    checker = _Checker(kernel, lowered, nest, reassociates)
    try:
        checker.run()
    except _Refuted as refuted:
        return Verification(False, refuted.reason, refuted.counterexample, checker.queries, _ms(start))
    except _Unknown as unknown:
        return Verification(None, f"z3 could not decide within {QUERY_TIMEOUT_MS} ms: {unknown}", None, checker.queries, _ms(start))
    return Verification(
        True,
        "every instance runs exactly once, in dependence order; parallel loops are race-free",
        None,
        checker.queries,
        _ms(start),
    )


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


@dataclass(frozen=True)
class _Access:
    array: str
    indices: tuple
    write: bool


def _accesses(statement: Statement, locals_: set[str]) -> list[_Access]:
    found = []
    target = statement.target
    if isinstance(target, ArrayRef):
        found.append(_Access(target.array, target.indices, True))
        if statement.op != "=":
            found.append(_Access(target.array, target.indices, False))
    else:
        found.append(_Access(target.name, (), True))
        if statement.op != "=":
            found.append(_Access(target.name, (), False))
    indexing = [ref for loop in statement.inner for ref in loop.limit_refs()]
    indexing += index_refs(target) if isinstance(target, ArrayRef) else []
    found += [_Access(ref.array, ref.indices, False) for ref in indexing + array_refs(statement.value)]
    found += [_Access(name, (), False) for name in dict.fromkeys(names(statement.value)) if name in locals_]
    return found


class _Checker:
    def __init__(self, kernel: Kernel, lowered: LoweredSchedule, nest: LoopNest, reassociates: bool) -> None:
        self.kernel = kernel
        self.reassociates = reassociates
        self.lowered = lowered
        self.nest = nest
        self.params = parameters(kernel)
        self.occurrences = occurrences(nest.root)
        self.locals = {a.name for a in kernel.arrays if a.rank == 0}
        self.queries = 0
        self._instances: dict[tuple[int, int], Execution] = {}
        self.assumed = isl_set(kernel.assumed, [], self.params)  # the entry refuses other sizes

    def run(self) -> None:
        for statement in self.kernel.statements:
            self._exactly_once(statement)
        for source in self.kernel.statements:
            for sink in self.kernel.statements:
                self._dependences(source, sink)
        self._parallel_loops(self.nest.root)
        self._private_scalars()

    def _solve(self, formula: z3.BoolRef) -> z3.ModelRef | None:
        solver = z3.Solver()
        solver.set(timeout=QUERY_TIMEOUT_MS)
        solver.add(self.assumed, formula)
        self.queries += 1
        result = solver.check()
        if result == z3.unknown:
            raise _Unknown(solver.reason_unknown())
        return solver.model() if result == z3.sat else None

    def _executions(self, statement: Statement, side: int = 0) -> list[Execution]:
        return [self._instance(o, side) for o in self.occurrences if o.statement == statement.name]

    def _instance(self, occurrence: Occurrence, side: int) -> Execution:
        """An occurrence's variables and constraints, built once per side: a query pairs side 0 with side 1, so
        two instances of one occurrence stay distinct, and every query (a solver of its own) reuses them."""
        key = (id(occurrence), side)
        if key not in self._instances:
            self._instances[key] = instantiate(occurrence, self.params)
        return self._instances[key]

    def _describe(self, model: z3.ModelRef, *instances: tuple[Statement, list]) -> str:
        params = ", ".join(f"{name}={model.eval(var, model_completion=True)}" for name, var in self.params.items())
        parts = []
        for statement, values in instances:
            inside = ", ".join(
                f"{it}={model.eval(v, model_completion=True)}" for it, v in zip(statement.iterators, values, strict=True)
            )
            parts.append(f"{statement.name}({inside})")
        return f"with {params or 'no parameters'}: " + ", ".join(parts)

    def _exactly_once(self, statement: Statement) -> None:
        executions = self._executions(statement)
        for execution in executions:
            env = instance_env(statement, execution.instance, self.params)
            model = self._solve(z3.And(execution.condition, z3.Not(in_domain(statement, env))))
            if model is not None:
                raise _Refuted(
                    f"the loop nest runs an instance of {statement.name} that the source never runs",
                    self._describe(model, (statement, execution.instance)),
                )
        for first_index, first in enumerate(executions):
            for second in self._executions(statement, side=1)[first_index:]:
                if first.occurrence is second.occurrence:
                    different = (
                        z3.Or([first.iterators[n] != second.iterators[n] for n in first.iterators])
                        if first.iterators
                        else z3.BoolVal(False)
                    )
                else:
                    different = z3.BoolVal(True)
                same = z3.And([a == b for a, b in zip(first.instance, second.instance, strict=True)])
                model = self._solve(z3.And(first.condition, second.condition, same, different))
                if model is not None:
                    raise _Refuted(
                        f"the loop nest runs an instance of {statement.name} twice",
                        self._describe(model, (statement, first.instance)),
                    )
        self._none_lost(statement, executions)

    def _none_lost(self, statement: Statement, executions: list[Execution]) -> None:
        """Every source instance x is run where the schedule puts it: at time t = schedule(x)."""
        x = [z3.Int(f"lost.{it}") for it in statement.iterators]
        t = [z3.Int(f"lost.t{k}") for k in range(self.lowered.width)]
        relation = self.lowered.schedule.intersect_domain(statement.domain.to_union_set())
        witness = isl_relation(isl.Map.from_union_map(relation), x, t, self.params)
        covered = []
        for execution in executions:
            pairs = [(var, t[_dimension(name)]) for name, var in execution.iterators.items()]
            condition = z3.substitute(execution.condition, *pairs) if pairs else execution.condition
            instance = [z3.substitute(v, *pairs) if pairs else v for v in execution.instance]
            covered.append(z3.And(condition, *(a == b for a, b in zip(instance, x, strict=True))))
        env = instance_env(statement, x, self.params)
        # The witness must place every instance the source runs: isl's domain must not miss any.
        model = self._solve(z3.And(in_domain(statement, env), z3.Not(isl_set(statement.domain, x, self.params))))
        if model is not None:
            raise _Refuted(
                f"the model's domain of {statement.name} misses an instance the source runs", self._describe(model, (statement, x))
            )
        model = self._solve(z3.And(in_domain(statement, env), witness, z3.Not(z3.Or(covered) if covered else z3.BoolVal(False))))
        if model is not None:
            raise _Refuted(f"the loop nest never runs an instance of {statement.name}", self._describe(model, (statement, x)))

    def _private_scalars(self) -> None:
        """Private scalars are left out of the race check: prove each read sees a value the sequential nest would."""
        read = stale_read(self.kernel, self.nest.root)
        if read is not None:
            raise _Refuted(
                f"private scalar `{read.scalar}` may be read before its thread's copy is written",
                f"{read.statement.name} (line {read.statement.line}) reads `{read.scalar}`",
            )

    def _conflict(
        self,
        source: Statement,
        sink: Statement,
        x: list,
        y: list,
        order_matters: bool = False,
        private: frozenset[str] = frozenset(),
        split: frozenset[str] = frozenset(),
    ) -> z3.BoolRef:
        """Instances x of `source` and y of `sink` touch one element, one writing (`private` scalars aside, and
        the accumulator of a sum in `split`, which a vector loop's lanes add into partial sums of their own)."""
        x_env, y_env = instance_env(source, x, self.params), instance_env(sink, y, self.params)
        reordered_reduction = (
            order_matters and self.reassociates and source is sink and source.is_reduction and source.accumulates_only
        )
        accumulator = source.target.array if isinstance(source.target, ArrayRef) else source.target.name
        clauses = []
        for a in _accesses(source, self.locals):
            for b in _accesses(sink, self.locals):
                if a.array != b.array or not (a.write or b.write) or a.array in private:
                    continue
                if reordered_reduction and a.array == accumulator:
                    continue  # updates of one accumulator may be reordered: reassociation was allowed
                if source is sink and source.name in split and a.array == accumulator:
                    continue  # each lane adds into its own partial sum; `_split_sums` proves the element fixed
                if source is sink and source.name in self.lowered.atomic and a.array == accumulator:
                    continue  # each update is one atomic read-modify-write: threads may interleave them
                pairs = zip(a.indices, b.indices, strict=True)
                clauses.append(z3.And([subscript(i, x_env) == subscript(j, y_env) for i, j in pairs]))
        return z3.Or(clauses) if clauses else z3.BoolVal(False)

    def _dependences(self, source: Statement, sink: Statement) -> None:
        if not self._conflicting(source, sink):
            return
        cases = []
        for first in self._executions(source):
            for second in self._executions(sink, side=1):
                cases.append(
                    (
                        first,
                        second,
                        z3.And(
                            first.condition,
                            second.condition,
                            self._conflict(source, sink, first.instance, second.instance, order_matters=True),
                            original_before(
                                source, sink, instance_env(source, first.instance, {}), instance_env(sink, second.instance, {})
                            ),
                            lex_less_equal(second.time, first.time),
                        ),
                    )
                )
        if not cases:
            return
        model = self._solve(z3.Or([case for _, _, case in cases]))
        if model is not None:
            first, second = next((f, s) for f, s, case in cases if z3.is_true(model.eval(case, model_completion=True)))
            raise _Refuted(
                f"a dependence {source.name} → {sink.name} runs backwards in the generated code",
                self._describe(model, (source, first.instance), (sink, second.instance))
                + f": {sink.name} must run after {source.name} but runs before it",
            )

    def _conflicting(self, source: Statement, sink: Statement, private: frozenset[str] = frozenset()) -> bool:
        for a in _accesses(source, self.locals):
            for b in _accesses(sink, self.locals):
                if a.array == b.array and (a.write or b.write) and a.array not in private:
                    return True
        return False

    def _parallel_loops(self, node: Node) -> None:
        for loop in _parallel_fors(node):
            private = loop.private if loop.parallel and not loop.vector else frozenset()
            under = [o for o in self.occurrences if any(kind == "for" and n is loop for kind, n in o.path)]
            self._split_sums(loop, under)
            for first_occurrence in under:
                for second_occurrence in under:
                    source = self.kernel.statement(first_occurrence.statement)
                    sink = self.kernel.statement(second_occurrence.statement)
                    if not self._conflicting(source, sink, private):
                        continue
                    first = self._instance(first_occurrence, 0)
                    second = self._instance(second_occurrence, 1)
                    cut = first.parallel_prefix[id(loop)]
                    same_outer = [a == b for a, b in zip(first.time[:cut], second.time[:cut], strict=True)]
                    different = first.iterators[loop.iterator] != second.iterators[loop.iterator]
                    model = self._solve(
                        z3.And(
                            first.condition,
                            second.condition,
                            *same_outer,
                            different,
                            self._conflict(source, sink, first.instance, second.instance, private=private, split=loop.lane_sums),
                        )
                    )
                    if model is not None:
                        name = self.lowered.loop_names.get(loop.loop_id, loop.iterator)
                        raise _Refuted(
                            f"loop `{name}` (parallel or vectorized) has a race: two iterations touch one element, one writes",
                            self._describe(model, (source, first.instance), (sink, second.instance)),
                        )

    def _split_sums(self, loop: For, under: list) -> None:
        """A sum the lanes of `loop` split is added into its element once, after the loop: prove the element
        is the same on every iteration of the loop, and that no other statement in it touches the array."""
        for occurrence in under:
            statement = self.kernel.statement(occurrence.statement)
            if statement.name not in loop.lane_sums:
                continue
            accumulator = statement.target.array if isinstance(statement.target, ArrayRef) else statement.target.name
            for other in under:
                touched = {a.array for a in _accesses(self.kernel.statement(other.statement), self.locals)}
                if other.statement != statement.name and accumulator in touched:
                    raise _Refuted(
                        f"the sum {statement.name} is split across the lanes of `{loop.iterator}`, but {other.statement} "
                        f"touches `{accumulator}` in the same loop",
                        f"{other.statement} would see a partial sum",
                    )
            first, second = self._instance(occurrence, 0), self._instance(occurrence, 1)
            cut = first.parallel_prefix[id(loop)]
            x_env = instance_env(statement, first.instance, self.params)
            y_env = instance_env(statement, second.instance, self.params)
            indices = statement.target.indices if isinstance(statement.target, ArrayRef) else ()
            same = [subscript(index, x_env) == subscript(index, y_env) for index in indices]
            model = self._solve(
                z3.And(
                    first.condition,
                    second.condition,
                    *[a == b for a, b in zip(first.time[:cut], second.time[:cut], strict=True)],
                    z3.Not(z3.And(same)) if same else z3.BoolVal(False),
                )
            )
            if model is not None:
                raise _Refuted(
                    f"the sum {statement.name} is split across the lanes of `{loop.iterator}`, but its element moves with it",
                    self._describe(model, (statement, first.instance), (statement, second.instance)),
                )


def _parallel_fors(node: Node) -> list[For]:
    found = []
    if isinstance(node, WRAPPERS):
        found += _parallel_fors(plain(node))
    elif isinstance(node, Block):
        for child in node.children:
            found += _parallel_fors(child)
    elif isinstance(node, If):
        found += _parallel_fors(node.then) + (_parallel_fors(node.otherwise) if node.otherwise else [])
    elif isinstance(node, Let):
        found += _parallel_fors(node.body)
    elif isinstance(node, For):
        if node.parallel or node.vector:
            found.append(node)  # a simd loop promises independent iterations just as a parallel one
        found += _parallel_fors(node.body)
    return found


def _dimension(iterator: str) -> int:
    match = re.fullmatch(r"c(\d+)(_\d+)?", iterator)
    if match is None:
        raise ValueError(f"iterator {iterator} is not a schedule dimension")
    return int(match.group(1))
