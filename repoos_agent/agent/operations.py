"""The engine's operations, each defined once: a typed function, a docstring for the model that calls it, a dataclass result.

Our agent's `--mode tools` binds them to its target (`repoos_agent.agent.tools`), the MCP
server serves them to outside assistants with `target` as an argument
(`repoos_agent.mcp.server`); both derive their argument schemas from these signatures,
so a parameter or a description changes in one place. A user's mistake (an unknown
kernel, a schedule that does not parse or does not apply) raises a `RepoosError` whose
message says what to fix; each caller turns it into its own kind of error result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from repoos_agent.backends.build import file_digest
from repoos_agent.catalog import SIZE_CLASSES, bundled_kernels
from repoos_agent.codegen.c import generate_c
from repoos_agent.codegen.mlir import generate_mlir
from repoos_agent.codegen.passes import transformed_nest
from repoos_agent.errors import RepoosError
from repoos_agent.evaluate import Evaluation, evaluate_schedule
from repoos_agent.ingest import Diagnostic, FunctionReport
from repoos_agent.inputs import ArgSpec
from repoos_agent.legality import Analysis, LegalityVerdict, Violation, analyze, prove_legal
from repoos_agent.model.kernel import isl_lock
from repoos_agent.model.signature import Signature
from repoos_agent.schedule import ScheduleError
from repoos_agent.schedule.primitives import catalog_inline
from repoos_agent.store.recording import load_winner, save_winner
from repoos_agent.store.records import VerifiedKernel
from repoos_agent.target import Target, ingest_path

CODE_LIMIT = 6000
"""Characters of generated code a tool returns: enough to read the loops, not to flood a context."""

ScheduleText = Annotated[
    str,
    Field(
        description="A schedule: primitives separated by `;`, e.g. 'interchange(j, k); parallelize(i)'. Primitives: "
        + catalog_inline()
        + ". Loops are named by their Python loop variable; qualify a shared name with a statement label (`S1.j`, see "
        "analyze). The empty string is the source order."
    ),
]
"""A schedule argument; its catalog of primitives comes from the registry (`schedule.primitives`)."""
SizeClass = Annotated[
    Literal["MINI", "SMALL", "MEDIUM", "LARGE", "EXTRALARGE"] | None,
    Field(description="Problem size of a bundled kernel (default SMALL); leave it out for a user kernel."),
]
PythonFile = Annotated[str, Field(description="A Python file, absolute or relative to the working directory.")]
Compiler = Annotated[
    Literal["c", "mlir"], Field(description="Backend that builds the candidate; the baseline is always the C build.")
]


@dataclass(frozen=True)
class BundledKernelSummary:
    name: str
    category: str
    sizes: dict[str, dict[str, int]]  # size class -> parameter values


@dataclass(frozen=True)
class KernelCatalog:
    kernels: tuple[BundledKernelSummary, ...]
    size_classes: tuple[str, ...]


@dataclass(frozen=True)
class StatementLabel:
    label: str
    line: int
    text: str
    loops: tuple[str, ...]


@dataclass(frozen=True)
class IngestedFunction:
    """One function of a file: its track, whether the engine can model it, and the target text that names it."""

    name: str
    line: int
    target: str  # `path.py:function`, what the target-taking tools accept
    track: str  # "affine", "tabular", "fsm" or "other"
    reason: str
    analyzable: bool
    statements: int
    loops: tuple[str, ...]
    parameters: tuple[str, ...]
    statement_labels: tuple[StatementLabel, ...]
    diagnostics: tuple[Diagnostic, ...]


@dataclass(frozen=True)
class IngestReport:
    path: str
    functions: tuple[IngestedFunction, ...]


@dataclass(frozen=True)
class LegalityReport:
    """The proof's outcome: no build, no run."""

    schedule: str  # canonical text ("" is the source order)
    verdict: str  # "legal", "illegal" or "reassociation"
    legal: bool
    feedback: str  # for "illegal": the broken dependence, the primitive that broke it, an example and a legal alternative
    violations: tuple[Violation, ...]
    parallel_loops: tuple[str, ...]
    suggestion: str | None
    milliseconds: float


@dataclass(frozen=True)
class EvaluationReport:
    """A schedule proved, verified with Z3, built, checked against the baseline's outputs and timed."""

    target: str
    size: str | None
    schedule: str
    verdict: str  # legal, illegal, reassociation, verification_failed, compile_error, runtime_error, incorrect, timeout
    correct: bool | None  # outputs equal to the baseline's within tolerance (None: not run)
    speedup: float | None  # baseline time / candidate time, both medians of interleaved timed runs
    spread: float | None  # the candidate's relative spread of timed runs: a lead smaller than it is noise
    baseline_ms: float | None
    candidate_ms: float | None
    verified: str  # "true", "false" or "unknown": Z3 on the generated loop nest
    feedback: str
    violations: tuple[Violation, ...]


