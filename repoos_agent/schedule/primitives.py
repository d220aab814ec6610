"""The registry of schedule primitives: one spec per primitive, and everything else derives from it.

A spec declares what a reader, a parser, a grammar and a model need to know of one primitive: its typed
arguments and the checks on their values, the numbers a constrained model may pick, whether it marks a
loop, a one-line doc and its usage, and its application (the `ScheduleState` method that applies it).
The parser (`schedule.language`), the per-kernel grammars (`schedule.grammar`: GBNF, JSON schema, tool
patterns), the prompts and tool descriptions (`catalog_lines`, `catalog_inline`) and the table of
docs/schedule-language.md (`doc_table`) all read it, so adding a primitive is one spec here, its method
in `schedule.state`, its legality rule and its code generation; `tests/test_primitive_registry.py`
fails when a catalog or the doc table differs from the registry.

Like Exo's scheduling operations, a primitive is also a typed function here (`tile(...)`, `fuse(...)`):
code that proposes schedules builds `Primitive` values with them, checked as the parser checks text.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from repoos_agent.schedule.terms import Argument, LoopRef, Primitive, Schedule, ScheduleError, StatementRef

LOOP, STATEMENT, NUMBER = "L", "S", "N"
"""The kinds of arguments: a loop name (`i`, `S1.j`), a statement label (`S0`), an integer."""

EXPECTED = {LOOP: "a loop name like `i` or `S1.j`", STATEMENT: "a statement like `S0`", NUMBER: "an integer"}

Check = Callable[[Primitive], str | None]
"""A check of a parsed primitive's values: None when they are fine, else the reason, without the primitive."""


class Offer(Enum):
    """Which names a kernel's grammar offers a primitive with (`schedule.grammar` enumerates each kind)."""

    STATEMENT_PAIRS = "every ordered pair of statements"
    PRODUCTS = "each statement that is a product's update"
    ARRAY_SUMS = "each statement that sums into an array"
    TILE_WINDOWS = "each window of one to `band` adjacent loops of a statement, not tiled yet"
    LOOP_PAIRS = "every unordered pair of loops"
    FUSIONS = "every ordered pair of statements, at each depth both have"
    ORDERED_LOOP_PAIRS = "every ordered pair of loops"
    LOOPS = "every loop"
    STATEMENT_LOOPS = "every loop, qualified by each statement inside it"


@dataclass(frozen=True)
class Param:
    """One argument of a primitive: what `usage` calls it and its kind."""

    name: str
    kind: str


@dataclass(frozen=True)
class PrimitiveSpec:
    """One primitive of the schedule language, declared once."""

    name: str
    params: tuple[Param, ...]  # with `band`, one loop and one number: the band repeats them
    usage: str  # what a parse error shows
    example: str  # what the prompts and the doc table show
    doc: str  # one line, for the prompts and tool descriptions
    reference: str  # the doc table's cell: the whole effect, with links
    apply: str  # the `ScheduleState` method that applies it
    offer: Offer  # which names a grammar offers it with
    checks: tuple[Check, ...] = ()
    choices: tuple[int, ...] = ()  # the numbers a constrained model picks from: worth trying on a CPU, a subset of what parses
    probe: int = 0  # the number a grammar applies it with to see whether a use applies (names decide, not numbers)
    band: int = 0  # 1 to `band` loops and as many numbers (tile); 0: the params as declared
    mark: bool = False  # marks a loop (held for the loop as it is at the end of the schedule) rather than moving one
    concurrent: bool = False  # a mark whose loop's iterations run at once: it must carry no dependence
    moves: bool = False  # changes the nest's structure: a grammar's move to another scope
    lowered_to_try: bool = False  # its check runs in lowering: a grammar lowers after trying it

    def signature(self, loops: int = 1) -> str:
        """The kinds of the arguments, one letter each; a band's with `loops` loops."""
        if self.band:
            return LOOP * loops + NUMBER * loops
        return "".join(param.kind for param in self.params)

    def arity_error(self, count: int) -> str | None:
        """Why `count` arguments are wrong for this primitive, or None."""
        if self.band:
            if count % 2 or not 2 <= count <= 2 * self.band:
                return f"{self.name} takes 1 to {self.band} loops and as many sizes, got {count} arguments; usage: {self.usage}"
            return None
        if count != len(self.params):
            return f"takes {len(self.params)} arguments, got {count}; usage: {self.usage}"
        return None

    def check(self, primitive: Primitive) -> str | None:
        """The first reason this primitive's values are refused, or None: its own checks, then no loop named twice."""
        for check in (*self.checks, _distinct_loops):
            reason = check(primitive)
            if reason is not None:
                return reason
        return None


# -- checks ------------------------------------------------------------------------------------------


