"""Conversions: `np.asarray(x)` is `x`, `np.array(x)` a copy, `np.float32(x)` and `x.astype(t)` round every
element to a type, `x.copy()` stores one; `dtype=` arguments name a type or another array's."""

from __future__ import annotations

from tree_sitter import Node

from repoos_agent.ingest.numpy.registry import CallSite, Lowering, lowers
from repoos_agent.ingest.numpy.values import Place, Value, converted
from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import Refusal
from repoos_agent.model.kernel import DtypeRule

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
