"""Extracting the static control part of one function into a `Kernel`.

The walk accepts exactly the subset the model can represent: `for` loops over
`range` with affine bounds, affine `if` guards, and assignments to array
elements or scalars. Anything else becomes a `Diagnostic` that names the line,
the column and the reason; a function with any diagnostic is never modelled.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, count
from typing import Protocol

import islpy as isl
from tree_sitter import Node

from repoos_agent.ingest.names import ModuleNames
from repoos_agent.ingest.parse import location, text
from repoos_agent.ingest.ranks import CallShapes, source_ranks
from repoos_agent.model.affine import AffineExpr, Bound
from repoos_agent.model.expr import (
    MATH_FUNCTIONS,
    ArrayRef,
    Binary,
    Call,
    Choice,
    Expr,
    IndexRead,
    Name,
    Number,
    Unary,
    array_refs,
    index_refs,
    names,
    shown,
)
from repoos_agent.model.kernel import (
    Access,
    Array,
    Condition,
    Default,
    DerivedSize,
    DynamicLoop,
    Kernel,
    Loop,
    ReturnValue,
    ShapeParameter,
    Statement,
)

MODULE_PREFIXES = ("math", "np", "numpy")
CONSTANTS = {"pi": 3.141592653589793, "e": 2.718281828459045, "inf": float("inf")}
"""Constants of `math` and NumPy, read as numbers (`np.pi`, `numpy.pi`, `math.e`)."""
ISL_RESERVED = frozenset(
    [
        "exists",
        "and",
        "or",
        "implies",
        "not",
        "infty",
        "NaN",
        "max",
        "min",
        "mod",
        "floor",
        "ceil",
        "ceild",
        "floord",
        "rat",
        "true",
        "false",
        "domain",
        "range",
    ]
)
"""Words isl's parser reads as keywords: a loop, size, array or local with such a name is refused."""
RANGE_CALLS = frozenset({"range", "prange", "numba.prange", "nb.prange"})
"""What a modelled loop iterates over. Numba's `prange` is `range` whose iterations Numba may run in parallel (its
users keep them independent but for reductions): read as `range`, the loop keeps the meaning it has run in order,
and legality proves for itself which loops may run in parallel."""
VALUE_CALLS = MATH_FUNCTIONS | {"abs", "min", "max", "float"}
AUGMENTED_OPS = ("+=", "-=", "*=", "/=")
BINARY_OPS = ("+", "-", "*", "/", "//", "%", "**")
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
SHAPE_READ = "<shape>"
"""What `_integer_arithmetic` finds for `len(x)` or `x.shape[0]`: no name can be it."""
RANK_NEEDED = " (give the inputs' shapes: `--arg A=f64[64,64]` on the command line, `args` through MCP)"


@dataclass(frozen=True)
class Diagnostic:
    """Why (part of) a function cannot be modelled, and where."""

    line: int
    column: int
    message: str


class Refusal(Exception):
    """Raised inside the walk at the first construct outside the subset."""

    def __init__(self, node: Node, message: str) -> None:
        super().__init__(message)
        self.node = node
        self.message = message


class UnknownRank(Refusal):
    """An argument used as an array whose rank neither the source nor the call says: the inputs' shapes are
    needed, and that is the first reason the function is refused, whatever else the walk finds."""

    def __init__(self, node: Node, array: str, least: int) -> None:
        example = ",".join(["64"] * max(least, 1))
        super().__init__(
            node,
            f"the rank of array `{array}` is not known: give the inputs' shapes (`--arg {array}=f64[{example}]`, "
            f"or `args` in MCP tools), or unpack its shape in the function (`n, m = {array}.shape`)",
        )


class LoopVariableProduct(Refusal):
    """A loop variable multiplied by a size or divided (`u[i * ny + j]`, `x[i // 2]`): not affine, and no other
    reading of a subscript applies, so a caller that tries one (an index array) passes this reason on."""


@dataclass
class RawStatement:
    node: Node
    loops: tuple[Loop, ...]
    guards: tuple[Condition, ...]
    target: ArrayRef | Name
    op: str
    value: Expr
    positions: tuple[int, ...]
    lowered: bool = False  # made by the array front-end from a NumPy statement: shown in its element form
    product: bool = False  # a NumPy product's update (`@`, `np.dot`): its summation order is BLAS's, not ours
    pairwise: bool = False  # `np.sum`/`np.mean`'s update: NumPy adds pairwise, so its order is NumPy's, not the source's
    inner: tuple[DynamicLoop, ...] = ()  # loops with bounds read from arrays around it, inside the instance


@dataclass
class Walk:
    """What the walk has learnt so far about names, loops and statements."""

    path: str
    arguments: tuple[str, ...]
    arrays: set[str]
    defaults: dict[str, Default] = field(default_factory=dict)  # what a call that leaves an argument out passes
    parameters: dict[str, None] = field(default_factory=dict)  # ordered set
    shape_parameters: dict[str, ShapeParameter] = field(default_factory=dict)
    size_aliases: dict[str, AffineExpr] = field(default_factory=dict)  # `m = n - 1`: a name for an affine size
    derived: dict[str, DerivedSize] = field(default_factory=dict)  # `h = n // 2`, `nx * ny`: sizes isl takes as parameters
    identifiers: frozenset[str] = frozenset()  # every name the function mentions: a generated size takes none of them
    assigned: dict[str, Node] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)
    statements: list[RawStatement] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    returns: str | None = None
    front_end: ArrayFrontEnd | None = None
    dynamic: list[DynamicLoop] = field(default_factory=list)  # the loops with bounds read from arrays around the walk
    index_arrays: dict[str, Node] = field(default_factory=dict)  # arrays read as subscripts or bounds, first use
    names: ModuleNames = field(default_factory=ModuleNames)  # what imported names stand for (`xp`, `sqrt`)
    entry_checks: list[Node] = field(default_factory=list)  # `assert`s and `if ...: raise` at entry, run in Python
    entry_code: str = ""  # the function's entry up to its last check, dedented
    stored_shapes: dict[str, str] = field(default_factory=dict)  # `s = A.shape`: s -> A
    data_guard: Expr | None = None  # the flags of the `if`s on data around the statement being walked
    constants: dict[str, int | float] = field(default_factory=dict)  # the module's constants the function reads
    index_aliases: dict[str, AffineExpr] = field(default_factory=dict)  # `k` of `enumerate(range(1, n))` in its loop
    index_tuples: dict[str, tuple[AffineExpr, ...]] = field(default_factory=dict)  # `idx` of `np.ndindex(...)` in its loops
    least_ranks: dict[str, int] = field(default_factory=dict)  # arguments the source uses as arrays: least rank
    unknown_ranks: int = 0  # leading diagnostics that say an array's rank is not known
    unit_axes: frozenset[tuple[str, int]] = frozenset()  # argument axes to model as 1 (`extract_kernel`)
    unit_axes_taken: dict[tuple[str, int], None] = field(default_factory=dict)  # of them, those the model reads

    def refuse(self, refusal: Refusal) -> None:
        where = location(self.path, refusal.node)
        diagnostic = Diagnostic(where.line, where.column, refusal.message)
        if isinstance(refusal, UnknownRank):  # the real reason: other refusals may follow from the unknown rank
            self.diagnostics.insert(self.unknown_ranks, diagnostic)
            self.unknown_ranks += 1
        else:
            self.diagnostics.append(diagnostic)


@dataclass(frozen=True)
class LoopHeader:
    """What one `for` statement binds: range loops, outermost first (`np.ndindex(n, m)` makes two), and names
    standing for values of their variables while its body runs: affine indices (`k` of `enumerate(range(1, n))`),
    index tuples (`idx` of `np.ndindex(...)`), and array elements or rows the array front-end keeps (`v`, `row`)."""

    loops: tuple[Loop, ...]
    indices: Mapping[str, AffineExpr] = field(default_factory=dict)
    tuples: Mapping[str, tuple[AffineExpr, ...]] = field(default_factory=dict)
    elements: tuple[str, ...] = ()


class ArrayFrontEnd(Protocol):
    """What the walk hands NumPy statements to (`ingest.arrays`): it emits into the same walk."""

    allocations: list
    returns: list[ReturnValue]
    returns_tuple: bool
    casts: list  # copies NumPy makes only within a kind, checked against a call's types
    requirements: list  # values modelled for some element types only, checked against a call's types
    finite: list  # arguments whose values must be finite, checked at the native entry
    size_floors: list  # sizes NumPy raises on below a least value, checked at the native entry
    failures: list  # what NumPy raises on that only the computation finds (`Failure`)
    helpers: dict[str, Node]  # functions a call inlines: the module's, and those defined in the function
    closures: set[str]  # of them, those defined in the function, which see its locals

    def inline_procedure(
        self, node: Node, loops: tuple[Loop, ...], guards: tuple[Condition, ...], positions: tuple[int, ...], counter: list[int]
    ) -> None: ...

    def lower_call(
        self, node: Node, loops: tuple[Loop, ...], guards: tuple[Condition, ...], positions: tuple[int, ...], counter: list[int]
    ) -> None: ...

    def is_array_local(self, name: str) -> bool: ...

    def local_extent(self, node: Node) -> AffineExpr | None: ...

    def fresh_name(self, node: Node) -> str: ...

    def exchange(self, first: str, second: str) -> None: ...

    def copy_local(
        self,
        source: str,
        target: str,
        loops: tuple[Loop, ...],
        guards: tuple[Condition, ...],
        positions: tuple[int, ...],
        counter: list[int],
        node: Node,
    ) -> None: ...

    @property
    def lowered_any(self) -> bool: ...

    def mentions_arrays(self, node: Node) -> bool: ...

    def lower_assignment(
        self, node: Node, loops: tuple[Loop, ...], guards: tuple[Condition, ...], positions: tuple[int, ...], counter: list[int]
    ) -> None: ...

    def lower_return(self, node: Node, counter: list[int]) -> None: ...

    def loop_header(
        self, node: Node, loops: tuple[Loop, ...], guards: tuple[Condition, ...], positions: tuple[int, ...], counter: list[int]
    ) -> LoopHeader: ...

    def release(self, header: LoopHeader) -> None: ...

    def size_equalities(self) -> tuple[tuple[AffineExpr, AffineExpr], ...]: ...


