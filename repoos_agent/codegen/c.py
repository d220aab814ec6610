"""C from the model: isl's AST generator decides the loops, we print them.

isl turns a schedule (a map from statement instances to time) into loops with
exact bounds; this module prints that AST as C99 with each statement inlined,
arrays viewed through variable-length-array pointers so `A[i][j]` indexes the
caller's NumPy buffer in place. The generated function first checks that every
index the loop nest can reach lies inside the arrays it was given, so a wrong
size never turns into a wild memory access.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from repoos_agent.codegen.index_checks import IndexRange, Reach, index_ranges
from repoos_agent.codegen.loopnest import (
    WRAPPERS,
    BlasCall,
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
    mentions,
    plain,
    substitute,
)
from repoos_agent.codegen.mlir import MLIR_ENTRY
from repoos_agent.codegen.numeric import C_TYPE, COMPARISONS, is_float, kind_environment, promote, stored_value
from repoos_agent.codegen.passes import transformed_nest
from repoos_agent.codegen.passes.promotion import constant_extent
from repoos_agent.codegen.passes.rewrite import calls
from repoos_agent.codegen.support import KINDS, unsupported
from repoos_agent.errors import CompileError
from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import ROUNDINGS, ArrayRef, Binary, Cast, Choice, Expr, IndexRead, Name, Number, Unary
from repoos_agent.model.expr import Call as ValueCall
from repoos_agent.model.kernel import Allocation, DerivedSize, Kernel, Statement, derived_values
from repoos_agent.model.signature import C_TYPES, Signature
from repoos_agent.schedule import Contraction, LoweredSchedule, ScheduleState
from repoos_agent.schedule.products import Operand, ProductCall

ENTRY = "repoos_kernel"
COUNTER = "repoos_instances"

C_RESERVED = frozenset(
    [
        "auto",
        "break",
        "case",
        "char",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "float",
        "for",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "register",
        "restrict",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "typedef",
        "union",
        "unsigned",
        "void",
        "volatile",
        "while",
        "floord",
        "min",
        "max",
        "main",
        "errno",
        "count",
    ]
)

SELECT = {"double": "rp_select", "float": "rp_selectf", "int64_t": "rp_selectl", "int32_t": "rp_selecti"}
"""The prelude's select of each C type: both sides computed, one picked."""
PRELUDE = """\
#include <stdint.h>
#include <math.h>

static inline int64_t floord(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t rp_floordiv(int64_t a, int64_t b)
{
    return b == 0 ? 0 : b == -1 ? (int64_t) (0 - (uint64_t) a) : floord(a, b); /* NumPy's: 0, and wrapping */
}
static inline int64_t rp_mod(int64_t a, int64_t b)
{
    if (b == 0 || b == -1) return 0;
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline double rp_fmod(double a, double b)
{
    double r = fmod(a, b);
    return r == 0 ? copysign(0.0, b) : ((r < 0) != (b < 0)) ? r + b : r;
}
static inline double rp_ffloordiv(double a, double b)
{
    if (b == 0) return a / b;
    double r = fmod(a, b), d = (a - r) / b;
    if (r != 0 && ((b < 0) != (r < 0))) d -= 1.0;
    if (d == 0) return copysign(0.0, a / b);
    double f = floor(d);
    return d - f > 0.5 ? f + 1.0 : f;
}
static inline float rp_ffloordivf(float a, float b)
{
    if (b == 0) return a / b;
    float r = fmodf(a, b), d = (a - r) / b;
    if (r != 0 && ((b < 0) != (r < 0))) d -= 1.0f;
    if (d == 0) return copysignf(0.0f, a / b);
    float f = floorf(d);
    return d - f > 0.5f ? f + 1.0f : f;
}
static inline int64_t rp_ipow(int64_t a, int64_t e) { int64_t r = 1; while (e-- > 0) r *= a; return r; }
static inline double rp_select(int c, double a, double b) { return c ? a : b; }
static inline float rp_selectf(int c, float a, float b) { return c ? a : b; }
static inline int64_t rp_selectl(int c, int64_t a, int64_t b) { return c ? a : b; }
static inline int32_t rp_selecti(int c, int32_t a, int32_t b) { return c ? a : b; }
static inline double rp_fmax(double a, double b) { return b > a ? b : a; }
static inline double rp_fmin(double a, double b) { return b < a ? b : a; }
static inline float rp_fmaxf(float a, float b) { return b > a ? b : a; }
static inline float rp_fminf(float a, float b) { return b < a ? b : a; }
static inline double rp_npmax(double a, double b) { return (a != a || a > b) ? a : b; }
static inline double rp_npmin(double a, double b) { return (a != a || a < b) ? a : b; }
static inline float rp_npmaxf(float a, float b) { return (a != a || a > b) ? a : b; }
static inline float rp_npminf(float a, float b) { return (a != a || a < b) ? a : b; }
#pragma omp declare reduction(rp_npmax : double : omp_out = rp_npmax(omp_out, omp_in)) initializer(omp_priv = -INFINITY)
#pragma omp declare reduction(rp_npmin : double : omp_out = rp_npmin(omp_out, omp_in)) initializer(omp_priv = INFINITY)
#pragma omp declare reduction(rp_npmax : float : omp_out = rp_npmaxf(omp_out, omp_in)) initializer(omp_priv = -INFINITY)
#pragma omp declare reduction(rp_npmin : float : omp_out = rp_npminf(omp_out, omp_in)) initializer(omp_priv = INFINITY)
"""

VECTOR_MATH = {"exp": 1, "log": 1, "pow": 2, "sin": 1, "cos": 1, "tan": 1, "tanh": 1, "asin": 1, "acos": 1, "atan": 1, "atan2": 2}
"""The libm functions glibc's libmvec has vector variants of, with their arity. Declared with
`omp declare simd` (under `RP_VECTOR_MATH`, which the backend defines where libmvec links), gcc
vectorizes the loops that call them instead of calling them one element at a time."""


UNDERFLOWING_EXP = """\
static inline double rp_exp(double t)
{
    const uint64_t kept = (uint64_t) 0 - (uint64_t) !(t < -746.0);
    double e = exp(t < -746.0 ? 0.0 : t);
    uint64_t bits;
    __builtin_memcpy(&bits, &e, sizeof bits);
    bits &= kept;
    __builtin_memcpy(&e, &bits, sizeof e);
    return e;
}
static inline float rp_expf(float t) { return (float) exp((double) t); }
"""
"""`exp` that stays in vectors where it underflows. libmvec's vector `exp` hands every lane under
about -708 (-inf included) to the scalar `exp`, one call each, and its `expf` every lane under about -87.3:
a causal mask's `exp(-inf)` and softmax's widely shifted scores (`exp(x - max)`) fall there by the
thousand and ran at a tenth of the vector speed. Below -746 the exact result rounds to +0: those lanes
call `exp(0)` and their result's bits are cleared (a mask, not a branch, which gcc would fold back into
the call's argument). float32 goes through the float64 `exp`, whose results round to the correctly
rounded float32 but in rare ties, and where nothing a float32 holds but ±inf and NaN is special."""


def vector_math_prelude(text: str) -> str:
    """The vector declarations of the libmvec functions `text` calls, float64 (`exp`) and float32 (`expf`),
    then the helpers that call them."""
    lines = []
    underflowing = "rp_exp(" in text or "rp_expf(" in text
    for name, arity in VECTOR_MATH.items():
        for called, c_type in ((name, "double"), (f"{name}f", "float")):
            if re.search(rf"(?<![\w.]){called}\(", text) or (underflowing and called == "exp"):
                lines += ["#pragma omp declare simd notinbranch", f"{c_type} {called}({', '.join([c_type] * arity)});"]
    declarations = "\n".join(["#ifdef RP_VECTOR_MATH", *lines, "#endif", ""]) if lines else ""
    return declarations + (UNDERFLOWING_EXP if underflowing else "")


BLAS_PRELUDE = """\
#include <limits.h>
#include <omp.h>
#include <cblas.h>
"""
BLAS_LIBRARIES = ("openblas",)
COPIES_PRELUDE = """\
#include <stdlib.h>
#include <omp.h>
"""
MEMORY_CODE = 1000
"""The first return code of a failed allocation (per-thread copies), past every bounds check's."""
FAILURE_CODE = 2000
"""The first return code of a `Failure` (what NumPy raises on that only the computation finds). It is returned
at the end, after the kernel wrote: the caller undoes the writes before it runs the original."""
BLAS_TYPES = {"double": "d", "float": "s"}
SUPPORTED = frozenset(KINDS)
"""The node kinds (`codegen.support`) the C printer prints: all of them."""


