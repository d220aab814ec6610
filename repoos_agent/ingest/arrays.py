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
from dataclasses import dataclass, field, replace
from itertools import count

import islpy as isl
from tree_sitter import Node

from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import (
    CONSTANTS,
    ISL_RESERVED,
    LoopHeader,
    RawStatement,
    Refusal,
    UnknownRank,
    Walk,
    affine_index,
    affine_value,
    index_tuple_refusal,
    literal_default,
    loop_variable,
    range_arguments,
    shape_read,
    unparenthesised,
)
from repoos_agent.model.affine import AffineExpr, Bound
from repoos_agent.model.expr import (
    MATH_FUNCTIONS,
    ArrayRef,
    Binary,
    Call,
    Cast,
    Choice,
    Expr,
    Name,
    Number,
    Unary,
    array_refs,
)
from repoos_agent.model.kernel import Allocation, Condition, DtypeRule, Extent, Loop, ReturnValue, ShapeParameter

Index = tuple[AffineExpr, ...]
LOOP_NAMES = ("i", "j", "k", "l", "p", "q", "r", "s", "u", "v", "w", "x", "y", "z")
ELEMENTWISE = {
    "exp": "exp", "log": "log", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh",
    "abs": "abs", "absolute": "abs", "fabs": "fabs", "floor": "floor", "ceil": "ceil",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "asin": "asin", "acos": "acos", "atan": "atan",
}  # fmt: skip
FLOATING_CALLS = frozenset(
    {"exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "fabs", "floor", "ceil", "arcsin", "arccos", "arctan"}
)
REDUCTIONS = frozenset({"sum", "max", "min", "mean", "prod", "amax", "amin"})
CREATIONS = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like"})
DTYPES = {"float64": "float64", "float32": "float32", "int64": "int64", "int32": "int32", "double": "float64", "single": "float32"}
ARRAY_CONVERSIONS = frozenset({"asarray", "asanyarray", "ascontiguousarray", "array"})
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
    read_only: dict[str, str] = field(default_factory=dict)  # allocation -> the conversion that may be its argument
    closures: set[str] = field(default_factory=set)  # helpers defined in the function (or lambdas): they see its locals
    depth: dict[tuple[tuple[str, ...], str], int] = field(default_factory=dict)  # loops around a local's binding
    equal: dict[Extent, Extent] = field(default_factory=dict)  # extents broadcasting found equal (union-find)
    loop_elements: dict[str, tuple[tuple[Loop, ...], tuple[Condition, ...]]] = field(default_factory=dict)  # `v`, `row`: their body
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
            if kind == "identifier" and (text(current) in self.locals or text(current) in self.walk.index_tuples):
                return True
            if kind in ("slice", "ellipsis", "none", "keyword_argument", "pattern_list", "tuple_pattern") or (
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
            self._unpack(left, right, op, place, node)
            return
        self._assign(left, op, right, place, node)

    def _masked_store(self, base_node: Node, mask_node: Node, op: str, right: Node, place: Place, node: Node) -> None:
        """`a[mask] = v` (or `op=`): a statement over all of `a` that writes where the mask holds and keeps the old
        element elsewhere. `v` is a scalar, or the same mask applied to an array of `a`'s shape (`a[m] = b[m]`)."""
        target, mask = self.value(base_node, place), self.value(mask_node, place)
        if target.view is None:
            raise Refusal(base_node, f"`{text(base_node)}` is not stored memory")
        self._mask_of(mask, target, mask_node, base_node)
        same_mask = _masked(right)
        if same_mask and text(same_mask[1]) == text(mask_node):
            new = self.value(same_mask[0], place)
            if not self._same_shape(new.shape, target.shape):
                raise Refusal(right, f"`{text(right)}`: the masked array must have `{text(base_node)}`'s shape")
        else:
            new = self.value(right, place)
            if new.rank:
                raise Refusal(
                    right, f"`{text(right)[:60]}`: a masked assignment takes a scalar, or the same mask on the right (`b[m]`)"
                )
        binary = {"+=": "+", "-=": "-", "*=": "*", "/=": "/"}.get(op)

        def element(index: Index) -> Expr:
            old = target.element(index)
            written = new.element(index if new.rank else ())
            return Choice(mask.element(index), Binary(binary, old, written) if binary else written, old)

        value = Value(target.shape, element, target.dtype.merged(new.dtype) if binary else target.dtype)
        self.write(target, "=", value, right, place, node)

    def _mask_of(self, mask: Value, base: Value, mask_node: Node, base_node: Node) -> None:
        """A mask selects from an array of its own shape: NumPy raises otherwise, so the extents are equal at any call
        that runs (an assumption the call is checked for, as broadcasting's are)."""
        if not mask.boolean or mask.rank != base.rank:
            raise Refusal(mask_node, f"`{text(mask_node)}` is not a boolean mask of `{text(base_node)}`'s shape")
        self._equate([mask.shape], base.shape)

    def _masked_operand(self, base_node: Node, mask_node: Node, method: str, place: Place) -> Value:
        """`x[mask]` reduced: a sum adds zeros where the mask fails; other reductions depend on how many it keeps."""
        if method != "sum":
            raise Refusal(
                base_node.parent,
                f"`{text(base_node.parent)}`: a {method} of a masked selection is not modelled (a sum is: "
                f"np.sum(x[m]); or use np.where(m, x, ...))",
            )
        base, mask = self.value(base_node, place), self.value(mask_node, place)
        self._mask_of(mask, base, mask_node, base_node)
        return Value(base.shape, lambda index: Choice(mask.element(index), base.element(index), Number(0)), base.dtype)

    def _unpack(self, left: Node, right: Node, op: str, place: Place, node: Node) -> None:
        """`a, b = x, y`: every value first, then every binding, as Python does (`a, b = b, a + b` swaps). Scalars
        are copied into fresh locals before any is bound; arrays are rebound, not copied, as in Python."""
        targets = left.named_children
        values = right.named_children if right.type in ("expression_list", "tuple") else []
        if op != "=" or len(values) != len(targets):
            raise Refusal(left, f"`{text(left)} = {text(right)[:40]}`: unpacking is modelled for as many values as names")
        if not _reads_any(values, targets):
            for target, value in zip(targets, values, strict=True):
                self._assign(target, op, value, place, node)
            return
        if any(target.type != "identifier" for target in targets):
            raise Refusal(left, f"`{text(left)}`: swapping elements is not modelled; assign each on its own line")
        computed = [self.value(value, place) for value in values]
        if any(result.rank for result in computed):
            raise Refusal(
                node,
                f"`{text(node)[:60]}` swaps arrays: write the steps with the roles exchanged instead "
                "(`b[...] = f(a)` then `a[...] = f(b)`)",
            )
        computed = [self.materialize(result, "swap", place, node) for result in computed]
        for target, value, result in zip(targets, values, computed, strict=True):
            self._bind(text(target), value, place, node, result)

    def _assign(self, left: Node, op: str, right: Node, place: Place, node: Node) -> None:
        masked = _masked(left)
        if masked:
            self._masked_store(*masked, op, right, place, node)
            return
        if left.type == "identifier" and op == "=":
            self._bind(text(left), right, place, node)
            return
        if left.type == "identifier" and op != "=" and text(left) in self.loop_elements and text(left) in self.locals:
            element = self.locals[text(left)]
            if element.rank == 0:  # `v += w` rebinds `v` to a new number: it starts from the element, as a local
                self._rebinding_element(text(left), place, node)
                self.locals.pop(text(left))
                self._assign_scalar(text(left), "=", element, place, node)
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
        self._writable(target, node)
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
        self._writable(target, node)
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

    def _writable(self, target: Value, node: Node) -> None:
        assert target.view is not None
        conversion = self.read_only.get(target.view.array)
        if conversion is not None:
            raise Refusal(
                node,
                f"`{text(node)[:60]}` writes the result of `{conversion}`, which is the argument itself when it has "
                "that type already: write into a `.copy()`, or leave out `dtype=`",
            )

    def _bind(self, name: str, right: Node, place: Place, node: Node, computed: Value | None = None) -> None:
        """`name = value` (`computed`, when the value was computed before). A name that already owns an allocation
        of the same shape is rebound by writing into it: a value carried round a loop (`x = f(x)` in its body)
        must live in the same memory in every iteration. A rebinding in a deeper loop that cannot do that is
        refused."""
        if name in place.scope or name in self.walk.index_aliases or name in self.walk.index_tuples:
            raise Refusal(node, f"assignment to loop variable `{name}`")
        if name in self.walk.parameters or name in self.walk.shape_parameters or name in self.walk.size_aliases:
            raise Refusal(node, f"assignment to `{name}`, which is used as a loop bound or subscript")
        self._rebinding_element(name, place, node)
        key = (self.inlining, name)
        whole = unparenthesised(right)
        before = len(self.allocations)
        if computed is not None:
            value = computed
        elif self._is_product_or_reduction(whole) or self._is_creation(whole):
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
            and owned not in self.read_only
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
        if name in place.scope or name in self.walk.index_aliases or name in self.walk.index_tuples:
            raise Refusal(node, f"assignment to loop variable `{name}`")
        if name in self.walk.parameters or name in self.walk.shape_parameters or name in self.walk.size_aliases:
            raise Refusal(node, f"assignment to `{name}`, which is used as a loop bound or subscript")
        local = self._scalar_name(name)
        if local in ISL_RESERVED:
            raise Refusal(node, f"local `{name}` is a reserved word of the polyhedral library; rename it")
        self.walk.assigned.setdefault(local, node)
        self.locals.pop(name, None)
        self.emit((), op, lambda index: (Name(local), value.element(())), place, node)

    def _visible_local(self, name: str) -> str | None:
        """The scalar local `name` reads: this frame's, else, inside a closure, the enclosing frames'."""
        depth = len(self.inlining)
        while True:
            local = "_".join((*self.inlining[:depth], name))
            if local in self.walk.assigned:
                return local
            if depth == 0 or self.inlining[depth - 1] not in self.closures:
                return None
            depth -= 1

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
        elif self._is_product_or_reduction(whole) or self._is_creation(whole):
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
        guard = self.walk.data_guard
        if guard is not None:  # under an `if` on data: the new value where its flags hold, the old one elsewhere
            new = value if op == "=" else Binary(op[:-1], target, value)
            value, op = Choice(guard, new, target), "="
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

    def _fresh_local(self, hint: str) -> str:
        """A new scalar local's name, taken by no argument, local, size or allocation."""
        taken = set(self.walk.arguments) | set(self.walk.assigned) | {a.name for a in self.allocations}
        return next(name for name in (self._scalar_name(f"{hint}_{next(self._fresh)}") for _ in count()) if name not in taken)

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
            local = self._fresh_local(hint)
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
        if self._is_size(node):
            size = self._integer(node, place)
            return Value((), lambda index: affine_value(size), DtypeRule(("<int>",)))
        if kind == "attribute":
            return self._attribute(node, place)
        if kind == "subscript":
            if _masked(node):
                raise Refusal(
                    node,
                    f"`{text(node)}` compacts the elements the mask selects, a number the data decides: reduce them "
                    f"(`np.sum({text(node)})`) or keep the shape (`np.where(mask, x, 0)`)",
                )
            base = self.value(node.child_by_field_name("value"), place)
            return self._index(base, list(node.children_by_field_name("subscript")), place, node)
        if kind == "unary_operator":
            op = text(node.child_by_field_name("operator"))
            operand = self.value(node.child_by_field_name("argument"), place)
            if op == "~" and operand.boolean:
                return self._elementwise([operand], lambda a: Unary("not", a), node, boolean=True)
            if op not in "-+":
                raise Refusal(node, f"operator `{op}` is not modelled on arrays")
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
        if name in self.walk.index_aliases:
            position = self.walk.index_aliases[name]
            return Value((), lambda index: affine_value(position), DtypeRule(("<int>",)))
        if name in self.walk.index_tuples:
            raise index_tuple_refusal(node)
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
        local = self._visible_local(name)
        if local is not None:
            return Value((), lambda index: Name(local), self._scalar_rule(local, frozenset()))
        if name in self.walk.arguments:
            if name in self.walk.arrays:
                raise UnknownRank(node, name, self.walk.least_ranks.get(name, 0))
            return Value((), lambda index: Name(name), DtypeRule((name,)))
        module, _, attribute = self.walk.names.canonical(name).rpartition(".")
        if module in ("np", "math") and attribute in CONSTANTS:
            number = CONSTANTS[attribute]
            return Value((), lambda index: Number(number), DtypeRule(("<float>",)))
        if self.walk.names.is_numpy(name):
            raise Refusal(node, f"`{name}` used as a value")
        raise Refusal(node, f"`{name}` is not an argument, a loop variable or a local assigned before")

    def _scalar_rule(self, local: str, seen: frozenset[str]) -> DtypeRule:
        """The type of a local scalar, from every statement so far that assigns it (either front end's): `c =
        np.log(a)` holds a NumPy float64, which promotes a float32 array, `t = a * 2.0` a Python float, which
        does not. A local that reads itself (`s += s * x[i]`) adds nothing new by that read."""
        assignments = [statement for statement in self.walk.statements if statement.target == Name(local)]
        if local in seen or not assignments:
            return DtypeRule() if local in seen else DtypeRule(("<float>",))
        rule = DtypeRule(floating=any(statement.op == "/=" for statement in assignments))
        for statement in assignments:
            rule = rule.merged(self._expr_rule(statement.value, seen | {local}))
        return rule

    def _expr_rule(self, expr: Expr, seen: frozenset[str]) -> DtypeRule:
        """The type rule of an element expression, by the rules `Value`s follow (`_scalar_rule` reads statements)."""
        if isinstance(expr, Number):
            return DtypeRule(("<float>",) if isinstance(expr.value, float) else ("<int>",))
        if isinstance(expr, ArrayRef):
            allocation = next((a for a in self.allocations if a.name == expr.array), None)
            return allocation.dtype if allocation is not None else DtypeRule((expr.array,))
        if isinstance(expr, Name):
            if expr.name in self.walk.assigned:
                return self._scalar_rule(expr.name, seen)
            return DtypeRule((expr.name,) if expr.name in self.walk.arguments else ("<int>",))
        if isinstance(expr, Cast):
            if expr.dtype == "strong":
                return _strong(self._expr_rule(expr.operand, seen))
            return DtypeRule((f"<{expr.dtype}>",)) if expr.dtype in ("int", "float") else DtypeRule(fixed=expr.dtype)
        if isinstance(expr, Call) and (expr.module == "math" or expr.function == "float"):
            return DtypeRule(("<float>",))
        if isinstance(expr, Binary) and (expr.op in ("<", "<=", ">", ">=", "==", "!=", "and", "or")):
            return DtypeRule(("<int>",))
        if isinstance(expr, Unary):
            operands = [expr.operand]
        elif isinstance(expr, Binary):
            operands = [expr.left, expr.right]
        elif isinstance(expr, Call):
            operands = list(expr.args)
        else:
            operands = [expr.then, expr.otherwise]
        rule = DtypeRule()
        for operand in operands:
            rule = rule.merged(self._expr_rule(operand, seen))
        if isinstance(expr, Binary) and expr.op == "/":
            return DtypeRule(rule.sources, True)
        if isinstance(expr, Call) and expr.module == "np":  # float unless an extremum or `abs`, and a NumPy value
            return _strong(DtypeRule(rule.sources, expr.function not in ("min", "max", "abs")))
        return rule

    def _is_size(self, node: Node) -> bool:
        """`A.shape[k]`, `len(A)`, `len(A[0])` or `s[k]` with `s = A.shape`: an integer size, not an array."""
        read = shape_read(node, self.walk.stored_shapes)
        return read is not None and read[1] is not None

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
        module = self.walk.names.canonical(text(base))
        if module == "np":
            if attribute in CONSTANTS:
                number = CONSTANTS[attribute]
                return Value((), lambda index: Number(number), DtypeRule(("<float>",)))
            if attribute == "newaxis":
                raise Refusal(node, "`np.newaxis` is only modelled inside a subscript")
            raise Refusal(node, f"`{text(node)}` is not modelled")
        if module == "math" and attribute in CONSTANTS:
            number = CONSTANTS[attribute]
            return Value((), lambda index: Number(number), DtypeRule(("<float>",)))
        value = self.value(base, place)
        if attribute == "T":
            return _transposed(value, node)
        if attribute == "ndim" and value.view is not None:
            rank = value.rank
            return Value((), lambda index: Number(rank), DtypeRule(("<int>",)))
        if attribute == "size" and value.view is not None:
            if any(extent.divisor != 1 for extent in value.shape):
                raise Refusal(node, f"`{text(node)}` of a strided slice is not modelled: take the size of the whole array")
            factors = [affine_value(extent.size) for extent in value.shape] or [Number(1)]
            count = factors[0]
            for factor in factors[1:]:  # a product of sizes: a value, never a bound, so it need not be affine
                count = Binary("*", count, factor)
            return Value((), lambda index: count, DtypeRule(("<int>",)))
        if attribute in ("real", "imag"):
            raise Refusal(node, f"`.{attribute}`: complex numbers are not modelled (real float and integer arrays are)")
        raise Refusal(node, f"attribute `.{attribute}` is not modelled on arrays (known: .T, and .shape in sizes)")

    def _index(self, base: Value, subscripts: list[Node], place: Place, node: Node) -> Value:
        """Basic indexing: integers (negative from the end), slices with affine bounds, `None`, `...`."""
        items: list[Node] = []
        for item in subscripts:
            items.extend(item.named_children if item.type == "expression_list" else [item])
        if len(items) == 1 and items[0].type == "identifier" and text(items[0]) in self.walk.index_tuples:
            positions = self.walk.index_tuples[text(items[0])]
            if len(positions) > base.rank:
                raise Refusal(node, f"`{text(node)}` indexes {len(positions)} dimensions of an array of rank {base.rank}")
            for position in positions:
                base = _row(base, position)
            return base
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
        if op in ("&", "|"):
            left, right = self.value(left_node, place), self.value(right_node, place)
            if not (left.boolean and right.boolean):
                raise Refusal(node, f"`{op}` of integers (bitwise) is not modelled; of boolean masks it is")
            logical = "and" if op == "&" else "or"
            return self._elementwise([left, right], lambda a, b: Binary(logical, a, b), node, boolean=True)
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
        if callee.type == "identifier" and text(callee) in self.helpers:
            return self._inline(text(callee), positional, keywords, place, node)
        dotted = self.walk.names.canonical(text(callee))
        module, _, method = dotted.rpartition(".")
        if module == "np":
            return self._numpy(method, positional, keywords, place, node)
        if module == "math":
            return self._math(method, positional, place, node)
        if module == "np.linalg":
            raise Refusal(
                node,
                f"`{text(callee)}` is not modelled: write a product with `@` and a norm as `np.sqrt(np.sum(x * x))`",
            )
        if callee.type == "identifier":
            name = text(callee)
            if name in ("abs", "min", "max", "float", "int"):
                return self._builtin(name, positional, place, node)
            if name == "sum":
                return self._builtin_sum(positional, keywords, place, node)
            if name == "len":
                raise Refusal(node, "`len(...)` is a size: use it in a bound, an index or a slice")
            raise Refusal(node, f"call `{name}(...)`: not a function of this module, nor a NumPy or math function")
        if callee.type != "attribute":
            raise Refusal(node, f"call `{text(callee)[:40]}` is not modelled")
        owner = callee.child_by_field_name("object")
        root = owner
        while root.type == "attribute":
            root = root.child_by_field_name("object")
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
            return _converted(value, self._dtype(positional[0]))
        if method == "dot":
            return self._produce(node, place, node, into=None) or self._unreachable(node)
        if method == "transpose":
            return _transposed(value, node)
        raise Refusal(node, f"method `.{method}()` is not modelled (known: .sum .max .min .mean .prod .copy .astype .dot .T)")

    def _builtin_sum(self, positional: list[Node], keywords: dict[str, Node], place: Place, node: Node) -> Value:
        """Python's `sum(x)` of an array: its items along the first axis added in order, from 0."""
        if len(positional) != 1 or keywords:
            raise Refusal(node, "`sum(...)` is modelled with one array and no start value")
        if positional[0].type == "generator_expression":
            raise Refusal(node, "`sum(... for ...)` is not modelled: write the loop (`s = 0.0`, then `s += ...` in it)")
        operand = self.value(positional[0], place)
        if operand.rank == 0:
            raise Refusal(node, f"`sum({text(positional[0])})`: the argument is not an array")
        result = self._reduce("sum", operand, (0,), False, place, node, None, "sums", node, in_order=True)
        assert result is not None
        return result

    def _builtin(self, name: str, positional: list[Node], place: Place, node: Node) -> Value:
        values = [self.value(a, place) for a in positional]
        if name in ("float", "int"):
            if len(values) != 1 or values[0].rank:
                raise Refusal(node, f"`{name}(...)` takes one scalar")
            inner = values[0]
            if name == "int":
                return Value((), lambda index: Cast("int", inner.element(())), DtypeRule(("<int>",)))
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
        if function in ARRAY_CONVERSIONS:
            return self._converted(function, positional, keywords, place, node)
        if function in ELEMENTWISE:
            values = self._positional(function, positional, 1, place, node)
            value = self._elementwise(values, lambda a: Call(ELEMENTWISE[function], (a,), "np"), node)
            floating = function in FLOATING_CALLS
            rule = DtypeRule(value.dtype.sources, value.dtype.floating or floating, value.dtype.fixed)
            return self._numpy_result(Value(value.shape, value.element, rule))
        if function in ("maximum", "minimum", "fmax", "fmin"):
            values = self._positional(function, positional, 2, place, node)
            call = "max" if function in ("maximum", "fmax") else "min"
            if function in ("fmax", "fmin"):
                return self._numpy_result(self._elementwise(values, lambda a, b: _ignoring_nan(call, a, b), node))
            return self._numpy_result(self._elementwise(values, lambda a, b: Call(call, (a, b), "np"), node))
        if function in ("arctan2", "atan2"):
            values = self._positional(function, positional, 2, place, node)
            value = self._elementwise(values, lambda a, b: Call("atan2", (a, b), "np"), node)
            return self._numpy_result(Value(value.shape, value.element, DtypeRule(value.dtype.sources, True, value.dtype.fixed)))
        if function in ("power",):
            values = self._positional(function, positional, 2, place, node)
            return self._numpy_result(self._elementwise(values, lambda a, b: Binary("**", a, b), node))
        if function == "square":
            values = self._positional(function, positional, 1, place, node)
            return self._numpy_result(self._elementwise(values, lambda a: Binary("*", a, a), node))
        if function == "negative":
            values = self._positional(function, positional, 1, place, node)
            return self._numpy_result(self._elementwise(values, lambda a: Unary("-", a), node))
        if function == "where":
            values = self._positional(function, positional, 3, place, node)
            return self._numpy_result(self._elementwise(values, lambda c, a, b: Choice(c, a, b), node))
        if function == "clip":
            values = self._positional(function, positional, 3, place, node)
            clipped = self._elementwise(values, lambda x, lo, hi: Call("min", (Call("max", (x, lo), "np"), hi), "np"), node)
            return self._numpy_result(clipped)
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
            return _converted(value, DTYPES[function])
        if function in ("sign", "isnan", "isinf", "any", "all", "argmax", "argmin", "nonzero", "sort"):
            raise Refusal(node, f"`np.{function}` is not modelled yet")
        raise Refusal(node, f"`np.{function}` is not modelled")

    def _numpy_result(self, value: Value) -> Value:
        """What a NumPy function returns: an array or a NumPy scalar, never a Python number. Made of Python
        numbers alone (`np.log(2.0)`, `np.where(m, 1.0, 0.0)`), its type is NEP 50's strong default (float64,
        int64), so it promotes a float32 array it meets later: `Cast("strong")` says so to the printers, and
        the `!` sources to the allocation's rule. A value that reads an array or has a fixed type is strong
        already and stays as it is."""
        rule = value.dtype
        if rule.fixed or any(s.startswith(("!", "=")) or self._is_array_argument(s) for s in rule.sources):
            return value
        return Value(value.shape, lambda index: Cast("strong", value.element(index)), _strong(rule), None, value.boolean)

    def _math(self, function: str, positional: list[Node], place: Place, node: Node) -> Value:
        """`math.sqrt(a)` and friends: a Python float, weak where it meets an array (unlike `np.sqrt(a)`);
        `math.floor` and `math.ceil` give a Python int. They take numbers: an array would raise in the original."""
        if function not in MATH_FUNCTIONS:
            raise Refusal(node, f"`math.{function}` is not modelled")
        values = [self.value(n, place) for n in positional]
        wanted = 2 if function in ("pow", "atan2") else 1
        if len(values) != wanted:
            raise Refusal(node, f"`math.{function}` takes {wanted} argument(s) here, got {len(values)}")
        if any(v.rank for v in values):
            raise Refusal(node, f"`math.{function}` takes a number, not an array: use `np.{function}` on arrays")

        def element(index: Index) -> Expr:
            return Call(function, tuple(v.element(()) for v in values), "math")

        if function in ("floor", "ceil"):
            return Value((), lambda index: Cast("int", element(index)), DtypeRule(("<int>",)))
        return Value((), element, DtypeRule(("<float>",)))

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
        return Value((extent,), lambda index: Cast("int64", affine_value(start + index[0].scaled(step))), DtypeRule(fixed="int64"))

    def _converted(self, function: str, positional: list[Node], keywords: dict[str, Node], place: Place, node: Node) -> Value:
        """`np.asarray(x)` of an array is `x` itself, and `np.array(x)` a copy of it, as NumPy's are. With `dtype=`,
        NumPy returns `x` itself when it has that type already and a converted copy otherwise: the two agree while
        nothing writes the result, so it is a copy no statement may write (`write` refuses)."""
        unknown = set(keywords) - {"dtype", "order"} - ({"copy"} if function == "array" else set())
        if len(positional) != 1 or unknown:
            raise Refusal(node, f"`np.{function}` is modelled with one array and `dtype=` only")
        value = self.value(positional[0], place)
        if value.rank == 0:
            raise Refusal(node, f"`np.{function}` of a scalar is not modelled: use the scalar itself")
        dtype = self._dtype_rule(keywords["dtype"], place) if "dtype" in keywords else value.dtype
        copied = function == "array" and text(keywords.get("copy", node)) != "False"
        if not copied and "dtype" not in keywords:
            return value
        converted = self.materialize(Value(value.shape, value.element, dtype), function, place, node)
        if not copied:
            assert converted.view is not None
            self.read_only[converted.view.array] = f"np.{function}({text(positional[0])}, dtype=...)"
        return converted

    def _positional(self, function: str, nodes: list[Node], wanted: int, place: Place, node: Node) -> list[Value]:
        if len(nodes) != wanted:
            raise Refusal(node, f"`np.{function}` takes {wanted} positional argument(s) here, got {len(nodes)}")
        return [self.value(n, place) for n in nodes]

    def _dtype_rule(self, node: Node, place: Place) -> DtypeRule:
        """A `dtype=` argument: a type's name, or another array's type (`dtype=x.dtype`)."""
        if node.type == "attribute" and text(node.child_by_field_name("attribute")) == "dtype":
            return self.value(node.child_by_field_name("object"), place).dtype
        return DtypeRule(fixed=self._dtype(node))

    def _dtype(self, node: Node) -> str:
        name = text(node).rpartition(".")[2].strip("'\"")
        if name not in DTYPES:
            raise Refusal(node, f"dtype `{text(node)}` is not modelled (known: {', '.join(sorted(set(DTYPES.values())))})")
        return DTYPES[name]

    def _inline(self, name: str, positional: list[Node], keywords: dict[str, Node], place: Place, node: Node) -> Value:
        """A call to a function of the same module (or one defined in the function, or a lambda): its body, with its
        parameters bound to the values passed. A function defined inside reads the caller's locals, as a closure."""
        if name in self.inlining:
            raise Refusal(node, f"`{name}` calls itself; recursion is not modelled")
        function = self.helpers[name]
        given = self._arguments(name, function, positional, keywords, node)
        bound = {parameter: self.value(argument, place) for parameter, argument in given.items()}
        outer_locals = self.locals
        self.locals = {**outer_locals, **bound} if name in self.closures else bound
        self.inlining = (*self.inlining, name)
        try:
            if function.type == "lambda":
                return self.value(function.child_by_field_name("body"), place)
            return self._inline_body(name, function, place)
        finally:
            self.locals = outer_locals
            self.inlining = self.inlining[:-1]

    def inline_procedure(
        self, node: Node, loops: tuple[Loop, ...], guards: tuple[Condition, ...], positions: tuple[int, ...], counter: list[int]
    ) -> None:
        """`helper(n, x)` as a statement: the helper's body walked in place, its array parameters the caller's arrays
        (so its writes land in them, as in Python) and the parameters it loops or indexes with the caller's sizes."""
        from repoos_agent.ingest.scop import walk_statement  # the walk calls this front end, which walks bodies in turn

        callee = node.child_by_field_name("function")
        name = text(callee)
        if name in self.inlining:
            raise Refusal(node, f"`{name}` calls itself; recursion is not modelled")
        function = self.helpers[name]
        if function.type == "lambda":
            raise Refusal(node, f"`{text(node)[:60]}`: a lambda called as a statement computes nothing")
        arguments = [a for a in node.child_by_field_name("arguments").named_children if a.type != "comment"]
        positional = [a for a in arguments if a.type != "keyword_argument"]
        keywords = {
            text(a.child_by_field_name("name")): a.child_by_field_name("value") for a in arguments if a.type == "keyword_argument"
        }
        given = self._arguments(name, function, positional, keywords, node)
        place = Place(loops, guards, positions, counter)
        sizes = _integer_uses(function.child_by_field_name("body"))
        bound = {parameter: self.value(argument, place) for parameter, argument in given.items()}
        aliases = {
            parameter: affine_index(self.walk, argument, place.scope)
            for parameter, argument in given.items()
            if parameter in sizes and bound[parameter].rank == 0
        }
        saved_aliases = {parameter: self.walk.size_aliases.get(parameter) for parameter in aliases}
        outer_locals = self.locals
        self.locals = {p: v for p, v in bound.items() if p not in aliases}
        if name in self.closures:
            self.locals = {**outer_locals, **self.locals}
        self.walk.size_aliases.update(aliases)
        self.inlining = (*self.inlining, name)
        try:
            for statement in _body_statements(function):
                if statement.type == "return_statement" and not statement.named_children:
                    continue
                walk_statement(self.walk, statement, loops, guards, positions, counter)
        finally:
            self.locals = outer_locals
            self.inlining = self.inlining[:-1]
            for parameter, before in saved_aliases.items():
                if before is None:
                    self.walk.size_aliases.pop(parameter, None)
                else:
                    self.walk.size_aliases[parameter] = before

    def _arguments(
        self, name: str, function: Node, positional: list[Node], keywords: dict[str, Node], node: Node
    ) -> dict[str, Node]:
        """Each parameter of a helper and the expression it is bound to: the call's, else its literal default."""
        parameters = _parameters(name, function)
        names = [parameter for parameter, _ in parameters]
        if len(positional) > len(names):
            raise Refusal(node, f"call of `{name}` passes {len(positional)} values for {len(names)} parameters")
        given = dict(zip(names, positional, strict=False))
        for keyword, argument in keywords.items():
            if keyword not in names:
                raise Refusal(argument, f"`{name}` has no parameter `{keyword}`")
            given[keyword] = argument
        missing = [parameter for parameter, default in parameters if parameter not in given and default is None]
        if missing:
            raise Refusal(node, f"call of `{name}` gives no value for {', '.join(missing)}")
        for parameter, default in parameters:
            if parameter not in given and default is not None:
                if literal_default(parameter, default) is None:
                    raise Refusal(default, f"`{name}`'s default `{parameter}={text(default)}` is not a literal number")
                given[parameter] = default
        return given

    def _inline_body(self, name: str, function: Node, place: Place) -> Value:
        body = _body_statements(function)
        for statement in body[:-1]:
            inner = statement.named_children[0] if statement.type == "expression_statement" else statement
            if inner.type not in ("assignment", "augmented_assignment"):
                raise Refusal(statement, f"`{name}` is inlined: only assignments and a final `return` are modelled in it")
            self.assignment(inner, place)
        if not body or body[-1].type != "return_statement" or not body[-1].named_children:
            raise Refusal(function, f"`{name}` is inlined: it must end with `return value`")
        returned = body[-1].named_children[0]
        whole = unparenthesised(returned)
        if self._is_product_or_reduction(whole) or self._is_creation(whole):
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
        module, method = self._callee_name(node)
        if module == "np":
            return method in REDUCTIONS or method in ("dot", "matmul")
        return bool(module) and (method in REDUCTIONS or method == "dot")

    def _callee_name(self, node: Node) -> tuple[str, str]:
        """A call's module (`np` for NumPy's own, however imported; the receiver for a method) and function."""
        module, _, method = self.walk.names.canonical(text(node.child_by_field_name("function"))).rpartition(".")
        return module, method

    def _is_creation(self, node: Node) -> bool:
        return node.type == "call" and self._callee_name(node)[0] == "np" and self._callee_name(node)[1] in CREATIONS

    def _produce(self, node: Node, place: Place, statement: Node, into: Value | None, name: str = "") -> Value | None:
        """Lower a product, reduction or creation into `into` (a stored target), or into a new
        allocation whose value is returned. Returns None when it wrote `into` itself."""
        node = unparenthesised(node)
        if self._is_creation(node):
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
        module, method = self._callee_name(node)
        if module != "np":
            positional = [callee.child_by_field_name("object"), *positional]
        if method in ("dot", "matmul"):
            if len(positional) != 2:
                raise Refusal(node, f"`{method}` takes two arrays")
            left, right = (self.value(p, place) for p in positional)
            return self._matmul(left, right, place, statement, into, name, node)
        if not positional:
            raise Refusal(node, f"`{method}` needs an array")
        masked = _masked(positional[0])
        operand = self._masked_operand(*masked, method, place) if masked else self.value(positional[0], place)
        axis_node = keywords.get("axis", positional[1] if len(positional) > 1 else None)
        if masked and axis_node is not None and text(axis_node) not in ("None", "0"):
            raise Refusal(node, f"`{text(node)[:60]}`: a masked selection is one flat array; reduce it whole")
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
            local = self._fresh_local(name or "acc")
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
        in_order: bool = False,
    ) -> Value | None:
        """`kind` over the `axes` of `operand`. NumPy adds pairwise; `in_order` adds in the source's order, as
        Python's own `sum` does."""
        if operand.boolean and kind in ("sum", "mean"):  # NumPy counts: True is 1 (an int64 sum, a float64 mean)
            counted, counts = operand, DtypeRule(fixed="int64" if kind == "sum" else "float64")
            operand = Value(counted.shape, lambda index: Choice(counted.element(index), Number(1), Number(0)), counts)
        elif operand.boolean:
            raise Refusal(node, f"`{text(node)[:60]}`: a {kind} of a boolean array is not modelled (its sum counts the Trues)")
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
            pairwise=kind in ("sum", "mean") and not in_order,
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
        function = self._callee_name(node)[1]
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
            dtype = self._dtype_rule(keywords["dtype"], place)
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

    # ---- Python loop forms -------------------------------------------------------------

    def loop_header(
        self, node: Node, loops: tuple[Loop, ...], guards: tuple[Condition, ...], positions: tuple[int, ...], counter: list[int]
    ) -> LoopHeader:
        """A `for` over `enumerate`, `zip`, `np.ndindex` or an array, as range loops over indices.

        A row is the view `A[i]`, so writes through it write `A` (NumPy's semantics). An element of a vector
        is a copy Python takes at the top of each iteration: it is read where it is used, unless the body may
        write its array, and then it is copied into a local there. `zip` runs to the shortest argument."""
        target, iterable = node.child_by_field_name("left"), unparenthesised(node.child_by_field_name("right"))
        place = Place(loops, guards, positions, counter)
        callee = self._callee(iterable)
        if callee == "np.ndindex":
            return self._ndindex(target, iterable, place, node)
        index, start = None, 0
        if callee == "enumerate":
            index, target = _unpacked(target, 2, iterable)
            iterable, start = _enumerated(iterable)
            callee = self._callee(iterable)
            if callee == "range":
                return self._enumerated_range(index, target, iterable, start, place, node)
        if callee == "zip":
            sources = [self._iterated(argument, place) for argument in _call_arguments(iterable)]
            if not sources:
                raise Refusal(iterable, f"`{text(iterable)}` runs over nothing: give it the arrays to pair")
            if len({source.rank for source in sources}) > 1:
                ranks = " and ".join(str(source.rank) for source in sources)
                raise Refusal(
                    iterable,
                    f"`{text(iterable)}`: zip of arrays of ranks {ranks} is not modelled; "
                    "loop over `range(len(...))` and index each array",
                )
            targets = _unpacked(target, len(sources), iterable)
        else:
            sources, targets = [self._iterated(iterable, place)], [target]
        return self._over_arrays(index, targets, sources, start, place, node)

    def _callee(self, node: Node) -> str:
        """What a call calls, as the front ends spell it (`np.ndindex` for `from numpy import ndindex`)."""
        return self.walk.names.canonical(text(node.child_by_field_name("function"))) if node.type == "call" else ""

    def release(self, header: LoopHeader) -> None:
        """The elements and rows a loop header bound go out of scope with its body; an element copied into a
        local stays one, holding the last iteration's value, as the Python name does."""
        for name in header.elements:
            if self.loop_elements.pop(name, None) is not None:
                self.locals.pop(name, None)
                key = (self.inlining, name)
                self.depth.pop(key, None)
                self.owned.pop(key, None)

    def _over_arrays(
        self, index: Node | None, targets: list[Node], sources: list[Value], start: int, place: Place, node: Node
    ) -> LoopHeader:
        """One loop over the first dimension of `sources` (to the shortest, as `zip` stops), binding each target
        to its source's row at the position; `index` names the loop variable, which counts from `start`."""
        name = loop_variable(self.walk, index, place.scope) if index is not None else self._fresh_loop_names(1, place, node)[0]
        offset = AffineExpr.of_constant(start)
        lengths = tuple(dict.fromkeys(source.shape[0].size + offset for source in sources))
        for length in lengths:
            self._register(length, node, place)
        loop = Loop(name, Bound((offset,), "max"), Bound(lengths, "min"), 1, node.start_point[0] + 1)
        body = Place((*place.loops, loop), place.guards, place.positions, place.counter)
        position = AffineExpr.of_variable(name) - offset
        names = tuple(
            self._bind_element(target, source, position, body, node) for target, source in zip(targets, sources, strict=True)
        )
        return LoopHeader((loop,), elements=names)

    def _bind_element(self, target: Node, source: Value, position: AffineExpr, body: Place, node: Node) -> str:
        """Bind a loop's target to `source[position]`: a row stays a view; an element of a vector is read where it
        is used, or copied into a local at the top of the body when the body may write `source`'s array."""
        name = loop_variable(self.walk, target, body.scope)
        if name in self.locals or name in self.walk.size_aliases:
            raise Refusal(target, f"loop variable `{name}` reuses the name of an array or size the function assigned before")
        element = _row(source, position)
        assert source.view is not None
        copied = self._scalar_name(name) in self.walk.assigned or self._may_write(node, source.view.array)
        if element.rank == 0 and copied:
            self._assign_scalar(name, "=", element, body, target)
            return name
        if element.rank > 0 and self._scalar_name(name) in self.walk.assigned:
            raise Refusal(target, f"loop variable `{name}` reuses the name of a scalar the function assigned before")
        self.locals[name] = element if element.rank else replace(element, view=None)  # an element is a copy
        self.depth[(self.inlining, name)] = len(body.loops)
        self.loop_elements[name] = (body.loops, body.guards)
        return name

    def _rebinding_element(self, name: str, place: Place, node: Node) -> None:
        """A loop's element or row rebound in its own body holds the new value for the rest of that iteration
        only; under an `if` or in an inner loop, the next statements could not tell which one they read."""
        body = self.loop_elements.get(name)
        if body is not None and body != (place.loops, place.guards):
            raise Refusal(
                node,
                f"`{name}` is the loop's element: rebind it directly in the loop's body, "
                "not under an `if` or in an inner loop (use a new name there)",
            )

    def _may_write(self, loop: Node, array: str) -> bool:
        """Whether a loop's body may write `array`: by its name, a local viewing it, or an array made in the body
        (which might view it)."""
        stack = [loop.child_by_field_name("body")]
        while stack:
            current = stack.pop()
            stack.extend(current.children)
            if current.type not in ("assignment", "augmented_assignment"):
                continue
            left = current.child_by_field_name("left")
            base = left
            while base.type in ("subscript", "attribute"):
                base = base.child_by_field_name("value" if base.type == "subscript" else "object")
            name = text(base)
            held = self.locals.get(name)
            if (
                base.type != "identifier"
                or name == array
                or (held is not None and held.view is not None and held.view.array == array)
            ):
                return True
            if left.type != "identifier" and held is None and not self._is_array_argument(name):
                return True
        return False

    def _enumerated_range(self, index: Node, target: Node, iterable: Node, start: int, place: Place, node: Node) -> LoopHeader:
        """`for i, k in enumerate(range(a, b))`: a loop over the index `i`, with `k = a + (i - start) * step`."""
        args = range_arguments(iterable)
        first = affine_index(self.walk, args[0], place.scope) if len(args) > 1 else AffineExpr.of_constant(0)
        stop = affine_index(self.walk, args[1] if len(args) > 1 else args[0], place.scope)
        step = affine_index(self.walk, args[2], place.scope) if len(args) == 3 else AffineExpr.of_constant(1)
        if step not in (AffineExpr.of_constant(1), AffineExpr.of_constant(-1)):
            raise Refusal(
                iterable,
                f"`enumerate({text(iterable)})`: only ranges of step 1 or -1 are enumerated; loop over the range "
                "and count the index yourself",
            )
        name = loop_variable(self.walk, index, place.scope)
        value = loop_variable(self.walk, target, place.scope | {name})
        if value in self.locals or self._scalar_name(value) in self.walk.assigned:
            raise Refusal(target, f"loop variable `{value}` reuses the name of a local the function assigned before")
        offset = AffineExpr.of_constant(start)
        count = (stop - first).scaled(step.constant)
        self._register(count, node, place)
        loop = Loop(name, Bound((offset,), "max"), Bound((count + offset,), "min"), 1, node.start_point[0] + 1)
        return LoopHeader((loop,), indices={value: first + (AffineExpr.of_variable(name) - offset).scaled(step.constant)})

    def _ndindex(self, target: Node, iterable: Node, place: Place, node: Node) -> LoopHeader:
        """`for i, j in np.ndindex(n, m)` or `for idx in np.ndindex(A.shape)`: one loop per extent, in C order.
        A negative extent runs no iteration here, where NumPy raises, as `np.zeros(n - 2)` allocates nothing."""
        arguments = _call_arguments(iterable)
        if not arguments:
            raise Refusal(iterable, f"`{text(iterable)}`: np.ndindex needs the extents it runs over")
        read = shape_read(arguments[0], self.walk.stored_shapes) if len(arguments) == 1 else None
        if read is not None and read[1] is None:  # `A.shape`, `np.shape(A)` or `s` with `s = A.shape`
            extents = self._whole_shape(read[0], iterable)
        elif len(arguments) == 1:
            extents = self._shape(arguments[0], place)
        else:
            extents = tuple(Extent(self._integer(argument, place)) for argument in arguments)
        if any(extent.divisor != 1 for extent in extents):
            raise Refusal(iterable, f"`{text(iterable)}`: the shape of a strided slice is not modelled here; pass its sizes")
        tuples: dict[str, tuple[AffineExpr, ...]] = {}
        if target.type == "identifier":
            tuple_name = loop_variable(self.walk, target, place.scope)
            if tuple_name in self.locals or self._scalar_name(tuple_name) in self.walk.assigned:
                raise Refusal(target, f"loop variable `{tuple_name}` reuses the name of a local the function assigned before")
            names = self._fresh_loop_names(len(extents), place, node)
            tuples[tuple_name] = tuple(AffineExpr.of_variable(name) for name in names)
        else:
            names = []
            for part in _unpacked(target, len(extents), iterable):
                names.append(loop_variable(self.walk, part, place.scope | set(names)))
        line = node.start_point[0] + 1
        zero = Bound((AffineExpr.of_constant(0),), "max")
        for extent in extents:
            self._register(extent.size, node, place)
        loops = tuple(Loop(name, zero, Bound((extent.size,), "min"), 1, line) for name, extent in zip(names, extents, strict=True))
        return LoopHeader(loops, tuples=tuples)

    def _whole_shape(self, array: str, node: Node) -> tuple[Extent, ...]:
        """The extents of a local or an argument, named by `array`."""
        if array in self.locals:
            return self.locals[array].shape
        if not self._is_array_argument(array):
            raise Refusal(node, f"`{text(node)[:60]}`: the rank of `{array}` is not known here" + RANK_HINT)
        return tuple(Extent(self.size(array, dim, node)) for dim in range(self.walk.ranks[array]))

    def _iterated(self, node: Node, place: Place) -> Value:
        """The array a loop runs over: stored memory (an argument, a local, a slice of one), whose rows it binds."""
        node = unparenthesised(node)
        if node.type not in ("identifier", "subscript", "attribute"):
            raise Refusal(
                node,
                f"`{text(node)[:60]}`: only loops over `range(...)`, `reversed(range(...))`, `enumerate(...)`, "
                "`zip(...)`, `np.ndindex(...)` and arrays are modelled",
            )
        if node.type == "identifier" and text(node) in self.walk.arguments and not self._is_array_argument(text(node)):
            raise Refusal(node, f"`{text(node)}` is iterated, but it is not an array whose rank is known here" + RANK_HINT)
        value = self.value(node, place)
        if value.rank == 0:
            raise Refusal(node, f"`{text(node)}` is a scalar, not an array: it cannot be iterated")
        if value.view is None:
            raise Refusal(node, f"`{text(node)[:60]}`: iterating a computed array is not modelled; assign it to a name first")
        if value.shape[0].divisor != 1:
            raise Refusal(node, f"`{text(node)}`: iterating a strided slice is not modelled; loop over `range(start, stop, step)`")
        if value.view.array not in self.walk.arguments:  # the loop holds the array: a rebinding must not write into it
            self.shared.add(value.view.array)
        return value

    def _fresh_loop_names(self, wanted: int, place: Place, node: Node) -> list[str]:
        """Names for loops the source does not name (`for row in A`): none the function uses anywhere, so that
        neither a loop inside nor a name read in the body can be taken for them."""
        function = node
        while function.parent is not None and function.type != "function_definition":
            function = function.parent
        used = set()
        stack = [function]
        while stack:
            current = stack.pop()
            stack.extend(current.children)
            if current.type == "identifier":
                used.add(text(current))
        names = [name for name in self._loop_names(wanted + len(used), place) if name not in used]
        return names[:wanted]


# ---- pure helpers --------------------------------------------------------------------------


def _row(value: Value, position: AffineExpr) -> Value:
    """`value[position]`: its row (its element for a vector), a view of the same memory where `value` is one."""

    def whole(index: Index) -> Index:
        return (position, *index)

    source = value.view
    view = View(source.array, lambda index: source.index(whole(index))) if source is not None else None
    return Value(value.shape[1:], lambda index: value.element(whole(index)), value.dtype, view, value.boolean)


def _call_arguments(call: Node) -> list[Node]:
    """A call's positional arguments; keyword arguments and splats are refused."""
    arguments = [a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]
    if any(a.type in ("keyword_argument", "list_splat", "dictionary_splat") for a in arguments):
        raise Refusal(call, f"`{text(call)[:60]}`: only positional arguments are modelled here")
    return arguments


def _unpacked(target: Node, wanted: int, iterable: Node) -> list[Node]:
    """The parts of a loop target that unpacks `wanted` values: `i, v` or `(i, v)`."""
    parts = [part for part in target.named_children if part.type != "comment"]
    if target.type not in ("pattern_list", "tuple_pattern") or len(parts) != wanted:
        raise Refusal(
            target,
            f"`for {text(target)} in {text(iterable)[:60]}`: each item holds {wanted} values; unpack them into {wanted} names",
        )
    return parts


def _enumerated(iterable: Node) -> tuple[Node, int]:
    """`enumerate(x)`, `enumerate(x, 1)` or `enumerate(x, start=1)`: what it runs over, and the first index."""
    arguments = [a for a in iterable.child_by_field_name("arguments").named_children if a.type != "comment"]
    positional = [a for a in arguments if a.type != "keyword_argument"]
    keywords = {
        text(a.child_by_field_name("name")): a.child_by_field_name("value") for a in arguments if a.type == "keyword_argument"
    }
    if not 1 <= len(positional) <= 2 or set(keywords) - {"start"} or (len(positional) == 2 and keywords):
        raise Refusal(iterable, f"`{text(iterable)[:60]}`: enumerate takes what it runs over and an optional start")
    start = positional[1] if len(positional) == 2 else keywords.get("start")
    if start is None:
        return positional[0], 0
    value = unparenthesised(start)
    negative = value.type == "unary_operator" and text(value.child_by_field_name("operator")) == "-"
    number = value.child_by_field_name("argument") if negative else value
    if number.type != "integer":
        raise Refusal(
            start,
            f"`{text(iterable)[:60]}`: the start of enumerate must be an integer constant; "
            f"add `{text(start)}` to the index where you use it",
        )
    constant = int(text(number).replace("_", ""), 0)
    return positional[0], -constant if negative else constant


def _strong(rule: DtypeRule) -> DtypeRule:
    """The rule of a NumPy value made from `rule`'s: its Python numbers become NumPy's float64 or int64."""
    if rule.fixed:
        return rule
    return DtypeRule(tuple(s if s.startswith("!") else f"!{s}" for s in rule.sources), rule.floating)


def _converted(value: Value, dtype: str) -> Value:
    """`value.astype(dtype)` or `np.float32(value)`: every element rounded to `dtype`, as NumPy does before
    anything else meets it (`x.astype(np.float32) * 0.1` multiplies in float32)."""
    return Value(value.shape, lambda index: Cast(dtype, value.element(index)), DtypeRule(fixed=dtype))


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


def _parameters(name: str, function: Node) -> list[tuple[str, Node | None]]:
    """(name, default or None) for each parameter of a function or a lambda."""
    holder = function.child_by_field_name("parameters")
    found: list[tuple[str, Node | None]] = []
    for parameter in holder.named_children if holder is not None else []:
        if parameter.type == "comment":
            continue
        default = parameter.child_by_field_name("value") if "default" in parameter.type else None
        identifier = (
            parameter if parameter.type == "identifier" else parameter.child_by_field_name("name") or parameter.named_children[0]
        )
        if identifier.type != "identifier":
            raise Refusal(parameter, f"`{name}`'s parameter `{text(parameter)}` is not a plain name")
        found.append((text(identifier), default))
    return found


def _body_statements(function: Node) -> list[Node]:
    """A function's statements, without comments and its docstring."""
    body = [c for c in function.child_by_field_name("body").named_children if c.type != "comment"]
    if body and body[0].type == "expression_statement" and body[0].named_children[0].type == "string":
        body = body[1:]
    return body


def _integer_uses(body: Node) -> set[str]:
    """Names a body uses as integers: in `range(...)` and in subscripts. A helper's parameter used so is bound to
    the caller's size, which the loops it bounds need; others are values."""
    found: set[str] = set()
    stack = [body]
    while stack:
        current = stack.pop()
        integer = current.type == "subscript" or (
            current.type == "call" and text(current.child_by_field_name("function")) in ("range", "reversed")
        )
        if integer:
            parts = (
                list(current.children_by_field_name("subscript"))
                if current.type == "subscript"
                else [current.child_by_field_name("arguments")]
            )
            for part in parts:
                inner = [part]
                while inner:
                    item = inner.pop()
                    if item.type == "identifier":
                        found.add(text(item))
                    inner.extend(item.named_children)
        stack.extend(current.named_children)
    return found


def _masked(node: Node) -> tuple[Node, Node] | None:
    """(`x`, `mask`) for `x[mask]` with a boolean-valued subscript written in place (`x > 0`, `(a < b) & c`, `~m`)."""
    node = unparenthesised(node)
    if node.type != "subscript" or _subscript_count(node) != 1:
        return None
    item = unparenthesised(node.child_by_field_name("subscript"))
    boolean = item.type in ("comparison_operator", "not_operator") or (
        item.type in ("binary_operator", "unary_operator") and text(item.child_by_field_name("operator")) in ("&", "|", "^", "~")
    )
    return (node.child_by_field_name("value"), item) if boolean else None


def _reads_any(values: list[Node], targets: list[Node]) -> bool:
    """Whether any of `values` reads an array or name that one of `targets` writes."""
    written = {text(t.child_by_field_name("value") if t.type == "subscript" else t) for t in targets}
    stack = list(values)
    while stack:
        current = stack.pop()
        if current.type == "identifier" and text(current) in written:
            return True
        stack.extend(current.named_children)
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


def _is_newaxis(node: Node) -> bool:
    return node.type == "none" or text(node) in ("np.newaxis", "numpy.newaxis")


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
