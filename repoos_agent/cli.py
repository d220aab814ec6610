"""`repoos`: the command line. Each command is a thin layer over one engine function.

This module is the grammar only: every command's handler is named as a `LazyHandler` and imported when that
command runs, so `repoos --help`, `--version` and a usage error load no engine stage, and `repoos check`
loads what checking needs, not the search or the study.
"""

from __future__ import annotations

import argparse
import sys

import repoos_agent
from repoos_agent.arguments import (
    GRAPH_HELP,
    STORE_HELP,
    add_model_options,
    add_search_options,
    positive_float,
    positive_int,
)
from repoos_agent.backend_names import BACKENDS
from repoos_agent.catalog import SIZE_CLASSES
from repoos_agent.entry_point import LazyHandler, run_command
from repoos_agent.mcp.command import add_arguments as add_mcp_arguments
from repoos_agent.mcp.command import serve as serve_mcp
from repoos_agent.tracks import track_options
from tui import command as tui_command

RANKS_HELP = "an input as `check` takes it (a=f64[512,512]): its shape gives the rank of a parameter so named"


class _PrintVersion(argparse.Action):
    """`--version`: the installed package's version, read from its metadata only when asked for (a metadata
    lookup scans sys.path, and importing `importlib.metadata` alone takes a tenth of a second, which every other
    command would pay for at start)."""

    def __init__(self, option_strings: list[str], dest: str) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib.metadata import PackageNotFoundError

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
    kernels.set_defaults(run=LazyHandler("repoos_agent.commands.kernels:command_kernels"))

    ingest = commands.add_parser("ingest", help="model every function of a Python file")
    ingest.add_argument("path")
    ingest.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC", help=RANKS_HELP)
    ingest.add_argument("--json", action="store_true")
    ingest.add_argument("--graph", help=GRAPH_HELP)
    ingest.set_defaults(run=LazyHandler("repoos_agent.commands.ingest:command_ingest"))

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
    check.set_defaults(run=LazyHandler("repoos_agent.commands.check:command_check"))

    optimize_parser = commands.add_parser("optimize", help="search for the fastest legal schedule")
    add_search_options(optimize_parser)
    optimize_parser.add_argument("--json", action="store_true")
    for option in track_options():
        optimize_parser.add_argument(option.flag, metavar=option.metavar, help=option.optimize_help)
    optimize_parser.set_defaults(run=LazyHandler("repoos_agent.commands.optimize:command_optimize"))

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
    eval_parser.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="spread the instances over a Dask cluster: a scheduler's tcp://HOST:PORT, or local:N for N workers here "
        "(the `cluster` extra; docs/cluster.md)",
    )
    eval_parser.add_argument(
        "--resume", action="store_true", help="keep the instances OUT/eval.json already holds and run only the others"
    )
    eval_parser.add_argument("--seed", type=int, default=0)
    eval_parser.add_argument("--timeout", type=positive_float, default=120.0, help="seconds per measurement before a timeout")
    eval_parser.set_defaults(run=LazyHandler("repoos_agent.commands.eval:command_eval"))

    show = commands.add_parser("show", help="print the generated code of a kernel (and schedule)")
    show.add_argument("target")
    show.add_argument("schedule", nargs="?")
    language = show.add_mutually_exclusive_group()
    language.add_argument("--c", action="store_true", help="C (the default)")
    language.add_argument("--mlir", action="store_true", help="MLIR (func, scf, memref, arith, math)")
    show.add_argument("--size", help="size class whose element types to use (bundled kernels)")
    show.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC", help="argument types of a user kernel")
    show.add_argument("--allow-reassociation", action="store_true")
    show.set_defaults(run=LazyHandler("repoos_agent.commands.show:command_show"))

    cache = commands.add_parser("cache", help="the on-disk kernel cache")
    cache.add_argument("action", choices=("info", "clear"))
    cache.add_argument("--json", action="store_true")
    cache.set_defaults(run=LazyHandler("repoos_agent.commands.cache:command_cache"))

    analyze_parser = commands.add_parser("analyze", help="dependences, and which loops could run parallel or vectorized")
    analyze_parser.add_argument("target")
    analyze_parser.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC", help=RANKS_HELP)
    analyze_parser.add_argument("--json", action="store_true")
    analyze_parser.set_defaults(run=LazyHandler("repoos_agent.commands.analyze:command_analyze"))

    mcp = commands.add_parser("mcp", help="serve the engine to coding assistants over MCP (stdio, or --http)")
    add_mcp_arguments(mcp)
    mcp.set_defaults(run=serve_mcp)

    _add_runtime_commands(commands)
    return parser


def _add_runtime_commands(commands: argparse._SubParsersAction) -> None:
    """`repoos run` and `repoos bench`, whose handlers are the runtime's (`runtime/commands.py`)."""
    run = commands.add_parser("run", help="run a Python script with its verified kernels swapped in")
    run.add_argument("script")
    run.add_argument("script_args", nargs=argparse.REMAINDER, metavar="ARGS", help="the script's own arguments")
    run.add_argument("--graph", help=f"graph store holding the VerifiedKernels: {STORE_HELP}")
    run.set_defaults(run=LazyHandler("repoos_agent.runtime.commands:command_run"))

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
    bench.set_defaults(run=LazyHandler("repoos_agent.runtime.commands:command_bench"))


def main(argv: list[str] | None = None) -> int:
    return run_command(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