@dataclass(frozen=True)
class CArgument:
    """One parameter of the generated C function, in call order."""

    name: str  # the kernel argument it comes from
    role: str  # "size", "scalar", "array" (pointer) or "dim" (one extent of the array before it)
    c_type: str
    dim: int = -1


@dataclass(frozen=True)
class BoundsCheck:
    """What a non-zero return code of the kernel means. A check on an index array's values names it
    (`index_array`, and whether its smallest or largest value overran): the message then shows that value."""

    code: int
    array: str
    dim: int
    message: str
    index_array: str = ""
    smallest: bool = False


@dataclass(frozen=True)
class CSource:
    """Generated C for one kernel, schedule and signature, with how to call it."""

    text: str
    arguments: tuple[CArgument, ...]
    checks: tuple[BoundsCheck, ...]
    sizes: tuple[str, ...]  # the integer-argument parameters, in the order `repoos_instances` takes them
    shape_sizes: tuple[tuple[str, int], ...]  # then these extents (array, dim), for sizes read from shapes
    name: str  # the kernel's name, for messages
    allocations: tuple[Allocation, ...] = ()  # arrays the caller allocates and passes after the arguments
    shape_names: tuple[str, ...] = ()  # the size each of `shape_sizes` defines
    libraries: tuple[str, ...] = ()  # what the build links besides libm (`openblas` for `blas` schedules)
    derived: tuple[DerivedSize, ...] = ()  # sizes the entry computes from the others (`h = n // 2`), in order

    def parameter_values(self, values: Mapping[str, object]) -> dict[str, int]:
        """The sizes a call with `values` runs at, by name: what the allocations' extents read."""
        known = {name: int(values[name]) for name in self.sizes}  # type: ignore[call-overload]
        for name, (array, dim) in zip(self.shape_names, self.shape_sizes, strict=True):
            known[name] = int(values[array].shape[dim])  # type: ignore[attr-defined]
        return derived_values(self.derived, known)


def generate_c(kernel: Kernel, signature: Signature, schedule: LoweredSchedule | None = None, mlir_call: bool = False) -> CSource:
    """Print the kernel as a C function for `schedule` (the source order by default).

    With `mlir_call`, the function keeps its signature, argument checks and instance counter but
    hands the loop nest to the MLIR backend's compiled function instead of running its own."""
    lowered = schedule if schedule is not None else ScheduleState(kernel).lower()
    problem = blas_type_problem(kernel, signature, lowered) or integer_type_problem(kernel, signature)
    if problem is not None:
        raise CompileError(problem)
    nest = transformed_nest(kernel, lowered, signature)
    if not mlir_call:  # the MLIR printer refuses what it lacks (`generate_mlir`)
        problem = unsupported(kernel, nest, "C", SUPPORTED)
        if problem is not None:
            raise CompileError(problem)
    return _Printer(kernel, signature, lowered).source(nest, mlir_call)


def blas_type_problem(kernel: Kernel, signature: Signature, lowered: LoweredSchedule) -> str | None:
    """Why a `blas` mark cannot be a BLAS call for these argument types, or None: every array of the
    product must be float64 (dgemm, dgemv) or float32 (sgemm, sgemv), all of one type."""
    for call in lowered.blas:
        types = {name: C_TYPES[signature.array_type(name)] for name in call.arrays}
        if len(set(types.values())) != 1 or next(iter(types.values())) not in BLAS_TYPES:
            listed = ", ".join(f"`{name}` {signature.array_type(name)}" for name in types)
            return f"blas({call.update}): BLAS multiplies float64 or float32 arrays of one type; here {listed}"
    return None


def integer_type_problem(kernel: Kernel, signature: Signature) -> str | None:
    """Why a statement cannot be built for these integer types, or None. NumPy raises on an integer power whose
    exponent is negative, which a loop cannot do halfway through, so an integer exponent must be a constant
    of at least 0; NumPy's integer `np.reciprocal` of 0 is whatever the hardware makes of infinity."""
    kinds = kind_environment(kernel, signature)
    for statement in kernel.statements:
        for expr in _subexpressions(statement.value):
            if is_float(kinds.kind_of(expr)):
                continue
            if isinstance(expr, Binary) and expr.op == "**":
                exponent = expr.right
                if not (isinstance(exponent, Number) and isinstance(exponent.value, int) and exponent.value >= 0):
                    return (
                        f"{statement.name} (`{statement.text}`): an integer power whose exponent may be negative "
                        "(NumPy raises there) is not modelled: give the exponent as a constant >= 0, or make the "
                        "base a float (`x ** 2.0`)"
                    )
            if isinstance(expr, ValueCall) and expr.function == "reciprocal":
                return f"{statement.name} (`{statement.text}`): `np.reciprocal` of integers is not modelled: write `1.0 / x`"
    return None


def _subexpressions(expr: Expr) -> list[Expr]:
    """`expr` and every expression inside it (subscripts aside)."""
    if isinstance(expr, (Unary, Cast)):
        inner = [expr.operand]
    elif isinstance(expr, Binary):
        inner = [expr.left, expr.right]
    elif isinstance(expr, ValueCall):
        inner = list(expr.args)
    elif isinstance(expr, Choice):
        inner = [expr.test, expr.then, expr.otherwise]
    else:
        inner = []
    return [expr, *(found for part in inner for found in _subexpressions(part))]


