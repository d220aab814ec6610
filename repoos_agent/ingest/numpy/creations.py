"""Creations: `np.zeros`, `np.ones`, `np.empty`, `np.full` and their `_like` forms allocate an array and fill it
(a statement of its own); `np.arange`, `np.linspace`, `np.eye` and `np.identity` are element expressions, never
stored. Float ranges are computed by NumPy's own formulas, so their elements are bit for bit NumPy's: `arange`
fills `start + k * delta` with `delta = (start + step) - start`, `linspace` computes `start + k * step` with
`step = (stop - start) / (num - 1)` and puts `stop` itself last."""

from __future__ import annotations

import math

import numpy as np
from tree_sitter import Node

from repoos_agent.ingest.numpy.conversions import dtype_name, dtype_rule
from repoos_agent.ingest.numpy.registry import CallSite, Lowering, lowers
from repoos_agent.ingest.numpy.values import Index, Value, broadcast_to
from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import Refusal, affine_index, affine_value, unparenthesised
from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import ArrayRef, Binary, Cast, Choice, Expr, Number
from repoos_agent.model.kernel import DtypeRule, Extent


@lowers("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like", "ndarray", materializes=True)
def _creation(lowering: Lowering, call: CallSite) -> Value:
    """`np.zeros(shape, dtype)` and its kin; `np.ndarray(shape, dtype)`, the constructor, is `np.empty`."""
    function, positional, keywords, place, node = call.function, call.positional, call.keywords, call.place, call.node
    function = "empty" if function == "ndarray" else function
    if not positional:
        raise Refusal(node, f"`np.{function}` needs a shape")
    dtype_at = 2 if function.startswith("full") else 1  # the dtype may come positionally: `np.zeros((n, n), np.int32)`
    if len(positional) > dtype_at and "dtype" not in keywords:
        keywords = {**keywords, "dtype": positional[dtype_at]}
    if function.endswith("_like"):
        like = lowering.value(positional[0], place)
        shape, dtype = like.shape, like.dtype
    else:
        shape, dtype = lowering.shape(positional[0], place), DtypeRule(fixed="float64")
        for extent in shape:  # NumPy raises on a negative extent where an allocation would clamp it to 0
            if not extent.size.variables & place.scope:
                lowering.require_at_least(extent.size, 0, node)
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


def _float_literal(node: Node) -> float | None:
    """A number written in the source (`0.5`, `-1`, `2e-3`), as a float, or None."""
    node = unparenthesised(node)
    sign = 1.0
    if node.type == "unary_operator" and text(node.child_by_field_name("operator")) in "-+":
        sign = -1.0 if text(node.child_by_field_name("operator")) == "-" else 1.0
        node = unparenthesised(node.child_by_field_name("argument"))
    if node.type == "float":
        return sign * float(text(node).replace("_", ""))
    if node.type == "integer":
        return sign * int(text(node).replace("_", ""), 0)
    return None


def _float_dtype(lowering: Lowering, call: CallSite) -> str | None:
    """The float type `dtype=` asks for, None without one; integer types keep the integer range."""
    node = call.keywords.get("dtype")
    if node is None:
        return None
    name = dtype_name(node)
    return name if name.startswith("float") else None


@lowers("arange")
def _arange(lowering: Lowering, call: CallSite) -> Value:
    """`np.arange(stop)`, `(start, stop)` or `(start, stop, step)`: over integer sizes an int64 element
    expression (`start + k * step`); with a float argument or a float `dtype=`, NumPy's float range."""
    positional, node = call.positional, call.node
    call.refuse_keywords(("dtype",))
    if not 1 <= len(positional) <= 3:
        raise Refusal(node, "`np.arange` is modelled with one to three arguments")
    dtype = _float_dtype(lowering, call)
    if dtype is not None or any(unparenthesised(argument).type == "float" for argument in positional):
        return _float_range(lowering, call, dtype or "float64")
    try:
        bounds = [affine_index(lowering.walk, argument, call.place.scope) for argument in positional]
    except Refusal as refusal:
        raise Refusal(
            refusal.node,
            f"`np.arange` over `{text(refusal.node)}`: its bounds must be integers affine in the sizes, or float "
            "constants (for a range of other floats, pass the array in)",
        ) from None
    start, stop = (AffineExpr.of_constant(0), bounds[0]) if len(bounds) == 1 else (bounds[0], bounds[1])
    step = bounds[2].constant if len(bounds) == 3 and bounds[2].is_constant else 1
    if len(bounds) == 3 and (not bounds[2].is_constant or step == 0):
        raise Refusal(positional[2], f"`np.arange` step `{text(positional[2])}` must be a nonzero integer constant")
    extent = Extent(stop - start, step) if step > 0 else Extent(start - stop, -step)
    fixed = dtype_name(call.keywords["dtype"]) if "dtype" in call.keywords else "int64"
    return Value((extent,), lambda index: Cast(fixed, affine_value(start + index[0].scaled(step))), DtypeRule(fixed=fixed))


