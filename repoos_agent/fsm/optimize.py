"""`repoos optimize FILE.py:f --arg data=bytes[100000]` (or `fsm:crc32 --size MEDIUM`) for a function of the fsm
track: the proposals of the heuristic (the default) or of a model (`--backend local`, `openai`, `gemini`, through
`FsmDialogue`) raced in the arena, the race printed, and the winner stored as its `FsmKernel`.

The store keeps the winner's steps and every contender with its verdict, reason and times, the losers too, so a
later run sees what was tried. A variant races only once `fsm.qualify` has proved it (the step proof or the
bounded check) and the differential cases agree: nothing runs before the engine has shown it equal to the original.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from tree_sitter import Node

from repoos_agent.agent.events import Event, EventStream
from repoos_agent.agent.llm.local_server import local_servers
from repoos_agent.agent.proposers import BACKEND_CHOICES, chat_backend
from repoos_agent.agent.search_report import backend_spec
from repoos_agent.backends.build import cpu_model
from repoos_agent.errors import RepoosError
from repoos_agent.findings import record_findings
from repoos_agent.fsm import ir
from repoos_agent.fsm.arena import ArenaEvents, ArenaResult, Entrant, Qualifier, run_arena
from repoos_agent.fsm.dialogue import FsmDialogue
from repoos_agent.fsm.differential import Cases
from repoos_agent.fsm.heuristic import heuristic_proposals
from repoos_agent.fsm.lower import FsmRefusal, parameter_names
from repoos_agent.fsm.native import lower_for
from repoos_agent.fsm.proof import prove
from repoos_agent.fsm.proposals import JOIN, Proposal
from repoos_agent.fsm.qualify import qualify
from repoos_agent.fsm.rewrites import Variant
from repoos_agent.fsm.swap import parameter_spelling
from repoos_agent.ingest.parse import text
from repoos_agent.measure.timing import seconds_text
from repoos_agent.search_options import search_events
from repoos_agent.store import Batch, FsmKernel, GraphStore, function_key
from repoos_agent.store.identity import source_hash


def qualifier_for(original: Callable[..., object], baseline: ir.Function, samples: Sequence[Sequence[object]]) -> Qualifier:
    """The qualification `optimize` gives the arena (`fsm.qualify`): the step proof where the loop is a fold, else the
    bounded Z3 check, then the differential cases, built once for the function and shared by its variants. A variant
    whose widths the analysis cannot prove is refused, as it cannot be compiled exactly."""
    cases = Cases(baseline, original, [tuple(sample) for sample in samples])

    def qualify_variant(variant: Variant) -> tuple[str, str]:
        try:
            verdict = qualify(original, baseline, variant, [], prove=prove, cases=cases)
        except FsmRefusal as refused:
            return "refused", f"does not compile: {refused.reason}"
        return verdict.verdict, verdict.describe()

    return qualify_variant


FsmTarget = tuple[Path, str, Node, Callable[..., object], list[object]]
"""A target as the track reads it (`track.target_inputs`): its file, name, syntax tree, Python original, arguments."""


def optimize_command(args: argparse.Namespace, target: FsmTarget) -> int:
    """Race the variants `--backend` proposes for `args.target` on its inputs (`target`, as the track reads it); print the race
    (`--json`: one object) and store the winner."""
    if getattr(args, "budget", None) is not None:
        raise RepoosError(f"{args.target}: --budget bounds a loop or NumPy search; the fsm arena races all its variants")
    if getattr(args, "cluster", None) is not None:
        raise RepoosError(f"{args.target}: --cluster spreads a loop or NumPy search; the fsm arena races here")
    path, _, node, _, _ = target
    propose = proposer_for(backend_spec(args.backend, args.model), text(node), args.base_url, args.constrain)
    with search_events(args) as events:
        if not args.json:
            events.subscribe(_progress_line)
        result, baseline = race_target(args.target, target, propose, events)
        record_findings(args, write_winner, result, path, node, baseline, events, near=str(path))
    if args.json:
        print(json.dumps(result_payload(result), indent=2))
    else:
        print(race_table(result))
    return 0


def lowered_target(target: FsmTarget) -> ir.Function:
    """The target's baseline IR, lowered for the types of its arguments (a refusal names its file and line)."""
    path, name, node, _, arguments = target
    try:
        return lower_for(node, dict(zip(parameter_names(node), arguments, strict=False)))
    except FsmRefusal as refusal:
        raise FsmRefusal(refusal.line, f"`{name}` is not modelled by the fsm track: {refusal.reason}", path) from None


