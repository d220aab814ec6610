"""Vectorized reductions: a vector loop whose only carried dependences are sums into one element.

`q[i] += A[i, j] * p[j]` over `j` carries a dependence on `q[i]` from every iteration to the
next, so its lanes cannot run at once as written, and gcc (keeping Python's rounding, no
fast-math) will not split the sum either. When every instance inside one iteration of the
loops around `j` adds into the same element, the sum can be split: each lane keeps a partial
sum, the partial sums are added at the end of the loop, and the element is updated once.
That reorders the floating-point additions, so it is reassociation, except for NumPy's
products, whose summation order NumPy leaves to BLAS already.

A running NumPy extremum (`m = np.maximum(m, e)`, a row maximum from `np.max(x, axis=1)`) splits
the same way, each lane keeping its own maximum, and exactly: max and min do not round, and
NumPy's are NaN wherever a NaN is, in any order (`Statement.extremum`).

The conditions are exact (isl, on the lowered schedule):
- the dependences the loop carries are all self-dependences of accumulating statements
  (`t += e` or `t *= e`, `e` not reading `t`) or running NumPy extrema on their own target;
- each such statement writes one element for every iteration of the loops around the vector
  loop (the element is fixed across the vector loop, so one update after it is enough);
- no other statement in the loop touches that array, so nothing reads a partial sum.
"""

from __future__ import annotations

import islpy as isl

from repoos_agent.legality.dependences import Dependence
from repoos_agent.legality.time_distances import statement_map
from repoos_agent.model.kernel import Kernel, Statement
from repoos_agent.schedule import LoweredSchedule


def lane_reductions(kernel: Kernel, lowered: LoweredSchedule, loop_id: str, carried: list[Dependence]) -> frozenset[str] | None:
    """The statements whose sums the lanes of vector loop `loop_id` may split, when those sums are all it
    carries; None when the loop carries anything else (or is also parallel: its threads would need the
    same split, which the generated code does not do)."""
    if not carried or loop_id in lowered.parallel:
        return None
    statements = {d.source.name: d.source for d in carried}
    if not all(_splittable_self_dependence(d) for d in carried):
        return None
    members = [kernel.statement(name) for name in lowered.statements_in(loop_id)]
    for statement in statements.values():
        array = statement.writes[0].array
        if any(other is not statement and _touches(other, array) for other in members):
            return None
        if not _one_element_per_iteration(lowered, loop_id, statement):
            return None
    return frozenset(statements)


def _splittable_self_dependence(dependence: Dependence) -> bool:
    statement = dependence.source
    accumulates = (statement.is_reduction and statement.accumulates_only) or statement.extremum is not None
    return (
        dependence.is_self
        and accumulates
        and not statement.irregular
        and not statement.inner
        and dependence.array == statement.writes[0].array
    )


def _touches(statement: Statement, array: str) -> bool:
    return any(access.array == array for access in statement.reads + statement.writes)


def _one_element_per_iteration(lowered: LoweredSchedule, loop_id: str, statement: Statement) -> bool:
    """Whether all instances of `statement` in one iteration of the loops around `loop_id` write one element."""
    schedule = statement_map(lowered.schedule, statement).intersect_domain(statement.domain)
    outer = 2 * lowered.level_of(loop_id) + 1
    prefix = schedule.project_out(isl.dim_type.out, outer, schedule.dim(isl.dim_type.out) - outer)
    same_iteration = prefix.apply_range(prefix.reverse())
    write = statement.writes[0].relation
    same_element = write.apply_range(write.reverse())
    return same_iteration.is_subset(same_element)