@dataclass(frozen=True)
class SwapReport:
    """The contract now in the graph store: the function's calls run this library."""

    function: str  # the function's identity in the store (`/abs/path.py:name`)
    schedule: str  # "" is the source order
    speedup: float  # measured over the native build of the source order
    spread: float
    verified: str  # Z3 on the generated loop nest: "true", or "n/a" for the source order
    library: str
    usage: str
    incumbent: str  # what became of the kernel stored before: kept, replaced by a slower one, or "" (none faster)


@dataclass(frozen=True)
class GeneratedCode:
    schedule: str
    language: str
    code: str
    truncated: bool  # the code was cut at CODE_LIMIT characters


def list_kernels() -> KernelCatalog:
    """The bundled kernels, which every target-taking tool accepts by name: PolyBench's (`gemm`, `jacobi-2d`)
    and the NumPy programs (`numpy:softmax`), with their categories and size classes."""
    kernels = tuple(BundledKernelSummary(k.name, k.category, k.sizes) for k in bundled_kernels(None))
    return KernelCatalog(kernels, SIZE_CLASSES)


def ingest(path: PythonFile, arg_specs: Sequence[ArgSpec] = ()) -> IngestReport:
    """Read every top-level function of a Python file: which can be modelled (affine loop nests over arrays),
    why the others cannot (line and column), their loops and statement labels. NumPy code often leaves its
    arrays' ranks unsaid: give the inputs (`args`) as for evaluate, and each function with parameters of
    those names is modelled with their ranks.

    Pass an analyzable function's `target` (`path.py:function`) to analyze, check_legality, evaluate, optimize or show_code."""
    return describe_ingest(path, ingest_path(path, arg_specs))


def describe_ingest(path: str, reports: list[FunctionReport]) -> IngestReport:
    """The ingest result a caller sees, from the front end's reports (which the CLI also records in the graph)."""
    functions = []
    for report in reports:
        kernel = report.kernel
        labels = tuple(StatementLabel(s.name, s.line, s.text, tuple(s.iterators)) for s in kernel.statements) if kernel else ()
        functions.append(
            IngestedFunction(
                name=report.name,
                line=report.line,
                target=f"{path}:{report.name}",
                track=report.track,
                reason=report.reason,
                analyzable=report.analyzable,
                statements=len(labels),
                loops=report.loops,
                parameters=tuple(kernel.parameters) if kernel else (),
                statement_labels=labels,
                diagnostics=report.diagnostics,
            )
        )
    return IngestReport(str(path), tuple(functions))


def analyze_kernel(target: Target) -> Analysis:
    """Dependences of the kernel and, per loop, whether it carries one and so whether it could run parallel or
    vectorized; statement labels (S0, S1, ...) with their lines and loops.

    Call it first: it tells which loops a schedule may parallelize and what the loops are called."""
    return analyze(target.kernel)


def check_legality(target: Target, schedule: ScheduleText) -> LegalityReport:
    """Prove a schedule legal without building it (milliseconds). An illegal schedule's feedback names the broken
    dependence (statements, lines, array, distance), the primitive that broke it, a concrete pair of instances and
    often a legal alternative.

    Check a schedule here before you evaluate it."""
    start = time.perf_counter()
    verdict = _proved(target, schedule)
    return LegalityReport(
        schedule=verdict.schedule,
        verdict=verdict.verdict,
        legal=verdict.legal,
        feedback=verdict.feedback,
        violations=verdict.violations,
        parallel_loops=verdict.parallel_loops,
        suggestion=verdict.suggestion,
        milliseconds=(time.perf_counter() - start) * 1000,
    )


def evaluate(target: Target, schedule: ScheduleText, size: SizeClass = None, compiler: Compiler = "c") -> EvaluationReport:
    """Measure a schedule: prove it, verify the generated loop nest with Z3, build it, check its outputs against
    the baseline's on the same inputs and time both interleaved (seconds, not milliseconds).

    `speedup` is over the native build of the source order; a lead smaller than `spread` is noise."""
    return report_evaluation(evaluate_measured(target, schedule, size, compiler))


def show_code(
    target: Target,
    schedule: ScheduleText = "",
    language: Annotated[Literal["c", "mlir"], Field(description="c (C99 with OpenMP) or mlir (func, scf, memref, arith)")] = "c",
) -> GeneratedCode:
    """The code the engine generates for a legal schedule (or the source order), to read what a schedule does to the loops."""
    verdict = _proved(target, schedule)
    if not verdict.legal:
        raise ScheduleError(f"schedule `{verdict.schedule}` is {verdict.verdict}; only a legal one has code: {verdict.feedback}")
    kernel = target.kernel
    signature = Signature.of_values(kernel, target.inputs(None))
    with isl_lock(kernel):
        if language == "mlir":
            code = generate_mlir(kernel, signature, transformed_nest(kernel, verdict.lowered, signature)).text
        else:
            code = generate_c(kernel, signature, verdict.lowered).text
    return GeneratedCode(verdict.schedule, language, code[:CODE_LIMIT], len(code) > CODE_LIMIT)


