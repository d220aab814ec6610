"""The fsm track's part of the MCP server: `optimize_branchy` races a branchy function's variants, `rewrite_menu` shows
what the engine may rewrite in it.

A target is a bundled kernel (`fsm:crc32`) or `path/to/file.py:function` under the server's roots, checked as the
core tools check theirs before any file is read; the engine then opens the checked, resolved file, and its
messages name the caller's own path. The race runs off the event loop, one at a time: importing a target's module
changes `sys.modules`, and two races on one machine would time each other. Its result is the race table the CLI
prints, as structured output: every variant with its verdict and reason, the racers' medians, spreads and speedups,
and the crowned one.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field
from tree_sitter import Node

from repoos_agent.agent.events import EventStream
from repoos_agent.errors import RepoosError
from repoos_agent.fsm import ir
from repoos_agent.fsm.arena import ArenaResult
from repoos_agent.fsm.lower import lower_function
from repoos_agent.fsm.optimize import FsmTarget, heuristic_variants, lowered_target, race_target, result_payload, write_winner
from repoos_agent.fsm.proposals import choices, menu_text
from repoos_agent.fsm.swap import function_node
from repoos_agent.fsm.track import assumed_types, read_target
from repoos_agent.inputs import MCP_FIELDS, InputError
from repoos_agent.mcp.roots import AllowedRoots
from repoos_agent.mcp.tool_errors import ServedTool
from repoos_agent.mcp.track_tools import TrackTools
from repoos_agent.store import open_store
from repoos_agent.target import target_file

INSTRUCTIONS = """\
A function that `ingest` reports on the `fsm` track (branchy byte-level code: checksums, decoders, validators,
parsers) goes to `optimize_branchy`, which races rewrites of it against its compiled baseline; `rewrite_menu` lists
the rewrites that apply to it and why the others do not."""

BranchyTarget = Annotated[
    str,
    Field(
        description="A bundled fsm kernel (`fsm:crc32`, `fsm:utf8_validate`) or `path/to/file.py:function` under the "
        "server's roots, a function ingest reports on the `fsm` track."
    ),
]
BranchyInputs = Annotated[
    list[str] | None,
    Field(
        description="Inputs of a `file.py:function` target, NAME=SPEC each: `data=bytes[4096]` (random bytes), "
        "`buf=bytearray[64]`, `n=8`. They type the function (bytes, bytearray, int) and are what the variants race "
        "on. Bundled kernels take `size` instead."
    ),
]
FsmSize = Annotated[
    Literal["MINI", "SMALL", "MEDIUM", "LARGE", "EXTRALARGE"] | None,
    Field(description="Input size of a bundled fsm kernel (default SMALL); leave it out for a file's function."),
]


@dataclass(frozen=True)
class RacedVariant:
    """One contender: its rewrites, the engine's verdict and why, and its race figures when it raced."""

    variant: str  # "baseline", or rewrites joined by " then "
    verdict: str  # baseline, qualified, wrong, unproven, inapplicable, malformed, refused
    reason: str
    median_ms: float | None  # None: it did not race
    spread: float | None
    over_baseline: float | None  # the baseline's median over this one's
    over_python: float | None  # the Python original's median over this one's


@dataclass(frozen=True)
class BranchyRace:
    """A branchy function's race: every contender in proposal order (the baseline first) and the crowned one."""

    target: str
    crowned: str
    python_ms: float
    variants: tuple[RacedVariant, ...]
    machine_busy: bool
    unsettled: str  # why the race's figures may not be settled ("" when they are)
    stored: bool  # recorded as the function's FsmKernel, where `repoos_agent.swap` finds it
    store_warning: str  # why it was not recorded although `store` asked for it ("" otherwise)


@dataclass(frozen=True)
class RewriteMenu:
    """What the engine may do to a function: the menu as a proposer reads it, and each applicable step as spelled."""

    target: str
    menu: str
    choices: tuple[str, ...]