class _Printer:
    def __init__(self, kernel: Kernel, signature: Signature, schedule: LoweredSchedule) -> None:
        self.kernel = kernel
        self.signature = signature
        self.lowered = schedule
        self.schedule = schedule.schedule.intersect_domain(kernel.domains)
        self.c_names = _c_names(kernel)
        self.kinds = kind_environment(kernel, signature)
        self.regions: list[list[str]] = []  # functions of the parallel regions, printed before the entry
        self.memory_checks: list[BoundsCheck] = []  # failed allocations of per-thread copies (`privatize`)
        self.contracted = {c.array: c for c in schedule.contracted}

    def source(self, nest: LoopNest, mlir_call: bool = False) -> CSource:
        kernel = self.kernel
        arguments = self._arguments()
        derived, derived_lines = self._derived_definitions(0)
        assumed, assumed_lines = self._assumption_checks(len(derived))
        checks, check_lines = self._bounds_checks(nest, len(derived) + len(assumed))
        checks, check_lines = derived + assumed + checks, derived_lines + assumed_lines + check_lines
        data_checks, data_lines = self._index_checks(len(checks))
        checks, check_lines = checks + data_checks, check_lines + data_lines
        value_checks, value_lines = self._value_checks(len(checks))
        checks, check_lines = checks + value_checks, check_lines + value_lines
        parameters = ", ".join(f"{a.c_type} {self._argument_c_name(a)}" for a in arguments)
        threads = self.lowered.privatized or any(c.kept and c.private_to for c in self.lowered.contracted)
        lines = [PRELUDE + (BLAS_PRELUDE if self.lowered.blas else "") + (COPIES_PRELUDE if threads else "")]
        if mlir_call:
            lines += self._mlir_declaration()
        entry_at = len(lines)
        lines += [f"int {ENTRY}({parameters})", "{"]
        if mlir_call:
            lines += ["    " + line for line in self._shape_definitions()]
            lines += ["    " + line for line in check_lines]
            lines += ["    " + line for line in self._mlir_call()]
        else:
            lines += ["    " + line for line in self._views()]
            lines += ["    " + line for line in check_lines]
            lines += ["    " + line for line in self._locals()]
            lines += self._node(nest.root, 1, self._statement, marks=True)
            lines[entry_at:entry_at] = [line for region in self.regions for line in region]
            checks += tuple(self.memory_checks)
            for code, failure in enumerate(kernel.failures, start=FAILURE_CODE):
                checks += (BoundsCheck(code, "", -1, failure.message),)
                lines.append(f"    if ({self.c_names[failure.flag]}) return {code};")
        lines += ["    return 0;", "}", ""]
        lines[0] += vector_math_prelude("\n".join(lines[1:]))
        sizes = tuple(p for p in kernel.parameters if p in kernel.arguments)
        count_parameters = ", ".join(f"int64_t {self.c_names[p]}" for p in sizes)
        count_parameters += "".join(f", int64_t {self._dim_name(sp.array, sp.dim)}" for sp in kernel.shape_parameters)
        lines += [f"int64_t {COUNTER}({count_parameters.lstrip(', ') or 'void'})", "{", "    int64_t count = 0;"]
        lines += ["    " + line for line in self._shape_definitions() + self._derived_definitions(None)[1]]
        lines += self._node(nest.root, 1, lambda _s, _a: ["count += 1;"], marks=False)
        lines += ["    return count;", "}", ""]
        shape_sizes = tuple((sp.array, sp.dim) for sp in kernel.shape_parameters)
        shape_names = tuple(sp.name for sp in kernel.shape_parameters)
        libraries = BLAS_LIBRARIES if self.lowered.blas and not mlir_call else ()
        return CSource(
            "\n".join(lines),
            arguments,
            checks,
            sizes,
            shape_sizes,
            kernel.name,
            kernel.allocations,
            shape_names,
            libraries,
            kernel.derived,
        )

    def _ranked_arrays(self) -> list:
        return [a for a in self.kernel.arrays if a.is_argument and a.rank > 0]

    def _mlir_declaration(self) -> list[str]:
        """Memref descriptors (MLIR's C interface) and the compiled MLIR function's prototype."""
        ranks = sorted({a.rank for a in self._ranked_arrays()})
        lines = [
            f"typedef struct {{ void *allocated; void *aligned; int64_t offset; "
            f"int64_t sizes[{r}]; int64_t strides[{r}]; }} rp_memref_{r};"
            for r in ranks
        ]
        params = [f"rp_memref_{a.rank} *" for a in self._ranked_arrays()]
        params += ["double" if kind == "float" else "int64_t" for _, kind in self.signature.scalars]
        params += ["int64_t" for _ in self.kernel.derived]
        lines.append(f"extern void _mlir_ciface_{MLIR_ENTRY}({', '.join(params) or 'void'});")
        return [*lines, ""]

    def _mlir_call(self) -> list[str]:
        lines, args = [], []
        for array in self._ranked_arrays():
            name = self.c_names[array.name]
            dims = [self._dim_name(array.name, d) for d in range(array.rank)]
            strides = [" * ".join(dims[d + 1 :]) or "1" for d in range(array.rank)]
            lines.append(
                f"rp_memref_{array.rank} {name}_memref = "
                f"{{ {name}_data, {name}_data, 0, {{ {', '.join(dims)} }}, {{ {', '.join(strides)} }} }};"
            )
            args.append(f"&{name}_memref")
        argument_names = {a.name: self._argument_c_name(a) for a in self._arguments()}
        args += [argument_names[name] for name, _ in self.signature.scalars]
        args += [self.c_names[size.name] for size in self.kernel.derived]
        return [*lines, f"_mlir_ciface_{MLIR_ENTRY}({', '.join(args)});"]

    def _arguments(self) -> tuple[CArgument, ...]:
        result = []
        ranks = {a.name: a.rank for a in self.kernel.arrays if a.is_argument and a.rank > 0}
        for name in self.kernel.c_arguments:
            if name in ranks:
                result.append(CArgument(name, "array", C_TYPES[self.signature.array_type(name)] + " *restrict"))
                result += [CArgument(name, "dim", "int64_t", d) for d in range(ranks[name])]
            elif name in self.kernel.parameters:
                result.append(CArgument(name, "size", "int64_t"))
            else:
                kind = self.signature.scalar_kind(name)
                result.append(CArgument(name, "scalar", "double" if kind == "float" else "int64_t"))
        return tuple(result)

    def _argument_c_name(self, argument: CArgument) -> str:
        if argument.role == "array":
            return self.c_names[argument.name] + "_data"
        if argument.role == "dim":
            return self._dim_name(argument.name, argument.dim)
        if argument.role == "scalar" and any(a.name == argument.name and a.rank == 0 for a in self.kernel.arrays):
            return self.c_names[argument.name] + "_in"
        return self.c_names[argument.name]

    def _dim_name(self, array: str, dim: int) -> str:
        return f"{self.c_names[array]}_d{dim}"

    def _shape_definitions(self) -> list[str]:
        return [
            f"const int64_t {self.c_names[sp.name]} = {self._dim_name(sp.array, sp.dim)};" for sp in self.kernel.shape_parameters
        ]

    def _views(self) -> list[str]:
        return self._shape_definitions() + self._array_views()

    def _array_views(self, buffers: Mapping[str, str] | None = None, region: str | None = None) -> list[str]:
        """`restrict` views of the caller's buffers, so `A[i][j]` indexes them in place (or of the
        buffer `buffers` names for an array: a thread's private copy). In the parallel `region` of
        a loop, a temporary contracted for its threads is each thread's own."""
        lines = []
        for array in self.kernel.arrays:
            if not array.is_argument or array.rank == 0:
                continue
            c_type = C_TYPES[self.signature.array_type(array.name)]
            name = self.c_names[array.name]
            buffer = (buffers or {}).get(array.name, f"{name}_data")
            if array.name in self.contracted:
                lines.append(self._contracted_view(self.contracted[array.name], c_type, region))
            elif array.rank == 1:
                lines.append(f"{c_type} *restrict {name} = {buffer};")
            else:
                extents = "".join(f"[{self._dim_name(array.name, d)}]" for d in range(1, array.rank))
                lines.append(f"{c_type} (*restrict {name}){extents} = ({c_type} (*){extents}) {buffer};")
        return lines

    def _contracted_view(self, contraction: Contraction, c_type: str, region: str | None) -> str:
        """A contracted temporary: a local scalar, or a view of the first cells of the caller's
        buffer by the kept dimensions (a thread's own slice of it in the loop it is private to:
        the buffer holds a slice per thread, as `_team_cap` makes sure)."""
        name = self.c_names[contraction.array]
        if not contraction.kept:
            return f"{c_type} {name};"
        buffer = f"{name}_data"
        if region is not None and region == contraction.private_to:
            buffer += f" + (int64_t) omp_get_thread_num() * {self._cells(contraction)}"
        extents = "".join(f"[{self._dim_name(contraction.array, d)}]" for d in contraction.kept[1:])
        if not extents:
            return f"{c_type} *restrict {name} = {buffer};"
        return f"{c_type} (*restrict {name}){extents} = ({c_type} (*){extents}) ({buffer});"

    def _cells(self, contraction: Contraction) -> str:
        return "(" + " * ".join(self._dim_name(contraction.array, d) for d in contraction.kept) + ")"

    def _team_cap(self, node: For) -> str:
        """` num_threads(...)` for a parallel loop whose threads keep their own slice of a contracted
        temporary in the caller's buffer: no more threads than the buffer has slices."""
        slices = [
            " * ".join(self._dim_name(c.array, d) for d in range(self.kernel.array(c.array).rank) if d not in c.kept)
            for c in self.contracted.values()
            if c.kept and c.private_to == node.loop_id
        ]
        if not slices:
            return ""
        cap = "(int64_t) omp_get_max_threads()"
        for count in slices:
            cap = f"min({cap}, max(1, {count}))"
        return f" num_threads({cap})"

    def _lane_private(self, node: For) -> str:
        """` private(...)` for a vector loop's contracted scalars: each lane its own."""
        scalars = sorted(self.c_names[c.array] for c in self.contracted.values() if node.loop_id in c.vector_loops)
        return f" private({', '.join(scalars)})" if scalars else ""

    def _locals(self) -> list[str]:
        lines = []
        for array in self.kernel.arrays:
            if array.rank == 0:
                c_type = C_TYPE[self.kinds.names[array.name]]
                initial = self.c_names[array.name] + "_in" if array.is_argument else "0"
                lines.append(f"{c_type} {self.c_names[array.name]} = {initial};")
        return lines

    def _private_locals(self, scalars: frozenset[str]) -> list[str]:
        """Each thread's own copy of the scalars legality privatized: every iteration writes them before
        reading them, so they need no initial value, and no value leaves the loop."""
        return [f"{C_TYPE[self.kinds.names[name]]} {self.c_names[name]};" for name in sorted(scalars)]

    def _derived_definitions(self, first_code: int | None) -> tuple[tuple[BoundsCheck, ...], list[str]]:
        """The derived sizes (`h = n // 2`), computed from the other sizes as Python computes them, before any
        check reads them. Where Python's value has no C one (a product past 64 bits, a division by a size that
        is zero) the call is refused with a code after `first_code`; the instance counter (`first_code` None),
        which refuses nothing, counts 0 there."""
        checks: list[BoundsCheck] = []
        lines: list[str] = []
        for size in self.kernel.derived:
            name = self.c_names[size.name]
            left, right = _affine_c(size.left, self.c_names), _affine_c(size.right, self.c_names)
            test, failure = "", ""
            if size.op == "*":
                lines.append(f"int64_t {name};")
                test = f"__builtin_mul_overflow((int64_t) ({left}), (int64_t) ({right}), &{name})"
                failure = "does not fit a 64-bit integer"
            elif not size.right.is_constant:
                test, failure = f"({right}) == 0", "divides by zero"
            if test:
                code = 0 if first_code is None else first_code + len(checks) + 1
                if first_code is not None:
                    checks.append(BoundsCheck(code, "", -1, f"size `{size.name} = {size}` {failure}"))
                lines.append(f"if ({test}) return {code};")
            if size.op != "*":
                function = "rp_floordiv" if size.op == "//" else "rp_mod"
                lines.append(f"const int64_t {name} = {function}({left}, {right});")
        return tuple(checks), lines

    def _assumption_checks(self, first_code: int) -> tuple[tuple[BoundsCheck, ...], list[str]]:
        """Return codes for the sizes the loop nest was built assuming equal, checked before anything else:
        a call NumPy would refuse to broadcast is refused here too, never run on code built for other sizes."""
        checks: list[BoundsCheck] = []
        lines: list[str] = []
        for first, second in self.kernel.assumptions:
            code = first_code + len(checks) + 1
            message = (
                f"the arrays' shapes do not broadcast as the function's NumPy statements need: {first} = {second} does not hold"
            )
            checks.append(BoundsCheck(code, "", -1, message))
            lines.append(f"if (({_affine_c(first, self.c_names)}) != ({_affine_c(second, self.c_names)})) return {code};")
        return tuple(checks), lines

    def _bounds_checks(self, nest: LoopNest, first_code: int = 0) -> tuple[tuple[BoundsCheck, ...], list[str]]:
        """Return codes for every array extent the loop nest could overrun."""
        checks: list[BoundsCheck] = []
        lines: list[str] = []
        for bound in nest.bounds:
            code_low, code_high = first_code + len(checks) + 1, first_code + len(checks) + 2
            checks.append(
                BoundsCheck(
                    code_low, bound.array, bound.dim, f"index {bound.dim} of `{bound.array}` goes down to {bound.low_text}, below 0"
                )
            )
            checks.append(
                BoundsCheck(code_high, bound.array, bound.dim, f"index {bound.dim} of `{bound.array}` goes up to {bound.high_text}")
            )
            lines += [
                f"if ({self._expr(bound.reachable)}) {{",
                f"    if ({self._expr(bound.low)} < 0) return {code_low};",
                f"    if ({self._expr(bound.high)} >= {self._dim_name(bound.array, bound.dim)}) return {code_high};",
                "}",
            ]
        return tuple(checks), lines

    def _index_checks(self, first_code: int) -> tuple[tuple[BoundsCheck, ...], list[str]]:
        """Return codes for subscripts read from index arrays: each index array's smallest and largest
        value is found once, and every range it feeds is checked against the extent it indexes."""
        ranges = index_ranges(self.kernel)
        if not ranges:
            return (), []
        lines: list[str] = []
        for array in self.kernel.index_arrays:
            name = self.c_names[array]
            rank = self.kernel.array(array).rank
            count = " * ".join(self._dim_name(array, d) for d in range(rank))
            lines += [
                f"int64_t rp_lo_{name} = INT64_MAX, rp_hi_{name} = INT64_MIN;",
                f"for (int64_t rp_t = 0; rp_t < {count}; rp_t++) {{",
                f"    int64_t rp_v = (int64_t) {name}_data[rp_t];",
                f"    rp_lo_{name} = rp_v < rp_lo_{name} ? rp_v : rp_lo_{name};",
                f"    rp_hi_{name} = rp_v > rp_hi_{name} ? rp_v : rp_hi_{name};",
                "}",
            ]
        checks: list[BoundsCheck] = []
        for reach in ranges:
            for smallest, end in ((True, reach.low), (False, reach.high)):
                code = first_code + len(checks) + 1
                checks.append(self._index_check(code, reach, end, smallest))
                value = self._reach(end, smallest)
                test = f"{value} < 0" if smallest else f"{value} >= {self._dim_name(reach.target, reach.dim)}"
                guard = f"rp_lo_{self.c_names[end.array]} <= rp_hi_{self.c_names[end.array]} && " if end.array else ""
                lines.append(f"if ({guard}{test}) return {code};")
        return tuple(checks), lines

    def _value_checks(self, first_code: int) -> tuple[tuple[BoundsCheck, ...], list[str]]:
        """Return codes for what NumPy raises on before computing anything: a size below its least
        (`kernel.size_floors`), and an argument holding a NaN or an infinity (`kernel.finite`, one pass over each)."""
        checks: list[BoundsCheck] = []
        lines: list[str] = []
        for size in self.kernel.size_floors:
            code = first_code + len(checks) + 1
            message = f"line {size.line}: `{size.text}` raises ValueError in NumPy: {size.size} < {size.least}"
            checks.append(BoundsCheck(code, "", -1, message))
            lines.append(f"if (({_affine_c(size.size, self.c_names)}) < {size.least}) return {code};")
        for check in self.kernel.finite:
            code = first_code + len(checks) + 1
            message = f"line {check.line}: `{check.text}` raises ValueError in NumPy: `{check.array}` holds NaN or infinity"
            checks.append(BoundsCheck(code, check.array, -1, message))
            name = self.c_names[check.array]
            count = " * ".join(self._dim_name(check.array, d) for d in range(self.kernel.array(check.array).rank))
            lines += [
                f"for (int64_t rp_t = 0; rp_t < {count}; rp_t++)",
                f"    if (!isfinite({name}_data[rp_t])) return {code};",
            ]
        return tuple(checks), lines

    def _reach(self, end: Reach, smallest: bool) -> str:
        offset = _affine_c(end.offset, self.c_names)
        if end.array is None:
            return f"({offset})"
        return f"(rp_{'lo' if smallest else 'hi'}_{self.c_names[end.array]} + ({offset}))"

    def _index_check(self, code: int, reach: IndexRange, end: Reach, smallest: bool) -> BoundsCheck:
        side = "below 0" if smallest else f"past the end of dimension {reach.dim}"
        message = f"line {reach.line}: `{reach.subscript}` would index `{reach.target}` {side}"
        return BoundsCheck(code, reach.target, reach.dim, message, end.array or "", smallest)

    def _node(self, node: Node, depth: int, emit, marks: bool) -> list[str]:
        pad = "    " * depth
        if isinstance(node, Block):
            return [line for child in node.children for line in self._node(child, depth, emit, marks)]
        if isinstance(node, WRAPPERS) and not marks:  # the instance counter runs the plain loops
            return self._node(plain(node), depth, emit, marks)
        if isinstance(node, BlasCall):
            return self._blas_call(node, depth, emit)
        if isinstance(node, Unrolled):
            return self._unrolled(node.loop, depth, emit)
        if isinstance(node, Promoted):
            return self._promoted(node, depth, emit)
        if isinstance(node, LaneSplit):
            return self._lane_summed(node, depth, emit)
        if isinstance(node, Region):
            return self._region(node, depth, emit)
        if isinstance(node, If):
            lines = [f"{pad}if ({self._expr(node.cond)}) {{", *self._node(node.then, depth + 1, emit, marks)]
            if node.otherwise is not None:
                lines += [f"{pad}}} else {{", *self._node(node.otherwise, depth + 1, emit, marks)]
            return lines + [f"{pad}}}"]
        if isinstance(node, Call):
            return [pad + line for line in emit(node, [self._expr(a) for a in node.args])]
        if isinstance(node, Let):
            body = self._node(node.body, depth + 1, emit, marks)
            return [f"{pad}{{", f"{pad}    const int64_t {node.iterator} = {self._expr(node.value)};", *body, f"{pad}}}"]
        return self._for(node, depth, emit, marks)

    def _blas_call(self, node: BlasCall, depth: int, emit) -> list[str]:
        """One `cblas_?gemm` or `cblas_?gemv`, guarded: where an extent is empty or does not fit BLAS's
        `int`, the two nests run as generated."""
        call, initializer, update = node.call, node.initializer, node.update
        pad = "    " * depth
        c_type = C_TYPES[self.signature.array_type(call.target.ref.array)]
        first = calls(initializer)[0]
        statement = self.kernel.statement(call.initializer)
        bindings = [
            f"const int64_t {self.c_names[it]} = {self._expr(arg)};"
            for it, arg in zip(statement.iterators[: len(call.prefix)], first.args, strict=False)
        ]
        extents = [_affine_c(e, self.c_names) for e in call.extents]
        names = [f"rp_blas_{n}" for n in ("m", "n", "k")[: len(extents)]]
        leading = [self._leading(call.target), self._leading(call.a)] + ([self._leading(call.b)] if call.routine == "gemm" else [])
        fits = [f"{name} >= 1 && {name} <= INT_MAX" for name in names] + [f"{ld} <= INT_MAX" for ld in leading]
        alpha = " * ".join(f"(({c_type}) {self._value(factor)})" for factor in call.alpha) or "1.0"
        prefix = BLAS_TYPES[c_type]
        mirror: list[str] = []
        if call.routine == "syrk":
            arguments = [
                "CblasRowMajor", "CblasUpper", "CblasTrans" if call.transpose_a else "CblasNoTrans", names[1], names[2],
                alpha, self._start(call.a), leading[1], "0.0", self._start(call.target), leading[0],
            ]  # fmt: skip
            mirror = self._mirrored_lower(call, names[1], leading[0], c_type, depth + 2)
        elif call.routine == "gemm":
            transposes = ["CblasTrans" if t else "CblasNoTrans" for t in (call.transpose_a, call.transpose_b)]
            arguments = [
                "CblasRowMajor", *transposes, *names, alpha,
                self._start(call.a), leading[1], self._start(call.b), leading[2], "0.0", self._start(call.target), leading[0],
            ]  # fmt: skip
        else:
            transpose = "CblasTrans" if call.transpose_a else "CblasNoTrans"
            arguments = [
                "CblasRowMajor", transpose, *names, alpha, self._start(call.a), leading[1],
                self._start(call.b), self._increment(call.b), "0.0", self._start(call.target), self._increment(call.target),
            ]  # fmt: skip
        inner = "    " * (depth + 2)
        return [
            f"{pad}{{",
            *(f"{pad}    {line}" for line in bindings),
            *(f"{pad}    const int64_t {name} = {extent};" for name, extent in zip(names, extents, strict=True)),
            f"{pad}    if ({' && '.join(fits)}) {{",
            f"{inner}openblas_set_num_threads(omp_get_max_threads());",
            f"{inner}cblas_{prefix}{call.routine}({', '.join(arguments)});",
            *mirror,
            f"{pad}    }} else {{",
            *self._node(initializer, depth + 2, emit, True),
            *self._node(update, depth + 2, emit, True),
            f"{pad}    }}",
            f"{pad}}}",
        ]

    def _mirrored_lower(self, call: ProductCall, order: str, leading: str, c_type: str, depth: int) -> list[str]:
        """The lower triangle of a `syrk` call's target copied from its upper one, which is all the call writes."""
        pad = "    " * depth
        return [
            f"{pad}{c_type} *rp_blas_c = {self._start(call.target)};",
            f"{pad}for (int64_t rp_i = 1; rp_i < {order}; rp_i++)",
            f"{pad}    for (int64_t rp_j = 0; rp_j < rp_i; rp_j++)",
            f"{pad}        rp_blas_c[rp_i * {leading} + rp_j] = rp_blas_c[rp_j * {leading} + rp_i];",
        ]

    def _start(self, operand: Operand) -> str:
        """The address of the view's first element: the subscript with the product's loop variables at 0."""
        offsets = "".join(f"[{_affine_c(operand.offset(d), self.c_names)}]" for d in range(len(operand.ref.indices)))
        return f"&{self.c_names[operand.ref.array]}{offsets}"

    def _leading(self, operand: Operand) -> str:
        """A matrix's leading dimension (its rows' length); a vector's stride."""
        if sum(v is not None for v in operand.running) == 2:
            return self._dim_name(operand.ref.array, len(operand.ref.indices) - 1)
        return self._increment(operand)

    def _increment(self, operand: Operand) -> str:
        (dim,) = [d for d, v in enumerate(operand.running) if v is not None]
        rank = len(operand.ref.indices)
        return " * ".join(self._dim_name(operand.ref.array, d) for d in range(dim + 1, rank)) or "1"

    def _for(self, node: For, depth: int, emit, marks: bool) -> list[str]:
        pad = "    " * depth
        iterator, init, step = node.iterator, self._expr(node.init), node.step
        condition = _unparenthesised(self._expr(node.cond))
        header = f"for (int64_t {iterator} = {init}; {condition}; {iterator} += {step})"
        simd = f"simd simdlen({node.vector}){self._lane_private(node)}" if marks and node.vector else ""
        loop = [f"{pad}{header} {{", *self._node(node.body, depth + 1, emit, marks), f"{pad}}}"]
        if simd:
            return [f"{pad}#pragma omp {simd}", *loop]
        return loop

    def _region(self, region: Region, depth: int, emit) -> list[str]:
        """A parallel loop's region in the form `passes.regions` chose."""
        pad = "    " * depth
        node = region.loop
        condition = _unparenthesised(self._expr(node.cond))
        header = f"for (int64_t {node.iterator} = {self._expr(node.init)}; {condition}; {node.iterator} += {node.step})"
        simd = f"simd simdlen({node.vector}){self._lane_private(node)}" if node.vector else ""
        if region.form == "copies":
            return self._privatized_region(node, depth, emit, header, simd, list(region.copies))
        if region.form == "outlined":
            return self._region_call(node, depth, emit, header, simd)
        # The outlined parallel body would not know the arrays are `restrict` (and gcc would stop
        # vectorizing it): the region re-declares the views from the raw pointers. Private scalars
        # are declared in the region too, shadowing the function's: one copy per thread.
        loop = [f"{pad}{header} {{", *self._node(node.body, depth + 1, emit, True), f"{pad}}}"]
        views = [f"{pad}    {line}" for line in self._array_views(region=node.loop_id) + self._private_locals(node.private)]
        return [
            f"{pad}#pragma omp parallel{self._team_cap(node)}",
            f"{pad}{{",
            *views,
            f"{pad}    {_worksharing(node, simd)}",
            *["    " + x for x in loop],
            f"{pad}}}",
        ]

    def _lane_summed(self, split: LaneSplit, depth: int, emit) -> list[str]:
        """A vector loop that splits sums (`passes.lanes`): each sum goes into a partial-sum variable that OpenMP's
        `reduction` gives every lane a copy of, and is added into its element once, after the loop."""
        pad = "    " * depth
        node = split.loop
        condition = _unparenthesised(self._expr(node.cond))
        header = f"for (int64_t {node.iterator} = {self._expr(node.init)}; {condition}; {node.iterator} += {node.step})"
        declarations, clauses, commits = [], [], []
        ran = _unparenthesised(self._expr(substitute(node.cond, node.iterator, node.init)))
        starts = []
        for lane_sum in split.sums:
            statement, lane = self.kernel.statement(lane_sum.statement), lane_sum.variable
            element_type = self._element_type(statement)
            first = [self._expr(arg) for arg in lane_sum.first.args]
            bindings = [f"const int64_t {self.c_names[it]} = {arg};" for it, arg in zip(statement.iterators, first, strict=True)]
            target = self._value(statement.target)
            if statement.extremum:
                # Every lane starts from the element's value, so the lanes' extremum is the element's new value.
                declarations.append(f"{pad}    {element_type} {lane};")
                clauses.append(f" reduction({self._lane_combiner(statement)}:{lane})")
                starts += _bound(bindings, f"{lane} = {target};")
                commits += _bound(bindings, f"{target} = {lane};")
                continue
            operator = statement.op[0]
            declarations.append(f"{pad}    {element_type} {lane} = {'0' if operator == '+' else '1'};")
            clauses.append(f" reduction({operator}:{lane})")
            commits += _bound(bindings, f"{target} = {target} {operator} {lane};")
        body = self._node(node.body, depth + 3, emit, True)
        simd = f"simd simdlen({node.vector}){self._lane_private(node)}{''.join(clauses)}"
        loop = [f"{pad}        #pragma omp {simd}", f"{pad}        {header} {{", *body, f"{pad}        }}"]
        # Under `if (ran)`: gcc 12 leaves a simd reduction scalar when its loop may run no iteration
        # (trisolv's row sums `j < i`: 64 µs scalar, 13 µs in vectors at n = 400).
        ran_once = [f"{pad}    if ({ran}) {{", *(f"{pad}        {line}" for line in starts), *loop]
        ran_once += [*(f"{pad}        {line}" for line in commits), f"{pad}    }}"]
        return [f"{pad}{{", *declarations, *ran_once, f"{pad}}}"]

    def _lane_combiner(self, statement: Statement) -> str:
        """How the lanes' extrema combine: OpenMP's `max` for integers; for floats, the prelude's NaN-propagating
        reduction, since OpenMP leaves NaN in `max` unspecified (only NumPy's extrema are split, see
        `Statement.extremum`)."""
        numpy_float = statement.value.module == "np" and is_float(self.kinds.kind_of(statement.target))
        return f"rp_np{statement.extremum}" if numpy_float else statement.extremum

    def _lane_update(self, statement: Statement, lane: str) -> str:
        """One lane's step of a split sum (`lane += e`) or running extremum (`lane = max(lane, e)`, the call's
        argument order kept)."""
        kind = self.kinds.kind_of(statement.target)
        if not statement.extremum:
            return f"{lane} {statement.op} {self._as(statement.value, kind)};"
        first, second = statement.value.args
        other = self._as(second if first == statement.target else first, kind)
        helper = self._extremum_helper(statement.extremum, kind, statement.value.module)
        return f"{lane} = {helper}({lane}, {other});" if first == statement.target else f"{lane} = {helper}({other}, {lane});"

    def _element_type(self, statement: Statement) -> str:
        """The C type of the element (or scalar) a statement writes."""
        target = statement.target
        if isinstance(target, ArrayRef):
            return C_TYPES[self.signature.array_type(target.array)]
        return C_TYPE[self.kinds.names[target.name]]

    def _privatized_region(self, node: For, depth: int, emit, header: str, simd: str, copied: list[str]) -> list[str]:
        """A parallel loop whose sums into arrays accumulate into per-thread copies: zeroed copies for the whole team,
        allocated before the region (a failed allocation is a refused call, before the loop runs), each
        thread's view of the array on its own copy, and the copies added into the array after the loop."""
        pad = "    " * depth
        lines = [f"{pad}{{", f"{pad}    const int64_t rp_team = omp_get_max_threads();"]
        buffers, merges, frees = {}, [], []
        for array in copied:
            name, c_type = self.c_names[array], C_TYPES[self.signature.array_type(array)]
            count = " * ".join(self._dim_name(array, d) for d in range(self.kernel.array(array).rank))
            code = MEMORY_CODE + len(self.memory_checks)
            self.memory_checks.append(BoundsCheck(code, array, -1, f"no memory for the threads' copies of `{array}`"))
            lines += [
                f"{pad}    const int64_t rp_count_{name} = {count};",
                f"{pad}    {c_type} *rp_copies_{name} = calloc((size_t) (rp_team * rp_count_{name}), sizeof({c_type}));",
                f"{pad}    if (rp_copies_{name} == NULL) return {code};",
            ]
            # Parenthesized: a view of rank 2 or more casts it, and a cast binds before `+`.
            buffers[array] = f"(rp_copies_{name} + omp_get_thread_num() * rp_count_{name})"
            merges += [
                f"{pad}            for (int64_t rp_t = 0; rp_t < rp_count_{name}; rp_t++)",
                f"{pad}                {name}_data[rp_t] += rp_copies_{name}[omp_get_thread_num() * rp_count_{name} + rp_t];",
            ]
            frees.append(f"{pad}    free(rp_copies_{name});")
        body = self._node(node.body, depth + 2, emit, True)
        views = [f"{pad}        {line}" for line in self._array_views(buffers, node.loop_id) + self._private_locals(node.private)]
        return [
            *lines,
            f"{pad}    #pragma omp parallel{self._team_cap(node)}",
            f"{pad}    {{",
            *views,
            f"{pad}        {_worksharing(node, simd)}",
            f"{pad}        {header} {{",
            *body,
            f"{pad}        }}",
            f"{pad}        #pragma omp critical",
            f"{pad}        {{",
            *merges,
            f"{pad}        }}",
            f"{pad}    }}",
            *frees,
            f"{pad}}}",
        ]

    def _region_call(self, node: For, depth: int, emit, header: str, simd: str) -> list[str]:
        """A parallel loop as a function of its own, called by every thread of the region.

        Inside the function OpenMP outlines for an inline region, the arrays come from a shared
        struct and gcc no longer knows they do not alias: a row sum `tmp[i] += A[i][j] * x[j]`
        then goes through memory on every `j` (gesummv ran at half the speed on two threads than
        on one). As `restrict` parameters of a function of ours they are known apart again; the
        loop's `omp for` binds to the region of the caller."""
        name = f"rp_region_{len(self.regions)}"
        free = sorted(_free_iterators(node) - set(self.kernel.parameters))
        scalars = [a.name for a in self.kernel.arrays if a.rank == 0 and a.name not in node.private]
        parameters = [f"{a.c_type} {self._argument_c_name(a)}" for a in self._arguments()]
        parameters += [f"int64_t {iterator}" for iterator in free]
        derived = [self.c_names[size.name] for size in self.kernel.derived]  # computed once, at the entry
        parameters += [f"int64_t {size}" for size in derived]
        parameters += [f"{C_TYPE[self.kinds.names[s]]} {self.c_names[s]}" for s in scalars]
        arguments = [self._argument_c_name(a) for a in self._arguments()] + free + derived + [self.c_names[s] for s in scalars]
        body = self._node(node.body, 2, emit, True)
        self.regions.append(
            [
                f"static void {name}({', '.join(parameters)})",
                "{",
                *("    " + line for line in self._shape_definitions()),
                *("    " + line for line in self._array_views(region=node.loop_id) + self._private_locals(node.private)),
                f"    {_worksharing(node, simd)}",
                f"    {header} {{",
                *body,
                "    }",
                "}",
                "",
            ]
        )
        pad = "    " * depth
        return [f"{pad}#pragma omp parallel{self._team_cap(node)}", f"{pad}{name}({', '.join(arguments)});"]

    def _unrolled(self, node: For, depth: int, emit) -> list[str]:
        """Exact unrolling: `unroll` copies while the last copy is in range, then the remainder one by one."""
        pad = "    " * depth
        iterator, factor, step = node.iterator, node.unroll, node.step
        last = substitute(node.cond, iterator, Op("+", (Var(iterator), IntConst((factor - 1) * step))))
        body = self._node(node.body, depth + 3, emit, True)
        copies = []
        for k in range(factor):
            copies += [
                f"{pad}        {{",
                f"{pad}            const int64_t rp_next = {iterator} + {k * step};",
                f"{pad}            {{",
                f"{pad}                const int64_t {iterator} = rp_next;",
                *["    " + line for line in body],
                f"{pad}            }}",
                f"{pad}        }}",
            ]
        lines = [
            f"{pad}{{",
            f"{pad}    int64_t {iterator} = {self._expr(node.init)};",
            f"{pad}    for (; {_unparenthesised(self._expr(last))}; {iterator} += {factor * step}) {{",
            *copies,
            f"{pad}    }}",
        ]
        if node.remainder:
            remainder = self._node(node.body, depth + 2, emit, True)
            condition = _unparenthesised(self._expr(node.cond))
            lines += [f"{pad}    for (; {condition}; {iterator} += {step}) {{", *remainder, f"{pad}    }}"]
        return lines + [f"{pad}}}"]

    def _promoted(self, plan: Promoted, depth: int, emit) -> list[str]:
        """The promoted loop: where the box inside it is full, its target elements are loaded into
        `rp_acc` before the loop, updated there and stored after; elsewhere the loop as generated."""
        pad = "    " * depth
        loop, points = plan.loop, plan.points
        statement = self.kernel.statement(plan.call.statement)
        c_type = C_TYPES[self.signature.array_type(_written(statement))]
        cell = "rp_acc" + "".join(f"[rp_p{k}]" for k in range(len(points)))
        target = self._value(statement.target)
        full = [substitute(loop.cond, loop.iterator, loop.init)] + [
            substitute(p.cond, p.iterator, Op("+", (Var(f"rp_lo{k}"), IntConst(p.extent - 1)))) for k, p in enumerate(points)
        ]
        fixed = [
            f"const int64_t {self.c_names[name]} = {self._expr(arg)};"
            for name, arg in zip(statement.iterators, plan.call.args, strict=True)
            if not mentions(arg, {loop.iterator})
        ]
        instance = emit(plan.call, [self._expr(a) for a in plan.call.args])
        in_registers = [re.sub(r"(?<!\w)" + re.escape(target), cell, line) for line in instance]

        def box(body: list[str]) -> list[str]:
            lines = [f"{'    ' * k}for (int64_t rp_p{k} = 0; rp_p{k} < {p.extent}; rp_p{k}++) {{" for k, p in enumerate(points)]
            inner = "    " * len(points)
            lines += [f"{inner}const int64_t {p.iterator} = rp_lo{k} + rp_p{k};" for k, p in enumerate(points)]
            lines += [inner + line for line in body]
            return lines + [f"{'    ' * k}}}" for k in reversed(range(len(points)))]

        condition = _unparenthesised(self._expr(loop.cond))
        header = f"for (int64_t {loop.iterator} = {self._expr(loop.init)}; {condition}; {loop.iterator} += {loop.step}) {{"
        promoted = [
            f"{c_type} rp_acc{''.join(f'[{p.extent}]' for p in points)};",
            *box(["{", *("    " + line for line in fixed), f"    {cell} = {target};", "}"]),
            header,
            *("    " + line for line in box(in_registers)),
            "}",
            *box(["{", *("    " + line for line in fixed), f"    {target} = {cell};", "}"]),
        ]
        return [
            f"{pad}{{",
            *(f"{pad}    const int64_t rp_lo{k} = {self._expr(p.init)};" for k, p in enumerate(points)),
            f"{pad}    if ({' && '.join(self._expr(c) for c in full)}) {{",
            *(f"{pad}        {line}" for line in promoted),
            f"{pad}    }} else {{",
            *self._node(plan.fallback, depth + 2, emit, True),
            f"{pad}    }}",
            f"{pad}}}",
        ]

    def _statement(self, call: Call, args: list[str]) -> list[str]:
        statement = self.kernel.statement(call.statement)
        bindings = [f"const int64_t {self.c_names[it]} = {arg};" for it, arg in zip(statement.iterators, args, strict=True)]
        target = self._value(statement.target)
        stored = stored_value(statement.op, statement.target, statement.value, self.kinds.kind_of(statement.target))
        body = [f"{target} = {self._value(stored)};"]
        if call.lane:
            body = [self._lane_update(statement, call.lane)]
        if call.atomic:
            # A sum its parallel loop's threads update concurrently: one atomic read-modify-write each.
            value = self._as(statement.value, self.kinds.kind_of(statement.target))
            body = ["#pragma omp atomic update", f"{target} += {value};"]
        # Loops with bounds read from arrays run inside the instance, as the source wrote them.
        for loop in reversed(statement.inner):
            k = self.c_names[loop.name]
            start, stop = self._index(loop.start), self._index(loop.stop)
            header = f"for (int64_t {k} = {start}, rp_end_{k} = {stop}; {k} < rp_end_{k}; {k}++)"
            body = [f"{header} {{", *("    " + line for line in body), "}"]
        if not bindings and len(body) == 1:
            return body
        return ["{", *("    " + b for b in bindings), *("    " + line for line in body), "}"]

    def _index(self, index: AffineExpr | IndexRead) -> str:
        """A subscript or dynamic bound as C: affine, or an index array's element read as an int64."""
        if isinstance(index, AffineExpr):
            return _affine_c(index, self.c_names)
        read = f"(int64_t) {self._value(index.ref)}"
        return f"{read} + {index.offset}" if index.offset > 0 else f"{read} - {-index.offset}" if index.offset else read

    def _expr(self, expr: IntExpr) -> str:
        """A loop-nest expression as C; parameters by their C names, iterators as isl named them."""
        if isinstance(expr, IntConst):
            return str(expr.value)
        if isinstance(expr, Var):
            # isl names its loop iterators c0, c1, ... and avoids parameter names; user names like
            # those are renamed in C, so iterators print as they are.
            return self.c_names[expr.name] if expr.name in self.kernel.parameters else expr.name
        args = [self._expr(a) for a in expr.args]
        infix = {
            "+": "+",
            "-": "-",
            "*": "*",
            "div": "/",
            "mod": "%",
            "==": "==",
            "<=": "<=",
            "<": "<",
            ">=": ">=",
            ">": ">",
            "and": "&&",
            "or": "||",
        }
        if expr.op in infix:
            return f"({args[0]} {infix[expr.op]} {args[1]})"
        if expr.op == "neg":
            return f"(-{args[0]})"
        if expr.op in ("min", "max"):
            return f"{expr.op}({args[0]}, {args[1]})"
        if expr.op == "fdiv":
            return f"floord({args[0]}, {args[1]})"
        if expr.op == "select":
            return f"({args[0]} ? {args[1]} : {args[2]})"
        raise NotImplementedError(expr.op)

    def _value(self, expr: Expr) -> str:
        """A body expression as C, computing in the precision NumPy would (see `numeric`)."""
        if isinstance(expr, Number):
            if isinstance(expr.value, float) and math.isinf(expr.value):
                return "INFINITY" if expr.value > 0 else "(-INFINITY)"
            return repr(expr.value) if isinstance(expr.value, float) else f"{expr.value}LL"
        if isinstance(expr, Name):
            return self.c_names[expr.name]
        if isinstance(expr, ArrayRef):
            kept = self.contracted[expr.array].kept if expr.array in self.contracted else range(len(expr.indices))
            indices = "".join(f"[{self._index(expr.indices[d])}]" for d in kept)
            return f"{self.c_names[expr.array]}{indices}"
        if isinstance(expr, Unary):
            operand = self._value(expr.operand)
            return f"(!{operand})" if expr.op == "not" else f"({expr.op}{operand})"
        if isinstance(expr, Binary):
            return self._binary(expr)
        if isinstance(expr, ValueCall):
            return self._call(expr)
        if isinstance(expr, Cast):
            return self._as(expr.operand, self.kinds.kind_of(expr))
        if isinstance(expr, Choice):
            kind = self.kinds.kind_of(expr)
            then, otherwise = self._as(expr.then, kind), self._as(expr.otherwise, kind)
            if self._traps(expr.then) or self._traps(expr.otherwise):
                return f"({self._value(expr.test)} ? {then} : {otherwise})"
            # Both sides computed, then one picked: gcc 12 -O3 -mavx2 vectorizes a select whose side is a load
            # only that side needs (a masked load) wrongly in loops unrolled by 3 (`unroll(S1.i, 3)` of
            # `np.where(b > t, r, 0.0)` zeroed elements), and a side that cannot trap may be computed anyway.
            select = SELECT.get(C_TYPE[kind])
            if select is None:
                return f"({self._value(expr.test)} ? {then} : {otherwise})"
            return f"{select}({self._value(expr.test)}, {then}, {otherwise})"
        raise TypeError(expr)

    def _traps(self, expr: Expr) -> bool:
        """Whether computing `expr` where its Choice does not pick it could fault: integer division or remainder
        (by zero), a float converted to an integer (out of range), a gather through an index array."""
        if isinstance(expr, IndexRead):
            return True
        if isinstance(expr, ArrayRef):
            return any(not isinstance(index, AffineExpr) for index in expr.indices)
        if isinstance(expr, Binary):
            integer = not is_float(self.kinds.kind_of(expr))
            return (integer and expr.op in ("/", "//", "%")) or self._traps(expr.left) or self._traps(expr.right)
        if isinstance(expr, Cast):
            integer = not is_float(self.kinds.kind_of(expr))
            return (integer and is_float(self.kinds.kind_of(expr.operand))) or self._traps(expr.operand)
        if isinstance(expr, Unary):
            return self._traps(expr.operand)
        if isinstance(expr, Choice):
            return self._traps(expr.test) or self._traps(expr.then) or self._traps(expr.otherwise)
        if isinstance(expr, ValueCall):
            return any(self._traps(argument) for argument in expr.args)
        return False

    def _as(self, expr: Expr, kind: str) -> str:
        """`expr` converted to `kind`'s C type where its own type differs."""
        text = self._value(expr)
        own = self.kinds.kind_of(expr)
        return text if C_TYPE[own] == C_TYPE[kind] else f"(({C_TYPE[kind]}) {text})"

    def _binary(self, expr: Binary) -> str:
        op = expr.op
        if op in ("and", "or"):
            return f"({self._value(expr.left)} {'&&' if op == 'and' else '||'} {self._value(expr.right)})"
        left_kind, right_kind = self.kinds.kind_of(expr.left), self.kinds.kind_of(expr.right)
        if op in COMPARISONS:
            kind = promote(left_kind, right_kind)
            return f"({self._as(expr.left, kind)} {op} {self._as(expr.right, kind)})"
        kind = self.kinds.kind_of(expr)
        left, right = self._as(expr.left, kind), self._as(expr.right, kind)
        c_type = C_TYPE[kind]
        if op in ("+", "-", "*", "/"):
            result = f"({left} {op} {right})"
        elif op == "//":
            # NumPy's (and Python's) float floor division is fmod's quotient, not floor(a / b): 1.0 // 0.1 is 9.0
            floor_divide = "rp_ffloordivf" if c_type == "float" else "rp_ffloordiv"
            result = f"rp_floordiv({left}, {right})" if not is_float(kind) else f"{floor_divide}({left}, {right})"
        elif op == "%":
            result = f"rp_mod({left}, {right})" if not is_float(kind) else f"rp_fmod({left}, {right})"
        elif is_float(kind) and _small_power(expr.right):
            # `x ** 2` as NumPy computes it (a square); `x ** 3` as two products, within an ulp of
            # `pow` and many times faster (gelu's cube ran at 52x in Pythran, which does the same).
            return "(" + " * ".join([left] * _small_power(expr.right)) + ")"
        else:  # "**"
            result = f"rp_ipow({left}, {right})" if not is_float(kind) else f"pow({left}, {right})"
        # C promotes narrow integers to int and runs pow/fmod in double: round back as NumPy would.
        narrow = c_type == "int32_t" or (c_type == "float" and op not in ("+", "-", "*", "/"))
        return f"(({c_type}) {result})" if narrow else result

    @staticmethod
    def _extremum_helper(function: str, kind: str, module: str) -> str:
        """The prelude's `min`/`max` for `kind` and for whose semantics (NumPy's propagates NaN, Python's does
        not): float32 compares in float, so a vector loop needs no conversions."""
        if not is_float(kind):
            return function
        name = f"rp_np{function}" if module == "np" else f"rp_f{function}"
        return f"{name}f" if C_TYPE[kind] == "float" else name

    def _call(self, expr: ValueCall) -> str:
        kind = self.kinds.kind_of(expr)
        if expr.function in ("min", "max"):
            helper = self._extremum_helper(expr.function, kind, expr.module)
            result = self._as(expr.args[0], kind)
            for arg in expr.args[1:]:
                result = f"{helper}({result}, {self._as(arg, kind)})"
            return result
        if expr.function == "abs":
            absolute = "llabs" if not is_float(kind) else "fabsf" if C_TYPE[kind] == "float" else "fabs"
            return f"{absolute}({self._value(expr.args[0])})"
        if expr.function == "float":
            return f"((double) {self._value(expr.args[0])})"
        if expr.function in ROUNDINGS and not is_float(kind):  # NumPy's floor of an integer is the integer
            return self._as(expr.args[0], kind)
        if expr.function == "reciprocal":
            return f"(({C_TYPE[kind]}) 1 / {self._as(expr.args[0], kind)})"
        if C_TYPE[kind] == "float":
            # NumPy runs a float32 function in float32: `expf`, whose libmvec variant has twice the lanes
            # (but `exp`, see UNDERFLOWING_EXP).
            args = ", ".join(self._as(a, "float32") for a in expr.args)
            return f"rp_expf({args})" if expr.function == "exp" else f"{expr.function}f({args})"
        args = ", ".join(self._as(a, "float") for a in expr.args)
        return f"rp_exp({args})" if expr.function == "exp" else f"{expr.function}({args})"


