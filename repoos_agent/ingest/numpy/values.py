"""The value algebra of NumPy expressions: an array expression is a `Value`, its extents and a function from an
element index to that element's scalar expression. Views, broadcasting and transposes only compose these
functions, so a chain of them stays one element expression and NumPy's temporaries disappear. Nothing here
emits a statement: that is `ingest.arrays`' job."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import Refusal, unparenthesised
from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import Binary, Cast, Expr, Number, array_refs
from repoos_agent.model.kernel import Condition, DtypeRule, Extent, Loop

Index = tuple[AffineExpr, ...]


@dataclass(frozen=True)
class View:
    """Stored memory behind a value: writes to the value go to `array` at `index(element index)`."""

    array: str
    index: Callable[[Index], Index]


@dataclass(frozen=True)
class Value:
    """An array (or scalar) expression: its extents and the scalar expression of each element."""

    shape: tuple[Extent, ...]
    element: Callable[[Index], Expr]
    dtype: DtypeRule
    view: View | None = None
    boolean: bool = False

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Items:
    """What a NumPy function returning a tuple gives (`np.histogram`'s counts and edges): its items, each stored.
    A statement takes one (`np.histogram(x, 8)[0]`) or unpacks them all (`hist, edges = np.histogram(x, 8)`)."""

    values: tuple[Value, ...]


@dataclass
class Place:
    """Where a statement sits: its enclosing loops and guards, and its slot in the enclosing body."""

    loops: tuple[Loop, ...]
    guards: tuple[Condition, ...]
    positions: tuple[int, ...]  # the enclosing bodies' places, without the statement's own slot
    counter: list[int]

    @property
    def scope(self) -> set[str]:
        return {loop.name for loop in self.loops}


def row(value: Value, position: AffineExpr) -> Value:
    """`value[position]`: its row (its element for a vector), a view of the same memory where `value` is one."""

    def whole(index: Index) -> Index:
        return (position, *index)

    source = value.view
    view = View(source.array, lambda index: source.index(whole(index))) if source is not None else None
    return Value(value.shape[1:], lambda index: value.element(whole(index)), value.dtype, view, value.boolean)


def strong(rule: DtypeRule) -> DtypeRule:
    """The rule of a NumPy value made from `rule`'s: its Python numbers become NumPy's float64 or int64."""
    if rule.fixed:
        return rule
    return DtypeRule(tuple(s if s.startswith("!") else f"!{s}" for s in rule.sources), rule.floating, widened=rule.widened)


def floating(value: Value) -> Value:
    """`value` as true division or a math function makes it: integers become float64."""
    return Value(value.shape, value.element, DtypeRule(value.dtype.sources, True, value.dtype.fixed), value.view, value.boolean)


def widened(value: Value) -> Value:
    """`value`'s elements as NumPy sums and multiplies them (`np.sum`, `np.prod`, `np.cumsum`): integers narrower
    than int64 in int64, so a sum of int32 elements does not wrap where NumPy's does not."""
    rule = value.dtype
    return Value(
        value.shape,
        lambda index: Cast("widened", value.element(index)),
        DtypeRule(rule.sources, rule.floating, rule.fixed, widened=True),
    )


def converted(value: Value, dtype: str) -> Value:
    """`value.astype(dtype)` or `np.float32(value)`: every element rounded to `dtype`, as NumPy does before
    anything else meets it (`x.astype(np.float32) * 0.1` multiplies in float32); to `bool`, whether it is
    not zero."""
    if dtype == "bool":
        return Value(value.shape, lambda index: Binary("!=", value.element(index), Number(0)), DtypeRule(fixed="bool"), None, True)
    return Value(value.shape, lambda index: Cast(dtype, value.element(index)), DtypeRule(fixed=dtype))


def is_whole(value: Value) -> bool:
    """Whether a view covers its array exactly, in order (`A`, not `A[1:]` or `A.T`)."""
    if value.view is None:
        return False
    probe = tuple(AffineExpr.of_variable(f"_w{d}") for d in range(value.rank))
    return value.view.index(probe) == probe


def transposed(value: Value, node: Node) -> Value:
    """`value.T`: a vector is its own transpose; a matrix swaps its two indices (a view stays a view)."""
    if value.rank == 1:
        return value
    if value.rank != 2:
        raise Refusal(node, f"`{text(node)[:60]}`: the transpose of an array of rank {value.rank} is not modelled (2-d only)")
    view = View(value.view.array, lambda index: value.view.index((index[1], index[0]))) if value.view is not None else None
    return Value(
        (value.shape[1], value.shape[0]), lambda index: value.element((index[1], index[0])), value.dtype, view, value.boolean
    )


def column(value: Value) -> Value:
    """A vector as an (n, 1) column, for `np.outer`."""
    return Value((value.shape[0], Extent(AffineExpr.of_constant(1))), lambda index: value.element((index[0],)), value.dtype)


def is_one(extent: Extent) -> bool:
    return extent.divisor == 1 and extent.size.is_constant and extent.size.constant == 1


def broadcast(shapes: list[tuple[Extent, ...]], node: Node) -> tuple[tuple[Extent, ...], list[Callable[[Index], Index]]]:
    """NumPy's broadcasting: shapes aligned at the right; a dimension of extent 1 stretches."""
    rank = max((len(shape) for shape in shapes), default=0)
    result: list[Extent] = []
    for position in range(rank):
        extents = [shape[position - (rank - len(shape))] for shape in shapes if position >= rank - len(shape)]
        wide = [extent for extent in extents if not is_one(extent)]
        if not wide:
            result.append(Extent(AffineExpr.of_constant(1)))
            continue
        first = wide[0]
        for other in wide[1:]:
            if other != first and other.size.is_constant and first.size.is_constant:
                raise Refusal(node, f"`{text(node)[:60]}`: extents {first} and {other} do not broadcast")
        result.append(first)
    mappers = []
    for shape in shapes:
        offset = rank - len(shape)

        def mapper(index: Index, shape: tuple[Extent, ...] = shape, offset: int = offset) -> Index:
            return tuple(
                AffineExpr.of_constant(0) if is_one(extent) and not is_one(result[d + offset]) else index[d + offset]
                for d, extent in enumerate(shape)
            )

        mappers.append(mapper)
    return tuple(result), mappers


def broadcast_to(value: Value, shape: tuple[Extent, ...], node: Node) -> Callable[[Index], Index]:
    """How the target's index reads the value; the value's shape must broadcast to the target's."""
    if value.rank > len(shape):
        raise Refusal(node, f"`{text(node)[:60]}` has rank {value.rank}; the target has rank {len(shape)}")
    offset = len(shape) - value.rank
    for d, extent in enumerate(value.shape):
        wanted = shape[d + offset]
        if not is_one(extent) and extent != wanted and extent.size.is_constant and wanted.size.is_constant:
            raise Refusal(node, f"`{text(node)[:60]}`: extent {extent} does not broadcast to the target's {wanted}")

    def mapper(index: Index) -> Index:
        return tuple(
            AffineExpr.of_constant(0) if is_one(extent) and not is_one(shape[d + offset]) else index[d + offset]
            for d, extent in enumerate(value.shape)
        )

    return mapper


def arrays_read(value: Value) -> set[str]:
    """The arrays any element of `value` reads."""
    probe = tuple(AffineExpr.of_variable(f"_r{d}") for d in range(value.rank))
    return {ref.array for ref in array_refs(value.element(probe))}


def subscript_count(node: Node) -> int:
    """How many indices a chain of subscripts (`A[i][j, k]`) gives."""
    total = 0
    while node.type == "subscript":
        for item in node.children_by_field_name("subscript"):
            total += len(item.named_children) if item.type == "expression_list" else 1
        node = node.child_by_field_name("value")
    return total


def masked(node: Node) -> tuple[Node, Node] | None:
    """(`x`, `mask`) for `x[mask]` with a boolean-valued subscript written in place (`x > 0`, `(a < b) & c`, `~m`)."""
    node = unparenthesised(node)
    if node.type != "subscript" or subscript_count(node) != 1:
        return None
    item = unparenthesised(node.child_by_field_name("subscript"))
    boolean = item.type in ("comparison_operator", "not_operator") or (
        item.type in ("binary_operator", "unary_operator") and text(item.child_by_field_name("operator")) in ("&", "|", "^", "~")
    )
    return (node.child_by_field_name("value"), item) if boolean else None