def evaluate_measured(
    target: Target, schedule: str, size: str | None, compiler: str, measure: Callable[[str], Evaluation] | None = None
) -> Evaluation:
    """The engine's full evaluation of a schedule that parses and applies (others raise, as in `check_legality`).

    `measure` evaluates the way a caller must (the search: its seed, timeout and reassociation rule)."""
    evaluation = measure(schedule) if measure else evaluate_schedule(target, schedule, size, compiler=compiler)
    if evaluation.verdict == "invalid":
        raise ScheduleError(_invalid_message(evaluation.schedule, evaluation.feedback))
    return evaluation


def report_evaluation(evaluation: Evaluation) -> EvaluationReport:
    return EvaluationReport(
        target=evaluation.target,
        size=evaluation.size,
        schedule=evaluation.schedule,
        verdict=evaluation.verdict,
        correct=evaluation.correct,
        speedup=evaluation.speedup,
        spread=evaluation.spread,
        baseline_ms=evaluation.baseline_s * 1000 if evaluation.baseline_s is not None else None,
        candidate_ms=evaluation.candidate_s * 1000 if evaluation.candidate_s is not None else None,
        verified=evaluation.verified,
        feedback=evaluation.feedback,
        violations=evaluation.violations,
    )


def swap(target: Target, schedule: ScheduleText = "", size: SizeClass = None, compiler: Compiler = "c") -> SwapReport:
    """Install a schedule as the function's VerifiedKernel, so the user's program runs it: `@repoos_agent.accelerate`,
    `repoos_agent.swap(f)` and `repoos run script.py` then call the native kernel instead of the Python loops (falling
    back to Python, with a warning, on arguments the kernel was not built for).

    The schedule is evaluated first (proved, Z3-verified, built, outputs checked against the baseline's); only a legal,
    correct one is installed. Leave `schedule` empty to keep the winner `optimize` stored for this source (or, with
    none, to install the source order's native build). Installing a schedule over a faster stored kernel says so in
    `incumbent`."""
    incumbent = load_winner(target, compiler)
    if not schedule and incumbent is not None and _still_built(incumbent):
        kept = f"kept the stored winner `{incumbent.schedule or 'the source order'}` ({incumbent.speedup:.2f}x)"
        return _swap_report(incumbent, kept + "; name a schedule to install another")
    schedule = schedule or (incumbent.schedule if incumbent is not None else "")
    evaluation = evaluate_measured(target, schedule, size, compiler)
    if evaluation.verdict != "legal" or evaluation.correct is False or evaluation.verified == "false":
        raise RepoosError(f"`{evaluation.schedule}` was not installed: {evaluation.verdict}: {evaluation.feedback}")
    contract = save_winner(target, evaluation, size=size, compiler=compiler)
    return _swap_report(contract, _replaced(incumbent, contract))


def _still_built(contract: VerifiedKernel) -> bool:
    """Whether the contract's library is still the file that was measured (a cleared cache leaves it dangling)."""
    library = Path(contract.library)
    return library.is_file() and file_digest(library) == contract.library_sha256


def _replaced(incumbent: VerifiedKernel | None, contract: VerifiedKernel) -> str:
    """What the install did to a faster stored kernel: nothing is replaced by a slower one silently."""
    if incumbent is None or incumbent.speedup <= contract.speedup or incumbent.schedule == contract.schedule:
        return ""
    return (
        f"replaced the stored kernel `{incumbent.schedule or 'the source order'}` ({incumbent.speedup:.2f}x at "
        f"{incumbent.size}) with this slower one ({contract.speedup:.2f}x at {contract.size})"
    )


def _swap_report(contract: VerifiedKernel, incumbent: str) -> SwapReport:
    name = contract.function.rsplit(":", 1)[1]
    return SwapReport(
        function=contract.function,
        schedule=contract.schedule,
        speedup=contract.speedup,
        spread=contract.spread,
        verified=contract.z3_verdict,
        library=contract.library,
        usage=f"decorate `{name}` with @repoos_agent.accelerate, wrap it with repoos_agent.swap({name}), "
        "or run the program with `repoos run script.py`",
        incumbent=incumbent,
    )


def _proved(target: Target, schedule: str) -> LegalityVerdict:
    verdict = prove_legal(target.kernel, schedule)
    if verdict.verdict == "invalid":
        raise ScheduleError(_invalid_message(verdict.schedule, verdict.feedback))
    return verdict


def _invalid_message(schedule: str, feedback: str) -> str:
    reason = feedback.removeprefix("invalid: ")
    return f"schedule `{schedule}` does not parse or apply: {reason} (analyze lists the loops and statement labels)"
