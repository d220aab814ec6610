"""`np.histogram(a, bins, range=, weights=)` with `bins` equal bins, as NumPy's fast path for them computes it, so
that every value falls in NumPy's bin.

The range is `range=(lo, hi)` or the data's minimum and maximum (reductions in the kernel; no data gives NumPy's
(0, 1)), widened to (lo - 0.5, hi + 0.5) when empty. The edges are NumPy's `linspace`: `k * step + lo` with
`step = (hi - lo) / bins`, the last one `hi`. A value's bin goes into an int64 temporary in NumPy's four steps:
`((x - lo) / (hi - lo)) * bins` truncated, the top edge into the last bin, then one down where the value lies
below its bin's edge and one up where it reaches the next edge (but the last bin's); the edges there are
recomputed by the same formula, so no edge is read through a computed index. The counts (or weights) are then
summed through that temporary: a scatter (`hist[bins[i]] += w[i]`), which legality reads as a write anywhere in
`hist`. Values outside an explicit range add 0 into bin 0, as a count that NumPy drops.

NumPy raises where the automatic range is not finite (a NaN or an infinity in the data) and where `bins` is
below 1: the data must then be an argument, which the native entry checks, as it checks `bins`. The bins'
arithmetic is modelled for float64 data, the sums for float64 or int64 weights; other types run the original."""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from repoos_agent.ingest.numpy.reductions import ReductionLoops
from repoos_agent.ingest.numpy.registry import CallSite, Lowering, lowers
from repoos_agent.ingest.numpy.values import Index, Items, Value, arrays_read
from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import Refusal, affine_value, unparenthesised
from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import ArrayRef, Binary, Call, Cast, Choice, Expr, IndexRead, Name, Number
from repoos_agent.model.kernel import DtypeRule, Extent

EXACT_INTEGERS = 2**53
"""Integers a float64 holds exactly: a `range=` bound beyond them is refused rather than rounded."""

FLOAT64 = DtypeRule(fixed="float64")
INT64 = DtypeRule(fixed="int64")

Kept = Callable[[Expr], Expr] | None
"""Whether a value lies in an explicit `range=` (NaN does not); None for the data's own range, which holds all."""


@lowers("histogram", items=True)
def _histogram(lowering: Lowering, call: CallSite) -> Items:
    """`(hist, bin_edges)`: int64 counts without weights, sums in the weights' type with them."""
    call.refuse_keywords(("bins", "range", "density", "weights"))
    if not call.positional or len(call.positional) > 5:
        raise Refusal(call.node, "`np.histogram` takes the data, then `bins`, `range`, `density` and `weights`")
    density = call.argument(3, "density")
    if density is not None and text(density) not in ("False", "None"):
        raise Refusal(density, "`np.histogram(..., density=True)` is not modelled: divide the counts by their sum and the widths")
    data = lowering.value(call.positional[0], call.place)
    if data.rank == 0 or data.boolean:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: the histogram of an array of numbers is modelled")
    lowering.require_dtype(data.dtype, ("float64",), call.node)
    bins = _bins(lowering, call)
    weights = _weights(lowering, call, data)
    edges_range = _range(call)
    if edges_range is None:
        if data.view is None or data.view.array not in lowering.walk.arguments:
            raise Refusal(
                call.node,
                f"`{text(call.node)[:60]}`: without `range=`, NumPy raises on a NaN in the data, which is checked "
                "before the run on an argument only: pass the array itself, or give `range=(lo, hi)`",
            )
        lowering.require_finite(data.view.array, call.node)
        first, last = _data_range(lowering, call, data)
    else:
        first, last = Number(edges_range[0]), Number(edges_range[1])
    width = _scalar(lowering, call, "width", Binary("-", last, first))
    step = _scalar(lowering, call, "step", Binary("/", width, affine_value(bins)))
    edge = _Edges(affine_value(bins), first, last, width, step)
    edges = _edges(lowering, call, bins, edge)
    kept = (lambda x: Binary("and", Binary(">=", x, first), Binary("<=", x, last))) if edges_range is not None else None
    indices = _bin_indices(lowering, call, data, edge, kept)
    hist = _sums(lowering, call, data, weights, bins, indices, kept)
    return Items((hist, edges))


