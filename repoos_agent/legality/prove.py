"""Proving a schedule legal: every dependence stays forward in time, marked loops carry none.

The proof is exact (isl sets, for all parameter values). A rejected schedule
gets feedback that names the broken dependence (statements, lines, array,
distance), the primitive that broke it, a concrete pair of instances, and, where
one is cheap to find, a legal alternative.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace
from weakref import WeakKeyDictionary

import islpy as isl

from repoos_agent.legality.contraction import contract_temporaries
from repoos_agent.legality.dependences import Dependence, dependences
from repoos_agent.legality.lane_reduction import lane_reductions
from repoos_agent.legality.privatization import Privatization, ScalarFlows, privatize
from repoos_agent.legality.time_distances import TimeDistances, statement_map
from repoos_agent.legality.verdict import Verdict, Violation
from repoos_agent.model.kernel import Kernel, isl_lock
from repoos_agent.schedule import Contraction, LoweredSchedule, Primitive, Schedule, ScheduleError, ScheduleState, parse_schedule
from repoos_agent.schedule.primitives import PRIMITIVES, parallelize, skew

KEPT_VERDICTS = 1024
"""Verdicts a kernel keeps (`prove_legal`): more than a search of hundreds of candidates asks for."""

_KEPT: WeakKeyDictionary[Kernel, OrderedDict[tuple[str, bool, bool], LegalityVerdict]] = WeakKeyDictionary()

MAX_EXPLAINED = 5
"""Broken dependences explained per verdict: enough to act on, few enough to stay fast and readable."""


@dataclass(frozen=True)
class LegalityVerdict:
    """The outcome of the proof (no build, no run)."""

    verdict: Verdict  # "legal", "invalid", "illegal" or "reassociation"
    schedule: str  # canonical text ("" for the identity)
    feedback: str
    violations: tuple[Violation, ...] = ()
    parallel_loops: tuple[str, ...] = ()
    suggestion: str | None = None
    lowered: LoweredSchedule | None = None
    reassociates: bool = False  # legal only because reductions may be reordered
    invalid_kind: str = ""  # for "invalid": "unparseable", "unknown_name" (a loop or statement the kernel lacks) or "inapplicable"

    @property
    def legal(self) -> bool:
        return self.verdict == "legal"


def prove_legal(
    kernel: Kernel, schedule: str | Schedule, allow_reassociation: bool = False, explain: bool = True
) -> LegalityVerdict:
    """Parse, apply and prove `schedule` on `kernel`; never raises for a bad schedule.

    `explain=False` skips what only a reader needs (parallel loops, suggestions, the pair of instances a parallel
    loop carries): a bare verdict.

    A verdict is a value of its question, so the kernel keeps the last `KEPT_VERDICTS` it gave: a search proves
    its ideas to choose among them, then evaluates the ones it chose, and proposes some again. An explained verdict
    answers the bare question too."""
    text = schedule if isinstance(schedule, str) else str(schedule)
    with isl_lock(kernel):
        kept = _KEPT.setdefault(kernel, OrderedDict())
        for key in ((text, allow_reassociation, explain), (text, allow_reassociation, True)):
            if key in kept:
                kept.move_to_end(key)
                return kept[key]
        verdict = _prove(kernel, schedule, allow_reassociation, explain)
        kept[(text, allow_reassociation, explain)] = verdict
        while len(kept) > KEPT_VERDICTS:
            kept.popitem(last=False)
        return verdict


def _prove(kernel: Kernel, schedule: str | Schedule, allow_reassociation: bool, explain: bool) -> LegalityVerdict:
    text = schedule if isinstance(schedule, str) else str(schedule)
    try:
        parsed = parse_schedule(schedule) if isinstance(schedule, str) else schedule
    except ScheduleError as error:
        return LegalityVerdict("invalid", text.strip(), f"invalid: {error}", invalid_kind="unparseable")
    try:
        lowered = ScheduleState(kernel).apply_all(parsed).lower()
    except ScheduleError as error:
        unknown = error.reason.startswith(("unknown loop", "unknown statement"))
        kind = "unknown_name" if unknown else "inapplicable"
        return LegalityVerdict("invalid", text.strip(), f"invalid: {error}", invalid_kind=kind)
    deps = dependences(kernel)
    reduction_candidates = [d for d in deps if _may_be_reassociation(d)]
    broken = _order_violations(kernel, [d for d in deps if d not in reduction_candidates], lowered, limit=MAX_EXPLAINED)
    reduction_violations = _order_violations(kernel, reduction_candidates, lowered)
    reordered = [d for d in reduction_violations if _is_reassociation(d, lowered)]
    broken += [d for d in reduction_violations if d not in reordered][:MAX_EXPLAINED]
    distances = TimeDistances(kernel, lowered)
    parallel, private, atomic, lane_sums = _parallel_violations(kernel, deps, lowered, distances, explain)
    lowered = replace(lowered, private=private, atomic=atomic, lane_sums=lane_sums)
    if not (broken or parallel) and kernel.allocations:
        lowered = replace(lowered, contracted=contract_temporaries(kernel, lowered, deps, distances))
    idle = sorted(lowered.privatized - atomic)
    if idle and not (broken or parallel):
        reason = f"privatize({idle[0]}): no parallel loop carries {idle[0]}'s sum; parallelize a loop around it"
        return LegalityVerdict("invalid", str(parsed), f"invalid: {reason}", invalid_kind="inapplicable")
    free_loops = _parallel_loops(kernel, deps, lowered, distances) if explain else ()
    parallel_loops = tuple(name for name, _ in free_loops)
    canonical = str(parsed)
    # BLAS sums in its own blocked order. NumPy's `@` leaves the order to BLAS, so for its products that
    # is the original's order; a product written as loops fixed its order, and the call reorders it.
    summed_by_blas = [c.update for c in lowered.blas if not kernel.statement(c.update).product]
    if summed_by_blas and not (broken or parallel or reordered) and not allow_reassociation:
        statements = ", ".join(f"{name} (line {kernel.statement(name).line})" for name in summed_by_blas)
        feedback = (
            f"reassociation: `blas` sums the reduction {statements} in OpenBLAS's order, not the loops' order "
            "the source wrote; results may differ in the last bits. Allow reassociation to accept it."
        )
        return LegalityVerdict("reassociation", canonical, feedback, (), parallel_loops, None, lowered)
    # As for BLAS: the order of a NumPy product's sum is not the source's to fix; a scatter's is.
    reordered_sums = sorted(name for name in atomic if not kernel.statement(name).product)
    if reordered_sums and not (broken or parallel or allow_reassociation):
        statements = ", ".join(f"{name} (line {kernel.statement(name).line})" for name in reordered_sums)
        how = "in per-thread copies, added up" if set(reordered_sums) <= lowered.privatized else "atomically,"
        feedback = (
            f"reassociation: the parallel loop updates the scatter {statements} {how} in whatever order its "
            "threads arrive; floating-point sums may differ in the last bits. Allow reassociation to accept it."
        )
        return LegalityVerdict("reassociation", canonical, feedback, (), parallel_loops, None, lowered)
    # A product's sum is BLAS's to order in NumPy's own code, and `np.sum`'s NumPy's (pairwise, eight running
    # sums): splitting it into lanes reorders nothing the source fixed. A running extremum's lanes round nothing.
    split = {loop_id: sums for loop_id, sums in lane_sums.items() if not all(_order_not_the_sources(kernel, n) for n in sums)}
    if split and not (broken or parallel or reordered) and not allow_reassociation:
        feedback = "reassociation: " + "; ".join(f"the {_lanes_split(kernel, lowered, *pair)}" for pair in sorted(split.items()))
        feedback += "; results may differ in the last bits. Allow reassociation to accept it."
        return LegalityVerdict("reassociation", canonical, feedback, (), parallel_loops, None, lowered)
    if broken or parallel or (reordered and not allow_reassociation):
        violations = tuple(_explain(kernel, parsed, d, lowered) for d in broken)
        violations += tuple(parallel)
        if not broken and not parallel:
            violations = tuple(_explain(kernel, parsed, d, lowered) for d in reordered)
            feedback = (
                "reassociation: the schedule reorders the floating-point reduction "
                + ", ".join(sorted({f"{d.source.name} (line {d.source.line}) on `{d.array}`" for d in reordered}))
                + "; results may differ in the last bits. Allow reassociation to accept it."
            )
            return LegalityVerdict("reassociation", canonical, feedback, violations, parallel_loops, None, lowered)
        suggestion = _suggest(kernel, parsed, parallel_loops, allow_reassociation) if explain else None
        lines = [f"illegal: {v.description}" for v in violations]
        if suggestion:
            lines.append(f"suggestion: {suggestion}")
        return LegalityVerdict("illegal", canonical, "\n".join(lines), violations, parallel_loops, suggestion, lowered)
    reordered_any = bool(reordered or summed_by_blas or atomic or lane_sums)
    note = " (reorders a reduction: reassociation allowed)" if reordered or summed_by_blas or reordered_sums or split else ""
    parallel_text = ", ".join(_with_private(name, scalars) for name, scalars in free_loops) if free_loops else "none"
    feedback = f"legal{note}: every dependence is preserved. Loops that could run in parallel: {parallel_text}."
    for loop_id, scalars in sorted(private.items()):
        feedback += f" `{lowered.qualified_name(loop_id)}` runs in parallel with {', '.join(sorted(scalars))} private."
    for name in sorted(atomic):
        how = "accumulates in per-thread copies" if name in lowered.privatized else "is updated atomically"
        what = "scatter" if kernel.statement(name).is_scatter else "sum"
        feedback += f" {name}'s {what} into `{kernel.statement(name).writes[0].array}` {how}."
    for loop_id, sums in sorted(lane_sums.items()):
        feedback += f" The {_lanes_split(kernel, lowered, loop_id, sums)}."
    for contraction in lowered.contracted:
        feedback += f" {_stored_as(kernel, lowered, contraction)}."
    for inner, outer in _nested_parallel(lowered):
        feedback += f" Note: `{inner}` is nested in parallel loop `{outer}` and runs sequentially inside it."
    return LegalityVerdict("legal", canonical, feedback, (), parallel_loops, None, lowered, reordered_any)


def _order_not_the_sources(kernel: Kernel, name: str) -> bool:
    """Whether the lanes may split a statement's updates without the user's leave: the order was never theirs."""
    statement = kernel.statement(name)
    return statement.product or statement.pairwise or statement.extremum is not None


def _lanes_split(kernel: Kernel, lowered: LoweredSchedule, loop_id: str, sums: frozenset[str]) -> str:
    """What a vector loop does with the sums (and running extrema) its lanes split, in the words of the source."""
    parts = []
    for name in sorted(sums):
        line = kernel.statement(name).line
        extremum = {"max": "maximum", "min": "minimum"}.get(kernel.statement(name).extremum or "")
        parts.append(
            f"the running {extremum} {name} (line {line}) into one {extremum} per lane"
            if extremum
            else f"the sum {name} (line {line}) into one partial sum per lane"
        )
    return f"vectorized loop `{lowered.qualified_name(loop_id)}` splits {' and '.join(parts)}"


def _stored_as(kernel: Kernel, lowered: LoweredSchedule, contraction: Contraction) -> str:
    """How a contracted temporary is stored, in the words of its source."""
    if contraction.kept:
        dims = ", ".join(str(d) for d in contraction.kept)
        shape = f"by dimension{'s' if len(contraction.kept) > 1 else ''} {dims} alone"
    else:
        shape = "as one scalar"
    where = f", one copy per thread of `{lowered.qualified_name(contraction.private_to)}`" if contraction.private_to else ""
    line = next(a.line for a in kernel.allocations if a.name == contraction.array)
    return f"The temporary `{contraction.array}` (line {line}) is stored {shape}{where}"


def _nested_parallel(lowered: LoweredSchedule) -> list[tuple[str, str]]:
    """Parallel marks inside another parallel loop: only the outer one runs in parallel."""
    found = []
    for inner in sorted(lowered.parallel):
        for outer in sorted(lowered.parallel):
            inside = set(lowered.statements_in(inner))
            if outer != inner and inside <= set(lowered.statements_in(outer)) and lowered.level_of(outer) < lowered.level_of(inner):
                found.append((lowered.loop_names[inner], lowered.loop_names[outer]))
                break
    return found


def _violated_pairs(dependence: Dependence, schedule: isl.UnionMap) -> isl.Map:
    """The pairs of `dependence` that `schedule` (statement instance -> time) runs in the wrong order."""
    source, sink = statement_map(schedule, dependence.source), statement_map(schedule, dependence.sink)
    return dependence.relation.intersect(source.lex_ge_map(sink))


def _union(kernel: Kernel, deps: list[Dependence] | tuple[Dependence, ...]) -> isl.UnionMap:
    result = isl.UnionMap.empty(isl.Space.params_alloc(kernel.ctx, 0))
    for dependence in deps:
        result = result.union(isl.UnionMap.from_map(dependence.relation))
    return result


def _order_violations(
    kernel: Kernel, deps: list[Dependence], lowered: LoweredSchedule, limit: int | None = None
) -> list[Dependence]:
    """The dependences the schedule runs backwards (at most `limit` of them): one union test first."""
    if not deps:
        return []
    in_time = _union(kernel, deps).apply_domain(lowered.schedule).apply_range(lowered.schedule)
    backwards = isl.UnionMap.from_map(isl.Map.lex_ge(isl.Space.set_alloc(kernel.ctx, 0, lowered.width)))
    if in_time.intersect(backwards).is_empty():
        return []
    found = []
    for dependence in deps:
        if not _violated_pairs(dependence, lowered.schedule).is_empty():
            found.append(dependence)
            if limit is not None and len(found) >= limit:
                break
    return found


def _may_be_reassociation(dependence: Dependence) -> bool:
    statement = dependence.source
    return dependence.is_self and statement.is_reduction and dependence.array == statement.writes[0].array


def _is_reassociation(dependence: Dependence, lowered: LoweredSchedule) -> bool:
    """Only instances of one `+=`/`*=` statement accumulating into the same element swap order."""
    statement = dependence.source
    if not statement.accumulates_only:
        return False
    target = statement.writes[0]
    same_element = target.relation.apply_range(target.relation.reverse())
    return _violated_pairs(dependence, lowered.schedule).is_subset(same_element)


def loop_carries(
    kernel: Kernel,
    deps: tuple[Dependence, ...],
    lowered: LoweredSchedule,
    loop_id: str,
    distances: TimeDistances | None = None,
) -> bool:
    """Whether loop `loop_id` carries any of `deps`. `distances` shares one schedule's distances between loops."""
    return bool(carried_dependences(kernel, deps, lowered, loop_id, limit=1, distances=distances))


