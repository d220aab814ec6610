"""The offline searcher: schedules proposed from the dependence analysis, refined by measurements.

It reads what a compiler engineer would: which loops carry dependences (parallelize the
outermost free one), which loop walks the arrays' last dimension (make it innermost),
how big the caches are (tile so a tile's working set fits in L2), and, where no loop is
free, the wavefront a skew opens up. Every idea is proved legal before it is proposed;
after each turn it keeps what measured well, resizes tiles around the best, and drops
ideas that measured slower than the baseline. Deterministic for a seed.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import islpy as isl

from repoos_agent.agent.machine import Machine, this_machine
from repoos_agent.backends.cc import engine_work
from repoos_agent.legality import LegalityVerdict, Verdict, analyze, prove_legal
from repoos_agent.legality.dependences import dependences
from repoos_agent.model.expr import ArrayRef, array_refs
from repoos_agent.model.kernel import Kernel, Statement, isl_lock
from repoos_agent.schedule import LoweredSchedule, ScheduleError, ScheduleState, parse_schedule, primitives
from repoos_agent.schedule.products import NotAProduct, product_call

RAGGED_EDGE_COST = 8.0
"""How much slower a product runs in a register tile's ragged edge than in a full block: an edge
falls back to the loop nest as written (gemm at LARGE, 6 x 32 blocks: 1.5% of the products in
edges took 12% of the time)."""

STRIP_WIDTHS = (128, 512)
"""Strip widths of a parallel innermost loop: a few strips per core at MEDIUM, whole cache lines always."""


MAX_FUSED_STATEMENTS = 40
"""Fusion tries each statement against the one before it: one proof per try, so a long program costs seconds."""


@dataclass(frozen=True)
class Idea:
    """A schedule and why it might help; `score` orders ideas before anything is measured."""

    schedule: str
    score: float
    reason: str
    agent: str = "heuristic"


@dataclass
class Outcome:
    """What the engine said about one proposal: the feedback every proposer learns from."""

    schedule: str
    verdict: Verdict
    speedup: float | None
    feedback: str = ""
    agent: str = ""  # who proposed it: a mixture's heuristic learns from its own proposals only


@dataclass
class HeuristicProposer:
    """Proposes `candidates` schedules per turn for one dialogue."""

    kernel: Kernel
    seed: int = 0
    allow_reassociation: bool = False
    machine: Machine = field(default_factory=this_machine)
    extents: Mapping[str, int] = field(default_factory=dict)  # parameter values of the measured size, if known
    name: str = "heuristic"

    def __post_init__(self) -> None:
        self.random = random.Random(self.seed)
        self.verdicts: dict[str, LegalityVerdict] = {}  # schedule text -> verdict; ideas re-check the same prefixes often
        self.proposed: set[str] = set()

    @cached_property
    def ideas(self) -> list[Idea]:
        """Every legal idea from the analysis, best first; built on first use, as it takes hundreds of proofs."""
        return self._ideas()

    def register_tilings(self) -> list[Idea]:
        """The legal register-tiled schedules alone (`_register_tilings`), without proving every other idea."""
        return [idea for idea in self._register_tilings(self._stride_fixes()) if self._legal(idea.schedule)]

    def blas_calls(self) -> list[Idea]:
        """The legal schedules that call BLAS for products alone (`_blas_calls`), without proving every other idea."""
        return [idea for idea in self._blas_calls() if self._legal(idea.schedule)]

    def propose(self, history: list[Outcome], count: int) -> list[Idea]:
        """The next `count` untried ideas, best first; after measurements, variations of the best.

        Its proofs are the engine's CPU work, like a build: they wait for a timed run of another
        dialogue's candidate to end instead of taking a core from it."""
        with engine_work():
            return self._next_ideas(history, count)

    def _next_ideas(self, history: list[Outcome], count: int) -> list[Idea]:
        measured = [h for h in history if h.speedup is not None]
        ideas: list[Idea] = []
        if measured:
            best = max(measured, key=lambda h: h.speedup)
            ideas += self._around(best)
            slow = {h.schedule for h in measured if h.speedup < 0.95}
            self.ideas = [i for i in self.ideas if not any(s and s in i.schedule for s in slow)]
        ideas += self.ideas
        fresh: list[Idea] = []
        for idea in ideas:
            canonical = self._canonical(idea.schedule)
            if canonical is None or canonical in self.proposed:
                continue
            self.proposed.add(canonical)
            fresh.append(Idea(canonical, idea.score, idea.reason))
            if len(fresh) == count:
                break
        return fresh

    # -- ideas from the analysis --------------------------------------------------------------

    def _canonical(self, text: str) -> str | None:
        try:
            return str(parse_schedule(text))
        except ScheduleError:
            return None

    def _verdict(self, text: str) -> LegalityVerdict:
        if text not in self.verdicts:
            self.verdicts[text] = prove_legal(self.kernel, text, self.allow_reassociation, explain=False)
        return self.verdicts[text]

    def _legal(self, text: str) -> bool:
        return self._verdict(text).legal

    def _ideas(self) -> list[Idea]:
        parallel = self._parallel_marks()
        orders = self._stride_fixes()
        tiles = self._tiles(orders)
        candidates: list[Idea] = []
        for order_text, order_reason in orders:
            for tile_text in ["", *tiles]:
                for with_parallel in (True, False):
                    parts = [order_text, tile_text]
                    marks = self._parallel_marks(prefix=_joined(*parts)) if with_parallel else []
                    text = _joined(*parts, *marks)
                    if not text:
                        continue
                    score = (2.0 if marks else 0) + (1.5 if order_text else 0) + (0.5 if tile_text else 0)
                    reason = ", ".join(
                        r
                        for r in [order_reason, "tiled for L2" if tile_text else "", "outer loops on all cores" if marks else ""]
                        if r
                    )
                    candidates.append(Idea(text, score + self.random.random() * 0.1, reason))
        candidates += self._register_tilings(orders)
        candidates += self._strip_minings(orders)
        if not parallel:
            candidates += self._wavefronts()  # only where no loop is free as written: skewing costs locality
        candidates += self._time_tilings()
        candidates += self._sweep_fusions()
        candidates += self._fusions()
        candidates += self._one_pass_reads()
        candidates += self._blas_calls()
        candidates += self._parallel_scatters()
        candidates += self._vectorized_orders(orders)
        innermost = self._vectorizable()
        if parallel:
            base = "; ".join(parallel)
            candidates += [Idea(f"{base}; {v}", 2.1, "parallel outer loops, vectorized inner loop") for v in innermost[:1]]
        candidates += [Idea(str(primitives.unroll(loop, 4)), 0.2, "unrolled innermost loop") for loop in self._innermost()[:1]]
        legal = [c for c in candidates if self._legal(c.schedule)]
        return sorted(legal, key=lambda c: -c.score)

    def _fusions(self) -> list[Idea]:
        """Producer into consumer, in source order, each at the deepest depth legality allows: what a
        performance engineer does to NumPy code. An elementwise chain becomes one loop nest; a softmax's
        max, exp, sum and divide share the row loop, so each row's temporaries stay in cache; then the
        fused outer loops run on all cores."""
        statements = [s for s in self.kernel.statements if s.loops]
        if not self.kernel.numpy_program or not 1 < len(statements) <= MAX_FUSED_STATEMENTS:
            return []
        parts = self._fused_runs([statements])
        if not parts:
            return []
        fused = _joined(*parts)
        marks = self._parallel_marks(prefix=fused)
        ideas = [Idea(fused, 1.0, "producers fused into their consumers: temporaries stay in cache")]
        if marks:
            reason = "producers fused into their consumers, the fused outer loops on all cores"
            ideas.append(Idea(_joined(fused, *marks), 2.6, reason))
        # Then each fused row's inner loops in vectors: a softmax's row maximum and row sum split across lanes
        # (`legality.lane_reduction`), its exp and divide packed; ahead of the unfused vectorized orders, whose
        # temporaries make a pass over memory each.
        vectors = self._vector_marks(prefix=_joined(fused, *marks))
        if vectors:
            reason = "producers fused into their consumers, inner loops vectorized, their row reductions split across lanes"
            reason += ", the fused outer loops on all cores" if marks else ""
            ideas.append(Idea(_joined(fused, *marks, *vectors), 3.8 if marks else 3.2, reason))
        return ideas

    def _fused_runs(self, runs: list[list[Statement]], prefix: str = "") -> list[str]:
        """The `fuse` steps (after `prefix`) that move each statement of a run into the one before it, each at
        the deepest depth legality allows; a run's first statement starts a nest of its own."""
        parts: list[str] = []
        for run in runs:
            for previous, statement in itertools.pairwise(run):
                for depth in range(min(len(previous.loops), len(statement.loops)), 0, -1):
                    text = str(primitives.fuse(previous.name, statement.name, depth))
                    if self._legal(_joined(prefix, *parts, text)):
                        parts.append(text)
                        break
        return parts

    def _one_pass_reads(self) -> list[Idea]:
        """Two matrix-vector nests that read the same matrix, fused so that it is read once: each nest's innermost loop
        turned to walk the matrix's rows, one moved into the other's loops (its initializer moved along
        where it sits between them), then the inner loops vectorized. What a performance engineer writes
        for `q = A @ p; s = A.T @ r` (bicg) or `x1 += A @ y1; x2 += A.T @ y2` (mvt): NumPy, like two
        BLAS calls, passes over the matrix once per product."""
        ideas: list[Idea] = []
        sums = [s for s in self.kernel.statements if len(s.loops) == 2 and _accumulates(s)]  # matrix-vector shapes
        for first, second in itertools.combinations(sums, 2):
            shared = _shared_matrices(first, second)
            if not shared or _one_nest(first, second):
                continue
            order = _joined(*(_row_walk(statement) for statement in (first, second)))
            fused = next((text for text in self._one_pass_fusions(order, first, second) if self._legal(text)), None)
            if fused is None:
                continue
            vectors = self._vector_marks(fused)
            marks = self._parallel_marks(prefix=_joined(fused, *vectors))
            reason = f"{first.name} and {second.name} fused to read {', '.join(shared)} once"
            # Unvectorized (a row sum that may not be split), one pass runs at one addition per add latency.
            score = 3.8 if vectors else 1.5
            ideas.append(Idea(_joined(fused, *vectors), score, f"{reason}, inner loops vectorized" if vectors else reason))
            if marks:
                ideas.append(Idea(_joined(fused, *marks, *vectors), score + 0.05, f"{reason}, outer loops on all cores"))
        return ideas

    def _one_pass_fusions(self, order: str, first: Statement, second: Statement) -> list[str]:
        """The ways to put `second` and `first` in one nest after `order`, deepest first: either moved into
        the other's loops, or `second`'s initializer moved beside `first`'s before them."""
        names = [statement.name for statement in self.kernel.statements]
        before = {name: self.kernel.statements[names.index(name) - 1] for name in (first.name, second.name) if names.index(name)}
        texts = []
        for depth in range(min(len(first.loops), len(second.loops)), 0, -1):
            texts += [
                _joined(order, str(primitives.fuse(second.name, first.name, depth))),
                _joined(order, str(primitives.fuse(first.name, second.name, depth))),
            ]
            initializers = [before.get(name) for name in (first.name, second.name)]
            if all(s is not None and 0 < len(s.loops) < depth + 1 for s in initializers):
                moved = str(primitives.fuse(initializers[0].name, initializers[1].name, len(initializers[0].loops)))
                texts.append(_joined(order, moved, str(primitives.fuse(first.name, second.name, depth))))
        return texts

    def _blas_calls(self) -> list[Idea]:
        """`blas(S)` for each product one BLAS call computes, then all of them with the other nests'
        free loops parallel: the search measures OpenBLAS against the loops (and their fused forms)."""
        calls = {}
        for statement in self.kernel.statements:
            try:
                call = product_call(self.kernel, statement.name)
            except NotAProduct:
                continue
            calls[str(primitives.blas(statement.name))] = {call.initializer, call.update}
        products = list(calls)
        ideas = [Idea(call, 3.4, "the product run by OpenBLAS") for call in products]
        if len(products) > 1:
            ideas.append(Idea(_joined(*products), 3.5, "every product run by OpenBLAS"))
        if products:
            every = _joined(*products)
            marks = self._parallel_marks(prefix=every)
            if marks:
                ideas.append(Idea(_joined(every, *marks), 3.6, "every product run by OpenBLAS, the other nests on all cores"))
            ideas += self._fused_around_products(every, set().union(*calls.values()))
        return ideas

    def _fused_around_products(self, products: str, by_blas: set[str]) -> list[Idea]:
        """Every product by OpenBLAS and the statements between two products fused producer into consumer,
        their outer loops on all cores: what a performance engineer writes for a NumPy program that mixes
        products with elementwise work (attention: BLAS for the projections and scores, one row loop for
        the mask and the softmax, whose temporaries shrink to a row). NumPy runs its products through
        OpenBLAS too, so the loops between them are where such a program is won; with two products or
        more it is tried before the register tiles."""
        if not self.kernel.numpy_program:
            return []
        runs: list[list[Statement]] = [[]]
        for statement in self.kernel.statements:
            if statement.name in by_blas or not statement.loops:
                runs.append([])  # a BLAS call between producer and consumer: fusing across it would move one past it
            else:
                runs[-1].append(statement)
        parts = self._fused_runs(runs, products)
        if not parts:
            return []
        fused = _joined(products, *parts)
        marks = self._parallel_marks(prefix=fused)
        score = 3.9 if products.count("blas(") > 1 else 3.55
        reason = "every product run by OpenBLAS, the statements between them fused into one loop nest"
        return [Idea(_joined(fused, *marks), score, f"{reason}, its outer loops on all cores" if marks else reason)]

    def _parallel_scatters(self) -> list[Idea]:
        """A loop that carries nothing but scatters (`counts[bins[i]] += 1`), in parallel two ways: each update
        atomic, or each thread summing into its own copy of the array (`privatize`). Legal only where the
        search allows reassociation; which one pays (if either) is the race's to say."""
        if not self.allow_reassociation:
            return []
        ideas = []
        for loop in analyze(self.kernel).loops:
            if loop.array_sums and all(self.kernel.statement(name).is_scatter for name in loop.array_sums):
                copies = "; ".join(str(primitives.privatize(name)) for name in loop.array_sums)
                mark = str(primitives.parallelize(loop.name))
                ideas.append(Idea(mark, 1.0, "the scatter on all cores, its updates atomic"))
                ideas.append(Idea(f"{mark}; {copies}", 1.2, "the scatter on all cores, a copy per thread"))
        return ideas

    def _parallel_marks(self, prefix: str = "") -> list[str]:
        """`parallelize` for every outermost loop that carries no dependence (after `prefix`)."""
        verdict = prove_legal(self.kernel, prefix, self.allow_reassociation) if prefix else None
        if verdict is not None and not verdict.legal:
            return []
        if verdict is None:
            loops = [loop for loop in analyze(self.kernel).loops if loop.parallelizable]
            chosen, covered = [], set()
            for loop in sorted(loops, key=lambda x: x.depth):
                if covered & set(loop.statements):
                    continue
                chosen.append(str(primitives.parallelize(loop.name)))
                covered |= set(loop.statements)
            return chosen
        lowered = verdict.lowered
        by_name = {lowered.qualified_name(i): (lowered.level_of(i), set(lowered.statements_in(i))) for i in lowered.loop_names}
        ids = {lowered.qualified_name(i): i for i in lowered.loop_names}
        by_blas = {name for call in lowered.blas for name in (call.initializer, call.update)}
        chosen: list[tuple[str, int, set[str]]] = []  # mark, level, statements
        covered: set[str] = set()
        for name in sorted(verdict.parallel_loops, key=lambda n: by_name.get(n, (99, set()))[0]):
            level, members = by_name.get(name, (99, set()))
            if not members or covered & members or members <= by_blas:
                continue
            if "." in name and name.split(".")[0] in by_blas:  # the BLAS call runs those nests: name the loop by another
                name = f"{sorted(members - by_blas)[0]}.{lowered.loop_names[ids[name]]}"
            chosen.append((str(primitives.parallelize(name)), level, members))
            covered |= members
        return self._with_summing_loops(prefix, chosen, lowered, by_blas)

    def _with_summing_loops(
        self, prefix: str, chosen: list[tuple[str, int, set[str]]], lowered: LoweredSchedule, by_blas: set[str]
    ) -> list[str]:
        """The `chosen` marks, and `parallelize` for each outermost loop left that carries nothing but sums into
        arrays, each thread summing into its own copy (`privatize`), in place of the marks inside it: the one
        pass over a matrix that atax's fused products make, `y[j] += A[i, j] * t[i]` over the rows `i`. Legal
        without reassociation only for NumPy's products."""
        outer = set(by_blas).union(*(members for _, level, members in chosen if level == 0))
        summing: list[str] = []
        for loop_id in lowered.loop_names:
            members = set(lowered.statements_in(loop_id))
            if lowered.level_of(loop_id) != 0 or not members or outer & members:
                continue
            kept = [(mark, level, inner) for mark, level, inner in chosen if not inner <= members]
            mark = str(primitives.parallelize(lowered.qualified_name(loop_id)))
            trial = self._verdict(_joined(prefix, *(m for m, _, _ in kept), *summing, mark))
            if not trial.legal or not trial.lowered.atomic:
                continue
            copies = [str(primitives.privatize(name)) for name in sorted(trial.lowered.atomic)]
            if self._legal(_joined(prefix, *(m for m, _, _ in kept), *summing, mark, *copies)):
                chosen, summing = kept, [*summing, mark, *copies]
                outer |= members
        return [mark for mark, _, _ in chosen] + summing

    def _stride_fixes(self) -> list[tuple[str, str]]:
        """Interchanges (after splitting statements off where needed) that make the innermost loop
        the one walking the last dimension of the statement's arrays."""
        fixes: list[tuple[str, str]] = [("", "")]
        combined, together = "", []  # every fix that still applies after the earlier ones, its splits only where needed
        for index, statement in enumerate(self.kernel.statements):
            if len(statement.loops) < 2:
                continue
            best = _stride_one_loop(statement)
            inner = statement.loops[-1].name
            if best is None or best == inner:
                continue
            swap = str(primitives.interchange(f"{statement.name}.{best}", f"{statement.name}.{inner}"))
            reason = f"{best} innermost in {statement.name} (stride-1 accesses)"
            # The swap needs a perfect band: split off the statements before and after it first if needed.
            before = str(primitives.distribute(self.kernel.statements[index - 1].name, statement.name)) if index > 0 else ""
            after = (
                str(primitives.distribute(statement.name, self.kernel.statements[index + 1].name))
                if index + 1 < len(self.kernel.statements)
                else ""
            )
            for splits in ([], [before], [after], [before, after]):
                if any(not split for split in splits):
                    continue
                text = "; ".join([*splits, swap])
                if self._legal(text):
                    fixes.append((text, f"{statement.name} split off, then {reason}" if splits else reason))
                    extended = next((c for c in (_joined(combined, swap), _joined(combined, text)) if self._legal(c)), None)
                    if extended is not None:
                        combined = extended
                        together.append(statement.name)
                    break
        if len(together) > 1:
            fixes.append((combined, f"stride-1 loops innermost in {', '.join(together)}"))
        return fixes

    def _tiles(self, orders: list[tuple[str, str]]) -> list[str]:
        """Tiles of the deepest statement's two innermost-but-one loops, sized for L2."""
        deepest = max(self.kernel.statements, key=lambda s: len(s.loops))
        if len(deepest.loops) < 3:
            return []
        side = 32
        while 3 * (side * 2) ** 2 * 8 <= self.machine.l2_bytes // 2:
            side *= 2
        texts = []
        for order_text, _ in orders[:3]:
            state_names = _loop_order_after(self.kernel, deepest, order_text)
            if state_names is None:
                continue
            outer, middle = state_names[-3], state_names[-2]
            tile = primitives.tile(f"{deepest.name}.{outer}", f"{deepest.name}.{middle}", sizes=(side, side))
            texts.append(_joined(order_text, str(tile)))
        return [t.split("; ")[-1] for t in texts]

    def _register_tilings(self, orders: list[tuple[str, str]]) -> list[Idea]:
        """For `T[a][b] += ...` inside a loop `r` that `T` does not use (a matrix product, a rank-k
        update): a block of `T` kept in registers while `r` runs, as a BLAS micro-kernel does. Each
        such statement gets loops of its own, `a, r, b` become its innermost three, and they are tiled
        so that blocks of rows of `T` run in parallel and `r` sweeps a panel that stays in L2. Every
        eligible statement is tiled in one schedule, on top of the source order or the stride fixes."""
        lanes = self.machine.simd_doubles
        ideas = []
        for order_text in dict.fromkeys([orders[0][0], orders[-1][0]]):
            for sizes in ((6, 128, 4 * lanes), (4, 256, 3 * lanes), None):
                for parallel in (True, False):
                    text, blocks = order_text, []
                    for statement in self.kernel.statements:
                        steps = self._register_tile(statement, text, sizes, parallel)
                        if steps is not None:
                            text = _joined(text, steps)
                            blocks.append(f"{statement.target.array} in {statement.name}")
                    if blocks:
                        shape = f"{sizes[0]} x {sizes[2]} blocks" if sizes else "blocks fitted to the arrays"
                        reason = f"register tiles ({shape} of {', '.join(blocks)} in registers)"
                        reason += ", rows of blocks on all cores" if parallel else ""
                        score = (3.2 if parallel else 1.2) + 0.1 * len(blocks) + (0.05 if sizes is None else 0)
                        ideas.append(Idea(text, score, reason))
        return ideas

    def _fitted_block(self, statement: Statement, row: str, column: str) -> tuple[int, int, int] | None:
        """Register block and panel for `statement` at the measured size: the rows x columns block
        that wastes least, counting the ragged edges the block leaves (they run as written) and the
        lanes a row of the block leaves idle in its last vector. With 512-bit vectors that is counted
        in half vectors: a row of 44 doubles ends in a 256-bit operation, which costs half of a 512-bit
        one where those are split in two, as on this Zen 4 (4 x 44 blocks ran gemm at LARGE in 0.039 s,
        6 x 32 in 0.042 s and 5 x 32 in 0.044 s); on a machine with full-width 512-bit units the half
        costs a whole one and the block is a little worse than it looks. None when the size is unknown
        or no block fits the loops."""
        rows, columns = self._extent(statement, row), self._extent(statement, column)
        if rows is None or columns is None:
            return None
        lanes = self.machine.simd_doubles
        accumulators = (32 if lanes == 8 else 16) * 3 // 4  # the rest hold a row of the other operand and a broadcast
        granule = lanes // 2 if lanes == 8 else lanes  # the narrowest operation that costs less than a full vector

        def cost(block: tuple[int, int]) -> float:
            height, width = block
            full = (rows // height * height) * (columns // width * width) / (rows * columns)
            used = width / (-(-width // granule) * granule)
            return full / used + (1 - full) * RAGGED_EDGE_COST

        shapes = [
            (height, width)
            for height in range(2, 9)
            for width in range(lanes, 8 * lanes + 1, granule)
            if accumulators * 2 // 3 <= height * -(-width // lanes) <= accumulators and height <= rows and width <= columns
        ]
        if not shapes:
            return None
        height, width = min(shapes, key=lambda shape: (cost(shape), -shape[0] * shape[1]))
        return height, 256 if height <= 4 else 128, width

    def _extent(self, statement: Statement, loop: str) -> int | None:
        """How many values `statement`'s loop `loop` spans at the measured size (from its smallest to its
        largest value over the whole domain, for a triangular loop), or None when the size is unknown."""
        with isl_lock(self.kernel):
            domain = statement.domain
            for position in range(domain.dim(isl.dim_type.param)):
                name = domain.get_dim_name(isl.dim_type.param, position)
                if name not in self.extents:
                    return None
                value = isl.Val.int_from_si(domain.get_ctx(), self.extents[name])
                domain = domain.fix_val(isl.dim_type.param, position, value)
            if domain.is_empty():
                return None
            position = statement.iterators.index(loop)
            return domain.dim_max_val(position).to_python() - domain.dim_min_val(position).to_python() + 1

    def _register_tile(self, statement: Statement, prefix: str, sizes: tuple[int, int, int] | None, parallel: bool) -> str | None:
        """The steps (after `prefix`) that register-tile `statement` with blocks of `sizes` (None: the
        block fitted to the measured size), or None where it has no such block or the steps are not
        legal."""
        target = statement.target
        if len(statement.loops) < 3 or not isinstance(target, ArrayRef) or len(target.indices) < 2 or statement.irregular:
            return None
        if statement.op not in ("+=", "-=") and target not in array_refs(statement.value):
            return None  # not an accumulation: nothing to keep in registers across a loop
        row, column = (_loop_of(index, statement) for index in target.indices[-2:])
        used = {name for index in target.indices for name, _ in index.terms}
        reductions = [n for n in statement.iterators if n not in used]
        if row is None or column is None or not reductions:
            return None
        sizes = sizes or self._fitted_block(statement, row, column)
        if sizes is None:
            return None
        steps = self._isolating(statement.name, prefix)
        order = _loop_order_after(self.kernel, statement, _joined(prefix, *steps))
        if order is None:
            return None
        wanted = [row, reductions[-1], column]
        for position, name in zip(range(len(order) - 3, len(order)), wanted, strict=True):
            if order[position] != name:
                steps.append(str(primitives.interchange(f"{statement.name}.{order[position]}", f"{statement.name}.{name}")))
                other = order.index(name)
                order[position], order[other] = order[other], order[position]
        a, r, b = (f"{statement.name}.{name}" for name in wanted)
        steps += [str(primitives.tile(a, r, b, sizes=sizes)), str(primitives.interchange(f"{a}_t", f"{r}_t"))]
        steps.append(str(primitives.interchange(a, r)))
        if parallel:
            steps.append(str(primitives.parallelize(f"{a}_t")))
        steps.append(str(primitives.promote(r)))
        text = "; ".join(steps)
        return text if self._legal(_joined(prefix, text)) else None

    def _strip_minings(self, orders: list[tuple[str, str]]) -> list[Idea]:
        """Where a statement's innermost loop is its only free one (a column sum such as
        `y[j] += A[i][j] * tmp[i]`, whose `i` carries the sum): strips of the innermost loop run on
        the cores. Exact arithmetic: each element still accumulates in source order; only which
        thread does it changes. Every such statement is strip-mined in one schedule, the other
        statements keep their outermost free loops parallel."""
        ideas = []
        for order_text in dict.fromkeys(text for text, _ in orders):
            text, strips, steps_taken = order_text, [], []
            for statement in self.kernel.statements:
                steps = self._strip(statement, text)
                if steps is not None:
                    text = _joined(text, steps)
                    strips.append(statement.name)
                    steps_taken.append(steps)
            if not strips:
                continue
            for width in STRIP_WIDTHS:
                sized = _joined(order_text, *(s.replace(f", {STRIP_WIDTHS[0]})", f", {width})") for s in steps_taken))
                reason = f"strips of {width} of the free innermost loop of {', '.join(strips)} on all cores"
                ideas.append(Idea(_joined(sized, *self._parallel_marks(prefix=sized)), 3.0, reason))
        return ideas

    def _strip(self, statement: Statement, prefix: str) -> str | None:
        """The steps (after `prefix`) that tile `statement`'s innermost loop in strips of
        `STRIP_WIDTHS[0]` and move the strip loop as far out as stays legal with it parallel (how far
        does not depend on the width); None where an outer loop is free already (parallelizing that
        is cheaper) or the innermost loop is not free."""
        order = _loop_order_after(self.kernel, statement, prefix)
        if order is None or len(order) < 2:
            return None
        names = [f"{statement.name}.{name}" for name in order]
        if any(self._legal(_joined(prefix, str(primitives.parallelize(name)))) for name in names[:-1]):
            return None
        steps = self._isolating(statement.name, prefix)
        base = _joined(prefix, *steps)
        if (
            _loop_order_after(self.kernel, statement, base) != order
            or not self._legal(_joined(base, str(primitives.parallelize(names[-1]))))
            or any(self._legal(_joined(base, str(primitives.parallelize(name)))) for name in names[:-1])
        ):
            return None
        strip = f"{names[-1]}_t"
        moves = [str(primitives.tile(names[-1], sizes=(STRIP_WIDTHS[0],)))]
        moves += [str(primitives.interchange(name, strip)) for name in reversed(names[:-1])]
        for outward in range(len(names) - 1, 0, -1):
            text = _joined(*steps, *moves[: outward + 1])
            if self._legal(_joined(prefix, text, str(primitives.parallelize(strip)))):
                return text
        return None

    def _isolating(self, name: str, prefix: str) -> list[str]:
        """The `distribute`s (after `prefix`) that give statement `name` loops of its own, where legal."""
        steps: list[str] = []
        progress = True
        while progress:
            progress = False
            for other in self.kernel.statements:
                if other.name == name or not _share_outer_loop(other, self.kernel.statement(name)):
                    continue
                first, second = sorted((other.name, name), key=lambda n: int(n[1:]))
                split = str(primitives.distribute(first, second))
                if self._legal(_joined(prefix, *steps, split)):
                    steps.append(split)
                    progress = True
        return steps

    def _time_tilings(self) -> list[Idea]:
        """Stencils: sweeps inside a time loop `t`. Each later sweep is shifted by the fewest rows that
        let it run in the first sweep's row loop, so a row is finished by every sweep while it is still
        in cache; then rows are skewed against time and tiled in (t, row) blocks that run as a
        wavefront on all cores. Each block reuses its rows for several time steps."""
        statements = self.kernel.statements
        first = statements[0]
        if (
            len(first.loops) < 2
            or any(len(s.loops) < 2 or not _share_outer_loop(s, first) for s in statements)
            or self._legal(str(primitives.parallelize(f"{first.name}.{first.loops[0].name}")))
        ):
            return []
        time, row = f"{first.name}.{first.loops[0].name}", f"{first.name}.{first.loops[1].name}"
        text = ""
        for statement in statements[1:]:
            fused = (
                _joined(
                    text,
                    str(primitives.shift(f"{statement.name}.{statement.loops[1].name}", offset)) if offset else "",
                    str(primitives.fuse(first.name, statement.name, 2)),
                )
                for offset in range(4)
            )
            text = next((t for t in fused if self._legal(t)), None)
            if text is None:
                return []
        ideas = []
        for factor in range(1, 5):
            for time_steps, rows in ((16, 32), (32, 64)):
                tiled = _joined(
                    text,
                    str(primitives.skew(time, row, factor)),
                    str(primitives.tile(time, row, sizes=(time_steps, rows))),
                    _tiles_as_wavefront(time, row),
                )
                if self._legal(tiled):
                    reason = f"time tiles of {time_steps} steps x {rows} rows, sweeps fused, run as a wavefront on all cores"
                    ideas.append(Idea(tiled, 3.6, reason))
            if ideas:
                return ideas
        return []

    def _sweep_fusions(self) -> list[Idea]:
        """Stencil sweeps in nests of their own, each reading its neighbours' results (hdiff's Laplacian,
        fluxes and update). Each sweep is shifted by the fewest rows and columns that let it run in the
        first sweep's nest, read off the dependences' distances, so every temporary's row is used while in
        cache; then the plane is tiled and its tiles run as a wavefront on all cores."""
        sweeps = [s for s in self.kernel.statements if s.loops]
        depth = len(sweeps[0].loops) if sweeps else 0
        if (
            not self.kernel.numpy_program
            or not 1 < len(sweeps) <= MAX_FUSED_STATEMENTS
            or depth < 2
            or any(len(s.loops) != depth or s.is_reduction for s in sweeps)
            or any(_share_outer_loop(a, b) for a, b in itertools.pairwise(sweeps))
        ):
            return []
        shifts = _sweep_shifts(self.kernel, sweeps, depth)
        if shifts is None or not any(any(offsets) for offsets in shifts.values()):
            return []  # no neighbour is read: the plain fusions cover it
        steps = [
            str(primitives.shift(f"{s.name}.{s.loops[d].name}", offset))
            for s in sweeps
            for d, offset in enumerate(shifts[s.name])
            if offset
        ]
        steps += [str(primitives.fuse(a.name, b.name, depth)) for a, b in itertools.pairwise(sweeps)]
        fused = _joined(*steps)
        if not self._legal(fused):
            return []
        first = sweeps[0]
        row, column = (f"{first.name}.{loop.name}" for loop in first.loops[:2])
        ideas = [Idea(fused, 1.2, "stencil sweeps shifted and fused into one nest: each temporary's rows used while in cache")]
        for size in (32, 64):
            tiled = _joined(fused, str(primitives.tile(row, column, sizes=(size, size))), _tiles_as_wavefront(row, column))
            if self._legal(tiled):
                reason = f"stencil sweeps shifted and fused, in {size} x {size} tiles run as a wavefront on all cores"
                ideas.append(Idea(tiled, 3.9 - size / 640, reason))
        return ideas

    def _wavefronts(self) -> list[Idea]:
        """Where the outer loops all carry dependences: skew so a loop becomes parallel."""
        ideas = []
        for statement in self.kernel.statements:
            names = [f"{statement.name}.{loop.name}" for loop in statement.loops]
            if len(names) < 2:
                continue
            patterns = []
            if len(names) >= 3:
                a, b, c = names[:3]
                wave = (primitives.skew(b, c, 1), primitives.skew(a, b, 2), primitives.interchange(a, b), primitives.parallelize(a))
                patterns.append(str(primitives.schedule_of(*wave)))
            a, b = names[-2:]
            patterns += [
                str(primitives.schedule_of(primitives.skew(a, b, f), primitives.interchange(a, b), primitives.parallelize(a)))
                for f in (1, 2)
            ]
            ideas += [Idea(p, 1.0, "wavefront: skewed so the outer loop's iterations are independent") for p in patterns]
        return ideas

    def _vectorized_orders(self, orders: list[tuple[str, str]]) -> list[Idea]:
        """Each loop order with every innermost loop vectorized, its outer loops parallel or not. A row sum
        (`q[i] += A[i, j] * p[j]` over `j`) vectorizes too, its lanes splitting the sum: gcc does not split it
        without fast-math, and a matrix-vector product otherwise runs at one addition per add latency. Those
        rank high: nothing else the heuristic proposes makes such a loop fast."""
        ideas = []
        for order_text, order_reason in orders:
            vectors = self._vector_marks(order_text)
            if not vectors:
                continue
            vectorized = _joined(order_text, *vectors)
            verdict = self._verdict(vectorized)  # proved already: the last mark `_vector_marks` kept
            splits = bool(verdict.legal and verdict.lowered.lane_sums)
            for with_parallel in (True, False):
                marks = self._parallel_marks(prefix=vectorized) if with_parallel else []
                if with_parallel and not marks:
                    continue
                inner = "inner loops vectorized, their row sums split across lanes" if splits else "inner loops vectorized"
                reason = ", ".join(r for r in [order_reason, "outer loops on all cores" if marks else "", inner] if r)
                score = (3.3 if splits else 1.8) + (0.4 if marks else 0)
                ideas.append(Idea(_joined(order_text, *marks, *vectors), score, reason))
        return ideas

    def _vector_marks(self, prefix: str = "") -> list[str]:
        """`vectorize` for the innermost loop of every statement after `prefix`, each where it stays legal."""
        try:
            lowered = ScheduleState(self.kernel).apply_all(parse_schedule(prefix)).lower()
        except ScheduleError:
            return []
        marks: list[str] = []
        for loop_id in dict.fromkeys(ids[-1] for ids in lowered.loop_ids.values() if ids):
            mark = str(primitives.vectorize(lowered.qualified_name(loop_id), self.machine.simd_doubles))
            if self._legal(_joined(prefix, *marks, mark)):
                marks.append(mark)
        return marks

    def _vectorizable(self) -> list[str]:
        simd = self.machine.simd_doubles
        return [str(primitives.vectorize(loop.name, simd)) for loop in analyze(self.kernel).loops if loop.vectorizable]

    def _innermost(self) -> list[str]:
        return [loop.name for loop in analyze(self.kernel).loops if loop.innermost]

    def _around(self, best: Outcome) -> list[Idea]:
        """Variations of the best schedule so far: tiles halved and doubled, vectorization added."""
        variations = []
        for factor, word in ((0.5, "halved"), (2.0, "doubled")):
            resized = _resize_tiles(best.schedule, factor)
            if resized and resized != best.schedule:
                variations.append(Idea(resized, 3.0, f"tiles of the best so far {word}"))
        if not _vectorizes(best.schedule):
            for vector in self._vectorizable()[:1]:
                variations.append(Idea(f"{best.schedule}; {vector}" if best.schedule else vector, 2.5, "best so far, vectorized"))
        return [v for v in variations if self._legal(v.schedule)]


def _share_outer_loop(first: Statement, second: Statement) -> bool:
    """Whether the two statements sit in the same outermost loop (only then can `distribute` split them)."""
    return bool(first.loops and second.loops) and (first.positions[0], first.loops[0].name) == (
        second.positions[0],
        second.loops[0].name,
    )


def _sweep_shifts(kernel: Kernel, sweeps: list[Statement], depth: int) -> dict[str, tuple[int, ...]] | None:
    """Per sweep, how far to delay it in each loop so that, in one nest, it runs no earlier in any loop than
    the sweeps it depends on: a source at `i + 1` delays the sink by 1 more than the source's own delay.
    None where a distance depends on the sizes (not a stencil)."""
    shifts = {sweeps[0].name: (0,) * depth}
    order = {s.name: n for n, s in enumerate(sweeps)}
    with isl_lock(kernel):
        for sink in sweeps[1:]:
            delay = [0] * depth
            for dependence in dependences(kernel):
                if dependence.sink is not sink or order.get(dependence.source.name, len(sweeps)) >= order[sink.name]:
                    continue
                relation = dependence.relation.set_tuple_name(isl.dim_type.in_, "x").set_tuple_name(isl.dim_type.out, "x")
                distances = relation.deltas()
                for d in range(depth):
                    pieces = [aff.gist(where) for where, aff in distances.dim_min(d).get_pieces()]
                    if not all(aff.is_cst() for aff in pieces):
                        return None
                    nearest = min(aff.get_constant_val().to_python() for aff in pieces)
                    delay[d] = max(delay[d], shifts[dependence.source.name][d] - nearest)
            shifts[sink.name] = tuple(delay)
    return shifts


def _tiles_as_wavefront(outer: str, inner: str) -> str:
    """The tile loops of `outer` and `inner` skewed so the tiles of one anti-diagonal run in parallel: legal
    where every dependence's distance is non-negative in both loops."""
    outer, inner = f"{outer}_t", f"{inner}_t"
    return str(
        primitives.schedule_of(
            primitives.skew(outer, inner, 1), primitives.interchange(outer, inner), primitives.parallelize(outer)
        )
    )


def _joined(*parts: str) -> str:
    """Schedule fragments joined into one schedule, empty ones skipped."""
    return "; ".join(part for part in parts if part)


def _vectorizes(schedule: str) -> bool:
    """Whether `schedule` already vectorizes a loop (a second `vectorize` of the same loop measures nothing new)."""
    try:
        return any(primitive.name == "vectorize" for primitive in parse_schedule(schedule).primitives)
    except ScheduleError:
        return False


def _resize_tiles(schedule: str, factor: float) -> str | None:
    """The schedule with every tile size scaled by `factor` (at least 2), other primitives untouched.
    Register tiles keep their block (it is sized for the registers) and scale only the panel of the
    promoted loop, the middle of `tile(a, r, b, ...)`."""
    try:
        parsed = parse_schedule(schedule)
    except ScheduleError:
        return None
    promoted = {str(p.loops()[0]) for p in parsed.primitives if p.name == "promote"}
    resized = []
    for primitive in parsed.primitives:
        if primitive.name != "tile":
            resized.append(primitive)
            continue
        loops = {str(loop) for loop in primitive.loops()}
        scaled = [str(loop) in promoted for loop in primitive.loops()] if promoted & loops else [True] * len(loops)
        sizes = tuple(
            max(2, int(size * factor)) if scale else size for size, scale in zip(primitive.numbers(), scaled, strict=True)
        )
        try:
            resized.append(primitives.tile(*primitive.loops(), sizes=sizes))
        except ScheduleError:  # scaled past what a tile takes
            return None
    return str(primitives.schedule_of(*resized))


def _shared_matrices(first: Statement, second: Statement) -> list[str]:
    """The arrays of two dimensions or more that both statements read."""

    def matrices(statement: Statement) -> set[str]:
        return {ref.array for ref in array_refs(statement.value) if len(ref.indices) >= 2}

    return sorted(matrices(first) & matrices(second))


def _accumulates(statement: Statement) -> bool:
    """Whether the statement adds into its target (`q[i] += …`, or `q[i] = q[i] + …` as PolyBench writes it)."""
    return statement.op in ("+=", "-=") or statement.target in array_refs(statement.value)


def _one_nest(first: Statement, second: Statement) -> bool:
    """Whether the two statements already share every loop: one pass reads their arrays as written."""
    return first.iterators == second.iterators and first.positions[:-1] == second.positions[:-1]


def _row_walk(statement: Statement) -> str:
    """The interchange that makes `statement`'s innermost loop the one walking its arrays' last dimension, or ""."""
    best, inner = _stride_one_loop(statement), statement.loops[-1].name
    if best is None or best == inner:
        return ""
    return str(primitives.interchange(f"{statement.name}.{best}", f"{statement.name}.{inner}"))


def _stride_one_loop(statement: Statement) -> str | None:
    """The loop variable that appears, with coefficient ±1, in the last subscript of most accesses."""
    refs = [r for r in [statement.target, *array_refs(statement.value)] if isinstance(r, ArrayRef) and r.indices and r.is_affine]
    votes: dict[str, int] = {}
    for ref in refs:
        for name, coefficient in ref.indices[-1].terms:
            if abs(coefficient) == 1 and name in statement.iterators:
                votes[name] = votes.get(name, 0) + 1
        for index in ref.indices[:-1]:
            for name, _ in index.terms:
                if name in statement.iterators:
                    votes[name] = votes.get(name, 0) - 1
    if not votes:
        return None
    return max(votes, key=lambda n: (votes[n], statement.iterators.index(n)))


def _loop_of(index, statement: Statement) -> str | None:
    """The one loop of `statement` a subscript walks, or None if it uses none or several."""
    loops = [name for name, _ in index.terms if name in statement.iterators]
    return loops[0] if len(loops) == 1 else None


def _loop_order_after(kernel: Kernel, statement: Statement, schedule: str) -> list[str] | None:
    try:
        state = ScheduleState(kernel).apply_all(parse_schedule(schedule))
    except ScheduleError:
        return None
    return [d.name for d in state.statements[statement.name].dims]
