"""NumPy array statements lowered into element statements over implicit loops.

An array expression becomes a `Value`: its extents, and a function from an index to
the scalar expression of that element. Slices, broadcasting and elementwise operators
only compose these functions, so a chain of them becomes one statement and NumPy's
implicit temporaries disappear. A reduction or a matrix product is materialized: an
initializing statement and an updating one over the output's loops plus the reduced
ones. An assignment loops over its target's extents. Every statement lands in the
same `Walk` as the loop front-end's, so there is one model.

Implicit loops are named by role: the output's dimensions take `i, j, k, ...` in order
(skipping names the function already uses), reduced dimensions the next free letters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count

import islpy as isl
from tree_sitter import Node

from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import (
    CONSTANTS,
    ISL_RESERVED,
    RawStatement,
    Refusal,
    UnknownRank,
    Walk,
    affine_index,
    affine_value,
    unparenthesised,
)
from repoos_agent.model.affine import AffineExpr, Bound
from repoos_agent.model.expr import ArrayRef, Binary, Call, Choice, Expr, Name, Number, Unary, array_refs
from repoos_agent.model.kernel import Allocation, Condition, DtypeRule, Extent, Loop, ReturnValue, ShapeParameter

Index = tuple[AffineExpr, ...]
LOOP_NAMES = ("i", "j", "k", "l", "p", "q", "r", "s", "u", "v", "w", "x", "y", "z")
ELEMENTWISE = {
    "exp": "exp", "log": "log", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh",
    "abs": "fabs", "absolute": "fabs", "fabs": "fabs", "floor": "floor", "ceil": "ceil",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "asin": "asin", "acos": "acos", "atan": "atan",
}  # fmt: skip
FLOATING_CALLS = frozenset({"exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "floor", "ceil", "arcsin", "arccos", "arctan"})
REDUCTIONS = frozenset({"sum", "max", "min", "mean", "prod", "amax", "amin"})
CREATIONS = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like"})
DTYPES = {"float64": "float64", "float32": "float32", "int64": "int64", "int32": "int32", "double": "float64", "single": "float32"}
NUMPY = ("np", "numpy")
REDUCTION_NAMES = {"sum": "sums", "max": "maxima", "min": "minima", "mean": "means", "prod": "products"}
"""What an unnamed reduction's temporary is called in `repoos ingest` (and schedules' statement texts)."""
RANK_HINT = (
    " (an argument's rank comes from the call's values, e.g. `repoos check FILE:FUNCTION --arg x=f64[64,64]`,"
    " or from `n, m = x.shape` in the source)"
)
ARRAY_OPERATORS = ("+", "-", "*", "/", "//", "%", "**")
UNSUPPORTED = {
    "einsum": "np.einsum is not modelled; write the contraction with `@` or a reduction",
    "reshape": "reshape is not modelled: write the loops over the shape you need",
    "linspace": "np.linspace is not modelled inside a kernel: pass the array in",
    "cumsum": "np.cumsum is not modelled: write the running sum as a loop (`c[i] = c[i - 1] + x[i]`)",
    "cumprod": "np.cumprod is not modelled: write the running product as a loop (`c[i] = c[i - 1] * x[i]`)",
    "tril": "np.tril is not modelled: write the triangle as a loop over rows (`A[i, :i + 1]`)",
    "triu": "np.triu is not modelled: write the triangle as a loop over rows (`A[i, i:]`)",
    "concatenate": "np.concatenate is not modelled: assign the parts into a slice of one array",
    "stack": "np.stack is not modelled: assign the parts into slices of one array",
}


@dataclass(frozen=True)
class View:
    """Stored memory behind a value: writes to the value go to `array` at `index(element index)`."""

    array: str
    index: Callable[[Index], Index]


@dataclass(frozen=True)
class Value:
    """An array (or scalar) expression: its extents and the scalar expression of each element."""

    shape: tuple[Extent, ...]
    element: Callable[[Index], Expr]
    dtype: DtypeRule
    view: View | None = None
    boolean: bool = False

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass
class Place:
    """Where a statement sits: its enclosing loops and guards, and its slot in the enclosing body."""

    loops: tuple[Loop, ...]
    guards: tuple[Condition, ...]
    positions: tuple[int, ...]  # the enclosing bodies' places, without the statement's own slot
    counter: list[int]

    @property
    def scope(self) -> set[str]:
        return {loop.name for loop in self.loops}


@dataclass
class ArrayLowering:
    """The NumPy front-end of one function: its array locals, allocations and helper functions."""

    walk: Walk
    helpers: dict[str, Node]
    locals: dict[str, Value] = field(default_factory=dict)
    allocations: list[Allocation] = field(default_factory=list)
    returns: list[ReturnValue] = field(default_factory=list)
    returns_tuple: bool = False
    inlining: tuple[str, ...] = ()
    statement: Node | None = None  # the source statement being lowered: what its element statements cite
    owned: dict[tuple[tuple[str, ...], str], str] = field(default_factory=dict)  # local -> the allocation it owns
    shared: set[str] = field(default_factory=set)  # allocations two names see: never rebound in place
    depth: dict[tuple[tuple[str, ...], str], int] = field(default_factory=dict)  # loops around a local's binding
    equal: dict[Extent, Extent] = field(default_factory=dict)  # extents broadcasting found equal (union-find)
    emitted: int = 0  # element statements this front-end emitted
    _fresh: count = field(default_factory=count)

    # ---- statements ----------------------------------------------------------------------

    def lower_assignment(
        self, node: Node, loops: tuple[Loop, ...], guards: tuple[Condition, ...], positions: tuple[int, ...], counter: list[int]
    ) -> None:
        self.statement = node
        try:
            self.assignment(node, Place(loops, guards, positions, counter))
        finally:
            self.statement = None

    def lower_return(self, node: Node, counter: list[int]) -> None:
        self.statement = node
        try:
            self.returned(node, Place((), (), (), counter))
        finally:
            self.statement = None

    @property
    def lowered_any(self) -> bool:
        return self.emitted > 0

    def mentions_arrays(self, node: Node) -> bool:
        """Whether a statement needs this front-end: array locals, whole arrays, slices, `@`, NumPy calls."""
        stack = [node]
        while stack:
            current = stack.pop()
            kind = current.type
            if kind == "identifier" and text(current) in self.locals:
                return True
            if kind in ("slice", "ellipsis", "none", "keyword_argument") or (
                kind == "binary_operator" and "@" in _operator(current)
            ):
                return True
            if kind == "attribute" and text(current.child_by_field_name("attribute")) in ("T", "sum", "max", "min", "mean", "copy"):
                return True
            if kind == "call":
                callee = current.child_by_field_name("function")
                name = text(callee).rpartition(".")[2]
                if name in self.helpers or (callee.type == "attribute" and name not in {*ELEMENTWISE, "pow"}):
                    return True
            if (
                kind == "identifier"
                and self._is_array_argument(text(current))
                and not _is_subscripted(current)
                and not _is_shape_read(current)
            ):
                return True
            if (
                kind == "subscript"
                and _subscript_count(current) < self.walk.ranks.get(_subscript_base(current), 0)
                and not _is_subscripted(current)  # `L[i]` in `L[i][j]`: the outer subscript counts the chain
            ):
                return True
            stack.extend(current.children)
        return False

    def assignment(self, node: Node, place: Place) -> None:
        """`target = value` or `target op= value`, with array semantics."""
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        op = "=" if node.type == "assignment" else text(node.child_by_field_name("operator"))
        if right is None:
            raise Refusal(node, f"`{text(node)}`: a bare annotation assigns nothing")
        if op not in ("=", "+=", "-=", "*=", "/="):
            raise Refusal(node, f"`{op}` assignments are not modelled (use =, +=, -=, *= or /=)")
        if left.type in ("pattern_list", "tuple_pattern"):
            raise Refusal(left, f"`{text(left)}`: unpacking into several names is not modelled; assign each value on its own line")
        if left.type == "identifier" and op == "=":
            self._bind(text(left), right, place, node)
            return
        if left.type == "identifier" and text(left) not in self.locals and not self._is_array_argument(text(left)):
            self._scalar_update(text(left), op, right, place, node)
            return
        target = self.value(left, place)
        if target.view is None:
            raise Refusal(left, f"`{text(left)}` is not stored memory: assign to an array, a slice of one, or a local")
        self.store(target, op, right, place, node)

    def store(self, target: Value, op: str, right: Node, place: Place, node: Node) -> None:
        """Write `right` into the target's view, element by element, with NumPy's right-side-first semantics."""
        assert target.view is not None
        whole = unparenthesised(right)
        if op == "=" and self._is_product_or_reduction(whole):
            produced = self._produce(whole, place, node, into=target)
            if produced is None:
                return
            value = produced
        else:
            value = self.value(right, place)
        self.write(target, op, value, right, place, node)

    def write(self, target: Value, op: str, value: Value, right: Node, place: Place, node: Node) -> None:
        """Store a computed value into the target's view (through a temporary if it reads what it overwrites)."""
        assert target.view is not None
        if value.boolean:
            raise Refusal(right, f"`{text(right)}` is a boolean array; boolean arrays are not stored (use np.where)")
        mapper = _broadcast_to(value, target.shape, right)
        self._equate([value.shape], target.shape)
        if self._overwrites_its_reads(target, op, value, mapper, place):
            value = self.materialize(value, "old", place, node)
            mapper = _broadcast_to(value, target.shape, right)
        view = target.view

        def body(index: Index) -> tuple[ArrayRef, Expr]:
            return ArrayRef(view.array, view.index(index)), value.element(mapper(index))

        self.emit(target.shape, op, body, place, node)

    def _bind(self, name: str, right: Node, place: Place, node: Node) -> None:
        """`name = value`. A name that already owns an allocation of the same shape is rebound by writing
        into it: a value carried round a loop (`x = f(x)` in its body) must live in the same memory in
        every iteration. A rebinding in a deeper loop that cannot do that is refused."""
        if name in place.scope:
            raise Refusal(node, f"assignment to loop variable `{name}`")
        if name in self.walk.parameters or name in self.walk.shape_parameters or name in self.walk.size_aliases:
            raise Refusal(node, f"assignment to `{name}`, which is used as a loop bound or subscript")
        key = (self.inlining, name)
        whole = unparenthesised(right)
        before = len(self.allocations)
        if self._is_product_or_reduction(whole) or _is_creation(whole):
            value = self._produce(whole, place, node, into=None, name=name)
        else:
            value = self.value(right, place)
        assert value is not None
        if value.boolean:
            raise Refusal(right, f"`{text(right)}` is a boolean array; boolean arrays are not stored (use np.where)")
        if value.rank == 0:
            self.locals.pop(name, None)
            self._assign_scalar(name, "=", value, place, node)
            return
        existing = self.locals.get(name)
        owned = self.owned.get(key)
        if (
            existing is not None
            and owned is not None
            and owned not in self.shared
            and self._same_shape(existing.shape, value.shape)
        ):
            if not (value.view is not None and value.view.array == owned and _is_whole(value)):
                self.write(existing, "=", value, right, place, node)
            return
        if existing is not None and self.depth.get(key, 0) < len(place.loops):
            raise Refusal(
                node,
                f"`{name}` is rebound inside a loop to an array it cannot share memory with (another shape, or a view); "
                f"assign into `{name}[...]` instead",
            )
        if value.view is None:
            value = self.materialize(value, name, place, node)
        assert value.view is not None
        if value.view.array in {a.name for a in self.allocations[before:]}:  # made by this statement: its own
            self.owned[key] = value.view.array
        else:
            self.owned.pop(key, None)
            self.shared.add(value.view.array)  # an alias: neither name may overwrite it as a rebinding
        self.locals[name] = value
        self.depth[key] = len(place.loops)

    def _equate(self, shapes: list[tuple[Extent, ...]], result: tuple[Extent, ...]) -> None:
        """Broadcasting two extents together means NumPy found them equal: remember it, so a later
        rebinding sees `ni` and `wcon_d0 - 1` as one extent."""
        for shape in shapes:
            for extent, wide in zip(reversed(shape), reversed(result), strict=False):
                if not _is_one(extent) and extent != wide:
                    first, second = self._canonical(extent), self._canonical(wide)
                    if first != second:
                        self.equal[first] = second

    def size_equalities(self) -> tuple[tuple[AffineExpr, AffineExpr], ...]:
        """The extents NumPy's broadcasting required equal, as equal sizes: what a call must satisfy for the
        function to run at all, so the generated code may assume it once the call is checked."""
        return tuple(
            (first.size, second.size)
            for first, second in self.equal.items()
            if first.divisor == second.divisor == 1 and first.size != second.size
        )

    def _canonical(self, extent: Extent) -> Extent:
        while extent in self.equal:
            extent = self.equal[extent]
        return extent

    def _same_shape(self, first: tuple[Extent, ...], second: tuple[Extent, ...]) -> bool:
        return len(first) == len(second) and all(
            self._canonical(a) == self._canonical(b) for a, b in zip(first, second, strict=True)
        )

    def _scalar_update(self, name: str, op: str, right: Node, place: Place, node: Node, value: Value | None = None) -> None:
        value = value if value is not None else self.value(right, place)
        if value.rank != 0:
            raise Refusal(node, f"`{text(node)}`: `{name}` is a scalar, but the right side is an array of rank {value.rank}")
        self._assign_scalar(name, op, value, place, node)

    def _assign_scalar(self, name: str, op: str, value: Value, place: Place, node: Node) -> None:
        if name in self.walk.parameters or name in self.walk.shape_parameters or name in self.walk.size_aliases:
            raise Refusal(node, f"assignment to `{name}`, which is used as a loop bound or subscript")
        local = self._scalar_name(name)
        if local in ISL_RESERVED:
            raise Refusal(node, f"local `{name}` is a reserved word of the polyhedral library; rename it")
        self.walk.assigned.setdefault(local, node)
        self.locals.pop(name, None)
        self.emit((), op, lambda index: (Name(local), value.element(())), place, node)

    def _scalar_name(self, name: str) -> str:
        return "_".join((*self.inlining, name))

    def returned(self, node: Node, place: Place) -> None:
        """`return value` or `return a, b`: results the caller gets, allocated by it."""
        values = [c for c in node.named_children if c.type != "comment"]
        if not values:
            return
        parts = values[0].named_children if len(values) == 1 and values[0].type in ("expression_list", "tuple") else values
        self.returns_tuple = len(parts) != 1 or values[0].type in ("expression_list", "tuple")
        for part in parts:
            self.returns.append(self._result(part, place, node))

    def _result(self, part: Node, place: Place, node: Node) -> ReturnValue:
        whole = unparenthesised(part)
        if whole.type == "identifier" and text(whole) not in self.locals and self._is_array_argument(text(whole)):
            return ReturnValue(text(whole))
        if whole.type == "identifier" and text(whole) in self.locals:
            value = self.locals[text(whole)]
            if value.view is not None and self._is_array_argument(value.view.array) and _is_whole(value):
                return ReturnValue(value.view.array)
        elif self._is_product_or_reduction(whole) or _is_creation(whole):
            produced = self._produce(whole, place, node, into=None, name="result")
            assert produced is not None
            value = produced
        else:
            value = self.value(part, place)
        if value.boolean:
            raise Refusal(part, f"`{text(part)}` is a boolean array; boolean results are not modelled")
        if value.rank == 0:
            return self._scalar_result(value, place, node)
        allocation = self._allocation_of(value)
        if allocation is None or any(r.name == allocation.name for r in self.returns):
            value = self.materialize(value, "result", place, node)
            allocation = self._allocation_of(value)
        assert allocation is not None
        self._mark_result(allocation.name)
        return ReturnValue(allocation.name)

    def _scalar_result(self, value: Value, place: Place, node: Node) -> ReturnValue:
        name = self.allocate("result", (Extent(AffineExpr.of_constant(1)),), value.dtype, node, role="result")
        self.emit((), "=", lambda index: (ArrayRef(name, (AffineExpr.of_constant(0),)), value.element(())), place, node)
        return ReturnValue(name, scalar=True)

    def _mark_result(self, name: str) -> None:
        self.allocations = [
            Allocation(a.name, a.shape, a.dtype, "result", a.line) if a.name == name else a for a in self.allocations
        ]

    def _allocation_of(self, value: Value) -> Allocation | None:
        if value.view is None or not _is_whole(value):
            return None
        return next((a for a in self.allocations if a.name == value.view.array and len(a.shape) == value.rank), None)

    # ---- emitting ------------------------------------------------------------------------

    def emit(
        self,
        shape: tuple[Extent, ...],
        op: str,
        body: Callable[[Index], tuple[ArrayRef | Name, Expr]],
        place: Place,
        node: Node,
        reduced: tuple[tuple[Extent, int], ...] = (),
        order: tuple[int, ...] | None = None,
        product: bool = False,
        pairwise: bool = False,
    ) -> None:
        """One statement over implicit loops: the output's dimensions, then `reduced` ones (extent and
        start), run in `order` (indices into output dims then reduced dims; default: as listed)."""
        extents = list(shape) + [extent for extent, _ in reduced]
        starts = [0] * len(shape) + [start for _, start in reduced]
        looped = [position for position in range(len(extents)) if not (_is_one(extents[position]) and starts[position] == 0)]
        names = dict(zip(looped, self._loop_names(len(looped), place), strict=True))
        order = tuple(p for p in (order if order is not None else range(len(extents))) if p in names)
        loops, guards = list(place.loops), list(place.guards)
        line = node.start_point[0] + 1
        for position in order:
            extent, name = extents[position], names[position]
            self._register(extent.size, node, place)
            stop = Bound((extent.size,), "min")
            loops.append(Loop(name, Bound((AffineExpr.of_constant(starts[position]),), "max"), stop, 1, line))
            if extent.divisor != 1:
                guards.append(Condition(AffineExpr.of_variable(name).scaled(extent.divisor), "<", extent.size))
        variables = tuple(
            AffineExpr.of_variable(names[p]) if p in names else AffineExpr.of_constant(0) for p in range(len(extents))
        )
        target, value = body(variables)
        slot = place.counter[0]
        place.counter[0] += 1
        positions = (*place.positions, slot, *([0] * len(order)))
        self.emitted += 1
        cited = self.statement if self.statement is not None else node
        self.walk.statements.append(
            RawStatement(
                cited, tuple(loops), tuple(guards), target, op, value, positions, lowered=True, product=product, pairwise=pairwise
            )
        )

    def _loop_names(self, wanted: int, place: Place) -> list[str]:
        taken = (
            place.scope
            | set(self.walk.arguments)
            | set(self.walk.parameters)
            | set(self.walk.shape_parameters)
            | set(self.walk.assigned)
            | set(self.locals)
            | {a.name for a in self.allocations}
        )
        free = [name for name in LOOP_NAMES if name not in taken]
        free += [f"i{n}" for n in range(wanted) if f"i{n}" not in taken]
        return free[:wanted]

    def _register(self, expr: AffineExpr, node: Node, place: Place) -> None:
        for variable in expr.variables - place.scope:
            if (
                variable not in self.walk.parameters
                and variable not in self.walk.shape_parameters
                and variable not in self.walk.arguments
            ):
                raise Refusal(node, f"`{variable}` in an extent is neither a size nor a loop variable")
            self.walk.parameters[variable] = None

    def allocate(
        self,
        hint: str,
        shape: tuple[Extent, ...],
        dtype: DtypeRule,
        node: Node,
        role: str = "temporary",
        place: Place | None = None,
    ) -> str:
        """A new kernel-local array. Inside loops its extents may grow with the loop variables
        (`A[:i + 1] @ x`): it is allocated at the largest extent the loops reach, and each
        iteration uses its leading part."""
        name = self._allocation_name(hint)
        line = node.start_point[0] + 1
        if place is not None:
            shape = tuple(Extent(_largest(extent.size, place.loops, node), extent.divisor) for extent in shape)
        for extent in shape:
            for variable in extent.size.variables:
                if (
                    variable not in self.walk.parameters
                    and variable not in self.walk.shape_parameters
                    and variable not in self.walk.arguments
                ):
                    raise Refusal(
                        node,
                        f"`{text(node)[:60]}` needs a temporary whose extent depends on loop variable `{variable}`; "
                        "write the statement without a temporary (assign into a slice of an array)",
                    )
                self.walk.parameters[variable] = None
        self.allocations.append(Allocation(name, shape, dtype, role, line))
        self.walk.ranks[name] = len(shape)
        return name

    def _allocation_name(self, hint: str) -> str:
        base = "_".join((*self.inlining, hint)) if hint else "tmp"
        taken = (
            set(self.walk.arguments)
            | set(self.walk.assigned)
            | {a.name for a in self.allocations}
            | set(self.walk.shape_parameters)
        )
        taken |= ISL_RESERVED | set(self.walk.parameters)
        if base not in taken:
            return base
        return next(f"{base}_{n}" for n in count(2) if f"{base}_{n}" not in taken)

    def materialize(self, value: Value, hint: str, place: Place, node: Node) -> Value:
        """Store a value into a new allocation (or a local scalar when it has rank 0)."""
        if value.rank == 0:
            local = self._scalar_name(f"{hint}_{next(self._fresh)}")
            self.walk.assigned.setdefault(local, node)
            self.emit((), "=", lambda index: (Name(local), value.element(())), place, node)
            return Value((), lambda index: Name(local), value.dtype)
        name = self.allocate(hint, value.shape, value.dtype, node, place=place)
        self.emit(value.shape, "=", lambda index: (ArrayRef(name, index), value.element(index)), place, node)
        return self.stored(name, value.shape, value.dtype)

    @staticmethod
    def stored(name: str, shape: tuple[Extent, ...], dtype: DtypeRule) -> Value:
        return Value(shape, lambda index: ArrayRef(name, index), dtype, View(name, lambda index: index))

    def _overwrites_its_reads(self, target: Value, op: str, value: Value, mapper, place: Place) -> bool:
        """Whether writing element by element would read an element this statement already overwrote.

        NumPy evaluates the whole right side first; the loop reads as it goes. They agree unless an
        instance reads a location that an earlier instance (in loop order) wrote. isl decides it;
        when it cannot, the value goes through a temporary."""
        assert target.view is not None
        names = [f"t{n}" for n in range(target.rank)]
        index = tuple(AffineExpr.of_variable(n) for n in names)
        written = target.view.index(index)
        reads = [ref for ref in array_refs(value.element(mapper(index))) if ref.array == target.view.array]
        reads = [ref for ref in reads if ref.indices != written]
        if not reads:
            return False
        extents = target.shape
        mentioned = set().union(*(e.size.variables for e in extents), *(i.variables for i in written))
        mentioned |= set().union(*(i.variables for r in reads for i in r.indices))
        outer = sorted(mentioned - set(names))
        try:
            ctx = isl.Context()
            params = ", ".join(outer)
            primed = [f"{n}_" for n in names]

            def domain(variables: list[str]) -> str:
                parts = []
                for variable, extent in zip(variables, extents, strict=True):
                    parts.append(f"0 <= {variable} and {extent.divisor}*{variable} < {extent.size}")
                return " and ".join(parts) if parts else "true"

            def renamed(expr: AffineExpr) -> str:
                mapping = dict(zip(names, primed, strict=True))
                return str(AffineExpr(tuple(sorted((mapping.get(v, v), c) for v, c in expr.terms)), expr.constant))

            for ref in reads:
                equal = " and ".join(f"{w} = {renamed(r)}" for w, r in zip(written, ref.indices, strict=True)) or "true"
                later = _lex_less(names, primed)
                pair = f"[{', '.join(names)}, {', '.join(primed)}]"
                text_ = f"[{params}] -> {{ {pair} : {domain(names)} and {domain(primed)} and {equal} and ({later}) }}"
                if not isl.Set.read_from_str(ctx, text_).is_empty():
                    return True
            return False
        except isl.Error:
            return True

    # ---- values --------------------------------------------------------------------------

    def value(self, node: Node, place: Place) -> Value:
        """The `Value` of an expression node."""
        kind = node.type
        if kind == "parenthesized_expression":
            return self.value(node.named_children[0], place)
        if kind in ("integer", "float") and text(node)[-1:] in ("j", "J"):
            raise Refusal(node, f"`{text(node)}`: complex numbers are not modelled (real float and integer arrays are)")
        if kind == "integer":
            number = int(text(node).replace("_", ""), 0)
            return Value((), lambda index: Number(number), DtypeRule(("<int>",)))
        if kind == "float":
            number = float(text(node).replace("_", ""))
            return Value((), lambda index: Number(number), DtypeRule(("<float>",)))
        if kind in ("true", "false"):
            return Value((), lambda index: Number(1 if kind == "true" else 0), DtypeRule(("<int>",)), boolean=True)
        if kind == "identifier":
            return self._name(node, place)
        if _is_size(node):
            size = self._integer(node, place)
            return Value((), lambda index: affine_value(size), DtypeRule(("<int>",)))
        if kind == "attribute":
            return self._attribute(node, place)
        if kind == "subscript":
            base = self.value(node.child_by_field_name("value"), place)
            return self._index(base, list(node.children_by_field_name("subscript")), place, node)
        if kind == "unary_operator":
            op = text(node.child_by_field_name("operator"))
            if op not in "-+":
                raise Refusal(node, f"operator `{op}` is not modelled on arrays")
            operand = self.value(node.child_by_field_name("argument"), place)
            if op == "+":
                return operand
            return Value(operand.shape, lambda index: Unary("-", operand.element(index)), operand.dtype)
        if kind == "binary_operator":
            return self._binary(node, place)
        if kind == "comparison_operator":
            return self._comparison(node, place)
        if kind == "boolean_operator":
            op = text(node.child_by_field_name("operator"))
            left, right = self.value(node.child_by_field_name("left"), place), self.value(node.child_by_field_name("right"), place)
            return self._elementwise([left, right], lambda a, b: Binary(op, a, b), node, boolean=True)
        if kind == "conditional_expression":
            then, test, otherwise = (self.value(n, place) for n in node.named_children)
            if then.rank or test.rank or otherwise.rank:
                raise Refusal(node, f"`{text(node)[:60]}`: `x if c else y` of arrays is not modelled; use np.where(c, x, y)")
            return self._elementwise([test, then, otherwise], lambda c, a, b: Choice(c, a, b), node)
        if kind == "call":
            return self._call(node, place)
        what = {
            "list": "lists are not modelled: pass arrays in",
            "list_comprehension": "list comprehensions are not modelled: write an array expression or a loop",
            "lambda": "lambdas are not modelled",
            "string": "strings are not modelled in an array statement",
        }.get(kind, f"`{text(node)[:60]}` ({kind.replace('_', ' ')}) is not modelled in an array statement")
        raise Refusal(node, what)

    def _name(self, node: Node, place: Place) -> Value:
        name = text(node)
        if name in self.locals:
            return self.locals[name]
        if name in self.walk.size_aliases:
            size = self.walk.size_aliases[name]
            self.walk.parameters.update(dict.fromkeys(sorted(size.variables)))
            return Value((), lambda index: affine_value(size), DtypeRule(("<int>",)))
        if name in place.scope or name in self.walk.parameters or name in self.walk.shape_parameters:
            if name not in place.scope:
                self.walk.parameters[name] = None
            return Value((), lambda index: Name(name), DtypeRule(("<int>",)))
        if self._is_array_argument(name):
            rank = self.walk.ranks[name]
            shape = tuple(Extent(self.size(name, d, node)) for d in range(rank))
            return Value(shape, lambda index: ArrayRef(name, index), DtypeRule((name,)), View(name, lambda index: index))
        local = self._scalar_name(name)
        if local in self.walk.assigned:
            return Value((), lambda index: Name(local), DtypeRule(("<float>",)))
        if name in self.walk.arguments:
            if name in self.walk.arrays:
                raise UnknownRank(node, name, self.walk.least_ranks.get(name, 0))
            return Value((), lambda index: Name(name), DtypeRule((name,)))
        if name in NUMPY:
            raise Refusal(node, f"`{name}` used as a value")
        raise Refusal(node, f"`{name}` is not an argument, a loop variable or a local assigned before")

    def _is_array_argument(self, name: str) -> bool:
        return name in self.walk.arguments and self.walk.ranks.get(name, 0) > 0

    def size(self, array: str, dim: int, node: Node) -> AffineExpr:
        """The extent of an argument's dimension: the user's own size name if it has one (`n = A.shape[0]`)."""
        for shape in self.walk.shape_parameters.values():
            if shape.array == array and shape.dim == dim:
                self.walk.parameters[shape.name] = None
                return AffineExpr.of_variable(shape.name)
        name = f"{array}_d{dim}"
        if name in self.walk.arguments:
            raise Refusal(node, f"the size of `{array}` along {dim} would be named `{name}`, which the function already uses")
        self.walk.shape_parameters[name] = ShapeParameter(name, array, dim)
        self.walk.parameters[name] = None
        return AffineExpr.of_variable(name)

    def _attribute(self, node: Node, place: Place) -> Value:
        base, attribute = node.child_by_field_name("object"), text(node.child_by_field_name("attribute"))
        if text(base) in NUMPY:
            if attribute in CONSTANTS:
                number = CONSTANTS[attribute]
                return Value((), lambda index: Number(number), DtypeRule(("<float>",)))
            if attribute == "newaxis":
                raise Refusal(node, "`np.newaxis` is only modelled inside a subscript")
            raise Refusal(node, f"`{text(node)}` is not modelled")
        if text(base) == "math" and attribute in CONSTANTS:
            number = CONSTANTS[attribute]
            return Value((), lambda index: Number(number), DtypeRule(("<float>",)))
        value = self.value(base, place)
        if attribute == "T":
            return _transposed(value, node)
        if attribute in ("real", "imag"):
            raise Refusal(node, f"`.{attribute}`: complex numbers are not modelled (real float and integer arrays are)")
        raise Refusal(node, f"attribute `.{attribute}` is not modelled on arrays (known: .T, and .shape in sizes)")

    def _index(self, base: Value, subscripts: list[Node], place: Place, node: Node) -> Value:
        """Basic indexing: integers (negative from the end), slices with affine bounds, `None`, `...`."""
        items: list[Node] = []
        for item in subscripts:
            items.extend(item.named_children if item.type == "expression_list" else [item])
        if sum(1 for item in items if item.type == "ellipsis") > 1:
            raise Refusal(node, f"`{text(node)}`: at most one `...` in a subscript")
        consumed = sum(1 for item in items if not _is_newaxis(item) and item.type != "ellipsis")
        if consumed > base.rank:
            raise Refusal(node, f"`{text(node)}` indexes {consumed} dimensions of an array of rank {base.rank}")
        expanded: list[Node | None] = []
        for item in items:
            if item.type == "ellipsis":
                expanded.extend([None] * (base.rank - consumed))
            else:
                expanded.append(item)
        expanded.extend([None] * (base.rank - sum(1 for item in expanded if item is None or not _is_newaxis(item))))
        for item in items:
            if item.type in ("list", "comparison_operator", "boolean_operator", "not_operator") or (
                item.type == "identifier" and (self._is_array_argument(text(item)) or text(item) in self.locals)
            ):
                raise Refusal(
                    node,
                    f"`{text(node)}`: index arrays and boolean masks are not modelled in array statements; write a "
                    "masked update as `np.where(condition, new, old)`, and a gather as a loop (`x[idx[j]]`)",
                )
        # Each output dimension maps to (base dim or None, start, step); integer indices fix a base dim.
        fixed: dict[int, AffineExpr] = {}
        outputs: list[tuple[int | None, AffineExpr, int]] = []
        shape: list[Extent] = []
        dim = 0
        for item in expanded:
            if item is not None and _is_newaxis(item):
                outputs.append((None, AffineExpr.of_constant(0), 1))
                shape.append(Extent(AffineExpr.of_constant(1)))
                continue
            extent = base.shape[dim]
            if item is None:
                outputs.append((dim, AffineExpr.of_constant(0), 1))
                shape.append(extent)
            elif item.type == "slice":
                start, step, size = self._slice(item, extent, place)
                outputs.append((dim, start, step))
                shape.append(size)
            else:
                value = self._integer(item, place)
                if value.is_constant and value.constant < 0:
                    value = extent.size + value
                fixed[dim] = value
            dim += 1

        def mapped(index: Index) -> Index:
            result = [AffineExpr.of_constant(0)] * base.rank
            for base_dim, value in fixed.items():
                result[base_dim] = value
            for position, (base_dim, start, step) in enumerate(outputs):
                if base_dim is not None:
                    result[base_dim] = start + index[position].scaled(step)
            return tuple(result)

        view = View(base.view.array, lambda index: base.view.index(mapped(index))) if base.view is not None else None
        return Value(tuple(shape), lambda index: base.element(mapped(index)), base.dtype, view, base.boolean)

    def _integer(self, node: Node, place: Place) -> AffineExpr:
        if node.type in ("slice", "ellipsis"):
            raise Refusal(node, f"`{text(node)}` is not an index")
        try:
            return affine_index(self.walk, node, place.scope)
        except Refusal:
            raise Refusal(
                node, f"index `{text(node)}` is not affine in the loop variables and sizes (index arrays are not modelled)"
            ) from None

    def _slice(self, node: Node, extent: Extent, place: Place) -> tuple[AffineExpr, int, Extent]:
        """A slice's first index, step and length, by Python's rules for in-range bounds."""
        parts: list[Node | None] = [None, None, None]
        slot = 0
        for child in node.children:
            if child.type == ":":
                slot += 1
            elif child.is_named and child.type != "comment":
                parts[slot] = child
        step = 1
        if parts[2] is not None:
            step_expr = self._integer(parts[2], place)
            if not step_expr.is_constant or step_expr.constant == 0:
                raise Refusal(parts[2], f"slice step `{text(parts[2])}` must be a non-zero integer constant")
            step = step_expr.constant
        if extent.divisor != 1:
            raise Refusal(node, f"`{text(node)}`: slicing a strided slice again is not modelled")
        length = extent.size

        def bound(part: Node | None, default: AffineExpr) -> AffineExpr:
            if part is None:
                return default
            value = self._integer(part, place)
            return length + value if value.is_constant and value.constant < 0 else value

        if step > 0:
            start = bound(parts[0], AffineExpr.of_constant(0))
            stop = bound(parts[1], length)
            size = Extent(stop - start, step)
        else:
            start = bound(parts[0], length - AffineExpr.of_constant(1))
            stop = bound(parts[1], AffineExpr.of_constant(-1)) if parts[1] is not None else AffineExpr.of_constant(-1)
            size = Extent(start - stop, -step)
        return start, step, size

    def _binary(self, node: Node, place: Place) -> Value:
        op = _operator(node)
        left_node, right_node = node.child_by_field_name("left"), node.child_by_field_name("right")
        if op == "@":
            return self._produce(node, place, node, into=None) or self._unreachable(node)
        if op not in ARRAY_OPERATORS:
            raise Refusal(node, f"operator `{op}` is not modelled on arrays (known: {' '.join(ARRAY_OPERATORS)} @)")
        left, right = self.value(left_node, place), self.value(right_node, place)
        floating = op == "/"
        value = self._elementwise([left, right], lambda a, b: Binary(op, a, b), node)
        if floating:
            return Value(value.shape, value.element, DtypeRule(value.dtype.sources, True, value.dtype.fixed))
        return value

    @staticmethod
    def _unreachable(node: Node) -> Value:
        raise Refusal(node, f"`{text(node)[:60]}` produced no value")

    def _comparison(self, node: Node, place: Place) -> Value:
        operands = [self.value(operand, place) for operand in node.named_children]
        operators = [text(op) for op in node.children_by_field_name("operators")]
        if len(operators) != 1 or operators[0] not in ("<", "<=", ">", ">=", "==", "!="):
            raise Refusal(node, f"comparison `{text(node)}`: one of < <= > >= == != between two values")
        return self._elementwise(operands, lambda a, b: Binary(operators[0], a, b), node, boolean=True)

    def _elementwise(self, values: list[Value], combine: Callable[..., Expr], node: Node, boolean: bool = False) -> Value:
        shape, mappers = _broadcast([v.shape for v in values], node)
        self._equate([v.shape for v in values], shape)
        dtype = DtypeRule()
        for value in values:
            if not value.boolean:
                dtype = dtype.merged(value.dtype)

        def element(index: Index) -> Expr:
            return combine(*(value.element(mapper(index)) for value, mapper in zip(values, mappers, strict=True)))

        return Value(shape, element, dtype, None, boolean)

    # ---- calls ---------------------------------------------------------------------------

    def _call(self, node: Node, place: Place) -> Value:
        callee = node.child_by_field_name("function")
        arguments = [a for a in node.child_by_field_name("arguments").named_children if a.type != "comment"]
        positional = [a for a in arguments if a.type != "keyword_argument"]
        keywords = {
            text(a.child_by_field_name("name")): a.child_by_field_name("value") for a in arguments if a.type == "keyword_argument"
        }
        if any(a.type in ("list_splat", "dictionary_splat") for a in arguments):
            raise Refusal(node, f"`{text(node)[:60]}`: `*args` and `**kwargs` in calls are not modelled")
        if callee.type == "identifier":
            name = text(callee)
            if name in self.helpers:
                return self._inline(name, positional, keywords, place, node)
            if name in ("abs", "min", "max", "float", "int"):
                return self._builtin(name, positional, place, node)
            if name == "len":
                raise Refusal(node, "`len(...)` is a size: use it in a bound, an index or a slice")
            raise Refusal(node, f"call `{name}(...)`: not a function of this module, nor a NumPy or math function")
        if callee.type != "attribute":
            raise Refusal(node, f"call `{text(callee)[:40]}` is not modelled")
        owner, method = callee.child_by_field_name("object"), text(callee.child_by_field_name("attribute"))
        if text(owner) in NUMPY:
            return self._numpy(method, positional, keywords, place, node)
        if text(owner) == "math":
            if method in ELEMENTWISE or method == "pow":
                return self._numpy("power" if method == "pow" else method, positional, keywords, place, node)
            raise Refusal(node, f"`math.{method}` is not modelled")
        root = owner
        while root.type == "attribute":
            root = root.child_by_field_name("object")
        if text(owner) in (f"{np}.linalg" for np in NUMPY):
            raise Refusal(
                node,
                f"`{text(callee)}` is not modelled: write a product with `@` and a norm as `np.sqrt(np.sum(x * x))`",
            )
        if root.type == "identifier" and text(root) not in self.locals and text(root) not in self.walk.arguments:
            raise Refusal(
                node,
                f"call `{text(callee)}`: module `{text(owner)}` is unknown here (NumPy, math and this module's functions are)",
            )
        value = self.value(owner, place)
        if method in REDUCTIONS:
            return self._produce(node, place, node, into=None) or self._unreachable(node)
        if method == "copy":
            return self.materialize(value, "copy", place, node)
        if method == "astype":
            if not positional:
                raise Refusal(node, "`.astype()` needs a dtype")
            dtype = self._dtype(positional[0])
            return Value(value.shape, value.element, DtypeRule(fixed=dtype), None)
        if method == "dot":
            return self._produce(node, place, node, into=None) or self._unreachable(node)
        if method == "transpose":
            return _transposed(value, node)
        raise Refusal(node, f"method `.{method}()` is not modelled (known: .sum .max .min .mean .prod .copy .astype .dot .T)")

    def _builtin(self, name: str, positional: list[Node], place: Place, node: Node) -> Value:
        values = [self.value(a, place) for a in positional]
        if name in ("float", "int"):
            if len(values) != 1 or values[0].rank:
                raise Refusal(node, f"`{name}(...)` takes one scalar")
            inner = values[0]
            return Value((), lambda index: Call("float", (inner.element(()),)), DtypeRule(("<float>",)))
        if name == "abs":
            if len(values) != 1:
                raise Refusal(node, "`abs` takes one argument")
            return self._elementwise(values, lambda a: Call("abs", (a,)), node)
        if len(values) < 2:
            raise Refusal(node, f"`{name}` of values needs at least two arguments (use np.{name} to reduce an array)")
        return self._elementwise(values, lambda *xs: Call(name, tuple(xs)), node)

    def _numpy(self, function: str, positional: list[Node], keywords: dict[str, Node], place: Place, node: Node) -> Value:
        if function in UNSUPPORTED:
            raise Refusal(node, UNSUPPORTED[function])
        if function == "arange":
            return self._arange(positional, keywords, place, node)
        if function in ELEMENTWISE:
            values = self._positional(function, positional, 1, place, node)
            value = self._elementwise(values, lambda a: Call(ELEMENTWISE[function], (a,), "np"), node)
            floating = function in FLOATING_CALLS
            return Value(
                value.shape, value.element, DtypeRule(value.dtype.sources, value.dtype.floating or floating, value.dtype.fixed)
            )
        if function in ("maximum", "minimum", "fmax", "fmin"):
            values = self._positional(function, positional, 2, place, node)
            call = "max" if function in ("maximum", "fmax") else "min"
            if function in ("fmax", "fmin"):
                return self._elementwise(values, lambda a, b: _ignoring_nan(call, a, b), node)
            return self._elementwise(values, lambda a, b: Call(call, (a, b), "np"), node)
        if function in ("arctan2", "atan2"):
            values = self._positional(function, positional, 2, place, node)
            value = self._elementwise(values, lambda a, b: Call("atan2", (a, b), "np"), node)
            return Value(value.shape, value.element, DtypeRule(value.dtype.sources, True, value.dtype.fixed))
        if function in ("power",):
            values = self._positional(function, positional, 2, place, node)
            return self._elementwise(values, lambda a, b: Binary("**", a, b), node)
        if function == "square":
            values = self._positional(function, positional, 1, place, node)
            return self._elementwise(values, lambda a: Binary("*", a, a), node)
        if function == "negative":
            values = self._positional(function, positional, 1, place, node)
            return self._elementwise(values, lambda a: Unary("-", a), node)
        if function == "where":
            values = self._positional(function, positional, 3, place, node)
            return self._elementwise(values, lambda c, a, b: Choice(c, a, b), node)
        if function == "clip":
            values = self._positional(function, positional, 3, place, node)
            return self._elementwise(values, lambda x, lo, hi: Call("min", (Call("max", (x, lo), "np"), hi), "np"), node)
        if function in REDUCTIONS or function in ("dot", "matmul", "outer"):
            if function == "outer":
                left, right = self._positional(function, positional, 2, place, node)
                if left.rank != 1 or right.rank != 1:
                    raise Refusal(node, "`np.outer` of arrays other than vectors is not modelled")
                return self._elementwise([_column(left), right], lambda a, b: Binary("*", a, b), node)
            return self._produce(node, place, node, into=None) or self._unreachable(node)
        if function in ("transpose",):
            (value,) = self._positional(function, positional, 1, place, node)
            if "axes" in keywords or len(positional) > 1:
                raise Refusal(node, "`np.transpose` with `axes` is not modelled; only the 2-d transpose")
            return _transposed(value, node)
        if function == "copy":
            (value,) = self._positional(function, positional, 1, place, node)
            return self.materialize(value, "copy", place, node)
        if function in CREATIONS:
            return self._produce(node, place, node, into=None) or self._unreachable(node)
        if function in DTYPES:
            (value,) = self._positional(function, positional, 1, place, node)
            return Value(value.shape, value.element, DtypeRule(fixed=DTYPES[function]))
        if function in ("sign", "isnan", "isinf", "any", "all", "argmax", "argmin", "nonzero", "sort"):
            raise Refusal(node, f"`np.{function}` is not modelled yet")
        raise Refusal(node, f"`np.{function}` is not modelled")

    def _arange(self, positional: list[Node], keywords: dict[str, Node], place: Place, node: Node) -> Value:
        """`np.arange(stop)`, `(start, stop)` or `(start, stop, step)` over integer sizes: its element k is
        `start + k * step`, computed where it is used, never stored."""
        if keywords or not 1 <= len(positional) <= 3:
            raise Refusal(node, "`np.arange` is modelled with one to three integer arguments, no keywords")
        try:
            bounds = [affine_index(self.walk, argument, place.scope) for argument in positional]
        except Refusal as refusal:
            raise Refusal(
                refusal.node,
                f"`np.arange` over `{text(refusal.node)}`: its bounds must be integers affine in the sizes "
                "(for a float range, pass the array in)",
            ) from None
        start, stop = (AffineExpr.of_constant(0), bounds[0]) if len(bounds) == 1 else (bounds[0], bounds[1])
        step = bounds[2].constant if len(bounds) == 3 and bounds[2].is_constant else 1
        if len(bounds) == 3 and (not bounds[2].is_constant or step == 0):
            raise Refusal(positional[2], f"`np.arange` step `{text(positional[2])}` must be a nonzero integer constant")
        extent = Extent(stop - start, step) if step > 0 else Extent(start - stop, -step)
        return Value((extent,), lambda index: affine_value(start + index[0].scaled(step)), DtypeRule(fixed="int64"))

    def _positional(self, function: str, nodes: list[Node], wanted: int, place: Place, node: Node) -> list[Value]:
        if len(nodes) != wanted:
            raise Refusal(node, f"`np.{function}` takes {wanted} positional argument(s) here, got {len(nodes)}")
        return [self.value(n, place) for n in nodes]

    def _dtype(self, node: Node) -> str:
        name = text(node).rpartition(".")[2].strip("'\"")
        if name not in DTYPES:
            raise Refusal(node, f"dtype `{text(node)}` is not modelled (known: {', '.join(sorted(set(DTYPES.values())))})")
        return DTYPES[name]

    def _inline(self, name: str, positional: list[Node], keywords: dict[str, Node], place: Place, node: Node) -> Value:
        """A call to a function of the same module: its body, with its parameters bound to the values passed."""
        if name in self.inlining:
            raise Refusal(node, f"`{name}` calls itself; recursion is not modelled")
        function = self.helpers[name]
        parameters = [p for p in function.child_by_field_name("parameters").named_children if p.type != "comment"]
        names = []
        for parameter in parameters:
            identifier = (
                parameter
                if parameter.type == "identifier"
                else parameter.child_by_field_name("name") or parameter.named_children[0]
            )
            if identifier.type != "identifier":
                raise Refusal(parameter, f"`{name}`'s parameter `{text(parameter)}` is not a plain name")
            names.append(text(identifier))
        bound: dict[str, Value] = {}
        for parameter_name, argument in zip(names, positional, strict=False):
            bound[parameter_name] = self.value(argument, place)
        for keyword, argument in keywords.items():
            if keyword not in names:
                raise Refusal(argument, f"`{name}` has no parameter `{keyword}`")
            bound[keyword] = self.value(argument, place)
        missing = [n for n in names if n not in bound]
        if missing:
            raise Refusal(node, f"call of `{name}` gives no value for {', '.join(missing)}")
        outer_locals = self.locals
        self.locals = {key: value for key, value in bound.items()}
        self.inlining = (*self.inlining, name)
        try:
            return self._inline_body(name, function, place)
        finally:
            self.locals = outer_locals
            self.inlining = self.inlining[:-1]

    def _inline_body(self, name: str, function: Node, place: Place) -> Value:
        body = [c for c in function.child_by_field_name("body").named_children if c.type != "comment"]
        if body and body[0].type == "expression_statement" and body[0].named_children[0].type == "string":
            body = body[1:]
        for statement in body[:-1]:
            inner = statement.named_children[0] if statement.type == "expression_statement" else statement
            if inner.type not in ("assignment", "augmented_assignment"):
                raise Refusal(statement, f"`{name}` is inlined: only assignments and a final `return` are modelled in it")
            self.assignment(inner, place)
        if not body or body[-1].type != "return_statement" or not body[-1].named_children:
            raise Refusal(function, f"`{name}` is inlined: it must end with `return value`")
        returned = body[-1].named_children[0]
        whole = unparenthesised(returned)
        if self._is_product_or_reduction(whole) or _is_creation(whole):
            value = self._produce(whole, place, whole, into=None, name=f"{name}_out")
            assert value is not None
            return value
        return self.value(returned, place)

    # ---- products, reductions and creations (materialized) ----------------------------------

    def _is_product_or_reduction(self, node: Node) -> bool:
        if node.type == "binary_operator" and _operator(node) == "@":
            return True
        if node.type != "call":
            return False
        callee = node.child_by_field_name("function")
        if callee.type != "attribute":
            return False
        owner, method = text(callee.child_by_field_name("object")), text(callee.child_by_field_name("attribute"))
        if owner in NUMPY:
            return method in REDUCTIONS or method in ("dot", "matmul")
        return method in REDUCTIONS or method == "dot"

    def _produce(self, node: Node, place: Place, statement: Node, into: Value | None, name: str = "") -> Value | None:
        """Lower a product, reduction or creation into `into` (a stored target), or into a new
        allocation whose value is returned. Returns None when it wrote `into` itself."""
        node = unparenthesised(node)
        if _is_creation(node):
            return self._creation(node, place, statement, name)
        if node.type == "binary_operator":
            left, right = self.value(node.child_by_field_name("left"), place), self.value(node.child_by_field_name("right"), place)
            return self._matmul(left, right, place, statement, into, name, node)
        callee = node.child_by_field_name("function")
        arguments = [a for a in node.child_by_field_name("arguments").named_children if a.type != "comment"]
        positional = [a for a in arguments if a.type != "keyword_argument"]
        keywords = {
            text(a.child_by_field_name("name")): a.child_by_field_name("value") for a in arguments if a.type == "keyword_argument"
        }
        owner, method = callee.child_by_field_name("object"), text(callee.child_by_field_name("attribute"))
        if text(owner) not in NUMPY:
            positional = [owner, *positional]
        if method in ("dot", "matmul"):
            if len(positional) != 2:
                raise Refusal(node, f"`{method}` takes two arrays")
            left, right = (self.value(p, place) for p in positional)
            return self._matmul(left, right, place, statement, into, name, node)
        if not positional:
            raise Refusal(node, f"`{method}` needs an array")
        operand = self.value(positional[0], place)
        axis_node = keywords.get("axis", positional[1] if len(positional) > 1 else None)
        keepdims_node = keywords.get("keepdims")
        unknown = set(keywords) - {"axis", "keepdims"}
        if unknown or len(positional) > 2:
            raise Refusal(node, f"`{text(node)[:60]}`: only `axis=` and `keepdims=` are modelled for reductions")
        keepdims = keepdims_node is not None and text(keepdims_node) == "True"
        if keepdims_node is not None and text(keepdims_node) not in ("True", "False"):
            raise Refusal(keepdims_node, "`keepdims=` must be True or False")
        axes = self._axes(axis_node, operand.rank)
        kind = {"amax": "max", "amin": "min"}.get(method, method)
        return self._reduce(kind, operand, axes, keepdims, place, statement, into, name, node)

    def _axes(self, node: Node | None, rank: int) -> tuple[int, ...]:
        if node is None or text(node) == "None":
            return tuple(range(rank))
        items = node.named_children if node.type == "tuple" else [node]
        axes = []
        for item in items:
            try:
                value = int(text(item))
            except ValueError:
                raise Refusal(item, f"axis `{text(item)}` must be an integer constant") from None
            if not -rank <= value < rank:
                hint = RANK_HINT if rank == 0 else ""
                raise Refusal(item, f"axis {value} is out of range for an array of rank {rank}{hint}")
            axes.append(value % rank)
        return tuple(sorted(set(axes)))

    def _output(
        self,
        shape: tuple[Extent, ...],
        dtype: DtypeRule,
        into: Value | None,
        name: str,
        node: Node,
        reads: set[str],
        place: Place,
    ) -> tuple[Value, bool]:
        """Where a produced value goes: the caller's target when it does not read it, else a new allocation."""
        if into is not None and into.view is not None and into.view.array not in reads and into.rank == len(shape):
            return into, True
        if not shape:
            local = self._scalar_name(f"{name or 'acc'}_{next(self._fresh)}")
            self.walk.assigned.setdefault(local, node)
            return Value((), lambda index: Name(local), dtype), False
        allocation = self.allocate(name or "tmp", shape, dtype, node, place=place)
        return self.stored(allocation, shape, dtype), False

    def _reduce(
        self,
        kind: str,
        operand: Value,
        axes: tuple[int, ...],
        keepdims: bool,
        place: Place,
        statement: Node,
        into: Value | None,
        name: str,
        node: Node,
    ) -> Value | None:
        if operand.boolean:
            raise Refusal(node, f"`{text(node)[:60]}`: reductions of boolean arrays are not modelled")
        kept = [d for d in range(operand.rank) if d not in axes]
        out_shape = (
            tuple(Extent(AffineExpr.of_constant(1)) if d in axes else operand.shape[d] for d in range(operand.rank))
            if keepdims
            else tuple(operand.shape[d] for d in kept)
        )
        dtype = operand.dtype if kind != "mean" else DtypeRule(operand.dtype.sources, True, operand.dtype.fixed)
        reads = _arrays_read(operand)
        target, direct = self._output(out_shape, dtype, into, name or REDUCTION_NAMES[kind], node, reads, place)
        out_positions = {d: (d if keepdims else kept.index(d)) for d in kept}
        # loops: kept dims are output dims; reduced dims follow, in the operand's own order
        reduced = [(operand.shape[d], 0) for d in axes]

        def out_index(index: Index) -> Index:
            return index[: len(out_shape)]

        def full_index(index: Index, first: bool = False) -> Index:
            full = []
            for d in range(operand.rank):
                if d in axes:
                    full.append(AffineExpr.of_constant(0) if first else index[len(out_shape) + axes.index(d)])
                else:
                    full.append(index[out_positions[d]])
            return tuple(full)

        def store_ref(index: Index) -> ArrayRef | Name:
            element = target.element(out_index(index))
            if target.view is not None:
                return ArrayRef(target.view.array, target.view.index(out_index(index)))
            assert isinstance(element, Name)
            return element

        init_shape = out_shape
        init: Callable[[Index], Expr]
        if kind in ("sum", "mean"):
            init = lambda index: Number(0)  # noqa: E731
        elif kind == "prod":
            init = lambda index: Number(1)  # noqa: E731
        else:
            init = lambda index: operand.element(full_index(index, first=True))  # noqa: E731
        if any(operand.shape[d].divisor != 1 for d in axes) and kind in ("max", "min", "mean"):
            raise Refusal(node, f"`{text(node)[:60]}`: a {kind} over a strided slice is not modelled")
        self.emit(init_shape, "=", lambda index: (store_ref(index), init(index)), place, statement)

        def update(index: Index) -> tuple[ArrayRef | Name, Expr]:
            ref = store_ref(index)
            element = operand.element(full_index(index))
            return ref, (Call(kind, (ref, element), "np") if kind in ("max", "min") else element)

        op = {"sum": "+=", "mean": "+=", "prod": "*=", "max": "=", "min": "="}[kind]
        unit_dims = tuple(range(len(out_shape)))
        self.emit(
            out_shape,
            op,
            update,
            place,
            statement,
            tuple(reduced),
            _reduction_order(unit_dims, operand.rank, axes, out_positions),
            pairwise=kind in ("sum", "mean"),
        )
        if kind == "mean":
            count_expr = affine_value(_product_of([operand.shape[d].size for d in axes], node))
            self.emit(out_shape, "/=", lambda index: (store_ref(index), count_expr), place, statement)
        return None if direct else target

    def _matmul(
        self, left: Value, right: Value, place: Place, statement: Node, into: Value | None, name: str, node: Node
    ) -> Value | None:
        if left.rank not in (1, 2) or right.rank not in (1, 2):
            raise Refusal(
                node, f"`{text(node)[:60]}`: products of arrays of rank {left.rank} and {right.rank} are not modelled (1 or 2)"
            )
        if left.rank == 0 or right.rank == 0:
            raise Refusal(node, "`@` of a scalar: use `*`" + RANK_HINT)
        left, right = self._read_operand(left, place, node), self._read_operand(right, place, node)
        contraction = left.shape[-1]
        out_shape = tuple(left.shape[:-1]) + tuple(right.shape[1:] if right.rank == 2 else ())
        dtype = left.dtype.merged(right.dtype)
        reads = _arrays_read(left) | _arrays_read(right)
        target, direct = self._output(out_shape, dtype, into, name or "product", node, reads, place)
        rows = 1 if left.rank == 2 else 0
        out_rank = len(out_shape)

        def parts(index: Index) -> tuple[Index, Index, Index]:
            out, k = index[:out_rank], index[out_rank]
            left_index = ((out[0],) if rows else ()) + (k,)
            right_index = (k,) + ((out[rows],) if right.rank == 2 else ())
            return out, left_index, right_index

        def store_ref(out: Index) -> ArrayRef | Name:
            if target.view is not None:
                return ArrayRef(target.view.array, target.view.index(out))
            element = target.element(out)
            assert isinstance(element, Name)
            return element

        self.emit(out_shape, "=", lambda index: (store_ref(index), Number(0)), place, statement)

        def update(index: Index) -> tuple[ArrayRef | Name, Expr]:
            out, left_index, right_index = parts(index)
            return store_ref(out), Binary("*", left.element(left_index), right.element(right_index))

        # i, k, j: the contraction outside the output's last (contiguous) dimension
        order = (
            (0, out_rank, 1) if out_rank == 2 else ((out_rank, 0) if rows == 0 and out_rank == 1 else tuple(range(out_rank + 1)))
        )
        self.emit(out_shape, "+=", update, place, statement, ((contraction, 0),), order, product=True)
        return None if direct else target

    def _read_operand(self, operand: Value, place: Place, node: Node) -> Value:
        """A product's operand as a BLAS call can read it. An array (a slice, a transpose, times
        scalars) stays as it is; any other expression (`softmax(s) @ v`: `e / sums`) is stored
        first, as NumPy stores it, so that the product may run as one BLAS call. A schedule that
        fuses the operand back into the product's loops shrinks it again (array contraction)."""
        if operand.view is not None or operand.rank == 0:
            return operand
        probe = tuple(AffineExpr.of_variable(f"rp_d{d}") for d in range(operand.rank))
        if _scaled_read(operand.element(probe)):
            return operand
        return self.materialize(operand, "operand", place, node)

    def _creation(self, node: Node, place: Place, statement: Node, name: str) -> Value:
        function = text(node.child_by_field_name("function")).rpartition(".")[2]
        arguments = [a for a in node.child_by_field_name("arguments").named_children if a.type != "comment"]
        positional = [a for a in arguments if a.type != "keyword_argument"]
        keywords = {
            text(a.child_by_field_name("name")): a.child_by_field_name("value") for a in arguments if a.type == "keyword_argument"
        }
        if not positional:
            raise Refusal(node, f"`np.{function}` needs a shape")
        if function.endswith("_like"):
            like = self.value(positional[0], place)
            shape, dtype = like.shape, like.dtype
        else:
            shape, dtype = self._shape(positional[0], place), DtypeRule(fixed="float64")
        if "dtype" in keywords:
            dtype = DtypeRule(fixed=self._dtype(keywords["dtype"]))
        fill: Value | None = None
        if function.startswith("full"):
            if len(positional) < 2 and "fill_value" not in keywords:
                raise Refusal(node, f"`np.{function}` needs a fill value")
            fill = self.value(keywords.get("fill_value", positional[1] if len(positional) > 1 else positional[0]), place)
            if not function.endswith("_like") and "dtype" not in keywords:
                dtype = DtypeRule(fill.dtype.sources)
        elif function.startswith("zeros"):
            fill = Value((), lambda index: Number(0), dtype)
        elif function.startswith("ones"):
            fill = Value((), lambda index: Number(1), dtype)
        allocation = self.allocate(name or function, shape, dtype, node)
        if fill is not None:
            value = fill
            mapper = _broadcast_to(value, shape, node)
            self.emit(shape, "=", lambda index: (ArrayRef(allocation, index), value.element(mapper(index))), place, statement)
        return self.stored(allocation, shape, dtype)

    def _shape(self, node: Node, place: Place) -> tuple[Extent, ...]:
        node = unparenthesised(node)
        if node.type == "attribute" and text(node.child_by_field_name("attribute")) == "shape":
            return self.value(node.child_by_field_name("object"), place).shape
        items = node.named_children if node.type == "tuple" else [node]
        extents = []
        for item in items:
            try:
                extents.append(Extent(affine_index(self.walk, item, place.scope)))
            except Refusal as refusal:
                raise Refusal(
                    item,
                    f"size `{text(item)}` of a new array: {refusal.message}; a size is built from integer arguments "
                    "and array sizes (`x.shape[0]`, `len(x)`) with +, - and * by a constant",
                ) from None
        return tuple(extents)