def _distinct_loops(primitive: Primitive) -> str | None:
    loops = primitive.loops()
    return "the same loop is named twice" if len(set(loops)) != len(loops) else None


def _positive_sizes(primitive: Primitive) -> str | None:
    sizes = primitive.numbers()
    return f"tile sizes must be positive integers, got {', '.join(map(str, sizes))}" if any(s < 1 for s in sizes) else None


def _useful_sizes(primitive: Primitive) -> str | None:
    return "tile sizes above 1048576 are not useful" if any(s > 1 << 20 for s in primitive.numbers()) else None


def _nonzero_factor(primitive: Primitive) -> str | None:
    return "skew factor 0 changes nothing; use a non-zero integer" if primitive.numbers()[0] == 0 else None


def _between(low: int, high: int, word: str) -> Check:
    def check(primitive: Primitive) -> str | None:
        number = primitive.numbers()[0]
        return None if low <= number <= high else f"{word} must be between {low} and {high}, got {number}"

    return check


def _depth_at_least_one(primitive: Primitive) -> str | None:
    depth = primitive.numbers()[0]
    return f"fusion depth must be at least 1, got {depth}" if depth < 1 else None


def _two_loops(primitive: Primitive) -> str | None:
    same = primitive.args[0] == primitive.args[1]
    return f"{primitive.name} of a loop with itself changes nothing" if same else None


def _two_statements(primitive: Primitive) -> str | None:
    return f"{primitive.name} needs two different statements" if primitive.args[0] == primitive.args[1] else None


# -- the registry ------------------------------------------------------------------------------------

