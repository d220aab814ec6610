"""`np.linalg`: `norm` of vectors (2-norm, `ord=1`, `ord=np.inf`) and the Frobenius norm of matrices, computed as
NumPy's `norm` does (integers become float64): the square root of a sum of squares, the sum of absolute values,
or their maximum. Without `axis` NumPy takes the 2-norm as `sqrt(dot(x, x))`, whose order of additions is
BLAS's; the pairwise sum here agrees with it to the float tolerance, not bit for bit.

`cholesky` is LAPACK's `potrf` on the lower triangle, row by row (Cholesky-Banachiewicz), into a new array with
zeros above the diagonal. NumPy raises `LinAlgError` where a pivot is not positive; only the computation finds
that, so the kernel records it in a flag (`Failure`), and a call that ends with it set runs as the original. A NaN
pivot passes, as in the OpenBLAS NumPy ships with (reference LAPACK would raise), and the factor holds NaNs."""

from __future__ import annotations

from repoos_agent.ingest.numpy.reductions import axes_argument, keepdims_argument, reduce, stored_at
from repoos_agent.ingest.numpy.registry import CallSite, Lowering, lowers
from repoos_agent.ingest.numpy.values import Place, Value, arrays_read, floating
from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import Refusal
from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import ArrayRef, Binary, Call, Choice, Expr, Name, Number
from repoos_agent.model.kernel import DtypeRule, Failure


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


@lowers("linalg.cholesky", materializes=True)
def _cholesky(lowering: Lowering, call: CallSite) -> Value | None:
    """`np.linalg.cholesky(A)`: L with `A = L @ L.T`, reading only A's lower triangle. For each row i, the
    elements left of the diagonal, `L[i, j] = (A[i, j] - sum_k<j L[i, k] * L[j, k]) / L[j, j]`, then the
    diagonal `L[i, i] = sqrt(A[i, i] - sum_k<i L[i, k]**2)`, whose argument must be positive."""
    call.refuse_keywords()
    (operand,) = call.values(lowering, 1)
    shown = text(call.node)[:60]
    if operand.rank != 2:
        raise Refusal(call.node, f"`{shown}`: `np.linalg.cholesky` of an array of rank {operand.rank} is not modelled (2)")
    if operand.boolean:
        raise Refusal(call.node, f"`{shown}`: `np.linalg.cholesky` of a boolean array is not modelled")
    rows, columns = operand.shape
    if rows.divisor != 1 or columns.divisor != 1:
        raise Refusal(call.node, f"`{shown}`: the factorization of a strided slice is not modelled; copy it first")
    if rows.size.is_constant and columns.size.is_constant and rows != columns:
        raise Refusal(call.node, f"`{shown}`: the matrix is {rows} by {columns}; NumPy factors square matrices only")
    lowering.assume_equal(rows, columns)  # NumPy raises LinAlgError for a matrix that is not square
    operand = floating(operand)
    place, node, statement = call.place, call.node, call.statement
    target, direct = lowering.output(
        operand.shape, operand.dtype, call.into, call.name or "factor", node, arrays_read(operand), place
    )
    flag = lowering.materialize(Value((), lambda index: Number(0), DtypeRule(fixed="int64")), "not_definite", place, statement)
    failed = flag.element(())
    assert isinstance(failed, Name)
    lowering.failures.append(Failure(failed.name, f"`{shown}`: the matrix is not positive definite (NumPy raises LinAlgError)"))

    def at(i: AffineExpr, j: AffineExpr) -> ArrayRef | Name:
        if target.view is not None:
            return ArrayRef(target.view.array, target.view.index((i, j)))
        element = target.element((i, j))
        assert isinstance(element, Name)
        return element

    def factor(i: AffineExpr, j: AffineExpr) -> Expr:
        return target.element((i, j))

    def given(i: AffineExpr, j: AffineExpr) -> Expr:
        return operand.element((i, j))

    def emit(where: Place, op: str, store: ArrayRef | Name, value: Expr) -> None:
        lowering.emit((), op, lambda index: (store, value), where, statement)

    zero = AffineExpr.of_constant(0)
    row, i = lowering.loop(zero, rows.size, place, node)
    left, j = lowering.loop(zero, i, row, node)
    emit(left, "=", at(i, j), given(i, j))
    inner, k = lowering.loop(zero, j, left, node)
    emit(inner, "-=", at(i, j), Binary("*", factor(i, k), factor(j, k)))
    emit(left, "/=", at(i, j), factor(j, j))
    emit(row, "=", at(i, i), given(i, i))
    inner, k = lowering.loop(zero, i, row, node)
    emit(inner, "-=", at(i, i), Binary("*", factor(i, k), factor(i, k)))
    emit(row, "=", failed, Choice(Binary("<=", factor(i, i), Number(0)), Number(1), failed))
    emit(row, "=", at(i, i), Call("sqrt", (factor(i, i),), "np"))
    right, j = lowering.loop(i + AffineExpr.of_constant(1), rows.size, row, node)
    emit(right, "=", at(i, j), Number(0))
    return None if direct else target