# ---- pure helpers --------------------------------------------------------------------------


def _ignoring_nan(function: str, a: Expr, b: Expr) -> Expr:
    """`np.fmax(a, b)` (or `fmin`): the other value where one is NaN, NaN only where both are. A `Call` with the
    NumPy module is `np.maximum`, which propagates NaN; this is spelled with the comparisons the model has."""
    return Choice(Binary("!=", a, a), b, Choice(Binary("!=", b, b), a, Call(function, (a, b), "np")))


def _operator(node: Node) -> str:
    operator = node.child_by_field_name("operator")
    return text(operator) if operator is not None else ""


def _scaled_read(expr: Expr) -> bool:
    """Whether `expr` is one array element times (or over) factors that read no array: `alpha * A[i, k]`."""
    if isinstance(expr, ArrayRef):
        return True
    if isinstance(expr, Unary) and expr.op == "-":
        return _scaled_read(expr.operand)
    if isinstance(expr, Binary) and expr.op in ("*", "/"):
        left, right = array_refs(expr.left), array_refs(expr.right)
        if expr.op == "*" and not left:
            return _scaled_read(expr.right)
        return not right and _scaled_read(expr.left)
    return False


def _is_subscripted(node: Node) -> bool:
    parent = node.parent
    return parent is not None and parent.type == "subscript" and parent.child_by_field_name("value") == node


