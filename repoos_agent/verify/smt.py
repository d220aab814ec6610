"""Translating the pieces of a kernel into Z3 terms: source semantics, isl relations, loop-nest paths."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

import islpy as isl
import z3

from repoos_agent.codegen.loopnest import WRAPPERS, Block, Call, For, If, IntConst, IntExpr, Let, Node, Var, iterators_upper, plain
from repoos_agent.model.affine import AffineExpr, Bound
from repoos_agent.model.expr import IndexRead
from repoos_agent.model.kernel import Kernel, Loop, Statement

_fresh = itertools.count()


def fresh(prefix: str) -> z3.ArithRef:
    return z3.Int(f"{prefix}!{next(_fresh)}")


def affine(expr: AffineExpr, env: Mapping[str, z3.ArithRef]) -> z3.ArithRef:
    return z3.Sum([z3.IntVal(expr.constant), *(value * env[name] for name, value in expr.terms)])


def subscript(index: AffineExpr | IndexRead, env: Mapping[str, z3.ArithRef]) -> z3.ArithRef:
    """A subscript as a Z3 term. An index read from an array is an uninterpreted function of its own
    subscripts (one per index array: the same element holds the same value, nothing else is known);
    an index of a loop whose bounds are data, which no instance variable determines, is a fresh unknown."""
    if isinstance(index, IndexRead):
        ref = index.ref
        function = z3.Function(f"rp_index_{ref.array}", *([z3.IntSort()] * (len(ref.indices) + 1)))
        return function(*(subscript(i, env) for i in ref.indices)) + index.offset
    if index.variables <= env.keys():
        return affine(index, env)
    return fresh("rp_dynamic")


def int_expr(expr: IntExpr, env: Mapping[str, z3.ArithRef]) -> z3.ArithRef | z3.BoolRef:
    """A loop-nest expression; divisions are by positive constants, where Z3's `/` and `%` are C's floor forms."""
    if isinstance(expr, IntConst):
        return z3.IntVal(expr.value)
    if isinstance(expr, Var):
        return env[expr.name]
    a = [int_expr(arg, env) for arg in expr.args]
    op = expr.op
    table = {
        "+": lambda: a[0] + a[1],
        "-": lambda: a[0] - a[1],
        "*": lambda: a[0] * a[1],
        "neg": lambda: -a[0],
        "div": lambda: a[0] / a[1],
        "fdiv": lambda: a[0] / a[1],
        "mod": lambda: a[0] % a[1],
        "min": lambda: z3.If(a[0] <= a[1], a[0], a[1]),
        "max": lambda: z3.If(a[0] >= a[1], a[0], a[1]),
        "select": lambda: z3.If(a[0], a[1], a[2]),
        "==": lambda: a[0] == a[1],
        "<=": lambda: a[0] <= a[1],
        "<": lambda: a[0] < a[1],
        ">=": lambda: a[0] >= a[1],
        ">": lambda: a[0] > a[1],
        "and": lambda: z3.And(a[0], a[1]),
        "or": lambda: z3.Or(a[0], a[1]),
    }
    return table[op]()


def _bound(bound: Bound, env: Mapping[str, z3.ArithRef], value: z3.ArithRef, relation: str) -> z3.BoolRef:
    """`value >= start`-style constraint where the bound is a min or max of pieces."""
    pieces = [affine(p, env) for p in bound.pieces]
    compare = {
        ">=": lambda p: value >= p,
        "<": lambda p: value < p,
        "<=": lambda p: value <= p,
        ">": lambda p: value > p,
    }[relation]
    # value >= max(p) is all; value >= min(p) is any (and conversely for < and <=).
    all_pieces = (bound.combine == "max") == (relation in (">=", ">"))
    clauses = [compare(p) for p in pieces]
    return z3.And(clauses) if all_pieces or len(clauses) == 1 else z3.Or(clauses)


def loop_range(loop: Loop, env: Mapping[str, z3.ArithRef]) -> z3.BoolRef:
    """The Python `range(start, stop, step)` semantics of one loop, from the source, not from isl."""
    value = env[loop.name]
    if loop.step > 0:
        clauses = [_bound(loop.start, env, value, ">="), _bound(loop.stop, env, value, "<")]
    else:
        clauses = [_bound(loop.start, env, value, "<="), _bound(loop.stop, env, value, ">")]
    if abs(loop.step) != 1:
        clauses.append((value - affine(loop.start.pieces[0], env)) % abs(loop.step) == 0)
    return z3.And(clauses)


def in_domain(statement: Statement, env: Mapping[str, z3.ArithRef]) -> z3.BoolRef:
    """Instance `env` of `statement` is executed by the source program."""
    ops = {
        "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b,
        ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b,
        "==": lambda a, b: a == b,
    }
    clauses = [loop_range(loop, env) for loop in statement.loops]
    clauses += [ops[g.op](affine(g.left, env), affine(g.right, env)) for g in statement.guards]
    return z3.And(clauses) if clauses else z3.BoolVal(True)


def original_before(source: Statement, sink: Statement, x: Mapping[str, z3.ArithRef], y: Mapping[str, z3.ArithRef]) -> z3.BoolRef:
    """Instance x of `source` runs before instance y of `sink` in the source program (2d+1 order)."""

    def vector(statement: Statement, env) -> list[z3.ArithRef]:
        coordinates: list[z3.ArithRef] = []
        for position, loop in zip(statement.positions, statement.loops, strict=False):
            coordinates += [z3.IntVal(position), env[loop.name] if loop.step > 0 else -env[loop.name]]
        coordinates.append(z3.IntVal(statement.positions[-1]))
        return coordinates

    return lex_less(vector(source, x), vector(sink, y))


def lex_less(a: list, b: list) -> z3.BoolRef:
    clauses = []
    for k in range(min(len(a), len(b))):
        clauses.append(z3.And([*(a[j] == b[j] for j in range(k)), a[k] < b[k]]))
    return z3.Or(clauses) if clauses else z3.BoolVal(False)


def lex_less_equal(a: list, b: list) -> z3.BoolRef:
    shared = min(len(a), len(b))
    return z3.Or(lex_less(a, b), z3.And([a[j] == b[j] for j in range(shared)]))


def _basic_constraints(basic, groups: list[tuple[object, list]], params: Mapping[str, z3.ArithRef]) -> list[z3.BoolRef]:
    """The constraints of one isl basic set or map over the given (dim type, variables) groups."""
    clauses = []
    for constraint in basic.get_constraints():
        terms = [z3.IntVal(constraint.get_constant_val().to_python())]
        for kind, variables in groups:
            for k, variable in enumerate(variables):
                coefficient = constraint.get_coefficient_val(kind, k).to_python()
                if coefficient:
                    terms.append(coefficient * variable)
        for k in range(basic.dim(isl.dim_type.param)):
            coefficient = constraint.get_coefficient_val(isl.dim_type.param, k).to_python()
            if coefficient:
                terms.append(coefficient * params[basic.get_dim_name(isl.dim_type.param, k)])
        total = z3.Sum(terms)
        clauses.append(total == 0 if constraint.is_equality() else total >= 0)
    return clauses


def isl_relation(
    relation: isl.Map, inputs: list[z3.ArithRef], outputs: list[z3.ArithRef], params: Mapping[str, z3.ArithRef]
) -> z3.BoolRef:
    """A relation from isl as Z3 constraints; its local (div) variables become fresh existential terms,
    so use it only where it occurs positively."""
    pieces = []
    for basic in relation.get_basic_maps():
        divs = [fresh("div") for _ in range(basic.dim(isl.dim_type.div))]
        groups = [(isl.dim_type.in_, inputs), (isl.dim_type.out, outputs), (isl.dim_type.div, divs)]
        pieces.append(z3.And(_basic_constraints(basic, groups, params)))
    return z3.Or(pieces) if pieces else z3.BoolVal(False)


def isl_set(domain: isl.Set, values: list[z3.ArithRef], params: Mapping[str, z3.ArithRef]) -> z3.BoolRef:
    """Membership in an isl set, its local variables under `Exists`, so it may also be negated."""
    pieces = []
    for basic in domain.get_basic_sets():
        divs = [fresh("div") for _ in range(basic.dim(isl.dim_type.div))]
        clauses = _basic_constraints(basic, [(isl.dim_type.set, values), (isl.dim_type.div, divs)], params)
        body = z3.And(clauses) if clauses else z3.BoolVal(True)
        pieces.append(z3.Exists(divs, body) if divs else body)
    return z3.Or(pieces) if pieces else z3.BoolVal(False)


@dataclass(frozen=True)
class Occurrence:
    """One place a statement is executed in the loop nest: the conditions on the iterators that reach it,
    the original iteration it computes, and its execution time stamp (lexicographic)."""

    statement: str
    path: tuple[Node, ...]  # the enclosing nodes, outermost first
    copies: tuple[tuple[str, int | None], ...]  # for unrolled loops on the path: which copy (None: remainder)
    call: Call


def occurrences(root: Node) -> list[Occurrence]:
    found: list[Occurrence] = []

    def walk(node: Node, path: tuple, copies: tuple) -> None:
        if isinstance(node, WRAPPERS):
            walk(plain(node), path, copies)
        elif isinstance(node, Block):
            for index, child in enumerate(node.children):
                walk(child, (*path, ("block", index)), copies)
        elif isinstance(node, If):
            walk(node.then, (*path, ("then", node)), copies)
            if node.otherwise is not None:
                walk(node.otherwise, (*path, ("else", node)), copies)
        elif isinstance(node, Let):
            walk(node.body, (*path, ("let", node)), copies)
        elif isinstance(node, For):
            if node.unroll:
                versions = list(range(node.unroll)) + ([None] if node.remainder else [])
                for version in versions:
                    walk(node.body, (*path, ("for", node)), (*copies, (node.iterator, version)))
            else:
                walk(node.body, (*path, ("for", node)), copies)
        else:
            found.append(Occurrence(node.statement, path, copies, node))

    walk(root, (), ())
    return found


@dataclass
class Execution:
    """An occurrence instantiated with fresh iterator variables: its conditions, instance and time."""

    occurrence: Occurrence
    iterators: dict[str, z3.ArithRef]
    condition: z3.BoolRef
    instance: list[z3.ArithRef]
    time: list[z3.ArithRef]
    parallel_prefix: dict[int, int]  # id(For) -> length of `time` before that loop's component


def instantiate(occurrence: Occurrence, params: Mapping[str, z3.ArithRef]) -> Execution:
    """Fresh variables for every iterator on the path; the constraints the generated code imposes on them."""
    env: dict[str, z3.ArithRef] = dict(params)
    iterators: dict[str, z3.ArithRef] = {}
    clauses: list[z3.BoolRef] = []
    time: list[z3.ArithRef] = []
    prefix: dict[int, int] = {}
    copies = dict(occurrence.copies)
    for kind, node in occurrence.path:
        if kind == "block":
            time.append(z3.IntVal(node))
        elif kind in ("then", "else"):
            condition = int_expr(node.cond, env)
            clauses.append(condition if kind == "then" else z3.Not(condition))
        elif kind == "let":
            value = fresh(node.iterator)
            clauses.append(value == int_expr(node.value, env))
            env[node.iterator] = iterators[node.iterator] = value
        else:
            value = fresh(node.iterator)
            init = int_expr(node.init, env)
            steps = (value - init) / node.step
            clauses += [value >= init, (value - init) % node.step == 0]
            prefix[id(node)] = len(time)
            if not node.unroll:
                clauses.append(int_expr(node.cond, {**env, node.iterator: value}))
                time.append(value)
            else:
                f = node.unroll
                copy = copies[node.iterator]
                if copy is not None:
                    m = steps / f
                    last_of_round = init + (m * f + f - 1) * node.step
                    clauses += [steps % f == copy, int_expr(node.cond, {**env, node.iterator: last_of_round})]
                    time += [z3.IntVal(0), m, z3.IntVal(copy)]
                else:
                    bound, inclusive = iterators_upper(node.cond, node.iterator)
                    upper = int_expr(bound, env) + (1 if inclusive else 0)  # iterator < upper
                    span = upper - init - (f - 1) * node.step  # last_of_round(m) < upper  <=>  m*f*step < span
                    rounds = z3.If(span > 0, (span - 1) / (f * node.step) + 1, 0)
                    clauses += [steps >= rounds * f, int_expr(node.cond, {**env, node.iterator: value})]
                    time += [z3.IntVal(1), value, z3.IntVal(0)]
            env[node.iterator] = iterators[node.iterator] = value
    instance = [int_expr(arg, env) for arg in occurrence.call.args]
    return Execution(occurrence, iterators, z3.And(clauses) if clauses else z3.BoolVal(True), instance, time, prefix)


def instance_env(statement: Statement, values: list[z3.ArithRef], params: Mapping[str, z3.ArithRef]) -> dict[str, z3.ArithRef]:
    return {**params, **dict(zip(statement.iterators, values, strict=True))}


def fresh_instance(statement: Statement, tag: str) -> list[z3.ArithRef]:
    return [fresh(f"{tag}.{statement.name}.{it}") for it in statement.iterators]


def parameters(kernel: Kernel) -> dict[str, z3.ArithRef]:
    return {p: z3.Int(p) for p in kernel.parameters}
