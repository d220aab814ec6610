"""What every variant passes before it races: a proof, then the differential cases.

The proof is the step equivalence (`proof.prove`, passed in as `prove`) where the loop is a fold of a step
function, otherwise the bounded check (`bounded`) on every input up to a stated length. A refuted step is `wrong`
whatever else passes. Then at least 10,000 differential
cases run the compiled variant against the Python original. The verdict is one of three: `qualified` (which proof,
how many cases), `wrong` (the input that shows it, as Python literals), or `unproven`, where the cases pass but no
proof applies: such a variant does not race, since the cases alone have missed wrong variants before (a branch
taken only past some index, a table entry no sample reaches).

A counterexample the bounded check finds is run before it is believed: it is `wrong` when the compiled variant and
the original differ on it, and only a lost proof otherwise (the check counts a variant that finishes where the
baseline hands the call to the original as a difference, without knowing what the original does there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from repoos_agent.fsm import ir, proof
from repoos_agent.fsm.bounded import BUDGET_S, COUNTEREXAMPLE, MAX_LENGTH, PROVED, bounded_check
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.differential import Cases, literals, run_differential
from repoos_agent.fsm.native import FsmNative
from repoos_agent.fsm.rewrites.registry import Variant

QUALIFIED, WRONG, UNPROVEN = "qualified", "wrong", "unproven"
MIN_PROVED = 1
"""The shortest length the bounded check must reach for a proof: the empty input alone never enters the loop."""


Prove = Callable[[ir.Function, ir.Function], proof.Proof]
"""`prove(baseline, variant)`, the step check (`proof.prove`): proved, refuted, or not applicable with why."""


@dataclass(frozen=True)
class Qualification:
    """A variant's verdict: `qualified`, `wrong` or `unproven`, with the proof that applied, the differential cases
    that agreed, the input that shows it wrong (Python literals), and the reason."""

    verdict: str
    variant: str
    proof: str | None
    cases: int
    counterexample: str | None
    reason: str

    def describe(self) -> str:
        if self.verdict == WRONG:
            return f"{self.variant}: wrong on {self.counterexample}: {self.reason}"
        return f"{self.variant}: {self.verdict}: {self.reason}"


def qualify(
    original: Callable[..., object],
    baseline: ir.Function,
    variant: Variant,
    samples: list[tuple],
    prove: Prove | None = None,
    cases: Cases | None = None,
    budget_s: float = BUDGET_S,
    max_length: int = MAX_LENGTH,
) -> Qualification:
    """The verdict on `variant` of `baseline` (lowered from `original`): the proof where `prove` applies, else the
    bounded check (within `budget_s`, lengths up to `max_length`), then the differential cases (`cases` shares the
    original's outcomes between the variants of one function; built from `samples` when not given). A variant whose
    widths are not proven cannot be compiled and raises `FsmRefusal` before any check."""
    native = FsmNative(variant.function, original)
    label = variant.label
    cases = cases if cases is not None else Cases(baseline, original, samples)
    step = prove(baseline, variant.function) if prove is not None else None
    if step is not None and step.verdict == proof.REFUTED:
        return _refuted(step, native, cases, label)
    if step is not None and step.verdict == proof.PROVED:
        method, without = f"step equivalence ({step.method}, {step.cases} state and input pairs)", ""
    else:
        method = None
        without = f"the step check does not apply ({step.reason})" if step is not None else "no step check was given"
        bounded = bounded_check(baseline, variant.function, max_length, budget_s)
        if bounded.verdict == COUNTEREXAMPLE and bounded.counterexample is not None:
            problem = difference(outcome(original, bounded.counterexample), outcome(native, bounded.counterexample))
            if problem is not None:
                return Qualification(WRONG, label, None, 0, literals(bounded.counterexample), f"the bounded check: {problem}")
            without += f"; the bounded check's difference on {literals(bounded.counterexample)} does not show when run"
        elif bounded.verdict == PROVED and (bounded.length >= needed_length(variant) or bounded.every_input):
            method = f"bounded check {bounded.describe()}"
        elif bounded.verdict == PROVED:
            without += (
                f"; bounded check {bounded.describe()}, short of the {needed_length(variant)} elements its rewrites' own paths need"
            )
        else:
            without += f"; bounded check {bounded.describe()}"
    checked = run_differential(native, cases)
    if checked.failing is not None:
        return Qualification(
            WRONG, label, method, checked.checked, literals(checked.failing), f"a differential case: {checked.difference}"
        )
    if method is None:
        reason = f"{checked.describe()}, but no proof applies ({without}): it does not race"
        return Qualification(UNPROVEN, label, None, checked.checked, None, reason)
    return Qualification(QUALIFIED, label, method, checked.checked, None, f"{method}; {checked.describe()}")


def needed_length(variant: Variant) -> int:
    """The length a bounded proof must reach to cover a variant's new paths: one full pass of its widest step (an
    unrolled body of n elements, a word of w, a slice of k) and one element past it, where the remainder runs."""
    widths = [value for step in variant.steps for value in step.parameters.values()]
    return max(MIN_PROVED, max(widths, default=0) + 1)


def _refuted(step: proof.Proof, native: FsmNative, cases: Cases, label: str) -> Qualification:
    """A refuted step is wrong: shown on an input of the function where a differential case finds one, else on the
    state and elements where the two steps part."""
    checked = run_differential(native, cases)
    if checked.failing is not None:
        why = f"the step check is refuted, and a differential case shows it: {checked.difference}"
        return Qualification(WRONG, label, None, checked.checked, literals(checked.failing), why)
    example = step.counterexample
    shown = f"state {example.state} and elements {example.inputs}" if example is not None else "(none given)"
    return Qualification(WRONG, label, None, checked.checked, shown, f"the step check is refuted: {step.reason}")