def _float_range(lowering: Lowering, call: CallSite, dtype: str) -> Value:
    """A float `np.arange`. Its count `ceil((stop - start) / step)` must be a size: every argument a constant,
    or integer-valued constants around one integer size (`np.arange(0.0, n)`, `np.arange(n, dtype=float)`)."""
    positional = call.positional
    written = [_float_literal(argument) for argument in positional]
    starts = (0, *written) if len(positional) == 1 else tuple(written)
    start, stop, step = (*starts, 1)[:3] if len(starts) == 2 else starts
    stop_node = positional[0] if len(positional) == 1 else positional[1]
    if (
        start is None
        or step is None
        or step == 0
        or (stop is None and not (float(start).is_integer() and float(step).is_integer()))
    ):
        raise Refusal(
            call.node,
            f"`{text(call.node)[:60]}`: the count of a float range must be a size expression: give constant bounds, "
            "or integer start and step around an integer size (for other ranges, pass the array in)",
        )
    scalar = np.dtype(dtype).type
    first = scalar(start)
    second = scalar(start + step)  # Python adds the two numbers, then NumPy stores the sum: its fill reads both back
    delta = second - first
    if stop is not None:
        extent = Extent(AffineExpr.of_constant(max(0, math.ceil((stop - start) / step))))
    else:
        size = affine_index(lowering.walk, stop_node, call.place.scope) - AffineExpr.of_constant(int(start))
        extent = Extent(size, int(step)) if step > 0 else Extent(-size, -int(step))

    def element(index: Index) -> Expr:
        filled = Binary(
            "+",
            Cast(dtype, Number(float(first))),
            Binary("*", Cast(dtype, affine_value(index[0])), Cast(dtype, Number(float(delta)))),
        )
        if first + scalar(1) * delta == second:
            return filled
        return Choice(Binary("==", affine_value(index[0]), Number(1)), Cast(dtype, Number(float(second))), filled)

    return Value((extent,), element, DtypeRule(fixed=dtype))


def _python_number(lowering: Lowering, value: Value, node: Node, call: CallSite) -> Expr:
    """`start` or `stop` of `np.linspace`: a Python number (a literal, a size, a scalar argument), as float64."""
    if (
        value.rank
        or value.dtype.fixed
        or any(
            source.startswith("!")
            or source in lowering.walk.arrays
            or (source not in ("<int>", "<float>") and source not in lowering.walk.arguments)
            for source in value.dtype.sources
        )
    ):
        raise Refusal(
            node,
            f"`{text(call.node)[:60]}`: `{text(node)}` must be a Python number (a NumPy value's type would decide the result's)",
        )
    return Cast("float64", value.element(()))