def carried_dependences(
    kernel: Kernel,
    deps: tuple[Dependence, ...],
    lowered: LoweredSchedule,
    loop_id: str,
    limit: int | None = None,
    distances: TimeDistances | None = None,
) -> list[Dependence]:
    """The dependences loop `loop_id` carries (at most `limit`): its iterations could not run in parallel."""
    distances = distances or TimeDistances(kernel, lowered)
    assert distances.lowered.schedule is lowered.schedule, "time distances of another schedule"
    members = set(lowered.statements_in(loop_id))
    found = []
    for dependence in deps:
        if dependence.source.name not in members and dependence.sink.name not in members:
            continue
        if distances.carries(dependence, loop_id):
            found.append(dependence)
            if limit is not None and len(found) >= limit:
                break
    return found


def parallel_obstacles(
    kernel: Kernel,
    deps: tuple[Dependence, ...],
    lowered: LoweredSchedule,
    loop_id: str,
    limit: int | None = None,
    flows: ScalarFlows | None = None,
    distances: TimeDistances | None = None,
) -> tuple[list[Dependence], Privatization]:
    """The dependences that keep loop `loop_id` from running in parallel once the scalars written in it
    that it may privatize are private (at most `limit`), and that privatization. Scalars are only
    considered when they are all that stops the loop: otherwise the array dependences are the ones to
    show. `flows` and `distances` share the dataflow and the time distances of one schedule between its loops."""
    nothing = Privatization(loop_id, frozenset(), {})
    distances = distances or TimeDistances(kernel, lowered)
    if not loop_carries(kernel, deps, lowered, loop_id, distances):
        return [], nothing
    on_arrays = tuple(d for d in deps if kernel.array(d.array).rank > 0)
    if loop_carries(kernel, on_arrays, lowered, loop_id, distances):
        return carried_dependences(kernel, on_arrays, lowered, loop_id, limit, distances), nothing
    written = {a.array for name in lowered.statements_in(loop_id) for a in kernel.statement(name).writes}
    scalars = {name for name in written if kernel.array(name).rank == 0}
    privatization = privatize(flows or ScalarFlows(kernel, lowered), loop_id, scalars)
    shared = tuple(d for d in deps if kernel.array(d.array).rank == 0 and d.array not in privatization.private)
    return carried_dependences(kernel, shared, lowered, loop_id, limit, distances), privatization