def function_arguments(function: Node) -> tuple[list[str], dict[str, Default], list[Diagnostic]]:
    """The names of a function's parameters and the literal defaults a call may leave out, refusing `*args`,
    `**kwargs` and tuple defaults."""
    names_found: list[str] = []
    defaults: dict[str, Default] = {}
    diagnostics: list[Diagnostic] = []
    parameters = function.child_by_field_name("parameters")
    for child in parameters.named_children if parameters else []:
        if child.type == "identifier":
            names_found.append(text(child))
        elif child.type in ("typed_parameter", "default_parameter", "typed_default_parameter"):
            name = child.child_by_field_name("name") or child.named_children[0]
            if name.type != "identifier":
                row, column = child.start_point
                diagnostics.append(Diagnostic(row + 1, column + 1, f"parameter `{text(child)}` is not a plain name"))
                continue
            names_found.append(text(name))
            value = child.child_by_field_name("value")
            if value is None:
                continue
            try:
                default = literal_default(text(name), value)
            except Refusal as refusal:
                row, column = refusal.node.start_point
                diagnostics.append(Diagnostic(row + 1, column + 1, refusal.message))
                continue
            if default is not None:
                defaults[text(name)] = default
        elif child.type not in ("comment",):
            row, column = child.start_point
            diagnostics.append(
                Diagnostic(row + 1, column + 1, f"parameter `{text(child)}`: only plain named parameters are modelled")
            )
    return names_found, defaults, diagnostics


def literal_default(name: str, value: Node) -> Default | None:
    """A parameter's default when it is a number or a bool written as a literal (`1.0`, `-3`, `1e-6`, `True`), for
    a call that leaves the parameter out; None for any other default (`None`, a name), which the caller must give.

    A tuple default is refused: it is neither an array of some rank nor a number the native code can take."""
    try:
        default = ast.literal_eval(text(value))
    except (ValueError, SyntaxError, TypeError, RecursionError):  # not a literal: a name, a call, an expression
        return None
    if isinstance(default, tuple):
        items = [item for item in default if isinstance(item, (int, float))]
        kind = "integer " if all(isinstance(item, int) for item in items) else ""
        separate = ", ".join(f"{name}_{index}={item!r}" for index, item in enumerate(items)) or f"{name}_0=..."
        raise Refusal(
            value,
            f"parameter `{name}` defaults to the tuple `{text(value)}`: a tuple argument is not modelled; "
            f"pass its items as separate {kind}parameters (`{separate}`)",
        )
    return default if isinstance(default, (bool, int, float)) else None


def subscripted_names(node: Node) -> set[str]:
    """Names used as `X[...]` anywhere under `node` (candidate arrays)."""
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "subscript":
            base = current.child_by_field_name("value")
            while base is not None and base.type == "subscript":
                base = base.child_by_field_name("value")
            if base is not None and base.type == "identifier":
                found.add(text(base))
        stack.extend(current.children)
    return found


def extract_kernel(
    function: Node,
    source: str,
    path: str,
    ctx: isl.Context,
    ranks: Mapping[str, int] | None = None,
    front_end: Callable[[Walk], ArrayFrontEnd] | None = None,
    names: ModuleNames | None = None,
) -> tuple[Kernel | None, list[Diagnostic]]:
    """Model `function`, or return the diagnostics that explain why it cannot be.

    `ranks` are the array arguments' ranks when a call's values are known (NumPy code indexes
    arrays as wholes, so the source alone may not say); they override what the source states
    (`ingest.ranks`). `front_end` lowers array statements; `names` are what the module's imports bind (the
    function's own imports are added to them).

    As `CallShapes`, `ranks` also say which axes are 1 at the call. Those are modelled as 1 only where the model
    of ranks alone is refused, or ties such an axis to another extent by broadcasting (`w * a` of shapes (n, 1)
    and (n, 3): that kernel refuses the very call): a kernel for any extent serves more calls than one for 1."""
    shapes = CallShapes.of(ranks or {})
    kernel, diagnostics = _extract(function, source, path, ctx, shapes.ranks, frozenset(), front_end, names)
    if not shapes.unit_axes or (kernel is not None and not _ties_unit_axis(kernel, shapes.unit_axes)):
        return kernel, diagnostics
    unit_kernel, unit_diagnostics = _extract(function, source, path, ctx, shapes.ranks, shapes.unit_axes, front_end, names)
    if unit_kernel is None and kernel is not None:
        return kernel, diagnostics
    return unit_kernel, unit_diagnostics


def _ties_unit_axis(kernel: Kernel, unit_axes: frozenset[tuple[str, int]]) -> bool:
    """Whether broadcasting ties an extent that is 1 at the call to another (`w_d1 = a_d1`)."""
    axis_of = {parameter.name: (parameter.array, parameter.dim) for parameter in kernel.shape_parameters}
    tied = {variable for a, b in kernel.assumptions for variable in a.variables | b.variables}
    return any(axis_of.get(variable) in unit_axes for variable in tied)


def _extract(
    function: Node,
    source: str,
    path: str,
    ctx: isl.Context,
    ranks: Mapping[str, int],
    unit_axes: frozenset[tuple[str, int]],
    front_end: Callable[[Walk], ArrayFrontEnd] | None,
    names: ModuleNames | None,
) -> tuple[Kernel | None, list[Diagnostic]]:
    """`extract_kernel` with the argument axes `unit_axes` modelled as 1."""
    arguments, defaults, diagnostics = function_arguments(function)
    name = text(function.child_by_field_name("name"))
    body = function.child_by_field_name("body")
    walk = Walk(path=path, arguments=tuple(arguments), arrays=subscripted_names(body) - {"shape"}, defaults=defaults)
    walk.identifiers = frozenset(_reads(function))
    walk.names = (names or ModuleNames()).with_imports(body.named_children)
    _take_module_constants(walk, body)
    walk.diagnostics.extend(diagnostics)
    stated = source_ranks(function, source)
    walk.least_ranks.update(stated.least)
    walk.arrays.update(stated.least)
    for argument, rank in {**stated.exact, **ranks}.items():
        if argument in arguments and rank > 0:
            walk.ranks[argument] = rank
            walk.arrays.add(argument)
    walk.unit_axes = unit_axes
    _shape_ranks(walk, body)
    if front_end is not None:
        walk.front_end = front_end(walk)
    else:
        for array in sorted(walk.arrays):
            if array not in arguments:
                walk.diagnostics.append(_diagnostic_at_first_use(path, body, array))
    _walk_function_body(walk, body)
    if walk.diagnostics:
        return None, walk.diagnostics
    if not walk.statements:
        row, column = function.start_point
        return None, [Diagnostic(row + 1, column + 1, "no assignment to model: the function has no loop nest")]
    reserved = sorted(((walk.arrays & set(walk.arguments)) | set(walk.parameters)) & ISL_RESERVED)
    if reserved:
        row, column = function.start_point
        names_text = ", ".join(f"`{r}`" for r in reserved)
        return None, [Diagnostic(row + 1, column + 1, f"{names_text}: reserved word(s) of the polyhedral library; rename")]
    try:
        kernel = _build_kernel(walk, name, function, source, ctx)
    except Refusal as refusal:
        walk.refuse(refusal)
        return None, walk.diagnostics
    except isl.Error as error:
        row, column = function.start_point
        return None, [Diagnostic(row + 1, column + 1, f"the polyhedral library rejected the model: {error}")]
    empty_only = _empty_arrays_only(kernel)
    if empty_only:
        row, column = function.start_point
        return None, [Diagnostic(row + 1, column + 1, empty_only)]
    return kernel, []


def _empty_arrays_only(kernel: Kernel) -> str:
    """Why the extents broadcasting ties together hold for empty arrays alone ("" when they hold for others): an
    extent that is 1 at the call but symbolic in the model (`mass` of shape (n, 1) times `vel` of (n, 3)) is taken
    equal to the other, which no call of nonempty arrays satisfies. The call's shapes model such an extent as 1
    (`CallShapes`); without them only the source can say it."""
    sizes = [p.name for p in kernel.shape_parameters]
    if not kernel.assumptions or not sizes:
        return ""
    space = "[" + ", ".join(kernel.parameters) + "]"
    nonempty = isl.Set.read_from_str(kernel.ctx, f"{space} -> {{ : " + " and ".join(f"{s} >= 1" for s in sizes) + " }")
    if not (kernel.assumed & nonempty).is_empty():
        return ""
    tied = ", ".join(f"{a} = {b}" for a, b in kernel.assumptions[:4])
    return (
        f"the extents broadcasting ties together ({tied}) hold only for empty arrays: an extent that is 1 at the call "
        "is symbolic here; give the call's shapes, which model an extent of 1 as 1 (`--arg mass=f64[64,1]` on the "
        "command line, `args` through MCP), write it as 1 (`mass[:, 0:1]`, `x[:, None]`) or pass the array with "
        "that axis dropped"
    )


def _take_module_constants(walk: Walk, body: Node) -> None:
    """The module's numeric constants the function reads and never binds: integers are sizes like `n = 280`,
    floats values. The swapped call checks that each still holds the value the kernel was built with."""
    read = {text(node) for node in _identifiers(body)}
    for name, value in walk.names.constants.items():
        if name not in read or name in walk.arguments or _assignments(body, name):
            continue
        walk.constants[name] = value
        if isinstance(value, int) and not isinstance(value, bool):
            walk.size_aliases[name] = AffineExpr.of_constant(value)


def _identifiers(node: Node) -> list[Node]:
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        if current.type == "identifier":
            found.append(current)
        stack.extend(current.named_children)
    return found


def _shape_ranks(walk: Walk, body: Node) -> None:
    """`n, m = A.shape` (or `s = A.shape; n, m = s`) says `A` has rank 2: NumPy code often never indexes an array
    element by element. `n = A.shape[0]` and `n = len(A)` say only that `A` is an array, of a rank the call's
    values tell."""
    stored: dict[str, str] = {}
    for node in body.named_children:
        if node.type != "expression_statement" or node.named_children[0].type != "assignment":
            continue
        left, right = node.named_children[0].child_by_field_name("left"), node.named_children[0].child_by_field_name("right")
        read = shape_read(right, stored) if right is not None else None
        if read is None or read[0] not in walk.arguments:
            continue
        array, dim = read
        walk.arrays.add(array)
        if dim is None and left.type == "identifier":
            stored[text(left)] = array
            walk.arrays.discard(text(left))  # `s[0]` reads a size, not an array
        elif dim is None and left.type in ("pattern_list", "tuple_pattern"):
            walk.ranks.setdefault(array, len(left.named_children))


def _diagnostic_at_first_use(path: str, body: Node, array: str) -> Diagnostic:
    stack = [body]
    while stack:
        node = stack.pop(0)
        if node.type == "identifier" and text(node) == array and node.parent is not None and node.parent.type == "subscript":
            where = location(path, node)
            return Diagnostic(
                where.line,
                where.column,
                f"array `{array}` is not an argument of the function (kernels do not allocate)",
            )
        stack.extend(node.children)
    row, column = body.start_point
    return Diagnostic(row + 1, column + 1, f"array `{array}` is not an argument of the function")


