"""Arrays assembled from pieces: `np.roll`, `np.tile`, `np.concatenate` and its kin, `np.pad`, and `np.copyto`.

Each result is stored, one statement per piece, every piece's read and write affine: a roll by a constant is
two copies per rolled axis (`out[s:] = x[:n - s]`, `out[:s] = x[n - s:]`), where the element form would read
`x[(i - s) % n]`. A piece that runs off its array when the sizes are smaller than the constants (a roll by
more than the length) is caught by the generated code's bounds checks, so such a call runs the original."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from itertools import product

from tree_sitter import Node

from repoos_agent.ingest.numpy.reductions import stored_at
from repoos_agent.ingest.numpy.registry import CallSite, Lowering, lowers
from repoos_agent.ingest.numpy.values import Index, Value, arrays_read
from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import Refusal, affine_index, unparenthesised
from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import ArrayRef, Choice, Expr, Name, Number
from repoos_agent.model.kernel import DtypeRule, Extent

MOST_PIECES = 16
"""Pieces one call may emit (`np.tile(x, 100)` would emit a hundred statements): beyond, write the loops."""

Piece = tuple[tuple[Extent, ...], Callable[[Index], Index], Callable[[Index], Expr]]
"""A piece's extents, where its element goes in the result, and its element."""

ZERO = AffineExpr.of_constant(0)


def _constant(lowering: Lowering, node: Node, what: str, call: CallSite) -> int:
    try:
        value = affine_index(lowering.walk, node, call.place.scope)
    except Refusal:
        value = None
    if value is None or not value.is_constant:
        raise Refusal(node, f"`{text(call.node)[:60]}`: {what} `{text(node)}` must be an integer constant")
    return value.constant


def _constants(lowering: Lowering, node: Node, what: str, call: CallSite) -> list[int] | int:
    """An integer constant, or a tuple or list of them."""
    node = unparenthesised(node)
    if node.type in ("tuple", "list"):
        return [_constant(lowering, item, what, call) for item in node.named_children]
    return _constant(lowering, node, what, call)


def _axis(lowering: Lowering, node: Node | None, rank: int, call: CallSite, default: int = 0) -> int:
    """An axis argument as a dimension of an array of `rank`, negative axes counted from the end."""
    axis = default if node is None else _constant(lowering, node, "the axis", call)
    if not -rank <= axis < rank:
        raise Refusal(node or call.node, f"`{text(call.node)[:60]}`: axis {axis} is out of range for rank {rank}")
    return axis % rank


def _assembled(
    lowering: Lowering, call: CallSite, shape: tuple[Extent, ...], dtype: DtypeRule, pieces: list[Piece], reads: set[str]
) -> Value | None:
    """Store `pieces` into the caller's target when it has the result's shape and is not read, else into a new
    array. Each piece is (extents, where in the result, its element)."""
    if len(pieces) > MOST_PIECES:
        raise Refusal(
            call.node, f"`{text(call.node)[:60]}` makes {len(pieces)} pieces (at most {MOST_PIECES}): write the loops instead"
        )
    into = call.into if call.into is not None and lowering.same_shape(call.into.shape, shape) else None
    target, direct = lowering.output(shape, dtype, into, call.name or call.function, call.node, reads, call.place)
    for extents, at, element in pieces:

        def body(
            index: Index, at: Callable[[Index], Index] = at, element: Callable[[Index], Expr] = element
        ) -> tuple[ArrayRef | Name, Expr]:
            return stored_at(target, at(index)), element(index)

        lowering.emit(extents, "=", body, call.place, call.statement)
    return None if direct else target


def _array_value(lowering: Lowering, node: Node, call: CallSite) -> Value:
    value = lowering.value(node, call.place)
    if value.rank == 0:
        raise Refusal(node, f"`{text(call.node)[:60]}`: `{text(node)}` is a scalar; `{call.spelled}` takes arrays")
    if value.boolean:
        raise Refusal(node, f"`{text(call.node)[:60]}`: boolean arrays are not stored (use np.where)")
    if any(extent.divisor != 1 for extent in value.shape):
        raise Refusal(node, f"`{text(call.node)[:60]}`: a strided slice in `{call.spelled}` is not modelled; copy it first")
    return value


