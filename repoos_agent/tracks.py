"""Tracks: the engines a function can go to, each a plug-in in its own folder, registered here by one line.

A track says what it does at each point where the front ends part ways between engines: whether a
function is its own (ingest's classification, asked before the loop model), which process benches
it (`repoos bench`) and how that leg's outputs compare, which store record swaps it in and how
(`repoos run`), which option of `repoos optimize` sends a target to it and what runs it then, the
tools and resources it adds to the MCP server, and the monitor `repoos tui` shows its runs in.
Ingest, the runtime, the CLI, the MCP server and the TUI ask this registry and import no track. A
track's module sits above the engine (it builds on the store, the runtime's bench legs, the
events), so this module, which sits below ingest, names the tracks as strings and imports them
when the registry is first read, as a package's entry points name its plug-ins; a track names its
MCP tools and its monitor as strings in turn, as those sit above every track. Adding a track is one
folder with a `track.py` holding its `TRACK`, and one `Registration` in `REGISTERED` (with the option that sends
a target to it, declared there so that the command line's parser is built without importing any track).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from tree_sitter import Node


@dataclass(frozen=True)
class TrackOption:
    """The option that sends the target of `repoos optimize` and `repoos tui` to a track rather than the loop search."""

    flag: str
    """As typed (`--db`); its value is the track's (a database URL)."""
    metavar: str
    value: str
    """What its value names ("database"), for messages."""
    runs: str
    """What a run given it works on ("an endpoint"), for messages."""
    optimize_help: str
    """What the option says in `repoos optimize --help`."""
    tui_help: str | None = None
    """What it says in `repoos tui --help`, where the run is watched; None for a track with no monitor (`tui` does not
    offer the option)."""

    @property
    def dest(self) -> str:
        """The option's attribute on parsed arguments."""
        return self.flag.removeprefix("--").replace("-", "_")


@dataclass(frozen=True)
class Track:
    """What one track does at the engine's dispatch points; None where it takes no part."""

    name: str
    """The track as ingest reports it ("affine", "tabular", ...)."""
    claim: Callable[[Node, str], str | None] | None = None
    """Why a function (its syntax tree, in file `path`) belongs to this track, or None; asked before the loop model."""
    claim_refused: Callable[[Node, str], str | None] | None = None
    """Why a function the loop model refused belongs to this track, or None: asked after the loop model, by a track
    for what no loop nest holds (the fsm track's state machines), so that it never takes a function the loop model can."""
    show: Callable[[argparse.Namespace], int] | None = None
    """`repoos show` on a function of this track's: prints the code it builds for the types `--arg` gives (the
    variant the schedule argument names, in the track's own language), returns the exit code."""
    check: Callable[[argparse.Namespace], int] | None = None
    """`repoos check` on a function of this track's: builds it, compares it with the Python original on the
    inputs `--arg` gives, prints the outcome, returns the exit code."""
    evaluate: Callable[[argparse.Namespace, tuple[str, ...], dict[str, str]], int] | None = None
    """`repoos eval` on bundled kernels of this track's suite (named as the track is): given the kernels' names and
    the sizes `NAME@SIZE` gave some of them, compares them with the peers `--compare` names, prints and writes the
    results, returns the exit code."""
    benches: Callable[[str, str, str | None], bool] | None = None
    """Whether `repoos bench` runs function `name` of `script` (graph store `graph`) on this track's leg."""
    bench_leg: str | None = None
    """The module `python -m` runs for one leg: the request on stdin, its `LegResult` as the last stdout line."""
    bench_output: str = "npz"
    """How a leg saves its first call's outputs: "npz" arrays compared within the float tolerance, or "json" a
    response compared exactly, in order."""
    takes_database: bool = False
    """Whether its functions run on a database named by `--db URL` (and take values, not a size class)."""
    hide_secrets: Callable[[str, str], str] | None = None
    """A message with the `--db` URL's password masked, before it is shown."""
    contract: type | None = None
    """The store record that swaps one of its functions in (`repoos run`)."""
    swap: Callable[[Callable[..., object], Any], Callable[..., object]] | None = None
    """The function on its verified path, guarded by its store record (itself when the record does not hold)."""
    baseline: Callable[[Callable[..., object], Mapping[str, object]], Callable[..., object]] | None = None
    """`@accelerate` on a function of this track's with no store record: the function built in source order for the
    first call's `values` (its parameters by name, defaults filled in), or a located `RepoosError` saying why not."""
    recheck: Callable[[Callable[..., object]], None] | None = None
    """Once the module that defines a swapped function has run: what the swap checks then (an endpoint's routes)."""
    optimize: Callable[[argparse.Namespace], int] | None = None
    """`repoos optimize` given the option its registration declares: runs it on the target, prints the outcome,
    returns the exit code."""
    mcp: str | None = None
    """The module whose `served(roots)` gives the tools, resources and instructions the track adds to the MCP server."""
    monitor: str | None = None
    """The module of the TUI whose `watch(args)` runs `repoos tui` given its option (returning the exit code), and
    `replay(log, speed)` replays a run log whose `run_started` names this track (`detail["track"]`)."""


