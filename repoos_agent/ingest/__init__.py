"""Ingest: Python source in, one report per function and a `Kernel` for each affine one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import islpy as isl

from repoos_agent.errors import ArgumentSpecError, NotAnalyzableError, SourceError
from repoos_agent.ingest.arrays import ArrayLowering
from repoos_agent.ingest.names import ModuleNames
from repoos_agent.ingest.parse import functions, parse_source, read_source, text
from repoos_agent.ingest.ranks import CallShapes
from repoos_agent.ingest.scop import Diagnostic, extract_kernel, function_arguments
from repoos_agent.model.kernel import Kernel
from repoos_agent.tracks import claimed, claimed_refused

__all__ = ["Diagnostic", "FunctionReport", "ingest_file", "ingest_source", "load_kernel"]


@dataclass(frozen=True)
class FunctionReport:
    """What ingest learnt about one function."""

    name: str
    line: int
    track: str  # "affine", "tabular", "fsm" or "other"
    reason: str
    kernel: Kernel | None
    diagnostics: tuple[Diagnostic, ...]

    @property
    def analyzable(self) -> bool:
        return self.kernel is not None

    @property
    def loops(self) -> tuple[str, ...]:
        if self.kernel is None:
            return ()
        seen = dict.fromkeys(loop.name for s in self.kernel.statements for loop in s.loops)
        return tuple(seen)


def ingest_source(
    source: str,
    path: str,
    ranks: Mapping[str, Mapping[str, int]] | None = None,
    given: Mapping[str, int] | None = None,
    only: str | None = None,
) -> list[FunctionReport]:
    """Every top-level function in `source`, classified and, where affine, modelled; with `only`, that one alone
    (its report is the same: the others are still its helpers, but a module of many functions is not modelled
    whole to load one).

    `ranks` maps a function's name to its array arguments' ranks, when a call's values are known; `given` are
    ranks by parameter name for every function that has such a parameter (`repoos ingest FILE --arg x=f64[n]`).
    Either may be `CallShapes`, which also say which axes are 1 at the call."""
    tree = parse_source(source, path)
    reports = []
    module_functions = {text(f.child_by_field_name("name")): f for f in functions(tree)}
    names = ModuleNames().with_imports(tree.root_node.named_children).with_constants(tree.root_node.named_children)
    _check_given(given or {}, module_functions.values(), path)
    for function in functions(tree):
        name = text(function.child_by_field_name("name"))
        if only is not None and name != only:
            continue
        helpers = {other: node for other, node in module_functions.items() if other != name}
        line = function.start_point[0] + 1
        claim = claimed(function, path)
        if claim is not None:
            reports.append(FunctionReport(name, line, *claim, None, ()))
            continue
        front_end = partial(ArrayLowering, helpers=helpers)
        parameters = set(function_arguments(function)[0])
        known = CallShapes.of(given or {}).only(parameters).over((ranks or {}).get(name) or {})
        kernel, diagnostics = extract_kernel(function, source, path, isl.Context(), known, front_end, names)
        if kernel is not None:
            reason = f"{len(kernel.statements)} statements in an affine loop nest of depth {kernel.depth}"
            reports.append(FunctionReport(name, line, "affine", reason, kernel, ()))
            continue
        refused = claimed_refused(function, path)
        track, reason = refused if refused else ("other", diagnostics[0].message)
        reports.append(FunctionReport(name, line, track, reason, None, tuple(diagnostics)))
    return reports


def _check_given(given: Mapping[str, int], defined, path: str) -> None:
    """Ranks given for a name no function of the file takes are a mistake (a misspelt input), not nothing."""
    parameters = {name for function in defined for name in function_arguments(function)[0]}
    unknown = sorted(set(given) - parameters)
    if unknown:
        names = ", ".join(f"`{name}`" for name in unknown)
        raise ArgumentSpecError(f"{path}: no function has a parameter named {names}, which the inputs give a shape for")


def ingest_file(
    path: str | Path,
    ranks: Mapping[str, Mapping[str, int]] | None = None,
    given: Mapping[str, int] | None = None,
    only: str | None = None,
) -> list[FunctionReport]:
    return ingest_source(read_source(path), str(path), ranks, given, only)


def load_kernel(path: str | Path, function: str, ranks: Mapping[str, int] | None = None) -> Kernel:
    """The model of `function` in `path`, with its array arguments' `ranks` (`CallShapes` when a call's values are
    known: the axes that are 1 there are modelled as 1); raises with the diagnostics when it has none."""
    for report in ingest_file(path, {function: ranks} if ranks else None, only=function):
        if report.name == function:
            if report.kernel is None:
                first = report.diagnostics[0] if report.diagnostics else None
                where = f"{path}:{first.line}:{first.column}: " if first else f"{path}:{report.line}: "
                raise NotAnalyzableError(f"{where}function `{function}` cannot be modelled: {report.reason}", report.track)
            return report.kernel
    raise SourceError(str(path), f"no top-level function named `{function}`")