def _is_shape_read(node: Node) -> bool:
    parent = node.parent
    if (
        parent is not None
        and parent.type == "attribute"
        and text(parent.child_by_field_name("attribute")) in ("shape", "ndim", "size")
    ):
        return True
    return (
        parent is not None
        and parent.type == "argument_list"
        and parent.parent is not None
        and text(parent.parent.child_by_field_name("function")) == "len"
    )


def _subscript_count(node: Node) -> int:
    total = 0
    while node.type == "subscript":
        for item in node.children_by_field_name("subscript"):
            total += len(item.named_children) if item.type == "expression_list" else 1
        node = node.child_by_field_name("value")
    return total


def _subscript_base(node: Node) -> str:
    while node.type == "subscript":
        node = node.child_by_field_name("value")
    return text(node) if node.type == "identifier" else ""


def _is_size(node: Node) -> bool:
    """`A.shape[k]` or `len(A)`: an integer size, not an array."""
    if node.type == "subscript":
        base = node.child_by_field_name("value")
        return base.type == "attribute" and text(base.child_by_field_name("attribute")) == "shape"
    return node.type == "call" and text(node.child_by_field_name("function")) == "len"


def _is_newaxis(node: Node) -> bool:
    return node.type == "none" or text(node) in ("np.newaxis", "numpy.newaxis")


