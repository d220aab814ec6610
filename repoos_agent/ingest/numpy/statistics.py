"""Statistics over axes, each built from reductions as NumPy's own implementation computes it, so that the
rounding agrees: `var` is the pairwise sum of squared deviations from the (pairwise) mean over `N - ddof`,
`std` its square root, `average` with weights `sum(a * w) / sum(w)`; `argmax`/`argmin` keep the first index
of the extremum (of the first NaN, as NumPy does); `count_nonzero`, `any` and `all` count and test."""

from __future__ import annotations

from repoos_agent.ingest.numpy.products import matmul
from repoos_agent.ingest.numpy.reductions import ReductionLoops, axes_argument, keepdims_argument, reduce, stored_at
from repoos_agent.ingest.numpy.registry import CallSite, Lowering, lowers
from repoos_agent.ingest.numpy.values import Index, Value, arrays_read, floating, transposed
from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import Refusal, affine_value
from repoos_agent.model.expr import ArrayRef, Binary, Call, Choice, Expr, Name, Number
from repoos_agent.model.kernel import DtypeRule


def _operand(lowering: Lowering, call: CallSite, known: tuple[str, ...]) -> tuple[Value, tuple[int, ...], bool]:
    """The array, its axes (`axis` as the second positional or a keyword) and `keepdims`; other keywords refused."""
    call.refuse_keywords(("axis", "keepdims", *known))
    if not call.positional:
        raise Refusal(call.node, f"`{call.spelled}` needs an array")
    if len(call.positional) > 2:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: give arguments after `axis` by keyword ({', '.join(known)})")
    operand = lowering.value(call.positional[0], call.place)
    if operand.rank == 0:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: `{call.spelled}` of a scalar is not modelled; use the scalar")
    return operand, axes_argument(call.argument(1, "axis"), operand.rank), keepdims_argument(call)


def _constant(call: CallSite, keyword: str, default: int) -> int:
    """An integer keyword given as a constant (`ddof=1`)."""
    node = call.keywords.get(keyword)
    if node is None:
        return default
    try:
        return int(text(node))
    except ValueError:
        raise Refusal(node, f"`{keyword}={text(node)}` must be an integer constant") from None


def _target(lowering: Lowering, call: CallSite, result: Value | None) -> Value:
    """Where a reduction that may have written the caller's target left its result."""
    if result is not None:
        return result
    assert call.into is not None
    return call.into


def _divide(lowering: Lowering, call: CallSite, target: Value, divisor: Expr) -> None:
    lowering.emit(target.shape, "/=", lambda index: (stored_at(target, index), divisor), call.place, call.statement)


def _variance(lowering: Lowering, call: CallSite, root: bool) -> Value | None:
    operand, axes, keepdims = _operand(lowering, call, ("ddof",))
    if operand.boolean:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: the {call.function} of a boolean array is not modelled")
    ddof = _constant(call, "ddof", 0)
    if any(operand.shape[d].divisor != 1 for d in axes):
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: a {call.function} over a strided slice is not modelled")
    loops = ReductionLoops(operand.shape, axes, keepdims)
    # NumPy's mean inside var: a pairwise sum (in float64 for integers) over the count, kept in the operand's rank
    means = reduce(lowering, "sum", floating(operand), axes, True, call.place, call.statement, None, "means", call.node)
    assert means is not None
    _divide(lowering, call, means, ReductionLoops(operand.shape, axes, True).count())

    def squared(a: Expr, mean: Expr) -> Expr:
        return Binary("*", Binary("-", a, mean), Binary("-", a, mean))

    deviations = floating(lowering.elementwise([operand, means], squared, call.node))
    name = call.name or ("deviations" if root else "variances")
    result = reduce(lowering, "sum", deviations, axes, keepdims, call.place, call.statement, call.into, name, call.node)
    target = _target(lowering, call, result)
    count = loops.count()
    # NumPy divides by max(N - ddof, 0): no element left gives inf or NaN, never a negative count
    left = Choice(Binary(">", count, Number(ddof)), Binary("-", count, Number(ddof)), Number(0)) if ddof else count
    _divide(lowering, call, target, left)
    if root:
        lowering.emit(
            target.shape,
            "=",
            lambda index: (stored_at(target, index), Call("sqrt", (stored_at(target, index),), "np")),
            call.place,
            call.statement,
        )
    return result


@lowers("var", methods=("var",), materializes=True)
def _var(lowering: Lowering, call: CallSite) -> Value | None:
    return _variance(lowering, call, root=False)


@lowers("std", methods=("std",), materializes=True)
def _std(lowering: Lowering, call: CallSite) -> Value | None:
    return _variance(lowering, call, root=True)


