"""The search's command-line options, declared once for every command that runs a search (`optimize`, `tui`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from repoos_agent.agent.dialogue import PromptOptions
from repoos_agent.agent.events import EventStream, JsonlLog
from repoos_agent.agent.search import SearchConfig
from repoos_agent.agent.search_report import backend_spec
from repoos_agent.backends.build import BACKENDS
from repoos_agent.errors import RepoosError
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.store import open_store
from repoos_agent.target import Target, resolve_target

STORE_HELP = (
    "a SQLite file or bolt://host:port (default $REPOOS_GRAPH, else the first .repoos/graph.sqlite walking up from "
    "the file's directory, then from the working directory; else a new one in the working directory)"
)
GRAPH_HELP = f"graph store to record in: {STORE_HELP}"

Recorded = TypeVar("Recorded")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{text}` is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{text}` is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value:g}")
    return value


def add_search_options(parser: argparse.ArgumentParser, target_required: bool = True) -> None:
    """TARGET and the options that shape a search; `search_config` reads them back."""
    parser.add_argument(
        "target", nargs=None if target_required else "?", help="a bundled kernel (gemm) or path/to/file.py:function"
    )
    parser.add_argument(
        "--backend",
        default="heuristic",
        help="heuristic (offline, the default), openai, gemini or local (llama.cpp on this machine)",
    )
    parser.add_argument(
        "--model",
        help="model of an openai/gemini backend (key from OPENAI_API_KEY / GEMINI_API_KEY); of local: smollm2 (the default) "
        "or a .gguf file",
    )
    parser.add_argument(
        "--base-url", help="an OpenAI-compatible server: Ollama, vLLM, LM Studio, llama.cpp (with local: started by you)"
    )
    parser.add_argument("--moa", help="Mixture-of-Agents reference agents, e.g. 'heuristic,openai:qwen2.5-coder:32b'")
    parser.add_argument("--aggregator", help="the agent that proposes last, seeing the references' proposals")
    parser.add_argument(
        "--mode", choices=("dialogue", "tools"), default="dialogue", help="tools: the model calls the engine itself"
    )
    add_model_options(parser)
    parser.add_argument("--iters", type=positive_int, default=5, help="turns per dialogue")
    parser.add_argument("--k", type=positive_int, default=1, help="independent dialogues run concurrently")
    parser.add_argument("--candidates", type=positive_int, default=4, help="schedules per turn, built in parallel")
    parser.add_argument("--size", help="size class of a bundled kernel (default SMALL)")
    parser.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC")
    parser.add_argument("--compiler", choices=BACKENDS, default="c")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--allow-reassociation", action="store_true")
    parser.add_argument("--timeout", type=positive_float, default=120.0)
    parser.add_argument("--log", help="append every event to this JSONL file")
    parser.add_argument("--graph", help=GRAPH_HELP)


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """How models are asked: `--no-constrain` and `--prompt` (`optimize`, `tui` and `eval`)."""
    parser.add_argument(
        "--no-constrain",
        dest="constrain",
        action="store_false",
        help="let models write free text (by default their replies are decoded under the kernel's schedule grammar)",
    )
    parser.add_argument(
        "--prompt",
        default="",
        type=prompt_spec,
        help="what models' prompts carry: comma-separated no-dependences, examples, verdict-feedback, one-primitive",
    )


def prompt_spec(text: str) -> str:
    """`--prompt`'s words, checked before any search starts."""
    try:
        PromptOptions.parse(text)
    except RepoosError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--prompt: ")) from None
    return text


def search_target(args: argparse.Namespace) -> Target:
    """The kernel the options name, with its `--arg` specs."""
    return resolve_target(args.target, [parse_arg_spec(text) for text in args.arg])


def search_config(args: argparse.Namespace) -> SearchConfig:
    """The `SearchConfig` the options describe."""
    return SearchConfig(
        backend=backend_spec(args.backend, args.model),
        base_url=args.base_url,
        moa=tuple(spec.strip() for spec in args.moa.split(",") if spec.strip()) if args.moa else (),
        aggregator=args.aggregator,
        mode=args.mode,
        iters=args.iters,
        k=args.k,
        candidates=args.candidates,
        size=args.size,
        compiler=args.compiler,
        seed=args.seed,
        allow_reassociation=args.allow_reassociation,
        timeout_s=args.timeout,
        constrain=args.constrain,
        prompt=args.prompt,
    )


@contextmanager
def search_events(args: argparse.Namespace) -> Iterator[EventStream]:
    """The search's event stream; with `--log`, every event is appended to that file until the block ends."""
    events = EventStream()
    if not args.log:
        yield events
        return
    try:
        log = JsonlLog(args.log)
    except OSError as error:
        raise RepoosError(f"--log {args.log}: {error.strerror}") from None
    events.subscribe(log)
    try:
        yield events
    finally:
        log.close()


def record_findings(args: argparse.Namespace, write: Callable[..., Recorded], *values: object, near: str) -> Recorded | None:
    """Write a command's findings to the graph store: `--graph`, else the one `store_location` finds from
    `near` (the kernel's file), where `repoos_agent.swap` of that kernel will look for them.

    The work is done by then (a search may have taken hours): a store that cannot be
    opened or written is a warning and exit code 3, never the loss of the result."""
    try:
        store = open_store(args.graph, near)
        try:
            return write(store, *values)
        finally:
            store.close()
    except RepoosError as error:
        print(f"repoos: warning: not recorded in the graph store: {error}", file=sys.stderr)
        args.unrecorded = True
        return None
