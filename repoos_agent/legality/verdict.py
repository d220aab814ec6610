"""Verdicts: the one vocabulary every stage, the agent and every interface use for an outcome."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Verdict = Literal[
    "legal",
    "invalid",  # does not parse, or does not apply to this kernel
    "illegal",  # breaks a dependence
    "reassociation",  # reorders a floating-point reduction; legal only when allowed
    "unsupported",
    "verification_failed",  # ISL said legal but Z3 refuted the generated loop nest: an engine bug, never run
    "compile_error",
    "runtime_error",
    "incorrect",
    "timeout",
]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)


@dataclass(frozen=True)
class Violation:
    """One dependence a schedule breaks, in words a person and a model can act on."""

    kind: str  # "flow", "anti", "output", or "parallel" for a loop that carries a dependence
    source: str
    source_line: int
    sink: str
    sink_line: int
    array: str
    loops: tuple[str, ...]
    distance: tuple[str, ...]
    primitive: str | None  # the primitive that broke it
    example: str  # a concrete pair of instances, with parameter values
    description: str