@lowers("average", materializes=True)
def _average(lowering: Lowering, call: CallSite) -> Value | None:
    """`np.average(a, axis, weights=w)`: the mean without weights; with them `sum(a * w) / sum(w)`, both sums
    pairwise in the promoted type (float64 for integers). `w` has `a`'s shape, or is 1-d along the one axis."""
    if "weights" not in call.keywords and len(call.positional) < 3:
        operand, axes, keepdims = _operand(lowering, call, ())
        return reduce(lowering, "mean", operand, axes, keepdims, call.place, call.statement, call.into, call.name, call.node)
    weights_node = call.keywords.get("weights", call.positional[2] if len(call.positional) > 2 else None)
    keywords = {k: v for k, v in call.keywords.items() if k != "weights"}
    site = CallSite(call.function, call.positional[:2], keywords, call.place, call.node, call.statement, call.into, call.name)
    operand, axes, keepdims = _operand(lowering, site, ("returned",))
    if "returned" in call.keywords and text(call.keywords["returned"]) != "False":
        raise Refusal(call.node, "`np.average(..., returned=True)` is not modelled: compute the sum of the weights apart")
    assert weights_node is not None
    weights = lowering.value(weights_node, call.place)
    if weights.rank == operand.rank:  # the same shape: NumPy raises otherwise, and the call checks the sizes equal
        spread = lowering.elementwise([operand, weights], lambda a, w: w, weights_node)
    elif weights.rank == 1 and len(axes) == 1 and call.argument(1, "axis") is not None:
        axis = axes[0]
        spread = Value(operand.shape, lambda index: weights.element((index[axis],)), weights.dtype)
    else:
        raise Refusal(weights_node, f"`{text(weights_node)}`: 1-d weights need one `axis=`; else give weights of the array's shape")
    product = floating(lowering.elementwise([operand, spread], lambda a, w: Binary("*", a, w), call.node))
    if operand.boolean or weights.boolean:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: an average of boolean arrays is not modelled")
    scale_value = Value(operand.shape, spread.element, floating(product).dtype)
    scales = reduce(lowering, "sum", scale_value, axes, keepdims, call.place, call.statement, None, "weight_sums", call.node)
    assert scales is not None
    result = reduce(
        lowering, "sum", product, axes, keepdims, call.place, call.statement, call.into, call.name or "averages", call.node
    )
    target = _target(lowering, call, result)
    lowering.emit(
        target.shape,
        "/=",
        lambda index: (stored_at(target, index), scales.element(index)),
        call.place,
        call.statement,
    )
    return result


@lowers("count_nonzero", materializes=True)
def _count_nonzero(lowering: Lowering, call: CallSite) -> Value | None:
    """How many elements are not zero: an int64 count (NumPy's intp)."""
    operand, axes, keepdims = _operand(lowering, call, ())
    tested = operand
    counted = Value(
        operand.shape,
        lambda index: Choice(
            tested.element(index) if tested.boolean else Binary("!=", tested.element(index), Number(0)), Number(1), Number(0)
        ),
        DtypeRule(fixed="int64"),
    )
    name = call.name or "counts"
    return reduce(lowering, "sum", counted, axes, keepdims, call.place, call.statement, call.into, name, call.node, in_order=True)


def _truth(lowering: Lowering, call: CallSite, every: bool) -> Value:
    """`np.any` / `np.all` (and the methods): a boolean value, kept as 0 and 1 in an int64 temporary. It is used in
    expressions (a mask, a count); NumPy's bool arrays are not stored, so binding or returning it stays refused."""
    operand, axes, keepdims = _operand(lowering, call, ())
    loops = ReductionLoops(operand.shape, axes, keepdims)
    reads = arrays_read(operand)
    target, _ = lowering.output(
        loops.out_shape, DtypeRule(fixed="int64"), None, call.name or "truths", call.node, reads, call.place
    )
    out_rank = len(loops.out_shape)

    def truth(index: Index) -> Expr:
        element = operand.element(loops.full_index(index))
        return element if operand.boolean else Binary("!=", element, Number(0))

    lowering.emit(
        loops.out_shape, "=", lambda index: (stored_at(target, index), Number(1 if every else 0)), call.place, call.statement
    )

    def update(index: Index) -> tuple[ArrayRef | Name, Expr]:
        ref = stored_at(target, index[:out_rank])
        return ref, Binary("and" if every else "or", ref, truth(index))

    lowering.emit(loops.out_shape, "=", update, call.place, call.statement, loops.reduced(), loops.order)
    return Value(target.shape, target.element, target.dtype, None, boolean=True)


@lowers("any", methods=("any",), materializes=True)
def _any(lowering: Lowering, call: CallSite) -> Value:
    return _truth(lowering, call, every=False)


@lowers("all", methods=("all",), materializes=True)
def _all(lowering: Lowering, call: CallSite) -> Value:
    return _truth(lowering, call, every=True)


