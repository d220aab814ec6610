"""Array ranks a function states itself, read when no call's values say them (`repoos ingest FILE`, a target
given without `--arg`).

NumPy code seldom says how many dimensions an argument has, and a guess would model the wrong function, so
each fact here is either certain or not taken:

- a `# pythran export f(float64[:,:], float64[:], int)` comment gives the rank of each positional parameter;
- an annotation with a shape does too: `np.ndarray[tuple[int, int], ...]`, jaxtyping's `Float[np.ndarray, "n m"]`
  (`npt.NDArray[np.float64]` and a bare `np.ndarray` have none);
- a subscript with loop indices, `A[i, j + 1]`, whose value must be a number: an index (`x[col[k]]`), a
  `range` bound, a truth value (`if A[i, j] > 0`), an argument of a `math` function or of `min`/`max`. Its
  count of indices is the rank, when every such use agrees. In arithmetic assigned to an element, a subscript
  of two or more indices is read the same way (`C[i, j] += A[i, k] * B[k, j]`, as the loop front end reads
  it, `scop.element_ref`); one of one index is not: `A[i] = A[i] / s` is as often a row of a matrix.

Other uses only bound a rank from below: a slice `A[1:, :]`, `A.shape[1]`, `axis=1`, `len(A)`, `A.T`, an
operand of `@`, a method of arrays. They do say the argument is an array, so that an unknown rank is refused
as that (the inputs' shapes are needed) instead of the argument being read as a number. Broadcasting never
fixes a rank here: `x - mu` is valid for many ranks of `x`.

A call's ranks (`--arg`, a swapped function's values) override everything read here, and a call whose values
have another rank is refused by the signature check (`Signature.of_values`), so a rank read here never makes
a wrong result: at worst a model the call does not fit.

A call's values say more than ranks: `CallShapes` carries, beside them, the axes whose extent is 1 at the call.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
from tree_sitter import Node

from repoos_agent.ingest.parse import text

_EXPORT = re.compile(r"^[ \t]*#[ \t]*pythran[ \t]+export[ \t]+(\w+)[ \t]*\((.*)\)[ \t]*$", re.MULTILINE)
_SHAPED_NDARRAY = re.compile(r"ndarray\[\s*(?:tuple|Tuple)\[([^\]]*)\]")
_JAXTYPING = re.compile(r"^\w+\[\s*(?:np|numpy)\.ndarray\s*,\s*[\"']([^\"']*)[\"']\s*\]$")
ARRAY_ATTRIBUTES = frozenset(
    {"T", "shape", "ndim", "size", "dtype", "sum", "mean", "max", "min", "prod", "std", "var", "argmax", "argmin",
     "cumsum", "cumprod", "any", "all", "copy", "fill", "reshape", "ravel", "flatten", "astype", "transpose", "dot",
     "clip", "round", "nonzero", "flat", "item", "tolist", "swapaxes", "squeeze"}
)  # fmt: skip
"""Attributes of NumPy arrays that Python numbers lack: an argument that has one is an array."""
_ARITHMETIC = frozenset(
    {"unary_operator", "parenthesized_expression", "comparison_operator", "conditional_expression", "boolean_operator"}
)
_TRUTH = frozenset({"if_statement", "elif_clause", "while_statement", "not_operator"})  # they take their operand's truth
_OUTPUT_AXIS = frozenset({"expand_dims", "stack"})  # their `axis` is one of the result's: the input may have fewer
_SCALAR_CALLS = frozenset({"min", "max", "range"})  # Python's own: on arrays they raise, so their arguments are numbers


@dataclass(frozen=True)
class CallShapes(Mapping[str, int]):
    """What a call's values say of the array arguments: each one's rank (this mapping), and the axes whose extent
    is 1 at that call.

    NumPy broadcasts an axis of extent 1 against any extent; a model that knows only ranks has a symbolic extent
    there, and broadcasting makes it equal to the other, which the call does not satisfy (or only empty arrays
    do). So where broadcasting ties such an axis (`scop.extract_kernel`), it is modelled as the literal 1
    (`ArrayLowering.size`), and the kernel lists the axes it took so (`Kernel.unit_axes`): a call where one of
    them is not 1 runs the Python original (`CallPlan.prepare`). Where no call is known (`repoos ingest FILE`),
    the ranks are plain mappings and no axis is taken as 1."""

    ranks: Mapping[str, int]
    unit_axes: frozenset[tuple[str, int]] = frozenset()  # (argument, axis) of extent 1 at the call

    @staticmethod
    def of(ranks: Mapping[str, int]) -> CallShapes:
        """`ranks` as call shapes: a plain mapping of ranks says no axis is 1."""
        return ranks if isinstance(ranks, CallShapes) else CallShapes(dict(ranks))

    @staticmethod
    def of_shapes(shapes: Mapping[str, tuple[int, ...]]) -> CallShapes:
        """The ranks and unit axes of arrays of these shapes, by argument."""
        units = frozenset((name, axis) for name, shape in shapes.items() for axis, extent in enumerate(shape) if extent == 1)
        return CallShapes({name: len(shape) for name, shape in shapes.items()}, units)

    @staticmethod
    def of_values(values: Mapping[str, object]) -> CallShapes:
        """What a call's values say: the shapes of its NumPy arrays."""
        return CallShapes.of_shapes({name: value.shape for name, value in values.items() if isinstance(value, np.ndarray)})

    def over(self, ranks: Mapping[str, int]) -> CallShapes:
        """These shapes, and those of `ranks` for the arguments these do not give (a bundled kernel's own ranks)."""
        under = CallShapes.of(ranks)
        kept = frozenset((name, axis) for name, axis in under.unit_axes if name not in self.ranks)
        return CallShapes(dict(under.ranks) | dict(self.ranks), self.unit_axes | kept)

    def only(self, names: Collection[str]) -> CallShapes:
        """The shapes of the arguments named `names` (one function's, of shapes given for a whole file)."""
        return CallShapes(
            {name: rank for name, rank in self.ranks.items() if name in names},
            frozenset((name, axis) for name, axis in self.unit_axes if name in names),
        )

    def __getitem__(self, name: str) -> int:
        return self.ranks[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.ranks)

    def __len__(self) -> int:
        return len(self.ranks)


