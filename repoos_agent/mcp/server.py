"""The MCP server: the operations of `repoos_agent.agent.operations`, served with `target` as an argument.

Each target-taking operation becomes a tool whose signature is derived from the
operation's own (its `Target` parameter replaced by the target's text), so the SDK
publishes the same argument types, descriptions and docstring our agent's tools use,
and the operation's dataclass result as the tool's output schema. A `RepoosError`
(unknown kernel, path outside the roots, a schedule that does not parse) becomes a
tool error with the engine's message, and arguments the schema rejects one line that
names the field (`repoos_agent.mcp.tool_errors`); the server keeps serving. The long search
is a tool of its own, off the event loop: `optimize` (`search_call`). Each registered track adds
the tools, resources and instructions its registration names (`Track.mcp`, a `TrackTools`),
after the server's own: the tabular track's `optimize_endpoint` (`tabular_tools`).
"""

from __future__ import annotations

import importlib
import inspect
import json
import threading
from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resources import FileResource, FunctionResource
from pydantic import Field

from repoos_agent.agent import operations
from repoos_agent.agent.operations import IngestReport, SizeClass
from repoos_agent.agent.search import SearchConfig
from repoos_agent.agent.search_report import RunBoard, SearchReport, backend_spec
from repoos_agent.catalog import bundled_kernels
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.mcp.roots import AllowedRoots
from repoos_agent.mcp.search_call import run_search
from repoos_agent.mcp.tool_errors import ServedTool, engine_errors_as_tool_errors
from repoos_agent.mcp.track_tools import TrackTools
from repoos_agent.target import Target, resolve_target, target_file
from repoos_agent.tracks import registered_tracks

INSTRUCTIONS = """\
RepoOS Agent optimizes Python loop kernels (for-loops over NumPy arrays) by loop schedules it proves legal,
verifies with Z3, compiles to native code and measures against the original loop order.
Typical use: `ingest` a file (or `list_kernels`), `analyze` the target, try schedules with `check_legality`
(milliseconds), measure the promising ones with `evaluate` (seconds), or let `optimize` search; `show_code`
prints the generated C or MLIR."""
"""The server's own instructions; each track's paragraph follows (`TrackTools.instructions`)."""

TargetText = Annotated[
    str,
    Field(
        description="A bundled kernel's name (`gemm`, `jacobi-2d`; see list_kernels) or `path/to/file.py:function` "
        "under the server's roots (ingest lists a file's functions)."
    ),
]
ArgumentSpecs = Annotated[
    list[str] | None,
    Field(
        description="Inputs of a `file.py:function` target, NAME=SPEC each (what the CLI calls --arg): `n=512`, "
        "`alpha=1.5`, `A=f64[512,256]`, `v=f32[n]` (types f64 f32 i64 i32). An array's shape also gives its rank, "
        "which NumPy code may not say: every tool models the function with the same ones. Bundled kernels take `size` "
        "instead."
    ),
]

SERVED_OPERATIONS: tuple[tuple[str, Callable[..., object]], ...] = (
    ("analyze", operations.analyze_kernel),
    ("check_legality", operations.check_legality),
    ("evaluate", operations.evaluate),
    ("show_code", operations.show_code),
    ("swap", operations.swap),
)
"""Target-taking operations as tools, by name. Each takes a user kernel's `args`: their shapes give the ranks
of the one model every tool sees, and the measuring ones make inputs from them."""


class TargetResolver:
    """Targets by their text, read only under the roots; kept while their file is unchanged, so a check costs milliseconds."""

    def __init__(self, roots: AllowedRoots) -> None:
        self.roots = roots
        self._known: dict[tuple[str, tuple[str, ...], int], Target] = {}
        self._lock = threading.Lock()

    def resolve(self, text: str, args: list[str] | None = None) -> Target:
        path = target_file(text)
        engine_text = text
        if path is not None:
            path = self.roots.python_file(str(path))
            if ":" in text:  # the engine opens the checked, resolved file, never a path re-read from the text
                engine_text = f"{path}:{text.rsplit(':', 1)[1]}"
        modified = path.stat().st_mtime_ns if path is not None and path.is_file() else 0
        key = (text, tuple(args or ()), modified)
        with self._lock:
            known = self._known.get(key)
        if known is not None:
            return known
        target = replace(resolve_target(engine_text, [parse_arg_spec(spec) for spec in args or ()]), label=text)
        with self._lock:
            self._known[key] = target
        return target


def served(name: str, operation: Callable[..., object], resolver: TargetResolver) -> Callable[..., object]:
    """`operation` with its `Target` parameter replaced by the target's text and a user kernel's `args`."""
    signature = inspect.signature(operation, eval_str=True)
    parameters = [
        inspect.Parameter("target", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=TargetText),
        *list(signature.parameters.values())[1:],
        inspect.Parameter("args", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ArgumentSpecs),
    ]

    def tool(target: str, args: list[str] | None = None, **arguments: object) -> object:
        with engine_errors_as_tool_errors():
            return operation(resolver.resolve(target, args), **arguments)

    tool.__name__ = name
    tool.__doc__ = operation.__doc__
    tool.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": signature.return_annotation}
    return tool


