"""Scans: `np.cumsum` and `np.cumprod` along one axis, `c[..., 0] = x[..., 0]` then `c[..., k] = c[..., k - 1] op
x[..., k]` for k from 1: the loop-carried dependence NumPy's running total has, which the legality checker
sees and every schedule must keep. NumPy accumulates in order (no pairwise sums), as this does."""

from __future__ import annotations

from repoos_agent.ingest.numpy.reductions import ReductionLoops, axes_argument, stored_at
from repoos_agent.ingest.numpy.registry import CallSite, Lowering, lowers
from repoos_agent.ingest.numpy.values import Index, Value, arrays_read, widened
from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import Refusal
from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import ArrayRef, Binary, Choice, Expr, Name, Number
from repoos_agent.model.kernel import DtypeRule


def _scan(lowering: Lowering, call: CallSite, op: str) -> Value | None:
    call.refuse_keywords(("axis",))
    if not call.positional or len(call.positional) > 2:
        raise Refusal(call.node, f"`{call.spelled}` is modelled with an array and `axis`")
    operand = lowering.value(call.positional[0], call.place)
    axis_node = call.argument(1, "axis")
    if operand.rank == 0:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: `{call.spelled}` of a scalar is not modelled; use the scalar")
    if operand.rank > 1 and (axis_node is None or text(axis_node) == "None"):
        raise Refusal(
            call.node,
            f"`{text(call.node)[:60]}` runs over the flattened array, which is not modelled: give `axis=` "
            f"(`{call.spelled}` along each axis)",
        )
    if axis_node is not None and axis_node.type == "tuple":
        raise Refusal(axis_node, f"`{call.spelled}` takes one axis")
    (axis,) = axes_argument(axis_node, operand.rank) if operand.rank > 1 or axis_node is not None else (0,)
    if operand.shape[axis].divisor != 1:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: a running total along a strided slice is not modelled")
    if operand.boolean:  # NumPy counts the Trues in int64
        truth = operand
        operand = Value(truth.shape, lambda index: Choice(truth.element(index), Number(1), Number(0)), DtypeRule(fixed="int64"))
    else:  # NumPy's running totals of narrow integers are int64
        operand = widened(operand)
    loops = ReductionLoops(operand.shape, (axis,), True)
    reads = arrays_read(operand)
    name = call.name or call.function
    target, direct = lowering.output(operand.shape, operand.dtype, call.into, name, call.node, reads, call.place)

    def first(index: Index) -> tuple[ArrayRef | Name, Expr]:
        at = loops.full_index(index, first=True)
        return stored_at(target, at), operand.element(at)

    lowering.emit(loops.out_shape, "=", first, call.place, call.statement)

    def running(index: Index) -> tuple[ArrayRef | Name, Expr]:
        at = loops.full_index(index)
        before = tuple(position - AffineExpr.of_constant(1) if d == axis else position for d, position in enumerate(at))
        return stored_at(target, at), Binary(op, stored_at(target, before), operand.element(at))

    lowering.emit(loops.out_shape, "=", running, call.place, call.statement, loops.reduced(start=1), loops.order)
    return None if direct else target


@lowers("cumsum", methods=("cumsum",), materializes=True)
def _cumsum(lowering: Lowering, call: CallSite) -> Value | None:
    return _scan(lowering, call, "+")


@lowers("cumprod", methods=("cumprod",), materializes=True)
def _cumprod(lowering: Lowering, call: CallSite) -> Value | None:
    return _scan(lowering, call, "*")
