"""Grammars of the schedule language for one kernel: the only replies a constrained model can write.

A model told "loops i, j, k" still writes `interchange(i, i)`, `tile(x, 32)` or prose; the reference
paper counts 31% of proposals invalid. Constrained decoding makes such replies impossible instead of
wasted turns. The grammar comes from the language's own definition (each primitive's spec in
`schedule.primitives`: its arguments, the numbers worth choosing, the names it is offered with) and
from the kernel through the engine itself: every use of a name it offers was applied by `ScheduleState`
without error, so the names are the kernel's, qualified where the engine needs it, and a tile loop
(`S1.i_t`) appears only after the tile that creates it.

A schedule is walked as a path through scopes, a scope being one structure of the nest: each
statement's loops in order, which statements share them, and where each sits. Primitives that keep
the structure (parallelize, skew, unroll, ...) are steps inside a scope; those that change it (tile,
interchange, distribute, fuse) are moves to another scope, whose names and uses the engine computes
by applying the move. Two paths to one structure are one scope, so what follows a move is exactly
what the engine will accept there, by name. The scopes give every form a backend takes: GBNF for
llama.cpp, a JSON schema for structured outputs, a regex for tool parameters.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations, permutations

from repoos_agent.model.kernel import Kernel
from repoos_agent.schedule.language import MAX_PRIMITIVES, ScheduleError, parse_schedule
from repoos_agent.schedule.primitives import LOOP, NUMBER, PRIMITIVES, SPECS, STATEMENT, Offer, PrimitiveSpec
from repoos_agent.schedule.state import ScheduleState

EXPLORATION = (
    Offer.STATEMENT_PAIRS,
    Offer.PRODUCTS,
    Offer.ARRAY_SUMS,
    Offer.TILE_WINDOWS,
    Offer.LOOP_PAIRS,
    Offer.FUSIONS,
    Offer.ORDERED_LOOP_PAIRS,
    Offer.LOOPS,
    Offer.STATEMENT_LOOPS,
)
"""The order the exploration spends its scopes in: distributions, then tiles (larger first), interchanges and
fusions, before the primitives that keep the structure; within one kind, the registry's order."""


@dataclass(frozen=True)
class Use:
    """One primitive with its names filled in, e.g. `interchange` over (`i`, `k`). `fixed` numbers are part of
    the use (fuse's depth); the others are chosen from the spec's `choices` when the reply is written."""

    primitive: str
    names: tuple[str, ...]  # loops, then statements, in the signature's order
    fixed: tuple[int, ...] = ()

    @property
    def free_numbers(self) -> int:
        return PRIMITIVES[self.primitive].signature(len(self.names)).count(NUMBER) - len(self.fixed)

    def text(self, numbers: tuple[int, ...] = ()) -> str:
        return f"{self.primitive}({', '.join([*self.names, *map(str, self.fixed), *map(str, numbers)])})"

    def probe(self) -> str:
        return self.text((PRIMITIVES[self.primitive].probe,) * self.free_numbers)


@dataclass(frozen=True)
class Scope:
    """The loop names valid at one point of a schedule, what can be done there, and where moves lead."""

    loops: tuple[str, ...]
    steps: tuple[Use, ...]
    moves: tuple[tuple[Use, int], ...]  # (use, index of the scope it leads to)


