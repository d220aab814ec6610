"""Shape and layout: functions that only change which element an index reads (`np.transpose`, `x.reshape(n, 2)`,
`np.flip`, `np.triu`), so they compose into the element expression and store nothing; a view stays a view.

A reshape's index map is affine when each dimension of the source splits into dimensions whose extents after
the first are constants (`x.reshape(n, 2)`: element (i, j) reads `x[2*i + j]`), or several merge into one
whose inner extents are constants. A merge reads `x[k // 3, k % 3]`, which is not affine: it is computed
the other way round, writing each source element where it lands, into a copy, which is what NumPy returns
for `flatten` and for a computed array; a merging view of memory a name holds is refused."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tree_sitter import Node

from repoos_agent.ingest.numpy.reductions import axes_argument
from repoos_agent.ingest.numpy.registry import CallSite, Lowering, lowers
from repoos_agent.ingest.numpy.values import Index, Value, View, is_one, transposed
from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import Refusal, affine_index, affine_value, unparenthesised
from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import ArrayRef, Binary, Choice, Expr, Number
from repoos_agent.model.kernel import Extent


@lowers("transpose", methods=("transpose",))
def _transpose(lowering: Lowering, call: CallSite) -> Value:
    """The 2-d transpose. `axes` (`x.transpose(1, 0)`, `axes=`) is refused: a permutation that is the identity
    (`(0, 1)`) must not be taken for a transpose."""
    if "axes" in call.keywords or len(call.positional) > 1:
        raise Refusal(call.node, f"`{call.spelled}` with `axes` is not modelled; only the 2-d transpose")
    (value,) = call.values(lowering, 1)
    return transposed(value, call.node)


def remapped(value: Value, shape: tuple[Extent, ...], source_index: Callable[[Index], Index]) -> Value:
    """`value` read through an index map: element `index` of the result is `value`'s at `source_index(index)`,
    and writes to it go to the same memory when `value` is a view."""
    source = value.view
    view = View(source.array, lambda index: source.index(source_index(index))) if source is not None else None
    return Value(shape, lambda index: value.element(source_index(index)), value.dtype, view, value.boolean)


# ---- reshape, ravel, flatten -------------------------------------------------------------------------------

WILD = None  # a `-1` extent: NumPy infers it


@dataclass(frozen=True)
class _Group:
    """Source dimensions and target dimensions whose extents multiply to the same size; one side has one."""

    source: tuple[int, ...]
    target: tuple[int, ...]

    @property
    def merges(self) -> bool:
        return len(self.source) > 1


def _product(sizes: list[AffineExpr]) -> AffineExpr | None:
    """A product of extents while it stays affine (at most one is not a constant), else None."""
    constant, symbolic = 1, None
    for size in sizes:
        if size.is_constant:
            constant *= size.constant
        elif symbolic is None:
            symbolic = size
        else:
            return None
    return symbolic.scaled(constant) if symbolic is not None else AffineExpr.of_constant(constant)


def _divided(size: AffineExpr, divisor: int) -> AffineExpr | None:
    """`size / divisor` when it is an affine size (every coefficient divisible), else None."""
    if divisor <= 0 or size.constant % divisor or any(c % divisor for _, c in size.terms):
        return None
    return AffineExpr(tuple((n, c // divisor) for n, c in size.terms), size.constant // divisor)


class _Reshape:
    """A C-order reshape of `source` extents into `target` ones (None for `-1`), grouped into affine pieces."""

    def __init__(self, lowering: Lowering, source: tuple[Extent, ...], target: list[AffineExpr | None]) -> None:
        self.lowering = lowering
        self.source = [d for d, extent in enumerate(source) if not is_one(extent)]
        self.target = [d for d, size in enumerate(target) if size is None or size != AffineExpr.of_constant(1)]
        self.source_sizes = [extent.size for extent in source]
        self.target_sizes = target
        self.assumed: list[tuple[AffineExpr, ...]] = []

    def groups(self) -> list[_Group] | None:
        """The grouping of the non-unit dimensions that needs the fewest assumptions on the sizes, then splits
        most evenly (`img.reshape(4, 2, 4, 2)` splits each dimension in two); None when none is affine."""
        if not self.source:
            return [] if all(self.target_sizes[d] is None for d in self.target) else None
        solutions = list(self._search(0, 0))
        if not solutions:
            return None
        groups, assumed = min(solutions, key=lambda found: (len(found[1]), max(len(g.source) + len(g.target) for g in found[0])))
        self.assumed = assumed
        return groups

    def _search(self, p: int, q: int) -> Iterator[tuple[list[_Group], list[tuple[AffineExpr, ...]]]]:
        """Every grouping of source dimensions from `p` and target ones from `q`, with the equalities it assumes."""
        if p == len(self.source) and q == len(self.target):
            yield [], []
            return
        for ks in range(1, len(self.source) - p + 1):
            for kt in range(1, len(self.target) - q + 1):
                if ks > 1 and kt > 1:
                    continue
                group = _Group(tuple(self.source[p : p + ks]), tuple(self.target[q : q + kt]))
                status = self._fits(group)
                if status is None:
                    continue
                for rest, assumed in self._search(p + ks, q + kt):
                    yield [group, *rest], ([status, *assumed] if status else assumed)

    def _fits(self, group: _Group) -> tuple[AffineExpr, ...] | None:
        """() when the group's sizes agree, (a, b) when they agree if the sizes a and b are equal (NumPy raises
        otherwise, so the call is checked for it), None when they cannot or the index map is not affine."""
        sources = [self.source_sizes[d] for d in group.source]
        targets = [self.target_sizes[d] for d in group.target]
        if any(not size.is_constant for size in sources[1:]) or any(size is None or not size.is_constant for size in targets[1:]):
            return None
        left = _product(sources)
        if left is None:
            return None
        if targets[0] is None:
            inner = _product([size for size in targets[1:] if size is not None])
            assert inner is not None
            return () if _divided(left, inner.constant) is not None else None
        right = _product([size for size in targets if size is not None])
        if right is None:
            return None
        if left == right or (len(group.source) == 1 == len(group.target) and self._known_equal(left, right)):
            return ()
        if left.is_constant and right.is_constant:
            return None
        return (left, right)

    def _known_equal(self, first: AffineExpr, second: AffineExpr) -> bool:
        return self.lowering.same_shape((Extent(first),), (Extent(second),))

    def extents(self, groups: list[_Group]) -> tuple[Extent, ...]:
        """The target's extents, `-1` resolved."""
        sizes = list(self.target_sizes)
        for group in groups:
            if sizes[group.target[0]] is None:
                left = _product([self.source_sizes[d] for d in group.source])
                inner = _product([sizes[d] for d in group.target[1:] if sizes[d] is not None])
                assert left is not None and inner is not None
                sizes[group.target[0]] = _divided(left, inner.constant)
        return tuple(Extent(size if size is not None else AffineExpr.of_constant(1)) for size in sizes)