def _parallel_violations(
    kernel: Kernel, deps: tuple[Dependence, ...], lowered: LoweredSchedule, distances: TimeDistances, explain: bool
) -> tuple[list[Violation], dict[str, frozenset[str]], frozenset[str], dict[str, frozenset[str]]]:
    """Dependences the parallel and vector marks break, the scalars each legal parallel loop privatizes,
    the sums into arrays legal parallel loops update atomically, and the sums each vector loop's lanes split
    (`lane_reduction`). A vectorized loop gets no private copies: its lanes share one variable. With
    `explain`, each broken one shows a pair of instances the loop carries."""
    violations, private, lane_sums = [], {}, {}
    atomic: set[str] = set()
    flows = ScalarFlows(kernel, lowered)
    for loop_id in sorted(lowered.parallel | set(lowered.vector)):
        name = lowered.loop_names[loop_id]
        primitive = lowered.marked_by.get(loop_id)
        if loop_id in lowered.vector:
            carried, refused = carried_dependences(kernel, deps, lowered, loop_id, distances=distances), {}
            sums = lane_reductions(kernel, lowered, loop_id, carried)
            if sums:
                lane_sums[loop_id] = sums
            carried = [] if sums else carried[:3]
        else:
            carried, privatization = parallel_obstacles(kernel, deps, lowered, loop_id, limit=3, flows=flows, distances=distances)
            refused = privatization.refused
            if not carried and privatization.private:
                private[loop_id] = privatization.private
            sums = array_sums(kernel, deps, lowered, loop_id, distances) if carried else None
            if sums:
                atomic |= sums
                carried = []
        for dependence in carried:
            what = "parallel" if loop_id in lowered.parallel else "vectorized"
            description = f"loop `{name}` cannot run {what}: it carries the {dependence.describe()}"
            if dependence.array in refused:
                description += f"; `{dependence.array}` cannot be private to it: {refused[dependence.array]}"
            if primitive:
                description += f" (broken by `{primitive}`)"
            example = _example(dependence, _carried_pairs(dependence, lowered, loop_id), f"{what} loop `{name}`") if explain else ""
            if example:
                description += f"; e.g. {example}"
            violations.append(_violation(dependence, "parallel", primitive, example, description))
    return violations, private, frozenset(atomic), lane_sums


