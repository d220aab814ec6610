"""`repoos check TARGET SCHEDULE`: a schedule proved, built and raced against the baseline (`evaluate_schedule`)."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from repoos_agent.commands import print_json
from repoos_agent.evaluate import evaluate_schedule
from repoos_agent.findings import record_findings
from repoos_agent.store.recording import record_evaluation
from repoos_agent.target import Target


def check_schedule(args: argparse.Namespace, target: Target) -> int:
    """`repoos check TARGET SCHEDULE`: the verdict, the feedback, and the speedup unless `--no-measure`; exit code 1
    unless the schedule is legal, correct and not refuted by Z3."""
    evaluation = evaluate_schedule(
        target,
        args.schedule,
        args.size,
        measure=not args.no_measure,
        allow_reassociation=args.allow_reassociation,
        timeout_s=args.timeout,
        seed=args.seed,
        compiler=args.compiler,
    )
    record_findings(args, record_evaluation, target, evaluation, args.compiler, near=target.kernel.path)
    ok = evaluation.verdict == "legal" and evaluation.correct is not False and evaluation.verified != "false"
    if args.json:
        payload = asdict(evaluation)
        payload["legal"] = evaluation.legality_proven
        print_json(payload)
        return 0 if ok else 1
    print(f"{evaluation.target}{f' at {evaluation.size}' if evaluation.size else ''}: {evaluation.verdict}")
    print(f"  schedule: {evaluation.schedule or '(identity)'}")
    for line in evaluation.feedback.splitlines():
        print(f"  {line}")
    if evaluation.speedup is not None:
        print(
            f"  speedup {evaluation.speedup:.2f}x  (candidate {evaluation.candidate_s:.6f} s ±{evaluation.spread:.0%}, "
            f"baseline {evaluation.baseline_s:.6f} s ±{evaluation.baseline_spread:.0%})"
        )
    if evaluation.legality_proven:
        print(f"  z3 verified: {evaluation.verified} ({evaluation.verification})")
    print(f"  legality {evaluation.legality_ms:.1f} ms, z3 {evaluation.verify_ms:.0f} ms, build {evaluation.build_ms:.0f} ms")
    return 0 if ok else 1
