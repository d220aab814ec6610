"""`repoos run` and `repoos bench`: the runtime's two commands, registered on the CLI's parser."""

from __future__ import annotations

import argparse
import json
import sys

from repoos_agent.errors import RepoosError
from repoos_agent.runtime.bench import BenchRequest, format_report, report_json, run_bench
from repoos_agent.runtime.script import run_script
from repoos_agent.search_options import STORE_HELP, positive_int
from repoos_agent.store import missing_store, open_store
from repoos_agent.store.graph import GraphStore


def command_run(args: argparse.Namespace) -> int:
    store = _contracts_store(args.graph, args.script)
    try:
        run_script(args.script, args.script_args, store)
    except SystemExit as exit_:  # the script's own sys.exit(): its code, and its message as Python would print it
        if exit_.code is None or isinstance(exit_.code, int):
            return exit_.code or 0
        print(exit_.code, file=sys.stderr)
        return 1
    finally:
        if store is not None:
            store.close()
    return 0


def _contracts_store(graph: str | None, script: str) -> GraphStore | None:
    """The store to read contracts from (`--graph`, else the one found from the script's directory); a program
    must run even where there is none or it cannot be read (a fresh checkout, a read-only directory): then
    nothing is swapped, and a warning says why."""
    missing = missing_store(graph, script)
    if missing:
        print(f"repoos: warning: {missing}: nothing is swapped", file=sys.stderr)
        return None
    try:
        return open_store(graph, script)
    except RepoosError as error:
        print(f"repoos: warning: nothing is swapped: {error}", file=sys.stderr)
        return None


def command_bench(args: argparse.Namespace) -> int:
    function = args.target.rsplit(".", 1)[-1].rsplit(":", 1)[-1]
    if not function.isidentifier():
        raise RepoosError(f"TARGET `{args.target}`: expected a function, as module.function (kernels.polybench.gemm.gemm)")
    request = BenchRequest(args.script, function, args.calls, tuple(args.arg), args.size, args.seed, args.graph, args.db)
    report = run_bench(request)
    if args.json:
        print(json.dumps(report_json(report), indent=2))
    else:
        print(format_report(report))
    return 0 if report.matched else 1


def add_runtime_commands(commands: argparse._SubParsersAction) -> None:
    run = commands.add_parser("run", help="run a Python script with its verified kernels swapped in")
    run.add_argument("script")
    run.add_argument("script_args", nargs=argparse.REMAINDER, metavar="ARGS", help="the script's own arguments")
    run.add_argument("--graph", help=f"graph store holding the VerifiedKernels: {STORE_HELP}")
    run.set_defaults(run=command_run)

    bench = commands.add_parser("bench", help="time a function as plain Python and swapped, each in its own process")
    bench.add_argument("script", help="the file that defines the function")
    bench.add_argument("target", help="the function, as module.function (kernels.polybench.gemm.gemm) or its name")
    bench.add_argument("calls", type=positive_int, metavar="N", help="calls per leg")
    bench.add_argument(
        "--arg", action="append", default=[], metavar="NAME=SPEC",
        help="inputs: n=512, a=f64[512,512]; an endpoint's values: min_cancelled=30 (default: its own defaults)",
    )  # fmt: skip
    bench.add_argument("--size", help="size class of a bundled kernel's inputs (default SMALL)")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--graph", help=f"graph store holding the VerifiedKernel or TabularKernel: {STORE_HELP}")
    bench.add_argument("--db", metavar="URL", help="an ORM endpoint's database (default: the session its own Depends(...) gives)")
    bench.add_argument("--json", action="store_true")
    bench.set_defaults(run=command_bench)