def build_server(roots: AllowedRoots) -> MCPServer:
    """The server, its tools and resources; `roots` bound every file it reads."""
    resolver = TargetResolver(roots)
    board = RunBoard()
    tools = [ServedTool.from_function(operations.list_kernels, description=inspect.getdoc(operations.list_kernels))]

    def ingest(path: operations.PythonFile, args: ArgumentSpecs = None) -> IngestReport:
        with engine_errors_as_tool_errors():
            report = operations.ingest(str(roots.python_file(path)), [parse_arg_spec(spec) for spec in args or ()])
        # Read from the checked file; reported in the caller's own words, ready to pass back as targets.
        functions = tuple(replace(f, target=f"{path}:{f.name}") for f in report.functions)
        return replace(report, path=path, functions=functions)

    tools.append(ServedTool.from_function(ingest, description=inspect.getdoc(operations.ingest)))
    for name, operation in SERVED_OPERATIONS:
        tool = served(name, operation, resolver)
        tools.append(ServedTool.from_function(tool, name=name, description=inspect.getdoc(operation)))

    async def optimize(
        target: TargetText,
        ctx: Context,
        backend: Annotated[
            str,
            Field(
                description="heuristic (offline, the default), openai or gemini (keys from the server's environment), "
                "or local (a llama.cpp model on the server's machine)"
            ),
        ] = "heuristic",
        model: Annotated[
            str | None, Field(description="The model of an openai or gemini backend; of local, smollm2 (the default).")
        ] = None,
        iters: Annotated[int, Field(ge=1, le=50, description="Turns per dialogue.")] = 3,
        k: Annotated[int, Field(ge=1, le=8, description="Independent dialogues run concurrently.")] = 1,
        candidates: Annotated[int, Field(ge=1, le=16, description="Schedules proposed per turn, built in parallel.")] = 4,
        moa: Annotated[
            list[str] | None, Field(description="Mixture-of-Agents reference agents, e.g. ['heuristic', 'openai:gpt-4o-mini'].")
        ] = None,
        aggregator: Annotated[str | None, Field(description="With moa: the agent that proposes last, seeing the others.")] = None,
        size: SizeClass = None,
        args: ArgumentSpecs = None,
        budget_s: Annotated[
            float | None,
            Field(
                gt=0,
                description="Seconds the search may spend: past 60% no new turn starts, and the finish races again only "
                "while it lasts; the result's `budget` says what it skipped.",
            ),
        ] = None,
    ) -> SearchReport:
        """Search for the fastest legal schedule: dialogues propose schedules, every one is proved legal, built
        and timed against the baseline, and a racing finish has Z3 check the best few and re-measures them. Takes
        seconds to minutes; reports progress on every evaluation and stops cleanly when cancelled (returning nothing).

        The result's `schedule` is the winner ("" when nothing beat the source order), with its speedup and spread
        as the racing finish re-measured them, and `finish` says how it won. The `leaderboard` lists the winner
        first, then every other evaluation fastest first; a finalist (`raced`) ranks by its re-measurement,
        `first_speedup` is what its first evaluation measured."""
        with engine_errors_as_tool_errors():
            resolved = resolver.resolve(target, args)
            config = SearchConfig(
                backend=backend_spec(backend, model),
                moa=tuple(moa or ()),
                aggregator=aggregator,
                iters=iters,
                k=k,
                candidates=candidates,
                size=size,
                budget_s=budget_s,
            )
            return await run_search(resolved, config, board, ctx)

    tools.append(ServedTool.from_function(optimize, description=inspect.getdoc(optimize)))
    added = track_tools(roots)
    tools.extend(tool for track in added for tool in track.tools)
    instructions = "\n".join((INSTRUCTIONS, *(track.instructions for track in added)))
    # Tools handed over built, not added by name: `ServedTool`, not the SDK's own class, runs each call.
    server = MCPServer("repoos", instructions=instructions, log_level="WARNING", tools=tools)

    for kernel in bundled_kernels():
        server.add_resource(
            FileResource(
                uri=f"repoos://kernels/{kernel.name}",
                name=kernel.name,
                description=f"Python source of the bundled PolyBench kernel `{kernel.name}` ({kernel.category})",
                mime_type="text/x-python",
                path=kernel.path.resolve(),
            )
        )
    server.add_resource(
        FunctionResource(
            uri="repoos://runs/last/leaderboard",
            name="leaderboard",
            description="The latest optimize run's leaderboard (live while it runs): status, best schedule, every evaluation",
            mime_type="application/json",
            fn=lambda: json.dumps(asdict(board.snapshot()), indent=2),
        )
    )
    for track in added:
        for resource in track.resources:
            server.add_resource(resource)
    return server


def track_tools(roots: AllowedRoots) -> list[TrackTools]:
    """What each registered track adds to the server, in the registry's order (their modules imported now)."""
    modules = [importlib.import_module(track.mcp) for track in registered_tracks() if track.mcp is not None]
    return [module.served(roots) for module in modules]
