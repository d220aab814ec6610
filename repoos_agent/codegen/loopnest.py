"""The loop nest as generated: one small tree that every backend prints and Z3 verifies.

isl's AST generator decides the loops; this module turns its AST into plain
dataclasses (integer expressions, `for`, `if`, blocks, statement calls) with the
schedule's marks resolved: which loops run in parallel, which are vectorized,
which are unrolled and by how much, across which the updated elements stay in
registers, which scalars each thread of a parallel loop keeps a copy of. The C and
MLIR printers translate this tree mechanically, and `verify` proves properties of
this same tree, so the proof covers the code we emit rather than the schedule we
meant.

The passes in `codegen.passes` then rewrite the tree into the node kinds below the
plain ones (a BLAS call, a parallel region, lane-split sums, an unrolled or
register-promoted loop): every transformation is one of those passes, the printers
only print, and each backend declares which node kinds it prints (`codegen.support`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import islpy as isl

from repoos_agent.errors import CompileError
from repoos_agent.model.kernel import Kernel
from repoos_agent.schedule import LoweredSchedule
from repoos_agent.schedule.products import ProductCall


@dataclass(frozen=True)
class IntConst:
    value: int


@dataclass(frozen=True)
class Var:
    """A loop iterator (`c1`, `c3`, ...) or an integer parameter of the kernel."""

    name: str


@dataclass(frozen=True)
class Op:
    """`op` over `args`: + - * neg fdiv (floor division) div (exact) mod (non-negative remainder)
    min max select == <= < >= > and or."""

    op: str
    args: tuple[IntExpr, ...]


IntExpr = IntConst | Var | Op


@dataclass(frozen=True)
class For:
    iterator: str
    init: IntExpr
    cond: IntExpr  # iterator <= bound or iterator < bound (monotone in the iterator)
    step: int
    body: Node
    loop_id: str | None
    parallel: bool = False
    vector: int | None = None
    unroll: int | None = None
    remainder: bool = True  # an unrolled loop finishes the last iterations one by one
    promote: bool = False  # the body's updated elements stay in locals across this loop (`passes.promotion`)
    private: frozenset[str] = frozenset()  # scalars each thread of this parallel loop keeps a copy of
    lane_sums: frozenset[str] = frozenset()  # statements whose sums this vector loop's lanes split (`legality.lane_reduction`)


@dataclass(frozen=True)
class Let:
    """A loop isl proved runs once: `iterator = value` for the body."""

    iterator: str
    value: IntExpr
    body: Node


@dataclass(frozen=True)
class If:
    cond: IntExpr
    then: Node
    otherwise: Node | None = None


@dataclass(frozen=True)
class Block:
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Call:
    """One instance of statement `statement` at the original iteration `args` (one per loop around it)."""

    statement: str
    args: tuple[IntExpr, ...]
    atomic: bool = False  # a sum its parallel loop's threads update concurrently: one atomic update (`passes.regions`)
    lane: str = ""  # the partial-sum variable a vector loop's lane adds into instead of the element (`passes.lanes`)


@dataclass(frozen=True)
class BlasCall:
    """One BLAS call for the product that the adjacent nests `initializer` and `update` compute (`blas(S1)`):
    where an extent is empty or does not fit BLAS's `int`, the nests run as generated (`passes.blas`)."""

    call: ProductCall
    initializer: Node
    update: Node


@dataclass(frozen=True)
class Region:
    """A parallel loop's OpenMP region (`passes.regions`). `outlined`: a function of its own that every thread
    calls, whose arrays are `restrict` parameters; `inline`: in the caller, where a scalar it writes is the caller's
    variable; `copies`: each thread sums into its own zeroed copy of the arrays `copies`, added up after the loop.
    Each thread keeps its own copy of the loop's private scalars (`loop.private`)."""

    loop: For
    form: str
    copies: tuple[str, ...] = ()


@dataclass(frozen=True)
class LaneSum:
    """A sum (or running extremum) a vector loop's lanes split: partial results in `variable`, combined into the
    element at `first` (the statement's call at the loop's first iteration) after the loop."""

    statement: str
    variable: str
    first: Call


@dataclass(frozen=True)
class LaneSplit:
    """A vector loop whose lanes split `sums` (`passes.lanes`); its calls of them carry `Call.lane`."""

    loop: For
    sums: tuple[LaneSum, ...]


@dataclass(frozen=True)
class Unrolled:
    """`loop` unrolled exactly: `loop.unroll` copies while the last is in range, then (if `loop.remainder`)
    the rest one by one, in order (`passes.unrolling`)."""

    loop: For


@dataclass(frozen=True)
class PointLoop:
    """One loop of the box inside a promoted loop: `extent` iterations from `init` when the box is full."""

    iterator: str
    init: IntExpr
    cond: IntExpr
    extent: int


@dataclass(frozen=True)
class Promoted:
    """`loop` with the target of `call` kept in locals across it (`passes.promotion`): where the box of `points`
    is full, its elements are loaded before the loop, updated in locals and stored after; elsewhere `fallback`
    (the loop as generated) runs. Order is unchanged."""

    loop: For
    points: tuple[PointLoop, ...]
    call: Call
    fallback: Node


