"""Array contraction: a temporary stored in fewer dimensions once a schedule fuses its producer into its consumer.

NumPy materializes every temporary in full (`e = np.exp(x - m)` is a whole matrix), and so
does the model: a temporary is an allocation as large as NumPy's. Once a schedule runs the
consumer right after the producer, row by row, only one row of `e` is alive at any time,
and storing it in one row (or one scalar) keeps it in cache instead of streaming it
through memory twice.

Which dimensions may go is decided exactly, with isl, on the lowered schedule. Storing the
temporary by a projection that drops some dimensions makes distinct elements share a cell.
That is safe when no element's value is still needed while another element of its cell is
written: for every flow dependence (a write, then a read of the same element), no write to
another element of the same cell runs strictly between them in the schedule's order. The
flows are memory-based (every earlier write of an element to every later read), a superset
of the values that really flow, so the test can only refuse a contraction, never admit a
wrong one.

Parallel and vector loops run their iterations at once. A contracted temporary accessed in a
parallel loop gets one copy per thread (`private_to`); the parallel loop must enclose every
access, and the schedule's legality already keeps every flow inside one of its iterations.
In a vector loop only a temporary contracted to a scalar is kept (each lane its own copy),
and only when no flow crosses the loop's iterations.
"""

from __future__ import annotations

from itertools import combinations

import islpy as isl

from repoos_agent.legality.dependences import Dependence
from repoos_agent.legality.time_distances import TimeDistances
from repoos_agent.model.kernel import Access, Kernel, Statement
from repoos_agent.schedule import Contraction, LoweredSchedule


def contract_temporaries(
    kernel: Kernel, lowered: LoweredSchedule, deps: tuple[Dependence, ...], distances: TimeDistances
) -> tuple[Contraction, ...]:
    """The temporaries `lowered` lets shrink, each with the dimensions it keeps (the fewest that stay sound)."""
    found = []
    for allocation in kernel.allocations:
        if allocation.role != "temporary":
            continue
        contraction = _contraction(kernel, lowered, deps, distances, allocation.name)
        if contraction is not None:
            found.append(contraction)
    return tuple(found)


def _contraction(
    kernel: Kernel, lowered: LoweredSchedule, deps: tuple[Dependence, ...], distances: TimeDistances, array: str
) -> Contraction | None:
    """How `array` may be stored under `lowered`, or None when it stays whole."""
    accessors = [s for s in kernel.statements if any(a.array == array for a in s.reads + s.writes)]
    if not accessors or not _plainly_accessed(lowered, accessors, array):
        return None
    names = {s.name for s in accessors}
    private_to = _enclosing(lowered, lowered.parallel, names)
    if private_to is False:
        return None
    vectors = _enclosing_all(lowered, frozenset(lowered.vector), names)
    if vectors is None:
        return None
    flows = [d for d in deps if d.kind == "flow" and d.array == array]
    if vectors and any(distances.carries(d, loop_id) for d in flows for loop_id in vectors):
        return None
    rank = kernel.array(array).rank
    schedules = {s.name: distances.schedule_of(s) for s in accessors}
    writes = [(s, access) for s in accessors for access in s.writes if access.array == array]
    for dropped_count in range(rank, 0, -1):
        for dropped in combinations(range(rank), dropped_count):
            kept = tuple(d for d in range(rank) if d not in dropped)
            if vectors and kept:
                continue
            if _cells_hold(kernel, array, rank, kept, flows, writes, schedules):
                return Contraction(array, kept, private_to or None, tuple(sorted(vectors)))
    return None


def _plainly_accessed(lowered: LoweredSchedule, accessors: list[Statement], array: str) -> bool:
    """Affine subscripts only, and no statement that code generation prints in a way of its own
    (a BLAS call, a scatter's atomic update or per-thread copies)."""
    special = {name for call in lowered.blas for name in (call.initializer, call.update)} | lowered.atomic | lowered.privatized
    for statement in accessors:
        if statement.name in special or statement.inner:
            return False
        if any(a.free_dims for a in statement.reads + statement.writes if a.array == array):
            return False
    return True


def _outermost(lowered: LoweredSchedule, loops: frozenset[str], names: set[str]) -> list[str]:
    """The marked loops around some of `names` that no other marked loop around them encloses."""
    around = [loop_id for loop_id in loops if names & set(lowered.statements_in(loop_id))]
    return [
        loop_id
        for loop_id in around
        if not any(
            other != loop_id
            and set(lowered.statements_in(loop_id)) <= set(lowered.statements_in(other))
            and lowered.level_of(other) < lowered.level_of(loop_id)
            for other in around
        )
    ]


def _enclosing(lowered: LoweredSchedule, loops: frozenset[str], names: set[str]) -> str | bool:
    """The one outermost marked loop around every accessor ("" for none); False when a marked
    loop encloses only some of them (their copies could not be private to it)."""
    outer = _outermost(lowered, loops, names)
    if not outer:
        return ""
    if len(outer) == 1 and names <= set(lowered.statements_in(outer[0])):
        return outer[0]
    return False


def _enclosing_all(lowered: LoweredSchedule, loops: frozenset[str], names: set[str]) -> frozenset[str] | None:
    """The marked loops around any accessor, or None when one of them does not enclose them all."""
    around = frozenset(loop_id for loop_id in loops if names & set(lowered.statements_in(loop_id)))
    if any(not names <= set(lowered.statements_in(loop_id)) for loop_id in around):
        return None
    return around


def _cells_hold(
    kernel: Kernel,
    array: str,
    rank: int,
    kept: tuple[int, ...],
    flows: list[Dependence],
    writes: list[tuple[Statement, Access]],
    schedules: dict[str, isl.Map],
) -> bool:
    """Whether storing `array` by its `kept` dimensions keeps every flowing value until its last read."""
    dims = [f"a{d}" for d in range(rank)]
    others = [f"b{d}" for d in range(rank)]
    same_cell = "".join(f"a{d} = b{d} and " for d in kept)
    distinct = " or ".join(f"a{d} != b{d}" for d in range(rank) if d not in kept)
    text = f"{kernel.param_space} -> {{ {array}[{', '.join(dims)}] -> {array}[{', '.join(others)}] : {same_cell}({distinct}) }}"
    sharing = isl.Map.read_from_str(kernel.ctx, text)  # element -> another element of its cell
    clobbers = None  # element -> the times another element of its cell is written
    for statement, access in writes:
        times = sharing.apply_range(access.relation.reverse().apply_range(schedules[statement.name]))
        clobbers = times if clobbers is None else clobbers.union(times)
    if clobbers is None:
        return True
    time_space = clobbers.get_space().range()
    same_time = isl.Map.identity(isl.Space.map_from_set(time_space))
    for flow in flows:
        source, sink = schedules[flow.source.name], schedules[flow.sink.name]
        write = next(a for a in flow.source.writes if a.array == array)
        later = write.relation.apply_range(clobbers).intersect(source.lex_lt_map(same_time))  # write -> clobber after it
        between = later.apply_range(same_time.lex_lt_map(sink))  # write -> reads after that clobber
        if not flow.relation.intersect(between).is_empty():
            return False
    return True
