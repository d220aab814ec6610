"""NumPy array statements lowered into element statements over implicit loops.

An array expression becomes a `Value`: its extents, and a function from an index to
the scalar expression of that element. Slices, broadcasting and elementwise operators
only compose these functions, so a chain of them becomes one statement and NumPy's
implicit temporaries disappear. A reduction or a matrix product is materialized: an
initializing statement and an updating one over the output's loops plus the reduced
ones. An assignment loops over its target's extents. Every statement lands in the
same `Walk` as the loop front-end's, so there is one model.

This module keeps statements, bindings, locals and emission; the value algebra and each NumPy
function's lowering live in `ingest.numpy`, looked up by name in its registry.

Implicit loops are named by role: the output's dimensions take `i, j, k, ...` in order
(skipping names the function already uses), reduced dimensions the next free letters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import count

import islpy as isl
from tree_sitter import Node

from repoos_agent.ingest.numpy import FUNCTIONS, METHODS, CallSite
from repoos_agent.ingest.numpy.products import matmul
from repoos_agent.ingest.numpy.reductions import reduce
from repoos_agent.ingest.numpy.refusals import RANK_HINT
from repoos_agent.ingest.numpy.ufuncs import UNARY_C_NAMES
from repoos_agent.ingest.numpy.values import (
    Index,
    Items,
    Place,
    Value,
    View,
    broadcast,
    broadcast_to,
    is_one,
    is_whole,
    masked,
    row,
    strong,
    subscript_count,
    transposed,
)
from repoos_agent.ingest.parse import slice_parts, text
from repoos_agent.ingest.ragged import RaggedView, is_ragged_reduction, ragged_reduction, ragged_refusal, ragged_view
from repoos_agent.ingest.scop import (
    CONSTANTS,
    ISL_RESERVED,
    LoopHeader,
    LoopVariableProduct,
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
    KEEPS_INTEGERS,
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
from repoos_agent.model.kernel import (
    Allocation,
    Condition,
    DtypeRequirement,
    DtypeRule,
    DynamicLoop,
    Extent,
    Failure,
    FiniteCheck,
    Loop,
    ReturnValue,
    SameKindCast,
    ShapeParameter,
    SizeFloor,
)

LOOP_NAMES = ("i", "j", "k", "l", "p", "q", "r", "s", "u", "v", "w", "x", "y", "z")
ARRAY_OPERATORS = ("+", "-", "*", "/", "//", "%", "**")


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
    casts: list[SameKindCast] = field(default_factory=list)  # copies NumPy makes only within a kind
    requirements: list[DtypeRequirement] = field(default_factory=list)  # values modelled for some types only
    finite: list[FiniteCheck] = field(default_factory=list)  # arguments checked finite at the native entry
    size_floors: list[SizeFloor] = field(default_factory=list)  # sizes checked against NumPy's least at the native entry
    failures: list[Failure] = field(default_factory=list)  # what NumPy raises on that only the computation finds
    compacted: dict[str, tuple[Value, Value]] = field(default_factory=dict)  # `v = x[m]`: kept elements, ones
    unmasked: str = ""  # the mask of the masked assignment being lowered: reads through it are element by element
    depth: dict[tuple[tuple[str, ...], str], int] = field(default_factory=dict)  # loops around a local's binding
    equal: dict[Extent, Extent] = field(default_factory=dict)  # extents broadcasting found equal (union-find)
    loop_elements: dict[str, tuple[tuple[Loop, ...], tuple[Condition, ...]]] = field(default_factory=dict)  # `v`, `row`: their body
    emitted: int = 0  # element statements this front-end emitted
    ragged: dict[str, RaggedView] = field(default_factory=dict)  # `cols = A_col[A_row[i]:A_row[i + 1]]`: rows of data's length
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

    def lower_call(
        self, node: Node, loops: tuple[Loop, ...], guards: tuple[Condition, ...], positions: tuple[int, ...], counter: list[int]
    ) -> None:
        """A NumPy call as a statement (`np.copyto(dst, src)`): its lowering writes into its arguments. A call that
        computes a value would drop it, which is refused."""
        self.statement = node
        try:
            function = self.walk.names.canonical(text(node.child_by_field_name("function"))).removeprefix("np.")
            arguments = [a for a in node.child_by_field_name("arguments").named_children if a.type != "comment"]
            positional = [a for a in arguments if a.type != "keyword_argument"]
            keywords = {
                text(a.child_by_field_name("name")): a.child_by_field_name("value")
                for a in arguments
                if a.type == "keyword_argument"
            }
            if function not in FUNCTIONS:
                raise Refusal(node, f"`np.{function}` is not modelled")
            site = CallSite(function, positional, keywords, Place(loops, guards, positions, counter), node, node)
            if FUNCTIONS[function].lower(self, site) is not None and "out" not in keywords:  # `out=` is what it wrote
                raise Refusal(node, f"`{text(node)[:60]}` computes a value and drops it: assign it to a name or a slice")
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
            if kind == "identifier" and (
                text(current) in self.locals or text(current) in self.walk.index_tuples or text(current) in self.ragged
            ):
                return True
            chained = kind == "assignment" and getattr(current.child_by_field_name("right"), "type", "") == "assignment"
            if (
                chained
                or kind in ("slice", "ellipsis", "none", "keyword_argument", "pattern_list", "tuple_pattern")
                or (kind == "binary_operator" and "@" in _operator(current))
            ):
                return True
            if kind == "attribute" and text(current.child_by_field_name("attribute")) in ("T", "sum", "max", "min", "mean", "copy"):
                return True
            if kind == "call":
                callee = current.child_by_field_name("function")
                name = text(callee).rpartition(".")[2]
                if name in self.helpers or (callee.type == "attribute" and name not in {*UNARY_C_NAMES, "pow"}):
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
                and subscript_count(current) < self.walk.ranks.get(_subscript_base(current), 0)
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
        if right.type == "assignment":
            self._chained(node, place)
            return
        self._assign(left, op, right, place, node)

    def _chained(self, node: Node, place: Place) -> None:
        """`a = b = value`: the value computed once (a copy, so no target can change it under the next), then bound
        to each target from left to right, as Python does; names bound so share one array, as Python's do."""
        targets, inner = [], node
        while inner.type == "assignment" and inner.child_by_field_name("right") is not None:
            targets.append(inner.child_by_field_name("left"))
            inner = inner.child_by_field_name("right")
        written = ("identifier", "subscript")
        if inner.type == "augmented_assignment" or any(t.type not in written or self.selection(t) for t in targets):
            raise Refusal(node, f"`{text(node)[:60]}`: a chained assignment is modelled into names and subscripts")
        value = self.materialize(self.value(inner, place), "chained", place, node)
        for target in targets:
            if target.type == "identifier":
                self._bind(text(target), inner, place, node, value)
            else:
                self.write(self.value(target, place), "=", value, inner, place, node)

    def _selects_alike(self, right: Node, mask: str) -> bool:
        """Whether every array `right` reads is read through `mask` (`x[m] ** -1.5`): NumPy's compacted operands then
        line up with the masked positions, so the expression is computed element by element where the mask holds."""
        stack = [right]
        while stack:
            current = stack.pop()
            selection = self.selection(current)
            if selection is not None and text(selection[1]) == mask and selection[0].type == "identifier":
                continue
            if current.type == "identifier" and self._is_array_name(text(current)):
                return False
            stack.extend(current.named_children)
        return True

    def _is_array_name(self, name: str) -> bool:
        local = self.locals.get(name)
        return (local is not None and local.rank > 0) or self._is_array_argument(name)

    def _masked_store(self, base_node: Node, mask_node: Node, op: str, right: Node, place: Place, node: Node) -> None:
        """`a[mask] = v` (or `op=`): a statement over all of `a` that writes where the mask holds and keeps the old
        element elsewhere. `v` is a scalar, or the same mask applied to an array of `a`'s shape (`a[m] = b[m]`)."""
        target, mask = self.value(base_node, place), self.value(mask_node, place)
        if target.view is None:
            raise Refusal(base_node, f"`{text(base_node)}` is not stored memory")
        self.mask_of(mask, target, mask_node, base_node)
        if self._selects_alike(right, text(mask_node)):
            self.unmasked = text(mask_node)
            try:
                new = self.value(right, place)
            finally:
                self.unmasked = ""
            if new.rank and not self.same_shape(new.shape, target.shape):
                raise Refusal(right, f"`{text(right)[:60]}`: the masked arrays must have `{text(base_node)}`'s shape")
        else:
            raise Refusal(
                right,
                f"`{text(right)[:60]}`: a masked assignment takes scalars and arrays under the same mask "
                f"(`b[m] ** 2`), element by element",
            )
        binary = {"+=": "+", "-=": "-", "*=": "*", "/=": "/"}.get(op)

        def element(index: Index) -> Expr:
            old = target.element(index)
            written = new.element(index if new.rank else ())
            return Choice(mask.element(index), Binary(binary, old, written) if binary else written, old)

        value = Value(target.shape, element, target.dtype.merged(new.dtype) if binary else target.dtype)
        self.write(target, "=", value, right, place, node)

    def selection(self, node: Node) -> tuple[Node, Node] | None:
        """(`x`, `mask`) for `x[mask]` with a boolean mask: an expression written in place (`x[x > 0]`), or a boolean
        array bound to a name before (`m = x > 0`, then `x[m]`)."""
        found = masked(node)
        node = unparenthesised(node)
        if found is not None or node.type != "subscript" or subscript_count(node) != 1:
            return found
        item = unparenthesised(node.child_by_field_name("subscript"))
        held = self.locals.get(text(item)) if item.type == "identifier" else None
        return (node.child_by_field_name("value"), item) if held is not None and held.boolean and held.rank else None

    def _compact(self, name: str, base_node: Node, mask_node: Node, place: Place, node: Node) -> None:
        """`values = x[mask]`: a selection whose length the data decides, kept as what its sum and count need (the
        selected elements in place, zeros elsewhere, and the mask as ones and zeros), copied now as NumPy copies.
        Its sum and mean are modelled; any other use of `values` is refused."""
        base, mask = self.value(base_node, place), self.value(mask_node, place)
        self.mask_of(mask, base, mask_node, base_node)
        kept = self.materialize(
            Value(base.shape, lambda index: Choice(mask.element(index), base.element(index), Number(0)), base.dtype),
            name,
            place,
            node,
        )
        ones = Value(mask.shape, lambda index: Choice(mask.element(index), Number(1), Number(0)), DtypeRule(fixed="int64"))
        self.compacted[name] = (kept, self.materialize(ones, f"{name}_count", place, node))
        self.locals.pop(name, None)

    def require_cast(self, source: DtypeRule, target: DtypeRule, node: Node) -> None:
        """A copy NumPy makes only within a kind (`np.copyto`): checked against the call's types when it is built."""
        self.casts.append(SameKindCast(source, target, node.start_point[0] + 1, text(node)[:60]))

    def require_dtype(self, value: DtypeRule, allowed: tuple[str, ...], node: Node) -> None:
        """A value modelled for the `allowed` element types only: checked against the call's types when it is built."""
        self.requirements.append(DtypeRequirement(value, allowed, node.start_point[0] + 1, text(node)[:60]))

    def require_finite(self, array: str, node: Node) -> None:
        """An argument whose values must be finite where NumPy raises otherwise: checked at the native entry."""
        self.finite.append(FiniteCheck(array, node.start_point[0] + 1, text(node)[:60]))

    def require_at_least(self, size: AffineExpr, least: int, node: Node) -> None:
        """A size NumPy raises on below `least`: checked at the native entry (nothing to check when it is a constant
        or a sum of extents, which are never negative, and `least` is 0)."""
        if size.is_constant and size.constant >= least:
            return
        if least <= 0 <= size.constant and all(
            coefficient >= 0 and name in self.walk.shape_parameters for name, coefficient in size.terms
        ):
            return
        self.size_floors.append(SizeFloor(size, least, node.start_point[0] + 1, text(node)[:60]))

    def mask_of(self, mask: Value, base: Value, mask_node: Node, base_node: Node) -> None:
        """A mask selects from an array of its own shape: NumPy raises otherwise, so the extents are equal at any call
        that runs (an assumption the call is checked for, as broadcasting's are)."""
        if not mask.boolean or mask.rank != base.rank:
            raise Refusal(mask_node, f"`{text(mask_node)}` is not a boolean mask of `{text(base_node)}`'s shape")
        self._equate([mask.shape], base.shape)

    def _unpack(self, left: Node, right: Node, op: str, place: Place, node: Node) -> None:
        """`a, b = x, y`: every value first, then every binding, as Python does (`a, b = b, a + b` swaps). Scalars
        are copied into fresh locals before any is bound; arrays are rebound, not copied, as in Python."""
        targets = left.named_children
        values = right.named_children if right.type in ("expression_list", "tuple") else []
        callee = right.child_by_field_name("function") if right.type == "call" else None
        if op == "=" and callee is not None and callee.type == "identifier" and text(callee) in self.helpers:
            self._unpack_returned(targets, right, place, node)
            return
        items = self._items(right, place) if op == "=" else None
        if items is not None:
            self._unpack_items(targets, items, right, place, node)
            return
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

    def _unpack_returned(self, targets: list[Node], call: Node, place: Place, node: Node) -> None:
        """`a, b[0] = helper(...)`: the helper's returned items, each copied (so no target changes another before it is
        bound), then bound or stored in order."""
        arguments = [a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]
        positional = [a for a in arguments if a.type != "keyword_argument"]
        keywords = {
            text(a.child_by_field_name("name")): a.child_by_field_name("value") for a in arguments if a.type == "keyword_argument"
        }
        name = text(call.child_by_field_name("function"))
        values = self._inline_values(name, positional, keywords, place, call)
        if len(values) != len(targets):
            raise Refusal(node, f"`{name}` returns {len(values)} values for {len(targets)} names")
        copies = [self.materialize(value, "returned", place, node) for value in values]
        for target, value in zip(targets, copies, strict=True):
            if target.type == "identifier":
                self._bind(text(target), call, place, node, value)
            elif target.type == "subscript" and self.selection(target) is None:
                self.write(self.value(target, place), "=", value, call, place, node)
            else:
                raise Refusal(target, f"`{text(target)}`: a helper's results are unpacked into names and subscripts")

    def _unpack_items(self, targets: list[Node], items: Items, call: Node, place: Place, node: Node) -> None:
        """`hist, edges = np.histogram(...)`: each item, stored by the call, bound to its name or stored in order."""
        if len(items.values) != len(targets):
            raise Refusal(node, f"`{text(call)[:60]}` returns {len(items.values)} values for {len(targets)} names")
        for target, value in zip(targets, items.values, strict=True):
            if target.type == "identifier":
                self._bind(text(target), call, place, node, value)
            elif target.type == "subscript" and self.selection(target) is None:
                self.write(self.value(target, place), "=", value, call, place, node)
            else:
                raise Refusal(target, f"`{text(target)}`: a tuple's items are unpacked into names and subscripts")

    def _assign(self, left: Node, op: str, right: Node, place: Place, node: Node) -> None:
        selection = self.selection(left)
        if selection:
            self._masked_store(*selection, op, right, place, node)
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
        if op == "=" and self._materializes(whole):
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
        if target.boolean and op != "=":
            raise Refusal(node, f"`{text(node)[:60]}`: `{op}` into a boolean array is not modelled; assign with `&`, `|` or `~`")
        mapper = broadcast_to(value, target.shape, right)
        self._equate([value.shape], target.shape)
        if self._overwrites_its_reads(target, op, value, mapper, place):
            value = self.materialize(value, "old", place, node)
            mapper = broadcast_to(value, target.shape, right)
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
        selection = self.selection(whole) if computed is None and not self.unmasked else None
        if selection is not None:
            self._compact(name, *selection, place, node)
            return
        self.compacted.pop(name, None)
        view = ragged_view(self, whole, place) if computed is None else None
        if view is not None:
            self.locals.pop(name, None)
            self.ragged[name] = view
            return
        self.ragged.pop(name, None)
        before = len(self.allocations)
        if computed is not None:
            value = computed
        elif self._materializes(whole):
            value = self._produce(whole, place, node, into=None, name=name)
        else:
            value = self.value(right, place)
        assert value is not None
        if value.boolean and value.rank == 0:
            raise Refusal(right, f"`{text(right)}` is a boolean scalar, which is not stored: test it where it is used")
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
            and self.same_shape(existing.shape, value.shape)
        ):
            if not (value.view is not None and value.view.array == owned and is_whole(value)):
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
                if not is_one(extent) and extent != wide:
                    first, second = self._canonical(extent), self._canonical(wide)
                    if first != second:
                        self.equal[first] = second

    def assume_equal(self, first: Extent, second: Extent) -> None:
        """NumPy raises unless these extents are equal (a reshape's sizes, the parts of a concatenation): the call
        is checked for it, as for broadcasting."""
        first, second = self._canonical(first), self._canonical(second)
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

    def same_shape(self, first: tuple[Extent, ...], second: tuple[Extent, ...]) -> bool:
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
        self.ragged.pop(name, None)
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
            if value.view is not None and self._is_array_argument(value.view.array) and is_whole(value):
                return ReturnValue(value.view.array)
        elif self._materializes(whole):
            produced = self._produce(whole, place, node, into=None, name="result")
            assert produced is not None
            value = produced
        else:
            value = self.value(part, place)
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
        dtype = DtypeRule(fixed="bool") if value.boolean else value.dtype
        name = self.allocate("result", (Extent(AffineExpr.of_constant(1)),), dtype, node, role="result")
        self.emit((), "=", lambda index: (ArrayRef(name, (AffineExpr.of_constant(0),)), value.element(())), place, node)
        return ReturnValue(name, scalar=True)

    def _mark_result(self, name: str) -> None:
        self.allocations = [
            Allocation(a.name, a.shape, a.dtype, "result", a.line) if a.name == name else a for a in self.allocations
        ]

    def _allocation_of(self, value: Value) -> Allocation | None:
        if value.view is None or not is_whole(value):
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
        then: tuple[Callable[[Index], tuple[ArrayRef | Name, Expr]], ...] = (),
        inner: tuple[DynamicLoop, ...] = (),
    ) -> None:
        """One statement over implicit loops: the output's dimensions, then `reduced` ones (extent and
        start), run in `order` (indices into output dims then reduced dims; default: as listed). `then` are
        assignments that follow it in the same innermost body, each reading what the ones before wrote
        (an arg-max's index, then its maximum). `inner` are loops with bounds read from arrays, run inside
        each instance (a row's sum)."""
        extents = list(shape) + [extent for extent, _ in reduced]
        starts = [0] * len(shape) + [start for _, start in reduced]
        looped = [position for position in range(len(extents)) if not (is_one(extents[position]) and starts[position] == 0)]
        if then and not looped and extents:  # statements sharing a body need a loop, even one of a single iteration
            looped = [len(extents) - 1]
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
                cited,
                tuple(loops),
                tuple(guards),
                target,
                op,
                value,
                positions,
                lowered=True,
                product=product,
                pairwise=pairwise,
                inner=inner,
            )
        )
        assert not then or order, "statements sharing a body need a loop around them"
        for offset, following in enumerate(then, start=1):
            target, value = following(variables)
            self.emitted += 1
            self.walk.statements.append(
                RawStatement(cited, tuple(loops), tuple(guards), target, "=", value, (*positions[:-1], offset), lowered=True)
            )

    def loop(self, start: AffineExpr, stop: AffineExpr, place: Place, node: Node) -> tuple[Place, AffineExpr]:
        """A loop of a lowering's own, `start <= v < stop` (affine in the sizes and `place`'s loops), for a NumPy
        function whose algorithm is a loop nest (`np.linalg.cholesky`): the place of its body, and `v`."""
        (name,) = self._fresh_loop_names(1, place, node)
        self._register(stop, node, place)
        slot = place.counter[0]
        place.counter[0] += 1
        loop = Loop(name, Bound((start,), "max"), Bound((stop,), "min"), 1, node.start_point[0] + 1)
        return Place((*place.loops, loop), place.guards, (*place.positions, slot), [0]), AffineExpr.of_variable(name)

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
        dtype = DtypeRule(fixed="bool") if value.boolean else value.dtype  # NumPy's bool: one byte, 0 or 1
        name = self.allocate(hint, value.shape, dtype, node, place=place)
        self.emit(value.shape, "=", lambda index: (ArrayRef(name, index), value.element(index)), place, node)
        return self.stored(name, value.shape, dtype)

    @staticmethod
    def stored(name: str, shape: tuple[Extent, ...], dtype: DtypeRule) -> Value:
        """An allocation's value: a view of all of it, a mask where its type is bool."""
        boolean = dtype.fixed == "bool"
        return Value(shape, lambda index: ArrayRef(name, index), dtype, View(name, lambda index: index), boolean)

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
        if is_ragged_reduction(self, node, place):
            return ragged_reduction(self, node, place, "")
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
            selection = self.selection(node)
            if selection is not None and self.unmasked and text(selection[1]) == self.unmasked:
                return self.value(selection[0], place)  # under a masked assignment's own mask: element by element
            if selection is not None:
                raise Refusal(
                    node,
                    f"`{text(node)}` compacts the elements the mask selects, a number the data decides: reduce them "
                    f"(`np.sum({text(node)})`) or keep the shape (`np.where(mask, x, 0)`)",
                )
            items = self._items(node.child_by_field_name("value"), place)
            if items is not None:
                return self._item(items, node)
            base = self.value(node.child_by_field_name("value"), place)
            return self._index(base, list(node.children_by_field_name("subscript")), place, node)
        if kind == "unary_operator":
            op = text(node.child_by_field_name("operator"))
            operand = self.value(node.child_by_field_name("argument"), place)
            if op == "~" and operand.boolean:
                return self.elementwise([operand], lambda a: Unary("not", a), node, boolean=True)
            if op not in "-+":
                raise Refusal(node, f"operator `{op}` is not modelled on arrays")
            if op == "+":
                return operand
            if operand.boolean and operand.rank:
                raise Refusal(node, f"`{text(node)[:60]}`: NumPy does not negate a boolean array; use `~` for its opposite")
            return Value(operand.shape, lambda index: Unary("-", operand.element(index)), operand.dtype)
        if kind == "binary_operator":
            return self._binary(node, place)
        if kind == "comparison_operator":
            return self._comparison(node, place)
        if kind == "boolean_operator":
            op = text(node.child_by_field_name("operator"))
            left, right = self.value(node.child_by_field_name("left"), place), self.value(node.child_by_field_name("right"), place)
            return self.elementwise([left, right], lambda a, b: Binary(op, a, b), node, boolean=True)
        if kind == "conditional_expression":
            then, test, otherwise = (self.value(n, place) for n in node.named_children)
            if then.rank or test.rank or otherwise.rank:
                raise Refusal(node, f"`{text(node)[:60]}`: `x if c else y` of arrays is not modelled; use np.where(c, x, y)")
            return self.elementwise([test, then, otherwise], lambda c, a, b: Choice(c, a, b), node)
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
        if name in self.ragged:
            raise ragged_refusal(node, name, self.ragged[name])
        if name in self.compacted:
            raise Refusal(
                node,
                f"`{name}` holds the elements a mask selected, a number the data decides: its sum and mean are modelled "
                "(`np.sum(x[m])`, `x[m].mean()`); for anything else keep the shape (`np.where(mask, x, 0)`)",
            )
        if name in self.walk.index_aliases:
            position = self.walk.index_aliases[name]
            return Value((), lambda index: affine_value(position), DtypeRule(("<int>",)))
        if name in self.walk.index_tuples:
            raise index_tuple_refusal(node)
        if name in self.walk.size_aliases:
            size = self.walk.size_aliases[name]
            self.walk.parameters.update(dict.fromkeys(sorted(size.variables)))
            return Value((), lambda index: affine_value(size), DtypeRule(("<int>",)))
        if name in self.walk.constants and name not in self.walk.arguments and self._visible_local(name) is None:
            number = self.walk.constants[name]  # a Python number of the module's: weak, as a literal is
            return Value((), lambda index: Number(number), DtypeRule(("<float>",) if isinstance(number, float) else ("<int>",)))
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
                return strong(self._expr_rule(expr.operand, seen))
            if expr.dtype == "widened":
                return replace(self._expr_rule(expr.operand, seen), widened=True)
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
        if isinstance(expr, Call) and expr.module == "np":  # float unless an extremum, `abs` or a rounding, and a NumPy value
            return strong(DtypeRule(rule.sources, expr.function not in KEEPS_INTEGERS))
        return rule

    def _is_size(self, node: Node) -> bool:
        """`A.shape[k]`, `len(A)`, `len(A[0])` or `s[k]` with `s = A.shape`: an integer size, not an array."""
        read = shape_read(node, self.walk.stored_shapes)
        return read is not None and read[1] is not None

    def _is_array_argument(self, name: str) -> bool:
        return name in self.walk.arguments and self.walk.ranks.get(name, 0) > 0

    def size(self, array: str, dim: int, node: Node) -> AffineExpr:
        """The extent of an argument's dimension: 1 where the walk models it so (1 at the call, and tied by
        broadcasting, which a symbolic extent cannot say; the kernel lists it, for each call to be checked), else
        the user's own size name if it has one (`n = A.shape[0]`)."""
        if (array, dim) in self.walk.unit_axes:
            self.walk.unit_axes_taken[array, dim] = None
            return AffineExpr.of_constant(1)
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
            return transposed(value, node)
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
                base = row(base, position)
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
            if item.type == "identifier" and text(item) in self.ragged:
                raise ragged_refusal(node, text(item), self.ragged[text(item)])
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
        except LoopVariableProduct:
            raise
        except Refusal:
            raise Refusal(
                node, f"index `{text(node)}` is not affine in the loop variables and sizes (index arrays are not modelled)"
            ) from None

    def _slice(self, node: Node, extent: Extent, place: Place) -> tuple[AffineExpr, int, Extent]:
        """A slice's first index, step and length, by Python's rules for in-range bounds."""
        parts = slice_parts(node)
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
            return self.elementwise([left, right], lambda a, b: Binary(logical, a, b), node, boolean=True)
        if op not in ARRAY_OPERATORS:
            raise Refusal(node, f"operator `{op}` is not modelled on arrays (known: {' '.join(ARRAY_OPERATORS)} @)")
        left, right = self.value(left_node, place), self.value(right_node, place)
        floating = op == "/"
        value = self.elementwise([left, right], lambda a, b: Binary(op, a, b), node)
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
        return self.elementwise(operands, lambda a, b: Binary(operators[0], a, b), node, boolean=True)

    def elementwise(self, values: list[Value], combine: Callable[..., Expr], node: Node, boolean: bool = False) -> Value:
        shape, mappers = broadcast([v.shape for v in values], node)
        if shape and not boolean and all(value.boolean for value in values):
            raise Refusal(
                node,
                f"`{text(node)[:60]}`: arithmetic of boolean arrays alone is not modelled (NumPy keeps them bool); "
                "count with `m * 1` or np.where(m, 1, 0), combine with `&`, `|` or `~`",
            )
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
        if _is_numpy_module(module):
            return self._numpy(dotted.removeprefix("np."), positional, keywords, place, node)
        if module == "math":
            return self._math(method, positional, place, node)
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
        known = (*self.locals, *self.compacted, *self.walk.arguments)
        if root.type == "identifier" and text(root) not in known:
            raise Refusal(
                node,
                f"call `{text(callee)}`: module `{text(owner)}` is unknown here (NumPy, math and this module's functions are)",
            )
        if method in METHODS:
            site = CallSite(method, [owner, *positional], keywords, place, node, node, method=True)
            return METHODS[method].lower(self, site) or self._unreachable(node)
        self.value(owner, place)  # an owner that is no array is the first thing wrong
        known = " ".join(f".{name}" for name in sorted(METHODS))
        raise Refusal(node, f"method `.{method}()` is not modelled (known: {known} .T)")

    def _builtin_sum(self, positional: list[Node], keywords: dict[str, Node], place: Place, node: Node) -> Value:
        """Python's `sum(x)` of an array: its items along the first axis added in order, from 0."""
        if len(positional) != 1 or keywords:
            raise Refusal(node, "`sum(...)` is modelled with one array and no start value")
        if positional[0].type == "generator_expression":
            raise Refusal(node, "`sum(... for ...)` is not modelled: write the loop (`s = 0.0`, then `s += ...` in it)")
        operand = self.value(positional[0], place)
        if operand.rank == 0:
            raise Refusal(node, f"`sum({text(positional[0])})`: the argument is not an array")
        result = reduce(self, "sum", operand, (0,), False, place, node, None, "sums", node, in_order=True)
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
            return self.elementwise(values, lambda a: Call("abs", (a,)), node)
        if len(values) < 2:
            raise Refusal(node, f"`{name}` of values needs at least two arguments (use np.{name} to reduce an array)")
        return self.elementwise(values, lambda *xs: Call(name, tuple(xs)), node)

    def _numpy(self, function: str, positional: list[Node], keywords: dict[str, Node], place: Place, node: Node) -> Value:
        """`np.function(...)` (`np.linalg.norm`: `linalg.norm`): the lowering registered under its name (`ingest.numpy`)."""
        if function not in FUNCTIONS and function.startswith("linalg."):
            raise Refusal(
                node,
                f"`np.{function}` is not modelled: write a product with `@` (`np.linalg.norm` of vectors and matrices "
                "and `np.linalg.cholesky` are)",
            )
        if function not in FUNCTIONS:
            raise Refusal(node, f"`np.{function}` is not modelled")
        if FUNCTIONS[function].items:
            raise Refusal(node, f"`{text(node)[:60]}` returns a tuple: take one item (`[0]`) or unpack it (`hist, edges = ...`)")
        site = CallSite(function, positional, keywords, place, node, node)
        return FUNCTIONS[function].lower(self, site) or self._unreachable(node)

    def _items(self, node: Node, place: Place) -> Items | None:
        """The items of a NumPy call that returns a tuple (`np.histogram(...)`), lowered; None for anything else."""
        node = unparenthesised(node)
        if node.type != "call":
            return None
        module, method = self._callee_name(node)
        function = f"{module}.{method}".removeprefix("np.")
        if not _is_numpy_module(module) or function not in FUNCTIONS or not FUNCTIONS[function].items:
            return None
        arguments = [a for a in node.child_by_field_name("arguments").named_children if a.type != "comment"]
        positional = [a for a in arguments if a.type != "keyword_argument"]
        keywords = {
            text(a.child_by_field_name("name")): a.child_by_field_name("value") for a in arguments if a.type == "keyword_argument"
        }
        items = FUNCTIONS[function].lower(self, CallSite(function, positional, keywords, place, node, node))
        assert isinstance(items, Items)
        return items

    @staticmethod
    def _item(items: Items, node: Node) -> Value:
        """`call(...)[k]` of a tuple: item `k`, an integer constant (negative from the end)."""
        subscripts = list(node.children_by_field_name("subscript"))
        item = unparenthesised(subscripts[0]) if len(subscripts) == 1 else None
        count = len(items.values)
        try:
            position = int(text(item)) if item is not None else count
        except ValueError:
            position = count
        if not -count <= position < count:
            raise Refusal(node, f"`{text(node)[:60]}`: a tuple of {count} items is indexed by an integer constant below {count}")
        return items.values[position]

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

    def _inline(self, name: str, positional: list[Node], keywords: dict[str, Node], place: Place, node: Node) -> Value:
        """A call to a function of the same module (or one defined in the function, or a lambda) used as a value."""
        values = self._inline_values(name, positional, keywords, place, node)
        if len(values) != 1:
            raise Refusal(node, f"`{name}` returns {len(values)} values: unpack them (`a, b = {name}(...)`)")
        return values[0]

    def _inline_values(self, name: str, positional: list[Node], keywords: dict[str, Node], place: Place, node: Node) -> list[Value]:
        """A helper's body, with its parameters bound to the values passed, and what it returns (each item of a
        returned tuple). A function defined inside reads the caller's locals, as a closure."""
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
                return [self.value(function.child_by_field_name("body"), place)]
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

    def _inline_body(self, name: str, function: Node, place: Place) -> list[Value]:
        """The helper's statements walked in place (sizes it reads off its arrays bound while it runs, loops and
        all), then the value it returns."""
        from repoos_agent.ingest.scop import take_helper_sizes, walk_statement  # the walk calls this front end

        body = _body_statements(function)
        if not body:
            raise Refusal(function, f"`{name}` is inlined: it must end with `return value`")
        shadowed: dict[str, AffineExpr | None] = {}
        try:
            for statement in body[:-1]:
                taken = take_helper_sizes(self.walk, statement, function.child_by_field_name("body"))
                if taken is not None:
                    shadowed = {**taken, **shadowed}  # the first binding's previous value is the caller's
                    continue
                walk_statement(self.walk, statement, place.loops, place.guards, place.positions, place.counter)
            return self._returned(name, body[-1], place)
        finally:
            for size, before in shadowed.items():
                if before is None:
                    self.walk.size_aliases.pop(size, None)
                else:
                    self.walk.size_aliases[size] = before

    def _returned(self, name: str, statement: Node, place: Place) -> list[Value]:
        """What a helper's last statement returns, a value or a tuple's items: `return value`, `return a, b`, or an
        `if`/`else` whose branches each return as many."""
        if statement.type == "if_statement":
            alternatives = statement.children_by_field_name("alternative")
            if len(alternatives) != 1 or alternatives[0].type != "else_clause":
                raise Refusal(statement, f"`{name}` is inlined: an `if` it ends with needs an `else` and no `elif`")
            branches = [statement.child_by_field_name("consequence"), alternatives[0].child_by_field_name("body")]
            lasts = [[c for c in branch.named_children if c.type != "comment"] for branch in branches]
            if any(len(last) != 1 for last in lasts):
                raise Refusal(statement, f"`{name}` is inlined: each branch of the `if` it ends with must only return")
            test = self.value(statement.child_by_field_name("condition"), place)
            if test.rank:
                raise Refusal(statement, f"`{name}`: `if` on an array is ambiguous in NumPy; use np.where")
            then, otherwise = (self._returned(name, last[0], place) for last in lasts)
            if len(then) != len(otherwise):
                raise Refusal(statement, f"`{name}` returns {len(then)} values in one branch and {len(otherwise)} in the other")
            pick = lambda c, a, b: Choice(c, a, b)  # noqa: E731
            return [self.elementwise([test, a, b], pick, statement) for a, b in zip(then, otherwise, strict=True)]
        if statement.type != "return_statement" or not statement.named_children:
            raise Refusal(statement, f"`{name}` is inlined: it must end with `return value`")
        returned = unparenthesised(statement.named_children[0])
        items = returned.named_children if returned.type in ("expression_list", "tuple") else [returned]
        values = []
        for item in items:
            whole = unparenthesised(item)
            produced = self._produce(whole, place, whole, into=None, name=f"{name}_out") if self._materializes(whole) else None
            values.append(produced if produced is not None else self.value(item, place))
        return values

    # ---- products, reductions and creations (materialized) ----------------------------------

    def _materializes(self, node: Node) -> bool:
        """Whether an expression needs statements of its own (a product, a reduction, a creation), which may
        write the caller's target directly, rather than an element expression."""
        if node.type == "binary_operator" and _operator(node) == "@":
            return True
        if node.type != "call":
            return False
        module, method = self._callee_name(node)
        if _is_numpy_module(module):
            function = FUNCTIONS.get(f"{module}.{method}".removeprefix("np."))
            return function is not None and function.materializes
        return bool(module) and method in METHODS and METHODS[method].materializes

    def _callee_name(self, node: Node) -> tuple[str, str]:
        """A call's module (`np` for NumPy's own, however imported; the receiver for a method) and function."""
        module, _, method = self.walk.names.canonical(text(node.child_by_field_name("function"))).rpartition(".")
        return module, method

    def _produce(self, node: Node, place: Place, statement: Node, into: Value | None, name: str = "") -> Value | None:
        """Lower a product, reduction or creation into `into` (a stored target), or into a new
        allocation whose value is returned. Returns None when it wrote `into` itself."""
        node = unparenthesised(node)
        if is_ragged_reduction(self, node, place):
            return ragged_reduction(self, node, place, name)
        if node.type == "binary_operator":
            left, right = self.value(node.child_by_field_name("left"), place), self.value(node.child_by_field_name("right"), place)
            return matmul(self, left, right, place, statement, into, name, node)
        callee = node.child_by_field_name("function")
        arguments = [a for a in node.child_by_field_name("arguments").named_children if a.type != "comment"]
        positional = [a for a in arguments if a.type != "keyword_argument"]
        keywords = {
            text(a.child_by_field_name("name")): a.child_by_field_name("value") for a in arguments if a.type == "keyword_argument"
        }
        module, method = self._callee_name(node)
        if _is_numpy_module(module):
            function = f"{module}.{method}".removeprefix("np.")
            return FUNCTIONS[function].lower(self, CallSite(function, positional, keywords, place, node, statement, into, name))
        receiver = [callee.child_by_field_name("object"), *positional]
        return METHODS[method].lower(self, CallSite(method, receiver, keywords, place, node, statement, into, name, method=True))

    def output(
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

    def shape(self, node: Node, place: Place) -> tuple[Extent, ...]:
        node = unparenthesised(node)
        if node.type == "attribute" and text(node.child_by_field_name("attribute")) == "shape":
            return self.value(node.child_by_field_name("object"), place).shape
        items = node.named_children if node.type in ("tuple", "list") else [node]
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
        element = row(source, position)
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
            extents = self.shape(arguments[0], place)
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

    def local_extent(self, node: Node) -> AffineExpr | None:
        """The extent a size read of a local array reads (`weights.shape[0]` in an inlined helper), None for others."""
        read = shape_read(node, self.walk.stored_shapes)
        if read is None or read[1] is None or read[0] not in self.locals:
            return None
        value = self.locals[read[0]]
        dim = read[1] if read[1] >= 0 else value.rank + read[1]
        if not 0 <= dim < value.rank:
            raise Refusal(node, f"`{text(node)}`: `{read[0]}` has {value.rank} dimensions")
        extent = value.shape[dim]
        if extent.divisor != 1:
            raise Refusal(node, f"`{text(node)}` of a strided slice is not modelled: take the size of the whole array")
        return extent.size

    def is_array_local(self, name: str) -> bool:
        """Whether `name` is an array the function made (not an argument, not a view of one)."""
        value = self.locals.get(name)
        return (
            value is not None
            and value.rank > 0
            and value.view is not None
            and value.view.array in {a.name for a in self.allocations}
            and is_whole(value)
        )

    def fresh_name(self, node: Node) -> str:
        """A loop variable's name no statement of the function uses."""
        return self._fresh_loop_names(1, Place((), (), (), [0]), node)[0]

    def exchange(self, first: str, second: str) -> None:
        """`first, second = second, first` of two array locals: the names trade the arrays they stand for."""
        self.locals[first], self.locals[second] = self.locals[second], self.locals[first]

    def copy_local(
        self,
        source: str,
        target: str,
        loops: tuple[Loop, ...],
        guards: tuple[Condition, ...],
        positions: tuple[int, ...],
        counter: list[int],
        node: Node,
    ) -> None:
        """`target[...] = source` as a statement of its own, under `guards`."""
        place = Place(loops, guards, positions, counter)
        into, value = self.locals[target], self.locals[source]
        if not self.same_shape(into.shape, value.shape):
            raise Refusal(node, f"`{source}` and `{target}` are swapped but differ in shape")
        self.write(into, "=", value, node, place, node)

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


def _is_numpy_module(module: str) -> bool:
    """Whether a callee's module is NumPy (`np`, `np.linalg`), not a method on a NumPy call's result
    (`np.stack([x, y]).ravel`)."""
    return (module == "np" or module.startswith("np.")) and "(" not in module


def _operator(node: Node) -> str:
    operator = node.child_by_field_name("operator")
    return text(operator) if operator is not None else ""


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


def _subscript_base(node: Node) -> str:
    while node.type == "subscript":
        node = node.child_by_field_name("value")
    return text(node) if node.type == "identifier" else ""


def _is_newaxis(node: Node) -> bool:
    return node.type == "none" or text(node) in ("np.newaxis", "numpy.newaxis")


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