SPECS: tuple[PrimitiveSpec, ...] = (
    PrimitiveSpec(
        "interchange",
        (Param("i", LOOP), Param("j", LOOP)),
        usage="interchange(i, j)",
        example="interchange(i, j)",
        doc="swap two loops of a perfect band",
        reference="swap two loops of a perfect band",
        apply="_interchange",
        offer=Offer.LOOP_PAIRS,
        checks=(_two_loops,),
        moves=True,
    ),
    PrimitiveSpec(
        "tile",
        (Param("loop", LOOP), Param("size", NUMBER)),
        usage="tile(i, 32) or tile(i, j, 32, 32) or tile(i, j, k, 32, 32, 32)",
        example="tile(i, j, 32, 32)",
        doc="tile 1-3 adjacent loops; tile loops are named i_t, j_t (j_t2 if tiled twice)",
        reference="tile one to three adjacent loops of a band; the tile loops are named `i_t, j_t`, the point loops keep "
        "`i, j`; a loop tiled again gets `j_t2`",
        apply="_tile",
        offer=Offer.TILE_WINDOWS,
        checks=(_positive_sizes, _useful_sizes),
        choices=(4, 6, 8, 16, 32, 64, 128, 256),
        probe=32,
        band=3,
        moves=True,
    ),
    PrimitiveSpec(
        "skew",
        (Param("outer", LOOP), Param("inner", LOOP), Param("factor", NUMBER)),
        usage="skew(outer, inner, factor)",
        example="skew(i, j, f)",
        doc="j += f*i",
        reference="`j += f*i` (the outer loop skews the inner)",
        apply="_skew",
        offer=Offer.ORDERED_LOOP_PAIRS,
        checks=(_nonzero_factor,),
        choices=(1, 2, -1),
        probe=1,
    ),
    PrimitiveSpec(
        "reverse",
        (Param("i", LOOP),),
        usage="reverse(i)",
        example="reverse(i)",
        doc="run a loop backwards",
        reference="run a loop backwards",
        apply="_reverse",
        offer=Offer.LOOPS,
    ),
    PrimitiveSpec(
        "shift",
        (Param("S1.i", LOOP), Param("offset", NUMBER)),
        usage="shift(S1.i, offset)",
        example="shift(S1.i, d)",
        doc="offset one statement inside a loop",
        reference="offset one statement's iterations by `d` inside a loop",
        apply="_shift",
        offer=Offer.STATEMENT_LOOPS,
        choices=(1, -1, 2),
        probe=1,
    ),
    PrimitiveSpec(
        "fuse",
        (Param("S0", STATEMENT), Param("S1", STATEMENT), Param("depth", NUMBER)),
        usage="fuse(S0, S1, depth)",
        example="fuse(S0, S1, depth)",
        doc="move S1 into S0's outer `depth` loops",
        reference="put S1 (and what shares its loops) into S0's outer `depth` loops, right after S0",
        apply="_fuse",
        offer=Offer.FUSIONS,  # its depth is part of each use, bounded by the kernel: no choices
        checks=(_depth_at_least_one, _two_statements),
        moves=True,
    ),
    PrimitiveSpec(
        "distribute",
        (Param("S0", STATEMENT), Param("S1", STATEMENT)),
        usage="distribute(S0, S1)",
        example="distribute(S0, S1)",
        doc="split the innermost loop S0 and S1 share",
        reference="split the innermost loop S0 and S1 share; S1 and what follows it get a loop of their own",
        apply="_distribute",
        offer=Offer.STATEMENT_PAIRS,
        checks=(_two_statements,),
        moves=True,
    ),
    PrimitiveSpec(
        "parallelize",
        (Param("i", LOOP),),
        usage="parallelize(i)",
        example="parallelize(i)",
        doc="OpenMP parallel loop (must carry no dependence)",
        reference="OpenMP `parallel for`; a scalar temporary every iteration writes before reading it (`temp2 = 0.0` per "
        "row) is private to each thread, if no value leaves the loop; a scatter it carries (`counts[bins[i]] += 1`) is "
        "updated atomically, a reassociation",
        apply="_parallelize",
        offer=Offer.LOOPS,
        mark=True,
        concurrent=True,
    ),
    PrimitiveSpec(
        "vectorize",
        (Param("j", LOOP), Param("width", NUMBER)),
        usage="vectorize(j, width)",
        example="vectorize(j, 4)",
        doc="SIMD on an innermost loop",
        reference="`omp simd` on an innermost loop; a loop whose only carried dependences are sums into one element (a row "
        "sum `q[i] += A[i, j] * p[j]` over `j`) keeps one partial sum per lane ([below](#vectorized-reductions))",
        apply="_vectorize",
        offer=Offer.LOOPS,
        checks=(_between(2, 64, "width"),),
        choices=(4, 8, 16),
        probe=4,
        mark=True,
        concurrent=True,
    ),
    PrimitiveSpec(
        "unroll",
        (Param("k", LOOP), Param("factor", NUMBER)),
        usage="unroll(k, factor)",
        example="unroll(k, 4)",
        doc="exact unrolling",
        reference="exact unrolling: four copies while they fit, then the remainder",
        apply="_unroll",
        offer=Offer.LOOPS,
        checks=(_between(2, 64, "factor"),),
        choices=(2, 4, 8),
        probe=2,
        mark=True,
    ),
    PrimitiveSpec(
        "promote",
        (Param("k", LOOP),),
        usage="promote(k)",
        example="promote(k)",
        doc="keep the elements k's body updates in registers across k (register tiling: the loops inside k must be a "
        "tile of the target)",
        reference="register tiling: the elements the body of `k` updates are loaded into locals before `k` and stored "
        "after it. Applies where the loops inside `k` are a full tile of one statement's target (constant extents, "
        "bounds free of `k`); partial tiles at the edges run as generated",
        apply="_promote",
        offer=Offer.LOOPS,
        mark=True,
        lowered_to_try=True,
    ),
    PrimitiveSpec(
        "blas",
        (Param("S1", STATEMENT),),
        usage="blas(S1)",
        example="blas(S1)",
        doc="run the product whose update is S1 (T += A*B after T = 0) as one OpenBLAS gemm/gemv call; no other "
        "primitive may touch its loops",
        reference="run the product whose update is `S1` (and its initializer, the statement before it) as one "
        "`cblas_?gemm`, `cblas_?syrk` or `cblas_?gemv` call ([below](#products-as-blas-calls))",
        apply="_blas",
        offer=Offer.PRODUCTS,
    ),
    PrimitiveSpec(
        "privatize",
        (Param("S1", STATEMENT),),
        usage="privatize(S1)",
        example="privatize(S1)",
        doc="the sum S1 into an array (`t[idx[i]] += e`) that a parallel loop carries accumulates in a zeroed copy per "
        "thread, added in after the loop, instead of updating the array atomically",
        reference="the sum `S1` accumulates into a zeroed copy of its array per thread of its parallel loop, added into "
        "the array after the loop, instead of updating it atomically; `invalid` unless a parallel loop carries the sum. "
        "Two kinds of sums may run in a parallel loop that carries nothing else: a scatter (`t[idx[i]] += e` through an "
        "index array, a reassociation, [graphs.md](graphs.md#in-the-model)) and a NumPy product's (`y[j] += A[i, j] * "
        "t[i]` over the rows `i`, whose order NumPy leaves to BLAS: atax's one pass over `A` on every core). A sum the "
        "source wrote as a loop keeps its order: gemm's `parallelize(k)` stays illegal",
        apply="_privatize",
        offer=Offer.ARRAY_SUMS,
    ),
)

PRIMITIVES: dict[str, PrimitiveSpec] = {spec.name: spec for spec in SPECS}


# -- catalogs ----------------------------------------------------------------------------------------


