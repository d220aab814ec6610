"""Evaluating one schedule on one target: prove, build, run against the baseline, time.

Cheap checks first: a schedule that does not parse, does not apply or breaks a
dependence never reaches the compiler. Every outcome, including a compiler
failure, a crash, wrong output or an endless loop, becomes a verdict.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from repoos_agent.backends import build_baseline, build_native
from repoos_agent.backends.build import BACKENDS, backend_problem
from repoos_agent.backends.cc import engine_work
from repoos_agent.backends.library import NativeKernel
from repoos_agent.codegen.c import blas_type_problem
from repoos_agent.codegen.passes import transformed_nest
from repoos_agent.errors import CompileError
from repoos_agent.legality import LegalityVerdict, Verdict, Violation, prove_legal
from repoos_agent.measure.isolated import HeadToHead, RaceRules, shared_worker
from repoos_agent.measure.original import NumpyOriginal
from repoos_agent.model.kernel import isl_lock
from repoos_agent.model.signature import Signature
from repoos_agent.target import Target
from repoos_agent.verified_nests import verified_nest
from repoos_agent.verify.translation import DEFERRED

REASSOCIATION_TOLERANCE_SCALE = 100.0
"""Reassociated sums round differently: float64 results are accepted to 1e-7, float32 to 1e-2."""


@dataclass(frozen=True)
class Evaluation:
    """Everything `check TARGET SCHEDULE` reports."""

    target: str
    size: str | None
    schedule: str
    verdict: Verdict
    feedback: str
    violations: tuple[Violation, ...] = ()
    parallel_loops: tuple[str, ...] = ()
    suggestion: str | None = None
    correct: bool | None = None
    max_rel_error: float | None = None
    speedup: float | None = None
    baseline_s: float | None = None
    candidate_s: float | None = None
    spread: float | None = None
    baseline_spread: float | None = None
    verified: str = "unknown"  # "true", "false", "unknown" (Z3 on the generated loop nest), or DEFERRED (not checked)
    verification: str = ""
    counterexample: str | None = None
    legality_ms: float = 0.0
    verify_ms: float = 0.0
    build_ms: float = 0.0
    timed: tuple[tuple[float, float], ...] = ()  # wall-clock spans of the timed runs behind the numbers
    team: int | None = None  # threads the candidate's parallel loops ran on: the cores the probe found free
    machine: str = ""  # the machine's state when the race began (free cores, other runnable tasks, load)
    machine_busy: bool = False  # another process held a core before or after the timed runs
    unsettled: str = ""  # why the numbers may mix two states of the machine ("" when they describe one)
    invalid_kind: str = ""  # for "invalid": "unparseable", "unknown_name", "inapplicable", or "" (the engine refused it later)

    @property
    def legal(self) -> bool:
        return self.verdict == "legal" or (
            self.verdict in ("incorrect", "runtime_error", "timeout", "compile_error") and self.legality_proven
        )

    @property
    def settled(self) -> bool:
        """Whether the race saw one state of the machine, so its speedup can be compared with another's."""
        return not self.unsettled

    @property
    def legality_proven(self) -> bool:
        return self.verdict not in ("invalid", "illegal", "reassociation", "unsupported")