@dataclass(frozen=True)
class Registration:
    """One track as the registry names it: the module holding its `TRACK`, and the option that sends a target to it.

    The option is declared here, not on the `Track`: every command builds the whole parser, `repoos optimize`'s and
    `repoos tui`'s options included, and importing a track's module loads its engine."""

    module: str
    option: TrackOption | None = None

    def track(self) -> Track:
        """The registered `Track` (its module imported on the first call)."""
        return importlib.import_module(self.module).TRACK


REGISTERED = (
    Registration(
        "repoos_agent.tabular.track",
        TrackOption(
            flag="--db",
            metavar="URL",
            value="database",
            runs="an endpoint",
            optimize_help="an ORM endpoint (app.py:function): its fast path, verified on this database (mysql+pymysql://...)",
            tui_help="an ORM endpoint (app.py:function): watch its fast path verified on this database and raced, "
            "as `optimize --db`",
        ),
    ),
    Registration("repoos_agent.graphs.track"),
    Registration("repoos_agent.fsm.track"),
    Registration("repoos_agent.runtime.track"),
)
"""Each track's registration, in the order they are asked: the first that takes a function has it (the loop track
last, as it benches and swaps what no other track claims)."""


@cache
def registered_tracks() -> tuple[Track, ...]:
    """Every track, in `REGISTERED`'s order (their modules imported on the first call)."""
    return tuple(registration.track() for registration in REGISTERED)


def claimed(function: Node, path: str) -> tuple[str, str] | None:
    """The first track that claims `function`, and why; None when no track does (the loop model is tried then)."""
    for track in registered_tracks():
        reason = track.claim(function, path) if track.claim is not None else None
        if reason:
            return track.name, reason
    return None


def claimed_refused(function: Node, path: str) -> tuple[str, str] | None:
    """The first track that claims `function` once the loop model refused it, and why; None when none does."""
    for track in registered_tracks():
        reason = track.claim_refused(function, path) if track.claim_refused is not None else None
        if reason:
            return track.name, reason
    return None


def bench_track(script: str, function: str, graph: str | None) -> Track:
    """The track whose leg benches `function` of `script`: the first that says it does."""
    return next(track for track in registered_tracks() if track.benches is not None and track.benches(script, function, graph))


def swapping_track(record: object) -> Track:
    """The track whose store record `record` is: the one that swaps its function in."""
    return next(track for track in registered_tracks() if track.contract is not None and isinstance(record, track.contract))


def track_options() -> tuple[TrackOption, ...]:
    """The options the registered tracks add to `repoos optimize` and `repoos tui`, in `REGISTERED`'s order (no
    track imported)."""
    return tuple(registration.option for registration in REGISTERED if registration.option is not None)


def chosen_registration(args: argparse.Namespace) -> Registration | None:
    """The registration whose option `args` (parsed `repoos optimize` or `repoos tui` arguments) give; None for the
    loop search."""
    return next((entry for entry in REGISTERED if entry.option and getattr(args, entry.option.dest, None)), None)


def optimizing_track(args: argparse.Namespace) -> Track | None:
    """The track whose option `args` give; None for the loop search."""
    registration = chosen_registration(args)
    return registration.track() if registration is not None else None


def named_track(name: object) -> Track | None:
    """The track called `name` (as a run log's `run_started` records it), or None."""
    return next((track for track in registered_tracks() if track.name == name), None)
