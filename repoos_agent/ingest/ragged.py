"""Rows of a compressed sparse matrix written as slices: `cols = A_col[A_row[i]:A_row[i + 1]]`.

A slice whose bounds are elements of an index array has a length only the data knows, so it is no `Value`
(whose extents are sizes). It is kept as a `RaggedView` under its name, and what the front end accepts of
it is a reduction to one number: `vals @ x[cols]`, `np.dot`, `np.sum`, `np.linalg.norm` of an elementwise
expression of rows over the same bounds, of gathers through them (`x[cols]`, an index-array read `x[A_col[k]]`)
and of scalars. That reduction lowers to the model of the loop form, `acc = 0` and then `acc += vals[k] *
x[cols[k]]` inside a loop `k` over `range(A_row[i], A_row[i + 1])` run within the statement instance (a
`DynamicLoop`), so legality, Z3 and the generated code treat both forms alike.

The two agree where the row pointers stay inside the arrays they slice: NumPy clips a bound past the end and
counts a negative one from the end, the loop does neither. The generated code checks before the run that
every value of the index array keeps the loop's reads inside the arrays (`codegen.index_checks`), the same
check the loop form gets; a call that fails it is refused, and a swapped function runs the Python original.
A stop below its start is an empty row in both. The loop adds in order; NumPy's dot leaves the order to
BLAS and its sum adds pairwise, which agree with it to the float tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from tree_sitter import Node

from repoos_agent.ingest.numpy.registry import Lowering
from repoos_agent.ingest.numpy.values import Place, Value
from repoos_agent.ingest.parse import slice_parts, text
from repoos_agent.ingest.scop import Refusal, affine_index, index_read, unparenthesised
from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import ArrayRef, Binary, Call, Cast, Expr, IndexRead, Name, Number, Unary
from repoos_agent.model.kernel import DtypeRule, DynamicLoop, LoopLimit

REDUCTIONS = ("dot", "sum", "linalg.norm")
"""What a row is reduced by: `np.dot(a, b)` (and `a @ b`, `a.dot(b)`), `np.sum(e)` (`e.sum()`), `np.linalg.norm(e)`."""
EMPTY_RAISES = ("max", "min", "amax", "amin", "mean", "prod")
"""Reductions of a row that NumPy refuses (or makes NaN of, with a warning) when the row is empty."""
OPERATORS = ("+", "-", "*", "/")
NUMPY = ("np", "np.linalg")


@dataclass(frozen=True)
class RaggedView:
    """`A_col[start:stop]` of a rank-1 argument, with `start` or `stop` an index-array element: the elements
    `array[k]` for `k` in `range(start, stop)` while the bounds stay inside the array (checked before the run)."""

    array: str
    start: LoopLimit
    stop: LoopLimit
    written: str  # the slice as the source writes it, for messages

    @property
    def variables(self) -> set[str]:
        """The loop variables and sizes its bounds read."""
        found: set[str] = set()
        for limit in (self.start, self.stop):
            indices = limit.ref.indices if isinstance(limit, IndexRead) else (limit,)
            found.update(v for index in indices if isinstance(index, AffineExpr) for v in index.variables)
        return found


class RaggedLowering(Lowering, Protocol):
    """What the rows' lowering uses of the front end (`ingest.arrays.ArrayLowering`)."""

    ragged: dict[str, RaggedView]

    def fresh_name(self, node: Node) -> str: ...

    def _visible_local(self, name: str) -> str | None: ...


def ragged_view(lowering: RaggedLowering, node: Node, place: Place) -> RaggedView | None:
    """The row `node` slices (`A_col[A_row[i]:A_row[i + 1]]`), or None when no bound of its slice is an
    index-array element (an ordinary slice, for the array front end)."""
    node = unparenthesised(node)
    if node.type != "subscript":
        return None
    items = [c for item in node.children_by_field_name("subscript") for c in _items(item)]
    if len(items) != 1 or items[0].type != "slice":
        return None
    start, stop, step = slice_parts(items[0])
    walk = lowering.walk
    start_read, stop_read = (_bound_read(lowering, part, place) for part in (start, stop))
    if start_read is None and stop_read is None:
        return None
    base = node.child_by_field_name("value")
    array = text(base)
    if base.type != "identifier" or array not in walk.arguments or walk.ranks.get(array) != 1:
        raise Refusal(
            node,
            f"`{text(node)}`: a slice whose bounds are read from an index array is modelled on a 1-d array argument",
        )
    if step is not None:
        raise Refusal(
            step,
            f"`{text(node)}`: a slice with a step between bounds read from an index array is not modelled; slice the whole row",
        )

    def limit(part: Node | None, read: IndexRead | None, at_end: bool) -> LoopLimit:
        if read is not None:
            return read
        if part is None:  # `A_col[:A_row[i]]` starts at 0, `A_col[A_row[i]:]` stops at the array's end
            return lowering.value(base, place).shape[0].size if at_end else AffineExpr.of_constant(0)
        try:
            return affine_index(walk, part, place.scope)
        except Refusal:
            raise Refusal(
                part, f"slice bound `{text(part)}` must be a size or an element of an integer array (plus a constant)"
            ) from None

    return RaggedView(array, limit(start, start_read, False), limit(stop, stop_read, True), text(node))


