"""Reductions: an initializing statement over the output's loops and an updating one over those plus the
reduced loops (`sums[i] = 0; sums[i] += x[i, k]`). NumPy adds pairwise; the `pairwise` flag of the update
tells the code generators to add in NumPy's order."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from repoos_agent.ingest.numpy.refusals import RANK_HINT
from repoos_agent.ingest.numpy.registry import CallSite, Lowering, lowers
from repoos_agent.ingest.numpy.values import Index, Place, Value, arrays_read, widened
from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import Refusal, affine_value
from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import ArrayRef, Binary, Call, Choice, Expr, Name, Number
from repoos_agent.model.kernel import DtypeRule, Extent

REDUCTION_NAMES = {"sum": "sums", "max": "maxima", "min": "minima", "mean": "means", "prod": "products"}
"""What an unnamed reduction's temporary is called in `repoos ingest` (and schedules' statement texts)."""


@lowers("sum", "max", "min", "mean", "prod", "amax", "amin", methods=("sum", "max", "min", "mean", "prod"), materializes=True)
def _reduction(lowering: Lowering, call: CallSite) -> Value | None:
    """`np.sum(x, axis, keepdims=)` and its kin, `x.sum(...)` alike; a masked selection (`x[m]`) is summed whole."""
    node, place = call.node, call.place
    if not call.positional:
        raise Refusal(node, f"`{call.function}` needs an array")
    held = lowering.compacted.get(text(call.positional[0])) if call.positional[0].type == "identifier" else None
    if held is not None:
        return _compacted(lowering, call, *held)
    selection = lowering.selection(call.positional[0])
    operand = (
        _masked_operand(lowering, *selection, call.function, place) if selection else lowering.value(call.positional[0], place)
    )
    axis_node = call.argument(1, "axis")
    if selection and axis_node is not None and text(axis_node) not in ("None", "0"):
        raise Refusal(node, f"`{text(node)[:60]}`: a masked selection is one flat array; reduce it whole")
    unknown = set(call.keywords) - {"axis", "keepdims"}
    if unknown or len(call.positional) > 2:
        raise Refusal(node, f"`{text(node)[:60]}`: only `axis=` and `keepdims=` are modelled for reductions")
    keepdims = keepdims_argument(call)
    axes = axes_argument(axis_node, operand.rank)
    kind = {"amax": "max", "amin": "min"}.get(call.function, call.function)
    return reduce(lowering, kind, operand, axes, keepdims, place, call.statement, call.into, call.name, node)


def _compacted(lowering: Lowering, call: CallSite, kept: Value, ones: Value) -> Value:
    """The sum or mean of a selection bound to a name (`v = x[m]; v.mean()`): the kept elements' sum, divided by
    the count of the mask for a mean (NaN for an empty selection, as NumPy's mean of nothing is)."""
    if call.function not in ("sum", "mean") or set(call.keywords) - {"axis"} or len(call.positional) > 1:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: of a masked selection, a whole sum or mean is modelled")
    axis = call.keywords.get("axis")
    if axis is not None and text(axis) not in ("None", "0"):
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: a masked selection is one flat array; reduce it whole")
    everything = tuple(range(kept.rank))
    total = reduce(lowering, "sum", kept, everything, False, call.place, call.statement, None, "", call.node)
    assert total is not None
    if call.function == "sum":
        return total
    count = reduce(lowering, "sum", ones, everything, False, call.place, call.statement, None, "", call.node)
    assert count is not None
    mean = DtypeRule(total.dtype.sources, True, total.dtype.fixed if total.dtype.fixed in ("float32", "float64") else None)
    return Value((), lambda index: Binary("/", total.element(()), count.element(())), mean)


def keepdims_argument(call: CallSite) -> bool:
    """`keepdims=True` or `False`, as a constant."""
    keepdims_node = call.keywords.get("keepdims")
    if keepdims_node is not None and text(keepdims_node) not in ("True", "False"):
        raise Refusal(keepdims_node, "`keepdims=` must be True or False")
    return keepdims_node is not None and text(keepdims_node) == "True"


def axes_argument(node: Node | None, rank: int) -> tuple[int, ...]:
    """The axes an `axis=` argument names (an integer, a tuple of them, or None for all), sorted."""
    if node is None or text(node) == "None":
        return tuple(range(rank))
    items = node.named_children if node.type == "tuple" else [node]
    axes = []
    for item in items:
        try:
            value = int(text(item))
        except ValueError:
            raise Refusal(item, f"axis `{text(item)}` must be an integer constant") from None
        if not -rank <= value < rank:
            hint = RANK_HINT if rank == 0 else ""
            raise Refusal(item, f"axis {value} is out of range for an array of rank {rank}{hint}")
        axes.append(value % rank)
    return tuple(sorted(set(axes)))


def _masked_operand(lowering: Lowering, base_node: Node, mask_node: Node, method: str, place: Place) -> Value:
    """`x[mask]` reduced: a sum adds zeros where the mask fails; other reductions depend on how many it keeps."""
    if method != "sum":
        raise Refusal(
            base_node.parent,
            f"`{text(base_node.parent)}`: a {method} of a masked selection is not modelled (a sum is: "
            f"np.sum(x[m]); or use np.where(m, x, ...))",
        )
    base, mask = lowering.value(base_node, place), lowering.value(mask_node, place)
    lowering.mask_of(mask, base, mask_node, base_node)
    return Value(base.shape, lambda index: Choice(mask.element(index), base.element(index), Number(0)), base.dtype)


def reduce(
    lowering: Lowering,
    kind: str,
    operand: Value,
    axes: tuple[int, ...],
    keepdims: bool,
    place: Place,
    statement: Node,
    into: Value | None,
    name: str,
    node: Node,
    in_order: bool = False,
) -> Value | None:
    """`kind` over the `axes` of `operand`. NumPy adds pairwise; `in_order` adds in the source's order, as
    Python's own `sum` does."""
    if operand.boolean and kind in ("sum", "mean"):  # NumPy counts: True is 1 (an int64 sum, a float64 mean)
        counted, counts = operand, DtypeRule(fixed="int64" if kind == "sum" else "float64")
        operand = Value(counted.shape, lambda index: Choice(counted.element(index), Number(1), Number(0)), counts)
    elif operand.boolean:
        raise Refusal(node, f"`{text(node)[:60]}`: a {kind} of a boolean array is not modelled (its sum counts the Trues)")
    elif kind in ("sum", "prod") and not in_order:  # Python's `sum` adds in the elements' own type
        operand = widened(operand)
    loops = ReductionLoops(operand.shape, axes, keepdims)
    out_shape, full_index = loops.out_shape, loops.full_index
    dtype = operand.dtype if kind != "mean" else DtypeRule(operand.dtype.sources, True, operand.dtype.fixed)
    reads = arrays_read(operand)
    target, direct = lowering.output(out_shape, dtype, into, name or REDUCTION_NAMES[kind], node, reads, place)
    reduced = loops.reduced()

    def store_ref(index: Index) -> ArrayRef | Name:
        return stored_at(target, index[: len(out_shape)])

    init_shape = out_shape
    init: Callable[[Index], Expr]
    if kind in ("sum", "mean"):
        init = lambda index: Number(0)  # noqa: E731
    elif kind == "prod":
        init = lambda index: Number(1)  # noqa: E731
    else:
        init = lambda index: operand.element(full_index(index, first=True))  # noqa: E731
    if any(operand.shape[d].divisor != 1 for d in axes) and kind in ("max", "min", "mean"):
        raise Refusal(node, f"`{text(node)[:60]}`: a {kind} over a strided slice is not modelled")
    lowering.emit(init_shape, "=", lambda index: (store_ref(index), init(index)), place, statement)

    def update(index: Index) -> tuple[ArrayRef | Name, Expr]:
        ref = store_ref(index)
        element = operand.element(full_index(index))
        return ref, (Call(kind, (ref, element), "np") if kind in ("max", "min") else element)

    op = {"sum": "+=", "mean": "+=", "prod": "*=", "max": "=", "min": "="}[kind]
    lowering.emit(out_shape, op, update, place, statement, reduced, loops.order, pairwise=kind in ("sum", "mean") and not in_order)
    if kind == "mean":
        count_expr = loops.count()
        lowering.emit(out_shape, "/=", lambda index: (store_ref(index), count_expr), place, statement)
    return None if direct else target


def stored_at(target: Value, index: Index) -> ArrayRef | Name:
    """Where element `index` of a stored value (an array's view, or a scalar local) is written."""
    if target.view is not None:
        return ArrayRef(target.view.array, target.view.index(index))
    element = target.element(index)
    assert isinstance(element, Name)
    return element


@dataclass(frozen=True)
class ReductionLoops:
    """The loops of a reduction over the `axes` of an operand of `shape`: the output's dimensions first (kept
    dimensions, and unit ones for `keepdims`), then the reduced ones, run in the operand's own order."""

    shape: tuple[Extent, ...]
    axes: tuple[int, ...]
    keepdims: bool

    @property
    def kept(self) -> list[int]:
        return [d for d in range(len(self.shape)) if d not in self.axes]

    @property
    def out_shape(self) -> tuple[Extent, ...]:
        if self.keepdims:
            return tuple(Extent(AffineExpr.of_constant(1)) if d in self.axes else e for d, e in enumerate(self.shape))
        return tuple(self.shape[d] for d in self.kept)

    @property
    def out_positions(self) -> dict[int, int]:
        return {d: (d if self.keepdims else self.kept.index(d)) for d in self.kept}

    def reduced(self, start: int = 0) -> tuple[tuple[Extent, int], ...]:
        return tuple((self.shape[d], start) for d in self.axes)

    @property
    def order(self) -> tuple[int, ...]:
        return _reduction_order(tuple(range(len(self.out_shape))), len(self.shape), self.axes, self.out_positions)

    def full_index(self, index: Index, first: bool = False) -> Index:
        """The operand's index at loop index `index` (output dims, then reduced ones); `first`: the reduced at 0."""
        out_rank, positions = len(self.out_shape), self.out_positions

        def at(d: int) -> AffineExpr:
            if d not in self.axes:
                return index[positions[d]]
            return AffineExpr.of_constant(0) if first else index[out_rank + self.axes.index(d)]

        return tuple(at(d) for d in range(len(self.shape)))

    def count(self) -> Expr:
        """How many elements each output element reduces: a product of sizes, a value (never a bound), so it
        need not be affine."""
        factors = [affine_value(self.shape[d].size) for d in self.axes] or [Number(1)]
        product = factors[0]
        for factor in factors[1:]:
            product = Binary("*", product, factor)
        return product


def _reduction_order(
    unit_dims: tuple[int, ...], operand_rank: int, axes: tuple[int, ...], out_positions: dict[int, int]
) -> tuple[int, ...]:
    """Loops of a reduction in the operand's own dimension order, so its elements are read in memory order.

    Kept unit dimensions of `keepdims` (which have no operand dimension) run outermost."""
    order: list[int] = [d for d in unit_dims if d not in out_positions.values()]
    for d in range(operand_rank):
        order.append(out_positions[d] if d in out_positions else len(unit_dims) + axes.index(d))
    return tuple(order)