def _strides(sizes: list[AffineExpr]) -> list[int]:
    """C-order strides of a group's dimensions, whose extents after the first are constants."""
    strides, stride = [], 1
    for size in reversed(sizes):
        strides.append(stride)
        stride *= size.constant if size.is_constant else 1
    return strides[::-1]


def _flat(index: Index, dims: tuple[int, ...], sizes: list[AffineExpr]) -> AffineExpr:
    total = AffineExpr.of_constant(0)
    for dim, stride in zip(dims, _strides([sizes[d] for d in dims]), strict=True):
        total = total + index[dim].scaled(stride)
    return total


def _target_extents(lowering: Lowering, call: CallSite, nodes: list[Node]) -> list[AffineExpr | None]:
    """The extents a reshape asks for: `x.reshape(n, 2)`, `x.reshape((n, 2))`, `np.reshape(x, y.shape)`."""
    if len(nodes) == 1 and unparenthesised(nodes[0]).type in ("tuple", "list"):
        nodes = unparenthesised(nodes[0]).named_children
    elif len(nodes) == 1 and unparenthesised(nodes[0]).type == "attribute":
        return [extent.size for extent in lowering.shape(nodes[0], call.place)]
    sizes: list[AffineExpr | None] = []
    for node in nodes:
        if text(node).replace(" ", "") == "-1":
            sizes.append(WILD)
            continue
        try:
            size = affine_index(lowering.walk, node, call.place.scope)
        except Refusal:
            raise Refusal(
                node,
                f"`{text(call.node)[:60]}`: extent `{text(node)}` is not affine in the sizes, so the reshape's index map "
                "is not affine; reshape by constants (`x.reshape(n, 2)` of a vector of 2n) or write the loops over the "
                "shape you need",
            ) from None
        if size.is_constant and size.constant < 0:
            raise Refusal(node, f"`{text(call.node)[:60]}`: extent {size.constant} (only -1 is inferred)")
        sizes.append(size)
    if sum(size is WILD for size in sizes) > 1:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: only one extent may be -1")
    return sizes