# ---- roll and tile -------------------------------------------------------------------------------------------


def _segments(extent: Extent, shift: int) -> list[tuple[Extent, int, AffineExpr, AffineExpr]]:
    """The two copies a roll by `shift` along an axis of `extent` makes: (length, where it is, result offset,
    source offset); the loop dimension is the position in the segment."""
    n = extent.size
    if shift == 0:
        return [(extent, 0, ZERO, ZERO)]
    if shift > 0:
        s = AffineExpr.of_constant(shift)
        return [(Extent(n - s), 0, s, ZERO), (Extent(s), 1, ZERO, n - s)]
    s = AffineExpr.of_constant(-shift)
    return [(Extent(n - s), 0, ZERO, s), (Extent(s), 1, n - s, ZERO)]


@lowers("roll", materializes=True)
def _roll(lowering: Lowering, call: CallSite) -> Value | None:
    """`np.roll(x, shift)` of a vector, `np.roll(x, shift, axis)`, or tuples of shifts and axes, by constants."""
    call.refuse_keywords(("shift", "axis"))
    if not call.positional:
        raise Refusal(call.node, "`np.roll` needs an array")
    value = _array_value(lowering, call.positional[0], call)
    shift_node, axis_node = call.argument(1, "shift"), call.argument(2, "axis")
    if shift_node is None:
        raise Refusal(call.node, "`np.roll` needs a shift")
    shifts = _constants(lowering, shift_node, "the shift", call)
    if axis_node is None or text(axis_node) == "None":
        if value.rank != 1 or isinstance(shifts, list):
            raise Refusal(
                call.node,
                f"`{text(call.node)[:60]}` rolls the flattened array, which is not modelled: give `axis=` (a roll along each axis)",
            )
        axes: list[int] = [0]
    else:
        written = _constants(lowering, axis_node, "the axis", call)
        axes = written if isinstance(written, list) else [written]
        if any(not -value.rank <= axis < value.rank for axis in axes):
            raise Refusal(axis_node, f"`{text(call.node)[:60]}`: an axis is out of range for rank {value.rank}")
        axes = [axis % value.rank for axis in axes]
    shift_list = shifts if isinstance(shifts, list) else [shifts] * len(axes)
    if len(shift_list) != len(axes):
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: as many shifts as axes")
    total = dict.fromkeys(range(value.rank), 0)
    for axis, shift in zip(axes, shift_list, strict=True):
        total[axis] += shift
    per_axis = [_segments(value.shape[d], total[d]) for d in range(value.rank)]
    pieces = []
    for choice in product(*per_axis):
        extents = tuple(segment[0] for segment in choice)

        def at(index: Index, choice: tuple = choice) -> Index:
            return tuple(position + segment[2] for position, segment in zip(index, choice, strict=True))

        def element(index: Index, choice: tuple = choice) -> Expr:
            return value.element(tuple(position + segment[3] for position, segment in zip(index, choice, strict=True)))

        pieces.append((extents, at, element))
    return _assembled(lowering, call, value.shape, value.dtype, pieces, arrays_read(value))