def array_sums(
    kernel: Kernel, deps: tuple[Dependence, ...], lowered: LoweredSchedule, loop_id: str, distances: TimeDistances
) -> frozenset[str] | None:
    """The sums into arrays, when they are all that loop `loop_id` carries: `t[...] += e` where `e` does not read
    `t`, through an index array (a scatter) or a NumPy product's (`y[j] += A[i, j] * x[i]` over `i`). Each then
    runs as one atomic update, or into a copy of `t` per thread (`privatize`), and the iterations may run in
    parallel, reordering only those sums. None when the loop carries anything else.

    A sum the source wrote as a loop is not one of them: it fixed its order, and a loop that carries it stays
    sequential (gemm's `parallelize(k)` is illegal); `reverse`, `vectorize` and the other reorderings of such
    a sum are reassociations, accepted where the user allows them."""
    carried = carried_dependences(kernel, deps, lowered, loop_id, distances=distances)
    if not carried or not all(_is_array_sum(d) for d in carried):
        return None
    return frozenset(d.source.name for d in carried)


def _is_array_sum(dependence: Dependence) -> bool:
    statement = dependence.source
    return (
        dependence.is_self
        and statement.is_array_sum
        and (statement.is_scatter or statement.product)
        and dependence.array == statement.writes[0].array
    )