def is_ragged_reduction(lowering: RaggedLowering, node: Node, place: Place) -> bool:
    """Whether `node` reduces rows to one number (`vals @ x[cols]`, `np.sum(vals)`), or is a reduction of them
    NumPy raises on for an empty row: both are this module's to lower or refuse."""
    node = unparenthesised(node)
    if node.type not in ("binary_operator", "call") or not _mentions_rows(lowering, node, place):
        return False
    if node.type == "binary_operator" and text(node.child_by_field_name("operator")) == "@":
        return True
    return node.type == "call" and _reduction_name(lowering, node, place) in (*REDUCTIONS, *EMPTY_RAISES)


def ragged_reduction(lowering: RaggedLowering, node: Node, place: Place, name: str) -> Value:
    """Lower a reduction of rows into a new scalar local: `acc = 0`, then `acc += term` in a loop over the rows'
    common range run inside the statement instance. Returns the local (its square root for a norm)."""
    node = unparenthesised(node)
    function = "dot" if node.type == "binary_operator" else _reduction_name(lowering, node, place)
    operands = _operands(lowering, node, function)
    if function in EMPTY_RAISES:
        raise Refusal(
            node,
            f"`{text(node)[:60]}`: the {function} of a row whose bounds are read from an index array is not modelled "
            "(NumPy raises or warns on an empty row); its sum, dot product and norm are",
        )
    k = lowering.fresh_name(node)
    index = AffineExpr.of_variable(k)
    views: list[tuple[RaggedView, Node]] = []
    terms = [_element(lowering, operand, place, index, views) for operand in operands]
    for operand, (_, _, ragged) in zip(operands, terms, strict=True):
        if not ragged:
            raise Refusal(
                operand,
                f"`{text(operand)}` is a scalar, but `{text(node)[:60]}` reduces rows: NumPy's `{function}` takes arrays "
                "here; multiply the row by it instead",
            )
    view, first = views[0]
    for other, where in views[1:]:
        if (other.start, other.stop) != (view.start, view.stop):
            raise Refusal(
                where,
                f"`{text(first)}` ({view.written}) and `{text(where)}` ({other.written}) are rows over different bounds: "
                f"NumPy requires them of one length; slice both with the same bounds",
            )
    outside = sorted(view.variables - place.scope - set(lowering.walk.parameters) - set(lowering.walk.shape_parameters))
    if outside:
        raise Refusal(first, f"`{text(first)}` is the row `{view.written}` of loop `{outside[0]}`, used outside that loop")
    loop = DynamicLoop(k, view.start, view.stop, node.start_point[0] + 1)
    if function == "dot":
        (left, left_type, _), (right, right_type, _) = terms
        term, dtype = Binary("*", left, right), left_type.merged(right_type)
    elif function == "sum":  # NumPy sums narrow integers in int64
        ((term, dtype, _),) = terms
        dtype, term = DtypeRule(dtype.sources, dtype.floating, dtype.fixed, widened=True), Cast("widened", term)
    else:
        ((term, dtype, _),) = terms
    if function == "linalg.norm":  # NumPy's 2-norm of a vector: `sqrt(x.dot(x))`, integers made floats first
        dtype = DtypeRule(dtype.sources, True, dtype.fixed)
        term = Binary("*", term, term)
    accumulator, _ = lowering.output((), dtype, None, name or "row_" + function.removeprefix("linalg."), node, set(), place)
    total = accumulator.element(())
    assert isinstance(total, Name)
    lowering.emit((), "=", lambda _: (total, Number(0)), place, node)
    lowering.emit((), "+=", lambda _: (total, term), place, node, inner=(loop,))
    if function == "linalg.norm":
        return Value((), lambda _: Call("sqrt", (total,), "np"), dtype)
    return Value((), lambda _: total, dtype)


def ragged_refusal(node: Node, name: str, view: RaggedView) -> Refusal:
    """A row used other than in a reduction: its length is data, which no array of the model has."""
    return Refusal(
        node,
        f"`{name}` is the row `{view.written}`, whose length the data decides: it is modelled inside a sum, a dot "
        f"product or a norm (`{name} @ x[cols]`, `np.dot(...)`, `np.sum({name} * ...)`, `np.linalg.norm({name})`), "
        "not as an array of its own",
    )