@lowers("linspace")
def _linspace(lowering: Lowering, call: CallSite) -> Value:
    """`np.linspace(start, stop, num, endpoint=)`, num a constant or a size: NumPy's formula, element k is
    `k * step + start` with `step = (stop - start) / div` (`div` is `num - 1` with the endpoint, else `num`),
    `(k / div) * delta + start` where that step is 0, `k * delta + start` where `div` is 0, and `stop` last."""
    call.refuse_keywords(("start", "stop", "num", "endpoint", "dtype"))
    nodes = [call.argument(position, keyword) for position, keyword in enumerate(("start", "stop", "num", "endpoint"))]
    if nodes[0] is None or nodes[1] is None:
        raise Refusal(call.node, "`np.linspace` needs a start and a stop")
    start = _python_number(lowering, lowering.value(nodes[0], call.place), nodes[0], call)
    stop = _python_number(lowering, lowering.value(nodes[1], call.place), nodes[1], call)
    num = affine_index(lowering.walk, nodes[2], call.place.scope) if nodes[2] is not None else AffineExpr.of_constant(50)
    if num.is_constant and num.constant < 0:
        raise Refusal(nodes[2], f"`{text(call.node)[:60]}`: a negative number of samples")
    if nodes[3] is not None and text(nodes[3]) not in ("True", "False"):
        raise Refusal(nodes[3], "`endpoint=` must be True or False")
    endpoint = nodes[3] is None or text(nodes[3]) == "True"
    dtype = _float_dtype(lowering, call)
    if "dtype" in call.keywords and dtype is None:
        raise Refusal(call.keywords["dtype"], f"`{text(call.node)[:60]}`: an integer `dtype=` of np.linspace is not modelled")
    div = num - AffineExpr.of_constant(1) if endpoint else num
    delta = Binary("-", stop, start)
    divisor = Cast("float64", affine_value(div))
    step = Binary("/", delta, divisor)

    def element(index: Index) -> Expr:
        k = Cast("float64", affine_value(index[0]))
        stepped = Choice(Binary("==", step, Number(0.0)), Binary("*", Binary("/", k, divisor), delta), Binary("*", k, step))
        if div.is_constant:
            scaled = stepped if div.constant > 0 else Binary("*", k, delta)
        else:
            scaled = Choice(Binary(">", affine_value(div), Number(0)), stepped, Binary("*", k, delta))
        value: Expr = Binary("+", scaled, start)
        if endpoint and not (num.is_constant and num.constant <= 1):
            last = Binary("==", affine_value(index[0]), affine_value(num - AffineExpr.of_constant(1)))
            value = Choice(last if num.is_constant else Binary("and", last, Binary(">", affine_value(num), Number(1))), stop, value)
        return Cast(dtype, value) if dtype == "float32" else value

    return Value((Extent(num),), element, DtypeRule(fixed=dtype or "float64"))


@lowers("eye", "identity")
def _eye(lowering: Lowering, call: CallSite) -> Value:
    """`np.eye(n, m, k)` and `np.identity(n)`: ones on diagonal k, zeros elsewhere, float64 unless `dtype=`."""
    keywords = ("n", "dtype") if call.function == "identity" else ("N", "M", "k", "dtype")
    call.refuse_keywords(keywords[1:] if call.function == "eye" else ("dtype",))
    rows_node = call.argument(0, keywords[0])
    if rows_node is None or len(call.positional) > (1 if call.function == "identity" else 3):
        raise Refusal(
            call.node, f"`np.{call.function}` takes the number of rows" + (", of columns, and k" if call.function == "eye" else "")
        )
    rows = lowering.shape(rows_node, call.place)[0]
    columns_node = call.argument(1, "M") if call.function == "eye" else None
    columns = lowering.shape(columns_node, call.place)[0] if columns_node is not None and text(columns_node) != "None" else rows
    k_node = call.argument(2, "k") if call.function == "eye" else None
    k = affine_index(lowering.walk, k_node, call.place.scope) if k_node is not None else AffineExpr.of_constant(0)
    if not k.is_constant:
        raise Refusal(k_node, f"`{text(call.node)[:60]}`: the diagonal `k` must be an integer constant")
    rule = dtype_rule(lowering, call.keywords["dtype"], call.place) if "dtype" in call.keywords else DtypeRule(fixed="float64")
    dtype = rule.fixed

    def element(index: Index) -> Expr:
        on = Binary("==", affine_value(index[1] - index[0]), Number(k.constant))
        # 0 and 1 are exact in every type: another array's type (`dtype=x.dtype`) needs no conversion written out
        return Cast(dtype, Choice(on, Number(1), Number(0))) if dtype else Choice(on, Number(1), Number(0))

    return Value((rows, columns), element, rule)