def _bound(bindings: list[str], line: str) -> list[str]:
    """`line` in a block of its own, after the iterator bindings it reads."""
    return ["{", *(f"    {binding}" for binding in bindings), f"    {line}", "}"]


def _small_power(exponent: Expr) -> int:
    """2 or 3 for a literal exponent of that value, else 0."""
    if isinstance(exponent, Number) and not isinstance(exponent.value, bool) and exponent.value in (2, 3):
        return int(exponent.value)
    return 0


def _written(statement: Statement) -> str:
    """The array or scalar a statement assigns."""
    target = statement.target
    return target.array if isinstance(target, ArrayRef) else target.name


def _free_iterators(node: Node) -> set[str]:
    """The variables `node` reads but does not bind: iterators of enclosing loops (and parameters)."""

    def names(expr: IntExpr) -> set[str]:
        if isinstance(expr, Var):
            return {expr.name}
        if isinstance(expr, Op):
            return {name for arg in expr.args for name in names(arg)}
        return set()

    if isinstance(node, Call):
        return {name for arg in node.args for name in names(arg)}
    if isinstance(node, WRAPPERS):
        return _free_iterators(plain(node))
    if isinstance(node, Block):
        return {name for child in node.children for name in _free_iterators(child)}
    if isinstance(node, If):
        inside = _free_iterators(node.then) | (_free_iterators(node.otherwise) if node.otherwise is not None else set())
        return names(node.cond) | inside
    if isinstance(node, Let):
        return names(node.value) | (_free_iterators(node.body) - {node.iterator})
    return names(node.init) | ((names(node.cond) | _free_iterators(node.body)) - {node.iterator})


