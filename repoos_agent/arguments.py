"""The arguments the command lines share: their types, help texts and the options of a search.

Declared apart from what the commands run: `repoos --help`, `repoos --version` and every usage
error build the whole parser, and must not wait for the engine to load. What the options mean
once parsed (`search_config`, `search_target`, `search_events`) is in `search_options`.
"""

from __future__ import annotations

import argparse

from repoos_agent.backend_names import BACKENDS
from repoos_agent.errors import RepoosError

STORE_HELP = (
    "a SQLite file or bolt://host:port (default $REPOOS_GRAPH, else the first .repoos/graph.sqlite walking up from "
    "the file's directory, then from the working directory; else a new one in the working directory)"
)
GRAPH_HELP = f"graph store to record in: {STORE_HELP}"


def positive_int(text: str) -> int:
    """An argument that counts something (turns, calls): a usage error, not a failed run, when it is not at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{text}` is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    """An argument that measures something (seconds, a speed): a usage error when it is not above 0."""
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
    parser.add_argument(
        "--budget",
        type=positive_float,
        metavar="SECONDS",
        help="seconds the search may spend: past 60%% of it no new turn starts, and the finish races again only while "
        "it lasts; the result says what it skipped",
    )
    parser.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="build, prove and time the candidates' first looks on the Dask workers of this machine's CPU model "
        "(tcp://HOST:PORT, or local:N); the finish races here (docs/cluster.md)",
    )
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
    # Imported here: the words are the dialogue's, and only a command that runs a search parses them (argparse
    # converts the default of the chosen command alone); `--help` and the other commands never load the agent.
    from repoos_agent.agent.dialogue import PromptOptions

    try:
        PromptOptions.parse(text)
    except RepoosError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--prompt: ")) from None
    return text
