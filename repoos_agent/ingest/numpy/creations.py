"""Creations: `np.zeros`, `np.ones`, `np.empty`, `np.full` and their `_like` forms allocate an array and fill it
(a statement of its own); `np.arange` over integer sizes is an element expression, never stored."""

from __future__ import annotations

from repoos_agent.ingest.numpy.conversions import dtype_rule
from repoos_agent.ingest.numpy.registry import CallSite, Lowering, lowers
from repoos_agent.ingest.numpy.values import Value, broadcast_to
from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import Refusal, affine_index, affine_value
from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import ArrayRef, Cast, Number
from repoos_agent.model.kernel import DtypeRule, Extent


@lowers("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like", materializes=True)
def _creation(lowering: Lowering, call: CallSite) -> Value:
    function, positional, keywords, place, node = call.function, call.positional, call.keywords, call.place, call.node
    if not positional:
        raise Refusal(node, f"`np.{function}` needs a shape")
    if function.endswith("_like"):
        like = lowering.value(positional[0], place)
        shape, dtype = like.shape, like.dtype
    else:
        shape, dtype = lowering.shape(positional[0], place), DtypeRule(fixed="float64")
    if "dtype" in keywords:
        dtype = dtype_rule(lowering, keywords["dtype"], place)
    fill: Value | None = None
    if function.startswith("full"):
        if len(positional) < 2 and "fill_value" not in keywords:
            raise Refusal(node, f"`np.{function}` needs a fill value")
        fill = lowering.value(keywords.get("fill_value", positional[1] if len(positional) > 1 else positional[0]), place)
        if not function.endswith("_like") and "dtype" not in keywords:
            dtype = DtypeRule(fill.dtype.sources)
    elif function.startswith("zeros"):
        fill = Value((), lambda index: Number(0), dtype)
    elif function.startswith("ones"):
        fill = Value((), lambda index: Number(1), dtype)
    allocation = lowering.allocate(call.name or function, shape, dtype, node)
    if fill is not None:
        value = fill
        mapper = broadcast_to(value, shape, node)
        lowering.emit(shape, "=", lambda index: (ArrayRef(allocation, index), value.element(mapper(index))), place, call.statement)
    return lowering.stored(allocation, shape, dtype)


@lowers("arange")
def _arange(lowering: Lowering, call: CallSite) -> Value:
    """`np.arange(stop)`, `(start, stop)` or `(start, stop, step)` over integer sizes: its element k is
    `start + k * step`, computed where it is used, never stored."""
    positional, node = call.positional, call.node
    if call.keywords or not 1 <= len(positional) <= 3:
        raise Refusal(node, "`np.arange` is modelled with one to three integer arguments, no keywords")
    try:
        bounds = [affine_index(lowering.walk, argument, call.place.scope) for argument in positional]
    except Refusal as refusal:
        raise Refusal(
            refusal.node,
            f"`np.arange` over `{text(refusal.node)}`: its bounds must be integers affine in the sizes "
            "(for a float range, pass the array in)",
        ) from None
    start, stop = (AffineExpr.of_constant(0), bounds[0]) if len(bounds) == 1 else (bounds[0], bounds[1])
    step = bounds[2].constant if len(bounds) == 3 and bounds[2].is_constant else 1
    if len(bounds) == 3 and (not bounds[2].is_constant or step == 0):
        raise Refusal(positional[2], f"`np.arange` step `{text(positional[2])}` must be a nonzero integer constant")
    extent = Extent(stop - start, step) if step > 0 else Extent(start - stop, -step)
    return Value((extent,), lambda index: Cast("int64", affine_value(start + index[0].scaled(step))), DtypeRule(fixed="int64"))
