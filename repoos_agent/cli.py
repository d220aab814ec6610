"""`repoos`: the command line. Each command is a thin layer over one engine function."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, replace
from importlib.metadata import PackageNotFoundError
from pathlib import Path

import repoos_agent
from repoos_agent.agent.display import LiveLeaderboard
from repoos_agent.agent.events import Event
from repoos_agent.agent.operations import describe_ingest
from repoos_agent.agent.search import model_use_json, optimize
from repoos_agent.agent.search_record import record_search
from repoos_agent.agent.search_report import backend_spec, describe_model_use, leaderboard_rows
from repoos_agent.backends.build import BACKENDS
from repoos_agent.backends.cache import cache_info, clear_cache
from repoos_agent.catalog import SIZE_CLASSES, bundled_kernels, find_bundled
from repoos_agent.check import check_baseline
from repoos_agent.codegen.c import generate_c
from repoos_agent.codegen.mlir import generate_mlir
from repoos_agent.codegen.passes import transformed_nest
from repoos_agent.entry_point import run_command
from repoos_agent.errors import NotAnalyzableError, RepoosError
from repoos_agent.evaluate import evaluate_schedule
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.legality import analyze, prove_legal
from repoos_agent.mcp.command import add_arguments as add_mcp_arguments
from repoos_agent.mcp.command import serve as serve_mcp
from repoos_agent.measure.provenance import provenance
from repoos_agent.model import Signature
from repoos_agent.runtime.commands import add_runtime_commands
from repoos_agent.schedule import ScheduleError
from repoos_agent.search_options import (
    GRAPH_HELP,
    add_model_options,
    add_search_options,
    positive_float,
    positive_int,
    record_findings,
    search_config,
    search_events,
    search_target,
)
from repoos_agent.store import open_store
from repoos_agent.store.recording import (
    record_baseline_check,
    record_evaluation,
    record_ingest,
    stored_schedule,
)
from repoos_agent.study import StudyConfig, chosen_kernels, parse_tools, print_table, run_study, summarize, write_outputs
from repoos_agent.study.chunks import record_chunk
from repoos_agent.study.report import CHART_NEEDS
from repoos_agent.target import Target, ingest_path, resolve_target
from repoos_agent.tracks import Track, named_track, optimizing_track, registered_tracks
from tui import command as tui_command

RANKS_HELP = "an input as `check` takes it (a=f64[512,512]): its shape gives the rank of a parameter so named"


def _print_json(payload: object) -> None:
    print(json.dumps(payload, indent=2))


def command_kernels(args: argparse.Namespace) -> int:
    kernels = bundled_kernels(None)
    if args.json:
        _print_json([{"name": k.name, "category": k.category, "function": k.function, "sizes": k.sizes} for k in kernels])
        return 0
    # A column per size class, under a header naming it, and a row per size parameter, named: each number
    # is labelled and the table stays narrow. Categories head their group of rows instead of taking a column.
    header = ("kernel", "parameter", *SIZE_CLASSES)
    rows = [
        (kernel.category, (kernel.name if k == 0 else "", name, *(str(kernel.sizes[size][name]) for size in SIZE_CLASSES)))
        for kernel in kernels
        for k, name in enumerate(kernel.sizes[SIZE_CLASSES[0]])
    ]
    widths = [max(len(cells[column]) for cells in (header, *(cells for _, cells in rows))) for column in range(len(header))]
    aligns = ["<", "<"] + [">"] * len(SIZE_CLASSES)

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(f"{cell:{align}{width}}" for cell, align, width in zip(cells, aligns, widths, strict=True))

    print(f"  {line(header)}")
    heading = None
    for category, cells in rows:
        if category != heading:
            heading = category
            print(category)
        print(f"  {line(cells)}")
    print(f"{len(kernels)} kernels; --size CLASS picks a column (default SMALL)")
    return 0


def command_ingest(args: argparse.Namespace) -> int:
    reports = ingest_path(args.path, [parse_arg_spec(text) for text in args.arg])
    record_findings(args, record_ingest, args.path, reports, near=args.path)
    functions = describe_ingest(args.path, reports).functions
    if args.json:
        _print_json([asdict(function) for function in functions])
        return 0
    for function in functions:
        status = "analyzable" if function.analyzable else "not analyzable"
        print(f"{args.path}:{function.line}: {function.name}: {function.track}, {status}: {function.reason}")
        for label in function.statement_labels:
            print(f"    {label.label}  line {label.line}  [{', '.join(label.loops)}]  {label.text}")
        for diagnostic in function.diagnostics:
            print(f"    {args.path}:{diagnostic.line}:{diagnostic.column}: {diagnostic.message}")
    if not functions:
        print(f"{args.path}: no top-level functions")
    return 0


def command_check(args: argparse.Namespace) -> int:
    specs = [parse_arg_spec(text) for text in args.arg]
    try:
        target = resolve_target(args.target, specs)
    except NotAnalyzableError as refused:
        track = named_track(refused.track)
        if track is None or track.check is None or args.schedule is not None:
            raise
        return track.check(args)  # a function another track took from the loop model: that track checks it
    if args.schedule is not None:
        return _check_schedule(args, target)
    report = check_baseline(target, args.size, args.seed, args.compiler)
    record_findings(args, record_baseline_check, target, report, args.compiler, near=target.kernel.path)
    if args.json:
        payload = asdict(report)
        payload["speedup"] = report.speedup
        _print_json(payload)
        return 0 if report.correct else 1
    where = f" at {report.size}" if report.size else ""
    verdict = "correct" if report.correct else f"INCORRECT ({', '.join(report.mismatched)} differ)"
    print(f"{report.target}{where}: {verdict}, max relative error {report.max_rel_error:.1e} (tolerance {report.tolerance:g})")
    compared = f" at {report.compare_size}" if report.compare_size != report.size else ""
    print(f"  python  {report.python_s:10.6f} s{compared}")
    print(f"  native  {report.native_s:10.6f} s  ±{report.native_spread:.0%}{where}  ({report.instances:,} statement instances)")
    if report.compare_size != report.size:
        print(f"  native  {report.native_compare_s:10.6f} s{compared}")
    print(f"  speedup {report.speedup:10.1f}x over the Python original{compared}")
    if report.note:
        print(f"  note: {report.note}")
    return 0 if report.correct else 1


def _check_schedule(args: argparse.Namespace, target) -> int:
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
        _print_json(payload)
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


def command_show(args: argparse.Namespace) -> int:
    try:
        target = resolve_target(args.target, [parse_arg_spec(text) for text in args.arg])
    except NotAnalyzableError as refused:
        track = named_track(refused.track)
        if track is None or track.show is None:
            raise
        return track.show(args)  # a function another track took from the loop model: that track prints its code
    kernel = target.kernel
    proof = prove_legal(kernel, args.schedule or "", args.allow_reassociation)
    if not proof.legal:
        raise ScheduleError(proof.feedback.splitlines()[0])
    signature = Signature.of_values(kernel, target.inputs(args.size))  # element types: a user kernel's from its --arg specs
    if args.mlir:
        print(generate_mlir(kernel, signature, transformed_nest(kernel, proof.lowered, signature)).text, end="")
    else:
        print(generate_c(kernel, signature, proof.lowered).text, end="")
    return 0


def command_cache(args: argparse.Namespace) -> int:
    if args.action == "clear":
        removed = clear_cache()
        print(f"removed {removed} files from {cache_info().directory}")
        return 0
    info = cache_info()
    if args.json:
        _print_json(asdict(info))
    else:
        print(f"{info.directory}: {info.builds} builds, {info.libraries} libraries, {info.bytes / 1e6:.1f} MB")
    return 0


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
            "verified": best.verified if best else "n/a (the identity: the baseline itself)",
        },
        "finish": result.finish,
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
        _print_json(payload)
        return 0
    if result.original_won:
        print("best: the NumPy original itself (no native schedule beat it; nothing is saved or swapped)")
    else:
        print(f"best: {result.schedule or '(identity: the baseline)'}")
    verified = payload["best"]["verified"]
    print(f"  speedup {result.best_speedup:.2f}x ±{result.best_spread:.0%} over the native baseline, z3 verified: {verified}")
    if result.finish:
        print(f"  {result.finish}")
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


def command_eval(args: argparse.Namespace) -> int:
    kernels, size_overrides = chosen_kernels(args.kernels)
    track = _evaluating_track(kernels)
    if track is not None and track.evaluate is not None:
        return track.evaluate(args, kernels, dict(size_overrides))
    sizes = tuple(size.strip().upper() for size in (args.sizes or "MEDIUM").split(",") if size.strip())
    unknown = [size for size in sizes if size not in SIZE_CLASSES]
    if unknown or not sizes:
        raise RepoosError(f"--sizes: unknown size `{','.join(unknown)}`; sizes are {', '.join(SIZE_CLASSES)}")
    origin = provenance()  # the code this study loads, before it measures for hours
    out = Path(args.out)
    if args.chunk:
        try:
            out = record_chunk(out, args.chunk, kernels, sizes, origin)
        except OSError as error:
            raise RepoosError(f"--out {args.out}: {error.strerror or error}") from None
    config = StudyConfig(
        kernels=kernels,
        sizes=sizes,
        size_overrides=size_overrides,
        iters=args.iters,
        k=args.k,
        runs=args.runs,
        candidates=args.candidates,
        backend=backend_spec(args.backend, args.model),
        base_url=args.base_url,
        tools=parse_tools(args.compare) if args.compare else (),
        seed=args.seed,
        timeout_s=args.timeout,
        log_dir=str(out / "logs"),
        constrain=args.constrain,
        prompt=args.prompt,
    )
    tool_names = tuple(spec.name for spec in config.tools)

    def write(instances: list) -> tuple[Path, ...]:
        try:
            return write_outputs(out, config, instances, summarize(instances, tool_names, config.seed), origin)
        except OSError as error:
            raise RepoosError(f"--out {args.out}: {error.strerror or error}") from None

    write([])  # an unwritable --out fails now, not after an hour of measuring
    instances = run_study(config, lambda line: print(f"  {line}", file=sys.stderr, flush=True), write)
    paths = write(instances)
    print_table(config, instances, summarize(instances, tool_names, config.seed))
    print(f"written: {', '.join(str(path) for path in paths)}")
    if not any(path.suffix == ".png" for path in paths):
        print(CHART_NEEDS)
    return 0


def _evaluating_track(kernels: tuple[str, ...]) -> Track | None:
    """The track that compares these kernels with its own peers (the fsm track its suite's), or None for the study
    protocol's search. A track's kernels are compared apart: mixed with others, they are refused."""
    suites = {find_bundled(name).suite for name in kernels}
    tracks = {suite: track for suite in suites if (track := named_track(suite)) is not None and track.evaluate is not None}
    if tracks and len(suites) > 1:
        suite = next(iter(tracks))
        raise RepoosError(f"--kernels: {suite}: kernels are compared with their own peers; run them apart from the others")
    return next(iter(tracks.values()), None)


def command_analyze(args: argparse.Namespace) -> int:
    analysis = analyze(resolve_target(args.target, [parse_arg_spec(text) for text in args.arg]).kernel)
    if args.json:
        _print_json(asdict(analysis))
        return 0
    print(f"{analysis.kernel}: parameters {', '.join(analysis.parameters) or 'none'}")
    for statement in analysis.statements:
        reduction = "  (reduction)" if statement.reduction else ""
        print(f"  {statement.label}  line {statement.line}  [{', '.join(statement.loops)}]  {statement.text}{reduction}")
    print("dependences:")
    for dependence in analysis.dependences:
        print(f"  {dependence}")
    print("loops:")
    for loop in analysis.loops:
        parallel = f"parallel with {', '.join(loop.private)} private" if loop.private else "parallel"
        split = f"vector, its lanes splitting the sum {', '.join(loop.lane_sums)}"
        marks = ((parallel, loop.parallelizable), ("vector", loop.vectorizable), (split, loop.lane_sums))
        can = [word for word, yes in marks if yes]
        print(f"  {'  ' * loop.depth}{loop.name}: {', '.join(can) or 'carries ' + str(len(loop.carries)) + ' dependences'}")
    return 0


class _PrintVersion(argparse.Action):
    """`--version`: the installed package's version, read from its metadata only when asked for (a metadata
    lookup scans sys.path, which every other command would pay for at start)."""

    def __init__(self, option_strings: list[str], dest: str) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        try:
            installed = repoos_agent.__version__
        except PackageNotFoundError:
            parser.exit(2, f"{parser.prog}: error: no version: the {repoos_agent.PACKAGE} package is not installed\n")
        print(f"{parser.prog} {installed}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="repoos", description="RepoOS Agent: a polyhedral optimizer for Python loop kernels.")
    parser.add_argument("--version", action=_PrintVersion)
    commands = parser.add_subparsers(dest="command", required=True)

    kernels = commands.add_parser("kernels", help="list the bundled kernels")
    kernels.add_argument("--json", action="store_true")
    kernels.set_defaults(run=command_kernels)

    ingest = commands.add_parser("ingest", help="model every function of a Python file")
    ingest.add_argument("path")
    ingest.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC", help=RANKS_HELP)
    ingest.add_argument("--json", action="store_true")
    ingest.add_argument("--graph", help=GRAPH_HELP)
    ingest.set_defaults(run=command_ingest)

    check = commands.add_parser(
        "check", help="check the native baseline against the Python original, or a schedule against the baseline"
    )
    check.add_argument("target", help="a bundled kernel (gemm) or path/to/file.py:function")
    check.add_argument("schedule", nargs="?", help="a schedule, e.g. 'interchange(j, k); parallelize(i)'")
    check.add_argument("--no-measure", action="store_true", help="prove and build only; do not run or time")
    check.add_argument("--allow-reassociation", action="store_true", help="accept reordered floating-point reductions")
    check.add_argument("--timeout", type=positive_float, default=120.0, help="seconds before a running candidate is stopped")
    check.add_argument("--compiler", choices=BACKENDS, default="c", help="backend that builds the kernel (default c: see README)")
    check.add_argument("--size", help=f"size class of a bundled kernel: {', '.join(SIZE_CLASSES)} (default SMALL)")
    check.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="input of a user kernel: n=512, alpha=1.5, a=f64[512,512]",
    )
    check.add_argument("--seed", type=int, default=0, help="seed of random inputs")
    check.add_argument("--json", action="store_true")
    check.add_argument("--graph", help=GRAPH_HELP)
    check.set_defaults(run=command_check)

    optimize_parser = commands.add_parser("optimize", help="search for the fastest legal schedule")
    add_search_options(optimize_parser)
    optimize_parser.add_argument("--json", action="store_true")
    for track in registered_tracks():
        if track.option is not None:
            optimize_parser.add_argument(track.option.flag, metavar=track.option.metavar, help=track.option.optimize_help)
    optimize_parser.set_defaults(run=command_optimize)

    tui = commands.add_parser("tui", help="watch the search live in a terminal UI, or replay a run log")
    tui_command.add_arguments(tui)
    tui.set_defaults(run=tui_command.run)

    eval_parser = commands.add_parser("eval", help="the study protocol: search every kernel, compare with Numba, Graphite, Polly")
    eval_parser.add_argument(
        "--kernels", default="all", help="all, or bundled kernels, comma-separated; NAME@SIZE runs one at its own size"
    )
    eval_parser.add_argument(
        "--sizes", help="comma-separated size classes (default MEDIUM; LARGE for fsm: kernels, where CPython takes 0.1-1.5 s)"
    )
    eval_parser.add_argument("--iters", type=positive_int, default=10, help="turns per dialogue (T)")
    eval_parser.add_argument("--k", type=positive_int, default=1, help="dialogues per run, concurrent; best-of-K is over them")
    eval_parser.add_argument("--runs", type=positive_int, default=1, help="runs per instance (R); each figure is their median")
    eval_parser.add_argument("--candidates", type=positive_int, default=4, help="schedules per turn, built in parallel")
    eval_parser.add_argument(
        "--backend",
        default="heuristic",
        help="heuristic (offline, the default), openai, gemini or local (llama.cpp on this machine)",
    )
    eval_parser.add_argument("--model", help="model of an openai/gemini backend; of local: smollm2 (the default) or a .gguf file")
    eval_parser.add_argument("--base-url", help="an OpenAI-compatible server")
    add_model_options(eval_parser)
    eval_parser.add_argument(
        "--compare",
        help="tools measured in the same run: numba,graphite,polly,dace,pythran (a C tool may name its compiler: polly=/path/clang)"
        "; dace and pythran need the `peers` extra. fsm: kernels' peers: numba,cython,mypyc,pypy (the `fsm-peers` extra, pypy3)",
    )
    eval_parser.add_argument(
        "--out", default="eval-results", help="directory for eval.csv, eval.json, eval.png, and logs/ with every search's events"
    )
    eval_parser.add_argument(
        "--chunk",
        help="run as one chunk of a study too long for one run: files go to OUT/CHUNK/, and OUT/manifest.json "
        "records the chunk's kernels and provenance (benchmarks/numpy_summary.py OUT merges the chunks)",
    )
    eval_parser.add_argument("--seed", type=int, default=0)
    eval_parser.add_argument("--timeout", type=positive_float, default=120.0, help="seconds per measurement before a timeout")
    eval_parser.set_defaults(run=command_eval)

    show = commands.add_parser("show", help="print the generated code of a kernel (and schedule)")
    show.add_argument("target")
    show.add_argument("schedule", nargs="?")
    language = show.add_mutually_exclusive_group()
    language.add_argument("--c", action="store_true", help="C (the default)")
    language.add_argument("--mlir", action="store_true", help="MLIR (func, scf, memref, arith, math)")
    show.add_argument("--size", help="size class whose element types to use (bundled kernels)")
    show.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC", help="argument types of a user kernel")
    show.add_argument("--allow-reassociation", action="store_true")
    show.set_defaults(run=command_show)

    cache = commands.add_parser("cache", help="the on-disk kernel cache")
    cache.add_argument("action", choices=("info", "clear"))
    cache.add_argument("--json", action="store_true")
    cache.set_defaults(run=command_cache)

    analyze_parser = commands.add_parser("analyze", help="dependences, and which loops could run parallel or vectorized")
    analyze_parser.add_argument("target")
    analyze_parser.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC", help=RANKS_HELP)
    analyze_parser.add_argument("--json", action="store_true")
    analyze_parser.set_defaults(run=command_analyze)

    mcp = commands.add_parser("mcp", help="serve the engine to coding assistants over MCP (stdio, or --http)")
    add_mcp_arguments(mcp)
    mcp.set_defaults(run=serve_mcp)

    add_runtime_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_command(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
