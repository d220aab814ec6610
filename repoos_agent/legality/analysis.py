"""`analyze`: a kernel's dependences and, per loop, what it could become (parallel, vector)."""

from __future__ import annotations

from dataclasses import dataclass

from repoos_agent.legality.dependences import dependences
from repoos_agent.legality.lane_reduction import lane_reductions
from repoos_agent.legality.privatization import ScalarFlows
from repoos_agent.legality.prove import array_sums, carried_dependences, parallel_obstacles
from repoos_agent.legality.time_distances import TimeDistances
from repoos_agent.model.kernel import Kernel, isl_lock
from repoos_agent.schedule import ScheduleState


@dataclass(frozen=True)
class LoopReport:
    name: str  # qualified (`S1.j`) where the plain name is shared by several loops
    depth: int
    statements: tuple[str, ...]
    carries: tuple[str, ...]  # descriptions of the dependences it carries
    parallelizable: bool  # carries nothing once the scalars in `private` are private to each thread
    vectorizable: bool  # innermost for all its statements and carries nothing
    innermost: bool
    private: tuple[str, ...] = ()  # scalar temporaries a parallel run gives each thread a copy of
    array_sums: tuple[str, ...] = ()  # all it carries are these sums into arrays: parallel once they may be reordered
    lane_sums: tuple[str, ...] = ()  # all it carries are these sums into one element: vectorizable, its lanes splitting them


@dataclass(frozen=True)
class StatementReport:
    label: str
    line: int
    text: str
    loops: tuple[str, ...]
    reduction: bool


@dataclass(frozen=True)
class Analysis:
    kernel: str
    parameters: tuple[str, ...]
    statements: tuple[StatementReport, ...]
    dependences: tuple[str, ...]
    loops: tuple[LoopReport, ...]


def analyze(kernel: Kernel) -> Analysis:
    """Dependences in words, and for each loop of the source order: carried dependences, parallel, vector."""
    with isl_lock(kernel):
        return _analyze(kernel)


def _analyze(kernel: Kernel) -> Analysis:
    deps = dependences(kernel)
    lowered = ScheduleState(kernel).lower()
    ids = list(dict.fromkeys(i for statement_ids in lowered.loop_ids.values() for i in statement_ids))
    loops, flows, distances = [], ScalarFlows(kernel, lowered), TimeDistances(kernel, lowered)
    for loop_id in ids:
        members = lowered.statements_in(loop_id)
        carried = carried_dependences(kernel, deps, lowered, loop_id, distances=distances)
        obstacles, privatization = (
            parallel_obstacles(kernel, deps, lowered, loop_id, limit=1, flows=flows, distances=distances) if carried else ([], None)
        )
        innermost = all(lowered.loop_ids[s][-1] == loop_id for s in members)
        summed = array_sums(kernel, deps, lowered, loop_id, distances) if obstacles else None
        sums = lane_reductions(kernel, lowered, loop_id, carried) if innermost and carried else None
        loops.append(
            LoopReport(
                name=lowered.qualified_name(loop_id),
                depth=lowered.level_of(loop_id),
                statements=members,
                carries=tuple(d.describe() for d in carried),
                parallelizable=not obstacles,
                vectorizable=innermost and not carried,
                innermost=innermost,
                private=tuple(sorted(privatization.private)) if privatization and not obstacles else (),
                array_sums=tuple(sorted(summed or ())),
                lane_sums=tuple(sorted(sums or ())),
            )
        )
    statements = tuple(StatementReport(s.name, s.line, s.text, s.iterators, s.is_reduction) for s in kernel.statements)
    return Analysis(kernel.name, kernel.parameters, statements, tuple(d.describe() for d in deps), tuple(loops))