def proposer_for(
    spec: str, source: str, base_url: str | None = None, constrain: bool = True
) -> Callable[[ir.Function], list[Proposal]]:
    """What proposes the variants of a function whose source is `source`: the heuristic, or the model of backend
    `spec` (`local:smollm2`, `openai:MODEL`, `gemini:MODEL`) in an `FsmDialogue`."""
    if spec == "heuristic":
        return heuristic_variants
    if spec.partition(":")[0] not in ("openai", "gemini", "local"):
        raise RepoosError(f"unknown backend `{spec.partition(':')[0]}`; choose {BACKEND_CHOICES}")

    def ask(baseline: ir.Function) -> list[Proposal]:
        with local_servers():  # a llama.cpp server started here stops before the race, off the cores it times on
            return FsmDialogue(chat_backend(spec, base_url, tools=False), baseline, source, constrain).proposals()

    return ask


def heuristic_variants(baseline: ir.Function) -> list[Proposal]:
    """The heuristic's variants of `baseline`, as proposals."""
    return [Proposal(JOIN.join(map(str, steps)), steps) for steps in heuristic_proposals(baseline)]


def race_target(
    label: str, target: FsmTarget, propose: Callable[[ir.Function], list[Proposal]], events: EventStream
) -> tuple[ArenaResult, ir.Function]:
    """The arena's race of what `propose` offers for the target's baseline, on its arguments; the race and the
    baseline (what `write_winner` stores it against). The CLI, the MCP server and the TUI all race through here."""
    _, _, _, original, arguments = target
    baseline = lowered_target(target)
    samples = [arguments]
    qualify = qualifier_for(original, baseline, samples)
    return run_arena(label, baseline, original, samples, propose(baseline), qualify, events), baseline


def write_winner(
    store: GraphStore, result: ArenaResult, path: Path, node: Node, baseline: ir.Function, events: EventStream | None = None
) -> FsmKernel:
    """Store `result`'s winner as the function's `FsmKernel`, every contender kept in it; an event says so."""
    name = text(node.child_by_field_name("name"))
    winner = result.winner
    record = FsmKernel(
        key=function_key(path, name),
        function=function_key(path, name),
        source_hash=source_hash(text(node)),
        parameters=parameter_spelling(baseline),
        steps=JOIN.join(map(str, winner.steps)),
        speedup=result.over_baseline(winner) or 1.0,
        python_speedup=result.over_python(winner) or 0.0,
        spread=winner.timing.spread if winner.timing else 0.0,
        raced=json.dumps(result_payload(result)["entrants"]),
        cpu=cpu_model(),
        recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    store.write(Batch((record,), ()))
    if events is not None:
        ArenaEvents(events, result.run).emit("contract_stored", schedule=winner.label, detail={"function": record.function})
    return record


def result_payload(result: ArenaResult) -> dict[str, object]:
    """The race as JSON: each contender's verdict, reason, median, spread and speedups, and the crowned one."""
    return {
        "target": result.target,
        "track": "fsm",
        "python_s": result.python.median_s,
        "crowned": result.winner.label,
        "machine_busy": result.field.machine_busy,
        "unsettled": result.field.unsettled_reason(),
        "entrants": [_entrant_payload(result, entrant) for entrant in result.entrants],
    }


def _entrant_payload(result: ArenaResult, entrant: Entrant) -> dict[str, object]:
    return {
        "variant": entrant.label,
        "verdict": entrant.verdict,
        "reason": entrant.reason,
        "median_s": entrant.timing.median_s if entrant.timing else None,
        "spread": entrant.timing.spread if entrant.timing else None,
        "over_baseline": result.over_baseline(entrant),
        "over_python": result.over_python(entrant),
    }


def race_table(result: ArenaResult) -> str:
    """The race as a reader takes it in: one line a contender, the crowned one marked, and why a loser lost."""
    width = max(len(entrant.label) for entrant in result.entrants)
    lines = [f"{result.target}: fsm arena, Python original {seconds_text(result.python.median_s)}"]
    lines.append(f"  {'variant':<{width}}  {'verdict':<12} {'median':>10} {'spread':>7} {'x base':>7} {'x CPython':>9}")
    for entrant in result.entrants:
        mark = "*" if entrant is result.winner else " "
        if entrant.timing is None:
            lines.append(f"{mark} {entrant.label:<{width}}  {entrant.verdict:<12} {entrant.reason}")
            continue
        lines.append(
            f"{mark} {entrant.label:<{width}}  {entrant.verdict:<12} {seconds_text(entrant.timing.median_s):>10} "
            f"{entrant.timing.spread:>6.1%} {result.over_baseline(entrant):>6.2f}x {result.over_python(entrant):>8.1f}x"
        )
    lines.append(f"crowned: {result.winner.label}")
    unsettled = result.field.unsettled_reason()
    if unsettled:
        lines.append(f"note: {unsettled}")
    return "\n".join(lines)


def _progress_line(event: Event) -> None:
    """Each contender's verdict on stderr as it is decided, so a long build shows it is moving."""
    if event.kind == "verification":
        print(f"  {event.schedule}: {event.detail.get('verdict')}", file=sys.stderr)
