"""Products: `@`, `np.dot`, `np.matmul` and `x.dot(y)` become an initializing statement and an update over the
output's loops and the contraction, flagged `product` so the code generators may call BLAS; `np.outer` is an
elementwise product of a column and a row. Stacks (operands of rank 3 or more) are `matmul`'s: one product per
element of the broadcast leading dimensions. `np.dot` agrees with it unless its second operand is a stack (then
`dot` pairs every matrix with every other), which is refused."""

from __future__ import annotations

from tree_sitter import Node

from repoos_agent.ingest.numpy.refusals import RANK_HINT
from repoos_agent.ingest.numpy.registry import CallSite, Lowering, lowers
from repoos_agent.ingest.numpy.values import Index, Place, Value, arrays_read, broadcast, column, is_one
from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import Refusal
from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import ArrayRef, Binary, Expr, Name, Number, Unary, array_refs
from repoos_agent.model.kernel import Extent


@lowers("dot", "matmul", methods=("dot",), materializes=True)
def _dot(lowering: Lowering, call: CallSite) -> Value | None:
    if len(call.positional) != 2:
        raise Refusal(call.node, f"`{call.function}` takes two arrays")
    left, right = (lowering.value(p, call.place) for p in call.positional)
    if call.function == "dot" and left.rank >= 2 and right.rank >= 3:
        raise Refusal(
            call.node,
            f"`{text(call.node)[:60]}`: `{call.spelled}` of arrays of rank {left.rank} and {right.rank} pairs every matrix "
            "of the first with every one of the second, which is not modelled; write `@` (`np.matmul`) for a stack "
            "of products",
        )
    return matmul(lowering, left, right, call.place, call.statement, call.into, call.name, call.node)


@lowers("outer")
def _outer(lowering: Lowering, call: CallSite) -> Value:
    left, right = call.values(lowering, 2)
    if left.rank != 1 or right.rank != 1:
        raise Refusal(call.node, "`np.outer` of arrays other than vectors is not modelled")
    return lowering.elementwise([column(left), right], lambda a, b: Binary("*", a, b), call.node)


def matmul(
    lowering: Lowering, left: Value, right: Value, place: Place, statement: Node, into: Value | None, name: str, node: Node
) -> Value | None:
    """`left @ right` as NumPy's `matmul`, into `into` when it can, else a new allocation (returned). Operands of
    rank 3 or more are stacks of matrices over their leading (batch) dimensions, which broadcast as NumPy's do;
    a vector operand is a matrix of one row (left) or one column (right) whose unit dimension the result drops."""
    if left.rank == 0 or right.rank == 0:
        raise Refusal(node, "`@` of a scalar: use `*`" + RANK_HINT)
    left, right = _read_operand(lowering, left, place, node), _read_operand(lowering, right, place, node)
    rows, columns = left.rank >= 2, right.rank >= 2
    contraction = left.shape[-1]
    _contracted(lowering, contraction, right.shape[-2] if columns else right.shape[0], node)
    left_batch, right_batch = left.shape[: max(left.rank - 2, 0)], right.shape[: max(right.rank - 2, 0)]
    batch, (left_of, right_of) = broadcast([left_batch, right_batch], node)
    for shape in (left_batch, right_batch):  # NumPy raises unless the stacks' extents agree where not 1
        for extent, wide in zip(shape, batch[len(batch) - len(shape) :], strict=True):
            if not is_one(extent):
                lowering.assume_equal(extent, wide)
    stacked = len(batch)
    out_shape = batch + ((left.shape[-2],) if rows else ()) + ((right.shape[-1],) if columns else ())
    dtype = left.dtype.merged(right.dtype)
    reads = arrays_read(left) | arrays_read(right)
    target, direct = lowering.output(out_shape, dtype, into, name or "product", node, reads, place)
    out_rank = len(out_shape)

    def parts(index: Index) -> tuple[Index, Index, Index]:
        out, k = index[:out_rank], index[out_rank]
        at = out[:stacked]
        left_index = left_of(at) + ((out[stacked],) if rows else ()) + (k,)
        right_index = right_of(at) + (k,) + ((out[stacked + rows],) if columns else ())
        return out, left_index, right_index

    def store_ref(out: Index) -> ArrayRef | Name:
        if target.view is not None:
            return ArrayRef(target.view.array, target.view.index(out))
        element = target.element(out)
        assert isinstance(element, Name)
        return element

    lowering.emit(out_shape, "=", lambda index: (store_ref(index), Number(0)), place, statement)

    def update(index: Index) -> tuple[ArrayRef | Name, Expr]:
        out, left_index, right_index = parts(index)
        return store_ref(out), Binary("*", left.element(left_index), right.element(right_index))

    # the stack's loops outermost; in each matrix i, k, j: the contraction outside the output's last (contiguous)
    # dimension. The update stays flagged `product` (its order of additions is BLAS's or NumPy's, not the source's);
    # `blas` takes only products of two or three loops of their own, so a stack of products stays loops.
    outer = tuple(range(stacked))
    if rows and columns:
        order = (*outer, stacked, out_rank, stacked + 1)
    elif columns:
        order = (*outer, out_rank, stacked)
    else:
        order = tuple(range(out_rank + 1))
    lowering.emit(out_shape, "+=", update, place, statement, ((contraction, 0),), order, product=True)
    return None if direct else target


def _contracted(lowering: Lowering, left: Extent, right: Extent, node: Node) -> None:
    """The contracted extents must agree (NumPy raises otherwise): refused when both are constants that differ,
    else checked at the call, as broadcasting is."""
    if left.size.is_constant and right.size.is_constant and left != right:
        raise Refusal(node, f"`{text(node)[:60]}`: the product contracts extents {left} and {right}, which differ")
    lowering.assume_equal(left, right)


def _read_operand(lowering: Lowering, operand: Value, place: Place, node: Node) -> Value:
    """A product's operand as a BLAS call can read it. An array (a slice, a transpose, times
    scalars) stays as it is; any other expression (`softmax(s) @ v`: `e / sums`) is stored
    first, as NumPy stores it, so that the product may run as one BLAS call. A schedule that
    fuses the operand back into the product's loops shrinks it again (array contraction)."""
    if operand.view is not None or operand.rank == 0:
        return operand
    probe = tuple(AffineExpr.of_variable(f"rp_d{d}") for d in range(operand.rank))
    if _scaled_read(operand.element(probe)):
        return operand
    return lowering.materialize(operand, "operand", place, node)


def _scaled_read(expr: Expr) -> bool:
    """Whether `expr` is one array element times (or over) factors that read no array: `alpha * A[i, k]`."""
    if isinstance(expr, ArrayRef):
        return True
    if isinstance(expr, Unary) and expr.op == "-":
        return _scaled_read(expr.operand)
    if isinstance(expr, Binary) and expr.op in ("*", "/"):
        left, right = array_refs(expr.left), array_refs(expr.right)
        if expr.op == "*" and not left:
            return _scaled_read(expr.right)
        return not right and _scaled_read(expr.left)
    return False