def _carried_pairs(dependence: Dependence, lowered: LoweredSchedule, loop_id: str) -> isl.Map:
    """The pairs of `dependence` that loop `loop_id` carries: the same iteration of every loop around it, different
    iterations of it (what `TimeDistances.carries` tests, here as the instances themselves, to show one)."""
    dim = 2 * lowered.level_of(loop_id) + 1
    source, sink = statement_map(lowered.schedule, dependence.source), statement_map(lowered.schedule, dependence.sink)

    def first(schedule: isl.Map, count: int) -> isl.Map:
        return schedule.project_out(isl.dim_type.out, count, schedule.dim(isl.dim_type.out) - count)

    outer_source, outer_sink = first(source, dim), first(sink, dim)
    same_outer = outer_source.lex_le_map(outer_sink).intersect(outer_source.lex_ge_map(outer_sink))
    at_source, at_sink = first(source, dim + 1), first(sink, dim + 1)
    apart = at_source.lex_lt_map(at_sink).union(at_source.lex_gt_map(at_sink))
    return dependence.relation.intersect(same_outer).intersect(apart)


def _parallel_loops(
    kernel: Kernel, deps: tuple[Dependence, ...], lowered: LoweredSchedule, distances: TimeDistances
) -> tuple[tuple[str, frozenset[str]], ...]:
    """The loops of this schedule that could run in parallel, outermost first, each with the scalars
    it would privatize."""
    ids = dict.fromkeys(i for statement_ids in lowered.loop_ids.values() for i in statement_ids)
    free, flows = [], ScalarFlows(kernel, lowered)
    for loop_id in sorted(ids, key=lowered.level_of):
        carried, privatization = parallel_obstacles(kernel, deps, lowered, loop_id, limit=1, flows=flows, distances=distances)
        if not carried:
            free.append((lowered.qualified_name(loop_id), privatization.private))
    return tuple(free)


