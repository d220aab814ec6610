"""Conversions: `np.asarray(x)` is `x`, `np.array(x)` a copy (and `np.array([1.0, 2.0])` of numbers a small table),
`np.float32(x)` and `x.astype(t)` round every element to a type, `x.copy()` stores one; `dtype=` arguments name a
type or another array's."""

from __future__ import annotations

from tree_sitter import Node

from repoos_agent.ingest.numpy.registry import CallSite, Lowering, lowers
from repoos_agent.ingest.numpy.values import Place, Value, converted, strong
from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import Refusal, unparenthesised
from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import ArrayRef
from repoos_agent.model.kernel import DtypeRule, Extent

DTYPES = {
    "float64": "float64", "float32": "float32", "int64": "int64", "int32": "int32", "double": "float64", "single": "float32",
    "intp": "int64", "bool": "bool", "bool_": "bool",
}  # fmt: skip
"""The NumPy types a `dtype=` may name: `np.intp` is the platform's int64 here, `bool` NumPy's one-byte truth."""


def dtype_name(node: Node) -> str:
    """The NumPy type a `dtype` argument names (`np.float32`, `"float64"`, `np.double`)."""
    name = text(node).rpartition(".")[2].strip("'\"")
    if name not in DTYPES:
        raise Refusal(node, f"dtype `{text(node)}` is not modelled (known: {', '.join(sorted(set(DTYPES.values())))})")
    return DTYPES[name]


def dtype_rule(lowering: Lowering, node: Node, place: Place) -> DtypeRule:
    """A `dtype=` argument: a type's name, or another array's type (`dtype=x.dtype`)."""
    if node.type == "attribute" and text(node.child_by_field_name("attribute")) == "dtype":
        return lowering.value(node.child_by_field_name("object"), place).dtype
    return DtypeRule(fixed=dtype_name(node))


@lowers("asarray", "asanyarray", "ascontiguousarray", "array")
def _array(lowering: Lowering, call: CallSite) -> Value:
    """`np.asarray(x)` of an array is `x` itself, and `np.array(x)` a copy of it, as NumPy's are. With `dtype=`,
    NumPy returns `x` itself when it has that type already and a converted copy otherwise: the two agree while
    nothing writes the result, so it is a copy no statement may write (`write` refuses)."""
    function, positional, keywords, place, node = call.function, call.positional, call.keywords, call.place, call.node
    if function == "array" and len(positional) == 1 and unparenthesised(positional[0]).type in ("list", "tuple"):
        return _table(lowering, call)
    unknown = set(keywords) - {"dtype", "order"} - ({"copy"} if function == "array" else set())
    if len(positional) != 1 or unknown:
        raise Refusal(node, f"`np.{function}` is modelled with one array and `dtype=` only")
    value = lowering.value(positional[0], place)
    if value.rank == 0:
        raise Refusal(node, f"`np.{function}` of a scalar is not modelled: use the scalar itself")
    dtype = dtype_rule(lowering, keywords["dtype"], place) if "dtype" in keywords else value.dtype
    copied = function == "array" and text(keywords.get("copy", node)) != "False"
    if not copied and "dtype" not in keywords:
        return value
    stored = lowering.materialize(Value(value.shape, value.element, dtype), function, place, node)
    if not copied:
        assert stored.view is not None
        lowering.read_only[stored.view.array] = f"np.{function}({text(positional[0])}, dtype=...)"
    return stored


LARGEST_TABLE = 256
"""Elements of the largest `np.array([...])` of literals: one statement each."""


def _table(lowering: Lowering, call: CallSite) -> Value:
    """`np.array([1.0, 2.0, 3.0])` or nested lists for 2-d: a small table stored element by element. Its type is
    NumPy's for the numbers (float64 if any is a float, else int64), or `dtype=`."""
    call.refuse_keywords(("dtype",))
    rows = _nested(call.positional[0])
    shape = _rectangular(rows, call)
    cells = _cells(rows)
    if len(cells) > LARGEST_TABLE:
        raise Refusal(call.node, f"`np.array` of {len(cells)} literals (at most {LARGEST_TABLE}): pass the array in")
    values = [lowering.value(cell, call.place) for cell in cells]
    dtype = DtypeRule()
    for cell, value in zip(cells, values, strict=True):
        if value.rank or value.boolean:
            raise Refusal(cell, f"`{text(cell)}` in `np.array([...])`: the table's items must be numbers")
        dtype = dtype.merged(value.dtype)
    dtype = dtype_rule(lowering, call.keywords["dtype"], call.place) if "dtype" in call.keywords else strong(dtype)
    extents = tuple(Extent(AffineExpr.of_constant(size)) for size in shape)
    name = lowering.allocate("table", extents, dtype, call.node, place=call.place)
    for flat, value in enumerate(values):
        at = tuple(AffineExpr.of_constant(p) for p in _unflattened(flat, shape))
        lowering.emit((), "=", lambda index, at=at, value=value: (ArrayRef(name, at), value.element(())), call.place, call.node)
    return lowering.stored(name, extents, dtype)


def _nested(node: Node) -> list | Node:
    node = unparenthesised(node)
    return [_nested(item) for item in node.named_children] if node.type in ("list", "tuple") else node


def _rectangular(rows: list | Node, call: CallSite) -> tuple[int, ...]:
    """The shape of nested lists, which NumPy requires rectangular."""
    if not isinstance(rows, list):
        return ()
    shapes = {_rectangular(row, call) for row in rows}
    if len(shapes) > 1:
        raise Refusal(call.node, f"`{text(call.node)[:60]}`: the nested lists have different lengths")
    return (len(rows), *(shapes.pop() if shapes else ()))


def _cells(rows: list | Node) -> list[Node]:
    return [cell for row in rows for cell in _cells(row)] if isinstance(rows, list) else [rows]


def _unflattened(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    position = []
    for size in reversed(shape):
        position.append(flat % size)
        flat //= size
    return tuple(reversed(position))


@lowers(*DTYPES)
def _scalar_type(lowering: Lowering, call: CallSite) -> Value:
    """`np.float32(x)`: `x` rounded to that type."""
    (value,) = call.values(lowering, 1)
    return converted(value, DTYPES[call.function])


@lowers(methods=("astype",))
def _astype(lowering: Lowering, call: CallSite) -> Value:
    value = lowering.value(call.positional[0], call.place)
    if len(call.positional) < 2:
        raise Refusal(call.node, "`.astype()` needs a dtype")
    return converted(value, dtype_name(call.positional[1]))


@lowers("copy", methods=("copy",))
def _copy(lowering: Lowering, call: CallSite) -> Value:
    """`np.copy(x)` and `x.copy()`: stored into a new array, so later writes to `x` do not show through."""
    (value,) = call.values(lowering, 1)
    return lowering.materialize(value, "copy", call.place, call.node)
