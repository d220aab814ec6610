"""The ranges index arrays must keep for a call to stay inside its arrays, checked before the run.

An affine subscript's reach follows from the sizes, and isl bounds it (`loopnest.ArrayBound`).
A subscript read from data (`x[col[k]]`) or through a loop whose bounds are data (`val[k]` for
`k` in `range(rowptr[i], rowptr[i + 1])`) reaches whatever the index array holds. So each such
use becomes an `IndexRange`: the smallest and largest index it can reach, from the index arrays'
smallest and largest values. The check reads every value of the index array, not only those the
run will use: conservative, and one pass over data the kernel reads anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import ArrayRef, IndexRead
from repoos_agent.model.kernel import DynamicLoop, Kernel


@dataclass(frozen=True)
class Reach:
    """One end of an index's reach: `array`'s smallest (or largest) value plus `offset`, or, with no
    array, the affine `offset` in the sizes."""

    array: str | None
    offset: AffineExpr


@dataclass(frozen=True)
class IndexRange:
    """Dimension `dim` of `target` is indexed from `low` to `high` (inclusive) by `subscript` (as written)."""

    target: str
    dim: int
    low: Reach
    high: Reach
    subscript: str
    line: int


def index_ranges(kernel: Kernel) -> tuple[IndexRange, ...]:
    """Every data-dependent index of the kernel, once per distinct range."""
    found: dict[tuple, IndexRange] = {}
    for statement in kernel.statements:
        loops = {loop.name: loop for loop in statement.inner}
        for ref in statement.array_refs():
            for dim, index in enumerate(ref.indices):
                reach = _reach(index, loops)
                if reach is not None:
                    key = (ref.array, dim, reach)
                    found.setdefault(key, IndexRange(ref.array, dim, *reach, _shown(ref), statement.line))
    return tuple(found.values())


def _reach(index: AffineExpr | IndexRead, loops: dict[str, DynamicLoop]) -> tuple[Reach, Reach] | None:
    if isinstance(index, IndexRead) and index.computed:
        return None
    if isinstance(index, IndexRead):
        offset = AffineExpr.of_constant(index.offset)
        return Reach(index.ref.array, offset), Reach(index.ref.array, offset)
    dynamic = [name for name in index.variables if name in loops]
    if not dynamic:
        return None
    # Ingest keeps an index of a dynamic loop to `k + c`, so its reach is the loop's, shifted by c.
    loop, shift = loops[dynamic[0]], index.constant
    return _limit(loop.start, shift), _limit(loop.stop, shift - 1)


def _limit(limit: AffineExpr | IndexRead, shift: int) -> Reach:
    if isinstance(limit, IndexRead):
        return Reach(limit.ref.array, AffineExpr.of_constant(limit.offset + shift))
    return Reach(None, limit + AffineExpr.of_constant(shift))


def _shown(ref: ArrayRef) -> str:
    return f"{ref.array}[{', '.join(str(index) for index in ref.indices)}]"
