"""Which statement pairs one BLAS call computes: the model side of `blas(S1)`.

A product `T = A @ B` is two statements: an initializer `T[i, j] = 0` and an update
`T[i, j] += A[i, k] * B[k, j]` (`ingest.arrays`). `blas(S1)` names the update; the call
replaces both nests. This module decides, from the model alone, whether a single
`cblas_?gemm` (two matrix operands) or `cblas_?gemv` (a matrix and a vector) computes
exactly what the two nests compute, and how: which operand is transposed, where each
view starts, the extents and the scalar factors that become `alpha`. A matrix times its own
transpose is a `cblas_?syrk`, as in NumPy. Element types
are known only with a signature; code generation checks them (`codegen.c`).
"""

from __future__ import annotations

from dataclasses import dataclass

from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import ArrayRef, Binary, Expr, Number, array_refs, names
from repoos_agent.model.kernel import Kernel, Loop, Statement


class NotAProduct(Exception):
    """Why a statement is not a product one BLAS call computes."""


@dataclass(frozen=True)
class Operand:
    """One array the call reads or writes: the element reference and the loop variable of each index
    that runs (None where the index is fixed over the product's loops)."""

    ref: ArrayRef
    running: tuple[str | None, ...]

    def offset(self, index: int) -> AffineExpr:
        """Where the view starts in dimension `index`: the subscript with its loop variable at 0."""
        expr = self.ref.indices[index]
        variable = self.running[index]
        return expr if variable is None else expr - AffineExpr.of_variable(variable)


@dataclass(frozen=True)
class ProductCall:
    """`update` (with `initializer` before it) as one call: `gemm` computes target = alpha * op(a) @ op(b)
    over extents (m, n, k); `syrk` is a `gemm` whose operands are one view, once transposed (`X.T @ X`,
    `X @ X.T`): it computes the upper triangle of target = alpha * op(a) @ op(a).T, half the products,
    and the lower triangle is mirrored from it, as NumPy's own `@` does; `gemv` computes
    target = alpha * op(a) @ b over (rows, columns) of `a` as stored, `transpose_a` meaning the call
    runs along `a`'s columns."""

    routine: str  # "gemm", "syrk" or "gemv"
    initializer: str
    update: str
    target: Operand
    a: Operand
    b: Operand
    transpose_a: bool
    transpose_b: bool
    extents: tuple[AffineExpr, ...]  # gemm: m, n, k; gemv: rows and columns of `a` as stored
    alpha: tuple[Expr, ...]  # the scalar factors of the update's value, multiplied
    prefix: tuple[str, ...]  # iterators of the loops around both nests (a time loop), fixed during the call

    @property
    def arrays(self) -> tuple[str, ...]:
        return (self.target.ref.array, self.a.ref.array, self.b.ref.array)


