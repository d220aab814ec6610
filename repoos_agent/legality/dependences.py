"""Exact dependences of a kernel, computed once with isl and kept with the kernel.

Memory-based dependences between every pair of accesses to the same element,
ordered by the source schedule: flow (write, then read), anti (read, then write)
and output (write, then write). A schedule that keeps every one of them
forward in time computes what the source computes.
"""

from __future__ import annotations

from dataclasses import dataclass
from weakref import WeakKeyDictionary

import islpy as isl

from repoos_agent.model.kernel import Access, Kernel, Statement

KIND_WORDS = {"flow": "flow (read after write)", "anti": "anti (write after read)", "output": "output (write after write)"}


@dataclass(frozen=True, eq=False)
class Dependence:
    """`sink` instances must run after the `source` instances `relation` maps to them."""

    kind: str  # "flow", "anti", "output"
    source: Statement
    sink: Statement
    array: str
    relation: isl.Map  # source instance -> sink instance
    loops: tuple[str, ...]  # the loops source and sink share, outermost first
    distance: tuple[str, ...]  # per shared loop: a number, "+" (positive), "-", "0+" or "*"

    @property
    def is_self(self) -> bool:
        return self.source is self.sink

    def describe(self) -> str:
        where = f"{self.source.name} (line {self.source.line})"
        if not self.is_self:
            where += f" → {self.sink.name} (line {self.sink.line})"
        else:
            where += " → itself"
        distance = f", distance ({', '.join(self.distance)}) over loops ({', '.join(self.loops)})" if self.loops else ""
        return f"{KIND_WORDS[self.kind]} dependence {where} on `{self.array}`{distance}"


_CACHE: WeakKeyDictionary[Kernel, tuple[Dependence, ...]] = WeakKeyDictionary()


def dependences(kernel: Kernel) -> tuple[Dependence, ...]:
    """Every dependence of `kernel` (cached per kernel object)."""
    if kernel not in _CACHE:
        _CACHE[kernel] = _compute(kernel)
    return _CACHE[kernel]


def _schedule_of(kernel: Kernel, statement: Statement) -> isl.Map:
    return isl.Map.from_union_map(kernel.original_schedule.intersect_domain(isl.UnionSet.from_set(statement.domain)))


def _compute(kernel: Kernel) -> tuple[Dependence, ...]:
    schedules = {s.name: _schedule_of(kernel, s) for s in kernel.statements}
    found: list[Dependence] = []
    for source in kernel.statements:
        for sink in kernel.statements:
            before = schedules[source.name].lex_lt_map(schedules[sink.name])
            pairs: dict[tuple[str, str], isl.Map] = {}
            for kind, source_accesses, sink_accesses in (
                ("flow", source.writes, sink.reads),
                ("anti", source.reads, sink.writes),
                ("output", source.writes, sink.writes),
            ):
                for a in source_accesses:
                    for b in sink_accesses:
                        if a.array != b.array:
                            continue
                        relation = _same_element(a, b).intersect(before)
                        if relation.is_empty():
                            continue
                        key = (kind, a.array)
                        pairs[key] = relation if key not in pairs else pairs[key].union(relation).coalesce()
            for (kind, array), relation in pairs.items():
                loops, distance = _distance(source, sink, relation)
                found.append(Dependence(kind, source, sink, array, relation, loops, distance))
    return tuple(found)


def _same_element(a: Access, b: Access) -> isl.Map:
    return a.relation.apply_range(b.relation.reverse())


def _distance(source: Statement, sink: Statement, relation: isl.Map) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Distance over the loops both statements share, in iteration order (a count-down loop counts down)."""
    shared = 0
    while shared < min(len(source.loops), len(sink.loops)) and source.loops[shared] is sink.loops[shared]:
        shared += 1
    if shared == 0:
        return (), ()
    projected = relation.project_out(isl.dim_type.in_, shared, len(source.loops) - shared)
    projected = projected.project_out(isl.dim_type.out, shared, len(sink.loops) - shared)
    deltas = projected.deltas()
    words = []
    for k in range(shared):
        sign = 1 if source.loops[k].step > 0 else -1
        low, high = deltas.dim_min(k), deltas.dim_max(k)
        words.append(_word(low, high, sign))
    return tuple(loop.name for loop in source.loops[:shared]), tuple(words)


def _word(low: isl.PwAff, high: isl.PwAff, sign: int) -> str:
    def constant(value: isl.PwAff) -> int | None:
        if value.n_piece() != 1 or not value.is_cst():
            return None
        pieces = value.get_pieces()
        return pieces[0][1].get_constant_val().to_python()

    lo, hi = constant(low), constant(high)
    if sign < 0:
        lo, hi = (-hi if hi is not None else None), (-lo if lo is not None else None)
    if lo is not None and lo == hi:
        return str(lo)
    if lo is not None and lo > 0:
        return "+"
    if lo is not None and lo == 0:
        return "0+"
    if hi is not None and hi < 0:
        return "-"
    return "*"