def _bins(lowering: Lowering, call: CallSite) -> AffineExpr:
    """The number of bins: 10, an integer constant of at least 1, or a size checked at the native entry."""
    node = call.argument(1, "bins")
    if node is None:
        return AffineExpr.of_constant(10)
    refusal = Refusal(node, f"`bins={text(node)[:40]}`: a number of equal bins (an integer) is modelled, not edges or an estimator")
    if unparenthesised(node).type in ("string", "list", "tuple") or lowering.walk.ranks.get(text(node), 0) > 0:
        raise refusal
    try:
        (extent,) = lowering.shape(node, call.place)
    except Refusal:
        raise refusal from None
    if extent.size.is_constant and extent.size.constant < 1:
        raise Refusal(node, f"`bins={text(node)}`: NumPy raises ValueError (`bins` must be positive)")
    lowering.require_at_least(extent.size, 1, call.node)
    return extent.size


def _weights(lowering: Lowering, call: CallSite, data: Value) -> Value | None:
    """The weights, of the data's shape (NumPy raises otherwise, and the call checks the sizes equal)."""
    node = call.argument(4, "weights")
    if node is None or text(node) == "None":
        return None
    weights = lowering.value(node, call.place)
    if weights.rank != data.rank or weights.boolean:
        raise Refusal(node, f"`weights={text(node)[:40]}`: weights are numbers of the data's shape")
    for first, second in zip(data.shape, weights.shape, strict=True):
        lowering.assume_equal(first, second)
    lowering.require_dtype(weights.dtype, ("float64", "int64"), node)
    return weights


def _range(call: CallSite) -> tuple[float, float] | None:
    """`range=(lo, hi)` of two number constants, widened as NumPy widens an empty one; None without it."""
    node = call.argument(2, "range")
    if node is None or text(node) == "None":
        return None
    node = unparenthesised(node)
    bounds = [_number(item) for item in node.named_children] if node.type == "tuple" else []
    if len(bounds) != 2 or None in bounds:
        raise Refusal(node, f"`range={text(node)[:40]}`: a range of two number constants `(lo, hi)` is modelled")
    low, high = bounds
    assert low is not None and high is not None
    if low > high:
        raise Refusal(node, f"`range={text(node)}`: NumPy raises ValueError (max must be larger than min)")
    if low == high:
        return float(low) - 0.5, float(high) + 0.5
    return float(low), float(high)


def _number(node: Node) -> int | float | None:
    """An int or float constant, perhaps negated, that float64 holds exactly; None for anything else."""
    node = unparenthesised(node)
    sign = 1
    if node.type == "unary_operator" and text(node.child_by_field_name("operator")) in "-+":
        sign = -1 if text(node.child_by_field_name("operator")) == "-" else 1
        node = unparenthesised(node.child_by_field_name("argument"))
    if node.type == "integer" and abs(int(text(node).replace("_", ""), 0)) <= EXACT_INTEGERS:
        return sign * int(text(node).replace("_", ""), 0)
    if node.type == "float" and text(node)[-1:] not in "jJ":
        number = float(text(node).replace("_", ""))
        return sign * number if number != float("inf") else None
    return None


def _scalar(lowering: Lowering, call: CallSite, hint: str, value: Expr) -> Expr:
    """A float64 scalar local holding `value`."""
    local, _ = lowering.output((), FLOAT64, None, hint, call.node, set(), call.place)
    name = local.element(())
    assert isinstance(name, Name)
    lowering.emit((), "=", lambda index: (name, value), call.place, call.statement)
    return name


def _data_range(lowering: Lowering, call: CallSite, data: Value) -> tuple[Expr, Expr]:
    """The data's minimum and maximum, in one pass from infinities; (0, 1) for no data, widened when equal."""
    loops = ReductionLoops(data.shape, tuple(range(data.rank)), False)
    low = _scalar(lowering, call, "lowest", Number(float("inf")))
    high = _scalar(lowering, call, "highest", Number(float("-inf")))

    def lower(index: Index) -> tuple[ArrayRef | Name, Expr]:
        assert isinstance(low, Name)
        return low, Call("min", (low, data.element(index)), "np")

    def higher(index: Index) -> tuple[ArrayRef | Name, Expr]:
        assert isinstance(high, Name)
        return high, Call("max", (high, data.element(index)), "np")

    lowering.emit((), "=", lower, call.place, call.statement, loops.reduced(), loops.order, then=(higher,))
    empty, equal = Binary("<", high, low), Binary("==", low, high)  # the data is finite: only no data leaves low > high
    first = Choice(empty, Number(0.0), Choice(equal, Binary("-", low, Number(0.5)), low))
    last = Choice(empty, Number(1.0), Choice(equal, Binary("+", high, Number(0.5)), high))
    return _scalar(lowering, call, "first_edge", first), _scalar(lowering, call, "last_edge", last)


