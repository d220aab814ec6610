"""The language a proposer writes fsm variants in: one variant a line, its rewrites joined by ` then `.

    slicing(k=8)
    unroll(n=4) then branchless

A proposer (the heuristic, a local or a hosted model) only names rewrites from the registry and picks their
parameters among the registered choices; the engine applies them. A line that does not parse, names no rewrite,
or picks a value the rewrite does not offer is refused with the token and the reason, and becomes feedback, as
does a rewrite that does not apply to the function (`NotApplicable`). Nothing here raises past `read_proposals`.

A parameter a proposal leaves out takes the rewrite's default (its first choice), written out in the step, so one
variant has one spelling and two proposals of it are raced once.

The menu a proposer is shown comes from `menu(function)`: what applies, with its usage, and what does not, with
the reason; `choices` lists every applicable step as a proposal spells it, and `gbnf`/`json_schema` turn that list
into the grammars a constrained model decodes with, so it cannot write a step the function has no place for.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass

from repoos_agent.errors import RepoosError
from repoos_agent.fsm import ir
from repoos_agent.fsm.rewrites.registry import REWRITES, NotApplicable, Rewrite, Step, apply_steps, menu

JOIN = " then "
MAX_STEPS = 4
"""Rewrites in one variant: more is a proposer repeating itself, not a variant worth building."""

_STEP = re.compile(r"\s*(?P<name>[A-Za-z][A-Za-z0-9_-]*)\s*(?:\((?P<arguments>[^()]*)\))?\s*$")
_ARGUMENT = re.compile(r"\s*(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?P<value>-?[0-9]+)\s*$")


class ProposalError(RepoosError):
    """A proposal the language refuses: the column (1-based) of the offending token, the token and why."""

    def __init__(self, column: int, token: str, reason: str) -> None:
        super().__init__(f"column {column}: `{token}`: {reason}")
        self.column = column
        self.token = token
        self.reason = reason


@dataclass(frozen=True)
class Proposal:
    """One line a proposer wrote: its steps when it parsed, else the feedback that says why not."""

    text: str
    steps: tuple[Step, ...] | None
    feedback: str | None = None

    @property
    def label(self) -> str:
        return JOIN.join(map(str, self.steps)) if self.steps is not None else self.text


def parse_proposal(text: str) -> tuple[Step, ...]:
    """The steps of one line, each parameter checked against the registry's choices (or a located `ProposalError`)."""
    if not text.strip():
        raise ProposalError(1, text, "an empty proposal; write rewrites such as `slicing(k=8)`, joined by ` then `")
    steps: list[Step] = []
    column = 1
    for part in text.split(JOIN):
        steps.append(_parse_step(part, column))
        column += len(part) + len(JOIN)
    if len(steps) > MAX_STEPS:
        raise ProposalError(1, text, f"{len(steps)} rewrites in one variant; at most {MAX_STEPS}")
    return tuple(steps)


def _parse_step(part: str, column: int) -> Step:
    at = column + len(part) - len(part.lstrip())
    found = _STEP.match(part)
    if found is None:
        raise ProposalError(at, part.strip(), "not a rewrite; write `name` or `name(key=value, ...)`")
    name = found["name"]
    known = REWRITES.get(name)
    if known is None:
        raise ProposalError(at, name, f"no such rewrite; the rewrites are {', '.join(sorted(REWRITES)) or 'none yet'}")
    given: dict[str, int] = {}
    arguments = found["arguments"]
    if arguments is not None and arguments.strip():
        offset = at + part.strip().index("(") + 1
        for argument in arguments.split(","):
            argument_at = offset + len(argument) - len(argument.lstrip())
            key, value = _parse_argument(known, argument, argument_at)
            if key in given:
                raise ProposalError(argument_at, key, f"`{name}` is given `{key}` twice")
            given[key] = value
            offset += len(argument) + 1
    return Step(name, {key: given.get(key, choices[0]) for key, choices in known.parameters.items()})