def _is_creation(node: Node) -> bool:
    if node.type != "call":
        return False
    callee = node.child_by_field_name("function")
    return (
        callee.type == "attribute"
        and text(callee.child_by_field_name("object")) in NUMPY
        and text(callee.child_by_field_name("attribute")) in CREATIONS
    )


def _is_whole(value: Value) -> bool:
    """Whether a view covers its array exactly, in order (`A`, not `A[1:]` or `A.T`)."""
    if value.view is None:
        return False
    probe = tuple(AffineExpr.of_variable(f"_w{d}") for d in range(value.rank))
    return value.view.index(probe) == probe


def _transposed(value: Value, node: Node) -> Value:
    if value.rank == 1:
        return value
    if value.rank != 2:
        raise Refusal(node, f"`{text(node)[:60]}`: the transpose of an array of rank {value.rank} is not modelled (2-d only)")
    view = View(value.view.array, lambda index: value.view.index((index[1], index[0]))) if value.view is not None else None
    return Value(
        (value.shape[1], value.shape[0]), lambda index: value.element((index[1], index[0])), value.dtype, view, value.boolean
    )


def _column(value: Value) -> Value:
    """A vector as an (n, 1) column, for `np.outer`."""
    return Value((value.shape[0], Extent(AffineExpr.of_constant(1))), lambda index: value.element((index[0],)), value.dtype)