def _walk_function_body(walk: Walk, body: Node) -> None:
    counter = [0]
    children = _read_through([c for c in body.named_children if c.type != "comment"], walk.names)
    if children and _is_docstring(children[0]):
        children = children[1:]
    at_entry = True
    for index, node in enumerate(children):
        try:
            if node.type in ("import_statement", "import_from_statement"):
                continue  # `walk.names` holds what they bind
            if _defines_a_function(walk, node):
                continue
            if _is_entry_check(node):
                if not at_entry:
                    raise Refusal(
                        node,
                        f"`{text(node).splitlines()[0][:60]}` checks after the function has computed: checks are "
                        "modelled at entry, before any other statement (move it up)",
                    )
                walk.entry_checks.append(node)
            elif node.type == "return_statement" and walk.front_end is not None and index == len(children) - 1:
                walk.front_end.lower_return(node, counter)
            elif node.type == "return_statement":
                _take_return(walk, node, is_last=index == len(children) - 1)
            elif _defines_sizes(walk, node, body):
                for left, right in _bindings(node) or ():
                    assert right is not None
                    if _is_shape_definition(walk, right):
                        _take_shape_definition(walk, left, right)
                    else:
                        _take_size_alias(walk, left, right)
            else:
                at_entry = at_entry and _is_conversion(node, walk.names)
                walk_statement(walk, node, (), (), (), counter)
        except Refusal as refusal:
            walk.refuse(refusal)
    if walk.entry_checks:
        walk.entry_code = _entry_code(children, walk.entry_checks[-1])


def _entry_code(statements: list[Node], last_check: Node) -> str:
    """The source of the function's entry, up to its last check: what the swapped function runs in Python."""
    root = last_check
    while root.parent is not None:
        root = root.parent
    lines = text(root).splitlines()[statements[0].start_point[0] : last_check.end_point[0] + 1]
    return textwrap.dedent("\n".join(lines)) + "\n"


def _is_conversion(node: Node, names: ModuleNames) -> bool:
    """`x = np.asarray(x)` and its kind: entry statements that compute nothing, so checks may follow them."""
    if node.type != "expression_statement" or node.named_children[0].type != "assignment":
        return False
    right = node.named_children[0].child_by_field_name("right")
    return (
        right is not None
        and right.type == "call"
        and names.canonical(text(right.child_by_field_name("function"))) in ("np.asarray", "np.asanyarray", "np.ascontiguousarray")
    )


def _defines_sizes(walk: Walk, node: Node, body: Node) -> bool:
    """Whether every name the statement binds is a size: `n = len(x)`, `h, w = img.shape`, `w, h = 1200, 400`."""
    pairs = _bindings(node)
    return bool(pairs) and all(
        _is_shape_definition(walk, right) or _is_size_alias(walk, left, right, body) for left, right in pairs or ()
    )


def take_helper_sizes(walk: Walk, node: Node, body: Node) -> dict[str, AffineExpr | None] | None:
    """An inlined helper's size statement (`K = weights.shape[0]`, `H_out = h - K + 1`): its names bound as sizes
    while the helper's body is walked, over the caller's names as a function's locals are; returns what each name
    stood for before, for the caller to put back; None when the statement binds no sizes."""
    pairs = _bindings(node)
    if not pairs or not all(left.type == "identifier" and _is_size_alias(walk, left, right, body) for left, right in pairs):
        return None
    before: dict[str, AffineExpr | None] = {}
    for left, right in pairs:
        assert right is not None
        expr = affine_index(walk, right, set())
        before.setdefault(text(left), walk.size_aliases.get(text(left)))
        walk.size_aliases[text(left)] = expr
    return before


def _defines_a_function(walk: Walk, node: Node) -> bool:
    """`def helper(...)` or `helper = lambda ...` in the function's body: a helper its calls inline, reading the
    function's locals as a closure does. Without the array front end, nothing inlines it: it is not taken."""
    if walk.front_end is None:
        return False
    if node.type == "function_definition":
        function, name = node, text(node.child_by_field_name("name"))
    elif node.type == "decorated_definition":
        raise Refusal(node, "a decorated function inside the function is not modelled; define it without decorators")
    elif (
        node.type == "expression_statement"
        and node.named_children[0].type == "assignment"
        and node.named_children[0].child_by_field_name("left").type == "identifier"
        and getattr(node.named_children[0].child_by_field_name("right"), "type", "") == "lambda"
    ):
        assignment = node.named_children[0]
        function, name = assignment.child_by_field_name("right"), text(assignment.child_by_field_name("left"))
    else:
        return False
    walk.front_end.helpers = {**walk.front_end.helpers, name: function}
    walk.front_end.closures.add(name)
    return True


def _read_through(statements: list[Node], names: ModuleNames) -> list[Node]:
    """`statements` with the bodies of `with np.errstate(...)` blocks in their place: the block only changes
    how NumPy reports floating-point errors, which the native code does not raise."""
    found = []
    for node in statements:
        if node.type == "with_statement" and _is_errstate(node, names):
            inner = [c for c in node.child_by_field_name("body").named_children if c.type != "comment"]
            found.extend(_read_through(inner, names))
        else:
            found.append(node)
    return found


def _is_errstate(node: Node, names: ModuleNames) -> bool:
    clause = next((c for c in node.named_children if c.type == "with_clause"), None)
    items = [item.named_children[0] for item in clause.named_children] if clause is not None else []
    return bool(items) and all(
        item.type == "call" and names.canonical(text(item.child_by_field_name("function"))) == "np.errstate" for item in items
    )


def _is_entry_check(node: Node) -> bool:
    """`assert condition` or `if condition: raise ...` (no `else`): a check the swapped function runs in Python
    at entry, before the native kernel, so that it raises as the original does."""
    if node.type == "assert_statement":
        return True
    if node.type != "if_statement" or node.child_by_field_name("alternative") is not None:
        return False
    body = [c for c in node.child_by_field_name("consequence").named_children if c.type != "comment"]
    return bool(body) and all(c.type == "raise_statement" for c in body)


def _is_docstring(node: Node) -> bool:
    return node.type == "expression_statement" and node.named_children[0].type == "string"


def _is_shape_definition(walk: Walk, right: Node | None) -> bool:
    """`n = A.shape[0]`, `n, m = A.shape`, `n = len(A)`, `s = A.shape`: a right side that *is* a size read. One
    that merely uses a size (`c = np.zeros(x.shape[0] + 1)`) is an array statement."""
    return right is not None and _shape_read_array(right, walk.stored_shapes) is not None


def _bindings(node: Node) -> list[tuple[Node, Node | None]] | None:
    """The (name, value) pairs an assignment statement binds: one, or one per item of `a, b = x, y` when no item
    reads a name the statement assigns (then binding them one by one is the same); None for anything else."""
    if node.type != "expression_statement" or node.named_children[0].type != "assignment":
        return None
    left, right = node.named_children[0].child_by_field_name("left"), node.named_children[0].child_by_field_name("right")
    if left.type not in ("pattern_list", "tuple_pattern") or right is None or right.type not in ("expression_list", "tuple"):
        return [(left, right)]
    targets, values = left.named_children, right.named_children
    assigned = {name for target in targets for name in _target_names(target)}
    if len(targets) != len(values) or any(_reads(value) & assigned for value in values):
        return [(left, right)]
    return list(zip(targets, values, strict=True))


def _reads(node: Node) -> set[str]:
    found, stack = set(), [node]
    while stack:
        current = stack.pop()
        if current.type == "identifier":
            found.add(text(current))
        stack.extend(current.named_children)
    return found


def shape_read(node: Node, stored: Mapping[str, str] | None = None) -> tuple[str, int | None] | None:
    """The array and dimension a size read reads: `len(A)` (0), `len(A[0])` (1), `A.shape[k]`, `np.shape(A)[k]`,
    `s[k]` with `s = A.shape` kept before (`stored`), or the whole of `A.shape` (None); None for anything else.
    The array is "" for a `len()` of no argument."""
    node = unparenthesised(node)
    if node.type == "call" and text(node.child_by_field_name("function")) == "len":
        arguments = node.child_by_field_name("arguments").named_children
        if not arguments:
            return "", 0
        inner, dim = arguments[0], 0
        while inner.type == "subscript" and _subscript_count(inner) == 1:
            inner, dim = inner.child_by_field_name("value"), dim + 1
        return text(inner), dim
    if node.type == "attribute" and text(node.child_by_field_name("attribute")) == "shape":
        return text(node.child_by_field_name("object")), None
    if node.type == "call" and text(node.child_by_field_name("function")) in ("np.shape", "numpy.shape"):
        arguments = node.child_by_field_name("arguments").named_children
        return (text(arguments[0]), None) if len(arguments) == 1 else None
    if node.type == "identifier" and stored and text(node) in stored:
        return stored[text(node)], None
    if node.type == "subscript":
        whole = shape_read(node.child_by_field_name("value"), stored)
        index = node.child_by_field_name("subscript")
        if whole is not None and whole[1] is None and _subscript_count(node) == 1 and _is_integer(index):
            return whole[0], int(text(index).replace(" ", ""))
    return None


def _is_integer(node: Node) -> bool:
    """`3` or `-1`: a constant index."""
    if node.type == "unary_operator" and text(node.child_by_field_name("operator")) == "-":
        node = node.child_by_field_name("argument")
    return node.type == "integer"


def _subscript_count(node: Node) -> int:
    subscripts = list(node.children_by_field_name("subscript"))
    if len(subscripts) == 1 and subscripts[0].type == "expression_list":
        return len(subscripts[0].named_children)
    return len(subscripts)


def _shape_read_array(node: Node, stored: Mapping[str, str] | None = None) -> str | None:
    """The array whose shape `node` reads (see `shape_read`), None for anything else."""
    read = shape_read(node, stored)
    return read[0] if read is not None else None


def _is_size_alias(walk: Walk, left: Node, right: Node | None, body: Node) -> bool:
    """`m = n - 1`, `h = len(x) // 2` or `n = 280`: a name bound to integer arithmetic on sizes and constants alone.
    Such a name is a size the loops and slices may use, so it is kept as its expression rather than lowered as a
    scalar statement. `1 / n` or `n - k` with `k` an argument stay scalar statements, as before (`k` may be a
    float), unless the name is used where Python takes integers alone (`nb = len(x) // b; range(nb)`); and so
    does a constant assigned again later (`count = 0` that a loop adds to)."""
    if left.type != "identifier" or right is None:
        return False
    sizes = {*walk.shape_parameters, *walk.size_aliases}
    if text(left) in _integer_names(body):
        sizes |= set(walk.arguments) - walk.arrays
    reads = _integer_arithmetic(right, walk.stored_shapes)
    if reads is None or not reads <= sizes | {SHAPE_READ}:
        return False
    return bool(reads) or _assignments(body, text(left)) == 1


def _integer_arithmetic(node: Node, stored: Mapping[str, str]) -> set[str] | None:
    """The names an expression of names, integers, shape reads (`SHAPE_READ`) and `+ - * // %` reads; None for
    any other expression."""
    stack, found = [node], set()
    while stack:
        current = stack.pop()
        kind = current.type
        integer_operator = kind == "binary_operator" and text(current.child_by_field_name("operator")) in ("+", "-", "*", "//", "%")
        if _shape_read_array(current, stored) is not None:
            found.add(SHAPE_READ)
        elif kind == "identifier":
            found.add(text(current))
        elif integer_operator or kind in ("unary_operator", "parenthesized_expression"):
            stack.extend(current.named_children)
        elif kind != "integer":
            return None
    return found