def _operands(lowering: RaggedLowering, node: Node, function: str) -> list[Node]:
    """The expressions a reduction takes: two for a dot product, one otherwise; no keywords (`axis=` of a row)."""
    if node.type == "binary_operator":
        return [node.child_by_field_name("left"), node.child_by_field_name("right")]
    callee = node.child_by_field_name("function")
    arguments = [a for a in node.child_by_field_name("arguments").named_children if a.type != "comment"]
    if callee.type == "attribute" and lowering.walk.names.canonical(text(callee)).rpartition(".")[0] not in NUMPY:
        arguments = [callee.child_by_field_name("object"), *arguments]
    wanted = 2 if function == "dot" else 1
    if len(arguments) != wanted or any(a.type in ("keyword_argument", "list_splat", "dictionary_splat") for a in arguments):
        raise Refusal(
            node,
            f"`{text(node)[:60]}`: of a row whose bounds are read from an index array, `{function}` is modelled with "
            f"{wanted} array argument(s) and no keywords",
        )
    return arguments


def _element(
    lowering: RaggedLowering, node: Node, place: Place, k: AffineExpr, views: list[tuple[RaggedView, Node]]
) -> tuple[Expr, DtypeRule, bool]:
    """Element `k` of an elementwise expression of rows, gathers through them and scalars, its type, and whether it
    reads a row at all (a scalar broadcasts; a fixed-length array does not meet a row)."""
    node = unparenthesised(node)
    ragged = lowering.ragged
    if not _mentions_rows(lowering, node, place):
        value = lowering.value(node, place)
        if value.rank:
            raise Refusal(
                node,
                f"`{text(node)}` has a fixed length, but it meets a row whose length the data decides: NumPy would "
                "need them equal; slice it with the same bounds",
            )
        return value.element(()), value.dtype, False
    if node.type == "identifier":
        view = ragged[text(node)]
        views.append((view, node))
        return ArrayRef(view.array, (k,)), DtypeRule((view.array,)), True
    if _is_row_slice(lowering, node, place):
        view = _row(lowering, node, place)
        views.append((view, node))
        return ArrayRef(view.array, (k,)), DtypeRule((view.array,)), True
    if node.type == "subscript":
        return _gather(lowering, node, place, k, views)
    if node.type == "unary_operator" and text(node.child_by_field_name("operator")) in ("-", "+"):
        operand, dtype, _ = _element(lowering, node.child_by_field_name("argument"), place, k, views)
        return (Unary("-", operand) if text(node.child_by_field_name("operator")) == "-" else operand), dtype, True
    if node.type == "binary_operator" and text(node.child_by_field_name("operator")) in OPERATORS:
        op = text(node.child_by_field_name("operator"))
        left, left_type, _ = _element(lowering, node.child_by_field_name("left"), place, k, views)
        right, right_type, _ = _element(lowering, node.child_by_field_name("right"), place, k, views)
        dtype = left_type.merged(right_type)
        if op == "/":
            dtype = DtypeRule(dtype.sources, True, dtype.fixed)
        return Binary(op, left, right), dtype, True
    raise Refusal(
        node,
        f"`{text(node)[:60]}`: of rows whose bounds are read from an index array, elementwise `+ - * /`, gathers "
        "(`x[cols]`) and scalars are modelled inside a sum, a dot product or a norm",
    )


def _gather(
    lowering: RaggedLowering, node: Node, place: Place, k: AffineExpr, views: list[tuple[RaggedView, Node]]
) -> tuple[Expr, DtypeRule, bool]:
    """`x[cols]` (or `x[A_col[lo:hi]]`) with `cols` a row of an index-array argument: element `k` reads `x[A_col[k]]`."""
    base = node.child_by_field_name("value")
    items = [c for item in node.children_by_field_name("subscript") for c in _items(item)]
    walk, array = lowering.walk, text(base)
    if base.type == "identifier" and array in lowering.ragged:
        raise ragged_refusal(node, array, lowering.ragged[array])
    row = len(items) == 1 and (
        (items[0].type == "identifier" and text(items[0]) in lowering.ragged) or _is_row_slice(lowering, items[0], place)
    )
    if not row:
        raise Refusal(
            node,
            f"`{text(node)}`: a row whose bounds are read from an index array is modelled as a whole index (`x[cols]`), "
            "inside a sum, a dot product or a norm",
        )
    if base.type != "identifier" or array not in walk.arguments or walk.ranks.get(array) != 1:
        raise Refusal(node, f"`{text(node)}`: a gather through a row is modelled from a 1-d array argument (`x[cols]`)")
    view = lowering.ragged.get(text(items[0])) or _row(lowering, items[0], place)
    views.append((view, items[0]))
    walk.index_arrays.setdefault(view.array, node)
    return ArrayRef(array, (IndexRead(ArrayRef(view.array, (k,))),)), DtypeRule((array,)), True


