"""`repoos optimize`: the agent's search for the fastest legal schedule, its best recorded as a VerifiedKernel."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, replace

from repoos_agent.agent.display import LiveLeaderboard
from repoos_agent.agent.events import Event
from repoos_agent.agent.search import model_use_json, optimize
from repoos_agent.agent.search_record import record_search
from repoos_agent.agent.search_report import describe_model_use, leaderboard_rows
from repoos_agent.commands import print_json
from repoos_agent.errors import NotAnalyzableError, RepoosError
from repoos_agent.findings import record_findings
from repoos_agent.search_options import search_config, search_events, search_target
from repoos_agent.store import open_store
from repoos_agent.store.recording import stored_schedule
from repoos_agent.target import Target
from repoos_agent.tracks import named_track, optimizing_track


def command_optimize(args: argparse.Namespace) -> int:
    track = optimizing_track(args)
    if track is not None and track.optimize is not None:
        return track.optimize(args)
    try:
        target = search_target(args)
    except NotAnalyzableError as refused:
        track = named_track(refused.track)
        if track is None or track.optimize is None:
            raise
        return track.optimize(args)  # a function another track took from the loop model (the fsm track's): it races it
    config = search_config(args)
    config = replace(config, incumbent=_stored_incumbent(args, target, config.compiler))
    with search_events(args) as events:
        display = LiveLeaderboard(target.label) if not args.json and sys.stderr.isatty() else None
        if display:
            events.subscribe(display)
        elif not args.json:
            events.subscribe(_progress_line)
        if display:
            with display:
                result = optimize(target, config, events)
        else:
            result = optimize(target, config, events)
    # A NumPy original that beat every schedule stays as it is: nothing is saved to swap in for it.
    contract = (
        None if result.original_won else record_findings(args, record_search, target, result, config, near=target.kernel.path)
    )
    best = result.best.evaluation if result.best else None
    payload = {
        "target": result.target,
        "size": result.size,
        "best": {
            "schedule": result.schedule,
            "speedup": result.best_speedup,
            "spread": result.best_spread,
            "fresh_speedup": result.fresh_speedup,
            "fresh_spread": result.fresh_spread,
            "verified": best.verified if best else "n/a (the identity: the baseline itself)",
        },
        "finish": result.finish,
        "budget": result.budget,
        "original_speedup": result.original_speedup,
        "original_won": result.original_won,
        "machine_busy": result.machine_busy,
        "remeasured": result.remeasured,
        "evaluations": result.evaluations,
        "verdicts": result.verdicts,
        "leaderboard": [asdict(row) for row in leaderboard_rows(result)],
        "wall_s": result.wall_s,
        "tokens": result.tokens,
        "cost_usd": result.cost_usd,
        "invalid_kinds": result.invalid_kinds,
        "models": [model_use_json(use) for use in result.models],
        "run": result.run,
        "verified_kernel": contract.key if contract else None,
        "incumbent": config.incumbent,
        "incumbent_kept": result.kept_incumbent,
    }
    if args.json:
        print_json(payload)
        return 0
    if result.original_won:
        print("best: the NumPy original itself (no native schedule beat it; nothing is saved or swapped)")
    else:
        print(f"best: {result.schedule or '(identity: the baseline)'}")
    verified = payload["best"]["verified"]
    print(f"  speedup {result.best_speedup:.2f}x ±{result.best_spread:.0%} over the native baseline, z3 verified: {verified}")
    if result.fresh_speedup is not None and result.fresh_spread is not None:
        print(
            f"  measured again after the choice: {result.fresh_speedup:.2f}x ±{result.fresh_spread:.0%} (the races that chose "
            "it picked the fastest of noisy figures; this one took no part in the choice)"
        )
    if result.finish:
        print(f"  {result.finish}")
    if result.budget:
        print(f"  {result.budget}")
    counts = ", ".join(f"{k} {v}" for k, v in sorted(result.verdicts.items()))
    print(f"  {result.evaluations} evaluations in {result.wall_s:.1f} s; verdicts: {counts}")
    spent = "unknown (no price for the model)" if result.cost_usd is None else f"${result.cost_usd:.4f}"
    print(f"  tokens: {result.tokens['input']} in, {result.tokens['output']} out; cost {spent}")
    for use in result.models:
        print(f"  {describe_model_use(use)}")
    if payload["incumbent_kept"]:
        print("  the stored VerifiedKernel's schedule: no schedule of this search beat it beyond the spread")
    if contract:
        print(f"  saved as the VerifiedKernel of {contract.function} (`repoos run` and repoos_agent.swap use it)")
    return 0


def _stored_incumbent(args: argparse.Namespace, target: Target, compiler: str) -> str | None:
    """The stored VerifiedKernel's schedule for this source and backend, raced in the search's finish
    (`stored_schedule`); a store that cannot be read has none (the search's result is still recorded, or warned about)."""
    try:
        store = open_store(args.graph, target.kernel.path)
        try:
            return stored_schedule(store, target, compiler)
        finally:
            store.close()
    except RepoosError:
        return None


def _progress_line(event: Event) -> None:
    if event.kind == "evaluation" and not event.detail.get("race"):
        speedup = f"{event.speedup:.2f}x" if event.speedup else "-"
        where = f"d{event.dialogue} t{event.turn}" if event.dialogue is not None else event.agent
        print(f"  [{where}] {event.verdict:<14} {speedup:>7}  {event.schedule or '(identity)'}", file=sys.stderr)