@dataclass(frozen=True)
class SourceRanks:
    """What a function's source says of its array arguments' ranks."""

    exact: dict[str, int]  # arguments whose rank the source fixes
    least: dict[str, int]  # every argument the source uses as an array, with the least rank its uses need


def source_ranks(function: Node, source: str) -> SourceRanks:
    """The ranks `function` states in a pythran export comment of `source`, its annotations and its body."""
    arguments = _positional_parameters(function)
    body = function.child_by_field_name("body")
    reading = _BodyReading(frozenset(arguments) - _rebound(body, frozenset(arguments)))
    reading.visit(body, frozenset())
    exact = reading.exact()
    name = text(function.child_by_field_name("name"))
    exact.update(_annotated_ranks(function))
    exact.update(_exported_ranks(source, name, arguments))
    exact = {argument: rank for argument, rank in exact.items() if rank > 0}
    least = dict(reading.least)
    for argument, rank in exact.items():
        least[argument] = max(least.get(argument, 0), rank)
    return SourceRanks(exact, least)


def _positional_parameters(function: Node) -> list[str]:
    parameters = function.child_by_field_name("parameters")
    found = []
    for child in parameters.named_children if parameters else []:
        if child.type == "identifier":
            found.append(text(child))
        elif child.type in ("typed_parameter", "default_parameter", "typed_default_parameter"):
            name = child.child_by_field_name("name") or child.named_children[0]
            found.append(text(name))
    return found


def _exported_ranks(source: str, function: str, arguments: list[str]) -> dict[str, int]:
    """`# pythran export f(float64[:,:], int)`: each array type's rank, for the parameter in its place. Several
    exports of one function (overloads) give a rank only where they agree."""
    agreed: dict[str, int | None] = {}
    for match in _EXPORT.finditer(source):
        if match.group(1) != function:
            continue
        for argument, spelled in zip(arguments, _top_level_split(match.group(2)), strict=False):
            ranks = {_pythran_rank(alternative) for alternative in spelled.split(" or ")}
            rank = ranks.pop() if len(ranks) == 1 else None
            agreed[argument] = rank if agreed.get(argument, rank) == rank else None
    return {argument: rank for argument, rank in agreed.items() if rank is not None}