def _row(lowering: RaggedLowering, node: Node, place: Place) -> RaggedView:
    """The row a slice written as one reads (`_is_row_slice`), or why its bounds are not those of a row."""
    view = ragged_view(lowering, node, place)
    if view is None:
        raise Refusal(
            node,
            f"`{text(node)}`: a slice bound read from an index array is modelled as one element of it plus a constant "
            "(`A_col[A_row[i] : A_row[i + 1]]`)",
        )
    return view


def _reduction_name(lowering: RaggedLowering, node: Node, place: Place) -> str:
    """`dot`, `sum`, `linalg.norm`, ... for `np.dot(...)` and `x.dot(...)`; "" for any other call."""
    callee = node.child_by_field_name("function")
    module, _, method = lowering.walk.names.canonical(text(callee)).rpartition(".")
    if module in NUMPY:
        return f"{module}.{method}".removeprefix("np.")
    if callee.type == "attribute" and _mentions_rows(lowering, callee.child_by_field_name("object"), place):
        return method if method in ("dot", "sum", *EMPTY_RAISES) else ""
    return ""


def _bound_read(lowering: RaggedLowering, part: Node | None, place: Place) -> IndexRead | None:
    """A slice bound read from an index array: `A_row[i + 1]`, or a name bound to one in the same body (`lo` of
    `lo, hi = A_row[i], A_row[i + 1]`), plus a constant; None for any other bound."""
    if part is None:
        return None
    read = index_read(lowering.walk, part, place.scope) or _bound_scalar(lowering, part, place)
    if read is not None:
        lowering.walk.index_arrays.setdefault(read.ref.array, part)
    return read


def _bound_scalar(lowering: RaggedLowering, part: Node, place: Place) -> IndexRead | None:
    """`lo` (or `lo + 1`) when the last statement that assigns `lo` is `lo = A_row[i]`, with `A_row` an argument,
    in the body the slice is in (same loops, same guards): each iteration binds it before the slice reads it,
    and no statement writes it in between. The slice then reads the index array as a written bound does."""
    node, offset = unparenthesised(part), 0
    if node.type == "binary_operator" and text(node.child_by_field_name("operator")) in ("+", "-"):
        right = unparenthesised(node.child_by_field_name("right"))
        if right.type != "integer":
            return None
        offset = int(text(right), 0) * (1 if text(node.child_by_field_name("operator")) == "+" else -1)
        node = unparenthesised(node.child_by_field_name("left"))
    walk = lowering.walk
    if node.type != "identifier" or text(node) in place.scope or text(node) in walk.index_aliases:
        return None
    local = lowering._visible_local(text(node))
    writes = [raw for raw in walk.statements if local is not None and raw.target == Name(local)]
    if not writes:
        return None
    last = writes[-1]
    value = last.value
    if (
        last.op != "="
        or last.inner
        or not isinstance(value, ArrayRef)
        or not value.is_affine
        or value.array not in walk.arguments
        or (last.loops, last.guards, last.positions[:-1]) != (place.loops, place.guards, tuple(place.positions))
    ):
        return None
    return IndexRead(value, offset)


def _mentions_rows(lowering: RaggedLowering, node: Node, place: Place) -> bool:
    """Whether `node` reads a row: a name bound to one, or a slice with bounds read from an array."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "identifier" and text(current) in lowering.ragged:
            return True
        if _is_row_slice(lowering, current, place):
            return True
        stack.extend(current.named_children)
    return False


def _is_row_slice(lowering: RaggedLowering, node: Node, place: Place) -> bool:
    """Whether `node` is written as a row, `a[p[i]:p[i + 1]]`: one slice, a bound of which reads an array element
    (`ragged_view` then reads it, or says why it cannot)."""
    node = unparenthesised(node)
    if node.type != "subscript":
        return False
    items = [c for item in node.children_by_field_name("subscript") for c in _items(item)]
    if len(items) != 1 or items[0].type != "slice":
        return False
    arrays = lowering.walk.arrays
    for part in slice_parts(items[0])[:2]:
        if part is not None and _bound_scalar(lowering, part, place) is not None:
            return True
        stack = [part] if part is not None else []
        while stack:
            current = stack.pop()
            base = current.child_by_field_name("value") if current.type == "subscript" else None
            if base is not None and base.type == "identifier" and text(base) in arrays:
                return True
            stack.extend(current.named_children)
    return False


def _items(item: Node) -> list[Node]:
    return list(item.named_children) if item.type == "expression_list" else [item]