@lowers("tile", materializes=True)
def _tile(lowering: Lowering, call: CallSite) -> Value | None:
    """`np.tile(x, reps)` with constant reps: one copy per repetition along the array's own axes (at a constant
    multiple of its extent), new leading axes of extent `reps` whose index the copy ignores."""
    call.refuse_keywords(("reps",))
    if len(call.positional) + len(call.keywords) != 2:
        raise Refusal(call.node, "`np.tile` takes an array and the repetitions")
    value = lowering.value(call.positional[0], call.place)
    if value.boolean:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: boolean arrays are not stored (use np.where)")
    written = _constants(lowering, call.argument(1, "reps"), "the repetitions", call)
    reps = written if isinstance(written, list) else [written]
    if any(r < 0 for r in reps):
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: negative repetitions")
    rank = max(len(reps), value.rank)
    reps = [1] * (rank - len(reps)) + reps
    new = rank - value.rank  # leading axes the value does not have
    if any(value.shape[d - new].divisor != 1 for d in range(new, rank) if reps[d] != 1):
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: tiling a strided slice is not modelled; copy it first")
    extents = [Extent(AffineExpr.of_constant(reps[d])) for d in range(new)] + list(value.shape)
    shape = tuple(extents[d] if d < new or reps[d] == 1 else Extent(extents[d].size.scaled(reps[d])) for d in range(rank))
    pieces = []
    for copy in product(*[range(reps[d]) if d >= new else [0] for d in range(rank)]):

        def at(index: Index, copy: tuple[int, ...] = copy) -> Index:
            return tuple(position + extents[d].size.scaled(copy[d]) if d >= new else position for d, position in enumerate(index))

        def element(index: Index) -> Expr:
            return value.element(index[new:])

        pieces.append((tuple(extents), at, element))
    return _assembled(lowering, call, shape, value.dtype, pieces, arrays_read(value))


# ---- concatenate, stack, hstack, vstack ----------------------------------------------------------------------


def _parts(lowering: Lowering, call: CallSite) -> list[Value]:
    """The arrays of `np.concatenate([a, b])`: a list or tuple written in the call."""
    if not call.positional:
        raise Refusal(call.node, f"`{call.spelled}` needs the arrays to join")
    sequence = unparenthesised(call.positional[0])
    if sequence.type not in ("list", "tuple") or not sequence.named_children:
        raise Refusal(call.positional[0], f"`{text(call.node)[:60]}`: the arrays to join must be written in the call (`[a, b]`)")
    return [_array_value(lowering, item, call) for item in sequence.named_children]


def _equal_extents(lowering: Lowering, call: CallSite, first: Extent, second: Extent) -> None:
    """Extents NumPy requires equal: constants must be; sizes are assumed so, and the call is checked for it."""
    if first.size.is_constant and second.size.is_constant and first != second:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: extents {first} and {second} differ")
    lowering.assume_equal(first, second)


def _joined(lowering: Lowering, call: CallSite, parts: list[Value], axis: int) -> Value | None:
    """The parts one after the other along `axis`; every other extent is the first part's."""
    rank = parts[0].rank
    if any(part.rank != rank for part in parts):
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: the arrays to join have different ranks")
    for part in parts[1:]:
        for d in range(rank):
            if d != axis:
                _equal_extents(lowering, call, parts[0].shape[d], part.shape[d])
    offset, pieces, dtype = ZERO, [], DtypeRule()
    for part in parts:

        def at(index: Index, offset: AffineExpr = offset) -> Index:
            return tuple(position + offset if d == axis else position for d, position in enumerate(index))

        pieces.append((part.shape, at, part.element))
        offset = offset + part.shape[axis].size
        dtype = dtype.merged(part.dtype)
    shape = tuple(Extent(offset) if d == axis else extent for d, extent in enumerate(parts[0].shape))
    return _assembled(lowering, call, shape, dtype, pieces, set().union(*(arrays_read(part) for part in parts)))


def _row(value: Value) -> Value:
    """A vector as a (1, n) row, as `np.vstack` takes it."""
    return Value((Extent(AffineExpr.of_constant(1)), *value.shape), lambda index: value.element(index[1:]), value.dtype)


@lowers("concatenate", materializes=True)
def _concatenate(lowering: Lowering, call: CallSite) -> Value | None:
    """`np.concatenate([a, b, c], axis=0)`."""
    call.refuse_keywords(("axis",))
    parts = _parts(lowering, call)
    axis_node = call.argument(1, "axis")
    if axis_node is not None and text(axis_node) == "None":
        if any(part.rank != 1 for part in parts):
            raise Refusal(call.node, f"`{text(call.node)[:60]}`: `axis=None` joins flattened arrays, which is not modelled")
        axis_node = None
    return _joined(lowering, call, parts, _axis(lowering, axis_node, parts[0].rank, call))