def product_call(kernel: Kernel, update_name: str) -> ProductCall:
    """How one BLAS call computes `update_name` and its initializer; `NotAProduct` says why not."""
    update = kernel.statement(update_name)
    place = kernel.statements.index(update)
    initializer = kernel.statements[place - 1] if place > 0 else None
    if update.op != "+=" or not isinstance(update.target, ArrayRef):
        raise NotAProduct(f"{update.name} is not an update `T[...] += A[...] * B[...]` of an array")
    if initializer is None or not _initializes(initializer, update.target.array):
        raise NotAProduct(f"{update.name} has no initializer: the statement before it must set `{update.target.array}[...] = 0`")
    if update.guards or initializer.guards:
        raise NotAProduct(f"{update.name} or {initializer.name} runs under an `if`; a BLAS call covers a whole box")
    operands, alpha = _factors(update)
    shared = shared_depth(initializer, update)
    own, own_initializer = update.loops[shared:], initializer.loops[shared:]
    if len(own) not in (2, 3) or len(own_initializer) != len(own) - 1:
        raise NotAProduct(
            f"{initializer.name} and {update.name} are not two nests of their own (two or three loops for the update, "
            "one fewer for its initializer)"
        )
    prefix = update.iterators[:shared]
    own_names = {loop.name for loop in own} | {loop.name for loop in own_initializer}
    for loop in (*own, *own_initializer):
        if loop.step != 1 or loop.start.pieces != (AffineExpr.of_constant(0),) or len(loop.stop.pieces) != 1:
            raise NotAProduct(f"{update.name}'s loop `{loop.name}` is not `range(0, n)` with a single bound")
        if loop.stop.variables & own_names:
            raise NotAProduct(f"{update.name}'s loop `{loop.name}` has a bound that depends on another loop of the product")
    variables = {loop.name for loop in own}
    target = _operand(update.target, variables, update)
    running = [v for v in target.running if v is not None]
    reduced = sorted(variables - set(running))
    if len(running) != len(own) - 1 or len(reduced) != 1:
        raise NotAProduct(f"{update.name}'s target does not run over all but one of its loops")
    (k,) = reduced
    _check_initializer(initializer, update, target, own)
    extent = {loop.name: loop.stop.pieces[0] for loop in own}
    first, second = (_operand(ref, variables, update) for ref in operands)
    for alpha_factor in alpha:
        if any(ref.array == target.ref.array for ref in array_refs(alpha_factor)):
            raise NotAProduct(f"{update.name}'s factor reads `{target.ref.array}`, the array it updates")
    if target.ref.array in (first.ref.array, second.ref.array):
        raise NotAProduct(f"{update.name} reads `{target.ref.array}`, the array it updates, as an operand")
    if len(running) == 2:
        return _gemm(initializer, update, target, first, second, k, extent, alpha, prefix)
    return _gemv(initializer, update, target, first, second, k, extent, alpha, prefix)


def _initializes(statement: Statement, array: str) -> bool:
    return (
        statement.op == "="
        and isinstance(statement.target, ArrayRef)
        and statement.target.array == array
        and isinstance(statement.value, Number)
        and statement.value.value == 0
    )


def _factors(update: Statement) -> tuple[list[ArrayRef], tuple[Expr, ...]]:
    """The update's value as a product: two array references over its loops, and scalar factors free of them."""
    if update.irregular:
        raise NotAProduct(f"{update.name} reads through an index array or a loop with bounds read from arrays")
    iterators = set(update.iterators)
    factors: list[Expr] = []

    def flatten(expr: Expr) -> None:
        if isinstance(expr, Binary) and expr.op == "*":
            flatten(expr.left)
            flatten(expr.right)
        else:
            factors.append(expr)

    flatten(update.value)
    operands = [f for f in factors if isinstance(f, ArrayRef) and any(i.variables & iterators for i in f.indices)]
    scalars = tuple(f for f in factors if not any(f is o for o in operands))
    for factor in scalars:
        varying = set(names(factor)) & iterators or any(i.variables & iterators for r in array_refs(factor) for i in r.indices)
        if varying:
            raise NotAProduct(f"{update.name}'s value is not a product of two array elements: a factor depends on its loops")
    if len(operands) != 2:
        raise NotAProduct(f"{update.name}'s value is not a product of two array elements (it has {len(operands)})")
    return operands, scalars


def shared_depth(first: Statement, second: Statement) -> int:
    """How many loops two statements share: the same loops, at the same places in the same bodies."""
    depth = 0
    while (
        depth < min(len(first.loops), len(second.loops))
        and first.loops[depth] == second.loops[depth]
        and first.positions[depth] == second.positions[depth]
    ):
        depth += 1
    return depth


def _operand(ref: ArrayRef, variables: set[str], update: Statement) -> Operand:
    """Each subscript is a loop variable plus an offset free of the product's loops, or free of them altogether."""
    running: list[str | None] = []
    for index in ref.indices:
        used = index.variables & variables
        if not used:
            running.append(None)
            continue
        (variable,) = used if len(used) == 1 else (None,)
        if variable is None or dict(index.terms)[variable] != 1:
            raise NotAProduct(f"{update.name}'s subscript `{ref.array}[..., {index}, ...]` is not a loop variable plus an offset")
        running.append(variable)
    found = [v for v in running if v is not None]
    if len(set(found)) != len(found):
        raise NotAProduct(f"{update.name} reads `{ref.array}` along a diagonal")
    positions = [d for d, v in enumerate(running) if v is not None]
    if len(positions) == 2 and positions != [len(running) - 2, len(running) - 1]:
        raise NotAProduct(f"{update.name}'s matrix `{ref.array}` does not run over its last two dimensions")
    return Operand(ref, tuple(running))