def _worksharing(loop: For, simd: str) -> str:
    """The `omp for` of a parallel loop: round-robin where its iterations' work varies, halves elsewhere."""
    chunks = "schedule(static, 1)" if _triangular(loop) else "schedule(static)"
    return f"#pragma omp for {simd} {chunks}".replace("  ", " ")


def _triangular(loop: For) -> bool:
    """Whether the work of `loop`'s iterations varies with the iterator (an inner loop's trip count
    depends on it, not just its start, as a tile's point loop does): then iterations are dealt out
    round-robin, not in halves, so each core gets a similar share."""

    def varies(node: Node) -> bool:
        if isinstance(node, WRAPPERS):
            return varies(plain(node))
        if isinstance(node, For):
            bound = {loop.iterator}
            moves = mentions(node.init, bound) or mentions(node.cond, bound)
            return (moves and constant_extent(node) is None) or varies(node.body)
        if isinstance(node, Block):
            return any(varies(child) for child in node.children)
        if isinstance(node, If):
            return (
                mentions(node.cond, {loop.iterator}) or varies(node.then) or (node.otherwise is not None and varies(node.otherwise))
            )
        if isinstance(node, Let):
            return varies(node.body)
        return False

    return varies(loop.body)


def _unparenthesised(text: str) -> str:
    """`(a < b)` as `a < b`: OpenMP wants a loop test of the plain form `var < bound`."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for k, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and k < len(text) - 1:
            return text
    return text[1:-1]


def _affine_c(expr, c_names: dict[str, str]) -> str:
    return re.sub(r"[A-Za-z_]\w*", lambda m: c_names.get(m.group(0), m.group(0)), str(expr))


def _c_names(kernel: Kernel) -> dict[str, str]:
    """C identifiers for Python names; a name C or the generator already uses gets a prefix.

    That includes the size ingest names `A_d0` for a `len(A)` in a bound: `A_d0` is also the C argument
    that carries A's first dimension, and the size is defined from it."""
    python_names = set(kernel.arguments) | set(kernel.parameters) | {a.name for a in kernel.arrays}
    python_names |= {loop.name for s in kernel.statements for loop in s.loops + s.inner}
    taken = re.compile(r"^(c\d+(_\d+)?|rp_\w*|repoos_\w*|.*_d\d+|.*_data|.*_in)$")
    result = {}
    for name in python_names:
        clash = name in C_RESERVED or taken.match(name) is not None
        result[name] = f"v_{name}" if clash else name
    return result
