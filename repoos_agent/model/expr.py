"""The value expressions of statement bodies: what a statement computes.

These are data, not control: array elements, scalars, arithmetic, math calls and
data-dependent choices (`x if c else y`). Subscripts live in `ArrayRef.indices`:
affine expressions, or an `IndexRead` (`x[col[k]]`) whose value only a run knows;
everything else is an ordinary expression tree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from repoos_agent.model.affine import AffineExpr

MATH_FUNCTIONS = frozenset(
    {"sqrt", "exp", "log", "pow", "fabs", "sin", "cos", "tan", "tanh", "floor", "ceil", "asin", "acos", "atan", "atan2"}
)

ROUNDINGS = frozenset({"floor", "ceil", "trunc"})
KEEPS_INTEGERS = frozenset({"min", "max", "abs", "reciprocal"}) | (
    ROUNDINGS if np.floor(np.int32(1)).dtype.kind == "i" else frozenset()
)
"""The NumPy functions whose result keeps an integer operand's type (the others make it float64): `np.floor`
of an int32 array is that array from NumPy 2.3 on, a float64 one before, so the installed NumPy decides."""


@dataclass(frozen=True)
class Number:
    value: int | float


@dataclass(frozen=True)
class Name:
    """A loop variable, an integer parameter, a scalar argument or a local scalar."""

    name: str


@dataclass(frozen=True)
class ArrayRef:
    array: str
    indices: tuple[AffineExpr | IndexRead, ...]

    @property
    def is_affine(self) -> bool:
        """Every subscript is affine: the element is known from the iteration alone."""
        return all(isinstance(index, AffineExpr) for index in self.indices)


@dataclass(frozen=True)
class IndexRead:
    """A subscript or loop bound read from an integer array: `col[k]` in `x[col[k]]`, `rowptr[i + 1]`
    in `range(rowptr[i], rowptr[i + 1])`, plus a constant (`col[k] + 1`).

    Its value is data, so the polyhedral model treats it as the literature does an uninterpreted
    function of the iteration: dependence analysis assumes it may be any element, Z3 reads it as
    an uninterpreted function, and the generated code checks its array's values before the run. A `computed`
    one reads a temporary the kernel filled with indices in range by construction (`np.histogram`'s bins):
    nothing is checked before the run, when it holds nothing yet."""

    ref: ArrayRef
    offset: int = 0
    computed: bool = False

    def __str__(self) -> str:
        base = shown(self.ref)
        return base if not self.offset else f"{base} {'+' if self.offset > 0 else '-'} {abs(self.offset)}"


@dataclass(frozen=True)
class Unary:
    op: str  # "-", "+", "not"
    operand: Expr


@dataclass(frozen=True)
class Binary:
    op: str  # + - * / // % ** < <= > >= == != and or
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Call:
    """`math.sqrt(x)` and friends, `abs`, and `min`/`max` of values."""

    function: str
    args: tuple[Expr, ...]
    module: str = ""  # "math", "np" or "" (a builtin): decides the result's precision, and NaN's fate in
    # `max`/`min`: NumPy's (`np.maximum`, `np.max`) is NaN where either value is; Python's keeps the first
    # unless the second is greater, so a NaN second is dropped


@dataclass(frozen=True)
class Cast:
    """The operand converted to a NumPy dtype (`x.astype(np.float32)`, `np.float64(a)`): where NumPy
    rounds (or widens) a value to a type its operand's own type would not give it. The front end
    writes one wherever the Python original converts, so the printers compute every sub-expression
    in NumPy's type and never have to guess a conversion themselves. `"strong"` is the conversion a
    NumPy function makes of Python numbers (`np.log(2.0)` is a float64, `np.abs(n)` an int64): NEP 50
    lets those promote a float32 array, where the Python numbers would have taken its type. `"widened"` is
    the type NumPy sums and multiplies an array's elements in (`np.sum`, `np.prod`, `np.cumsum`): integers
    narrower than int64 become int64, floats keep their type."""

    dtype: str  # a NumPy dtype name; "int"/"float" for Python's `int()`; "strong" for NumPy's own type of a
    # Python number; "widened" for the type of NumPy's sums of it
    operand: Expr


@dataclass(frozen=True)
class Choice:
    """`then if test else otherwise`."""

    test: Expr
    then: Expr
    otherwise: Expr


Expr = Number | Name | ArrayRef | Unary | Binary | Call | Cast | Choice


def array_refs(expr: Expr) -> list[ArrayRef]:
    """Every array element the expression reads, in evaluation order: index arrays included."""
    if isinstance(expr, ArrayRef):
        return index_refs(expr) + [expr]
    if isinstance(expr, (Unary, Cast)):
        return array_refs(expr.operand)
    if isinstance(expr, Binary):
        return array_refs(expr.left) + array_refs(expr.right)
    if isinstance(expr, Call):
        return [ref for arg in expr.args for ref in array_refs(arg)]
    if isinstance(expr, Choice):
        return array_refs(expr.test) + array_refs(expr.then) + array_refs(expr.otherwise)
    return []


def value_arrays(expr: Expr) -> set[str]:
    """The arrays whose elements the expression computes with, not those it reads only as subscripts."""
    if isinstance(expr, ArrayRef):
        return {expr.array}
    if isinstance(expr, (Unary, Cast)):
        return value_arrays(expr.operand)
    if isinstance(expr, Binary):
        return value_arrays(expr.left) | value_arrays(expr.right)
    if isinstance(expr, Call):
        return {array for arg in expr.args for array in value_arrays(arg)}
    if isinstance(expr, Choice):
        return value_arrays(expr.test) | value_arrays(expr.then) | value_arrays(expr.otherwise)
    return set()


def index_refs(ref: ArrayRef) -> list[ArrayRef]:
    """The index-array elements `ref`'s subscripts read (`col[k]` in `x[col[k]]`), innermost first."""
    found: list[ArrayRef] = []
    for index in ref.indices:
        if isinstance(index, IndexRead):
            found += index_refs(index.ref) + [index.ref]
    return found


def names(expr: Expr) -> list[str]:
    """Every bare name the expression reads (not array names, not subscripts)."""
    if isinstance(expr, Name):
        return [expr.name]
    if isinstance(expr, (Unary, Cast)):
        return names(expr.operand)
    if isinstance(expr, Binary):
        return names(expr.left) + names(expr.right)
    if isinstance(expr, Call):
        return [n for arg in expr.args for n in names(arg)]
    if isinstance(expr, Choice):
        return names(expr.test) + names(expr.then) + names(expr.otherwise)
    return []


def shown(expr: Expr | ArrayRef) -> str:
    """Python-like text of an element expression, as `repoos ingest` shows a lowered NumPy statement."""
    if isinstance(expr, Number):
        return repr(expr.value)
    if isinstance(expr, Name):
        return expr.name
    if isinstance(expr, ArrayRef):
        return f"{expr.array}[{', '.join(str(i) for i in expr.indices)}]"
    if isinstance(expr, Unary):
        return f"{expr.op}{' ' if expr.op == 'not' else ''}{_operand(expr.operand)}"
    if isinstance(expr, Binary):
        return f"{_operand(expr.left)} {expr.op} {_operand(expr.right)}"
    if isinstance(expr, Call):
        prefix = f"{expr.module}." if expr.module else ""
        # NumPy's two-value extremum is `np.maximum`: `np.max(a, b)` would read as a reduction over an axis.
        function = {"max": "maximum", "min": "minimum"}.get(expr.function, expr.function) if expr.module == "np" else expr.function
        return f"{prefix}{function}({', '.join(shown(a) for a in expr.args)})"
    if isinstance(expr, Cast):
        if expr.dtype in ("strong", "widened"):  # the NumPy call around it already says so
            return shown(expr.operand)
        return f"{'' if expr.dtype in ('int', 'float') else 'np.'}{expr.dtype}({shown(expr.operand)})"
    return f"{_operand(expr.then)} if {_operand(expr.test)} else {_operand(expr.otherwise)}"


def _operand(expr: Expr) -> str:
    text = shown(expr)
    return f"({text})" if isinstance(expr, (Binary, Choice)) else text