def reshaped(lowering: Lowering, call: CallSite, value: Value, target: list[AffineExpr | None], copy: bool) -> Value:
    """`value` in the `target` extents, in C order: a view of the same memory when the index map is affine and
    `copy` is not asked for; a new array otherwise, when the copy's writes are affine."""
    node = call.node
    if any(extent.divisor != 1 for extent in value.shape):
        raise Refusal(node, f"`{text(node)[:60]}`: reshaping a strided slice is not modelled; copy it first")
    if value.boolean:
        raise Refusal(node, f"`{text(node)[:60]}`: reshaping a boolean array is not modelled")
    plan = _Reshape(lowering, value.shape, target)
    groups = plan.groups()
    if groups is None:
        shown = ", ".join("-1" if size is None else str(size) for size in target)
        raise Refusal(
            node,
            f"`{text(node)[:60]}`: reshaping extents ({', '.join(str(e) for e in value.shape)}) into ({shown}) is not "
            "affine: each dimension must split into (or merge from) dimensions whose extents after the first are "
            "constants; write the loops over the shape you need",
        )
    for first, second in plan.assumed:
        lowering.assume_equal(Extent(first), Extent(second))
    shape = plan.extents(groups)
    sources, targets = plan.source_sizes, [extent.size for extent in shape]
    rank = value.rank
    merging = any(group.merges for group in groups)
    if not merging and not copy:

        def source_index(index: Index) -> Index:
            result = [AffineExpr.of_constant(0)] * rank
            for group in groups:
                result[group.source[0]] = _flat(index, group.target, targets)
            return tuple(result)

        return remapped(value, shape, source_index)
    if merging and not copy and _named(lowering, value):
        raise Refusal(
            node,
            f"`{text(node)[:60]}` merges dimensions of stored memory: NumPy's view reads it at a floor division and a "
            "remainder of the index, which is not affine; `.flatten()` (a copy) is modelled",
        )
    return _copied(lowering, call, value, shape, groups, sources, targets)


def _named(lowering: Lowering, value: Value) -> bool:
    """Whether a value is memory a name holds (an argument, a local): a copy of it would not see later writes as
    NumPy's view does. A temporary (`np.stack([x, y]).ravel()`) has no name to write it through."""
    if value.view is None:
        return False
    array = value.view.array
    held = (local.view.array for local in lowering.locals.values() if local.view is not None)
    return array in lowering.walk.arguments or array in held


def _copied(
    lowering: Lowering,
    call: CallSite,
    value: Value,
    shape: tuple[Extent, ...],
    groups: list[_Group],
    sources: list[AffineExpr],
    targets: list[AffineExpr],
) -> Value:
    """The reshape stored into a new array, one statement over the finer dimensions of each group (a merge's
    source dimensions, a split's target ones), so both its read and its write are affine."""
    loops: list[tuple[str, int]] = []  # ("s" or "t", dimension)
    for group in groups:
        side = "s" if group.merges else "t"
        loops += [(side, d) for d in (group.source if group.merges else group.target)]
    extents = tuple(Extent(sources[d] if side == "s" else targets[d]) for side, d in loops)
    allocation = lowering.allocate(call.name or call.function, shape, value.dtype, call.node, place=call.place)

    def body(index: Index) -> tuple[ArrayRef, Expr]:
        source_at = [AffineExpr.of_constant(0)] * value.rank
        target_at = [AffineExpr.of_constant(0)] * len(shape)
        fine = {(side, d): index[position] for position, (side, d) in enumerate(loops)}
        for group in groups:
            if group.merges:
                source_dims = {d: fine[("s", d)] for d in group.source}
                for d in group.source:
                    source_at[d] = source_dims[d]
                target_at[group.target[0]] = _flat(tuple(source_at), group.source, sources)
            else:
                for d in group.target:
                    target_at[d] = fine[("t", d)]
                source_at[group.source[0]] = _flat(tuple(target_at), group.target, targets)
        return ArrayRef(allocation, tuple(target_at)), value.element(tuple(source_at))

    lowering.emit(extents, "=", body, call.place, call.statement)
    return lowering.stored(allocation, shape, value.dtype)