def evaluate_schedule(
    target: Target,
    schedule: str,
    size: str | None = None,
    measure: bool = True,
    allow_reassociation: bool = False,
    timeout_s: float = 120.0,
    seed: int = 0,
    compiler: str = "c",
    repeats: int = 5,
    stop_below_speedup: float | None = None,
    verify: bool = True,
) -> Evaluation:
    """Prove `schedule` legal for `target`, have Z3 check its generated loops (unless `verify` is False: then
    `verified` is `DEFERRED`), then (unless `measure` is False) build, check and time it.

    The candidate is built with the `compiler` backend; the baseline it races is always the C
    build of the source order, the reference every speedup is measured against."""
    size = target.size_class(size)
    # Proofs and Z3 checks are the engine's CPU work, like builds: never beside another candidate's timed
    # run. Their times are counted once the cores are theirs.
    with engine_work():
        start = time.perf_counter()
        proof = prove_legal(target.kernel, schedule, allow_reassociation)
        legality_ms = (time.perf_counter() - start) * 1000
    base = dict(target=target.label, size=size, schedule=proof.schedule, legality_ms=legality_ms)
    if not proof.legal:
        return _from_proof(proof, base)
    values = target.inputs(size, seed)
    signature = Signature.of_values(target.kernel, values)
    problem = blas_type_problem(target.kernel, signature, proof.lowered)
    if problem is not None:
        return _from_proof(proof, base, verdict="invalid", feedback=f"invalid: {problem}")
    with engine_work():
        start = time.perf_counter()
        try:
            with isl_lock(target.kernel):
                nest = transformed_nest(target.kernel, proof.lowered, signature)
        except CompileError as error:
            return _from_proof(proof, base, verdict="compile_error", feedback=f"compile_error: {error}")
        problem = backend_problem(target.kernel, nest, compiler) if compiler in BACKENDS else None  # else the build names it
        if problem is not None:
            return _from_proof(proof, base, verdict="invalid", feedback=f"invalid: {problem}")
        if verify:
            verification = verified_nest(target.kernel, signature, proof.lowered, nest, proof.reassociates)
        verify_ms = (time.perf_counter() - start) * 1000
    if not verify:
        base.update(verified=DEFERRED, verification="not checked: Z3 checks the search's finalists", verify_ms=verify_ms)
    else:
        base.update(
            verified=verification.label,
            verification=verification.reason
            + (" (the verdict kept from an earlier proof of this nest)" if verification.kept else ""),
            counterexample=verification.counterexample,
            verify_ms=verify_ms,
        )
    if verify and verification.verified is False:
        feedback = (
            f"verification_failed: ISL accepted the schedule but Z3 refuted the generated loop nest: "
            f"{verification.reason}; counterexample {verification.counterexample}. This is an engine bug; the kernel was not run."
        )
        return _from_proof(proof, base, verdict="verification_failed", feedback=feedback)
    start = time.perf_counter()
    try:
        candidate = build_native(target.kernel, signature, proof.lowered, backend=compiler)
        baseline = build_baseline(target.kernel, signature)
    except CompileError as error:
        return _from_proof(proof, base, verdict="compile_error", feedback=f"compile_error: {error}")
    build_ms = (time.perf_counter() - start) * 1000
    base["build_ms"] = build_ms
    if not measure:
        return _from_proof(proof, base)
    outputs = target.kernel.outputs
    scale = REASSOCIATION_TOLERANCE_SCALE if proof.reassociates else 1.0
    rules = RaceRules(outputs, scale, min_repeats=repeats, stop_below_speedup=stop_below_speedup)
    result = shared_worker().race(baseline, candidate, values, rules, timeout_s)
    comparison = result.comparison
    measured = dict(
        correct=comparison.correct if comparison else None,
        max_rel_error=comparison.max_rel_error if comparison else None,
        team=result.team,
        machine=result.machine.describe() if result.machine else "",
        machine_busy=result.machine_busy,
        unsettled=result.unsettled_reason(),
    )
    if result.outcome != "ok":
        return _from_proof(proof, base, verdict=result.outcome, feedback=f"{result.outcome}: {result.message}", **measured)
    speedup = result.speedup
    if result.message:  # stopped early: one run, not a measurement to rank by
        feedback = f"{proof.feedback} Measured: {result.message}."
        return _from_proof(proof, base, feedback=feedback, speedup=speedup, timed=result.timed, **measured)
    feedback = (
        f"{proof.feedback} Measured: {speedup:.2f}x over the baseline "
        f"({result.candidate.median_s * 1e3:.3f} ms ±{result.candidate.spread:.0%} vs "
        f"{result.baseline.median_s * 1e3:.3f} ms ±{result.baseline.spread:.0%}), outputs equal within tolerance."
        f"{_machine_note(result)}"
    )
    return _from_proof(
        proof,
        base,
        feedback=feedback,
        speedup=speedup,
        baseline_s=result.baseline.median_s,
        candidate_s=result.candidate.median_s,
        spread=result.candidate.spread,
        baseline_spread=result.baseline.spread,
        timed=result.timed,
        **measured,
    )


def _machine_note(result: HeadToHead) -> str:
    """What the machine did to the numbers, for the feedback: a busy core, a change mid-race, two groups of samples."""
    notes = []
    if result.machine_busy and result.machine is not None:
        notes.append(f" The machine was busy ({result.machine.describe()}): parallel loops ran on {result.team} thread(s).")
    if result.unsettled_reason():
        notes.append(f" Unsettled: {result.unsettled_reason()}.")
    return "".join(notes)


def _from_proof(
    proof: LegalityVerdict, base: dict, verdict: Verdict | None = None, feedback: str | None = None, **extra
) -> Evaluation:
    return Evaluation(
        verdict=verdict or proof.verdict,
        feedback=feedback or proof.feedback,
        violations=proof.violations,
        parallel_loops=proof.parallel_loops,
        suggestion=proof.suggestion,
        invalid_kind=proof.invalid_kind if (verdict or proof.verdict) == "invalid" else "",
        **base,
        **extra,
    )


def python_original(target: Target) -> NumpyOriginal | None:
    """The user's own Python function as a race contender (imported afresh in the measurement worker),
    or None when its source file is not known."""
    source = target.python_source()
    if source is None:
        return None
    kernel = target.kernel
    results = tuple((r.name, r.scalar) for r in kernel.returns)
    return NumpyOriginal(str(source[0]), source[1], results, kernel.returns_tuple)


def proved_build(
    target: Target, signature: Signature, schedule: str, allow_reassociation: bool = True, backend: str = "c"
) -> NativeKernel:
    """`schedule`'s build, proved again first: a winner raced after its search is raced as it was proved.
    `CompileError` when it no longer proves legal or does not build."""
    proof = prove_legal(target.kernel, schedule, allow_reassociation, explain=False)
    if not proof.legal:
        raise CompileError(f"the winner `{schedule}` no longer proves legal")
    return build_native(target.kernel, signature, proof.lowered, backend=backend)
