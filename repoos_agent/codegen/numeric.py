"""NumPy's arithmetic types, so native code rounds where the Python original rounds.

The Python original computes with NumPy scalars: a `float32` element times a
Python float is a `float32` product (NEP 50: Python numbers are "weak" and take
the array's type), while two Python floats multiply in double precision. A C
translation that computed everything in `double` would differ from the original
on `float32` kernels, and recursive filters amplify such differences. Every
expression therefore gets a *kind*: `"int"` and `"float"` for weak Python
numbers, or a NumPy dtype name for strong ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from repoos_agent.model.expr import KEEPS_INTEGERS, ArrayRef, Binary, Call, Cast, Choice, Expr, Name, Number, Unary
from repoos_agent.model.kernel import Kernel
from repoos_agent.model.signature import Signature

WEAK = frozenset({"int", "float"})
C_TYPE = {
    "int": "int64_t", "float": "double", "float64": "double", "float32": "float", "int64": "int64_t", "int32": "int32_t",
    "bool": "uint8_t",
}  # fmt: skip
COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})


def is_float(kind: str) -> bool:
    return kind.startswith("float")


def strong(kind: str) -> str:
    """What NumPy makes of a Python number (`np.float64`, `np.int64`); NumPy values keep their type."""
    return {"float": "float64", "int": "int64"}.get(kind, kind)


def widened(kind: str) -> str:
    """The type NumPy sums an array of `kind` in: the platform integer (int64) for narrower integers and bools."""
    kind = strong(kind)
    return "int64" if kind in ("int32", "bool") else kind


def promote(a: str, b: str) -> str:
    """The kind of `a op b` for + - * // % ** under NumPy 2's promotion rules; a bool meets anything as its
    weakest strong type (NEP 50: a bool array times a Python int is int64)."""
    if a == "bool" or b == "bool":
        other = b if a == "bool" else a
        return strong(other)
    if a in WEAK and b in WEAK:
        return "float" if "float" in (a, b) else "int"
    if a in WEAK or b in WEAK:
        weak, other = (a, b) if a in WEAK else (b, a)
        if weak == "int":
            return other
        return other if is_float(other) else "float64"
    if a == b:
        return a
    if is_float(a) == is_float(b):
        return "float64" if is_float(a) else "int64"
    return "float64"


def true_divide(a: str, b: str) -> str:
    """The kind of `a / b`: integers divide into floats."""
    kind = promote(a, b)
    if kind == "int":
        return "float"
    return kind if is_float(kind) else "float64"


@dataclass(frozen=True)
class KindEnvironment:
    """The kind of every name and array element a kernel's statements read."""

    names: dict[str, str]
    arrays: dict[str, str]

    def kind_of(self, expr: Expr) -> str:
        if isinstance(expr, Number):
            return "float" if isinstance(expr.value, float) else "int"
        if isinstance(expr, Name):
            return self.names.get(expr.name, "int")  # loop variables and sizes are Python ints
        if isinstance(expr, ArrayRef):
            return self.arrays[expr.array]
        if isinstance(expr, Unary):
            return "int" if expr.op == "not" else self.kind_of(expr.operand)
        if isinstance(expr, Binary):
            if expr.op in COMPARISONS or expr.op in ("and", "or"):
                return "int"
            left, right = self.kind_of(expr.left), self.kind_of(expr.right)
            return true_divide(left, right) if expr.op == "/" else promote(left, right)
        if isinstance(expr, Call):
            return self._call_kind(expr)
        if isinstance(expr, Cast):
            if expr.dtype in ("strong", "widened"):
                operand = self.kind_of(expr.operand)
                return strong(operand) if expr.dtype == "strong" else widened(operand)
            return expr.dtype
        if isinstance(expr, Choice):
            return promote(self.kind_of(expr.then), self.kind_of(expr.otherwise))
        raise TypeError(expr)

    def _call_kind(self, expr: Call) -> str:
        """A NumPy function's result is a NumPy value (`np.log(2.0)` is a strong float64), float unless it is an
        extremum, `abs` or a rounding (`KEEPS_INTEGERS`), which keep integers; Python's `min`/`max`/`abs`
        return one of their values."""
        kinds = [self.kind_of(a) for a in expr.args]
        result = kinds[0]
        for kind in kinds[1:]:
            result = promote(result, kind)
        if expr.function in KEEPS_INTEGERS:
            return strong(result) if expr.module == "np" else result
        if expr.module == "np":
            return result if result == "float32" else "float64"
        return "float"  # math.* and float() return Python floats


def kind_environment(kernel: Kernel, signature: Signature) -> KindEnvironment:
    """Kinds of arguments from the signature; kinds of locals inferred from every assignment to them."""
    names = {name: kind for name, kind in signature.scalars}
    arrays = dict(signature.arrays)
    locals_ = [a.name for a in kernel.arrays if a.rank == 0]
    for name in locals_:
        names.pop(name, None)
    assigned: dict[str, str] = {name: signature.scalar_kind(name) for name in locals_ if name in dict(signature.scalars)}
    changed = True
    while changed:
        changed = False
        environment = KindEnvironment({**names, **assigned}, arrays)
        for statement in kernel.statements:
            target = statement.target
            if not isinstance(target, Name):
                continue
            kind = environment.kind_of(assignment_value(statement.op, target, statement.value))
            merged = kind if target.name not in assigned else promote(assigned[target.name], kind)
            if assigned.get(target.name) != merged:
                assigned[target.name] = merged
                changed = True
    return KindEnvironment({**names, **assigned}, arrays)


def assignment_value(op: str, target: Expr, value: Expr) -> Expr:
    """`t op= v` as the value Python stores: `t op v` (augmented ops compute in the promoted kind)."""
    return value if op == "=" else Binary(op[:-1], target, value)


def stored_value(op: str, target: Expr, value: Expr, target_kind: str) -> Expr:
    """What `t op= v` writes into a target of `target_kind`: into a bool array, the value's truth (NumPy stores
    2.5 as True, where a C conversion to a byte would store 2)."""
    stored = assignment_value(op, target, value)
    return Binary("!=", stored, Number(0)) if target_kind == "bool" else stored