Node = For | Let | If | Block | Call | BlasCall | Region | LaneSplit | Unrolled | Promoted
WRAPPERS = (BlasCall, Region, LaneSplit, Unrolled, Promoted)


def plain(node: BlasCall | Region | LaneSplit | Unrolled | Promoted) -> Node:
    """The plain loops a pass's node stands for: the same statement instances in the same order (a BLAS call's
    nests, a region's or a split's loop, a promoted loop's fallback). The instance counter prints these, and
    Z3 checks a node through them (see `verify.translation` for what that leaves to the pass)."""
    if isinstance(node, BlasCall):
        return Block((node.initializer, node.update))
    if isinstance(node, Promoted):
        return node.fallback
    return node.loop


@dataclass(frozen=True)
class ArrayBound:
    """Where the loop nest can reach in one dimension of one array, for the guard every call starts with."""

    array: str
    dim: int
    reachable: IntExpr  # when this holds, the array is accessed at all
    low: IntExpr
    high: IntExpr
    low_text: str
    high_text: str


@dataclass(frozen=True)
class LoopNest:
    root: Node
    bounds: tuple[ArrayBound, ...]


def build_loop_nest(kernel: Kernel, lowered: LoweredSchedule) -> LoopNest:
    """The kernel's loop nest for `lowered`, with the marks of the schedule applied. isl builds it for the
    sizes the kernel assumes (the extents NumPy's broadcasting requires equal): without them, a shifted
    fusion over `in_field[2:-2]` and `out_field` splits into cases for sizes no call can have."""
    build = isl.AstBuild.from_context(kernel.assumed)
    schedule = lowered.schedule.intersect_domain(kernel.domains)
    try:
        tree = _separating_innermost(build, schedule).node_from_schedule_map(schedule)
        return LoopNest(_node(tree, lowered, inside_parallel=False), _array_bounds(kernel, build))
    except isl.Error as error:  # a model isl cannot print is a refusal, not a crash
        raise CompileError(f"`{kernel.name}`: isl could not build its loop nest ({str(error).split(' in /')[0]})") from None


def _separating_innermost(build: isl.AstBuild, schedule: isl.UnionMap) -> isl.AstBuild:
    """`build` asked to split the deepest loop level where statements start or stop, instead of
    testing each statement inside it: fused or shifted statements (a stencil's two sweeps in one
    nest) then get a guard-free loop gcc can vectorize, with the edges peeled before and after it.
    Only the deepest level: separating every level multiplies the code of tiled nests."""
    maps = schedule.get_map_list()
    if maps.n_map() == 0:
        return build
    width = maps.get_at(0).dim(isl.dim_type.out)
    if width < 2:
        return build
    dims = ", ".join(f"c{d}" for d in range(width))
    return build.set_options(isl.UnionMap(f"{{ [{dims}] -> separate[{width - 2}] }}", context=build.get_ctx()))


def _node(node: isl.AstNode, lowered: LoweredSchedule, inside_parallel: bool) -> Node:
    kind = node.get_type()
    if kind == isl.ast_node_type.block:
        children = node.block_get_children()
        return Block(tuple(_node(children.get_at(k), lowered, inside_parallel) for k in range(children.n_ast_node())))
    if kind == isl.ast_node_type.mark:
        return _node(node.mark_get_node(), lowered, inside_parallel)
    if kind == isl.ast_node_type.if_:
        otherwise = _node(node.if_get_else_node(), lowered, inside_parallel) if node.if_has_else_node() else None
        return If(expression(node.if_get_cond()), _node(node.if_get_then_node(), lowered, inside_parallel), otherwise)
    if kind == isl.ast_node_type.user:
        call = node.user_get_expr()
        args = tuple(expression(call.get_op_arg(k)) for k in range(1, call.get_op_n_arg()))
        return Call(call.get_op_arg(0).get_id().get_name(), args)
    if kind == isl.ast_node_type.for_:
        iterator = node.for_get_iterator().get_id().get_name()
        init = expression(node.for_get_init())
        if node.for_is_degenerate():
            return Let(iterator, init, _node(node.for_get_body(), lowered, inside_parallel))
        step = expression(node.for_get_inc())
        if not isinstance(step, IntConst):
            raise NotImplementedError(f"isl loop step {step}")
        loop_id = _loop_id(node, lowered)
        parallel = loop_id in lowered.parallel and not inside_parallel
        body = _node(node.for_get_body(), lowered, inside_parallel or parallel)
        return For(
            iterator=iterator,
            init=init,
            cond=expression(node.for_get_cond()),
            step=step.value,
            body=body,
            loop_id=loop_id,
            parallel=parallel,
            vector=lowered.vector.get(loop_id) if loop_id else None,
            unroll=lowered.unroll.get(loop_id) if loop_id else None,
            promote=loop_id in lowered.promote,
            private=lowered.private.get(loop_id, frozenset()) if parallel and loop_id not in lowered.vector else frozenset(),
            lane_sums=lowered.lane_sums.get(loop_id, frozenset()) if loop_id else frozenset(),
        )
    raise NotImplementedError(f"isl AST node {kind}")