def _order_is_c(call: CallSite) -> None:
    order = call.keywords.get("order")
    if order is not None and text(order).strip("'\"") != "C":
        raise Refusal(order, f"`{text(call.node)[:60]}`: only C order is modelled")


@lowers("reshape", methods=("reshape",))
def _reshape(lowering: Lowering, call: CallSite) -> Value:
    """`x.reshape(n, 2)`, `x.reshape((n, 2))`, `np.reshape(x, (n, 2))`, with at most one `-1`."""
    call.refuse_keywords(("order", "newshape", "shape"))
    _order_is_c(call)
    if not call.positional:
        raise Refusal(call.node, f"`{call.spelled}` needs an array")
    value = lowering.value(call.positional[0], call.place)
    nodes = call.positional[1:] or [call.keywords[k] for k in ("shape", "newshape") if k in call.keywords]
    if not nodes:
        raise Refusal(call.node, f"`{call.spelled}` needs the new shape")
    return reshaped(lowering, call, value, _target_extents(lowering, call, nodes), copy=False)


@lowers("ravel", methods=("ravel", "flatten"))
def _ravel(lowering: Lowering, call: CallSite) -> Value:
    """`np.ravel(x)` and `x.ravel()`: a view where NumPy's is affine; `x.flatten()`: always a copy."""
    call.refuse_keywords(("order",))
    _order_is_c(call)
    (value,) = call.values(lowering, 1)
    return reshaped(lowering, call, value, [WILD], copy=call.function == "flatten")


# ---- flips and triangles -----------------------------------------------------------------------------------


def flipped(value: Value, axes: tuple[int, ...], node: Node) -> Value:
    """`value` reversed along `axes`: a view, element i reading `n - 1 - i`."""
    if any(value.shape[axis].divisor != 1 for axis in axes):
        raise Refusal(node, f"`{text(node)[:60]}`: flipping a strided slice is not modelled; copy it first")

    def source_index(index: Index) -> Index:
        return tuple(
            value.shape[d].size - AffineExpr.of_constant(1) - position if d in axes else position
            for d, position in enumerate(index)
        )

    return remapped(value, value.shape, source_index)


@lowers("flip")
def _flip(lowering: Lowering, call: CallSite) -> Value:
    """`np.flip(x)` (every axis) or `np.flip(x, axis)`."""
    call.refuse_keywords(("axis",))
    if not 1 <= len(call.positional) <= 2:
        raise Refusal(call.node, "`np.flip` takes an array and an optional `axis`")
    value = lowering.value(call.positional[0], call.place)
    if value.rank == 0:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: flipping a scalar is not modelled")
    return flipped(value, axes_argument(call.argument(1, "axis"), value.rank), call.node)


@lowers("flipud", "fliplr")
def _flip_rows_or_columns(lowering: Lowering, call: CallSite) -> Value:
    """`np.flipud(x)` reverses axis 0, `np.fliplr(x)` axis 1 (of an array of rank 2 or more)."""
    (value,) = call.values(lowering, 1)
    axis = 0 if call.function == "flipud" else 1
    if value.rank <= axis:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: `np.{call.function}` needs an array of rank {axis + 1} or more")
    return flipped(value, (axis,), call.node)


@lowers("triu", "tril")
def _triangle(lowering: Lowering, call: CallSite) -> Value:
    """`np.triu(A, k)` keeps the elements on and above diagonal k of the last two axes (`tril`: on and below) and
    zeros the others: an element expression, `A[i, j] if j - i >= k else 0`."""
    call.refuse_keywords(("k",))
    if not 1 <= len(call.positional) <= 2:
        raise Refusal(call.node, f"`np.{call.function}` takes an array and an optional `k`")
    value = lowering.value(call.positional[0], call.place)
    if value.rank < 2:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: `np.{call.function}` of an array of rank {value.rank} (2 or more)")
    if value.boolean:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: `np.{call.function}` of a boolean array is not modelled")
    k_node = call.argument(1, "k")
    k = affine_index(lowering.walk, k_node, call.place.scope) if k_node is not None else AffineExpr.of_constant(0)
    if not k.is_constant:
        raise Refusal(k_node, f"`{text(call.node)[:60]}`: the diagonal `k` must be an integer constant")
    op = ">=" if call.function == "triu" else "<="

    def element(index: Index) -> Expr:
        above = Binary(op, affine_value(index[-1] - index[-2]), Number(k.constant))
        return Choice(above, value.element(index), Number(0))

    return Value(value.shape, element, value.dtype)
