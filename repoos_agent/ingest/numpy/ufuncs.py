"""NumPy's elementwise functions as a table: each row is a name, how its element is built from its operands'
elements, and whether it makes integers float (`np.sqrt` does, `np.abs` does not). One lowering serves every
row: broadcast the operands, combine their elements, and give the result NumPy's scalar strength."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from repoos_agent.ingest.numpy.reductions import axes_argument, keepdims_argument, reduce
from repoos_agent.ingest.numpy.registry import CallSite, Lowering, lowers
from repoos_agent.ingest.numpy.values import Value, floating, strong
from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import Refusal, Walk
from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import KEEPS_INTEGERS, ROUNDINGS, Binary, Call, Cast, Choice, Expr, Number, Unary
from repoos_agent.model.kernel import Extent


@dataclass(frozen=True)
class Ufunc:
    """One elementwise function: its operand count, its element, whether integers become float64, and whether
    it answers a question (`np.less`, `np.isnan`): a truth value, which NumPy stores as its bool."""

    arity: int
    element: Callable[..., Expr]
    floating: bool = False
    boolean: bool = False


def _math(c_name: str, makes_float: bool = True) -> Ufunc:
    return Ufunc(1, lambda a: Call(c_name, (a,), "np"), makes_float)


def _binary(op: str, makes_float: bool = False) -> Ufunc:
    return Ufunc(2, lambda a, b: Binary(op, a, b), makes_float)


def _comparison(op: str) -> Ufunc:
    return Ufunc(2, lambda a, b: Binary(op, a, b), boolean=True)


def _scaled(factor: float) -> Ufunc:
    return Ufunc(1, lambda a: Binary("*", a, Number(factor)), True)


def _ignoring_nan(function: str, a: Expr, b: Expr) -> Expr:
    """`np.fmax(a, b)` (or `fmin`): the other value where one is NaN, NaN only where both are. A `Call` with the
    NumPy module is `np.maximum`, which propagates NaN; this is spelled with the comparisons the model has."""
    return Choice(Binary("!=", a, a), b, Choice(Binary("!=", b, b), a, Call(function, (a, b), "np")))


def _sign(a: Expr) -> Expr:
    """`np.sign(a)`: 1, -1, 0 for either zero, and NaN for NaN, in `a`'s own type."""
    zero_or_nan = Choice(Binary("!=", a, a), a, Number(0))
    return Choice(Binary(">", a, Number(0)), Number(1), Choice(Binary("<", a, Number(0)), Number(-1), zero_or_nan))


def _truth(a: Expr) -> Expr:
    return Binary("!=", a, Number(0))


UNARY_C_NAMES = {
    "exp": "exp", "log": "log", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh",
    "abs": "abs", "absolute": "abs", "fabs": "fabs", "floor": "floor", "ceil": "ceil",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "asin": "asin", "acos": "acos", "atan": "atan",
}  # fmt: skip
"""NumPy's one-operand math functions and their C names: the loop front end reads them on scalars too."""

MORE_MATH = ("exp2", "log2", "log10", "log1p", "expm1", "sinh", "cosh", "cbrt", "rint", "trunc")
"""NumPy's one-operand math functions of the same C name that only the array front end reads."""


INFINITY, MINUS_INFINITY = Number(math.inf), Number(-math.inf)

UFUNCS: dict[str, Ufunc] = {
    **{name: _math(c_name, name not in ("abs", "absolute", "asin", "acos", "atan")) for name, c_name in UNARY_C_NAMES.items()},
    **{name: _math(name) for name in MORE_MATH},
    **{name: _math(name, False) for name in ROUNDINGS & KEEPS_INTEGERS},  # integers, with the NumPy installed
    "reciprocal": _math("reciprocal", False),
    "sign": Ufunc(1, _sign),
    "deg2rad": _scaled(math.pi / 180),
    "radians": _scaled(math.pi / 180),
    "rad2deg": _scaled(180 / math.pi),
    "degrees": _scaled(180 / math.pi),
    "add": _binary("+"),
    "subtract": _binary("-"),
    "multiply": _binary("*"),
    "divide": _binary("/", True),
    "true_divide": _binary("/", True),
    "floor_divide": _binary("//"),
    "mod": _binary("%"),
    "remainder": _binary("%"),
    "hypot": Ufunc(2, lambda a, b: Call("hypot", (a, b), "np"), True),
    "maximum": Ufunc(2, lambda a, b: Call("max", (a, b), "np")),
    "minimum": Ufunc(2, lambda a, b: Call("min", (a, b), "np")),
    "fmax": Ufunc(2, lambda a, b: _ignoring_nan("max", a, b)),
    "fmin": Ufunc(2, lambda a, b: _ignoring_nan("min", a, b)),
    "arctan2": Ufunc(2, lambda a, b: Call("atan2", (a, b), "np"), True),
    "atan2": Ufunc(2, lambda a, b: Call("atan2", (a, b), "np"), True),
    "power": _binary("**"),
    "square": Ufunc(1, lambda a: Binary("*", a, a)),
    "negative": Ufunc(1, lambda a: Unary("-", a)),
    "where": Ufunc(3, lambda c, a, b: Choice(c, a, b)),
    "clip": Ufunc(3, lambda x, lo, hi: Call("min", (Call("max", (x, lo), "np"), hi), "np")),
    "isnan": Ufunc(1, lambda a: Binary("!=", a, a), boolean=True),
    "isinf": Ufunc(1, lambda a: Binary("or", Binary("==", a, INFINITY), Binary("==", a, MINUS_INFINITY)), boolean=True),
    "isfinite": Ufunc(1, lambda a: Binary("and", Binary(">", a, MINUS_INFINITY), Binary("<", a, INFINITY)), boolean=True),
    "less": _comparison("<"),
    "less_equal": _comparison("<="),
    "greater": _comparison(">"),
    "greater_equal": _comparison(">="),
    "equal": _comparison("=="),
    "not_equal": _comparison("!="),
    "logical_and": Ufunc(2, lambda a, b: Binary("and", a, b), boolean=True),
    "logical_or": Ufunc(2, lambda a, b: Binary("or", a, b), boolean=True),
    "logical_xor": Ufunc(2, lambda a, b: Binary("!=", _truth(a), _truth(b)), boolean=True),
    "logical_not": Ufunc(1, lambda a: Unary("not", a), boolean=True),
}