def _with_private(name: str, scalars: frozenset[str]) -> str:
    return f"{name} (with {', '.join(sorted(scalars))} private)" if scalars else name


def _explain(kernel: Kernel, schedule: Schedule, dependence: Dependence, lowered: LoweredSchedule) -> Violation:
    culprit = _first_breaking(kernel, schedule, dependence)
    example = _example(dependence, _violated_pairs(dependence, lowered.schedule))
    text = f"the {dependence.describe()} is reversed"
    if culprit is not None:
        text += f" by primitive {culprit.index} `{culprit}`"
    if example:
        text += f"; e.g. {example}"
    return _violation(dependence, dependence.kind, culprit, example, text)


def _violation(dependence: Dependence, kind: str, primitive: Primitive | None, example: str, description: str) -> Violation:
    return Violation(
        kind=kind,
        source=dependence.source.name,
        source_line=dependence.source.line,
        sink=dependence.sink.name,
        sink_line=dependence.sink.line,
        array=dependence.array,
        loops=dependence.loops,
        distance=dependence.distance,
        primitive=str(primitive) if primitive else None,
        example=example,
        description=description,
    )


def _first_breaking(kernel: Kernel, schedule: Schedule, dependence: Dependence) -> Primitive | None:
    """The first primitive after which `dependence` runs backwards. Each prefix's order is enough: its
    marks may not check yet (`promote(t)` before the `distribute` that leaves `t` one statement)."""
    state = ScheduleState(kernel)
    for primitive in schedule.primitives:
        state.apply(primitive)
        if not _violated_pairs(dependence, state.timeline()).is_empty():
            return primitive
    return None