def _integer_operands(node: Node) -> set[str]:
    """The names of the integer arithmetic in a subscript, a slice or a call's arguments (not in `x[int(t)]`)."""
    if node.type in ("slice", "expression_list", "argument_list"):
        return {name for child in node.named_children for name in _integer_operands(child)}
    return _integer_arithmetic(node, {}) or set()


def _integer_names(body: Node) -> frozenset[str]:
    """Names the function uses where Python takes integers alone: in `range(...)`, in subscripts and slices, and
    in integer arithmetic (`+ - * // %`) bound to a name so used (`used = blocks * b` with `x[:used]`: a product
    or sum is an integer only if its operands are)."""
    found: set[str] = set()
    bindings: list[tuple[str, set[str]]] = []
    stack = [body]
    while stack:
        current = stack.pop()
        if current.type == "subscript":
            found.update(n for part in current.children_by_field_name("subscript") for n in _integer_operands(part))
        elif current.type == "call" and text(current.child_by_field_name("function")) in RANGE_CALLS:
            found.update(_integer_operands(current.child_by_field_name("arguments")))
        elif current.type == "assignment" and current.child_by_field_name("left").type == "identifier":
            right = current.child_by_field_name("right")
            reads = _integer_arithmetic(right, {}) if right is not None else None
            if reads is not None:
                bindings.append((text(current.child_by_field_name("left")), reads))
        stack.extend(current.named_children)
    grown = True
    while grown:
        before = len(found)
        for name, reads in bindings:
            if name in found:
                found |= reads
        grown = len(found) > before
    return frozenset(found)


def _assignments(body: Node, name: str) -> int:
    """How often `name` is assigned (or is a loop's variable) anywhere in `body`."""
    found, stack = 0, [body]
    while stack:
        current = stack.pop()
        if current.type in ("assignment", "augmented_assignment", "for_statement"):
            target = current.child_by_field_name("left")
            found += sum(1 for n in _target_names(target) if n == name)
        stack.extend(current.named_children)
    return found


def _target_names(target: Node | None) -> list[str]:
    if target is None:
        return []
    if target.type == "identifier":
        return [text(target)]
    if target.type in ("pattern_list", "tuple_pattern", "list_pattern"):
        return [name for child in target.named_children for name in _target_names(child)]
    return []


def _take_size_alias(walk: Walk, left: Node, right: Node) -> None:
    """`m = n - 1` names an affine size; `h = n // 2` or `m = nx * ny` a derived size named `h` or `m`."""
    name = text(left)
    if name in walk.arguments or name in walk.shape_parameters or name in walk.size_aliases:
        raise Refusal(left, f"size `{name}` is defined twice")
    try:
        walk.size_aliases[name] = affine_index(walk, right, set(), name)
    except Refusal as refusal:
        raise Refusal(refusal.node, f"size `{name} = {text(right)}`: {refusal.message}") from None


def _take_shape_definition(walk: Walk, left: Node, right: Node) -> None:
    """`n = A.shape[0]`, `n, m = A.shape`, `n = len(A)`, `w = len(A[0])`: sizes read from shapes. `s = A.shape`
    keeps the shape itself, for `s[k]` later."""
    targets = [left] if left.type == "identifier" else list(left.named_children)
    if any(t.type != "identifier" for t in targets):
        raise Refusal(left, f"`{text(left)}`: sizes must be plain names")
    read = shape_read(right, walk.stored_shapes)
    if read is None:
        raise Refusal(right, f"`{text(right)}` is not a size (expected `A.shape[k]`, `A.shape` or `len(A)`)")
    array, dim = read
    if array not in walk.arguments:
        raise Refusal(right, f"`{array}` is not an array argument of the function")
    if dim is None and left.type == "identifier":
        if text(left) in walk.arguments or text(left) in walk.stored_shapes:
            raise Refusal(left, f"shape `{text(left)}` is defined twice")
        walk.stored_shapes[text(left)] = array
        return
    dims = list(range(len(targets))) if dim is None else [dim]
    if len(dims) != len(targets):
        raise Refusal(left, f"`{text(left)} = {text(right)}`: {len(targets)} names for {len(dims)} sizes")
    for target, wanted in zip(targets, dims, strict=True):
        name = text(target)
        if name in walk.arguments or name in walk.shape_parameters or name in walk.size_aliases:
            raise Refusal(target, f"size `{name}` is defined twice")
        dimension = _dimension(walk, array, wanted, right)
        named = next((p.name for p in walk.shape_parameters.values() if (p.array, p.dim) == (array, dimension)), None)
        if named is not None:  # a second name for an extent already read: one parameter, or isl sees two sizes
            walk.size_aliases[name] = AffineExpr.of_variable(named)
            continue
        walk.shape_parameters[name] = ShapeParameter(name, array, dimension)


def _dimension(walk: Walk, array: str, dim: int, node: Node) -> int:
    """`dim` of `array` counted from the front (`A.shape[-1]` is its last), or a refusal when its rank is unknown."""
    if dim >= 0:
        return dim
    rank = walk.ranks.get(array)
    if rank is None:
        raise Refusal(node, f"`{text(node)}` counts from the end of `{array}`'s shape, whose rank is not known here" + RANK_NEEDED)
    if -dim > rank:
        raise Refusal(node, f"`{text(node)}`: `{array}` has {rank} dimensions")
    return rank + dim


def _take_return(walk: Walk, node: Node, is_last: bool) -> None:
    values = node.named_children
    if not is_last:
        raise Refusal(node, "`return` before the end of the function: only a final `return` is modelled")
    if not values:
        return
    value = text(values[0])
    if values[0].type != "identifier" or value not in walk.arrays:
        raise Refusal(values[0], f"`return {value}`: a kernel may only return one of its array arguments")
    walk.returns = value


def walk_statement(
    walk: Walk,
    node: Node,
    loops: tuple[Loop, ...],
    guards: tuple[Condition, ...],
    positions: tuple[int, ...],
    counter: list[int],
) -> None:
    """One statement of a body, by its kind: loops, guards, blocks read through, assignments and calls."""
    if node.type == "comment" or node.type == "pass_statement":
        return
    if node.type == "for_statement":
        _walk_for(walk, node, loops, guards, positions, counter)
    elif node.type == "if_statement":
        _walk_if(walk, node, loops, guards, positions, counter)
    elif node.type == "with_statement" and _is_errstate(node, walk.names):
        for child in _read_through([node], walk.names):
            walk_statement(walk, child, loops, guards, positions, counter)
    elif node.type == "expression_statement":
        _walk_expression(walk, node.named_children[0], loops, guards, positions, counter)
    else:
        raise Refusal(node, NOT_IN_A_NEST.get(node.type, f"`{node.type.replace('_', ' ')}` is not modelled inside a loop nest"))


NOT_IN_A_NEST = {
    "while_statement": "`while` loops are not modelled (the trip count is not affine); "
    "a `for` loop over a fixed count (`for it in range(nit)`) is",
    "break_statement": "`break` leaves the loop early: the iteration domain is not static",
    "continue_statement": "`continue` skips iterations on data: the iteration domain is not static",
    "return_statement": "`return` inside a loop nest leaves early: the iteration domain is not static",
    "assert_statement": "`assert` after the function has computed: checks are modelled at entry, before any other statement",
    "raise_statement": "`raise` inside the computation: checks are modelled at entry (`if ...: raise` before any other statement)",
}
"""Why each statement kind the walk does not take is refused, with what is modelled instead where there is something."""


def _walk_for(
    walk: Walk,
    node: Node,
    loops: tuple[Loop, ...],
    guards: tuple[Condition, ...],
    positions: tuple[int, ...],
    counter: list[int],
) -> None:
    if walk.dynamic or _bounds_read_arrays(walk, node):
        _walk_dynamic_loop(walk, node, loops, guards, positions, counter)
        return
    if walk.data_guard is not None:
        raise Refusal(node, "a loop under a condition on data is not modelled: put the condition inside the loop")
    if _swapped_buffers(walk, node) is not None:
        _walk_double_buffered(walk, node, loops, guards, positions, counter)
        return
    inner_counter = [0]
    place = positions + (counter[0],)
    header = _take_header(walk, node, loops, guards, place, inner_counter)
    counter[0] += 1
    walk.index_aliases.update(header.indices)
    walk.index_tuples.update(header.tuples)
    inner_place = place + (0,) * (len(header.loops) - 1)  # the loops of one header nest, each alone in its body
    try:
        for child in node.child_by_field_name("body").named_children:
            try:
                walk_statement(walk, child, loops + header.loops, guards, inner_place, inner_counter)
            except Refusal as refusal:
                walk.refuse(refusal)
    finally:
        for name in (*header.indices, *header.tuples):
            walk.index_aliases.pop(name, None)
            walk.index_tuples.pop(name, None)
        if walk.front_end is not None:
            walk.front_end.release(header)


def _walk_if(
    walk: Walk,
    node: Node,
    loops: tuple[Loop, ...],
    guards: tuple[Condition, ...],
    positions: tuple[int, ...],
    counter: list[int],
) -> None:
    if walk.dynamic:
        raise Refusal(
            node,
            f"`if` inside loop `{walk.dynamic[-1].name}`, whose bounds are read from arrays: "
            "write the condition as a conditional expression (`x if c else y`)",
        )
    condition = _affine_conditions(walk, node, loops)
    if condition is None:
        _walk_data_guarded(walk, node, loops, guards, positions, counter)
        return
    for child in node.child_by_field_name("consequence").named_children:
        try:
            walk_statement(walk, child, loops, guards + condition, positions, counter)
        except Refusal as refusal:
            walk.refuse(refusal)


def _walk_expression(
    walk: Walk,
    inner: Node,
    loops: tuple[Loop, ...],
    guards: tuple[Condition, ...],
    positions: tuple[int, ...],
    counter: list[int],
) -> None:
    if inner.type in ("assignment", "augmented_assignment"):
        _take_any_assignment(walk, inner, loops, guards, positions, counter)
    elif _is_procedure_call(walk, inner):
        assert walk.front_end is not None
        walk.front_end.inline_procedure(inner, loops, guards, positions, counter)
    elif _is_numpy_call(walk, inner):
        assert walk.front_end is not None
        walk.front_end.lower_call(inner, loops, guards, positions, counter)
    elif inner.type != "string":
        raise Refusal(inner, f"`{text(inner)[:60]}` is not an assignment")