def _loop_id(node: isl.AstNode, lowered: LoweredSchedule) -> str | None:
    """The schedule's loop behind an AST `for`: one id shared by every statement inside, or None."""
    match = re.fullmatch(r"c(\d+)(_\d+)?", node.for_get_iterator().get_id().get_name())
    if match is None or int(match.group(1)) % 2 == 0:
        return None
    level = (int(match.group(1)) - 1) // 2
    statements: set[str] = set()

    def visit(child: isl.AstNode) -> bool:
        if child.get_type() == isl.ast_node_type.user:
            statements.add(child.user_get_expr().get_op_arg(0).get_id().get_name())
        return True

    node.foreach_descendant_top_down(visit)
    ids = {lowered.loop_ids[name][level] for name in statements}
    return ids.pop() if len(ids) == 1 else None


_OPS = {
    isl.ast_expr_op_type.add: "+",
    isl.ast_expr_op_type.sub: "-",
    isl.ast_expr_op_type.mul: "*",
    isl.ast_expr_op_type.minus: "neg",
    isl.ast_expr_op_type.div: "div",
    isl.ast_expr_op_type.pdiv_q: "div",
    isl.ast_expr_op_type.fdiv_q: "fdiv",
    isl.ast_expr_op_type.pdiv_r: "mod",
    isl.ast_expr_op_type.zdiv_r: "mod",
    isl.ast_expr_op_type.max: "max",
    isl.ast_expr_op_type.min: "min",
    isl.ast_expr_op_type.cond: "select",
    isl.ast_expr_op_type.select: "select",
    isl.ast_expr_op_type.eq: "==",
    isl.ast_expr_op_type.le: "<=",
    isl.ast_expr_op_type.lt: "<",
    isl.ast_expr_op_type.ge: ">=",
    isl.ast_expr_op_type.gt: ">",
    isl.ast_expr_op_type.and_: "and",
    isl.ast_expr_op_type.and_then: "and",
    isl.ast_expr_op_type.or_: "or",
    isl.ast_expr_op_type.or_else: "or",
}


def expression(expr: isl.AstExpr) -> IntExpr:
    """An isl AST expression as an `IntExpr`."""
    kind = expr.get_type()
    if kind == isl.ast_expr_type.int:
        return IntConst(expr.get_val().to_python())
    if kind == isl.ast_expr_type.id:
        return Var(expr.get_id().get_name())
    op = expr.get_op_type()
    if op not in _OPS:
        raise NotImplementedError(f"isl AST expression {op}")
    args = tuple(expression(expr.get_op_arg(k)) for k in range(expr.get_op_n_arg()))
    if _OPS[op] in ("min", "max") and len(args) > 2:
        folded = args[0]
        for arg in args[1:]:
            folded = Op(_OPS[op], (folded, arg))
        return folded
    return Op(_OPS[op], args)


def _array_bounds(kernel: Kernel, build: isl.AstBuild) -> tuple[ArrayBound, ...]:
    bounds = []
    for array in kernel.arrays:
        if not array.is_argument or array.rank == 0:
            continue
        for dim in range(array.rank):
            # A subscript read from data (free in its access) is checked on the index array's values instead.
            touched = None
            for statement in kernel.statements:
                for access in statement.reads + statement.writes:
                    if access.array == array.name and dim not in access.free_dims:
                        elements = access.relation.range()
                        touched = elements if touched is None else touched.union(elements)
            if touched is None or touched.is_empty():
                continue
            low, high = touched.dim_min(dim), touched.dim_max(dim)
            bounds.append(
                ArrayBound(
                    array=array.name,
                    dim=dim,
                    reachable=expression(build.expr_from_set(high.domain())),
                    low=expression(build.expr_from_pw_aff(low)),
                    high=expression(build.expr_from_pw_aff(high)),
                    low_text=build.expr_from_pw_aff(low).to_C_str(),
                    high_text=build.expr_from_pw_aff(high).to_C_str(),
                )
            )
    return tuple(bounds)


def iterators_upper(cond: IntExpr, iterator: str) -> tuple[IntExpr, bool]:
    """`(bound, inclusive)` of a loop condition `iterator <= bound` / `iterator < bound`."""
    if isinstance(cond, Op) and cond.op in ("<=", "<") and cond.args[0] == Var(iterator):
        return cond.args[1], cond.op == "<="
    raise NotImplementedError(f"loop condition {cond} is not an upper bound on {iterator}")


def substitute(expr: IntExpr, name: str, value: IntExpr) -> IntExpr:
    if isinstance(expr, Var):
        return value if expr.name == name else expr
    if isinstance(expr, Op):
        return Op(expr.op, tuple(substitute(a, name, value) for a in expr.args))
    return expr


def mentions(expr: IntExpr, names: set[str]) -> bool:
    """Whether `expr` reads any of the variables `names`."""
    if isinstance(expr, Var):
        return expr.name in names
    if isinstance(expr, Op):
        return any(mentions(arg, names) for arg in expr.args)
    return False
