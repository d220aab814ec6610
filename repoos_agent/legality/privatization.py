"""Privatization: scalar temporaries each thread of a parallel loop may keep a copy of.

A local scalar that every iteration of a loop writes before it reads it (`temp2 = 0.0`
at the top of the body) makes the loop carry memory-based anti and output
dependences, since all iterations reuse one variable, although no value passes
from one iteration to the next. With one copy per thread those dependences vanish.

The test is value-based: isl's dataflow analysis (`compute_flow`, every write of a
scalar a must-write that kills the earlier ones) on the schedule being proved,
which computes what the source computes once its memory-based dependences are kept
in order. A scalar is private to loop L when each read inside L takes its value from
a write inside L in the same iteration, and no read outside L takes a value written
inside it (not live-out). Scalar arguments are never privatized: their value comes
from the caller (and ingest lets a kernel return only an array).
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from repoos_agent.model.kernel import Kernel
from repoos_agent.schedule import LoweredSchedule


@dataclass(frozen=True)
class Privatization:
    """Which scalars loop `loop_id` may privatize, and why the others may not."""

    loop_id: str
    private: frozenset[str]
    refused: dict[str, str]  # scalar -> the reason it cannot be private to the loop


class ScalarFlows:
    """Where each read of a scalar takes its value from under one schedule, computed once per scalar:
    every loop of the schedule asks the same question of it."""

    def __init__(self, kernel: Kernel, lowered: LoweredSchedule) -> None:
        self.kernel = kernel
        self.lowered = lowered
        self.schedule = lowered.schedule.intersect_domain(kernel.domains)
        self._flows: dict[str, tuple[isl.UnionSet, isl.UnionMap]] = {}

    def of(self, name: str) -> tuple[isl.UnionSet, isl.UnionMap]:
        """The reading instances with no write before them, and writing instance -> reading instance."""
        if name not in self._flows:
            access = isl.UnionAccessInfo.from_sink(_accesses(self.kernel, "read", name))
            access = access.set_must_source(_accesses(self.kernel, "write", name)).set_schedule_map(self.schedule)
            flow = access.compute_flow()
            self._flows[name] = (flow.get_may_no_source().domain(), flow.get_may_dependence())
        return self._flows[name]


def privatize(flows: ScalarFlows, loop_id: str, scalars: set[str]) -> Privatization:
    """Decide, for each of `scalars`, whether loop `loop_id` may give each thread a copy."""
    members = _members(flows.kernel, flows.lowered, loop_id)
    private, refused = set(), {}
    for name in sorted(scalars):
        reason = _obstacle(flows, loop_id, members, name)
        if reason is None:
            private.add(name)
        else:
            refused[name] = reason
    return Privatization(loop_id, frozenset(private), refused)


def _members(kernel: Kernel, lowered: LoweredSchedule, loop_id: str) -> isl.UnionSet:
    result = isl.UnionSet.empty(isl.Space.params_alloc(kernel.ctx, 0))
    for name in lowered.statements_in(loop_id):
        result = result.union(isl.UnionSet.from_set(kernel.statement(name).domain))
    return result


def _accesses(kernel: Kernel, kind: str, name: str) -> isl.UnionMap:
    result = isl.UnionMap.empty(isl.Space.params_alloc(kernel.ctx, 0))
    for statement in kernel.statements:
        for access in statement.reads if kind == "read" else statement.writes:
            if access.array == name:
                result = result.union(isl.UnionMap.from_map(access.relation))
    return result


def _obstacle(flows: ScalarFlows, loop_id: str, members: isl.UnionSet, name: str) -> str | None:
    """Why scalar `name` cannot be private to the loop, or None when it can."""
    kernel, lowered, schedule = flows.kernel, flows.lowered, flows.schedule
    if kernel.array(name).is_argument:
        return "it is an argument of the kernel"
    unwritten, values = flows.of(name)
    if not unwritten.intersect(members).is_empty():
        return "a read inside the loop takes a value from before the kernel"
    into_loop = values.intersect_range(members)
    in_time = into_loop.intersect_domain(members).apply_domain(schedule).apply_range(schedule)
    if not in_time.subtract(isl.UnionMap.from_map(_same_iteration(lowered, loop_id, kernel.ctx))).is_empty():
        return "a value flows from one iteration to a later one"
    if not into_loop.subtract_domain(members).is_empty():
        return "a read inside the loop takes a value written before the loop"
    if not values.intersect_domain(members).subtract_range(members).is_empty():
        return "a value written inside the loop is read after it (live-out)"
    return None


def _same_iteration(lowered: LoweredSchedule, loop_id: str, ctx: isl.Context) -> isl.Map:
    """Pairs of times in one iteration of the loop: equal up to and including its dimension."""
    width, dim = lowered.width, 2 * lowered.level_of(loop_id) + 1
    a = ", ".join(f"t{k}" for k in range(width))
    b = ", ".join(f"u{k}" for k in range(width))
    equal = " and ".join(f"t{k} = u{k}" for k in range(dim + 1))
    return isl.Map.read_from_str(ctx, f"{{ [{a}] -> [{b}] : {equal} }}")
