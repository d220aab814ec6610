"""NumPy's elementwise functions as a table: each row is a name, how its element is built from its operands'
elements, and whether it makes integers float (`np.sqrt` does, `np.abs` does not). One lowering serves every
row: broadcast the operands, combine their elements, and give the result NumPy's scalar strength."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from repoos_agent.ingest.numpy.registry import CallSite, Lowering, lowers
from repoos_agent.ingest.numpy.values import Value, floating, strong
from repoos_agent.ingest.scop import Walk
from repoos_agent.model.expr import Binary, Call, Cast, Choice, Expr, Unary


@dataclass(frozen=True)
class Ufunc:
    """One elementwise function: its operand count, its element, and whether integers become float64."""

    arity: int
    element: Callable[..., Expr]
    floating: bool = False


def _math(c_name: str, makes_float: bool = True) -> Ufunc:
    return Ufunc(1, lambda a: Call(c_name, (a,), "np"), makes_float)


def _ignoring_nan(function: str, a: Expr, b: Expr) -> Expr:
    """`np.fmax(a, b)` (or `fmin`): the other value where one is NaN, NaN only where both are. A `Call` with the
    NumPy module is `np.maximum`, which propagates NaN; this is spelled with the comparisons the model has."""
    return Choice(Binary("!=", a, a), b, Choice(Binary("!=", b, b), a, Call(function, (a, b), "np")))


UNARY_C_NAMES = {
    "exp": "exp", "log": "log", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh",
    "abs": "abs", "absolute": "abs", "fabs": "fabs", "floor": "floor", "ceil": "ceil",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "asin": "asin", "acos": "acos", "atan": "atan",
}  # fmt: skip
"""NumPy's one-operand math functions and their C names: the loop front end reads them on scalars too."""

UFUNCS: dict[str, Ufunc] = {
    **{name: _math(c_name, name not in ("abs", "absolute", "asin", "acos", "atan")) for name, c_name in UNARY_C_NAMES.items()},
    "maximum": Ufunc(2, lambda a, b: Call("max", (a, b), "np")),
    "minimum": Ufunc(2, lambda a, b: Call("min", (a, b), "np")),
    "fmax": Ufunc(2, lambda a, b: _ignoring_nan("max", a, b)),
    "fmin": Ufunc(2, lambda a, b: _ignoring_nan("min", a, b)),
    "arctan2": Ufunc(2, lambda a, b: Call("atan2", (a, b), "np"), True),
    "atan2": Ufunc(2, lambda a, b: Call("atan2", (a, b), "np"), True),
    "power": Ufunc(2, lambda a, b: Binary("**", a, b)),
    "square": Ufunc(1, lambda a: Binary("*", a, a)),
    "negative": Ufunc(1, lambda a: Unary("-", a)),
    "where": Ufunc(3, lambda c, a, b: Choice(c, a, b)),
    "clip": Ufunc(3, lambda x, lo, hi: Call("min", (Call("max", (x, lo), "np"), hi), "np")),
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
        call.refuse_keywords()
        value = lowering.elementwise(call.values(lowering, ufunc.arity), ufunc.element, call.node)
        return numpy_result(lowering.walk, floating(value) if ufunc.floating else value)

    lower.__name__ = f"lower_{name}"
    return lower


for _name, _ufunc in UFUNCS.items():
    lowers(_name)(_lower(_name, _ufunc))