def _is_one(extent: Extent) -> bool:
    return extent.divisor == 1 and extent.size.is_constant and extent.size.constant == 1


def _broadcast(shapes: list[tuple[Extent, ...]], node: Node) -> tuple[tuple[Extent, ...], list[Callable[[Index], Index]]]:
    """NumPy's broadcasting: shapes aligned at the right; a dimension of extent 1 stretches."""
    rank = max((len(shape) for shape in shapes), default=0)
    result: list[Extent] = []
    for position in range(rank):
        extents = [shape[position - (rank - len(shape))] for shape in shapes if position >= rank - len(shape)]
        wide = [extent for extent in extents if not _is_one(extent)]
        if not wide:
            result.append(Extent(AffineExpr.of_constant(1)))
            continue
        first = wide[0]
        for other in wide[1:]:
            if other != first and other.size.is_constant and first.size.is_constant:
                raise Refusal(node, f"`{text(node)[:60]}`: extents {first} and {other} do not broadcast")
        result.append(first)
    mappers = []
    for shape in shapes:
        offset = rank - len(shape)

        def mapper(index: Index, shape: tuple[Extent, ...] = shape, offset: int = offset) -> Index:
            return tuple(
                AffineExpr.of_constant(0) if _is_one(extent) and not _is_one(result[d + offset]) else index[d + offset]
                for d, extent in enumerate(shape)
            )

        mappers.append(mapper)
    return tuple(result), mappers