class _Edges:
    """Edge `k` as NumPy's `linspace(first, last, bins + 1)` computes it: `k * step + first` (with a step that
    underflows to 0, `k / bins * width + first`), and `last` for the last."""

    def __init__(self, bins: Expr, first: Expr, last: Expr, width: Expr, step: Expr) -> None:
        self.bins, self.first, self.last, self.width, self.step = bins, first, last, width, step

    def at(self, k: Expr) -> Expr:
        spaced = Choice(
            Binary("==", self.step, Number(0)), Binary("*", Binary("/", k, self.bins), self.width), Binary("*", k, self.step)
        )
        return Choice(Binary("==", k, self.bins), self.last, Binary("+", spaced, self.first))


def _edges(lowering: Lowering, call: CallSite, bins: AffineExpr, edge: _Edges) -> Value:
    """`bin_edges`: bins + 1 float64 edges."""
    shape = (Extent(bins + AffineExpr.of_constant(1)),)
    edges, _ = lowering.output(shape, FLOAT64, None, "bin_edges", call.node, set(), call.place)
    assert edges.view is not None
    array = edges.view.array
    lowering.emit(shape, "=", lambda index: (ArrayRef(array, index), edge.at(affine_value(index[0]))), call.place, call.statement)
    return edges


def _bin_indices(lowering: Lowering, call: CallSite, data: Value, edge: _Edges, kept: Kept) -> str:
    """An int64 temporary of the data's shape holding each value's bin (0 for a value outside the range), in
    NumPy's steps: truncated position, the top edge into the last bin, then one down or one up against the edges."""
    indices, _ = lowering.output(data.shape, INT64, None, "bin_indices", call.node, arrays_read(data), call.place)
    assert indices.view is not None
    array, bins = indices.view.array, edge.bins
    last_bin = Binary("-", bins, Number(1))

    def each(update: Callable[[Expr, ArrayRef], Expr]) -> None:
        def body(index: Index) -> tuple[ArrayRef | Name, Expr]:
            at = ArrayRef(array, index)
            return at, update(data.element(index), at)

        lowering.emit(data.shape, "=", body, call.place, call.statement)

    def guarded(x: Expr, test: Expr) -> Expr:
        return Binary("and", kept(x), test) if kept is not None else test

    def position(x: Expr, at: Expr) -> Expr:
        truncated = Cast("int64", Binary("*", Binary("/", Binary("-", x, edge.first), edge.width), bins))
        return Choice(kept(x), truncated, Number(0)) if kept is not None else truncated

    each(position)
    each(lambda x, at: Choice(Binary("==", at, bins), last_bin, at))
    each(lambda x, at: Choice(guarded(x, Binary("<", x, edge.at(at))), Binary("-", at, Number(1)), at))
    each(
        lambda x, at: Choice(
            guarded(x, Binary("and", Binary(">=", x, edge.at(Binary("+", at, Number(1)))), Binary("!=", at, last_bin))),
            Binary("+", at, Number(1)),
            at,
        )
    )
    return array


def _sums(
    lowering: Lowering, call: CallSite, data: Value, weights: Value | None, bins: AffineExpr, indices: str, kept: Kept
) -> Value:
    """`hist`: zeros, then each value's count (or weight) added into its bin through the bin indices."""
    dtype = weights.dtype if weights is not None else INT64
    reads = arrays_read(data) | (arrays_read(weights) if weights is not None else set())
    hist, _ = lowering.output((Extent(bins),), dtype, None, "hist", call.node, reads, call.place)
    assert hist.view is not None
    array = hist.view.array
    lowering.emit(hist.shape, "=", lambda index: (ArrayRef(array, index), Number(0)), call.place, call.statement)

    def add(index: Index) -> tuple[ArrayRef | Name, Expr]:
        amount = weights.element(index) if weights is not None else Number(1)
        if kept is not None:
            amount = Choice(kept(data.element(index)), amount, Number(0))
        return ArrayRef(array, (IndexRead(ArrayRef(indices, index), computed=True),)), amount

    lowering.emit(data.shape, "+=", add, call.place, call.statement)
    return hist