def _swapped_buffers(walk: Walk, node: Node) -> tuple[str, str] | None:
    """(`a`, `b`) for a `for` over a `range` whose body ends in `a, b = b, a` with `a` and `b` array locals: double
    buffering, the two arrays exchanging roles at every step."""
    body = [c for c in node.child_by_field_name("body").named_children if c.type != "comment"]
    iterable = unparenthesised(node.child_by_field_name("right"))
    if walk.front_end is None or not body or iterable.type != "call":
        return None
    if text(iterable.child_by_field_name("function")) not in RANGE_CALLS or node.child_by_field_name("left").type != "identifier":
        return None
    last = body[-1]
    if last.type != "expression_statement" or last.named_children[0].type != "assignment":
        return None
    left, right = last.named_children[0].child_by_field_name("left"), last.named_children[0].child_by_field_name("right")
    if left.type not in ("pattern_list", "tuple_pattern") or right is None or right.type not in ("expression_list", "tuple"):
        return None
    targets, values = [text(t) for t in left.named_children], [text(v) for v in right.named_children]
    if len(targets) != 2 or values != targets[::-1] or not all(walk.front_end.is_array_local(name) for name in targets):
        return None
    return targets[0], targets[1]


def _walk_double_buffered(
    walk: Walk,
    node: Node,
    loops: tuple[Loop, ...],
    guards: tuple[Condition, ...],
    positions: tuple[int, ...],
    counter: list[int],
) -> None:
    """`for t in range(a, b): <body>; x, y = y, x`, unrolled by two so that the names stay put: the body as written
    at even steps, the body with `x` and `y` exchanged at odd ones (when there is one). After an odd number of
    steps Python's `x` is the other array: its contents are copied into `x`'s at the last step, which is right
    only while nothing reads `y` after the loop (refused otherwise) and neither array is an argument."""
    assert walk.front_end is not None
    first, second = _swapped_buffers(walk, node) or ("", "")
    variable = text(node.child_by_field_name("left"))
    if _read_after(node, second):
        raise Refusal(
            node,
            f"`{second}` is read after the loop that swaps it with `{first}`: which array it names depends on the number "
            f"of steps; read `{first}` only",
        )
    scope = {loop.name for loop in loops}
    loop_variable(walk, node.child_by_field_name("left"), scope)
    arguments = range_arguments(unparenthesised(node.child_by_field_name("right")))
    start, stop, step = _range_bounds(walk, arguments, scope)
    if step != 1 or len(stop.pieces) != 1 or len(start.pieces) != 1:
        raise Refusal(node, f"a loop that swaps `{first}` and `{second}` is modelled over a `range` with step 1 and one bound")
    pair = walk.front_end.fresh_name(node)
    loop = Loop(name=pair, start=start, stop=stop, step=2, line=node.start_point[0] + 1)
    place = positions + (counter[0],)
    counter[0] += 1
    inner = [0]
    body = [c for c in node.child_by_field_name("body").named_children if c.type != "comment"][:-1]
    odd = Condition(AffineExpr.of_variable(pair) + AffineExpr.of_constant(1), "<", stop.pieces[0])
    for offset, extra in ((0, ()), (1, (odd,))):
        walk.index_aliases[variable] = AffineExpr.of_variable(pair) + AffineExpr.of_constant(offset)
        try:
            for child in body:
                try:
                    walk_statement(walk, child, (*loops, loop), guards + extra, place, inner)
                except Refusal as refusal:
                    walk.refuse(refusal)
        finally:
            walk.index_aliases.pop(variable, None)
            walk.front_end.exchange(first, second)
    last = Condition(AffineExpr.of_variable(pair) + AffineExpr.of_constant(1), ">=", stop.pieces[0])
    walk.front_end.copy_local(second, first, (*loops, loop), (*guards, last), place, inner, node)


def _read_after(node: Node, name: str) -> bool:
    """Whether `name` is read by a statement after `node` in the same body (or any body around it)."""
    current = node
    while current.parent is not None and current.type != "function_definition":
        sibling = current.next_named_sibling
        while sibling is not None:
            if name in _reads(sibling):
                return True
            sibling = sibling.next_named_sibling
        current = current.parent
    return False


def _affine_conditions(walk: Walk, node: Node, loops: tuple[Loop, ...]) -> tuple[Condition, ...] | None:
    """An `if`'s condition as affine guards on the loops, or None when it reads data (or has alternatives)."""
    if node.child_by_field_name("alternative") is not None or walk.data_guard is not None:
        return None
    condition = node.child_by_field_name("condition")
    try:
        return _conditions(walk, condition, loops)
    except Refusal:
        if not _reads_data(walk, condition):
            raise
        return None


def _reads_data(walk: Walk, node: Node) -> bool:
    """Whether an expression reads an array element, a local or a non-integer value: a condition on data."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "subscript" or current.type == "call":
            return True
        if current.type == "identifier" and (text(current) in walk.assigned or text(current) in walk.arrays):
            return True
        stack.extend(current.named_children)
    return False


def _walk_data_guarded(
    walk: Walk,
    node: Node,
    loops: tuple[Loop, ...],
    guards: tuple[Condition, ...],
    positions: tuple[int, ...],
    counter: list[int],
) -> None:
    """`if` on data (and its `elif`s and `else`): the condition is computed into a flag first, as Python tests it
    before the body runs, and each assignment in a branch writes the new value where its flag holds and the old
    one elsewhere. Legality sees a write of every instance that reads the old value too: conservative, since a
    write that does not happen is taken to happen."""
    if walk.front_end is None or walk.dynamic:
        raise Refusal(node, "a condition on data is modelled in functions the NumPy front end reads")
    condition = node.child_by_field_name("condition")
    if any(text(op) in ("is", "is not") for op in condition.children_by_field_name("operators")):
        raise Refusal(
            condition,
            f"`if {text(condition)}` chooses what the function computes by what the caller passed: "
            "give the argument always (or never), or write the two cases as two functions",
        )
    scope = {loop.name for loop in loops}
    outer = walk.data_guard
    otherwise: Expr = Number(1)
    branches: list[tuple[Node, Expr]] = []
    clauses = [node, *node.children_by_field_name("alternative")]
    for clause in clauses:
        test = clause.child_by_field_name("condition")
        if test is None:  # `else`
            branches.append((clause.child_by_field_name("body"), otherwise))
            break
        value = element_value(walk, test, scope)
        flag = _fresh_flag(walk, clause)
        computed = value if isinstance(otherwise, Number) else Choice(otherwise, value, Number(0))
        flagged = _guarded(outer, computed, Number(0))
        walk.statements.append(RawStatement(test, loops, guards, Name(flag), "=", flagged, positions + (counter[0],), True))
        counter[0] += 1
        body = clause.child_by_field_name("consequence") or clause.child_by_field_name("body")
        branches.append((body, Name(flag)))
        otherwise = (
            Unary("not", Name(flag)) if isinstance(otherwise, Number) else Binary("and", otherwise, Unary("not", Name(flag)))
        )
    try:
        for body, flag_value in branches:
            walk.data_guard = flag_value if outer is None else Binary("and", outer, flag_value)
            for child in body.named_children:
                try:
                    walk_statement(walk, child, loops, guards, positions, counter)
                except Refusal as refusal:
                    walk.refuse(refusal)
    finally:
        walk.data_guard = outer


def _guarded(guard: Expr | None, new: Expr, old: Expr) -> Expr:
    return new if guard is None else Choice(guard, new, old)


def _fresh_flag(walk: Walk, node: Node) -> str:
    name = next(f"when_{n}" for n in range(len(walk.assigned) + 1) if f"when_{n}" not in walk.assigned)
    walk.assigned[name] = node
    return name


def _is_procedure_call(walk: Walk, node: Node) -> bool:
    """`helper(n, x)` as a statement, with `helper` a function of the module or of the function."""
    if node.type != "call" or walk.front_end is None:
        return False
    callee = node.child_by_field_name("function")
    return callee.type == "identifier" and text(callee) in walk.front_end.helpers


def _is_numpy_call(walk: Walk, node: Node) -> bool:
    """`np.copyto(dst, src)` as a statement: a NumPy function that writes into its arguments."""
    if node.type != "call" or walk.front_end is None:
        return False
    return walk.names.canonical(text(node.child_by_field_name("function"))).startswith("np.")


def _bounds_read_arrays(walk: Walk, node: Node) -> bool:
    """`for k in range(rowptr[i], rowptr[i + 1])`; a loop over an array's elements (`zip(x[1:], x[:-1])`) reads
    them as values, not as bounds."""
    iterable = node.child_by_field_name("right")
    return (
        iterable is not None
        and iterable.type == "call"
        and text(iterable.child_by_field_name("function")) in RANGE_CALLS
        and bool(subscripted_names(iterable) & walk.arrays)
    )


def _walk_dynamic_loop(
    walk: Walk,
    node: Node,
    loops: tuple[Loop, ...],
    guards: tuple[Condition, ...],
    positions: tuple[int, ...],
    counter: list[int],
) -> None:
    """A loop with bounds read from arrays (and every loop inside one) runs inside the one statement
    instance its body is: its body must be one assignment or one such loop, so that the statement's
    order is the source's."""
    loop = _take_dynamic_loop(walk, node, loops)
    body = [c for c in node.child_by_field_name("body").named_children if c.type not in ("comment", "pass_statement")]
    if len(body) != 1:
        raise Refusal(
            node,
            f"loop `{loop.name}` reads its bounds from arrays, so its body runs inside one statement: "
            f"it may hold one assignment or one loop, not {len(body)}; split it into loops of their own",
        )
    walk.dynamic.append(loop)
    try:
        walk_statement(walk, body[0], loops, guards, positions, counter)
    finally:
        walk.dynamic.pop()


def _take_dynamic_loop(walk: Walk, node: Node, loops: tuple[Loop, ...]) -> DynamicLoop:
    enclosing = {loop.name for loop in loops} | {loop.name for loop in walk.dynamic}
    name, args = _range_header(walk, node, enclosing)
    if len(args) == 3:
        raise Refusal(
            node.child_by_field_name("right"),
            f"`{text(node.child_by_field_name('right'))}`: a loop with bounds read from arrays takes "
            "`range(stop)` or `range(start, stop)`",
        )
    start = _dynamic_limit(walk, args[0], enclosing) if len(args) == 2 else AffineExpr.of_constant(0)
    stop = _dynamic_limit(walk, args[-1], enclosing)
    row, _ = node.start_point
    return DynamicLoop(name, start, stop, row + 1)


def _dynamic_limit(walk: Walk, node: Node, scope: set[str]) -> AffineExpr | IndexRead:
    """A bound of a dynamic loop: an index-array element (plus a constant), or a size."""
    value = index_read(walk, node, scope)
    if value is not None:
        return value
    try:
        return affine_index(walk, node, set())
    except Refusal:
        raise Refusal(
            node, f"loop bound `{text(node)}` must be a size or an element of an integer array (plus a constant)"
        ) from None


def index_read(walk: Walk, node: Node, scope: set[str]) -> IndexRead | None:
    """`col[k]`, `rowptr[i + 1]` or `col[k] + 1`: an integer array element used as a subscript or bound."""
    node = unparenthesised(node)
    if node.type == "binary_operator" and text(node.child_by_field_name("operator")) in ("+", "-"):
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        sign = 1 if text(node.child_by_field_name("operator")) == "+" else -1
        if unparenthesised(right).type == "integer":
            inner = index_read(walk, left, scope)
            if inner is not None:
                return IndexRead(inner.ref, inner.offset + sign * int(text(unparenthesised(right)), 0))
        return None
    if node.type != "subscript":
        return None
    base = node.child_by_field_name("value")
    if base.type != "identifier" or text(base) not in walk.arrays:
        return None
    if text(base) not in walk.arguments:
        raise Refusal(node, f"`{text(node)}`: an index array must be an argument of the function")
    walk.index_arrays.setdefault(text(base), node)
    return IndexRead(element_ref(walk, node, scope))