def _arg_extremum(lowering: Lowering, call: CallSite, largest: bool) -> Value | None:
    """The index of the first maximum (minimum) along one axis, or in the flattened array for `axis=None`. The
    running extremum and its index are updated together, in the same loop body: a later element wins only
    when strictly better, or when it is NaN and the extremum is not yet (NumPy's first NaN)."""
    operand, axes, keepdims = _operand(lowering, call, ())
    if operand.boolean:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: `{call.spelled}` of a boolean array is not modelled")
    axis_node = call.argument(1, "axis")
    if axis_node is not None and text(axis_node) != "None" and axis_node.type == "tuple":
        raise Refusal(axis_node, f"`{call.spelled}` takes one axis (an integer) or None")
    if any(operand.shape[d].divisor != 1 for d in axes):
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: `{call.spelled}` over a strided slice is not modelled")
    loops = ReductionLoops(operand.shape, axes, keepdims)
    out_shape, out_rank = loops.out_shape, len(loops.out_shape)
    reads = arrays_read(operand)
    best, _ = lowering.output(out_shape, operand.dtype, None, "extrema", call.node, reads, call.place)
    name = call.name or ("argmax" if largest else "argmin")
    target, direct = lowering.output(out_shape, DtypeRule(fixed="int64"), call.into, name, call.node, reads, call.place)
    sizes = [affine_value(operand.shape[d].size) for d in axes]

    def position(index: Index) -> Expr:
        """The reduced loops' place in the (flattened) reduced dimensions, in C order."""
        flat: Expr = affine_value(index[out_rank])
        for size, variable in zip(sizes[1:], index[out_rank + 1 :], strict=True):
            flat = Binary("+", Binary("*", flat, size), affine_value(variable))
        return flat

    def first(index: Index) -> tuple[ArrayRef | Name, Expr]:
        return stored_at(best, index), operand.element(loops.full_index(index, first=True))

    lowering.emit(out_shape, "=", first, call.place, call.statement)
    lowering.emit(out_shape, "=", lambda index: (stored_at(target, index), Number(0)), call.place, call.statement)

    def better(index: Index) -> Expr:
        element, held = operand.element(loops.full_index(index)), stored_at(best, index[:out_rank])
        strictly = Binary(">" if largest else "<", element, held)
        return Binary("or", strictly, Binary("and", Binary("!=", element, element), Binary("==", held, held)))

    def index_update(index: Index) -> tuple[ArrayRef | Name, Expr]:
        ref = stored_at(target, index[:out_rank])
        return ref, Choice(better(index), position(index), ref)

    def value_update(index: Index) -> tuple[ArrayRef | Name, Expr]:
        ref = stored_at(best, index[:out_rank])
        return ref, Choice(better(index), operand.element(loops.full_index(index)), ref)

    lowering.emit(out_shape, "=", index_update, call.place, call.statement, loops.reduced(), loops.order, then=(value_update,))
    return None if direct else target


@lowers("argmax", methods=("argmax",), materializes=True)
def _argmax(lowering: Lowering, call: CallSite) -> Value | None:
    return _arg_extremum(lowering, call, largest=True)


@lowers("argmin", methods=("argmin",), materializes=True)
def _argmin(lowering: Lowering, call: CallSite) -> Value | None:
    return _arg_extremum(lowering, call, largest=False)


@lowers("cov", materializes=True)
def _cov(lowering: Lowering, call: CallSite) -> Value | None:
    """`np.cov(X)` of a matrix, each row a variable (`rowvar=False`: each column): as NumPy computes it, the rows
    centred on their (pairwise) means, their product with their transpose, times `1 / (N - ddof)`."""
    call.refuse_keywords(("rowvar", "ddof", "bias"))
    if len(call.positional) != 1:
        raise Refusal(call.node, "`np.cov` is modelled with one matrix (and `rowvar=`, `ddof=`, `bias=`)")
    matrix = lowering.value(call.positional[0], call.place)
    if matrix.rank != 2 or matrix.boolean:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: np.cov is modelled for a matrix of numbers")
    if "rowvar" in call.keywords and text(call.keywords["rowvar"]) not in ("True", "False"):
        raise Refusal(call.keywords["rowvar"], "`rowvar=` must be True or False")
    if "rowvar" in call.keywords and text(call.keywords["rowvar"]) == "False":
        matrix = transposed(matrix, call.node)
    bias = "bias" in call.keywords and text(call.keywords["bias"]) == "True"
    ddof = _constant(call, "ddof", 0 if bias else 1)
    values = floating(matrix)
    means = reduce(lowering, "mean", values, (1,), True, call.place, call.statement, None, "means", call.node)
    assert means is not None
    centred = lowering.materialize(
        lowering.elementwise([values, means], lambda a, m: Binary("-", a, m), call.node), "centred", call.place, call.node
    )
    result = matmul(lowering, centred, transposed(centred, call.node), call.place, call.statement, call.into, call.name, call.node)
    target = _target(lowering, call, result)
    count = ReductionLoops(matrix.shape, (1,), True).count()
    left = Binary("-", count, Number(ddof)) if ddof else count
    # NumPy multiplies by the reciprocal of N - ddof (`c *= np.true_divide(1, fact)`)
    scale = Binary("/", Number(1.0), left)
    lowering.emit(target.shape, "*=", lambda index: (stored_at(target, index), scale), call.place, call.statement)
    return result
