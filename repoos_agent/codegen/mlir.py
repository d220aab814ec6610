"""MLIR from the model: the same loop nest as the C backend, as `func` + `scf` + `memref` + `arith` + `math`.

Parallel loops become `scf.parallel` (lowered to OpenMP); loops are `scf.for` with the
bounds isl computed; exact unrolling is emitted as copies plus a remainder loop. The
value arithmetic follows NumPy's precision rules exactly as the C backend does
(`numeric`), so both backends round where the Python original rounds. Vectorization
is left to LLVM's loop vectorizer (`opt -O3`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from repoos_agent.codegen.loopnest import (
    Block,
    Call,
    For,
    If,
    IntConst,
    IntExpr,
    LaneSplit,
    Let,
    LoopNest,
    Node,
    Op,
    Promoted,
    Region,
    Unrolled,
    Var,
    iterators_upper,
)
from repoos_agent.codegen.numeric import COMPARISONS, is_float, kind_environment, promote, stored_value
from repoos_agent.codegen.support import unsupported
from repoos_agent.errors import CompileError
from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import ROUNDINGS, ArrayRef, Binary, Cast, Choice, Expr, Name, Number, Unary
from repoos_agent.model.expr import Call as ValueCall
from repoos_agent.model.kernel import Kernel, Statement
from repoos_agent.model.signature import Signature

MLIR_ENTRY = "repoos_mlir_kernel"
MLIR_TYPES = {"int": "i64", "float": "f64", "float64": "f64", "float32": "f32", "int64": "i64", "int32": "i32", "bool": "i8"}
_CMPI = {"==": "eq", "!=": "ne", "<": "slt", "<=": "sle", ">": "sgt", ">=": "sge"}
_CMPF = {"==": "oeq", "!=": "une", "<": "olt", "<=": "ole", ">": "ogt", ">=": "oge"}
_MATH = {"sqrt": "math.sqrt", "exp": "math.exp", "log": "math.log", "sin": "math.sin", "cos": "math.cos",
         "tan": "math.tan", "tanh": "math.tanh", "floor": "math.floor", "ceil": "math.ceil", "fabs": "math.absf",
         "asin": "math.asin", "acos": "math.acos", "atan": "math.atan", "exp2": "math.exp2", "log2": "math.log2",
         "log10": "math.log10", "sinh": "math.sinh", "cosh": "math.cosh", "trunc": "math.trunc",
         "rint": "math.roundeven"}  # fmt: skip
LIBM = ("log1p", "expm1", "cbrt", "hypot")
"""Called in libm: the math dialect lowers `log1p` and `expm1` to `log(1 + x)` and `exp(x) - 1`, which lose
the small values they exist for, and has no lowering of `cbrt` nor a `hypot`."""

SUPPORTED = frozenset({"For", "Let", "If", "Block", "Call", "Unrolled", "Promoted", "LaneSplit", "Region"})
"""The node kinds (`codegen.support`) the MLIR printer prints; a nest needing another is refused, naming it.
A `Promoted` loop prints as its fallback, the loop as generated: LLVM keeps elements in registers itself; a
`LaneSplit` as its loop, each sum added into its element in order (LLVM's vectorizer splits what it may); every
`Region` is outlined (`scf.parallel` calling a function of the body), its private scalars allocated per call."""


@dataclass(frozen=True)
class MlirSource:
    text: str
    arrays: tuple[tuple[str, int, str], ...]  # (name, rank, element type) in argument order
    scalars: tuple[tuple[str, str], ...]  # (name, MLIR type) in argument order, after the arrays
    parallel: bool


@dataclass
class _Emitter:
    kernel: Kernel
    signature: Signature
    lines: list[str] = field(default_factory=list)
    counter: int = 0

    def __post_init__(self) -> None:
        self.kinds = kind_environment(self.kernel, self.signature)
        self.arrays = {a.name: a for a in self.kernel.arrays}
        self.parallel = False
        self.outlined = 0
        self.functions: list[list[str]] = []
        self.external: dict[str, str] = {}  # libm functions called: name -> declaration
        self.scalar_arguments = [(name, "i64" if kind == "int" else "f64") for name, kind in self.signature.scalars]

    def fresh(self) -> str:
        self.counter += 1
        return f"%t.{self.counter}"  # generated names hold a dot: no Python name can clash

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def op(self, depth: int, text: str) -> str:
        name = self.fresh()
        self.emit(depth, f"{name} = {text}")
        return name

    # integer (index) expressions of the loop nest --------------------------------------------

    def index(self, expr: IntExpr, env: dict[str, str], depth: int) -> str:
        if isinstance(expr, IntConst):
            return self.op(depth, f"arith.constant {expr.value} : index")
        if isinstance(expr, Var):
            return env[expr.name]
        args = [self.index(a, env, depth) for a in expr.args]
        arith = {
            "+": "addi",
            "-": "subi",
            "*": "muli",
            "div": "divsi",
            "fdiv": "floordivsi",
            "mod": "remsi",
            "min": "minsi",
            "max": "maxsi",
        }
        if expr.op in arith:
            return self.op(depth, f"arith.{arith[expr.op]} {args[0]}, {args[1]} : index")
        if expr.op == "neg":
            zero = self.op(depth, "arith.constant 0 : index")
            return self.op(depth, f"arith.subi {zero}, {args[0]} : index")
        if expr.op in _CMPI:
            return self.op(depth, f"arith.cmpi {_CMPI[expr.op]}, {args[0]}, {args[1]} : index")
        if expr.op in ("and", "or"):
            return self.op(depth, f"arith.{expr.op}i {args[0]}, {args[1]} : i1")
        if expr.op == "select":
            return self.op(depth, f"arith.select {args[0]}, {args[1]}, {args[2]} : index")
        raise NotImplementedError(expr.op)

    def affine(self, expr: AffineExpr, env: dict[str, str], depth: int) -> str:
        total = self.op(depth, f"arith.constant {expr.constant} : index")
        for name, coefficient in expr.terms:
            factor = self.op(depth, f"arith.constant {coefficient} : index")
            term = self.op(depth, f"arith.muli {factor}, {env[name]} : index")
            total = self.op(depth, f"arith.addi {total}, {term} : index")
        return total

    # the loop nest -----------------------------------------------------------------------------

    def node(self, node: Node, env: dict[str, str], depth: int) -> None:
        if isinstance(node, Block):
            for child in node.children:
                self.node(child, env, depth)
        elif isinstance(node, If):
            condition = self.index(node.cond, env, depth)
            self.emit(depth, f"scf.if {condition} {{")
            self.node(node.then, env, depth + 1)
            if node.otherwise is not None:
                self.emit(depth, "} else {")
                self.node(node.otherwise, env, depth + 1)
            self.emit(depth, "}")
        elif isinstance(node, Let):
            self.node(node.body, {**env, node.iterator: self.index(node.value, env, depth)}, depth)
        elif isinstance(node, Call):
            self.statement(self.kernel.statement(node.statement), [self.index(a, env, depth) for a in node.args], env, depth)
        elif isinstance(node, Promoted):
            self.node(node.fallback, env, depth)
        elif isinstance(node, (LaneSplit, Region)):
            self.loop(node.loop, env, depth)
        elif isinstance(node, Unrolled):
            lower, upper, _step = self.bounds(node.loop, env, depth)
            self.unrolled(node.loop, self.fresh(), lower, upper, env, depth)
        else:
            self.loop(node, env, depth)

    def bounds(self, node: For, env: dict[str, str], depth: int) -> tuple[str, str, str]:
        """The loop's lower bound, exclusive upper bound and step as index values."""
        lower = self.index(node.init, env, depth)
        bound, inclusive = iterators_upper(node.cond, node.iterator)
        upper = self.index(Op("+", (bound, IntConst(1))) if inclusive else bound, env, depth)
        return lower, upper, self.op(depth, f"arith.constant {node.step} : index")

    def loop(self, node: For, env: dict[str, str], depth: int) -> None:
        lower, upper, step = self.bounds(node, env, depth)
        iv = self.fresh()
        if node.parallel:
            self.parallel = True
            self.emit(depth, f"scf.parallel ({iv}) = ({lower}) to ({upper}) step ({step}) {{")
            self.outlined_call(node, env, iv, depth + 1)
            self.emit(depth, "}")
            return
        else:
            self.emit(depth, f"scf.for {iv} = {lower} to {upper} step {step} {{")
        self.node(node.body, {**env, node.iterator: iv}, depth + 1)
        self.emit(depth, "}")

    def outlined_call(self, node: For, env: dict[str, str], iv: str, depth: int) -> None:
        """The body of a parallel loop as a function of its own, whose memref arguments are `noalias`:
        OpenMP's outlining passes captured values through memory, which would otherwise hide from
        LLVM that the arrays do not overlap (and stop it vectorizing the body). A private scalar is
        not passed: each call allocates its own, which every iteration writes before reading it."""
        self.outlined += 1
        name = f"repoos_parallel_{self.outlined}"
        outer = sorted(env)
        arrays = [a for a in self.kernel.arrays if a.is_argument and a.rank > 0]
        locals_ = [a for a in self.kernel.arrays if a.rank == 0 and a.name not in node.private]
        private = [a for a in self.kernel.arrays if a.rank == 0 and a.name in node.private]
        args = [f"%{a.name}" for a in arrays] + [f"%local.{a.name}" for a in locals_] + [env[n] for n in outer] + [iv]
        types = [self.memref_type(a.name) for a in arrays] + [f"memref<{MLIR_TYPES[self.kinds.names[a.name]]}>" for a in locals_]
        types += ["index"] * (len(outer) + 1)
        scalars = [(n, t) for n, t in self.scalar_arguments if n not in self.kernel.parameters]
        args += [f"%{n}" for n, _ in scalars]
        types += [t for _, t in scalars]
        self.emit(depth, f"func.call @{name}({', '.join(args)}) : ({', '.join(types)}) -> ()")
        saved = self.lines
        self.lines = []
        inner_env = {n: f"%outer.{k}" for k, n in enumerate(outer)}
        inner_env[node.iterator] = "%iteration."
        for array in private:
            self.emit(2, f"%local.{array.name} = memref.alloca() : memref<{MLIR_TYPES[self.kinds.names[array.name]]}>")
        self.node(node.body, inner_env, 2)
        params = [f"%{a.name}: {self.memref_type(a.name)} {{llvm.noalias}}" for a in arrays]
        params += [f"%local.{a.name}: memref<{MLIR_TYPES[self.kinds.names[a.name]]}>" for a in locals_]
        params += [f"%outer.{k}: index" for k in range(len(outer))] + ["%iteration.: index"]
        params += [f"%{n}: {t}" for n, t in scalars]
        self.functions.append([f"  func.func private @{name}({', '.join(params)}) {{", *self.lines, "    return", "  }"])
        self.lines = saved

    def unrolled(self, node: For, iv: str, lower: str, upper: str, env: dict[str, str], depth: int) -> None:
        """Copies while a whole round fits, then the remainder: the C backend's exact unrolling."""
        factor, step = node.unroll, node.step
        span = self.op(depth, f"arith.subi {upper}, {lower} : index")
        zero = self.op(depth, "arith.constant 0 : index")
        span = self.op(depth, f"arith.maxsi {span}, {zero} : index")
        round_length = self.op(depth, f"arith.constant {factor * step} : index")
        rounds = self.op(depth, f"arith.divsi {span}, {round_length} : index")
        covered = self.op(depth, f"arith.muli {rounds}, {round_length} : index")
        middle = self.op(depth, f"arith.addi {lower}, {covered} : index")
        self.emit(depth, f"scf.for {iv} = {lower} to {middle} step {round_length} {{")
        for k in range(factor):
            offset = self.op(depth + 1, f"arith.constant {k * step} : index")
            copy = self.op(depth + 1, f"arith.addi {iv}, {offset} : index")
            self.node(node.body, {**env, node.iterator: copy}, depth + 1)
        self.emit(depth, "}")
        if node.remainder:
            rest = self.fresh()
            single = self.op(depth, f"arith.constant {step} : index")
            self.emit(depth, f"scf.for {rest} = {middle} to {upper} step {single} {{")
            self.node(node.body, {**env, node.iterator: rest}, depth + 1)
            self.emit(depth, "}")

    # statement bodies --------------------------------------------------------------------------

    def statement(self, statement: Statement, args: list[str], env: dict[str, str], depth: int) -> None:
        scope = {**env, **dict(zip(statement.iterators, args, strict=True))}
        target = statement.target
        if isinstance(target, ArrayRef):
            kind = self.signature.array_type(target.array)
            value = self.converted(stored_value(statement.op, target, statement.value, kind), kind, scope, depth)
            indices = ", ".join(self.affine(i, scope, depth) for i in target.indices)
            self.emit(depth, f"memref.store {value}, %{target.array}[{indices}] : {self.memref_type(target.array)}")
        else:
            kind = self.kinds.names[target.name]
            value = self.converted(stored_value(statement.op, target, statement.value, kind), kind, scope, depth)
            self.emit(depth, f"memref.store {value}, %local.{target.name}[] : memref<{MLIR_TYPES[kind]}>")

    def memref_type(self, array: str) -> str:
        rank = self.arrays[array].rank
        element = MLIR_TYPES[self.signature.array_type(array)]
        return f"memref<{'?x' * rank}{element}>"

    def converted(self, expr: Expr, kind: str, scope: dict[str, str], depth: int) -> str:
        return self.convert(self.value(expr, scope, depth), self.kinds.kind_of(expr), kind, depth)

    def convert(self, value: str, source: str, target: str, depth: int) -> str:
        """Change a value's type as NumPy would when it meets `target` (C's usual conversions otherwise)."""
        a, b = MLIR_TYPES[source], MLIR_TYPES[target]
        if a == b:
            return value
        if a.startswith("f") and b.startswith("f"):
            return self.op(depth, f"arith.{'extf' if a == 'f32' else 'truncf'} {value} : {a} to {b}")
        if a.startswith("i") and b.startswith("f"):
            return self.op(depth, f"arith.sitofp {value} : {a} to {b}")
        if a.startswith("f") and b.startswith("i"):
            return self.op(depth, f"arith.fptosi {value} : {a} to {b}")
        widths = {"i8": 8, "i32": 32, "i64": 64}
        return self.op(depth, f"arith.{'extsi' if widths[a] < widths[b] else 'trunci'} {value} : {a} to {b}")

    def value(self, expr: Expr, scope: dict[str, str], depth: int) -> str:
        kind = self.kinds.kind_of(expr)
        mlir_type = MLIR_TYPES[kind]
        if isinstance(expr, Number):
            literal = _float_literal(float(expr.value), mlir_type) if is_float(kind) else str(int(expr.value))
            return self.op(depth, f"arith.constant {literal} : {mlir_type}")
        if isinstance(expr, Name):
            if expr.name in self.kinds.names and self.arrays.get(expr.name) and self.arrays[expr.name].rank == 0:
                return self.op(depth, f"memref.load %local.{expr.name}[] : memref<{mlir_type}>")
            if expr.name in scope:  # loop variables and sizes are index values
                return self.op(depth, f"arith.index_cast {scope[expr.name]} : index to i64")
            return f"%{expr.name}"
        if isinstance(expr, ArrayRef):
            indices = ", ".join(self.affine(i, scope, depth) for i in expr.indices)
            return self.op(depth, f"memref.load %{expr.array}[{indices}] : {self.memref_type(expr.array)}")
        if isinstance(expr, Unary):
            operand = self.value(expr.operand, scope, depth)
            operand_kind = self.kinds.kind_of(expr.operand)
            if expr.op == "not":  # an i64 0 or 1, as the other truth values are
                return self.boolean(self.truth(operand, operand_kind, depth, negate=True), depth)
            if expr.op == "+":
                return operand
            if is_float(kind):
                return self.op(depth, f"arith.negf {operand} : {mlir_type}")
            zero = self.op(depth, f"arith.constant 0 : {mlir_type}")
            return self.op(depth, f"arith.subi {zero}, {operand} : {mlir_type}")
        if isinstance(expr, Binary):
            return self.binary(expr, kind, scope, depth)
        if isinstance(expr, ValueCall):
            return self.call(expr, kind, scope, depth)
        if isinstance(expr, Cast):
            return self.converted(expr.operand, kind, scope, depth)
        if isinstance(expr, Choice):
            test = self.truth(self.value(expr.test, scope, depth), self.kinds.kind_of(expr.test), depth)
            then = self.converted(expr.then, kind, scope, depth)
            otherwise = self.converted(expr.otherwise, kind, scope, depth)
            return self.op(depth, f"arith.select {test}, {then}, {otherwise} : {mlir_type}")
        raise TypeError(expr)

    def truth(self, value: str, kind: str, depth: int, negate: bool = False) -> str:
        """An i1 from a value: comparisons already are; numbers are true when non-zero."""
        zero = self.op(depth, f"arith.constant {'0.0' if is_float(kind) else '0'} : {MLIR_TYPES[kind]}")
        if is_float(kind):
            return self.op(depth, f"arith.cmpf {'oeq' if negate else 'une'}, {value}, {zero} : {MLIR_TYPES[kind]}")
        return self.op(depth, f"arith.cmpi {'eq' if negate else 'ne'}, {value}, {zero} : {MLIR_TYPES[kind]}")

    def boolean(self, condition: str, depth: int) -> str:
        return self.op(depth, f"arith.extui {condition} : i1 to i64")

    def binary(self, expr: Binary, kind: str, scope: dict[str, str], depth: int) -> str:
        op = expr.op
        if op in ("and", "or"):
            left = self.truth(self.value(expr.left, scope, depth), self.kinds.kind_of(expr.left), depth)
            right = self.truth(self.value(expr.right, scope, depth), self.kinds.kind_of(expr.right), depth)
            return self.boolean(self.op(depth, f"arith.{op}i {left}, {right} : i1"), depth)
        left_kind, right_kind = self.kinds.kind_of(expr.left), self.kinds.kind_of(expr.right)
        compute = promote(left_kind, right_kind) if op in COMPARISONS else kind
        left = self.converted(expr.left, compute, scope, depth)
        right = self.converted(expr.right, compute, scope, depth)
        t = MLIR_TYPES[compute]
        floating = is_float(compute)
        if op in COMPARISONS:
            predicate = f"arith.cmpf {_CMPF[op]}" if floating else f"arith.cmpi {_CMPI[op]}"
            return self.boolean(self.op(depth, f"{predicate}, {left}, {right} : {t}"), depth)
        simple = {"+": "add", "-": "sub", "*": "mul"}
        if op in simple:
            return self.op(depth, f"arith.{simple[op]}{'f' if floating else 'i'} {left}, {right} : {t}")
        if op == "/":
            return self.op(depth, f"arith.divf {left}, {right} : {t}")
        if op == "//":
            if floating:
                return self.floor_divide(left, right, t, depth)
            safe, zero, minus_one = self.safe_divisor(right, t, depth)
            quotient = self.op(depth, f"arith.floordivsi {left}, {safe} : {t}")
            negated = self.op(depth, f"arith.subi {self.op(depth, f'arith.constant 0 : {t}')}, {left} : {t}")
            quotient = self.op(depth, f"arith.select {minus_one}, {negated}, {quotient} : {t}")
            return self.op(depth, f"arith.select {zero}, {self.op(depth, f'arith.constant 0 : {t}')}, {quotient} : {t}")
        if op == "%":
            if floating:
                return self.python_mod(left, right, t, floating, depth)
            safe, zero, minus_one = self.safe_divisor(right, t, depth)
            remainder = self.python_mod(left, safe, t, floating, depth)
            either = self.op(depth, f"arith.ori {zero}, {minus_one} : i1")
            return self.op(depth, f"arith.select {either}, {self.op(depth, f'arith.constant 0 : {t}')}, {remainder} : {t}")
        if floating:
            return self.op(depth, f"math.powf {left}, {right} : {t}")
        assert isinstance(expr.right, Number), "an integer exponent is a constant (`integer_type_problem`)"
        return self.integer_power(left, int(expr.right.value), t, depth)

    def integer_power(self, base: str, exponent: int, t: str, depth: int) -> str:
        """`base ** exponent` for a constant exponent of at least 0, by squaring (LLVM has no lowering of
        `math.ipowi`); wrapping on overflow as NumPy's integers do."""
        result = self.op(depth, f"arith.constant 1 : {t}")
        while exponent:
            if exponent & 1:
                result = self.op(depth, f"arith.muli {result}, {base} : {t}")
            exponent >>= 1
            if exponent:
                base = self.op(depth, f"arith.muli {base}, {base} : {t}")
        return result

    def safe_divisor(self, right: str, t: str, depth: int) -> tuple[str, str, str]:
        """An integer divisor that cannot trap (1 where it is 0 or -1), and whether it was 0 and -1: NumPy's
        integer `//` and `%` by 0 are 0, and the minimum's by -1 wraps, where the machine's division faults."""
        zero = self.op(depth, f"arith.cmpi eq, {right}, {self.op(depth, f'arith.constant 0 : {t}')} : {t}")
        minus_one = self.op(depth, f"arith.cmpi eq, {right}, {self.op(depth, f'arith.constant -1 : {t}')} : {t}")
        either = self.op(depth, f"arith.ori {zero}, {minus_one} : i1")
        safe = self.op(depth, f"arith.select {either}, {self.op(depth, f'arith.constant 1 : {t}')}, {right} : {t}")
        return safe, zero, minus_one

    def floor_divide(self, left: str, right: str, t: str, depth: int) -> str:
        """NumPy's (and Python's) float `a // b`: the quotient of `fmod`, rounded to the nearest integer, not
        `floor(a / b)` (1.0 // 0.1 is 9.0); `a / b` where `b` is 0."""
        zero = self.op(depth, f"arith.constant 0.0 : {t}")
        one = self.op(depth, f"arith.constant 1.0 : {t}")
        half = self.op(depth, f"arith.constant 0.5 : {t}")
        remainder = self.op(depth, f"arith.remf {left}, {right} : {t}")
        quotient = self.op(depth, f"arith.divf {self.op(depth, f'arith.subf {left}, {remainder} : {t}')}, {right} : {t}")
        nonzero = self.op(depth, f"arith.cmpf une, {remainder}, {zero} : {t}")
        negative_r = self.op(depth, f"arith.cmpf olt, {remainder}, {zero} : {t}")
        negative_d = self.op(depth, f"arith.cmpf olt, {right}, {zero} : {t}")
        differ = self.op(depth, f"arith.andi {nonzero}, {self.op(depth, f'arith.xori {negative_r}, {negative_d} : i1')} : i1")
        lowered = self.op(depth, f"arith.subf {quotient}, {one} : {t}")
        quotient = self.op(depth, f"arith.select {differ}, {lowered}, {quotient} : {t}")
        floor = self.op(depth, f"math.floor {quotient} : {t}")
        above = self.op(depth, f"arith.cmpf ogt, {self.op(depth, f'arith.subf {quotient}, {floor} : {t}')}, {half} : {t}")
        rounded = self.op(depth, f"arith.select {above}, {self.op(depth, f'arith.addf {floor}, {one} : {t}')}, {floor} : {t}")
        ratio = self.op(depth, f"arith.divf {left}, {right} : {t}")
        signed_zero = self.op(depth, f"math.copysign {zero}, {ratio} : {t}")
        is_zero = self.op(depth, f"arith.cmpf oeq, {quotient}, {zero} : {t}")
        result = self.op(depth, f"arith.select {is_zero}, {signed_zero}, {rounded} : {t}")
        by_zero = self.op(depth, f"arith.cmpf oeq, {right}, {zero} : {t}")
        return self.op(depth, f"arith.select {by_zero}, {ratio}, {result} : {t}")

    def python_mod(self, left: str, right: str, t: str, floating: bool, depth: int) -> str:
        """Python's `%`: the remainder takes the divisor's sign."""
        suffix = "f" if floating else "i"
        remainder = self.op(depth, f"arith.rem{'f' if floating else 'si'} {left}, {right} : {t}")
        zero = self.op(depth, f"arith.constant {'0.0' if floating else '0'} : {t}")
        compare = (
            (lambda p, a, b: f"arith.cmpf {p}, {a}, {b} : {t}") if floating else (lambda p, a, b: f"arith.cmpi {p}, {a}, {b} : {t}")
        )
        nonzero = self.op(depth, compare("une" if floating else "ne", remainder, zero))
        negative_r = self.op(depth, compare("olt" if floating else "slt", remainder, zero))
        negative_d = self.op(depth, compare("olt" if floating else "slt", right, zero))
        differ = self.op(depth, f"arith.xori {negative_r}, {negative_d} : i1")
        fix = self.op(depth, f"arith.andi {nonzero}, {differ} : i1")
        adjusted = self.op(depth, f"arith.add{suffix} {remainder}, {right} : {t}")
        return self.op(depth, f"arith.select {fix}, {adjusted}, {remainder} : {t}")

    def call(self, expr: ValueCall, kind: str, scope: dict[str, str], depth: int) -> str:
        t = MLIR_TYPES[kind]
        if expr.function in ("min", "max"):
            result = self.converted(expr.args[0], kind, scope, depth)
            for arg in expr.args[1:]:
                other = self.converted(arg, kind, scope, depth)
                if is_float(kind) and expr.module == "np":  # NumPy's: NaN where either value is NaN
                    result = self.op(depth, f"arith.{'maximumf' if expr.function == 'max' else 'minimumf'} {result}, {other} : {t}")
                    continue
                predicate = (
                    f"arith.cmpf {'ogt' if expr.function == 'max' else 'olt'}"
                    if is_float(kind)
                    else f"arith.cmpi {'sgt' if expr.function == 'max' else 'slt'}"
                )
                better = self.op(depth, f"{predicate}, {other}, {result} : {t}")
                result = self.op(depth, f"arith.select {better}, {other}, {result} : {t}")
            return result
        if expr.function == "abs":
            operand = self.converted(expr.args[0], kind, scope, depth)
            return self.op(depth, f"{'math.absf' if is_float(kind) else 'math.absi'} {operand} : {t}")
        if expr.function == "float":
            return self.converted(expr.args[0], "float", scope, depth)
        if expr.function in ROUNDINGS and not is_float(kind):  # NumPy's floor of an integer is the integer
            return self.converted(expr.args[0], kind, scope, depth)
        compute = "float32" if kind == "float32" else "float"
        args = [self.converted(a, compute, scope, depth) for a in expr.args]
        ct = MLIR_TYPES[compute]
        if expr.function == "reciprocal":
            return self.op(depth, f"arith.divf {self.op(depth, f'arith.constant 1.0 : {ct}')}, {args[0]} : {ct}")
        if expr.function in LIBM:
            name = f"{expr.function}f" if ct == "f32" else expr.function
            types = ", ".join([ct] * len(args))
            self.external[name] = f"  func.func private @{name}({types}) -> {ct}"
            return self.op(depth, f"func.call @{name}({', '.join(args)}) : ({types}) -> {ct}")
        if expr.function == "pow":
            return self.op(depth, f"math.powf {args[0]}, {args[1]} : {ct}")
        if expr.function == "atan2":
            return self.op(depth, f"math.atan2 {args[0]}, {args[1]} : {ct}")
        return self.op(depth, f"{_MATH[expr.function]} {args[0]} : {ct}")


def _float_literal(value: float, mlir_type: str) -> str:
    """MLIR reads infinities only as bit patterns."""
    if math.isinf(value):
        bits = {"f64": 0x7FF0000000000000, "f32": 0x7F800000}[mlir_type]
        sign = {"f64": 1 << 63, "f32": 1 << 31}[mlir_type] if value < 0 else 0
        return hex(bits | sign)
    return f"{value:.17e}"


def generate_mlir(kernel: Kernel, signature: Signature, nest: LoopNest) -> MlirSource:
    """The kernel's loop nest as an MLIR module with one C-interface function."""
    problem = unsupported(kernel, nest, "MLIR", SUPPORTED)
    if problem is not None:
        raise CompileError(problem)
    emitter = _Emitter(kernel, signature)
    arrays = tuple((a.name, a.rank, signature.array_type(a.name)) for a in kernel.arrays if a.is_argument and a.rank > 0)
    scalars = []
    for name, kind in signature.scalars:
        scalars.append((name, "i64" if kind == "int" else "f64"))
    scalars += [(size.name, "i64") for size in kernel.derived]  # the C wrapper computes them, as Python does
    params = ", ".join(
        [f"%{name}: {emitter.memref_type(name)} {{llvm.noalias}}" for name, _, _ in arrays]
        + [f"%{name}.arg: {t}" if name in kernel.parameters else f"%{name}: {t}" for name, t in scalars]
    )
    body: list[str] = []
    emitter.lines = body
    env: dict[str, str] = {}
    derived = {size.name for size in kernel.derived}
    for name in kernel.parameters:
        if name in kernel.arguments or name in derived:
            env[name] = emitter.op(2, f"arith.index_cast %{name}.arg : i64 to index")
    for shape in kernel.shape_parameters:
        dim = emitter.op(2, f"arith.constant {shape.dim} : index")
        env[shape.name] = emitter.op(2, f"memref.dim %{shape.array}, {dim} : {emitter.memref_type(shape.array)}")
    for array in kernel.arrays:
        if array.rank == 0:
            kind = emitter.kinds.names[array.name]
            t = MLIR_TYPES[kind]
            emitter.emit(2, f"%local.{array.name} = memref.alloca() : memref<{t}>")
            initial = (
                f"%{array.name}" if array.is_argument else emitter.op(2, f"arith.constant {'0.0' if is_float(kind) else '0'} : {t}")
            )
            if array.is_argument:
                source_kind = signature.scalar_kind(array.name)
                initial = emitter.convert(initial, source_kind, kind, 2)
            emitter.emit(2, f"memref.store {initial}, %local.{array.name}[] : memref<{t}>")
    emitter.node(nest.root, env, 2)
    outlined = [line for function in emitter.functions for line in function] + list(emitter.external.values())
    entry = f"  func.func @{MLIR_ENTRY}({params}) attributes {{llvm.emit_c_interface}} {{"
    text = "\n".join(["module {", entry, *body, "    return", "  }", *outlined, "}", ""])
    return MlirSource(text, arrays, tuple(scalars), emitter.parallel)