def catalog_lines(indent: int = 2, column: int = 29, width: int = 100) -> str:
    """One line per primitive, its example then its doc (wrapped under the doc's column): the prompts' catalog."""
    lines = []
    for spec in SPECS:
        head = f"{' ' * indent}{spec.example:<{column - indent - 1}} "
        lines += textwrap.wrap(spec.doc, width, initial_indent=head, subsequent_indent=" " * column)
    return "\n".join(lines) + "\n"


def catalog_inline() -> str:
    """Every primitive in one paragraph, `example: doc` each: a tool parameter's description."""
    return " · ".join(f"{spec.example}: {spec.doc}" for spec in SPECS)


DOC_BEGIN = "<!-- primitives: generated by repoos_agent.schedule.primitives.doc_table; edit the specs, not this table -->"
DOC_END = "<!-- end of primitives -->"


def doc_table() -> str:
    """The table of docs/schedule-language.md, between `DOC_BEGIN` and `DOC_END`."""
    rows = [f"| `{spec.example}` | {spec.reference} |" for spec in SPECS]
    return "\n".join(["| primitive | effect |", "|---|---|", *rows]) + "\n"


def with_doc_table(page: str) -> str:
    """`page` with the text between its markers replaced by `doc_table()`; the markers must be there."""
    head, begin, rest = page.partition(DOC_BEGIN + "\n")
    _, end, tail = rest.partition(DOC_END)
    if not begin or not end:
        raise ValueError(f"the page lacks the markers `{DOC_BEGIN}` and `{DOC_END}`")
    return head + begin + doc_table() + end + tail


# -- primitives as functions -------------------------------------------------------------------------


def loop(name: str | LoopRef) -> LoopRef:
    """A loop by its name as a schedule spells it: `j`, or `S1.j` qualified by a statement."""
    if isinstance(name, LoopRef):
        return name
    statement, _, bare = name.rpartition(".")
    return LoopRef(bare, statement or None)


def built(name: str, *args: Argument) -> Primitive:
    """The primitive `name` over `args`, checked as the parser checks its text (`ScheduleError` names the reason).
    Its index is 0 until `schedule_of` places it."""
    spec = PRIMITIVES[name]
    primitive = Primitive(name, args, 0)
    reason = spec.arity_error(len(args))
    kinds = spec.signature(len(args) // 2) if spec.band else spec.signature()
    if reason is None and any(_kind(arg) != kind for arg, kind in zip(args, kinds, strict=False)):
        reason = f"arguments must be {', '.join(EXPECTED[kind] for kind in kinds)}; usage: {spec.usage}"
    reason = reason or spec.check(primitive)
    if reason is not None:
        raise ScheduleError(reason, str(primitive), 0)
    return primitive


def _kind(arg: Argument) -> str:
    return LOOP if isinstance(arg, LoopRef) else STATEMENT if isinstance(arg, StatementRef) else NUMBER


def schedule_of(*parts: Primitive | Schedule) -> Schedule:
    """One schedule of `parts` in order, each primitive numbered by its place."""
    primitives = [p for part in parts for p in (part.primitives if isinstance(part, Schedule) else (part,))]
    return Schedule(tuple(Primitive(p.name, p.args, index) for index, p in enumerate(primitives, start=1)))


def interchange(first: str | LoopRef, second: str | LoopRef) -> Primitive:
    return built("interchange", loop(first), loop(second))


def tile(*loops: str | LoopRef, sizes: tuple[int, ...]) -> Primitive:
    return built("tile", *map(loop, loops), *sizes)


def skew(outer: str | LoopRef, inner: str | LoopRef, factor: int) -> Primitive:
    return built("skew", loop(outer), loop(inner), factor)


def reverse(name: str | LoopRef) -> Primitive:
    return built("reverse", loop(name))


def shift(name: str | LoopRef, offset: int) -> Primitive:
    return built("shift", loop(name), offset)


def fuse(first: str, second: str, depth: int) -> Primitive:
    return built("fuse", StatementRef(first), StatementRef(second), depth)


def distribute(first: str, second: str) -> Primitive:
    return built("distribute", StatementRef(first), StatementRef(second))


def parallelize(name: str | LoopRef) -> Primitive:
    return built("parallelize", loop(name))


def vectorize(name: str | LoopRef, width: int) -> Primitive:
    return built("vectorize", loop(name), width)


def unroll(name: str | LoopRef, factor: int) -> Primitive:
    return built("unroll", loop(name), factor)


def promote(name: str | LoopRef) -> Primitive:
    return built("promote", loop(name))


def blas(statement: str) -> Primitive:
    return built("blas", StatementRef(statement))


def privatize(statement: str) -> Primitive:
    return built("privatize", StatementRef(statement))