def _range_header(walk: Walk, node: Node, enclosing: set[str]) -> tuple[str, list[Node]]:
    """A `for name in range(...)` loop's variable and range arguments, checked as every loop's are."""
    variable, iterable = node.child_by_field_name("left"), node.child_by_field_name("right")
    if node.child_by_field_name("alternative") is not None:
        raise Refusal(node, "`for ... else` is not modelled")
    name = loop_variable(walk, variable, enclosing)
    if iterable.type != "call" or text(iterable.child_by_field_name("function")) not in RANGE_CALLS:
        raise Refusal(iterable, f"`{text(iterable)}`: only loops over `range(...)` are modelled")
    return name, range_arguments(iterable)


def loop_variable(walk: Walk, variable: Node, enclosing: set[str]) -> str:
    """A name a loop header binds to a loop variable, checked against the names it could hide."""
    name = text(variable)
    if variable.type != "identifier":
        raise Refusal(variable, f"loop target `{name}` must be one name")
    if name in ISL_RESERVED:
        raise Refusal(variable, f"loop variable `{name}` is a reserved word of the polyhedral library; rename it")
    if name in enclosing or name in walk.index_aliases or name in walk.index_tuples:
        raise Refusal(variable, f"loop variable `{name}` reuses the name of an enclosing loop")
    if name in walk.arguments or name in walk.shape_parameters or name in walk.derived:
        raise Refusal(variable, f"loop variable `{name}` hides an argument or size of the same name")
    return name


def range_arguments(iterable: Node) -> list[Node]:
    """The arguments of a `range(...)` call: one to three, positional."""
    args = [a for a in iterable.child_by_field_name("arguments").named_children if a.type != "comment"]
    if not 1 <= len(args) <= 3 or any(a.type == "keyword_argument" for a in args):
        raise Refusal(iterable, f"`{text(iterable)}`: range takes one to three positional arguments")
    return args


def _take_header(
    walk: Walk, node: Node, loops: tuple[Loop, ...], guards: tuple[Condition, ...], place: tuple[int, ...], counter: list[int]
) -> LoopHeader:
    """The loops of a `for` header: a `range` (downward ones included) here; `enumerate`, `zip`, `np.ndindex`
    and an array's rows in the array front-end, which knows the arrays' ranks, extents and views."""
    iterable = unparenthesised(node.child_by_field_name("right"))
    callee = text(iterable.child_by_field_name("function")) if iterable.type == "call" else ""
    if callee in RANGE_CALLS or walk.front_end is None:
        return LoopHeader((_take_loop(walk, node, loops),))
    if node.child_by_field_name("alternative") is not None:
        raise Refusal(node, "`for ... else` is not modelled")
    if callee == "reversed":
        return LoopHeader((_take_reversed_loop(walk, node, loops),))
    return walk.front_end.loop_header(node, loops, guards, place, counter)


def _take_loop(walk: Walk, node: Node, loops: tuple[Loop, ...]) -> Loop:
    scope = {loop.name for loop in loops}
    name, args = _range_header(walk, node, scope)
    start, stop, step = _range_bounds(walk, args, scope)
    row, _ = node.start_point
    return Loop(name=name, start=start, stop=stop, step=step, line=row + 1)


def _range_bounds(walk: Walk, args: list[Node], scope: set[str]) -> tuple[Bound, Bound, int]:
    """`range(...)`'s start, stop and step."""
    if len(args) == 1:
        start, stop = Bound((AffineExpr.of_constant(0),), "max"), _bound(walk, args[0], scope)
    else:
        start, stop = _bound(walk, args[0], scope), _bound(walk, args[1], scope)
    step = 1
    if len(args) == 3:
        step_expr = affine_index(walk, args[2], scope)
        if not step_expr.is_constant or step_expr.constant == 0:
            raise Refusal(args[2], f"range step `{text(args[2])}` must be a non-zero integer constant")
        step = step_expr.constant
        if abs(step) != 1 and len(start.pieces) != 1:
            raise Refusal(args[0], f"range start `{text(args[0])}` with step {step} must be one affine expression")
    return start, stop, step


def _take_reversed_loop(walk: Walk, node: Node, loops: tuple[Loop, ...]) -> Loop:
    """`for i in reversed(range(a, b))`: the same values, downward, as `range(b - 1, a - 1, -1)` runs them. The
    loop keeps its step's direction, so the source order (and every dependence it carries) is the downward one."""
    scope = {loop.name for loop in loops}
    name = loop_variable(walk, node.child_by_field_name("left"), scope)
    iterable = unparenthesised(node.child_by_field_name("right"))
    inner = [a for a in iterable.child_by_field_name("arguments").named_children if a.type != "comment"]
    if len(inner) != 1 or inner[0].type != "call" or text(inner[0].child_by_field_name("function")) != "range":
        raise Refusal(
            iterable,
            f"`{text(iterable)}`: only `reversed(range(...))` is modelled; iterate an array backwards as `x[::-1]`",
        )
    start, stop, step = _range_bounds(walk, range_arguments(inner[0]), scope)
    if abs(step) != 1:
        raise Refusal(
            iterable,
            f"`{text(iterable)}`: the last value of a range with step {step} is not affine; "
            "write the downward range itself (`range(last, first - 1, -step)`)",
        )
    # reversed(range(a, b, 1)) runs b - 1 down to a; reversed(range(a, b, -1)) runs b + 1 up to a.
    last, before_first = (_shifted(stop, -step), _shifted(start, -step))
    row, _ = node.start_point
    return Loop(name=name, start=last, stop=before_first, step=-step, line=row + 1)


def _shifted(bound: Bound, offset: int) -> Bound:
    return Bound(tuple(piece + AffineExpr.of_constant(offset) for piece in bound.pieces), bound.combine)


def _bound(walk: Walk, node: Node, scope: set[str]) -> Bound:
    node = unparenthesised(node)
    if node.type == "call" and text(node.child_by_field_name("function")) in ("min", "max"):
        pieces = tuple(affine_index(walk, a, scope) for a in node.child_by_field_name("arguments").named_children)
        if not pieces:
            raise Refusal(node, f"`{text(node)}` has no arguments")
        return Bound(pieces, text(node.child_by_field_name("function")))
    return Bound((affine_index(walk, node, scope),), "max")


def unparenthesised(node: Node) -> Node:
    while node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    return node


def affine_index(walk: Walk, node: Node, scope: set[str], name: str | None = None) -> AffineExpr:
    """An affine expression in loop variables (`scope`) and integer parameters. A product of sizes, or a floor
    division or remainder of them (`n // 2`, `nx * ny`), is a derived size: a parameter of its own, named `name`
    when the whole expression is one (`h = n // 2`)."""
    node = unparenthesised(node)
    if node.type == "integer":
        return AffineExpr.of_constant(int(text(node).replace("_", ""), 0))
    if node.type == "identifier":
        name = text(node)
        if name in scope:
            return AffineExpr.of_variable(name)
        if name in walk.index_aliases:
            return walk.index_aliases[name]
        if name in walk.index_tuples:
            raise index_tuple_refusal(node)
        if name in walk.size_aliases:
            walk.parameters.update(dict.fromkeys(sorted(walk.size_aliases[name].variables)))
            return walk.size_aliases[name]
        if name in walk.arrays:
            raise Refusal(node, f"`{name}` is an array, not an integer")
        if name in walk.arguments or name in walk.shape_parameters:
            walk.parameters[name] = None
            return AffineExpr.of_variable(name)
        raise Refusal(node, f"`{name}` is neither a loop variable nor an integer argument")
    if node.type in ("call", "subscript"):
        extent = walk.front_end.local_extent(node) if walk.front_end is not None else None
        return extent if extent is not None else AffineExpr.of_variable(_inline_size(walk, node))
    if node.type == "attribute" and text(node.child_by_field_name("attribute")) == "size":
        return _element_count(walk, node)
    if node.type == "unary_operator" and text(node.child_by_field_name("operator")) in "-+":
        inner = affine_index(walk, node.child_by_field_name("argument"), scope)
        return -inner if text(node.child_by_field_name("operator")) == "-" else inner
    if node.type == "binary_operator":
        op = text(node.child_by_field_name("operator"))
        left = affine_index(walk, node.child_by_field_name("left"), scope)
        right = affine_index(walk, node.child_by_field_name("right"), scope)
        if op == "+":
            return left + right
        if op == "-":
            return left - right
        if op == "*" and (left.is_constant or right.is_constant):
            return right.scaled(left.constant) if left.is_constant else left.scaled(right.constant)
        if op in ("*", "//", "%"):
            return AffineExpr.of_variable(_derived_size(walk, node, DerivedSize(name or "", op, left, right)))
        raise Refusal(node, f"`{text(node)}` is not affine (`{op}` of loop variables or parameters)")
    raise Refusal(node, f"`{text(node)}` is not affine in the loop variables and parameters")


def _derived_size(walk: Walk, node: Node, size: DerivedSize) -> str:
    """The parameter that stands for `size`, an integer expression of sizes alone: the one already made for
    the same expression (`range(n // 2)` and `np.empty(n // 2)` are one size), else a new one."""
    operands = size.left.variables | size.right.variables
    variables = sorted(v for v in operands if v not in walk.parameters)
    if variables and size.op == "*":
        raise LoopVariableProduct(
            node,
            f"`{text(node)}` is not affine: it multiplies loop variable `{variables[0]}` by a size (a flattened "
            "index such as `u[i * ny + j]` is not modelled: make `u` a 2-d array and index it `u[i, j]`)",
        )
    if variables:
        raise LoopVariableProduct(
            node,
            f"`{text(node)}` is not affine: it divides loop variable `{variables[0]}` (sizes may be divided, "
            "`n // 2`; for every other index, loop with a step: `range(0, n, 2)`)",
        )
    if size.op != "*" and size.right.is_constant and size.right.constant == 0:
        raise Refusal(node, f"`{text(node)}` divides by zero")
    same = next((d.name for d in walk.derived.values() if (d.op, d.left, d.right) == (size.op, size.left, size.right)), None)
    if same is not None:
        return same
    name = size.name or _derived_name(walk, size)
    walk.derived[name] = DerivedSize(name, size.op, size.left, size.right)
    walk.parameters[name] = None
    return name