def _broadcast_to(value: Value, shape: tuple[Extent, ...], node: Node) -> Callable[[Index], Index]:
    """How the target's index reads the value; the value's shape must broadcast to the target's."""
    if value.rank > len(shape):
        raise Refusal(node, f"`{text(node)[:60]}` has rank {value.rank}; the target has rank {len(shape)}")
    offset = len(shape) - value.rank
    for d, extent in enumerate(value.shape):
        wanted = shape[d + offset]
        if not _is_one(extent) and extent != wanted and extent.size.is_constant and wanted.size.is_constant:
            raise Refusal(node, f"`{text(node)[:60]}`: extent {extent} does not broadcast to the target's {wanted}")

    def mapper(index: Index) -> Index:
        return tuple(
            AffineExpr.of_constant(0) if _is_one(extent) and not _is_one(shape[d + offset]) else index[d + offset]
            for d, extent in enumerate(value.shape)
        )

    return mapper


def _arrays_read(value: Value) -> set[str]:
    probe = tuple(AffineExpr.of_variable(f"_r{d}") for d in range(value.rank))
    return {ref.array for ref in array_refs(value.element(probe))}


def _largest(size: AffineExpr, loops: tuple[Loop, ...], node: Node) -> AffineExpr:
    """An upper bound of `size` over the loops' ranges, free of their variables: each variable is
    replaced by the end of its range that makes the size larger, innermost loop first."""
    for loop in reversed(loops):
        coefficient = dict(size.terms).get(loop.name, 0)
        if coefficient == 0:
            continue
        direction = 1 if loop.step > 0 else -1
        towards_stop = (coefficient > 0) == (direction > 0)
        bound = loop.stop if towards_stop else loop.start
        if len(bound.pieces) != 1:
            raise Refusal(
                node, f"`{text(node)[:60]}` needs a temporary whose extent follows loop `{loop.name}`, whose bound is a min/max"
            )
        end = bound.pieces[0] - AffineExpr.of_constant(direction) if towards_stop else bound.pieces[0]
        rest = AffineExpr(tuple((n, c) for n, c in size.terms if n != loop.name), size.constant)
        size = rest + end.scaled(coefficient)
    return size