def _top_level_split(types: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for character in types:
        if character in "[(":
            depth += 1
        elif character in "])":
            depth -= 1
        if character == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += character
    return [*parts, current.strip()] if current.strip() else parts


def _pythran_rank(spelled: str) -> int | None:
    """`float64[:,:]` and `float64[][]` have rank 2, `int` rank 0; lists, tuples and the like have none."""
    match = re.fullmatch(r"\w+((?:\[[^\]]*\])*)(?:\s+order\s*\(\s*[CF]\s*\))?", spelled.strip())
    if match is None:
        return None
    return sum(group.count(",") + 1 for group in re.findall(r"\[([^\]]*)\]", match.group(1)))


def _annotated_ranks(function: Node) -> dict[str, int]:
    """Annotations that spell a shape: `np.ndarray[tuple[int, int], ...]`, `Float[np.ndarray, "n m"]`."""
    found = {}
    parameters = function.child_by_field_name("parameters")
    for child in parameters.named_children if parameters else []:
        annotation = child.child_by_field_name("type")
        if child.type not in ("typed_parameter", "typed_default_parameter") or annotation is None:
            continue
        name = text(child.child_by_field_name("name") or child.named_children[0])
        spelled = " ".join(text(annotation).split())
        shaped = _SHAPED_NDARRAY.search(spelled)
        named = _JAXTYPING.match(spelled)
        if shaped and "..." not in shaped.group(1):
            found[name] = len([d for d in shaped.group(1).split(",") if d.strip()])
        elif named and not any(d == "..." or d.startswith("*") for d in named.group(1).split()):
            found[name] = len(named.group(1).split())
    return found


def _rebound(body: Node, arguments: frozenset[str]) -> frozenset[str]:
    """Arguments assigned a new value somewhere (`x = np.asarray(x)`): what the body says of them may not be
    the argument's."""
    found = set()
    stack = [body]
    while stack:
        node = stack.pop()
        if node.type in ("assignment", "for_statement", "named_expression"):
            target = node.child_by_field_name("left") or node.child_by_field_name("name")
            unpacked = target is not None and target.type in ("pattern_list", "tuple_pattern", "list_pattern")
            names = target.named_children if unpacked else [target]
            found.update(text(n) for n in names if n is not None and n.type == "identifier" and text(n) in arguments)
        stack.extend(node.named_children)
    return frozenset(found)


@dataclass
class _BodyReading:
    """One pass over a body: the subscript counts of scalar uses, and the least ranks of every array use."""

    arguments: frozenset[str]
    least: dict[str, int] = field(default_factory=dict)
    counts: dict[str, set[int]] = field(default_factory=dict)  # argument -> subscript counts of its scalar uses
    index_names: dict[str, set[str]] = field(default_factory=dict)  # argument -> other names in those subscripts

    def exact(self) -> dict[str, int]:
        """Ranks where every scalar use agrees and no index is an array (`x[i, idx]` is a gather, not an element)."""
        arrays = set(self.least) | set(self.counts)
        return {
            argument: min(counts)
            for argument, counts in self.counts.items()
            if len(counts) == 1 and min(counts) >= self.least.get(argument, 0) and not self.index_names[argument] & arrays
        }

    def visit(self, node: Node, loops: frozenset[str]) -> None:
        if node.type in ("function_definition", "lambda", "class_definition"):
            return
        if node.type == "for_statement":
            variable, iterable = node.child_by_field_name("left"), node.child_by_field_name("right")
            self.visit(iterable, loops)
            ranged = iterable.type == "call" and text(iterable.child_by_field_name("function")) == "range"
            inner = loops | {text(variable)} if ranged and variable.type == "identifier" else loops
            for child in node.named_children:
                if child not in (variable, iterable):
                    self.visit(child, inner)
            return
        self._note(node, loops)
        for child in node.named_children:
            self.visit(child, loops)

    def _note(self, node: Node, loops: frozenset[str]) -> None:
        kind = node.type
        if kind == "subscript" and node.parent is not None and node.parent.child_by_field_name("value") != node:
            self._subscript(node, loops)
        elif kind == "attribute":
            base, attribute = node.child_by_field_name("object"), text(node.child_by_field_name("attribute"))
            if attribute in ARRAY_ATTRIBUTES:
                self._array(base, 0)
            if attribute == "shape" and node.parent is not None and node.parent.type == "subscript":
                index = node.parent.child_by_field_name("subscript")
                if index is not None and index.type == "integer":
                    self._array(base, int(text(index)) + 1)
        elif kind == "call" and text(node.child_by_field_name("function")) == "len":
            arguments = node.child_by_field_name("arguments").named_children
            if len(arguments) == 1:
                self._array(arguments[0], 1)
        elif kind == "binary_operator" and text(node.child_by_field_name("operator")) == "@":
            for side in (node.child_by_field_name("left"), node.child_by_field_name("right")):
                self._array(side, 1)
        elif kind == "keyword_argument" and text(node.child_by_field_name("name")) == "axis":
            self._axis(node)

    def _array(self, node: Node, least: int) -> None:
        if node.type == "attribute" and text(node.child_by_field_name("attribute")) == "T":
            node = node.child_by_field_name("object")
        name = text(node)
        if node.type == "identifier" and name in self.arguments:
            self.least[name] = max(self.least.get(name, 0), least)

    def _axis(self, keyword: Node) -> None:
        """`np.sum(x, axis=1)` or `x.sum(axis=1)`: `x` has at least two dimensions."""
        value = keyword.child_by_field_name("value")
        axes = value.named_children if value.type == "tuple" else [value]
        numbers = [text(a) for a in axes]
        if not numbers or not all(re.fullmatch(r"-?\d+", n) for n in numbers):
            return
        least = max(int(n) + 1 if not n.startswith("-") else -int(n) for n in numbers)
        call = keyword.parent.parent if keyword.parent is not None else None
        if call is None or call.type != "call":
            return
        callee = call.child_by_field_name("function")
        module, _, function = text(callee).rpartition(".")
        positional = [a for a in keyword.parent.named_children if a.type != "keyword_argument"]
        if function in _OUTPUT_AXIS:
            return
        if module and module.split(".")[0] not in ("np", "numpy"):
            self._array(callee.child_by_field_name("object"), least)
        elif positional:
            self._array(positional[0], least)

    def _subscript(self, node: Node, loops: frozenset[str]) -> None:
        items: list[Node] = []
        base = node
        while base.type == "subscript":
            parts: list[Node] = []
            for item in base.children_by_field_name("subscript"):
                parts.extend(item.named_children if item.type == "expression_list" else [item])
            items = parts + items
            base = base.child_by_field_name("value")
        name = text(base)
        if base.type != "identifier" or name not in self.arguments:
            return
        dimensions = [i for i in items if i.type not in ("none", "ellipsis") and text(i) not in ("np.newaxis", "numpy.newaxis")]
        self.least[name] = max(self.least.get(name, 0), len(dimensions))
        use = _scalar_use(node)
        if len(dimensions) != len(items) or use is None or (use == "assigned" and len(items) < 2):
            return
        names: set[str] = set()
        if all(_index_names(item, names) for item in items) and names & loops:
            self.counts.setdefault(name, set()).add(len(items))
            self.index_names.setdefault(name, set()).update(names - loops)


def _index_names(node: Node, names: set[str]) -> bool:
    """Whether `node` is integer arithmetic on names and literals (collecting the names): an index, not a slice."""
    kind = node.type
    if kind == "integer":
        return True
    if kind == "identifier":
        names.add(text(node))
        return True
    if kind == "binary_operator" and text(node.child_by_field_name("operator")) in ("+", "-", "*", "//", "%"):
        return _index_names(node.child_by_field_name("left"), names) and _index_names(node.child_by_field_name("right"), names)
    if kind in ("unary_operator", "parenthesized_expression"):
        return all(_index_names(child, names) for child in node.named_children)
    return False


def _scalar_use(node: Node) -> str | None:
    """How the value at `node` is used: "number" where Python needs a number (an index, a `range` bound, a truth
    value, an argument of `math` or `min`/`max`), "assigned" where it meets only arithmetic (not `@`) on its way
    to an assignment it is a side of, None otherwise (a call's argument, an attribute, a product)."""
    current = node
    while current.parent is not None:
        parent = current.parent
        if parent.type in ("assignment", "augmented_assignment"):
            return "assigned"
        if parent.type == "subscript" and parent.child_by_field_name("value") != current:
            return "number"
        tested = {"conditional_expression": 1, "boolean_operator": 0}.get(parent.type)  # `c` in `a if c else b`, `a and b`
        if parent.type in _TRUTH or (tested is not None and parent.named_children.index(current) == tested):
            return "number"
        if parent.type == "argument_list" and parent.parent is not None:
            callee = text(parent.parent.child_by_field_name("function"))
            return "number" if callee.startswith("math.") or callee in _SCALAR_CALLS else None
        operator = parent.child_by_field_name("operator") if parent.type == "binary_operator" else None
        if parent.type not in _ARITHMETIC and (operator is None or text(operator) == "@"):
            return None
        current = parent
    return None