def _derived_name(walk: Walk, size: DerivedSize) -> str:
    """A readable name no name of the function takes: `n_div_2` for `n // 2`, `size_0` for a longer one."""
    words = {"*": "times", "//": "div", "%": "mod"}
    parts = []
    for operand in (size.left, size.right):
        if operand.terms == () and operand.constant >= 0:
            parts.append(str(operand.constant))
        elif operand.constant == 0 and len(operand.terms) == 1 and operand.terms[0][1] == 1:
            parts.append(operand.terms[0][0])
    if len(parts) == 2:
        base = f"{parts[0]}_{words[size.op]}_{parts[1]}"
        candidates = chain([base], (f"{base}_{n}" for n in count(2)))
    else:
        candidates = (f"size_{n}" for n in count())
    taken = walk.identifiers | set(walk.parameters) | set(walk.shape_parameters) | set(walk.derived) | ISL_RESERVED
    return next(candidate for candidate in candidates if candidate not in taken)


def index_tuple_refusal(node: Node) -> Refusal:
    """An index tuple of `np.ndindex` used as anything but a whole subscript."""
    name = text(node)
    return Refusal(
        node,
        f"`{name}` is a tuple of indices (from `np.ndindex`): subscript an array with it alone (`A[{name}]`), "
        "or unpack it in the loop header (`for i, j in np.ndindex(...)`)",
    )


def affine_value(expr: AffineExpr) -> Expr:
    """An affine expression of sizes as a value expression (`n * m` is refused before this)."""
    result: Expr | None = Number(expr.constant) if expr.constant else None
    for name, coefficient in expr.terms:
        term: Expr = Name(name) if coefficient == 1 else Binary("*", Number(coefficient), Name(name))
        result = term if result is None else Binary("+", result, term)
    return result if result is not None else Number(0)


def _inline_size(walk: Walk, node: Node) -> str:
    """`len(A)` or `A.shape[k]` written inside a bound: a size parameter named `A_dk`."""
    read = shape_read(node, walk.stored_shapes)
    if read is None or read[1] is None or read[0] not in walk.arguments:
        raise Refusal(node, f"`{text(node)}` is not affine in the loop variables and parameters")
    return _shape_size(walk, read[0], _dimension(walk, read[0], read[1], node), node)


def _element_count(walk: Walk, node: Node) -> AffineExpr:
    """`x.size` in a bound or an extent (`range(A_row.size - 1)`): a rank-1 argument's one extent, the same size
    `len(x)` and `x.shape[0]` read; for a higher rank the product of its extents, a derived size."""
    array = text(node.child_by_field_name("object"))
    rank = walk.ranks.get(array)
    if array in walk.arguments and rank is None:
        raise UnknownRank(node, array, walk.least_ranks.get(array, 1))
    if array not in walk.arguments or not rank:
        raise Refusal(node, f"`{text(node)}`: `{array}` is not an array argument whose rank is known here" + RANK_NEEDED)
    count = AffineExpr.of_variable(_shape_size(walk, array, 0, node))
    for dim in range(1, rank):
        extent = AffineExpr.of_variable(_shape_size(walk, array, dim, node))
        count = AffineExpr.of_variable(_derived_size(walk, node, DerivedSize("", "*", count, extent)))
    return count


def _shape_size(walk: Walk, array: str, dim: int, node: Node) -> str:
    """The size parameter of `array`'s dimension `dim`: the user's own name for it, else `A_dk`."""
    named = next((p.name for p in walk.shape_parameters.values() if (p.array, p.dim) == (array, dim)), None)
    if named is not None:  # the user's own name for it (`n = len(x)`): one parameter per extent
        walk.parameters[named] = None
        return named
    name = f"{array}_d{dim}"
    size = ShapeParameter(name, array, dim)
    if name in walk.arguments or walk.shape_parameters.get(name, size) != size:
        # The size's name would stand for two values: the loop would run to the other one.
        raise Refusal(
            node,
            f"`{text(node)}` is modelled as a size named `{name}`, which the function already uses; "
            f"assign `{text(node)}` to a name of your own before the loop",
        )
    walk.shape_parameters[name] = size
    walk.parameters[name] = None
    return name


def _conditions(walk: Walk, node: Node, loops: tuple[Loop, ...]) -> tuple[Condition, ...]:
    node = unparenthesised(node)
    scope = {loop.name for loop in loops}
    if node.type == "boolean_operator" and text(node.child_by_field_name("operator")) == "and":
        return _conditions(walk, node.child_by_field_name("left"), loops) + _conditions(
            walk, node.child_by_field_name("right"), loops
        )
    if node.type == "comparison_operator":
        operands = node.named_children
        operators = [text(op) for op in node.children_by_field_name("operators")]
        if len(operators) != len(operands) - 1 or any(op not in COMPARISONS[:-1] for op in operators):
            raise Refusal(node, f"condition `{text(node)}`: only <, <=, >, >= and == are affine guards")
        try:
            sides = [affine_index(walk, operand, scope) for operand in operands]
        except Refusal as refusal:
            culprit = text(refusal.node)
            raise Refusal(node, f"condition `{text(node)}` depends on `{culprit}`, not only on loop variables and sizes") from None
        return tuple(Condition(sides[k], operators[k], sides[k + 1]) for k in range(len(operators)))
    raise Refusal(node, f"condition `{text(node)}` is not an affine comparison (joined by `and`)")


def _take_any_assignment(
    walk: Walk, node: Node, loops: tuple[Loop, ...], guards: tuple[Condition, ...], positions: tuple[int, ...], counter: list[int]
) -> None:
    """An element statement as the loop front-end reads it; NumPy code (slices, whole arrays, `@`,
    NumPy calls, array locals) goes to the array front-end, which lowers it into the same walk."""
    front_end = walk.front_end
    if front_end is not None and front_end.mentions_arrays(node):
        if walk.dynamic:
            raise Refusal(
                node,
                f"`{text(node)[:60]}` is an array statement inside loop `{walk.dynamic[-1].name}`, whose bounds are "
                "read from arrays: write it element by element",
            )
        front_end.lower_assignment(node, loops, guards, positions, counter)
        return
    _take_assignment(walk, node, loops, guards, positions + (counter[0],))
    counter[0] += 1


def _take_assignment(
    walk: Walk, node: Node, loops: tuple[Loop, ...], guards: tuple[Condition, ...], positions: tuple[int, ...]
) -> None:
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    op = "=" if node.type == "assignment" else text(node.child_by_field_name("operator"))
    if op not in ("=",) + AUGMENTED_OPS:
        raise Refusal(node, f"`{op}` assignments are not modelled")
    if right is None:
        raise Refusal(node, f"`{text(node)}`: a bare annotation assigns nothing")
    scope = {loop.name for loop in loops} | {loop.name for loop in walk.dynamic}
    target: ArrayRef | Name
    if left.type == "subscript":
        target = element_ref(walk, left, scope)
    elif left.type == "identifier":
        name = text(left)
        if name in scope or name in walk.index_aliases:
            raise Refusal(left, f"assignment to loop variable `{name}`")
        if name in walk.parameters or name in walk.shape_parameters or name in walk.size_aliases:
            raise Refusal(left, f"assignment to `{name}`, which is used as a loop bound or subscript")
        if name in walk.arrays:
            raise Refusal(left, f"`{name}` is an array: assign to its elements")
        if name in ISL_RESERVED:
            raise Refusal(left, f"local `{name}` is a reserved word of the polyhedral library; rename it")
        target = Name(name)
        walk.assigned.setdefault(name, left)
    else:
        raise Refusal(left, f"`{text(left)}`: assign to one array element or one scalar")
    value = element_value(walk, right, scope)
    if walk.data_guard is not None:
        if isinstance(target, Name) and walk.assigned.get(target.name) is left:
            raise Refusal(left, f"`{target.name}` is first assigned under a condition on data: assign it before the `if`")
        old = target
        new = value if op == "=" else Binary(op[:-1], old, value)
        value, op = Choice(walk.data_guard, new, old), "="
    guarded = walk.data_guard is not None  # shown in its element form, the select
    walk.statements.append(RawStatement(node, loops, guards, target, op, value, positions, guarded, inner=tuple(walk.dynamic)))


def element_ref(walk: Walk, node: Node, scope: set[str]) -> ArrayRef:
    """`A[i, j]` or `A[i][j]` with affine subscripts."""
    indices: list[Node] = []
    base = node
    while base.type == "subscript":
        indices = list(base.children_by_field_name("subscript")) + indices
        base = base.child_by_field_name("value")
    if base.type != "identifier":
        raise Refusal(node, f"`{text(node)}`: only named arrays are modelled")
    array = text(base)
    subscripts = tuple(_subscript(walk, node, index, scope) for index in indices)
    rank = walk.ranks.setdefault(array, len(subscripts))
    if rank != len(subscripts):
        raise Refusal(node, f"`{text(node)}` uses {len(subscripts)} subscripts but `{array}` was used with {rank}")
    return ArrayRef(array, subscripts)


def _subscript(walk: Walk, ref: Node, index: Node, scope: set[str]) -> AffineExpr | IndexRead:
    """One subscript: affine in the loop variables, or read from an index array (`x[col[k]]`).
    An index of a dynamic loop is its variable plus a constant, so its range is checkable before the run."""
    try:
        affine = affine_index(walk, index, scope)
    except LoopVariableProduct:
        raise
    except Refusal:
        read = index_read(walk, index, scope)
        if read is None:
            raise Refusal(
                ref, f"subscript `{text(ref)}` is neither affine in the loop variables nor an index-array element"
            ) from None
        return read
    dynamic = {loop.name for loop in walk.dynamic} & affine.variables
    if dynamic and (len(affine.terms) != 1 or affine.terms[0][1] != 1):
        variable = sorted(dynamic)[0]
        raise Refusal(
            ref,
            f"subscript `{text(ref)}`: loop `{variable}` reads its bounds from arrays, "
            f"so an index of it must be `{variable}` plus a constant",
        )
    return affine