def _example(dependence: Dependence, pairs: isl.Map, apart: str | None = None) -> str:
    """One of `pairs` (source instance -> sink instance of `dependence`) with its parameter values, in source terms:
    a sink scheduled before its source, or, given `apart` (the loop that carries them), the two in different iterations
    of a loop whose iterations would run at once."""
    point = pairs.wrap().sample_point()
    if point.is_void():
        return ""
    space = point.get_space()
    params = [
        f"{space.get_dim_name(isl.dim_type.param, k)}={point.get_coordinate_val(isl.dim_type.param, k).to_python()}"
        for k in range(space.dim(isl.dim_type.param))
    ]
    values = [point.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(space.dim(isl.dim_type.set))]
    source_its, sink_its = dependence.source.iterators, dependence.sink.iterators
    source_text = ", ".join(f"{n}={v}" for n, v in zip(source_its, values[: len(source_its)], strict=True))
    sink_text = ", ".join(f"{n}={v}" for n, v in zip(sink_its, values[len(source_its) :], strict=True))
    where = f"with {', '.join(params)}: " if params else ""
    order = f"{dependence.sink.name}({sink_text}) must run after {dependence.source.name}({source_text})"
    if apart is None:
        return f"{where}{order} but is scheduled before it"
    return f"{where}{order}, but they are in different iterations of {apart}"


def _suggest(kernel: Kernel, schedule: Schedule, parallel_loops: tuple[str, ...], allow: bool) -> str | None:
    """A cheap legal alternative: drop or move a parallel mark, or skew before the breaking primitive."""
    kept = [str(p) for p in schedule.primitives if not PRIMITIVES[p.name].concurrent]
    marks = [p for p in schedule.primitives if p.name == "parallelize"]
    if marks and parallel_loops and _legal_schedule(kernel, kept, allow):
        alternative = _legal_schedule(kernel, [*kept, str(parallelize(parallel_loops[0]))], allow)
        if alternative:
            return f"parallelize `{parallel_loops[0]}` instead: {alternative}"
    texts = [str(p) for p in schedule.primitives]
    for index, primitive in enumerate(schedule.primitives):
        if primitive.name not in ("interchange", "tile"):
            continue
        outer, inner = primitive.loops()[0], primitive.loops()[-1]
        if outer == inner:
            continue  # a one-loop tile: there is no pair to skew (the parser would refuse `skew(j, j, 1)` too)
        for factor in (1, 2):
            attempt = _legal_schedule(kernel, [*texts[:index], str(skew(outer, inner, factor)), *texts[index:]], allow)
            if attempt:
                return f"skew first: {attempt}"
    return None


def _legal_schedule(kernel: Kernel, texts: list[str], allow: bool) -> Schedule | None:
    """The schedule of these primitives' texts when it parses and is legal, else None."""
    try:
        schedule = parse_schedule("; ".join(texts))
    except ScheduleError:
        return None
    return schedule if prove_legal(kernel, schedule, allow, explain=False).legal else None
