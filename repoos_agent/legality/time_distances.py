"""How far in time a kernel's dependences reach under one schedule: what legality and contraction both ask."""

from __future__ import annotations

import islpy as isl

from repoos_agent.legality.dependences import Dependence
from repoos_agent.model.kernel import Kernel, Statement
from repoos_agent.schedule import LoweredSchedule


def statement_map(schedule: isl.UnionMap, statement: Statement) -> isl.Map:
    """`statement`'s instances to their time under `schedule`."""
    return isl.Map.from_union_map(schedule.intersect_domain(isl.UnionSet.from_set(statement.domain)))


class TimeDistances:
    """How far in time each dependence reaches under one schedule, computed once per dependence.

    Whether a loop carries a dependence is then a test on a small set of distance vectors (zero
    before the loop's dimension, non-zero at it), where mapping every dependence through the
    schedule again for each loop took most of a legality check."""

    def __init__(self, kernel: Kernel, lowered: LoweredSchedule) -> None:
        self.kernel, self.lowered = kernel, lowered
        self._schedules: dict[str, isl.Map] = {}
        self._distances: dict[Dependence, isl.Set] = {}
        self._carried: dict[int, isl.Set] = {}

    def carries(self, dependence: Dependence, loop_id: str) -> bool:
        """Whether some pair of `dependence` runs at different iterations of loop `loop_id` and the same
        iteration of every loop around it."""
        dim = 2 * self.lowered.level_of(loop_id) + 1
        return not self._distances_of(dependence).intersect(self._carried_at(dim)).is_empty()

    def _distances_of(self, dependence: Dependence) -> isl.Set:
        if dependence not in self._distances:
            source, sink = self.schedule_of(dependence.source), self.schedule_of(dependence.sink)
            self._distances[dependence] = dependence.relation.apply_domain(source).apply_range(sink).deltas()
        return self._distances[dependence]

    def schedule_of(self, statement: Statement) -> isl.Map:
        """`statement`'s instances to their time under the schedule (cached)."""
        if statement.name not in self._schedules:
            self._schedules[statement.name] = statement_map(self.lowered.schedule, statement)
        return self._schedules[statement.name]

    def _carried_at(self, dim: int) -> isl.Set:
        """Distance vectors zero before `dim` and non-zero at `dim`."""
        if dim not in self._carried:
            names = ", ".join(f"d{k}" for k in range(self.lowered.width))
            condition = " and ".join([f"d{k} = 0" for k in range(dim)] + [f"d{dim} != 0"])
            self._carried[dim] = isl.Set.read_from_str(self.kernel.ctx, f"{{ [{names}] : {condition} }}")
        return self._carried[dim]
