"""`repoos run` and `repoos bench`: what the runtime's two commands run (their grammar is the CLI's, `cli.py`)."""

from __future__ import annotations

import argparse
import json
import sys

from repoos_agent.errors import RepoosError
from repoos_agent.runtime.bench import BenchRequest, format_report, report_json, run_bench
from repoos_agent.runtime.script import run_script
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
