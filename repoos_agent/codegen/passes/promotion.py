"""Register promotion: a statement's updated elements kept in locals across the loop `promote` marks.

In `tile(i, k, j, 6, 64, 24); interchange(i, k); promote(k)` on gemm, every
iteration of `k` updates the same 6 x 24 block of `C`. Loading that block into a
local array before `k`, updating the locals and storing them after is what a BLAS
micro-kernel does; C compilers will not do it themselves, because they cannot
prove the block is the same for every `k`. We can: the loops inside `k` are a box
whose bounds do not depend on `k`, so the set of elements is fixed, and the
statement's target maps each point of the box to its own element. Order is
unchanged (each element sees the same updates in the same order), so no
dependence is touched; only full boxes take this path, with constant extents a
compiler unrolls into registers, and partial boxes at the edges run as generated.
The pass turns each such loop into a `Promoted` node; a loop it cannot promote stays as it is.
"""

from __future__ import annotations

from dataclasses import replace

from repoos_agent.codegen.loopnest import (
    Call,
    For,
    IntConst,
    IntExpr,
    LoopNest,
    Node,
    Op,
    PointLoop,
    Promoted,
    Var,
    iterators_upper,
    mentions,
)
from repoos_agent.codegen.passes.rewrite import NestRewriter, PassContext
from repoos_agent.model.expr import ArrayRef, array_refs
from repoos_agent.model.kernel import Kernel, Statement

MAX_ELEMENTS = 1024  # locals beyond this would live on the stack, not in registers


def promote_registers(nest: LoopNest, context: PassContext) -> LoopNest:
    """`nest` with each loop marked `promote` that can be promoted as a `Promoted` node."""
    return LoopNest(_Promotion(context.kernel).node(nest.root), nest.bounds)


class _Promotion(NestRewriter):
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def loop(self, loop: For) -> Node:
        promoted = plan_promotion(loop, self.kernel) if loop.promote else None
        inside = self.inside(loop)
        return inside if promoted is None else replace(promoted, fallback=replace(inside, promote=False))


def plan_promotion(loop: For, kernel: Kernel) -> Promoted | None:
    """The promotion of `loop`'s body, or None where the body is not a full box around one statement
    whose target is fixed across `loop` and distinct at each point (then the loop runs as generated)."""
    points: list[For] = []
    node = loop.body
    while isinstance(node, For):
        if node.step != 1 or node.parallel or node.vector or node.unroll:
            return None
        points.append(node)
        node = node.body
    if not points or not isinstance(node, Call):
        return None
    bound = {loop.iterator} | {p.iterator for p in points}
    boxed = []
    for point in points:
        upper, _ = iterators_upper(point.cond, point.iterator)
        if mentions(point.init, bound) or mentions(upper, bound):
            return None
        extent = constant_extent(point)
        if extent is None:
            return None
        boxed.append(PointLoop(point.iterator, point.init, point.cond, extent))
    if _product(p.extent for p in boxed) > MAX_ELEMENTS:
        return None
    statement = kernel.statement(node.statement)
    target = statement.target
    if not isinstance(target, ArrayRef) or not target.indices or statement.irregular:
        return None
    if any(ref.array == target.array and ref != target for ref in array_refs(statement.value)):
        return None
    if not _one_element_per_point(statement, node, target, loop.iterator, [p.iterator for p in boxed]):
        return None
    return Promoted(loop, tuple(boxed), node, replace(loop, promote=False))


def _one_element_per_point(statement: Statement, call: Call, target: ArrayRef, across: str, points: list[str]) -> bool:
    """Whether the target is the same element for every iteration of `across` and a different one
    for each point of the box: each subscript uses at most one point iterator, each point iterator
    exactly one subscript, and no iterator of the statement that the target uses moves with `across`
    (even where the moves cancel, as in `C[j + k]` after a skew: the copies outside `across` could
    not name that element)."""
    arguments = {name: _linear(arg) for name, arg in zip(statement.iterators, call.args, strict=True)}
    seen: list[str] = []
    for index in target.indices:
        combined: dict[str, int] = {}
        for name, coefficient in index.terms:
            if name not in arguments:
                continue  # a kernel parameter: the same everywhere
            form = arguments[name]
            if form is None or across in form:
                return False  # the load and store before and after `across` could not compute it
            for variable, value in form.items():
                combined[variable] = combined.get(variable, 0) + coefficient * value
        used = {v for v, c in combined.items() if c != 0}
        if across in used:
            return False
        here = [p for p in points if p in used]
        if len(here) > 1:
            return False
        seen += here
    return sorted(seen) == sorted(points)


def constant_extent(point: For) -> int | None:
    """The trip count of a loop whose upper bound has the form `init + constant` (where it is not cut
    short by another bound): a tile's point loop, a box side."""
    bound, inclusive = iterators_upper(point.cond, point.iterator)
    start = _linear(point.init)
    if start is None:
        return None
    extents = []
    for candidate in _min_arguments(bound):
        form = _linear(candidate)
        if form is None:
            continue
        difference = {v: form.get(v, 0) - start.get(v, 0) for v in form.keys() | start.keys()}
        if all(value == 0 for name, value in difference.items() if name != ""):
            extents.append(difference.get("", 0) + (1 if inclusive else 0))
    return min(extents) if extents and min(extents) >= 1 else None


def _min_arguments(expr: IntExpr) -> list[IntExpr]:
    if isinstance(expr, Op) and expr.op == "min":
        return [part for arg in expr.args for part in _min_arguments(arg)]
    return [expr]


def _linear(expr: IntExpr) -> dict[str, int] | None:
    """`expr` as {variable: coefficient} with the constant under "", or None if it is not linear."""
    if isinstance(expr, IntConst):
        return {"": expr.value}
    if isinstance(expr, Var):
        return {expr.name: 1}
    if expr.op == "neg":
        inner = _linear(expr.args[0])
        return None if inner is None else {v: -c for v, c in inner.items()}
    if expr.op in ("+", "-"):
        left, right = _linear(expr.args[0]), _linear(expr.args[1])
        if left is None or right is None:
            return None
        sign = 1 if expr.op == "+" else -1
        return {v: left.get(v, 0) + sign * right.get(v, 0) for v in left.keys() | right.keys()}
    if expr.op == "*":
        left, right = _linear(expr.args[0]), _linear(expr.args[1])
        if left is None or right is None:
            return None
        for scale, form in ((left, right), (right, left)):
            if set(scale) == {""}:
                return {v: scale[""] * c for v, c in form.items()}
    return None


def _product(values) -> int:
    result = 1
    for value in values:
        result *= value
    return result
