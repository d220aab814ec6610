"""`np.linalg`: `norm` of vectors (2-norm, `ord=1`, `ord=np.inf`) and the Frobenius norm of matrices, computed as
NumPy's `norm` does (integers become float64): the square root of a sum of squares, the sum of absolute values,
or their maximum. Without `axis` NumPy takes the 2-norm as `sqrt(dot(x, x))`, whose order of additions is
BLAS's; the pairwise sum here agrees with it to the float tolerance, not bit for bit."""

from __future__ import annotations

from repoos_agent.ingest.numpy.reductions import axes_argument, keepdims_argument, reduce, stored_at
from repoos_agent.ingest.numpy.registry import CallSite, Lowering, lowers
from repoos_agent.ingest.numpy.values import Value, floating
from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import Refusal
from repoos_agent.model.expr import Binary, Call


def _order(call: CallSite) -> str:
    """`ord` as written: None, 1, 2, inf or fro."""
    node = call.argument(1, "ord")
    if node is None:
        return "None"
    written = text(node).strip("'\"")
    spelled = {"np.inf": "inf", "numpy.inf": "inf", "float('inf')": "inf", 'float("inf")': "inf", "math.inf": "inf"}
    return spelled.get(written, written)


@lowers("linalg.norm", materializes=True)
def _norm(lowering: Lowering, call: CallSite) -> Value | None:
    call.refuse_keywords(("ord", "axis", "keepdims"))
    if not call.positional or len(call.positional) > 3:
        raise Refusal(call.node, "`np.linalg.norm` is modelled with an array, `ord`, `axis` and `keepdims`")
    operand = lowering.value(call.positional[0], call.place)
    if operand.rank == 0 or operand.boolean:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: the norm of a scalar or a boolean array is not modelled")
    operand = floating(operand)
    order, axis_node = _order(call), call.argument(2, "axis")
    axes = axes_argument(axis_node, operand.rank)
    keepdims = keepdims_argument(call)
    vector = len(axes) == 1
    if vector and order not in ("None", "2", "1", "inf"):
        raise Refusal(
            call.node, f"`{text(call.node)[:60]}`: the vector norm `ord={order}` is not modelled (None, 2, 1, np.inf are)"
        )
    if not vector and order not in ("None", "fro"):
        raise Refusal(
            call.node,
            f"`{text(call.node)[:60]}`: the matrix norm `ord={order}` is not modelled (the Frobenius norm is); "
            "write it from sums and maxima of `np.abs(A)`",
        )
    if len(axes) > 2 or (len(axes) == 2 and operand.rank != 2 and axis_node is None):
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: norms of arrays of rank {operand.rank} need `axis=`")
    place, node, statement = call.place, call.node, call.statement
    if order in ("1", "inf"):
        absolute = Value(operand.shape, lambda index: Call("abs", (operand.element(index),), "np"), operand.dtype)
        kind = "sum" if order == "1" else "max"
        return reduce(lowering, kind, absolute, axes, keepdims, place, statement, call.into, call.name or "norms", node)
    squares = Value(operand.shape, lambda index: Binary("*", operand.element(index), operand.element(index)), operand.dtype)
    result = reduce(lowering, "sum", squares, axes, keepdims, place, statement, call.into, call.name or "norms", node)
    target = result if result is not None else call.into
    assert target is not None
    lowering.emit(
        target.shape,
        "=",
        lambda index: (stored_at(target, index), Call("sqrt", (stored_at(target, index),), "np")),
        place,
        statement,
    )
    return result
