"""One place per NumPy function: `@lowers("sum", methods=("sum",), materializes=True)` files a small function
under NumPy's name (and the array method of the same meaning), in the manner of DaCe's replacements.

Every lowering has one signature: it takes the front end (`Lowering`, what a NumPy function may use of it) and
the `CallSite` (the call's argument nodes, where it sits, and where a materialized result may go), and returns
the call's `Value` (its `Items` for a tuple), or None when it wrote the caller's target itself. `materializes` marks what needs
statements of its own (reductions, products, creations) rather than an element expression: the front end asks
`materializes(...)` instead of keeping lists of names. A method's receiver comes first among the positional
arguments, so `x.sum(axis=0)` and `np.sum(x, axis=0)` reach the same function."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from tree_sitter import Node

from repoos_agent.ingest.numpy.values import Index, Items, Place, Value
from repoos_agent.ingest.parse import text
from repoos_agent.ingest.scop import Refusal, Walk
from repoos_agent.model.affine import AffineExpr
from repoos_agent.model.expr import ArrayRef, Expr, Name
from repoos_agent.model.kernel import DtypeRule, DynamicLoop, Extent, Failure


class Lowering(Protocol):
    """What a NumPy function's lowering may use of the front end (`ingest.arrays.ArrayLowering`)."""

    walk: Walk
    read_only: dict[str, str]
    locals: dict[str, Value]

    def value(self, node: Node, place: Place) -> Value: ...

    def elementwise(self, values: list[Value], combine: Callable[..., Expr], node: Node, boolean: bool = False) -> Value: ...

    def materialize(self, value: Value, hint: str, place: Place, node: Node) -> Value: ...

    def allocate(
        self, hint: str, shape: tuple[Extent, ...], dtype: DtypeRule, node: Node, role: str = ..., place: Place | None = ...
    ) -> str: ...

    def stored(self, name: str, shape: tuple[Extent, ...], dtype: DtypeRule) -> Value: ...

    def output(
        self, shape: tuple[Extent, ...], dtype: DtypeRule, into: Value | None, name: str, node: Node, reads: set[str], place: Place
    ) -> tuple[Value, bool]: ...

    def emit(
        self,
        shape: tuple[Extent, ...],
        op: str,
        body: Callable[[Index], tuple[ArrayRef | Name, Expr]],
        place: Place,
        node: Node,
        reduced: tuple[tuple[Extent, int], ...] = ...,
        order: tuple[int, ...] | None = ...,
        product: bool = ...,
        pairwise: bool = ...,
        then: tuple[Callable[[Index], tuple[ArrayRef | Name, Expr]], ...] = ...,
        inner: tuple[DynamicLoop, ...] = ...,
    ) -> None: ...

    def same_shape(self, first: tuple[Extent, ...], second: tuple[Extent, ...]) -> bool: ...

    def assume_equal(self, first: Extent, second: Extent) -> None: ...

    def write(self, target: Value, op: str, value: Value, right: Node, place: Place, node: Node) -> None: ...

    def mask_of(self, mask: Value, base: Value, mask_node: Node, base_node: Node) -> None: ...

    def selection(self, node: Node) -> tuple[Node, Node] | None: ...

    def require_cast(self, source: DtypeRule, target: DtypeRule, node: Node) -> None: ...

    def require_dtype(self, value: DtypeRule, allowed: tuple[str, ...], node: Node) -> None: ...

    def require_finite(self, array: str, node: Node) -> None: ...

    def require_at_least(self, size: AffineExpr, least: int, node: Node) -> None: ...

    compacted: dict[str, tuple[Value, Value]]

    failures: list[Failure]

    def loop(self, start: AffineExpr, stop: AffineExpr, place: Place, node: Node) -> tuple[Place, AffineExpr]: ...

    def shape(self, node: Node, place: Place) -> tuple[Extent, ...]: ...


@dataclass(frozen=True)
class CallSite:
    """One NumPy call being lowered: `np.<function>(positional..., keywords...)`, or the method `function` with
    its receiver as the first positional argument. A materialized result goes into `into` when it can (a
    stored target the call does not read), else into a new allocation named after `name`; its element
    statements cite `statement`."""

    function: str
    positional: list[Node]
    keywords: dict[str, Node]
    place: Place
    node: Node
    statement: Node
    into: Value | None = None
    name: str = ""
    method: bool = False

    @property
    def spelled(self) -> str:
        """How the user wrote the callee: `np.sum` or `.sum()`, for messages."""
        return f".{self.function}()" if self.method else f"np.{self.function}"

    def refuse_keywords(self, known: tuple[str, ...] = ()) -> None:
        """Refuse keyword arguments other than `known`: one silently ignored (`out=`) would change the result."""
        unknown = sorted(set(self.keywords) - set(known))
        if unknown:
            allowed = f" (modelled: {', '.join(f'`{k}=`' for k in known)})" if known else ""
            raise Refusal(
                self.keywords[unknown[0]].parent,
                f"`{text(self.node)[:60]}`: `{unknown[0]}=` of `{self.spelled}` is not modelled{allowed}; "
                "assign the result and write it where it should go",
            )

    def values(self, lowering: Lowering, wanted: int) -> list[Value]:
        """The positional arguments' values, exactly `wanted` of them."""
        if len(self.positional) != wanted:
            raise Refusal(self.node, f"`{self.spelled}` takes {wanted} positional argument(s) here, got {len(self.positional)}")
        return [lowering.value(n, self.place) for n in self.positional]

    def argument(self, position: int, keyword: str) -> Node | None:
        """The argument NumPy's signature has at `position` (the receiver counted) or as `keyword=`, if given."""
        if keyword in self.keywords:
            return self.keywords[keyword]
        return self.positional[position] if len(self.positional) > position else None


Lower = Callable[[Lowering, CallSite], Value | Items | None]


@dataclass(frozen=True)
class Registered:
    """A NumPy function's lowering, whether it materializes (needs statements of its own), and whether it returns
    a tuple (`Items`), which a statement indexes or unpacks."""

    lower: Lower
    materializes: bool
    items: bool = False


FUNCTIONS: dict[str, Registered] = {}  # `sum`, `linalg.norm`: NumPy's names below `np`
METHODS: dict[str, Registered] = {}  # `sum`: array methods


def lowers(*names: str, methods: tuple[str, ...] = (), materializes: bool = False, items: bool = False) -> Callable[[Lower], Lower]:
    """Register a lowering under NumPy's `names` and the array `methods` of the same meaning."""

    def register(lower: Lower) -> Lower:
        entry = Registered(lower, materializes, items)
        for name in names:
            assert name not in FUNCTIONS, f"np.{name} is lowered twice"
            FUNCTIONS[name] = entry
        for name in methods:
            assert name not in METHODS, f".{name}() is lowered twice"
            METHODS[name] = entry
        return lower

    return register