def _check_initializer(initializer: Statement, update: Statement, target: Operand, own: tuple[Loop, ...]) -> None:
    """The initializer zeroes exactly the elements the update accumulates into, over loops of the same extents."""
    assert isinstance(initializer.target, ArrayRef)
    extent = {loop.name: loop.stop.pieces[0] for loop in own}
    names_of = {loop.name: loop for loop in initializer.loops}
    if len(initializer.target.indices) != len(target.ref.indices):
        raise NotAProduct(f"{initializer.name} does not zero the elements {update.name} updates")
    seen: set[str] = set()
    for position, (index, theirs, variable) in enumerate(
        zip(initializer.target.indices, target.ref.indices, target.running, strict=True)
    ):
        if variable is None:
            if index != theirs:
                raise NotAProduct(f"{initializer.name} does not zero the elements {update.name} updates")
            continue
        loop_names = [v for v in index.variables if v in names_of]
        if (
            len(loop_names) != 1
            or loop_names[0] in seen
            or dict(index.terms)[loop_names[0]] != 1
            or index - AffineExpr.of_variable(loop_names[0]) != target.offset(position)
        ):
            raise NotAProduct(f"{initializer.name} does not zero the elements {update.name} updates")
        if names_of[loop_names[0]].stop.pieces[0] != extent[variable]:
            raise NotAProduct(f"{initializer.name}'s loop `{loop_names[0]}` and {update.name}'s `{variable}` differ in extent")
        seen.add(loop_names[0])


def _gemm(initializer, update, target, first, second, k, extent, alpha, prefix) -> ProductCall:
    rows = next(v for v in target.running if v is not None)
    columns = [v for v in target.running if v is not None][1]
    if rows in first.running or columns in second.running:
        a, b = first, second
    else:
        a, b = second, first
    if set(filter(None, a.running)) != {rows, k} or set(filter(None, b.running)) != {k, columns}:
        raise NotAProduct(f"{update.name} is not a matrix product: its operands do not pair `{rows}, {k}` with `{k}, {columns}`")
    transpose_a = [v for v in a.running if v is not None] == [k, rows]
    transpose_b = [v for v in b.running if v is not None] == [columns, k]
    extents = (extent[rows], extent[columns], extent[k])
    routine = "syrk" if transpose_a != transpose_b and extents[0] == extents[1] and _one_view(a, b) else "gemm"
    return ProductCall(routine, initializer.name, update.name, target, a, b, transpose_a, transpose_b, extents, alpha, prefix)


def _one_view(a: Operand, b: Operand) -> bool:
    """Whether two operands read the same elements of the same array: one view, which the product reads twice."""
    return a.ref.array == b.ref.array and all(a.offset(d) == b.offset(d) for d in range(len(a.ref.indices)))


def _gemv(initializer, update, target, first, second, k, extent, alpha, prefix) -> ProductCall:
    (out,) = [v for v in target.running if v is not None]
    matrix, vector = (first, second) if len(list(filter(None, first.running))) == 2 else (second, first)
    if set(filter(None, matrix.running)) != {out, k} or list(filter(None, vector.running)) != [k]:
        raise NotAProduct(f"{update.name} is not a matrix-vector product over `{out}` and `{k}`")
    order = [v for v in matrix.running if v is not None]
    transpose = order == [k, out]
    return ProductCall(
        "gemv", initializer.name, update.name, target, matrix, vector, transpose, False, (extent[order[0]], extent[order[1]]),
        alpha, prefix,
    )  # fmt: skip