def element_value(walk: Walk, node: Node, scope: set[str]) -> Expr:
    """A value expression of a statement body."""
    kind = node.type
    if kind == "parenthesized_expression":
        return element_value(walk, node.named_children[0], scope)
    if kind in ("integer", "float") and text(node)[-1:] in ("j", "J"):
        raise Refusal(node, f"`{text(node)}`: complex numbers are not modelled (real float and integer arrays are)")
    if kind == "integer":
        return Number(int(text(node).replace("_", ""), 0))
    if kind == "float":
        return Number(float(text(node).replace("_", "")))
    if kind in ("true", "false"):
        return Number(1 if kind == "true" else 0)
    if kind == "identifier":
        name = text(node)
        if name in walk.index_aliases:
            return affine_value(walk.index_aliases[name])
        if name in walk.arrays:
            raise Refusal(node, f"array `{name}` used without a subscript")
        if name in walk.size_aliases:
            walk.parameters.update(dict.fromkeys(sorted(walk.size_aliases[name].variables)))
            return affine_value(walk.size_aliases[name])
        known = scope | set(walk.arguments) | set(walk.shape_parameters) | set(walk.assigned)
        if name not in known and name in walk.constants:
            return Number(walk.constants[name])
        if name not in known:
            raise Refusal(node, f"`{name}` is not an argument, a loop variable or a local assigned before")
        return Name(name)
    if kind == "subscript":
        return element_ref(walk, node, scope)
    if kind == "unary_operator":
        op = text(node.child_by_field_name("operator"))
        if op not in ("-", "+"):
            raise Refusal(node, f"operator `{op}` is not modelled")
        return Unary(op, element_value(walk, node.child_by_field_name("argument"), scope))
    if kind == "not_operator":
        return Unary("not", element_value(walk, node.child_by_field_name("argument"), scope))
    if kind == "binary_operator":
        op = text(node.child_by_field_name("operator"))
        if op not in BINARY_OPS:
            raise Refusal(node, f"operator `{op}` is not modelled")
        return Binary(
            op,
            element_value(walk, node.child_by_field_name("left"), scope),
            element_value(walk, node.child_by_field_name("right"), scope),
        )
    if kind == "boolean_operator":
        op = text(node.child_by_field_name("operator"))
        return Binary(
            op,
            element_value(walk, node.child_by_field_name("left"), scope),
            element_value(walk, node.child_by_field_name("right"), scope),
        )
    if kind == "comparison_operator":
        operands = [element_value(walk, operand, scope) for operand in node.named_children]
        operators = [text(op) for op in node.children_by_field_name("operators")]
        if len(operators) != len(operands) - 1 or any(op not in COMPARISONS for op in operators):
            raise Refusal(node, f"comparison `{text(node)}` is not modelled")
        result: Expr = Binary(operators[0], operands[0], operands[1])
        for k in range(1, len(operators)):
            result = Binary("and", result, Binary(operators[k], operands[k], operands[k + 1]))
        return result
    if kind == "conditional_expression":
        then, test, otherwise = node.named_children
        return Choice(element_value(walk, test, scope), element_value(walk, then, scope), element_value(walk, otherwise, scope))
    if kind == "call":
        return element_call(walk, node, scope)
    if kind == "attribute" and text(node.child_by_field_name("object")) in MODULE_PREFIXES:
        constant = text(node.child_by_field_name("attribute"))
        if constant in CONSTANTS:
            return Number(CONSTANTS[constant])
        raise Refusal(node, f"`{text(node)}` is not modelled (of its module: {', '.join(CONSTANTS)} and functions)")
    if kind == "attribute" and text(node.child_by_field_name("attribute")) in ("size", "ndim"):
        return _size_or_rank(walk, node)
    raise Refusal(node, f"`{text(node)[:60]}` ({kind.replace('_', ' ')}) is not modelled in a statement")


def _size_or_rank(walk: Walk, node: Node) -> Expr:
    """`A.ndim` (a constant) or `A.size` (the product of its sizes: a value, never a bound) of an array argument."""
    array, attribute = text(node.child_by_field_name("object")), text(node.child_by_field_name("attribute"))
    rank = walk.ranks.get(array)
    if array not in walk.arguments or rank is None:
        raise Refusal(node, f"`{text(node)}`: `{array}` is not an array argument whose rank is known here" + RANK_NEEDED)
    if attribute == "ndim":
        return Number(rank)
    sizes = [Name(_shape_size(walk, array, dim, node)) for dim in range(rank)]
    product: Expr = sizes[0] if sizes else Number(1)
    for size in sizes[1:]:
        product = Binary("*", product, size)
    return product


def element_call(walk: Walk, node: Node, scope: set[str]) -> Call:
    function = node.child_by_field_name("function")
    name, module = text(function), ""
    if function.type == "attribute":
        module, _, name = name.rpartition(".")
        if module not in MODULE_PREFIXES:
            raise Refusal(node, f"call `{text(function)}`: only math functions are modelled")
    if name not in VALUE_CALLS:
        raise Refusal(node, f"call `{text(function)}` is not modelled (known: {', '.join(sorted(VALUE_CALLS))})")
    arguments = node.child_by_field_name("arguments").named_children
    if any(a.type in ("keyword_argument", "list_splat", "dictionary_splat") for a in arguments):
        raise Refusal(node, f"`{text(node)}`: only positional arguments are modelled")
    args = tuple(element_value(walk, a, scope) for a in arguments)
    expected = {"pow": 2, "min": None, "max": None}.get(name, 1)
    if expected is not None and len(args) != expected:
        raise Refusal(node, f"`{name}` takes {expected} argument(s), got {len(args)}")
    if name in ("min", "max") and len(args) < 2:
        raise Refusal(node, f"`{name}` of values needs at least two arguments")
    return Call(name, args, "np" if module in ("np", "numpy") else module)


def _build_kernel(walk: Walk, name: str, function: Node, source: str, ctx: isl.Context) -> Kernel:
    """Second phase: with every parameter known, build the isl objects."""
    parameters = tuple(p for p in walk.arguments if p in walk.parameters) + tuple(
        p for p in walk.shape_parameters if p in walk.parameters
    )
    parameters += tuple(walk.derived)
    shape_parameters = tuple(sp for sp in walk.shape_parameters.values() if sp.name in walk.parameters)
    param_space = "[" + ", ".join(parameters) + "]"
    locals_written = set(walk.assigned)
    for argument in walk.arguments:
        if argument in walk.parameters and argument in locals_written:
            raise Refusal(walk.assigned[argument], f"`{argument}` is an integer size and cannot be assigned")
    written_arrays = {raw.target.array for raw in walk.statements if isinstance(raw.target, ArrayRef)}
    for array, use in walk.index_arrays.items():
        if array in written_arrays:
            raise Refusal(use, f"index array `{array}` is written by the function: its values are checked once, before the run")
    front_end = walk.front_end
    for check in front_end.finite if front_end is not None else ():
        if check.array in written_arrays:
            raise Refusal(
                function,
                f"line {check.line}: `{check.text}` needs `{check.array}` finite, checked once before the run, "
                f"but the function writes `{check.array}`: give `range=`",
            )
    arrays = [Array(a, walk.ranks[a], a in written_arrays, True) for a in walk.arguments if a in walk.arrays and a in walk.ranks]
    arrays += [Array(local, 0, True, local in walk.arguments) for local in walk.assigned]
    allocations = tuple(front_end.allocations) if front_end is not None else ()
    arrays += [Array(a.name, len(a.shape), True, True) for a in allocations]
    local_names = set(walk.assigned)
    array_arguments = {a.name for a in arrays if a.rank > 0}
    scalars = tuple(a for a in walk.arguments if a not in array_arguments and a not in walk.parameters and a not in local_names)
    statements = []
    for index, raw in enumerate(walk.statements):
        statement_name = f"S{index}"
        iterators = ", ".join(loop.name for loop in raw.loops)
        constraints = [loop.constraint() for loop in raw.loops] + [str(g) for g in raw.guards]
        where = (" : " + " and ".join(constraints)) if constraints else ""
        domain = isl.Set.read_from_str(ctx, f"{param_space} -> {{ {statement_name}[{iterators}]{where} }}")
        exact = frozenset(loop.name for loop in raw.loops) | frozenset(parameters)
        access = partial(_access, ctx, param_space, statement_name, iterators, domain, exact)
        reads = [access(ref, "read") for loop in raw.inner for ref in loop.limit_refs()]
        if isinstance(raw.target, ArrayRef):
            reads += [access(ref, "read") for ref in index_refs(raw.target)]
        reads += [access(raw.target, "read")] if raw.op != "=" else []
        reads += [access(ref, "read") for ref in array_refs(raw.value)]
        local_reads = [n for n in dict.fromkeys(names(raw.value)) if n in local_names]
        reads += [access(Name(n), "read") for n in local_reads]
        where_node = location(walk.path, raw.node)
        statements.append(
            Statement(
                name=statement_name,
                line=where_node.line,
                column=where_node.column,
                text=_statement_text(raw),
                loops=raw.loops,
                guards=raw.guards,
                target=raw.target,
                op=raw.op,
                value=raw.value,
                positions=raw.positions,
                domain=domain,
                reads=tuple(reads),
                writes=(access(raw.target, "write"),),
                product=raw.product,
                pairwise=raw.pairwise,
                inner=raw.inner,
            )
        )
    row, _ = function.start_point
    return Kernel(
        name=name,
        path=walk.path,
        line=row + 1,
        source=text(function),
        arguments=walk.arguments,
        defaults=tuple(walk.defaults.items()),
        parameters=parameters,
        shape_parameters=shape_parameters,
        scalars=scalars,
        arrays=tuple(arrays),
        statements=tuple(statements),
        returns=tuple(front_end.returns)
        if front_end is not None and front_end.returns
        else ((ReturnValue(walk.returns),) if walk.returns else ()),
        returns_tuple=front_end.returns_tuple if front_end is not None else False,
        allocations=allocations,
        numpy_program=front_end is not None and front_end.lowered_any,
        entry_code=walk.entry_code,
        constants=tuple(walk.constants.items()),
        unit_axes=tuple(walk.unit_axes_taken),
        casts=tuple(front_end.casts) if front_end is not None else (),
        requirements=tuple(front_end.requirements) if front_end is not None else (),
        finite=tuple(front_end.finite) if front_end is not None else (),
        size_floors=tuple(front_end.size_floors) if front_end is not None else (),
        failures=tuple(front_end.failures) if front_end is not None else (),
        derived=tuple(walk.derived.values()),
        assumptions=tuple(
            (a, b)
            for a, b in (front_end.size_equalities() if front_end is not None else ())
            if (a.variables | b.variables) <= set(parameters)
        ),
        ctx=ctx,
    )


def _statement_text(raw: RawStatement) -> str:
    """The statement as written, or for a lowered NumPy statement its element form and where it came from."""
    source = " ".join(text(raw.node).split())
    if not raw.lowered:
        return source
    return f"{shown(raw.target)} {raw.op} {shown(raw.value)}   # {source}"


def _access(
    ctx: isl.Context,
    param_space: str,
    statement: str,
    iterators: str,
    domain: isl.Set,
    exact: frozenset[str],
    ref: ArrayRef | Name,
    kind: str,
) -> Access:
    """The access relation `S[i, j] -> A[f(i, j)]` (or `-> s[]` for a scalar), restricted to the domain.

    A subscript read from an index array, or one of a dynamic loop's variables, is data the model
    cannot know: that dimension is left free (any element), which over-approximates the dependences."""
    free: set[int] = set()
    if isinstance(ref, Name):
        array, subscripts = ref.name, ""
    else:
        parts = []
        for dim, index in enumerate(ref.indices):
            if isinstance(index, AffineExpr) and index.variables <= exact:
                parts.append(str(index))
            else:
                parts.append(f"rp_any{dim}")
                free.add(dim)
        array, subscripts = ref.array, ", ".join(parts)
    text_ = f"{param_space} -> {{ {statement}[{iterators}] -> {array}[{subscripts}] }}"
    relation = isl.Map.read_from_str(ctx, text_).intersect_domain(domain)
    return Access(statement, array, kind, relation, frozenset(free))