@lowers("hstack", "vstack", materializes=True)
def _hstack_or_vstack(lowering: Lowering, call: CallSite) -> Value | None:
    """`np.hstack` joins vectors end to end and arrays along axis 1; `np.vstack` stacks vectors as rows and joins
    arrays along axis 0."""
    call.refuse_keywords()
    parts = _parts(lowering, call)
    if call.function == "hstack":
        return _joined(lowering, call, parts, 0 if parts[0].rank == 1 else 1)
    return _joined(lowering, call, [_row(part) if part.rank == 1 else part for part in parts], 0)


@lowers("stack", materializes=True)
def _stack(lowering: Lowering, call: CallSite) -> Value | None:
    """`np.stack([a, b], axis=0)`: arrays of one shape along a new axis."""
    call.refuse_keywords(("axis",))
    parts = _parts(lowering, call)
    rank = parts[0].rank
    axis = _axis(lowering, call.argument(1, "axis"), rank + 1, call)
    for part in parts[1:]:
        if part.rank != rank:
            raise Refusal(call.node, f"`{text(call.node)[:60]}`: the arrays to stack have different ranks")
        for first, second in zip(parts[0].shape, part.shape, strict=True):
            _equal_extents(lowering, call, first, second)
    pieces, dtype = [], DtypeRule()
    for position, part in enumerate(parts):

        def at(index: Index, position: int = position) -> Index:
            return (*index[:axis], AffineExpr.of_constant(position), *index[axis:])

        pieces.append((part.shape, at, part.element))
        dtype = dtype.merged(part.dtype)
    shape = (*parts[0].shape[:axis], Extent(AffineExpr.of_constant(len(parts))), *parts[0].shape[axis:])
    return _assembled(lowering, call, shape, dtype, pieces, set().union(*(arrays_read(part) for part in parts)))


# ---- pad and copyto -------------------------------------------------------------------------------------------


def _widths(lowering: Lowering, node: Node, rank: int, call: CallSite) -> list[tuple[int, int]]:
    """`pad_width` as NumPy broadcasts it: `p`, `(before, after)`, `((b0, a0), (b1, a1))` or `((p0,), (p1,))`."""
    node = unparenthesised(node)
    if node.type not in ("tuple", "list"):
        width = _constant(lowering, node, "the pad width", call)
        pairs = [(width, width)]
    elif all(unparenthesised(item).type not in ("tuple", "list") for item in node.named_children):
        flat = [_constant(lowering, item, "the pad width", call) for item in node.named_children]
        pairs = [(flat[0], flat[-1])] if len(flat) in (1, 2) else []
    else:
        pairs = []
        for item in node.named_children:
            inner = unparenthesised(item)
            widths = [
                _constant(lowering, w, "the pad width", call)
                for w in (inner.named_children if inner.type in ("tuple", "list") else [inner])
            ]
            if len(widths) not in (1, 2):
                pairs = []
                break
            pairs.append((widths[0], widths[-1]))
    if len(pairs) == 1:
        pairs = pairs * rank
    if len(pairs) != rank or any(w < 0 for pair in pairs for w in pair):
        raise Refusal(node, f"`{text(call.node)[:60]}`: pad widths `{text(node)}` do not fit an array of rank {rank}")
    return pairs