class BranchyRunner:
    """Reads targets under `roots` only, and runs one race at a time."""

    def __init__(self, roots: AllowedRoots) -> None:
        self.roots = roots
        self._one_race = threading.Lock()

    def checked(self, label: str) -> tuple[str, str]:
        """The target's text for the engine (a file's path checked against the roots and resolved), and the resolved
        path's text ("" for a bundled kernel)."""
        path = target_file(label)
        if path is None:
            return label, ""
        with _tool_errors(label, ""):
            checked = self.roots.python_file(str(path))
        return f"{checked}:{label.rsplit(':', 1)[1]}", str(checked)

    def target(self, label: str, engine_label: str, args: list[str] | None, size: str | None) -> FsmTarget:
        """The target as the track reads it; a file's function takes `args`, a bundled kernel `size`."""
        if target_file(label) is not None and size is not None:
            raise RepoosError(f"`size` applies to bundled kernels; give `{label}` its inputs with `args`")
        return read_target(engine_label, args or (), size)

    async def race(self, label: str, args: list[str] | None, size: str | None, store: bool, ctx: Context) -> BranchyRace:
        engine_label, resolved = self.checked(label)
        await ctx.report_progress(0, 1, f"building and checking the variants of `{label}`, then racing them")
        race = await anyio.to_thread.run_sync(self._race, label, engine_label, resolved, args, size, store)
        await ctx.report_progress(1, 1, f"crowned {race.crowned}")
        return race

    def _race(
        self, label: str, engine_label: str, resolved: str, args: list[str] | None, size: str | None, store: bool
    ) -> BranchyRace:
        with self._one_race, _tool_errors(label, resolved):
            target = self.target(label, engine_label, args, size)
            result, baseline = race_target(label, target, heuristic_variants, EventStream())
        path, _, node, _, _ = target
        warning = _stored(result, path, node, baseline) if store else ""
        return BranchyRace(
            target=label,
            crowned=result.winner.label,
            python_ms=result.python.median_s * 1000,
            variants=tuple(_raced(entry) for entry in result_payload(result)["entrants"]),  # type: ignore[attr-defined]
            machine_busy=result.field.machine_busy,
            unsettled=result.field.unsettled_reason() or "",
            stored=store and not warning,
            store_warning=warning,
        )

    def menu(self, label: str, args: list[str] | None, size: str | None) -> RewriteMenu:
        engine_label, resolved = self.checked(label)
        with _tool_errors(label, resolved):
            if args or target_file(label) is None:
                function = lowered_target(self.target(label, engine_label, args, size))
            else:
                path, name = engine_label.rsplit(":", 1)
                node = function_node(path, name)
                function = lower_function(node, assumed_types(node))  # typed as `ingest` types it
            return RewriteMenu(label, menu_text(function), tuple(choices(function)))


def _stored(result: ArenaResult, path: Path, node: Node, baseline: ir.Function) -> str:
    """Record the race's winner in the store `repoos_agent.swap` reads for this file; why not, if it could not."""
    try:
        store = open_store(None, path)
        try:
            write_winner(store, result, path, node, baseline)
        finally:
            store.close()
    except RepoosError as error:
        return f"not recorded in the graph store: {error}"
    return ""


def _raced(entry: dict[str, object]) -> RacedVariant:
    median = entry["median_s"]
    return RacedVariant(
        variant=str(entry["variant"]),
        verdict=str(entry["verdict"]),
        reason=str(entry["reason"]),
        median_ms=median * 1000 if isinstance(median, float) else None,
        spread=entry["spread"],  # type: ignore[arg-type]
        over_baseline=entry["over_baseline"],  # type: ignore[arg-type]
        over_python=entry["over_python"],  # type: ignore[arg-type]
    )


@contextmanager
def _tool_errors(label: str, resolved: str) -> Iterator[None]:
    """A `RepoosError` inside the block as a tool error, its inputs named as the tools name them and the resolved
    path as the caller wrote it."""
    try:
        yield
    except InputError as error:
        raise ToolError(error.for_fields(MCP_FIELDS)) from None
    except RepoosError as error:
        message = str(error)
        raise ToolError(message.replace(resolved, label.rsplit(":", 1)[0]) if resolved else message) from None


def served(roots: AllowedRoots) -> TrackTools:
    """The two tools, reading target files under `roots` only."""
    runner = BranchyRunner(roots)

    async def optimize_branchy(
        target: BranchyTarget,
        ctx: Context,
        args: BranchyInputs = None,
        size: FsmSize = None,
        store: Annotated[
            bool,
            Field(
                description="Record the crowned variant as the function's FsmKernel in the graph store, where "
                "`repoos_agent.swap` and `@accelerate` find it and run it in place of the function."
            ),
        ] = True,
    ) -> BranchyRace:
        """Optimize a branchy byte-level function (a checksum, decoder, validator, parser; track `fsm` in ingest):
        the engine lowers it to C, proposes rewrites from its menu (see rewrite_menu), builds each variant, checks it
        equal to the Python original (returns, arguments after the call, exceptions with their messages) and races
        the survivors against the compiled baseline on the inputs. Takes seconds.

        `variants` lists every contender with the engine's verdict: only `baseline` and `qualified` ones raced (with
        `median_ms`, `spread`, and speedups over the baseline and over CPython); the others say why they did not.
        `crowned` is the fastest that led the baseline beyond the noise, else `baseline`. A function the track
        cannot model is refused at its file and line."""
        return await runner.race(target, args, size, store, ctx)

    def rewrite_menu(target: BranchyTarget, args: BranchyInputs = None, size: FsmSize = None) -> RewriteMenu:
        """The rewrites the engine can apply to a branchy function (track `fsm`): each applicable one with its
        parameters and what it does, then the ones that do not apply and why. `choices` spells each applicable
        step as a variant is written: one variant is steps joined by ` then `. Without `args`, a file's function
        is typed as ingest types it (bytes where it indexes a parameter, ints elsewhere). Milliseconds."""
        return runner.menu(target, args, size)

    tools = tuple(ServedTool.from_function(tool, description=inspect.getdoc(tool)) for tool in (optimize_branchy, rewrite_menu))
    return TrackTools(INSTRUCTIONS, tools)