def _parse_argument(known: Rewrite, argument: str, at: int) -> tuple[str, int]:
    found = _ARGUMENT.match(argument)
    if found is None:
        raise ProposalError(at, argument.strip(), f"not a parameter; `{known.name}` is written {known.usage()}")
    key, value = found["key"], int(found["value"])
    if key not in known.parameters:
        takes = f"takes {', '.join(known.parameters)}" if known.parameters else "takes no parameters"
        raise ProposalError(at, key, f"`{known.name}` {takes}")
    if value not in known.parameters[key]:
        offered = ", ".join(map(str, known.parameters[key]))
        raise ProposalError(at, argument.strip(), f"`{known.name}`'s `{key}` is one of {offered}")
    return key, value


def read_proposals(text: str, function: ir.Function) -> list[Proposal]:
    """Each non-blank line of `text` as a proposal for `function`: parsed and applied (the variant itself is built
    again where it is raced), or with the feedback a proposer is shown: the located parse error, or why a rewrite
    does not apply. Repeats of one variant are kept once."""
    proposals: list[Proposal] = []
    seen: set[str] = set()  # by spelling: a step's parameters are a dict
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            steps = parse_proposal(line.strip())
            apply_steps(function, steps)
        except (ProposalError, NotApplicable) as refused:
            proposals.append(Proposal(line.strip(), None, f"`{line.strip()}`: {refused}"))
            continue
        spelled = JOIN.join(map(str, steps))
        if spelled not in seen:
            seen.add(spelled)
            proposals.append(Proposal(line.strip(), steps))
    return proposals


def applicable_steps(function: ir.Function) -> list[Step]:
    """Every single step that applies to `function`: each applicable rewrite at each combination of its choices
    (a combination the rewrite refuses there is left out)."""
    steps = []
    for known, reason in menu(function):
        if reason is not None:
            continue
        keys = list(known.parameters)
        for values in itertools.product(*(known.parameters[key] for key in keys)):
            step = Step(known.name, dict(zip(keys, values, strict=True)))
            try:
                apply_steps(function, (step,))
            except NotApplicable:
                continue
            steps.append(step)
    return steps


def choices(function: ir.Function) -> list[str]:
    """The applicable steps as a proposal spells them: the only words a constrained model may write."""
    return [str(step) for step in applicable_steps(function)]


def menu_text(function: ir.Function) -> str:
    """The menu for a prompt or an MCP description: what applies, with its usage and doc, then what does not and why."""
    offered = menu(function)
    applies = [f"- {known.usage()}: {known.doc}" for known, reason in offered if reason is None]
    refused = [f"- {known.name}: {reason}" for known, reason in offered if reason is not None]
    lines = [f"Rewrites of `{function.name}`: one variant a line, rewrites joined by ` then ` (at most {MAX_STEPS})."]
    lines += ["Applies here:", *(applies or ["- none: the baseline is the only contender"])]
    if refused:
        lines += ["Does not apply here:", *refused]
    return "\n".join(lines)


def gbnf(function: ir.Function) -> str:
    """A GBNF grammar (llama.cpp) whose sentences are the proposals built from `choices(function)`, one a line."""
    words = choices(function)
    if not words:
        return 'root ::= ""\n'
    step = " | ".join(json.dumps(word) for word in words)
    more = " ".join(['(" then " step)?'] * (MAX_STEPS - 1))
    return f'root ::= variant ("\\n" variant)*\nvariant ::= step {more}\nstep ::= {step}\n'


def json_schema(function: ir.Function) -> dict[str, object]:
    """A JSON schema for structured outputs: a list of variants, each a list of steps from `choices(function)`."""
    step = {"type": "string", "enum": choices(function)}
    variant = {"type": "array", "items": step, "minItems": 1, "maxItems": MAX_STEPS}
    return {"type": "object", "properties": {"variants": {"type": "array", "items": variant}}, "required": ["variants"]}