def _lex_less(first: list[str], second: list[str]) -> str:
    """isl text for `first` before `second` in lexicographic order."""
    clauses = []
    for position in range(len(first)):
        equal = [f"{a} = {b}" for a, b in zip(first[:position], second[:position], strict=True)]
        clauses.append(" and ".join([*equal, f"{first[position]} < {second[position]}"]))
    return " or ".join(f"({c})" for c in clauses) if clauses else "false"


def _product_of(sizes: list[AffineExpr], node: Node) -> AffineExpr:
    if len(sizes) == 1:
        return sizes[0]
    constants = [s for s in sizes if s.is_constant]
    symbolic = [s for s in sizes if not s.is_constant]
    if len(symbolic) > 1:
        raise Refusal(node, f"`{text(node)[:60]}`: a mean over several symbolic axes is not modelled; divide the sum")
    factor = 1
    for constant in constants:
        factor *= constant.constant
    return symbolic[0].scaled(factor) if symbolic else AffineExpr.of_constant(factor)


def _reduction_order(
    unit_dims: tuple[int, ...], operand_rank: int, axes: tuple[int, ...], out_positions: dict[int, int]
) -> tuple[int, ...]:
    """Loops of a reduction in the operand's own dimension order, so its elements are read in memory order.

    Kept unit dimensions of `keepdims` (which have no operand dimension) run outermost."""
    order: list[int] = [d for d in unit_dims if d not in out_positions.values()]
    for d in range(operand_rank):
        order.append(out_positions[d] if d in out_positions else len(unit_dims) + axes.index(d))
    return tuple(order)