@lowers("pad", materializes=True)
def _pad(lowering: Lowering, call: CallSite) -> Value | None:
    """`np.pad(x, widths)` with `mode="constant"` (`constant_values=` a scalar) or `mode="edge"`, constant widths.
    The result is a new array of `x`'s type: the constant is rounded to it first, as NumPy does, so the result is
    never written straight into the caller's target, whose type may differ."""
    call.refuse_keywords(("pad_width", "mode", "constant_values"))
    if not call.positional or call.argument(1, "pad_width") is None:
        raise Refusal(call.node, "`np.pad` needs an array and the pad widths")
    value = _array_value(lowering, call.positional[0], call)
    widths = _widths(lowering, call.argument(1, "pad_width"), value.rank, call)
    mode_node = call.argument(2, "mode")
    mode = text(mode_node).strip("'\"") if mode_node is not None else "constant"
    if mode not in ("constant", "edge"):
        raise Refusal(mode_node, f"`np.pad` mode `{mode}` is not modelled (constant and edge are)")
    shape = tuple(
        Extent(extent.size + AffineExpr.of_constant(before + after))
        for extent, (before, after) in zip(value.shape, widths, strict=True)
    )
    pieces = []
    if mode == "constant":
        fill_node = call.keywords.get("constant_values")
        fill = lowering.value(fill_node, call.place) if fill_node is not None else None
        if fill is not None and fill.rank:
            raise Refusal(fill_node, f"`{text(call.node)[:60]}`: `constant_values` other than one scalar is not modelled")
        if any(before or after for before, after in widths):
            pieces.append((shape, lambda index: index, (lambda index: fill.element(())) if fill else (lambda index: Number(0))))
        pieces.append(
            (
                value.shape,
                lambda index: tuple(p + AffineExpr.of_constant(w[0]) for p, w in zip(index, widths, strict=True)),
                value.element,
            )
        )
    else:
        if "constant_values" in call.keywords:
            raise Refusal(call.node, f"`{text(call.node)[:60]}`: `constant_values` belongs to mode `constant`")
        per_axis = [_edge_segments(extent, before, after) for extent, (before, after) in zip(value.shape, widths, strict=True)]
        for choice in product(*per_axis):

            def at(index: Index, choice: tuple = choice) -> Index:
                return tuple(position + segment[1] for position, segment in zip(index, choice, strict=True))

            def element(index: Index, choice: tuple = choice) -> Expr:
                return value.element(tuple(segment[2](position) for position, segment in zip(index, choice, strict=True)))

            pieces.append((tuple(segment[0] for segment in choice), at, element))
    return _assembled(lowering, replace(call, into=None), shape, value.dtype, pieces, arrays_read(value))


def _edge_segments(extent: Extent, before: int, after: int) -> list:
    """Along one axis of an edge pad: the `before` copies of the first element, the array, the `after` copies of
    the last; each (length, result offset, source index of the position)."""
    n = extent.size
    last = n - AffineExpr.of_constant(1)
    segments = [(extent, AffineExpr.of_constant(before), lambda position: position)]
    if before:
        segments.insert(0, (Extent(AffineExpr.of_constant(before)), ZERO, lambda position: ZERO))
    if after:
        segments.append((Extent(AffineExpr.of_constant(after)), n + AffineExpr.of_constant(before), lambda position: last))
    return segments


@lowers("copyto")
def _copyto(lowering: Lowering, call: CallSite) -> None:
    """`np.copyto(dst, src)` (a statement): `src` broadcast into `dst`'s memory, as `dst[...] = src` writes it;
    `where=` keeps `dst`'s old element where the mask is False."""
    call.refuse_keywords(("where", "casting"))
    if len(call.positional) != 2:
        raise Refusal(call.node, "`np.copyto` takes the destination and the source")
    target = lowering.value(call.positional[0], call.place)
    if target.view is None:
        raise Refusal(call.positional[0], f"`{text(call.positional[0])}` is not stored memory: np.copyto writes an array")
    value = lowering.value(call.positional[1], call.place)
    casting = call.keywords.get("casting")
    if casting is None or text(casting).strip("'\"") == "same_kind":
        lowering.require_cast(value.dtype, target.dtype, call.node)
    elif text(casting).strip("'\"") != "unsafe":
        raise Refusal(casting, f"`casting={text(casting)}` is modelled as 'same_kind' (the default) or 'unsafe'")
    mask_node = call.keywords.get("where")
    if mask_node is not None:
        mask = lowering.value(mask_node, call.place)
        if not mask.boolean:
            raise Refusal(mask_node, f"`where={text(mask_node)}` is not a boolean mask")
        value = lowering.elementwise([mask, value, target], lambda m, new, old: Choice(m, new, old), call.node)
    lowering.write(target, "=", value, call.positional[1], call.place, call.node)
