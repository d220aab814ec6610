"""The offline proposer of the fsm track: what a performance engineer would try, taken from the applicable menu.

First each applicable rewrite alone at each of its parameter choices: one of them is usually the whole win (a byte
table for a bitwise CRC), and alone each is raced on its own merit. Then the pairs known to compose: a table or a
fast path first changes what the loop does per byte, and unrolling, branch removal or a jump table then shaves the
dispatch that remains. A pair starts from the first rewrite at its first choice (the singles race its other
choices: slicing by 4, 8 and 16 each unrolled three ways filled the race with near twins), and is proposed only
where both steps apply in that order; the list is deduplicated and bounded, so the race stays short.
"""

from __future__ import annotations

from repoos_agent.fsm import ir
from repoos_agent.fsm.proposals import applicable_steps
from repoos_agent.fsm.rewrites.registry import NotApplicable, Step, apply_steps

PROMISING_PAIRS = (
    ("slicing", "unroll"),
    ("byte-table", "unroll"),
    ("ascii-fast-path", "jump-table"),
    ("ascii-fast-path", "branchless"),
    ("unswitch", "branchless"),
    ("unswitch", "unroll"),
    ("dfa", "unroll"),
    ("jump-table", "unroll"),
)
"""(first, then) rewrite names, best first: the first reshapes the loop's work, the second trims what is left."""

LIMIT = 24
"""Variants proposed at most: singles first, then pairs."""


def heuristic_proposals(function: ir.Function, limit: int = LIMIT) -> list[tuple[Step, ...]]:
    """The variants to race for `function`, each applicable as written, without repeats, at most `limit`."""
    singles = applicable_steps(function)
    proposals: list[tuple[Step, ...]] = [(step,) for step in singles]
    for first_name, then_name in PROMISING_PAIRS:
        for first in [step for step in singles if step.name == first_name][:1]:
            for then in (step for step in singles if step.name == then_name):
                try:
                    apply_steps(function, (first, then))
                except NotApplicable:
                    continue
                proposals.append((first, then))
    unique: dict[str, tuple[Step, ...]] = {}  # by spelling, first kept: a step's parameters are a dict, not hashable
    for steps in proposals:
        unique.setdefault(" then ".join(map(str, steps)), steps)
    return list(unique.values())[:limit]