@dataclass(frozen=True)
class KernelGrammar:
    """Every schedule a constrained model may propose for one kernel; scope 0 is the kernel as written."""

    kernel: str
    statements: tuple[str, ...]
    scopes: tuple[Scope, ...]
    max_primitives: int

    @property
    def loops(self) -> tuple[str, ...]:
        """Every loop name of every scope, and every spelling a use offers (`shift(S1.k, 1)` qualifies a unique `k`):
        what a form without scopes (JSON, a regex) can offer."""
        spelled = {name for use in self.uses() for name in use.names if name not in self.statements}
        return tuple(sorted({loop for scope in self.scopes for loop in scope.loops} | spelled))

    def uses(self) -> tuple[Use, ...]:
        return tuple(dict.fromkeys([u for s in self.scopes for u in (*s.steps, *(m for m, _ in s.moves))]))

    def gbnf(self, blocks: int) -> str:
        """A llama.cpp grammar of replies made of 1 to `blocks` `<schedule>...</schedule>` blocks."""
        rules = {"root": 'block ("\\n" block)' + (f"{{0,{blocks - 1}}}" if blocks > 1 else "{0,0}")}
        rules["block"] = f'"<schedule>" s0-{self.max_primitives} "</schedule>"'
        for primitive in sorted({u.primitive for u in self.uses() if u.free_numbers}):
            rules[f"n-{primitive}"] = " | ".join(f'"{n}"' for n in PRIMITIVES[primitive].choices)
        for k, scope in enumerate(self.scopes):
            if scope.steps:
                rules[f"u{k}"] = " | ".join(_gbnf_use(use) for use in scope.steps)
            for target in dict.fromkeys(j for _, j in scope.moves):
                rules[f"m{k}-{target}"] = " | ".join(_gbnf_use(use) for use, j in scope.moves if j == target)
        pending, done = deque([(0, self.max_primitives)]), set()
        while pending:
            k, left = pending.popleft()
            if (k, left) in done:
                continue
            done.add((k, left))
            scope = self.scopes[k]
            options = []
            for head, target in ([(f"u{k}", k)] if scope.steps else []) + [
                (f"m{k}-{j}", j) for j in dict.fromkeys(j for _, j in scope.moves)
            ]:
                if left > 1:
                    options.append(f'{head} ("; " s{target}-{left - 1})?')
                    pending.append((target, left - 1))
                else:
                    options.append(head)
            rules[f"s{k}-{left}"] = " | ".join(options)
        return "\n".join(f"{name} ::= {body}" for name, body in rules.items()) + "\n"

    def json_schema(self, blocks: int) -> dict:
        """A JSON schema of `{"schedules": [[primitive, ...], ...]}`, a primitive being `{"primitive": "tile",
        "names": "i, j", "numbers": [32, 32]}` with `names` one of the uses the scopes offer: what OpenAI's
        structured outputs, llama.cpp's `json_object` and Gemini's `response_schema` take. Without scopes it cannot
        say that `i_t` needs a tile first; it can say which names go together."""
        groups: dict[tuple[str, int], list[str]] = {}
        for use in self.uses():
            groups.setdefault((use.primitive, use.free_numbers), []).append(", ".join([*use.names, *map(str, use.fixed)]))
        variants = []
        for (primitive, free), names in sorted(groups.items()):
            properties: dict = {
                "primitive": {"type": "string", "enum": [primitive]},
                "names": {"type": "string", "enum": list(dict.fromkeys(names))},
            }
            if free:
                numbers = {"type": "integer", "enum": list(PRIMITIVES[primitive].choices)}
                properties["numbers"] = {"type": "array", "items": numbers, "minItems": free, "maxItems": free}
            variants.append(
                {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
            )
        schedule = {"type": "array", "items": {"anyOf": variants}, "minItems": 1, "maxItems": self.max_primitives}
        return {
            "type": "object",
            "properties": {"schedules": {"type": "array", "items": schedule, "minItems": 1, "maxItems": blocks}},
            "required": ["schedules"],
            "additionalProperties": False,
        }

    def pattern(self) -> str:
        """A regex of one schedule (or none) over every name of every scope: what a tool's string parameter takes."""
        alternatives = []
        loop = "(?:" + "|".join(re.escape(name) for name in self.loops) + ")"
        statement = "(?:" + "|".join(self.statements) + ")"
        for primitive, band in sorted({(u.primitive, len(u.names) if PRIMITIVES[u.primitive].band else 0) for u in self.uses()}):
            kinds = PRIMITIVES[primitive].signature(band)
            parts = [{LOOP: loop, STATEMENT: statement, NUMBER: "-?[0-9]+"}[kind] for kind in kinds]
            alternatives.append(f"{primitive}\\(" + ", ".join(parts) + "\\)")
        one = "(?:" + "|".join(alternatives) + ")"
        return f"^(?:{one}(?:; {one}){{0,{self.max_primitives - 1}}})?$"  # empty: the kernel as written


def _gbnf_use(use: Use) -> str:
    head = f"{use.primitive}({', '.join([*use.names, *map(str, use.fixed)])}"
    if not use.free_numbers:
        return f'"{head})"'
    numbers = ' ", " '.join([f"n-{use.primitive}"] * use.free_numbers)
    return f'"{head}{", " if use.names or use.fixed else ""}" {numbers} ")"'


def schedules_from_json(text: str) -> list[str]:
    """The schedule texts of a structured reply (`json_schema`'s shape); `ScheduleError` says what is wrong with it."""
    try:
        reply = json.loads(text)
    except json.JSONDecodeError as error:
        raise ScheduleError(f"the reply is not JSON ({error.msg} at character {error.pos})") from None
    schedules = reply.get("schedules") if isinstance(reply, dict) else None
    if not isinstance(schedules, list):
        raise ScheduleError('the reply has no "schedules" list')
    texts = []
    for schedule in schedules:
        if not isinstance(schedule, list):
            raise ScheduleError("each schedule is a list of primitives")
        primitives = []
        for item in schedule:
            if not isinstance(item, dict) or not isinstance(item.get("primitive"), str):
                raise ScheduleError('each primitive is an object with a "primitive" name')
            names, numbers = item.get("names", ""), item.get("numbers") or []
            if not isinstance(names, str) or not isinstance(numbers, list):
                raise ScheduleError('"names" is a string and "numbers" a list')
            args = [names.strip(), *(str(n) for n in numbers)] if names.strip() else [str(n) for n in numbers]
            primitives.append(f"{item['primitive']}({', '.join(args)})")
        texts.append("; ".join(primitives))
    return texts


@lru_cache(maxsize=64)
def kernel_grammar(
    kernel: Kernel,
    prefix: tuple[str, ...] = (),
    max_primitives: int = 8,
    max_scopes: int = 40,
    max_moves: int = 3,
    keep: Callable[[str], bool] | None = None,
) -> KernelGrammar:
    """The schedules of up to `max_primitives` primitives that may follow the primitives `prefix` (already applied:
    one primitive a turn extends the best schedule so far). Scopes are explored breadth-first, at most `max_moves`
    structure-changing primitives deep and `max_scopes` in all, so the grammar stays small enough to decode with.
    `keep`, given the whole schedule a use would make, may refuse it: the agent passes its legality proof for
    one-primitive turns, where every use is a complete schedule."""
    start = _applied(kernel, prefix)
    if start is None:
        raise ScheduleError(f"`{'; '.join(prefix)}` does not apply to {kernel.name}")
    keys: dict[tuple, int] = {_structure(start): 0}
    states: list[ScheduleState] = [start]
    paths: list[tuple[str, ...]] = [prefix]
    built: dict[int, Scope] = {}
    pending = deque([(0, 0)])
    while pending:
        index, moves_made = pending.popleft()
        state = states[index]
        if moves_made >= max_primitives:  # reached only by a schedule's last primitive: nothing follows here
            built[index] = Scope(tuple(state.loop_names()), (), ())
            continue
        here = _structure(state)
        steps: list[Use] = []
        moves: list[tuple[Use, int]] = []
        for use in _uses(state):
            after = _tried(state, use.probe())
            if after is None or (keep is not None and not keep("; ".join((*paths[index], use.probe())))):
                continue
            key = _structure(after)
            if not PRIMITIVES[use.primitive].moves or key == here:
                steps.append(use)
                continue
            if key not in keys:
                if moves_made + 1 > min(max_moves, max_primitives) or len(keys) >= max_scopes:
                    continue
                keys[key] = len(states)
                states.append(after)
                paths.append((*paths[index], use.probe()))
                pending.append((keys[key], moves_made + 1))
            moves.append((use, keys[key]))
        built[index] = Scope(tuple(state.loop_names()), tuple(steps), tuple(moves))
    statements = tuple(statement.name for statement in kernel.statements)
    scopes = tuple(built[k] for k in range(len(states)))
    return KernelGrammar(kernel.name, statements, scopes, min(max_primitives, MAX_PRIMITIVES - len(prefix)))


def _structure(state: ScheduleState) -> tuple:
    """What decides the names every later primitive sees: each statement's loops in order (by name, and by which
    statements share them) and its place in each body. Two schedules with equal structures are one scope."""
    canonical: dict[str, int] = {}
    return tuple(
        (
            name,
            tuple((canonical.setdefault(d.id, len(canonical)), d.name) for d in schedule.dims),
            tuple(schedule.positions),
        )
        for name, schedule in state.statements.items()
    )


def _applied(kernel: Kernel, texts: tuple[str, ...]) -> ScheduleState | None:
    """The state after `texts` from the kernel as written, or None where the engine refuses one of them."""
    try:
        return ScheduleState(kernel).apply_all(parse_schedule("; ".join(texts)))
    except ScheduleError:
        return None


def _tried(state: ScheduleState, text: str) -> ScheduleState | None:
    """`state` with one more primitive, or None where the engine refuses it (lowering included for a primitive
    whose check runs there, `promote`)."""
    twin = state.copy()
    try:
        (primitive,) = parse_schedule(text).primitives
        twin.apply(primitive)
        if PRIMITIVES[primitive.name].lowered_to_try:
            twin.lower()
    except ScheduleError:
        return None
    return twin


def _uses(state: ScheduleState) -> list[Use]:
    """Every candidate use at this state, structure-changing ones first in the order the exploration should
    spend its scopes on (`EXPLORATION`)."""
    loops, statements = state.loop_names(), list(state.statements)
    return [
        Use(spec.name, names, fixed)
        for offer in EXPLORATION
        for spec in SPECS
        if spec.offer is offer
        for names, fixed in _offered(state, spec, loops, statements)
    ]


def _offered(
    state: ScheduleState, spec: PrimitiveSpec, loops: list[str], statements: list[str]
) -> list[tuple[tuple[str, ...], tuple[int, ...]]]:
    """The names (and fixed numbers) `spec`'s kind of offer gives at this state, whose loop and statement names
    are `loops` and `statements`."""
    kernel = state.kernel
    match spec.offer:
        case Offer.STATEMENT_PAIRS:
            return [(pair, ()) for pair in permutations(statements, 2)]
        case Offer.PRODUCTS:
            return [((s,), ()) for s in statements if kernel.statement(s).product]
        case Offer.ARRAY_SUMS:
            return [((s,), ()) for s in statements if kernel.statement(s).is_array_sum]
        case Offer.TILE_WINDOWS:
            return [(window, ()) for window in _tile_windows(state, spec.band)]
        case Offer.LOOP_PAIRS:
            return [(pair, ()) for pair in combinations(loops, 2)]
        case Offer.FUSIONS:
            return [
                ((first, second), (depth,))
                for first, second in permutations(statements, 2)
                for depth in range(1, min(len(state.statements[first].dims), len(state.statements[second].dims)) + 1)
            ]
        case Offer.ORDERED_LOOP_PAIRS:
            return [(pair, ()) for pair in permutations(loops, 2)]
        case Offer.LOOPS:
            return [((loop,), ()) for loop in loops]
        case Offer.STATEMENT_LOOPS:
            return [((f"{s}.{d.name}",), ()) for s, schedule in state.statements.items() for d in schedule.dims]


def _tile_windows(state: ScheduleState, band: int) -> list[tuple[str, ...]]:
    """Each run of 1 to `band` adjacent loops of a statement, larger first, named as the engine needs."""
    by_name: dict[str, set[str]] = {}
    for schedule in state.statements.values():
        for dim in schedule.dims:
            by_name.setdefault(dim.name, set()).add(dim.id)
    windows: dict[tuple[str, ...], tuple[str, ...]] = {}
    for statement, schedule in state.statements.items():
        refs = [d.name if len(by_name[d.name]) == 1 else f"{statement}.{d.name}" for d in schedule.dims]
        # One level of tiles: a loop that is a tile loop or has one already is not tiled again.
        tile_loops = [d.id for d in schedule.dims if "/tile" in d.id]
        tiled = {*tile_loops, *(tile.split("/tile")[0] for tile in tile_loops)}
        for length in range(band, 0, -1):
            for start in range(len(refs) - length + 1):
                ids = tuple(d.id for d in schedule.dims[start : start + length])
                if not tiled & set(ids):
                    windows.setdefault(ids, tuple(refs[start : start + length]))
    return list(windows.values())
