"""`repoos run` and `repoos bench`: the runtime's two commands, registered on the CLI's parser."""

from __future__ import annotations

import argparse
import json
import sys

from repoos_agent.errors import RepoosError
from repoos_agent.runtime.bench import BenchRequest, format_report, report_json, run_bench
from repoos_agent.runtime.script import run_script
from repoos_agent.search_options import positive_int
from repoos_agent.store import open_store, store_exists, store_location
from repoos_agent.store.graph import GraphStore


def command_run(args: argparse.Namespace) -> int:
    store = _contracts_store(args.graph)
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


def _contracts_store(graph: str | None) -> GraphStore | None:
    """The store to read contracts from; a program must run even where there is none or it cannot be read
    (a fresh checkout, a read-only directory): then nothing is swapped, and a warning says why."""
    if not store_exists(graph):
        print(f"repoos: warning: no graph store at {store_location(graph)}: nothing is swapped", file=sys.stderr)
        return None
    try:
        return open_store(graph)
    except RepoosError as error:
        print(f"repoos: warning: nothing is swapped: {error}", file=sys.stderr)
        return None


def command_bench(args: argparse.Namespace) -> int:
    function = args.target.rsplit(".", 1)[-1].rsplit(":", 1)[-1]
    if not function.isidentifier():
        raise RepoosError(f"TARGET `{args.target}`: expected a function, as module.function (kernels.polybench.gemm.gemm)")
    request = BenchRequest(args.script, function, args.calls, tuple(args.arg), args.size, args.seed, args.graph)
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
    run.add_argument("--graph", help="graph store: a SQLite file or bolt://host:port (default .repoos/graph.sqlite)")
    run.set_defaults(run=command_run)

    bench = commands.add_parser("bench", help="time a function as plain Python and swapped, each in its own process")
    bench.add_argument("script", help="the file that defines the function")
    bench.add_argument("target", help="the function, as module.function (kernels.polybench.gemm.gemm) or its name")
    bench.add_argument("calls", type=positive_int, metavar="N", help="calls per leg")
    bench.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC", help="inputs: n=512, a=f64[512,512]")
    bench.add_argument("--size", help="size class of a bundled kernel's inputs (default SMALL)")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--graph", help="graph store holding the VerifiedKernel (default .repoos/graph.sqlite)")
    bench.add_argument("--json", action="store_true")
    bench.set_defaults(run=command_bench)
