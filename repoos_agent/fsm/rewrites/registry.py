"""One place per rewrite of the fsm track: `@rewrite("byte-table", "...", k=(1, 4, 8))` files a function from IR to IR
with its parameters' choices, in the manner of the loop track's schedule primitives.

A rewrite takes a lowered function and its parameters and returns a new function that must compute the same thing;
it never decides that it does. The proof (`fsm.proof`) and the differential cases decide, and a variant that
fails either never races. A rewrite whose pattern is absent raises `NotApplicable` with the reason, which is what
`menu` shows a model, so a constrained model is offered only the rewrites the function has a place for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from repoos_agent.errors import RepoosError
from repoos_agent.fsm import ir


class NotApplicable(RepoosError):
    """A rewrite whose pattern the function lacks, or a parameter it cannot take there: `name: reason`."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


Apply = Callable[..., ir.Function]
"""`apply(function, **parameters)`: the rewritten function, or `NotApplicable`."""


@dataclass(frozen=True)
class Rewrite:
    """A registered rewrite: its name as proposals spell it, a one-line doc, each parameter's choices (the first is
    the default), and the function that applies it."""

    name: str
    doc: str
    parameters: Mapping[str, tuple[int, ...]]
    apply: Apply

    def usage(self) -> str:
        """How a proposal spells it: `slicing(k=8)`, or the bare name without parameters."""
        if not self.parameters:
            return self.name
        return f"{self.name}(" + ", ".join(f"{key}={'|'.join(map(str, choices))}" for key, choices in self.parameters.items()) + ")"


REWRITES: dict[str, Rewrite] = {}


def rewrite(name: str, doc: str, **parameters: tuple[int, ...]) -> Callable[[Apply], Apply]:
    """Files the decorated function under `name`; a second rewrite of the same name is a programming error."""

    def register(apply: Apply) -> Apply:
        if name in REWRITES:
            raise ValueError(f"the rewrite `{name}` is registered twice")
        REWRITES[name] = Rewrite(name, doc, dict(parameters), apply)
        return apply

    return register


@dataclass(frozen=True)
class Step:
    """One rewrite with its parameters, as a proposal names it."""

    name: str
    parameters: Mapping[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        if not self.parameters:
            return self.name
        return f"{self.name}(" + ", ".join(f"{key}={value}" for key, value in self.parameters.items()) + ")"


@dataclass(frozen=True)
class Variant:
    """A function after a sequence of rewrites: the baseline is the empty sequence."""

    steps: tuple[Step, ...]
    function: ir.Function

    @property
    def label(self) -> str:
        return " then ".join(map(str, self.steps)) or "baseline"


def apply_steps(function: ir.Function, steps: tuple[Step, ...]) -> Variant:
    """`function` after `steps` in order; the first that does not apply raises its `NotApplicable`."""
    current = function
    for step in steps:
        known = REWRITES.get(step.name)
        if known is None:
            raise NotApplicable(step.name, f"no such rewrite; the rewrites are {', '.join(sorted(REWRITES))}")
        for key, value in step.parameters.items():
            if key not in known.parameters:
                raise NotApplicable(step.name, f"takes no parameter `{key}`")
            if value not in known.parameters[key]:
                raise NotApplicable(step.name, f"`{key}` is one of {', '.join(map(str, known.parameters[key]))}, not {value}")
        current = known.apply(current, **step.parameters)
    return Variant(steps, current)


def menu(function: ir.Function) -> list[tuple[Rewrite, str | None]]:
    """Every rewrite, with why it does not apply to `function` at its default parameters (None where it does)."""
    offered = []
    for known in REWRITES.values():
        try:
            known.apply(function)
        except NotApplicable as refused:
            offered.append((known, refused.reason))
        else:
            offered.append((known, None))
    return offered