def numpy_result(walk: Walk, value: Value) -> Value:
    """What a NumPy function returns: an array or a NumPy scalar, never a Python number. Made of Python
    numbers alone (`np.log(2.0)`, `np.where(m, 1.0, 0.0)`), its type is NEP 50's strong default (float64,
    int64), so it promotes a float32 array it meets later: `Cast("strong")` says so to the printers, and
    the `!` sources to the allocation's rule. A value that reads an array or has a fixed type is strong
    already and stays as it is."""
    rule = value.dtype
    if rule.fixed or any(s.startswith(("!", "=")) or (s in walk.arguments and walk.ranks.get(s, 0) > 0) for s in rule.sources):
        return value
    return Value(value.shape, lambda index: Cast("strong", value.element(index)), strong(rule), None, value.boolean)


def _lower(name: str, ufunc: Ufunc) -> Callable[[Lowering, CallSite], Value]:
    def lower(lowering: Lowering, call: CallSite) -> Value:
        call.refuse_keywords(() if ufunc.boolean else ("out",))
        value = lowering.elementwise(call.values(lowering, ufunc.arity), ufunc.element, call.node, ufunc.boolean)
        value = numpy_result(lowering.walk, floating(value) if ufunc.floating else value)
        return value if "out" not in call.keywords else written_out(lowering, call, value)

    lower.__name__ = f"lower_{name}"
    return lower


def written_out(lowering: Lowering, call: CallSite, value: Value) -> Value:
    """`np.add(a, b, out=c)`: the result written into `c` (through a temporary where it reads what it
    overwrites, as NumPy's own overlap check does), and `c` is what the call returns. NumPy casts into `c`
    within a kind only (a float result into an int `c` raises), which a build for the call's types checks."""
    out_node = call.keywords["out"]
    target = lowering.value(out_node, call.place)
    if target.view is None:
        raise Refusal(out_node, f"`out={text(out_node)[:40]}` of `{call.spelled}` must be an array or a slice of one")
    lowering.require_cast(value.dtype, target.dtype, call.node)
    lowering.write(target, "=", value, call.node, call.place, call.statement)
    return target


def _outer(name: str, ufunc: Ufunc) -> Callable[[Lowering, CallSite], Value]:
    """`np.add.outer(a, b)`: every element of `a` against every element of `b`, of shape `a.shape + b.shape`
    (broadcasting `a` with unit extents appended against `b`)."""

    def lower(lowering: Lowering, call: CallSite) -> Value:
        call.refuse_keywords()
        first, second = call.values(lowering, 2)
        ones = (Extent(AffineExpr.of_constant(1)),) * second.rank
        rank = first.rank
        spread = Value(first.shape + ones, lambda index: first.element(index[:rank]), first.dtype, None, first.boolean)
        value = lowering.elementwise([spread, second], ufunc.element, call.node, ufunc.boolean)
        return numpy_result(lowering.walk, floating(value) if ufunc.floating else value)

    lower.__name__ = f"lower_{name}_outer"
    return lower


REDUCES = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min"}
"""The ufuncs whose `.reduce` is a reduction of the model: `np.add.reduce` is `np.sum` (pairwise), with
`axis=0` unless told otherwise."""


def _reduce(name: str, kind: str) -> Callable[[Lowering, CallSite], Value | None]:
    def lower(lowering: Lowering, call: CallSite) -> Value | None:
        call.refuse_keywords(("axis", "keepdims"))
        if not 1 <= len(call.positional) <= 2:
            raise Refusal(call.node, f"`np.{name}.reduce` is modelled with an array and `axis`")
        operand = lowering.value(call.positional[0], call.place)
        if operand.rank == 0:
            raise Refusal(call.node, f"`{text(call.node)[:60]}`: `np.{name}.reduce` of a scalar raises in NumPy")
        axis = call.argument(1, "axis")
        axes = (0,) if axis is None else axes_argument(axis, operand.rank)
        keepdims = keepdims_argument(call)
        return reduce(lowering, kind, operand, axes, keepdims, call.place, call.statement, call.into, call.name, call.node)

    lower.__name__ = f"lower_{name}_reduce"
    return lower


for _name, _ufunc in UFUNCS.items():
    lowers(_name)(_lower(_name, _ufunc))
    if _ufunc.arity == 2:
        lowers(f"{_name}.outer")(_outer(_name, _ufunc))
for _name, _kind in REDUCES.items():
    lowers(f"{_name}.reduce", materializes=True)(_reduce(_name, _kind))
